"""Realistic wrong answers for each stage-3 TODO, graded by the real grader: each fails its TODO only.
Also right answers written differently from the reference (another release order among them),
which must pass everything.

Bug kinds covered besides plain wrong logic: stale hits (a reused block keeps its old key in the
cache map), the revive path (a hit on a free cached block loses its key, or release skips the
hits), and cost (a lookup, allocate_block or admit whose cost grows with the pool: right answers
that only the hidden budget checks catch)."""
from __future__ import annotations

LOOKUP_GET = "            block = self.cached.get(key)\n"
LOOKUP_LOOP = "        for key in keys[:max_hits]:\n"
LOOKUP_BREAK = "                break\n            hits.append(block)"
EVICT = """        if block.key is not None:
            # Its KV is about to be overwritten: a hit under the old key would read other content.
            # zh: 它的 KV 马上要被覆盖：再用旧 key 命中，读到的就是别的内容了。
            del self.cached[block.key]
            block.key = None
"""
CAPACITY = "        if num_new > len(self.free_queue) - revived:\n"
TAKE_HITS = """        for block in hits:
            if block.ref_count == 0:
                self.free_queue.remove(block)
            block.ref_count += 1
"""
ALLOCATE = "        blocks = hits + [self.allocate_block() for _ in range(num_new)]\n"
REGISTER = """            if key not in self.cached:
                block = state.blocks[i]
                block.key = key
                self.cached[key] = block
"""
ANSWERS = '    return {"q1": 31, "q2": 63, "q3": "B", "q4": 70, "q5": "C", "q6": 13}\n'
RELEASE = """        for block in state.blocks:
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)
"""

