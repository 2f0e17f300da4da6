"""Realistic wrong answers for each stage-5 TODO, graded by the real grader: each fails its TODO only,
and leads with the check named in ``LEADS``. Right answers written differently from the reference live in
``alternatives.py`` beside this file."""
from __future__ import annotations

# -- snippets of the reference (each occurs exactly once in reference.py) ---------------
SPLIT_LOCK = "        new.lock_ref = child.lock_ref\n"
SPLIT_NEW = "new = self._new_node(child.key[:split_len], child.value[:split_len], parent, child.last_access)"
SPLIT_RELINK = "        parent.children[self._child_key(new.key)] = new\n"
SPLIT_PARENT = "        child.parent = new\n"

MATCH_STEP = """            if matched < len(child.key):
                # Make the match boundary a node.
                # zh: 让匹配的边界成为一个节点。
                child = self._split_node(child, matched)
            child.last_access = now
            slots.extend(child.value)
"""
MATCH_LOOKUP = """            child = node.children.get(self._child_key(key, pos))
            if child is None:
                break
"""
MATCH_END = """            pos += matched
        ### END SOLUTION
        return PrefixMatch(slots, node)"""

INSERT_LEAF = """                leaf = self._new_node(key[pos:], value[pos:], node, now)
                node.children[self._child_key(key, pos)] = leaf
                self.evictable_size += len(leaf.key)
                break
"""
INSERT_STEP = """            if matched < len(child.key):
                child = self._split_node(child, matched)
            child.last_access = now
            node = child
"""

INC_MOVE = """            if node.lock_ref == 0:
                self.evictable_size -= len(node.key)
                self.protected_size += len(node.key)
                moved += len(node.key)
            node.lock_ref += 1
            node = node.parent
"""
DEC_MOVE = """            node.lock_ref -= 1
            if node.lock_ref == 0:
                self.protected_size -= len(node.key)
                self.evictable_size += len(node.key)
                moved += len(node.key)
            node = node.parent
"""

# Compares the edge and the rest of the prompt as joined digits: right for one-digit tokens only.
DIGITS = """            edge_text = "".join(map(str, child.key))
            rest_text = "".join(map(str, key[pos:]))
            matched = 0
            while matched < min(len(child.key), len(edge_text), len(rest_text)) and edge_text[matched] == rest_text[matched]:
                matched += 1
            matched -= matched % self.page_size
"""
# Finds the child to follow by looking at every child: right, but slow under a wide node.
SCAN = """            child = None
            for candidate in node.children.values():
                if self._child_key(candidate.key) == self._child_key(key, pos):
                    child = candidate
                    break
"""
MATCH_COUNT = """            matched = self._common_len(child.key, key, pos)
            if matched < len(child.key):
                # Make the match boundary a node.
"""
INSERT_COUNT = """            matched = self._common_len(child.key, key, pos)
            if matched < len(child.key):
                child = self._split_node(child, matched)
"""
INSERT_LOOKUP = """            child = node.children.get(self._child_key(key, pos))
            if child is None:
                leaf"""
# Compares tokens by identity: right while the ids are small ints (CPython keeps one object per value up to
# 256), wrong for real token ids built at run time.
IDENTITY = """            matched = 0
            while matched < min(len(child.key), len(key) - pos) and child.key[matched] is key[pos + matched]:
                matched += 1
            matched -= matched % self.page_size
"""
SPLIT_FILE_CHILD = "        new.children[self._child_key(child.key)] = child\n"
INC_WALK = "        # TODO 4 (s05.inc_lock_ref)\n        ### BEGIN SOLUTION\n        while node is not self.root:\n"
EVICT_POP = "            _, _, leaf = heapq.heappop(heap)\n"
EVICT_PUSH_PARENT = "                heapq.heappush(heap, (parent.last_access, parent.id, parent))\n"
EVICT_DETACH = "            del parent.children[self._child_key(leaf.key)]\n            # Mark it detached: locking it later is an error.\n"
ANSWERS = '    return {"q1": "B", "q2": "B", "q3": 32, "q4": "A", "q5": 64, "q6": "C"}\n'

EVICT_HEAP = "heap = [(leaf.last_access, leaf.id, leaf) for leaf in self._leaves() if leaf.lock_ref == 0]"
EVICT_LOOP = "        while len(freed) < num_tokens and heap:\n"
EVICT_PUSH = "            if parent is not self.root and not parent.children and parent.lock_ref == 0:\n"

