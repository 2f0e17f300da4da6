"""Realistic wrong answers for each stage-4 TODO, graded by the real grader: each fails its TODO only.

Bug kinds covered besides the plain slips: a block left linked after it leaves the queue (popleft and
remove without clearing links: the revive path "A frees, B hits and frees, C must hit" breaks), O(n)
work hidden behind iteration, release in two passes that ends up head first, pins that skip the
pseudo-request's bookkeeping or take in-use blocks out of the free queue, and a residence check that
reads the wall clock instead of the pool's own clock.
"""
from __future__ import annotations

APPEND = "self._link_before(self._mid if block.key is None else self._tail, block)"
POP_PICK = """        block = self._head.next_free
        if block is self._mid:
            block = self._mid.next_free"""
POP_UNLINK = """        self._unlink(block)  # type: ignore[arg-type]
        self._len -= 1"""
REMOVE_CHECK = """        if block.prev_free is None:
            raise ValueError(f"block {block.block_id} is not in the free queue")
        self._unlink(block)"""
REMOVE_COUNT = """        self._unlink(block)
        self._len -= 1
        ### END SOLUTION"""
MANUAL_UNLINK = """block.prev_free.next_free = block.next_free
        block.next_free.prev_free = block.prev_free"""
RELEASE = """        for block in reversed(blocks):
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)"""
PIN_CAP = """        if len(self._pinned) >= self.max_pinned:
            return False
"""
PIN_QUEUE = """        if block.ref_count == 0:
            self.free_queue.remove(block)
        block.ref_count += 1"""
PIN_RECORD = "        self.requests[self.PIN_ID].blocks.append(block)\n"
EXPIRE = "if now - registered_at < self.min_residence:"
ANSWERS = '    return {"q1": "B", "q2": "A", "q3": 32, "q4": "C", "q5": 13, "q6": "C"}\n'

