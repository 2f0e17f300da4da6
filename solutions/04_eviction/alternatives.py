"""Correct answers to each stage-4 code TODO written another way than the reference: each must earn
full marks (``tests/course/test_mutants.py`` grades them with the wrong answers). ``ALTERNATIVES`` maps a TODO
id to ``{name: edits}``, the edits being text replacements of the reference module inside that
TODO's function, as in ``mutants.py`` beside this file."""
from __future__ import annotations

from tests.mutants_s04 import APPEND, EXPIRE, PIN_CAP, PIN_QUEUE, PIN_RECORD, POP_PICK, POP_UNLINK, RELEASE, REMOVE_CHECK

APPEND_REGION = f"        {APPEND}\n        self._len += 1\n"
POP_REGION = POP_PICK + "\n" + POP_UNLINK + "\n        return block  # type: ignore[return-value]\n"
REMOVE_REGION = REMOVE_CHECK + "\n        self._len -= 1\n"
PIN_REGION = PIN_CAP + PIN_QUEUE + "\n        self._pinned.add(block.block_id)\n" + PIN_RECORD + "        return True\n"

ALTERNATIVES = {
    "s04.append": {
        "links_by_hand": [(APPEND_REGION, """        node = self._tail if block.key is not None else self._mid
        prev = node.prev_free
        prev.next_free = block
        block.prev_free = prev
        block.next_free = node
        node.prev_free = block
        self._len += 1
""")],
        "sentinel_from_a_lookup_table": [(APPEND_REGION, """        anchor = {True: self._mid, False: self._tail}[block.key is None]
        self._len = len(self) + 1
        self._link_before(anchor, block)
""")],
        "branch_on_the_key": [(APPEND_REGION, """        if block.key:
            self._link_before(self._tail, block)
        else:
            self._link_before(self._mid, block)
        self._len += 1
""")],
    },
    "s04.popleft": {
        "conditional_expression": [(POP_REGION, """        first = self._head.next_free
        block = self._mid.next_free if first is self._mid else first
        self._unlink(block)  # type: ignore[arg-type]
        self._len -= 1
        return block  # type: ignore[return-value]
""")],
        "unlink_by_hand": [(POP_REGION, """        block = self._head.next_free
        if block is self._mid:
            block = block.next_free
        block.prev_free.next_free = block.next_free
        block.next_free.prev_free = block.prev_free
        block.prev_free = None
        block.next_free = None
        self._len -= 1
        return block
""")],
        "step_over_sentinels": [(POP_REGION, """        block = self._head.next_free
        while block is self._mid:
            block = block.next_free
        self._unlink(block)  # type: ignore[arg-type]
        self._len = self._len - 1
        return block  # type: ignore[return-value]
""")],
    },
    "s04.remove": {
        "both_links_checked": [(REMOVE_CHECK, """        if block.prev_free is None or block.next_free is None:
            raise ValueError("this block is not in the free queue")
        self._unlink(block)""")],
        "unlink_by_hand": [(REMOVE_REGION, """        prev, nxt = block.prev_free, block.next_free
        if prev is None:
            raise ValueError("not in the free queue")
        prev.next_free, nxt.prev_free = nxt, prev
        block.prev_free = block.next_free = None
        self._len -= 1
""")],
        "ask_forgiveness": [(REMOVE_REGION, """        try:
            self._unlink(block)  # a non-member has no previous node: this fails before changing anything
        except AttributeError:
            raise ValueError(f"block {block.block_id} is not in the free queue") from None
        self._len -= 1
""")],
    },
    "s04.release_blocks": {
        "reversed_slice": [(RELEASE, RELEASE.replace("reversed(blocks)", "blocks[::-1]"))],
        "index_from_the_end": [(RELEASE, """        for i in range(len(blocks) - 1, -1, -1):
            block = blocks[i]
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)""")],
        "count_then_free_tail_first": [(RELEASE, """        for block in blocks:
            block.ref_count -= 1
        for block in reversed(blocks):
            if block.ref_count == 0:
                self.free_queue.append(block)""")],
    },
    "s04.pin": {
        "membership_and_num_pinned": [(PIN_REGION, """        if self.num_pinned == self.max_pinned:
            return False
        if block in self.free_queue:
            self.free_queue.remove(block)
        block.ref_count += 1
        self._pinned.add(block.block_id)
        self.requests[self.PIN_ID].blocks.append(block)
        return True
""")],
        "count_the_holders_list": [(PIN_REGION, """        holder = self.requests[self.PIN_ID]
        if len(holder.blocks) >= self.max_pinned:
            return False
        if not block.ref_count:
            self.free_queue.remove(block)
        block.ref_count = block.ref_count + 1
        holder.blocks.append(block)
        self._pinned.add(block.block_id)
        return True
""")],
        "positive_branch": [(PIN_REGION, """        if len(self._pinned) < self.max_pinned:
            if block.ref_count == 0:
                self.free_queue.remove(block)
            block.ref_count += 1
            self._pinned.add(block.block_id)
            self.requests[self.PIN_ID].blocks.append(block)
            return True
        return False
""")],
    },
    "s04.expire": {
        "age_variable": [(EXPIRE, "age = now - registered_at\n            if age < self.min_residence:")],
        "flipped_comparison": [(EXPIRE, "if self.min_residence > now - registered_at:")],
        "not_yet_ended": [(EXPIRE, "if not now - registered_at >= self.min_residence:")],
    },
}
