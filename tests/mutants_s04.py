"""Realistic wrong answers for each stage-4 TODO, graded by the real grader: each fails its TODO only."""
from __future__ import annotations



APPEND = "self._link_before(self._mid if block.key is None else self._tail, block)"
POP_PICK = """        block = self._head.next_free
        if block is self._mid:
            block = self._mid.next_free"""
REMOVE_CHECK = """        if block.prev_free is None:
            raise ValueError(f"block {block.block_id} is not in the free queue")
        self._unlink(block)"""
REMOVE_COUNT = """        self._unlink(block)
        self._len -= 1
        ### END SOLUTION"""
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
EXPIRE = "if now - registered_at < self.min_residence:"

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
    # TODO 3: remove
    "s04.remove/walks_the_list": ("s04.remove", [(REMOVE_CHECK, """        node = self._head.next_free
        while node is not block:
            if node is self._tail:
                raise ValueError(f"block {block.block_id} is not in the free queue")
            node = node.next_free
        self._unlink(block)""")]),
    "s04.remove/no_membership_check": ("s04.remove", [(REMOVE_CHECK, "        self._unlink(block)")]),
    "s04.remove/not_counted": ("s04.remove", [(REMOVE_COUNT, "        self._unlink(block)\n        ### END SOLUTION")]),
    # TODO 4: release_blocks
    "s04.release_blocks/head_first": ("s04.release_blocks", [(RELEASE, RELEASE.replace("reversed(blocks)", "blocks"))]),
    "s04.release_blocks/frees_shared_blocks": ("s04.release_blocks", [(RELEASE, """        for block in reversed(blocks):
            block.ref_count = 0
            self.free_queue.append(block)""")]),
    "s04.release_blocks/only_decrements_last_user": ("s04.release_blocks", [(RELEASE, """        for block in reversed(blocks):
            if block.ref_count == 1:
                block.ref_count = 0
                self.free_queue.append(block)""")]),
    # TODO 5: pin
    "s04.pin/no_cap": ("s04.pin", [(PIN_CAP, "")]),
    "s04.pin/cap_off_by_one": ("s04.pin", [(PIN_CAP, PIN_CAP.replace(">=", ">"))]),
    "s04.pin/pinned_block_stays_evictable": ("s04.pin", [(PIN_QUEUE, "        block.ref_count += 1")]),
    # TODO 6: expire
    "s04.expire/compared_the_wrong_way": ("s04.expire", [(EXPIRE, "if now - registered_at > self.min_residence:")]),
    "s04.expire/hold_ends_after_t": ("s04.expire", [(EXPIRE, "if now - registered_at <= self.min_residence:")]),
    "s04.expire/never_expires": ("s04.expire", [(EXPIRE, "if registered_at - now < self.min_residence:")]),
}
