"""Given code of stage 5 (not a TODO): serve requests through a radix cache, as a scheduler does.

Kept apart from the stage's reference module, like ``radix_node``, so that a classroom release (which
ships given modules but not the stage's reference) can import it; it works with any cache that has
``RadixCache``'s methods. Used by the stage-5 notebook and ``benchmarks/bench_radix.py``.
:class:`CountingEviction` counts the leaves an ``evict`` must look at, so that the notebook's answer
about eviction cost rests on a count, the same on every machine, and not on a timing.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from autograder.i18n import tr
from workbook.contract import ResultError


class CountingEviction:
    """Mix in before a radix cache class (``class C(CountingEviction, SomeRadixCache)``) to count what
    an ``evict`` that keeps nothing between calls has to look at: on each call, every unlocked leaf,
    because the least recently used one may be any of them. (``IncrementalEviction`` keeps its
    candidates between calls and looks at far fewer; mixed in before it, this counts what a scan would
    have looked at in the same tree.)

    Invariants: ``examined`` is the sum, over this cache's ``evict`` calls so far, of the unlocked
    leaves in the tree when the call began; counting changes nothing in the tree, so the cache evicts
    exactly what it would without it. The count depends only on the operations, never on the machine.

    [zh]
    混入到基数树缓存类的前面（``class C(CountingEviction, SomeRadixCache)``），统计一个在两次调用之间什么都
    不保留的 ``evict`` 必须查看的东西：每次调用都要看一遍所有未加锁的叶子，因为最近最少使用的那个可能是其中
    任何一个。（``IncrementalEviction`` 在两次调用之间保留候选者，要看的少得多；把本类混入在它前面，统计的就是
    同一棵树上扫描版本本来要看的叶子数。）

    不变量：``examined`` 等于到目前为止本缓存每次 ``evict`` 调用开始时树中未加锁叶子数之和；计数不改动树，
    所以缓存淘汰的东西和不计数时完全一样。这个数只取决于操作序列，与机器无关。
    """

    examined = 0

    def evict(self, num_tokens: int) -> list[int]:
        # Counted before the call: what a scan starts from. The given ``_leaves`` walk, not the
        # learner's evict, does the counting, so a slow or clever evict cannot change the count.
        # zh: 在调用之前计数（扫描版本的起点）；计数用的是已给出的 ``_leaves``，而不是学习者的 evict，所以 evict 写成什么样都改变不了这个数。
        self.examined += sum(1 for leaf in self._leaves() if leaf.lock_ref == 0)  # type: ignore[attr-defined]
        return super().evict(num_tokens)  # type: ignore[misc]


class RadixServer:
    """A radix cache and the KV slots it shares, driven one request at a time.

    Per request: match the prompt without its last token (prefill must compute at least one token,
    to produce its logits), lock the matched path, evict **only what this request lacks** when the
    free slots run short (or at least ``batch`` tokens per call, if ``batch`` > 0), take slots for the
    rest, insert the prompt, give back the slots the tree did not keep, unlock.

    Invariant (checked by :meth:`check`): tokens in the tree + free slots == ``capacity``.

    What the cache returns is checked before it is used (a match's and an eviction's slots, the
    count ``insert`` returns), so that a wrong answer stops with a :class:`~workbook.contract.ResultError` naming its
    TODO instead of corrupting the free list (and ``fill`` is bounded by ``capacity`` requests).

    [zh]
    一个基数树缓存和它共享的 KV 槽位，一次驱动一个请求。

    对每个请求：匹配去掉最后一个 token 的提示词（prefill 至少要计算一个 token，才能得到 logits），锁住匹配到
    的路径；空闲槽位不够时**只淘汰这个请求还缺的部分**（``batch`` > 0 时每次至少淘汰 ``batch`` 个 token），为
    其余 token 取槽位，插入提示词，归还树没有保留的槽位，然后解锁。

    不变量（由 :meth:`check` 检查）：树中的 token 数 + 空闲槽位数 == ``capacity``。

    缓存返回的东西在使用之前都会先检查（匹配和淘汰给出的槽位、``insert`` 返回的个数），这样错误的答案会以一个
    指明 TODO 的 :class:`~workbook.contract.ResultError` 停下，而不是弄乱空闲列表（``fill`` 最多服务
    ``capacity`` 个请求）。
    """

    def __init__(self, cache: Any, capacity: int, *, batch: int = 0) -> None:
        if capacity <= 0 or batch < 0:
            raise ValueError(tr("capacity must be positive and batch non-negative", "capacity 必须是正数，batch 不能为负"))
        self.cache, self.capacity, self.batch = cache, capacity, batch
        self.free = list(range(capacity))  # a stack of free slot ids
        self._free_set = set(self.free)     # the same, to check a learner's slots in O(1) each
        self.requests = self.hit_tokens = self.evicted_tokens = self.evict_calls = 0

    def serve(self, requests: Iterable[Sequence[int]]) -> None:
        cache, free, page = self.cache, self.free, self.cache.page_size
        for tokens in requests:
            match = cache.match_prefix(tokens[:-1])
            self._check_match(match, len(tokens) - 1)
            cache.inc_lock_ref(match.last_node)
            need = len(tokens) - match.length
            if need > len(free):
                asked = max(need - len(free), self.batch)
                freed = cache.evict(asked)
                self._check_freed(freed)
                self.evict_calls += 1
                self.evicted_tokens += len(freed)
                free.extend(freed)
                self._free_set.update(freed)
                if need > len(free):
                    cache.dec_lock_ref(match.last_node)
                    raise ResultError("s05.evict",
                        f"{len(freed)} slots when asked for {asked}, with only this request's path locked",
                        f"{len(freed)} 个槽位，而要求的是 {asked} 个（此时只有这个请求的路径被锁住）")
            new_slots = free[len(free) - need:]
            del free[len(free) - need:]
            self._free_set.difference_update(new_slots)
            already = cache.insert(tokens, match.slots + new_slots)
            hit = match.length
            # What was cached before this insert is what the match found (the request's path is
            # locked, nothing was evicted since), or the whole prompt when only its last page was
            # left out of the match (the match skips the last token).
            whole = len(tokens) % page == 0 and hit == len(tokens) - page
            if isinstance(already, bool) or not isinstance(already, int) or not (
                    already == hit or (whole and already == len(tokens))):
                raise ResultError("s05.insert",
                    f"{already!r} for a prompt of {len(tokens)} tokens of which the first {hit} were cached "
                    f"(it returns how many tokens were cached before it ran)",
                    f"{already!r}，而这个 {len(tokens)} 个 token 的提示词里原本只缓存了前 {hit} 个"
                    f"（它应返回插入之前已缓存的 token 数）")
            # Slots the tree did not keep go back: ours for tokens that were already cached
            # (positions hit .. already), and those of the partial last page (never cached).
            kept_end = len(tokens) - len(tokens) % page
            back = new_slots[: already - hit] + new_slots[kept_end - hit:]
            free.extend(back)
            self._free_set.update(back)
            cache.dec_lock_ref(match.last_node)
            self.hit_tokens += hit
            self.requests += 1

    # -- what a learner's cache returned, checked before it is used ------------------------------------
    def _check_match(self, match: Any, longest: int) -> None:
        slots = getattr(match, "slots", None)
        if not isinstance(slots, list) or len(slots) > longest or not all(
                isinstance(s, int) and 0 <= s < self.capacity for s in slots):
            raise ResultError("s05.match_prefix",
                f"a match whose slots are not a list of at most {longest} slot ids of this cache",
                f"一个匹配结果，但它的 slots 不是由本缓存的槽位 id 组成、且最多 {longest} 个的列表")
        if len(set(slots)) != len(slots) or not self._free_set.isdisjoint(slots):
            raise ResultError("s05.match_prefix",
                "slots that are free or repeated: a match returns the slots the tree holds, once each",
                "空闲的或重复的槽位：匹配返回的应当是树中持有的槽位，每个只出现一次")

    def _check_freed(self, freed: Any) -> None:
        in_tree = self.capacity - len(self.free)
        if not isinstance(freed, list) or len(freed) > in_tree or not all(
                isinstance(s, int) and 0 <= s < self.capacity for s in freed):
            raise ResultError("s05.evict",
                f"something other than a list of at most {in_tree} slot ids (the slots the tree holds)",
                f"不是一个最多含 {in_tree} 个槽位 id 的列表（树里一共只持有这么多槽位）")
        if len(set(freed)) != len(freed) or not self._free_set.isdisjoint(freed):
            raise ResultError("s05.evict",
                "slots that were free already, or the same slot twice",
                "本来就空闲的槽位，或者同一个槽位两次")

    def fill(self, stream: Iterable[Sequence[int]]) -> int:
        """Serve requests from ``stream`` until one has to evict (the cache is full from then on);
        return how many were served.

        [zh]
        从 ``stream`` 取请求来服务，直到有一个请求必须淘汰为止（从那以后缓存就是满的）；返回服务了多少个请求。
        """
        start = self.requests
        # Every request takes at least one slot, so a cache that keeps what it is given fills up
        # within ``capacity`` requests: a bound, not a loop that may never end.
        for tokens in itertools.islice(stream, self.capacity + 1):
            self.serve([tokens])
            if self.evict_calls:
                return self.requests - start
        if self.requests - start > self.capacity:
            raise ResultError("s05.insert",
                f"slots back to the server for tokens it kept: {self.capacity + 1} requests never filled "
                f"{self.capacity} slots",
                f"把树里留着的 token 的槽位也交还给了服务：{self.capacity + 1} 个请求都没能填满 {self.capacity} 个槽位")
        raise ValueError(tr("the stream ended before the cache filled up", "缓存还没填满，请求流就结束了"))

    def check(self) -> None:
        """The cache's own invariants, and no slot lost or duplicated.

        [zh]
        缓存自身的不变量，以及没有槽位丢失或重复。
        """
        self.cache.check_invariants()
        if self.cache.total_size + len(self.free) != self.capacity:
            raise AssertionError(tr("slots leaked: tree + free list != capacity", "槽位泄漏：树中槽位 + 空闲列表 != 容量"))
