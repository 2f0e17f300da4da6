"""Correct answers to each stage-5 code TODO written another way than the reference: each must earn
full marks (graded by ``tests/course/test_mutants.py``). Same format as ``solutions/07_serving/alternatives.py``: each
edit replaces the whole solution region of its TODO (read from the reference, so it stays exact)."""
from __future__ import annotations

import textwrap

from autograder.core import layout
from autograder.core.pysource import solution_region

_TEXT = layout.stage_files("s05").reference.read_text(encoding="utf-8")


def region(target: str, code: str) -> list[tuple[str, str]]:
    """One edit: the reference's solution region of ``target`` (a method of ``RadixCache``) becomes ``code``."""
    lines = _TEXT.splitlines(keepends=True)
    begin, end = solution_region(_TEXT, f"RadixCache.{target}")
    return [("".join(lines[begin:end + 1]),
             lines[begin] + textwrap.indent(textwrap.dedent(code).strip("\n") + "\n", " " * 8) + lines[end])]


ALTERNATIVES = {
    "s05._split_node": {
        "relink_the_parent_first": region("_split_node", """
            parent = child.parent
            old_key = self._child_key(child.key)
            head_key, tail_key = child.key[:split_len], child.key[split_len:]
            head_val, tail_val = child.value[:split_len], child.value[split_len:]
            new = self._new_node(head_key, head_val, parent, child.last_access)
            parent.children[old_key] = new
            new.lock_ref = child.lock_ref
            child.key, child.value, child.parent = tail_key, tail_val, new
            new.children = {self._child_key(tail_key): child}
        """),
        "delete_then_file_again": region("_split_node", """
            parent = child.parent
            del parent.children[self._child_key(child.key)]
            new = self._new_node(child.key[:split_len], child.value[:split_len], parent, child.last_access)
            new.lock_ref += child.lock_ref
            child.key = child.key[split_len:]
            child.value = child.value[split_len:]
            child.parent = new
            new.children.update({self._child_key(child.key): child})
            parent.children.update({self._child_key(new.key): new})
        """),
        "child_key_at_the_split": region("_split_node", """
            parent = child.parent
            key, value = child.key, child.value
            new = self._new_node(key[:split_len], value[:split_len], parent, child.last_access)
            new.lock_ref = child.lock_ref
            new.children[self._child_key(key, split_len)] = child
            parent.children[self._child_key(key)] = new
            child.key, child.value, child.parent = key[split_len:], value[split_len:], new
        """),
    },
    "s05.match_prefix": {
        "break_after_the_split": region("match_prefix", """
            pos = 0
            while pos < len(key):
                child = node.children.get(self._child_key(key, pos))
                if child is None:
                    break
                matched = self._common_len(child.key, key, pos)
                if matched < len(child.key):
                    child = self._split_node(child, matched)
                    child.last_access = now
                    slots.extend(child.value)
                    node = child
                    break
                child.last_access = now
                slots.extend(child.value)
                node = child
                pos += matched
        """),
        "collect_the_path_then_stamp": region("match_prefix", """
            pos = 0
            path = []
            while pos < len(key) and (child := node.children.get(self._child_key(key, pos))) is not None:
                matched = self._common_len(child.key, key, pos)
                if matched < len(child.key):
                    child = self._split_node(child, matched)
                path.append(child)
                node = child
                pos += matched
            for n in path:
                n.last_access = now
                slots += n.value
        """),
        "own_comparison_with_zip": region("match_prefix", """
            pos = 0
            while True:
                if pos >= len(key) or self._child_key(key, pos) not in node.children:
                    break
                child = node.children[self._child_key(key, pos)]
                matched = 0
                for a, b in zip(child.key, key[pos:]):
                    if a != b:
                        break
                    matched += 1
                matched -= matched % self.page_size
                if matched < len(child.key):
                    child = self._split_node(child, matched)
                child.last_access = now
                slots.extend(child.value)
                node, pos = child, pos + matched
        """),
    },
    "s05.insert": {
        "leaf_after_the_loop": region("insert", """
            while pos < len(key) and (child := node.children.get(self._child_key(key, pos))) is not None:
                matched = self._common_len(child.key, key, pos)
                if matched < len(child.key):
                    child = self._split_node(child, matched)
                child.last_access = now
                node = child
                pos += matched
            if pos < len(key):
                leaf = self._new_node(key[pos:], value[pos:], node, now)
                node.children[self._child_key(leaf.key)] = leaf
                self.evictable_size += len(key) - pos
        """),
        "membership_test_and_own_comparison": region("insert", """
            while pos < len(key):
                first = self._child_key(key, pos)
                if first not in node.children:
                    node.children[first] = self._new_node(key[pos:], value[pos:], node, now)
                    self.evictable_size += len(key[pos:])
                    break
                child = node.children[first]
                matched = 0
                while matched < len(child.key) and pos + matched < len(key) and child.key[matched] == key[pos + matched]:
                    matched += 1
                matched -= matched % self.page_size
                if matched != len(child.key):
                    child = self._split_node(child, matched)
                child.last_access = now
                node, pos = child, pos + matched
        """),
        "recursive_descent": region("insert", """
            def descend(node, pos):
                if pos == len(key):
                    return pos
                child = node.children.get(self._child_key(key, pos))
                if child is None:
                    leaf = self._new_node(key[pos:], value[pos:], node, now)
                    node.children[self._child_key(key, pos)] = leaf
                    self.evictable_size += len(leaf.key)
                    return pos
                matched = self._common_len(child.key, key, pos)
                if matched < len(child.key):
                    child = self._split_node(child, matched)
                child.last_access = now
                return descend(child, pos + matched)

            pos = descend(node, pos)
        """),
    },
    "s05.inc_lock_ref": {
        "path_list_then_locks": region("inc_lock_ref", """
            path = []
            while node is not self.root:
                path.append(node)
                node = node.parent
            for n in path:
                if n.lock_ref == 0:
                    self.evictable_size -= len(n.key)
                    self.protected_size += len(n.key)
                    moved += len(n.key)
                n.lock_ref += 1
        """),
        "sum_first_then_both_sizes_once": region("inc_lock_ref", """
            path = []
            while node is not self.root:
                path.append(node)
                node = node.parent
            moved = sum(len(n.key) for n in path if n.lock_ref == 0)
            for n in path:
                n.lock_ref += 1
            self.evictable_size -= moved
            self.protected_size += moved
        """),
        "recursion_up_the_path": region("inc_lock_ref", """
            def up(n):
                if n is self.root:
                    return 0
                here = len(n.key) if n.lock_ref == 0 else 0
                n.lock_ref += 1
                return here + up(n.parent)

            moved = up(node)
            self.evictable_size -= moved
            self.protected_size += moved
        """),
    },
    "s05.dec_lock_ref": {
        "path_list_then_sum": region("dec_lock_ref", """
            path = []
            while node is not self.root:
                path.append(node)
                node = node.parent
            for n in path:
                n.lock_ref -= 1
            moved = sum(len(n.key) for n in path if n.lock_ref == 0)
            self.protected_size -= moved
            self.evictable_size += moved
        """),
        "sizes_once_at_the_end": region("dec_lock_ref", """
            current = node
            while current is not self.root:
                current.lock_ref -= 1
                if not current.lock_ref:
                    moved += len(current.key)
                current = current.parent
            self.evictable_size += moved
            self.protected_size -= moved
        """),
        "recursion_up_the_path": region("dec_lock_ref", """
            def up(n):
                if n is self.root:
                    return 0
                n.lock_ref -= 1
                return (len(n.key) if n.lock_ref == 0 else 0) + up(n.parent)

            moved = up(node)
            self.protected_size -= moved
            self.evictable_size += moved
        """),
    },
    "s05.evict": {
        "min_over_a_candidate_list": region("evict", """
            candidates = [leaf for leaf in self._leaves() if leaf.lock_ref == 0]
            while len(freed) < num_tokens and candidates:
                leaf = min(candidates, key=lambda n: (n.last_access, n.id))
                candidates.remove(leaf)
                parent = leaf.parent
                del parent.children[self._child_key(leaf.key)]
                leaf.parent = None
                freed.extend(leaf.value)
                self.evictable_size -= len(leaf.key)
                if parent is not self.root and not parent.children and parent.lock_ref == 0:
                    candidates.append(parent)
        """),
        "sorted_list_and_insort": region("evict", """
            import bisect
            queue = sorted((leaf.last_access, leaf.id, leaf) for leaf in self._leaves() if leaf.lock_ref == 0)
            while queue and len(freed) < num_tokens:
                _, _, leaf = queue.pop(0)
                parent = leaf.parent
                parent.children.pop(self._child_key(leaf.key))
                leaf.parent = None
                freed += leaf.value
                self.evictable_size -= len(leaf.value)
                if parent is not self.root and len(parent.children) == 0 and not parent.lock_ref:
                    bisect.insort(queue, (parent.last_access, parent.id, parent))
        """),
        "heap_of_ids_and_a_dict": region("evict", """
            by_id = {leaf.id: leaf for leaf in self._leaves() if leaf.lock_ref == 0}
            heap = [(n.last_access, i) for i, n in by_id.items()]
            heapq.heapify(heap)
            while heap and len(freed) < num_tokens:
                _, i = heapq.heappop(heap)
                leaf = by_id.pop(i)
                parent = leaf.parent
                parent.children.pop(self._child_key(leaf.key))
                leaf.parent = None
                freed += leaf.value
                self.evictable_size -= len(leaf.value)
                if parent is not self.root and len(parent.children) == 0 and not parent.lock_ref:
                    by_id[parent.id] = parent
                    heapq.heappush(heap, (parent.last_access, parent.id))
        """),
    },
}
