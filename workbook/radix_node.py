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

    [zh]
    基数树的一个节点，连同从父节点通向它的那条边。

    ``key`` 是这条边上的一段 token，``value`` 是其中每个 token 的 KV 槽位（每个 token 一个槽位 id）；
    ``children`` 把每个子节点那条边的第一个 token（或第一页）映射到这个子节点。

    不变量（由 ``RadixCache.check_invariants`` 检查）：
    - 根节点的 ``key``/``value`` 为空、没有父节点，且 ``lock_ref == 0``；
    - 其他节点都满足 ``len(key) == len(value) > 0``，长度是缓存页大小的整数倍，并且
      ``parent.children[child_key(key)] is self``；被淘汰掉的节点 ``parent`` 为 ``None``；
    - ``lock_ref >= 0``，且一个节点的 ``lock_ref`` 不小于它所有子节点的 ``lock_ref`` 之和（锁住一个节点，
      就锁住了它到根的整条路径）；
    - 父节点的 ``last_access`` 不早于任何子节点的（访问一个节点就访问了它的整条路径）。
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
    order, and the node where that prefix ends (the root when nothing matched).

    [zh]
    ``RadixCache.match_prefix`` 找到的结果：最长已缓存前缀的 KV 槽位（按 token 顺序），以及这个前缀结束的
    节点（什么都没匹配上时是根节点）。
    """

    slots: list[int]
    last_node: TreeNode

    @property
    def length(self) -> int:
        """Number of prompt tokens whose KV is cached.

        [zh]
        KV 已缓存的提示词 token 个数。
        """
        return len(self.slots)
