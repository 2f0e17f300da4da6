"""Given code of stage 5 (not TODOs): the node of the radix tree and the result of a match.

Kept apart from the stage's reference module so that the notebook's setup cell (and a classroom
release, which ships given modules but not the stage's reference) can import it as it stands.
"""
from __future__ import annotations

from dataclasses import dataclass

Tokens = tuple[int, ...]


class TreeNode:
    """A node of the radix tree together with the edge that leads to it from its parent.

    ``key`` is the run of tokens on that edge and ``value`` the KV slot of each of them (one slot id
    per token); ``children`` maps the first token (or first page) of each child's edge to the child.

    Invariants (checked by ``RadixCache.check_invariants``):
    - the root has an empty ``key``/``value``, no parent, and ``lock_ref == 0``;
    - any other node has ``len(key) == len(value) > 0``, a multiple of the cache's page size, and
      ``parent.children[child_key(key)] is self``; a node dropped by eviction has ``parent None``;
    - ``lock_ref >= 0`` and a node's ``lock_ref`` is at least the sum of its children's (a lock on a
      node holds every node on its path to the root);
    - ``last_access`` of a parent is at least that of any child (touching a node touches its path).
    """

    __slots__ = ("id", "key", "value", "parent", "children", "lock_ref", "last_access")

    def __init__(self, node_id: int, key: Tokens, value: Tokens, parent: TreeNode | None,
                 last_access: float = 0) -> None:
        self.id = node_id
        self.key = key
        self.value = value
        self.parent = parent
        self.children: dict[object, TreeNode] = {}
        self.lock_ref = 0
        self.last_access = last_access

    def __repr__(self) -> str:
        head = " ".join(map(str, self.key[:4])) + (" …" if len(self.key) > 4 else "")
        return (f"TreeNode(#{self.id}, {len(self.key)} tokens [{head}], lock_ref={self.lock_ref}, "
                f"last_access={self.last_access})")


@dataclass
class PrefixMatch:
    """What ``RadixCache.match_prefix`` found: the KV slots of the longest cached prefix, in token
    order, and the node where that prefix ends (the root when nothing matched)."""

    slots: list[int]
    last_node: TreeNode

    @property
    def length(self) -> int:
        """Number of prompt tokens whose KV is cached."""
        return len(self.slots)
