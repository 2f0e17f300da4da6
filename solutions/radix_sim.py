"""Given code of stage 5 (not a TODO): serve requests through a radix cache, as a scheduler does.

Kept apart from the stage's reference module, like ``radix_node``, so that a classroom release (which
ships given modules but not the stage's reference) can import it; it works with any cache that has
``RadixCache``'s methods. Used by the stage-5 notebook and ``benchmarks/bench_radix.py``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from autograder.i18n import tr


class RadixServer:
    """A radix cache and the KV slots it shares, driven one request at a time.

    Per request: match the prompt without its last token (prefill must compute at least one token,
    to produce its logits), lock the matched path, evict **only what this request lacks** when the
    free slots run short (or at least ``batch`` tokens per call, if ``batch`` > 0), take slots for the
    rest, insert the prompt, give back the slots the tree did not keep, unlock.

    Invariant (checked by :meth:`check`): tokens in the tree + free slots == ``capacity``.
    """

    def __init__(self, cache: Any, capacity: int, *, batch: int = 0) -> None:
        if capacity <= 0 or batch < 0:
            raise ValueError(tr("capacity must be positive and batch non-negative", "capacity 必须是正数，batch 不能为负"))
        self.cache, self.capacity, self.batch = cache, capacity, batch
        self.free = list(range(capacity))  # a stack of free slot ids
        self.requests = self.hit_tokens = self.evicted_tokens = self.evict_calls = 0

    def serve(self, requests: Iterable[Sequence[int]]) -> None:
        cache, free, page = self.cache, self.free, self.cache.page_size
        for tokens in requests:
            match = cache.match_prefix(tokens[:-1])
            cache.inc_lock_ref(match.last_node)
            need = len(tokens) - match.length
            if need > len(free):
                freed = cache.evict(max(need - len(free), self.batch))
                self.evict_calls += 1
                self.evicted_tokens += len(freed)
                free.extend(freed)
                if need > len(free):
                    cache.dec_lock_ref(match.last_node)
                    raise RuntimeError(tr(f"a request needs {need} slots; only {len(free)} can be freed",
                                          f"一个请求需要 {need} 个槽位，最多只能腾出 {len(free)} 个"))
            new_slots = free[len(free) - need:]
            del free[len(free) - need:]
            already = cache.insert(tokens, match.slots + new_slots)
            # Slots the tree did not keep go back: ours for tokens that were already cached
            # (positions hit .. already), and those of the partial last page (never cached).
            hit = match.length
            kept_end = len(tokens) - len(tokens) % page
            free.extend(new_slots[: already - hit])
            free.extend(new_slots[kept_end - hit:])
            cache.dec_lock_ref(match.last_node)
            self.hit_tokens += hit
            self.requests += 1

    def fill(self, stream: Iterable[Sequence[int]]) -> int:
        """Serve requests from ``stream`` until one has to evict (the cache is full from then on);
        return how many were served."""
        start = self.requests
        for tokens in stream:
            self.serve([tokens])
            if self.evict_calls:
                return self.requests - start
        raise ValueError(tr("the stream ended before the cache filled up", "缓存还没填满，请求流就结束了"))

    def check(self) -> None:
        """The cache's own invariants, and no slot lost or duplicated."""
        self.cache.check_invariants()
        if self.cache.total_size + len(self.free) != self.capacity:
            raise AssertionError(tr("slots leaked: tree + free list != capacity", "槽位泄漏：树中槽位 + 空闲列表 != 容量"))