MUTANTS = {
    # TODO 1: append
    "s04.append/keyless_not_first": ("s04.append", [(APPEND, "self._link_before(self._tail, block)")]),
    "s04.append/cached_at_lru_end": ("s04.append", [(APPEND, "self._link_before(self._mid if block.key is None else self._mid.next_free, block)")]),
    "s04.append/not_counted": ("s04.append", [("        self._len += 1\n", "")]),
    # TODO 2: popleft
    "s04.popleft/mru_instead_of_lru": ("s04.popleft", [(POP_PICK, POP_PICK.replace("_head.next_free", "_tail.prev_free").replace("_mid.next_free", "_mid.prev_free"))]),
    "s04.popleft/cached_before_keyless": ("s04.popleft", [(POP_PICK, """        block = self._mid.next_free
        if block is self._tail:
            block = self._head.next_free""")]),
    "s04.popleft/hands_out_the_mid_sentinel": ("s04.popleft", [(POP_PICK, "        block = self._head.next_free")]),
    "s04.popleft/not_counted_out": ("s04.popleft", [(POP_UNLINK, "        self._unlink(block)  # type: ignore[arg-type]")]),
    "s04.popleft/leaves_block_linked": ("s04.popleft", [(POP_UNLINK, "        " + MANUAL_UNLINK + "\n        self._len -= 1")]),
    # the counter kept on one path only: popping a cached block is counted, a keyless one is not
    "s04.popleft/counted_on_one_path": ("s04.popleft", [(POP_PICK + "\n" + POP_UNLINK, POP_PICK + """
            self._len -= 1
        self._unlink(block)  # type: ignore[arg-type]""")]),
    "s04.popleft/walks_a_snapshot": ("s04.popleft", [(POP_PICK, "        block = next(iter(self))")]),
    # TODO 3: remove
    "s04.remove/walks_the_list": ("s04.remove", [(REMOVE_CHECK, """        node = self._head.next_free
        while node is not block:
            if node is self._tail:
                raise ValueError(f"block {block.block_id} is not in the free queue")
            node = node.next_free
        self._unlink(block)""")]),
    "s04.remove/no_membership_check": ("s04.remove", [(REMOVE_CHECK, "        self._unlink(block)")]),
    "s04.remove/not_counted": ("s04.remove", [(REMOVE_COUNT, "        self._unlink(block)\n        ### END SOLUTION")]),
    "s04.remove/leaves_links_set": ("s04.remove", [(REMOVE_COUNT, "        " + MANUAL_UNLINK + "\n        self._len -= 1\n        ### END SOLUTION")]),
    # TODO 4: release_blocks
    "s04.release_blocks/head_first": ("s04.release_blocks", [(RELEASE, RELEASE.replace("reversed(blocks)", "blocks"))]),
    "s04.release_blocks/frees_shared_blocks": ("s04.release_blocks", [(RELEASE, """        for block in reversed(blocks):
            block.ref_count = 0
            self.free_queue.append(block)""")]),
    "s04.release_blocks/only_decrements_last_user": ("s04.release_blocks", [(RELEASE, """        for block in reversed(blocks):
            if block.ref_count == 1:
                block.ref_count = 0
                self.free_queue.append(block)""")]),
    "s04.release_blocks/two_passes_second_head_first": ("s04.release_blocks", [(RELEASE, """        for block in reversed(blocks):
            block.ref_count -= 1
        for block in blocks:
            if block.ref_count == 0:
                self.free_queue.append(block)""")]),
    # pops the caller's table: a list comes back empty, a tuple raises AttributeError before any reference is dropped
    "s04.release_blocks/pops_the_callers_table": ("s04.release_blocks", [(RELEASE, """        while blocks:
            block = blocks.pop()
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)""")]),
    # the table's order taken from the block ids: right on a fresh pool (ids grow along the table), wrong
    # once reused blocks make the ids fall along it
    "s04.release_blocks/highest_id_first": ("s04.release_blocks", [(RELEASE, RELEASE.replace(
        "reversed(blocks)", "sorted(blocks, key=lambda b: -b.block_id)"))]),
    # TODO 5: pin
    # the Block object kept in the set of pinned ids: a second pin adds a reference, is_pinned says no
    "s04.pin/block_objects_in_the_id_set": ("s04.pin", [("        self._pinned.add(block.block_id)\n", "        self._pinned.add(block)\n")]),
    "s04.pin/no_cap": ("s04.pin", [(PIN_CAP, "")]),
    # a cap of 0 taken for "no cap"
    "s04.pin/zero_cap_is_no_cap": ("s04.pin", [(PIN_CAP, PIN_CAP.replace(
        "if len(self._pinned) >= self.max_pinned:", "if self.max_pinned and len(self._pinned) >= self.max_pinned:"))]),
    "s04.pin/cap_off_by_one": ("s04.pin", [(PIN_CAP, PIN_CAP.replace(">=", ">"))]),
    "s04.pin/pinned_block_stays_evictable": ("s04.pin", [(PIN_QUEUE, "        block.ref_count += 1")]),
    "s04.pin/takes_in_use_block_out_of_the_queue": ("s04.pin", [(PIN_QUEUE, """        self.free_queue.remove(block)
        block.ref_count += 1""")]),
    "s04.pin/not_recorded_for_the_pseudo_request": ("s04.pin", [(PIN_RECORD, "")]),
    "s04.pin/counts_before_the_cap_check": ("s04.pin", [(PIN_CAP + PIN_QUEUE, PIN_QUEUE.replace(
        "        block.ref_count += 1", "") + "        block.ref_count += 1\n" + PIN_CAP)]),
    # TODO 6: expire
    "s04.expire/compared_the_wrong_way": ("s04.expire", [(EXPIRE, "if now - registered_at > self.min_residence:")]),
    "s04.expire/hold_ends_after_t": ("s04.expire", [(EXPIRE, "if now - registered_at <= self.min_residence:")]),
    "s04.expire/never_expires": ("s04.expire", [(EXPIRE, "if registered_at - now < self.min_residence:")]),
    "s04.expire/uses_the_wall_clock": ("s04.expire", [(EXPIRE, "if time.monotonic() - registered_at < self.min_residence:")]),
    # equal timestamps: one hold per call, so a second hold registered at the same time waits a call
    "s04.expire/one_hold_per_call": ("s04.expire", [(EXPIRE, "if now - registered_at < self.min_residence or dropped:")]),
    # TODO 7: quiz
    "s04.quiz/counts_the_head_first_order": ("s04.quiz", [(ANSWERS, ANSWERS.replace('"q3": 32', '"q3": 0'))]),
    "s04.quiz/hold_ends_a_second_late": ("s04.quiz", [(ANSWERS, ANSWERS.replace('"q5": 13', '"q5": 14'))]),
    "s04.quiz/pins_are_free": ("s04.quiz", [(ANSWERS, ANSWERS.replace('"q4": "C"', '"q4": "a"'))]),
    "s04.quiz/unanswered": ("s04.quiz", [(ANSWERS, '    return {"q1": "B"}\n')]),
    # audit, issue 41 class 5: stops at the first block another request still holds
    "s04.release_blocks/stops_at_first_shared": ("s04.release_blocks", [(RELEASE, """        for block in reversed(blocks):
            block.ref_count -= 1
            if block.ref_count > 0:
                break
            self.free_queue.append(block)""")]),
}