MUTANTS = {
    # TODO 1: _split_node
    "s05._split_node/no_lock_copy": ("s05._split_node", [(SPLIT_LOCK, "")]),
    "s05._split_node/fresh_access_time": ("s05._split_node", [(SPLIT_NEW, SPLIT_NEW.replace("child.last_access)", "0)"))]),
    "s05._split_node/parent_not_relinked": ("s05._split_node", [(SPLIT_RELINK, "")]),
    "s05._split_node/child_parent_not_updated": ("s05._split_node", [(SPLIT_PARENT, "")]),
    # TODO 2: match_prefix
    "s05.match_prefix/no_split_on_partial_edge": ("s05.match_prefix", [
        (MATCH_STEP, "            child.last_access = now\n            slots.extend(child.value[:matched])\n")]),
    # splits only where the prompt goes on with another token: a prompt that ends inside an edge takes a slice
    "s05.match_prefix/no_split_where_the_prompt_ends": ("s05.match_prefix", [(MATCH_STEP, """            if matched < len(child.key) and pos + matched < len(key):
                child = self._split_node(child, matched)
            child.last_access = now
            slots.extend(child.value[:matched])
""")]),
    "s05.match_prefix/no_access_time": ("s05.match_prefix", [
        (MATCH_STEP, MATCH_STEP.replace("            child.last_access = now\n", ""))]),
    "s05.match_prefix/stamps_last_node_only": ("s05.match_prefix", [
        (MATCH_STEP, MATCH_STEP.replace("            child.last_access = now\n", "")),
        (MATCH_END, MATCH_END.replace("        ### END", "        node.last_access = now\n        ### END"))]),
    "s05.match_prefix/first_token_lookup_with_pages": ("s05.match_prefix", [
        (MATCH_LOOKUP, MATCH_LOOKUP.replace("self._child_key(key, pos)", "key[pos]"))]),
    # TODO 3: insert
    "s05.insert/no_split_where_paths_diverge": ("s05.insert", [
        (INSERT_STEP, "            child.last_access = now\n            node = child\n")]),
    "s05.insert/returns_new_tokens": ("s05.insert", [(INSERT_LEAF, INSERT_LEAF.replace("break", "return len(leaf.key)"))]),
    "s05.insert/evictable_not_counted": ("s05.insert", [
        (INSERT_LEAF, INSERT_LEAF.replace("                self.evictable_size += len(leaf.key)\n", ""))]),
    "s05.insert/no_access_time": ("s05.insert", [(INSERT_STEP, INSERT_STEP.replace("            child.last_access = now\n", ""))]),
    # TODO 4: inc_lock_ref
    "s05.inc_lock_ref/locks_last_node_only": ("s05.inc_lock_ref", [
        (INC_MOVE, INC_MOVE.replace("            node = node.parent\n", "            break\n"))]),
    "s05.inc_lock_ref/moves_on_every_lock": ("s05.inc_lock_ref", [
        (INC_MOVE, INC_MOVE.replace("if node.lock_ref == 0:", "if True:"))]),
    "s05.inc_lock_ref/forgets_protected": ("s05.inc_lock_ref", [
        (INC_MOVE, INC_MOVE.replace("                self.protected_size += len(node.key)\n", ""))]),
    # TODO 5: dec_lock_ref
    "s05.dec_lock_ref/unlocks_last_node_only": ("s05.dec_lock_ref", [
        (DEC_MOVE, DEC_MOVE.replace("            node = node.parent\n", "            break\n"))]),
    "s05.dec_lock_ref/moves_on_every_unlock": ("s05.dec_lock_ref", [
        (DEC_MOVE, DEC_MOVE.replace("if node.lock_ref == 0:", "if True:"))]),
    "s05.dec_lock_ref/off_by_one": ("s05.dec_lock_ref", [
        (DEC_MOVE, DEC_MOVE.replace("if node.lock_ref == 0:", "if node.lock_ref <= 1:"))]),
    # TODO 6: evict
    "s05.evict/evicts_internal_nodes": ("s05.evict", [(EVICT_HEAP, EVICT_HEAP.replace("self._leaves()", "self.nodes()"))]),
    "s05.evict/ignores_locks": ("s05.evict", [(EVICT_HEAP, EVICT_HEAP.replace(" if leaf.lock_ref == 0", ""))]),
    "s05.evict/parent_never_a_candidate": ("s05.evict", [(EVICT_PUSH, "            if False:\n")]),
    # a heap of (time, node): equal access times compare two nodes, which raises TypeError
    "s05.evict/heap_without_a_tie_break": ("s05.evict", [
        (EVICT_HEAP, EVICT_HEAP.replace("(leaf.last_access, leaf.id, leaf)", "(leaf.last_access, leaf)")),
        ("            _, _, leaf = heapq.heappop(heap)\n", "            _, leaf = heapq.heappop(heap)\n"),
        ("                heapq.heappush(heap, (parent.last_access, parent.id, parent))\n",
         "                heapq.heappush(heap, (parent.last_access, parent))\n")]),
    "s05.evict/most_recent_first": ("s05.evict", [(EVICT_HEAP, EVICT_HEAP.replace("(leaf.last_access,", "(-leaf.last_access,"))]),
    "s05.evict/one_node_too_many": ("s05.evict", [(EVICT_LOOP, EVICT_LOOP.replace("<", "<="))]),
    "s05.evict/evicted_node_keeps_its_parent": ("s05.evict", [
        ("            # zh: 标记为已摘除：之后再给它加锁就是错误。\n            leaf.parent = None\n",
         "            # zh: 标记为已摘除：之后再给它加锁就是错误。\n")]),
    # issue 12: lock bookkeeping on shared paths, token boundaries, the cost of a lookup
    "s05.inc_lock_ref/stops_at_locked_ancestor": ("s05.inc_lock_ref", [
        (INC_MOVE, "            if node.lock_ref > 0:\n                node.lock_ref += 1\n                break\n" + INC_MOVE)]),
    "s05.dec_lock_ref/stops_while_still_held": ("s05.dec_lock_ref", [
        (DEC_MOVE, DEC_MOVE.replace("            node.lock_ref -= 1\n",
                                    "            node.lock_ref -= 1\n            if node.lock_ref > 0:\n                break\n"))]),
    "s05.evict/locked_parent_becomes_candidate": ("s05.evict", [
        (EVICT_PUSH, EVICT_PUSH.replace(" and parent.lock_ref == 0", ""))]),
    "s05.match_prefix/joined_digits": ("s05.match_prefix", [(MATCH_COUNT, DIGITS + MATCH_COUNT.split("\n", 1)[1])]),
    "s05.match_prefix/scans_children": ("s05.match_prefix", [(MATCH_LOOKUP, SCAN + "            if child is None:\n                break\n")]),
    "s05.insert/joined_digits": ("s05.insert", [(INSERT_COUNT, DIGITS + INSERT_COUNT.split("\n", 1)[1])]),
    "s05.insert/scans_children": ("s05.insert", [(INSERT_LOOKUP, SCAN + "            if child is None:\n                leaf")]),
    # issue 21: identity vs equality, stale nodes after a split or an eviction, pages, ties, the root
    "s05._split_node/child_filed_under_its_first_token": ("s05._split_node", [(SPLIT_FILE_CHILD, SPLIT_FILE_CHILD.replace(
        "self._child_key(child.key)", "child.key[0]"))]),
    "s05.match_prefix/compares_tokens_by_identity": ("s05.match_prefix", [
        (MATCH_COUNT, IDENTITY + MATCH_COUNT.split("\n", 1)[1])]),
    "s05.match_prefix/keeps_the_stale_child_after_split": ("s05.match_prefix", [(MATCH_STEP, MATCH_STEP.replace(
        "child = self._split_node(child, matched)", "self._split_node(child, matched)"))]),
    "s05.insert/compares_tokens_by_identity": ("s05.insert", [(INSERT_COUNT, IDENTITY + INSERT_COUNT.split("\n", 1)[1])]),
    "s05.insert/keeps_the_stale_child_after_split": ("s05.insert", [(INSERT_STEP, INSERT_STEP.replace(
        "child = self._split_node(child, matched)", "self._split_node(child, matched)"))]),
    "s05.insert/leaf_inherits_the_parent_lock": ("s05.insert", [(INSERT_LEAF, INSERT_LEAF.replace(
        "                node.children[", "                leaf.lock_ref = node.lock_ref\n                node.children["))]),
    "s05.inc_lock_ref/locks_the_root_too": ("s05.inc_lock_ref", [(INC_WALK, INC_WALK.replace(
        "while node is not self.root:", "while node is not None:"))]),
    "s05.evict/tie_goes_to_the_newer_node": ("s05.evict", [
        (EVICT_HEAP, EVICT_HEAP.replace("leaf.id, leaf)", "-leaf.id, leaf)")),
        (EVICT_PUSH_PARENT, EVICT_PUSH_PARENT.replace("parent.id, parent)", "-parent.id, parent)"))]),
    "s05.evict/leaf_left_in_its_parent": ("s05.evict", [(EVICT_DETACH, EVICT_DETACH.split("\n", 1)[1])]),
    # the quiz
    "s05.quiz/counts_a_node_per_match": ("s05.quiz", [(ANSWERS, ANSWERS.replace('"q1": "B"', '"q1": "C"'))]),
    "s05.quiz/one_unlock_frees_the_shared_path": ("s05.quiz", [(ANSWERS, ANSWERS.replace('"q2": "B"', '"q2": "A"'))]),
    "s05.quiz/partial_pages_hit": ("s05.quiz", [(ANSWERS, ANSWERS.replace('"q3": 32', '"q3": 40'))]),
    "s05.quiz/evicts_single_tokens": ("s05.quiz", [(ANSWERS, ANSWERS.replace('"q5": 64', '"q5": 1'))]),
    "s05.quiz/scans_the_children": ("s05.quiz", [(ANSWERS, ANSWERS.replace('"q6": "C"', '"q6": "a"'))]),
}