MUTANTS = {
    # TODO 1: lookup
    "s03.lookup/no_cap": ("s03.lookup", [(LOOKUP_LOOP, "        for key in keys:\n")]),
    "s03.lookup/skips_misses": ("s03.lookup", [(LOOKUP_BREAK, LOOKUP_BREAK.replace("break", "continue"))]),
    "s03.lookup/full_blocks_cap": ("s03.lookup", [(LOOKUP_LOOP, "        for key in keys[: num_tokens // self.block_size]:\n")]),
    "s03.lookup/takes_a_reference": ("s03.lookup", [(LOOKUP_BREAK, LOOKUP_BREAK + "\n            block.ref_count += 1")]),
    # cost: right hits, but every key scans the whole cache map
    "s03.lookup/scans_cached_keys": ("s03.lookup", [
        (LOOKUP_GET, "            block = next((b for k, b in self.cached.items() if k == key), None)\n")]),
    # TODO 2: allocate_block
    "s03.allocate_block/keeps_old_key": ("s03.allocate_block", [(EVICT, "")]),
    "s03.allocate_block/forgets_map_entry_only": ("s03.allocate_block", [(EVICT, EVICT.replace("            block.key = None\n", ""))]),
    "s03.allocate_block/no_ref_count": ("s03.allocate_block", [("        block.ref_count = 1\n", "")]),
    "s03.allocate_block/clears_whole_cache": ("s03.allocate_block", [(EVICT, "        self.cached.clear()\n        block.key = None\n")]),
    # stale hits: the block forgets its key, the cache map does not
    "s03.allocate_block/drops_block_key_only": ("s03.allocate_block", [
        (EVICT, "        if block.key is not None:\n            block.key = None\n")]),
    # cost: right result, but the old key is found by scanning the whole cache map
    "s03.allocate_block/scans_cache_map_for_its_key": ("s03.allocate_block", [
        (EVICT, "        if block.key is not None:\n            for k, b in list(self.cached.items()):\n"
                "                if b is block:\n                    del self.cached[k]\n            block.key = None\n")]),
    # TODO 3: admit
    "s03.admit/capacity_ignores_revived_hits": ("s03.admit", [(CAPACITY, "        if num_new > len(self.free_queue):\n")]),
    "s03.admit/no_capacity_check": ("s03.admit", [(CAPACITY, "        if False:\n")]),
    "s03.admit/hit_without_ref_count": ("s03.admit", [(TAKE_HITS, TAKE_HITS.replace("            block.ref_count += 1\n", ""))]),
    "s03.admit/hit_stays_in_free_queue": ("s03.admit", [(TAKE_HITS, "        for block in hits:\n            block.ref_count += 1\n")]),
    "s03.admit/allocates_before_taking_hits": ("s03.admit", [
        (TAKE_HITS + ALLOCATE, "        fresh = [self.allocate_block() for _ in range(num_new)]\n" + TAKE_HITS
         + "        blocks = hits + fresh\n")]),
    # the revive path: a revived block is taken out of the cache map as well as the free queue
    "s03.admit/revive_forgets_key": ("s03.admit", [
        (TAKE_HITS, TAKE_HITS.replace("                self.free_queue.remove(block)\n",
                                      "                self.free_queue.remove(block)\n"
                                      "                del self.cached[block.key]\n                block.key = None\n"))]),
    # cost: the right capacity, counted by walking every block of the pool (num_in_use)
    "s03.admit/capacity_walks_the_pool": ("s03.admit", [
        (CAPACITY, "        if num_new > self.num_blocks - self.num_in_use - revived:\n")]),
    # stale KV through a path other than allocate_block: admit takes its fresh blocks from the free
    # queue itself, so a reused block keeps its old key (only the stale-hit checks of admit see it)
    "s03.admit/pops_the_free_queue_itself": ("s03.admit", [
        (ALLOCATE, "        fresh = []\n        for _ in range(num_new):\n            block = self.free_queue.popleft()\n"
                   "            block.ref_count = 1\n            fresh.append(block)\n        blocks = hits + fresh\n")]),
    "s03.admit/registers_before_commit": ("s03.admit", [
        (ALLOCATE, ALLOCATE + "        for key, block in zip(keys, blocks):\n            if key not in self.cached:\n"
                             "                block.key = key\n                self.cached[key] = block\n")]),
    # TODO 4: commit
    "s03.commit/map_only": ("s03.commit", [(REGISTER, REGISTER.replace("                block.key = key\n", ""))]),
    "s03.commit/block_key_only": ("s03.commit", [(REGISTER, REGISTER.replace("                self.cached[key] = block\n", ""))]),
    "s03.commit/last_writer_wins": ("s03.commit", [
        (REGISTER, "            block = state.blocks[i]\n            block.key = key\n            self.cached[key] = block\n")]),
    # stops at the first cached key: a longer request admitted beside a shorter one never registers its tail
    "s03.commit/stops_at_first_cached_key": ("s03.commit", [(REGISTER, """            if key in self.cached:
                break
            block = state.blocks[i]
            block.key = key
            self.cached[key] = block
""")]),
    "s03.commit/nothing_registered": ("s03.commit", [(REGISTER, "            pass\n")]),
    # TODO 5: release
    "s03.release/double_free": ("s03.release", [(RELEASE, "        for block in state.blocks:\n            block.ref_count -= 1\n"
                                                          "            self.free_queue.append(block)\n")]),
    "s03.release/frees_shared_blocks": ("s03.release", [(RELEASE, RELEASE.replace("block.ref_count -= 1", "block.ref_count = 0"))]),
    "s03.release/drops_keys": ("s03.release", [
        (RELEASE, RELEASE + "                if block.key is not None:\n                    del self.cached[block.key]\n"
                            "                    block.key = None\n")]),
    "s03.release/never_frees": ("s03.release", [(RELEASE, "        for block in state.blocks:\n            block.ref_count -= 1\n")]),
    # the revive path: the hits "belong to someone else", so only the fresh blocks are released
    "s03.release/skips_hit_blocks": ("s03.release", [
        (RELEASE, RELEASE.replace("in state.blocks:", "in state.blocks[state.hit_blocks:]:"))]),
    # quiz: one realistic misconception each
    "s03.quiz/admit_does_not_know_the_keys": ("s03.quiz", [(ANSWERS, ANSWERS.replace('"q3": "B"', '"q3": "C"'))]),
    "s03.quiz/aligned_prompt_hits_every_block": ("s03.quiz", [(ANSWERS, ANSWERS.replace('"q2": 63', '"q2": 64'))]),
    "s03.quiz/capacity_ignores_revived_hits": ("s03.quiz", [(ANSWERS, ANSWERS.replace('"q4": 70', '"q4": 100'))]),
    "s03.quiz/key_dies_with_the_last_reference": ("s03.quiz", [(ANSWERS, ANSWERS.replace('"q5": "C"', '"q5": "A"'))]),
    "s03.quiz/unanswered": ("s03.quiz", [(ANSWERS, '    return {"q1": 31}\n')]),
    # audit, issue 41 class 4: a cap of 0 hits taken for "no cap"
    "s03.lookup/zero_cap_is_no_cap": ("s03.lookup", [(LOOKUP_LOOP, "        for key in (keys[:max_hits] if max_hits else keys):\n")]),
    # audit, issue 41 class 5: loops that stop at the first block still in use where the contract goes on
    "s03.release/stops_at_first_shared": ("s03.release", [(RELEASE, """        for block in state.blocks:
            block.ref_count -= 1
            if block.ref_count > 0:
                break
            self.free_queue.append(block)
""")]),
    "s03.admit/stops_at_first_hit_in_use": ("s03.admit", [(TAKE_HITS, """        for block in hits:
            if block.ref_count > 0:
                break
            self.free_queue.remove(block)
            block.ref_count += 1
""")]),
}