# Correct answers written differently: they must earn every point.
EQUIVALENT = {
    "append/if_else": [(f"        {APPEND}\n", """        if block.key is None:
            self._link_before(self._mid, block)
        else:
            self._link_before(self._tail, block)
""")],
    "remove/membership_through_contains": [("        if block.prev_free is None:\n            raise ValueError(f\"block {block.block_id} is not in the free queue\")",
                                            "        if block not in self:\n            raise ValueError(\"not in the free queue\")")],
    "expire/deadline_form": [(EXPIRE, "if registered_at + self.min_residence > now:")],
}

# The check whose hint each wrong answer must read first (tests/course/test_mutants.py asserts it).
LEADS = {
    "s04.append/keyless_not_first": "keyless_blocks_go_first",
    "s04.append/cached_at_lru_end": "cached_blocks_in_order",
    "s04.append/not_counted": "cached_blocks_in_order",
    "s04.popleft/mru_instead_of_lru": "least_recent_first",
    "s04.popleft/cached_before_keyless": "keyless_before_cached",
    "s04.popleft/hands_out_the_mid_sentinel": "least_recent_first",
    "s04.popleft/not_counted_out": "popped_blocks_leave_the_queue",
    "s04.popleft/leaves_block_linked": "popped_blocks_leave_the_queue",
    "s04.popleft/walks_a_snapshot": "popleft_work_does_not_grow",
    "s04.popleft/counted_on_one_path": "length_counts_every_pop",
    "s04.pin/block_objects_in_the_id_set": "pinning_twice_is_one_pin",
    "s04.remove/walks_the_list": "remove_work_does_not_grow",
    "s04.remove/no_membership_check": "remove_refuses_non_members",
    "s04.remove/not_counted": "remove_from_the_middle",
    "s04.remove/leaves_links_set": "remove_from_the_middle",
    "s04.release_blocks/head_first": "tail_is_freed_first",
    "s04.release_blocks/frees_shared_blocks": "shared_blocks_stay_in_use",
    "s04.release_blocks/only_decrements_last_user": "shared_blocks_stay_in_use",
    "s04.release_blocks/two_passes_second_head_first": "tail_is_freed_first",
    "s04.release_blocks/highest_id_first": "tail_first_whatever_the_block_ids",
    "s04.release_blocks/pops_the_callers_table": "callers_table_of_any_sequence_type_left_alone",
    "s04.pin/zero_cap_is_no_cap": "zero_cap_is_a_cap",
    "s04.pin/no_cap": "cap_is_respected",
    "s04.pin/cap_off_by_one": "cap_is_respected",
    "s04.pin/pinned_block_stays_evictable": "free_block_leaves_the_queue",
    "s04.pin/takes_in_use_block_out_of_the_queue": "pin_in_use_block",
    "s04.pin/not_recorded_for_the_pseudo_request": "free_block_leaves_the_queue",
    "s04.pin/counts_before_the_cap_check": "cap_is_respected",
    "s04.expire/compared_the_wrong_way": "young_blocks_are_held",
    "s04.expire/hold_ends_after_t": "hold_ends_at_exactly_t",
    "s04.expire/never_expires": "hold_ends_at_exactly_t",
    "s04.expire/uses_the_wall_clock": "young_blocks_are_held",
    "s04.expire/one_hold_per_call": "holds_registered_together_end_together",
    "s04.quiz/counts_the_head_first_order": "q3",
    "s04.quiz/hold_ends_a_second_late": "q5",
    "s04.quiz/pins_are_free": "q4",
    "s04.quiz/unanswered": "q2",
    "s04.release_blocks/stops_at_first_shared": "shared_blocks_stay_in_use",
}