# The check whose hint each wrong answer must read first (its mistake's own check), by wrong answer.
LEADS = {
    "s05._split_node/no_lock_copy": "split_keeps_locks",
    "s05._split_node/fresh_access_time": "split_keeps_access_time",
    "s05._split_node/parent_not_relinked": "split_twice_then_match",
    "s05._split_node/child_parent_not_updated": "split_twice_then_match",
    "s05._split_node/child_filed_under_its_first_token": "split_on_a_page_boundary",
    "s05.match_prefix/no_split_on_partial_edge": "splits_inside_an_edge",
    "s05.match_prefix/no_access_time": "stamps_the_whole_path",
    "s05.match_prefix/no_split_where_the_prompt_ends": "splits_where_the_prompt_ends",
    "s05.match_prefix/stamps_last_node_only": "stamps_the_whole_path",
    "s05.match_prefix/first_token_lookup_with_pages": "whole_pages_only",
    "s05.match_prefix/joined_digits": "token_boundaries",
    "s05.match_prefix/scans_children": "one_lookup_per_level",
    "s05.match_prefix/compares_tokens_by_identity": "equal_ids_are_not_identical",
    "s05.match_prefix/keeps_the_stale_child_after_split": "splits_inside_an_edge",
    "s05.insert/no_split_where_paths_diverge": "splits_where_paths_diverge",
    "s05.insert/returns_new_tokens": "returns_tokens_already_cached",
    "s05.insert/evictable_not_counted": "counts_evictable_and_stamps",
    "s05.insert/no_access_time": "counts_evictable_and_stamps",
    "s05.insert/joined_digits": "insert_token_boundaries",
    "s05.insert/scans_children": "insert_one_lookup_per_level",
    "s05.insert/compares_tokens_by_identity": "insert_equal_ids_are_not_identical",
    "s05.insert/keeps_the_stale_child_after_split": "splits_where_paths_diverge",
    "s05.insert/leaf_inherits_the_parent_lock": "leaf_below_a_locked_path",
    "s05.inc_lock_ref/locks_last_node_only": "locks_the_whole_path",
    "s05.inc_lock_ref/moves_on_every_lock": "second_lock_moves_nothing",
    "s05.inc_lock_ref/forgets_protected": "locks_the_whole_path",
    "s05.inc_lock_ref/stops_at_locked_ancestor": "two_requests_lock_a_deep_node",
    "s05.inc_lock_ref/locks_the_root_too": "lock_after_a_miss",
    "s05.dec_lock_ref/unlocks_last_node_only": "unlock_restores",
    "s05.dec_lock_ref/moves_on_every_unlock": "two_locks_need_two_unlocks",
    "s05.dec_lock_ref/off_by_one": "two_locks_need_two_unlocks",
    "s05.dec_lock_ref/stops_while_still_held": "two_requests_share_a_deep_node",
    "s05.evict/evicts_internal_nodes": "parent_becomes_a_candidate",
    "s05.evict/ignores_locks": "locked_nodes_stay",
    "s05.evict/parent_never_a_candidate": "parent_becomes_a_candidate",
    "s05.evict/heap_without_a_tie_break": "equal_access_times",
    "s05.evict/most_recent_first": "least_recently_used_first",
    "s05.evict/one_node_too_many": "stops_when_enough",
    "s05.evict/evicted_node_keeps_its_parent": "evicted_nodes_leave_the_tree",
    "s05.evict/locked_parent_becomes_candidate": "locked_inner_node_loses_its_last_child",
    "s05.evict/tie_goes_to_the_newer_node": "equal_access_times",
    "s05.evict/leaf_left_in_its_parent": "evicted_nodes_leave_the_tree",
    "s05.quiz/counts_a_node_per_match": "q1",
    "s05.quiz/one_unlock_frees_the_shared_path": "q2",
    "s05.quiz/partial_pages_hit": "q3",
    "s05.quiz/evicts_single_tokens": "q5",
    "s05.quiz/scans_the_children": "q6",
}