EQUIVALENT = {
    "release_tail_first": [(RELEASE, RELEASE.replace("in state.blocks:", "in reversed(state.blocks):"))],
    "lookup_with_while": [(LOOKUP_LOOP + "            block = self.cached.get(key)\n            if block is None:\n"
                           "                break\n            hits.append(block)\n",
                           "        while len(hits) < min(max_hits, len(keys)) and keys[len(hits)] in self.cached:\n"
                           "            hits.append(self.cached[keys[len(hits)]])\n")],
    "commit_with_zip": [("        for i in range(state.hit_blocks, len(state.keys)):\n            key = state.keys[i]\n" + REGISTER,
                         "        fresh = zip(state.keys[state.hit_blocks:], state.blocks[state.hit_blocks:])\n"
                         "        for key, block in fresh:\n            if self.cached.setdefault(key, block) is block:\n"
                         "                block.key = key\n")],
}

# The check whose hint each wrong answer must read first (tests/course/test_mutants.py asserts it).
LEADS = {
    "s03.lookup/no_cap": "leaves_one_token_to_compute",
    "s03.lookup/skips_misses": "stops_at_first_miss",
    "s03.lookup/full_blocks_cap": "leaves_one_token_to_compute",
    "s03.lookup/takes_a_reference": "looks_without_touching",
    "s03.lookup/scans_cached_keys": "lookup_never_walks_the_pool",
    "s03.allocate_block/keeps_old_key": "reuse_forgets_the_old_key",
    "s03.allocate_block/forgets_map_entry_only": "reuse_forgets_the_old_key",
    "s03.allocate_block/no_ref_count": "fresh_pool",
    "s03.allocate_block/clears_whole_cache": "other_cached_blocks_stay",
    "s03.allocate_block/drops_block_key_only": "reuse_forgets_the_old_key",
    "s03.allocate_block/scans_cache_map_for_its_key": "allocate_never_walks_the_pool",
    "s03.admit/capacity_ignores_revived_hits": "revived_hit_is_not_a_fresh_block",
    "s03.admit/no_capacity_check": "full_pool_refuses_cleanly",
    "s03.admit/hit_without_ref_count": "hits_share_physical_blocks",
    "s03.admit/hit_stays_in_free_queue": "revived_blocks_stay_cached",
    "s03.admit/allocates_before_taking_hits": "cached_hit_next_in_line",
    "s03.admit/revive_forgets_key": "revived_blocks_stay_cached",
    "s03.admit/capacity_walks_the_pool": "admit_never_walks_the_pool",
    "s03.admit/pops_the_free_queue_itself": "fresh_blocks_forget_old_keys",
    "s03.admit/registers_before_commit": "no_hit_before_commit",
    "s03.commit/map_only": "registers_full_blocks",
    "s03.commit/block_key_only": "registers_full_blocks",
    "s03.commit/last_writer_wins": "first_writer_wins",
    "s03.commit/nothing_registered": "registers_full_blocks",
    "s03.commit/stops_at_first_cached_key": "overlapping_requests_admitted_before_either_commits",
    "s03.release/double_free": "drops_one_reference",
    "s03.release/frees_shared_blocks": "drops_one_reference",
    "s03.release/drops_keys": "freed_blocks_stay_cached",
    "s03.release/never_frees": "drops_one_reference",
    "s03.release/skips_hit_blocks": "hits_are_released_too",
    "s03.quiz/admit_does_not_know_the_keys": "q3",
    "s03.quiz/aligned_prompt_hits_every_block": "q2",
    "s03.quiz/capacity_ignores_revived_hits": "q4",
    "s03.quiz/key_dies_with_the_last_reference": "q5",
    "s03.quiz/unanswered": "q2",
    "s03.lookup/zero_cap_is_no_cap": "leaves_one_token_to_compute",
    "s03.release/stops_at_first_shared": "drops_one_reference",
    "s03.admit/stops_at_first_hit_in_use": "hits_share_physical_blocks",
}
