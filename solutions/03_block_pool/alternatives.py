"""Correct answers to each stage-3 code TODO written another way than the reference: each must earn
full marks (``tests/course/test_mutants.py`` grades them with the wrong answers). ``ALTERNATIVES`` maps a TODO
id to ``{name: edits}``, the edits being text replacements of the reference module inside that
TODO's function, as in ``mutants.py`` beside this file."""
from __future__ import annotations

from tests.mutants_s03 import ALLOCATE, CAPACITY, EVICT, LOOKUP_LOOP, REGISTER, RELEASE, TAKE_HITS

LOOKUP = LOOKUP_LOOP + """            block = self.cached.get(key)
            if block is None:
                break
            hits.append(block)
"""
ALLOCATE_BLOCK = "        block = self.free_queue.popleft()\n" + EVICT + "        block.ref_count = 1\n"
REVIVED = "        revived = sum(1 for block in hits if block.ref_count == 0)\n"
RAISE = """            raise PoolFullError(
                f"request {request_id!r} needs {num_new} fresh blocks; {len(self.free_queue)} are free, "
                f"{revived} of them are its own cached hits"
            )
"""
COMMIT = "        for i in range(state.hit_blocks, len(state.keys)):\n            key = state.keys[i]\n" + REGISTER

ALTERNATIVES = {
    "s03.lookup": {
        "takewhile_over_gets": [(LOOKUP, """        import itertools
        found = (self.cached.get(key) for key in keys[:max_hits])
        hits.extend(itertools.takewhile(lambda block: block is not None, found))
""")],
        "index_and_membership_test": [(LOOKUP, """        for i in range(min(max_hits, len(keys))):
            if keys[i] not in self.cached:
                break
            hits.append(self.cached[keys[i]])
""")],
        "try_except_key_error": [(LOOKUP, """        for key in keys[:max_hits]:
            try:
                hits.append(self.cached[key])
            except KeyError:
                break
""")],
    },
    "s03.allocate_block": {
        "pop_with_a_default": [(ALLOCATE_BLOCK, """        block = self.free_queue.popleft()
        self.cached.pop(block.key, None)
        block.key = None
        block.ref_count = 1
""")],
        "only_if_the_entry_is_this_block": [(ALLOCATE_BLOCK, """        block = self.free_queue.popleft()
        old_key, block.key = block.key, None
        if old_key is not None and self.cached.get(old_key) is block:
            del self.cached[old_key]
        block.ref_count = 1
""")],
        "membership_then_tuple_assignment": [(ALLOCATE_BLOCK, """        block = self.free_queue.popleft()
        if block.key in self.cached:
            del self.cached[block.key]
        block.key, block.ref_count = None, 1
""")],
    },
    "s03.admit": {
        "list_of_free_hits": [(REVIVED, """        free_hits = [block for block in hits if block.ref_count == 0]
        revived = len(free_hits)
"""), (TAKE_HITS + ALLOCATE, """        for block in free_hits:
            self.free_queue.remove(block)
        for block in hits:
            block.ref_count += 1
        fresh = []
        for _ in range(num_new):
            fresh.append(self.allocate_block())
        blocks = hits + fresh
""")],
        "available_blocks_and_extend": [(CAPACITY, """        available = self.num_free - revived
        if num_new > available:
"""), (ALLOCATE, """        blocks = list(hits)
        blocks.extend(self.allocate_block() for _ in range(num_new))
""")],
        "membership_in_the_free_queue": [(CAPACITY + RAISE, """        if len(self.free_queue) < num_new + revived:
            raise PoolFullError(f"pool full: {request_id!r} needs {num_new} fresh blocks")
"""), (TAKE_HITS, """        for block in hits:
            if block in self.free_queue:
                self.free_queue.remove(block)
            block.ref_count = block.ref_count + 1
""")],
    },
    "s03.commit": {
        "enumerate_every_key": [(COMMIT, """        for i, key in enumerate(state.keys):
            if i >= state.hit_blocks and self.cached.get(key) is None:
                state.blocks[i].key = key
                self.cached[key] = state.blocks[i]
""")],
        "new_entries_then_update": [(COMMIT, """        pairs = zip(state.keys[state.hit_blocks:], state.blocks[state.hit_blocks:])
        fresh = {key: block for key, block in pairs if key not in self.cached}
        for key, block in fresh.items():
            block.key = key
        self.cached.update(fresh)
""")],
        "islice_and_continue": [(COMMIT, """        import itertools
        for key, block in itertools.islice(zip(state.keys, state.blocks), state.hit_blocks, None):
            if key in self.cached:
                continue
            block.key = key
            self.cached[key] = block
""")],
    },
    "s03.release": {
        "decrement_all_then_free": [(RELEASE, """        for block in state.blocks:
            block.ref_count -= 1
        for block in state.blocks:
            if block.ref_count == 0:
                self.free_queue.append(block)
""")],
        "index_from_the_tail": [(RELEASE, """        i = len(state.blocks)
        while i:
            i -= 1
            block = state.blocks[i]
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)
""")],
        "collect_the_freed_first": [(RELEASE, """        freed = []
        for block in state.blocks:
            block.ref_count = block.ref_count - 1
            if block.ref_count < 1:
                freed.append(block)
        for block in freed:
            self.free_queue.append(block)
""")],
    },
}
