"""Trace-driven cache simulation (given code, not a TODO): replay, hit rates, the Belady bound.

:func:`simulate` replays a trace (:mod:`workbook.traces`) one request at a time -- admit, commit,
release -- through a real block pool: any class with stage 4's ``EvictionPool`` interface
(``pin``, ``num_pinned``, ``min_residence`` and ``clock`` keywords), passed as ``pool_cls`` so the
notebook can replay through the learner's own pool. :func:`belady` is the offline optimum that
bounds every online policy.

Pre-hashed traces (Mooncake's chained ``hash_ids``) go through :func:`prehashed`, a subclass of
the pool whose "tokens" are block ids: one id = one full block, its key the id itself. No hashing,
so replaying all 288,500 block accesses of the Mooncake conversation trace takes about a second.
"""
from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from autograder.i18n import tr
from workbook.block_pool import PoolFullError
from workbook.contract import ResultError
from workbook.traces import TraceRequest, request_tokens

__all__ = ["Policy", "LRU", "SimResult", "prehashed", "simulate", "belady"]

_PREHASHED: dict[type, type] = {}


def _id_key(block_id: int) -> bytes:
    """The key of a pre-hashed block: its id, 8 bytes little-endian."""
    return block_id.to_bytes(8, "little")


def prehashed(pool_cls: type) -> type:
    """A subclass of ``pool_cls`` (block size 1) whose ``admit`` takes chained block ids.

    ``admit(rid, block_ids)`` treats each id as one full block keyed by the id itself (8 bytes,
    little-endian), so a trace replays through the real pool. As in stage 3, at least one block
    per request is computed: a prompt whose ids are all cached hits all but its last block.

    [zh]
    ``pool_cls`` 的子类（块大小为 1），它的 ``admit`` 接收链式块 id。

    ``admit(rid, block_ids)`` 把每个 id 当作一个满块，以 id 本身（8 字节，小端）作为 key，这样 trace 就能在
    真实的块池上回放。和第 3 阶段一样，每个请求至少要计算一个块：id 全部已缓存的提示词，除最后一块外都命中。
    """
    cls = _PREHASHED.get(pool_cls)
    if cls is None:
        def __init__(self, num_blocks: int, **kwargs) -> None:
            pool_cls.__init__(self, num_blocks, 1, **kwargs)

        def keys_of(self, tokens, extra_keys=None) -> list[bytes]:
            if extra_keys:
                raise ValueError(tr("pre-hashed ids carry no extra keys", "预先哈希好的 id 不带附加 key"))
            return list(map(_id_key, tokens))

        cls = _PREHASHED[pool_cls] = type(f"Prehashed{pool_cls.__name__}", (pool_cls,),
                                          {"__init__": __init__, "keys_of": keys_of,
                                           "__doc__": prehashed.__doc__})
    return cls


@dataclass(frozen=True)
class Policy:
    """How the simulated pool protects blocks.

    ``max_pinned > 0`` turns pinning on: a cached block is pinned (prefix first) once requests
    have used it ``pin_after_uses`` times, until ``max_pinned`` blocks are pinned -- an online
    "pin the most used prefixes". Uses, not hits, are counted: under thrashing a popular prefix
    is evicted before every reuse and never hits, yet it is exactly the one worth pinning.
    ``min_residence > 0`` (seconds of trace time) turns the minimum residence time on.

    [zh]
    模拟块池怎样保护块。

    ``max_pinned > 0`` 打开固定：一个已缓存的块被请求用过 ``pin_after_uses`` 次之后就被固定（先固定前缀），
    直到固定的块达到 ``max_pinned`` 个为止——也就是在线版的“固定用得最多的前缀”。数的是使用次数，不是命中
    次数：在抖动时，热门前缀每次被复用之前都已被淘汰，一次也命中不了，而它恰恰最值得固定。
    ``min_residence > 0``（trace 时间，单位秒）打开最短驻留时间。
    """

    name: str = "LRU"
    max_pinned: int = 0
    pin_after_uses: int = 2
    min_residence: float = 0.0


LRU = Policy()


@dataclass
class SimResult:
    """Counters of one replay.

    ``block_hit_rate`` = hit blocks / blocks; ``token_hit_rate`` = hit tokens / tokens (the last
    block of a Mooncake prompt is partial, so tokens weigh blocks unevenly); ``prefix_hit_rate``
    = fraction of requests that reused at least one cached block. ``rejected`` requests did not
    fit (``PoolFullError``: too long for the pool, or everything held by pins/residence); they
    count as all-miss and leave the pool unchanged.

    [zh]
    一次回放的计数。

    ``block_hit_rate`` = 命中的块数 / 块数；``token_hit_rate`` = 命中的 token 数 / token 数（Mooncake 提示词的
    最后一块不满，所以按 token 算时各块的权重不同）；``prefix_hit_rate`` = 至少复用了一个已缓存块的请求所占的
    比例。``rejected`` 是装不下的请求（``PoolFullError``：对块池来说太长，或者全部块都被固定或驻留持有）；
    它们按全部未命中计，块池保持不变。
    """

    policy: str
    num_blocks: int
    requests: int = 0
    rejected: int = 0
    requests_with_hit: int = 0
    blocks: int = 0
    hit_blocks: int = 0
    tokens: int = 0
    hit_tokens: int = 0

    @property
    def block_hit_rate(self) -> float:
        return self.hit_blocks / self.blocks if self.blocks else 0.0

    @property
    def token_hit_rate(self) -> float:
        return self.hit_tokens / self.tokens if self.tokens else 0.0

    @property
    def prefix_hit_rate(self) -> float:
        return self.requests_with_hit / self.requests if self.requests else 0.0

    def add(self, req: TraceRequest, hit_blocks: int, rejected: bool = False) -> None:
        self.requests += 1
        self.rejected += rejected
        self.blocks += len(req.keys)
        self.tokens += req.num_tokens
        if hit_blocks:
            self.requests_with_hit += 1
            self.hit_blocks += hit_blocks
            # hits are leading blocks; all but the last block of a prompt are full, so the first
            # hit_blocks of them hold min(hit_blocks * block_size, num_tokens) tokens (a count past the
            # prompt's blocks, which no pool should report, is summed block by block as it always was)
            if hit_blocks <= len(req.keys):
                self.hit_tokens += min(hit_blocks * req.block_size, req.num_tokens)
            else:
                self.hit_tokens += sum(req.block_tokens(i) for i in range(hit_blocks))

    def summary(self) -> dict[str, float | int | str]:
        return {
            "policy": self.policy,
            "num_blocks": self.num_blocks,
            "requests": self.requests,
            "rejected": self.rejected,
            "block_hit_rate": round(self.block_hit_rate, 4),
            "token_hit_rate": round(self.token_hit_rate, 4),
            "prefix_hit_rate": round(self.prefix_hit_rate, 4),
        }


def simulate(
    trace: Sequence[TraceRequest],
    num_blocks: int,
    policy: Policy = LRU,
    *,
    pool_cls: type,
    mode: str = "keys",
) -> SimResult:
    """Replay ``trace`` one request at a time (admit, commit, release) through a ``pool_cls`` pool.

    ``mode="keys"`` replays the chained block ids through :func:`prehashed` ``(pool_cls)`` (fast: no
    hashing); ``mode="tokens"`` turns each request into tokens (:func:`~workbook.traces.request_tokens`)
    and replays them through ``pool_cls`` itself with stage 2's real hashing (slow; for
    cross-checks on small traces). The pool's clock is the trace's timestamps.

    [zh]
    在 ``pool_cls`` 块池上逐个请求回放 ``trace``（admit、commit、release）。

    ``mode="keys"`` 通过 :func:`prehashed` ``(pool_cls)`` 回放链式块 id（快：不算哈希）；``mode="tokens"``
    把每个请求变成 token（:func:`~workbook.traces.request_tokens`），用第 2 阶段真实的哈希在 ``pool_cls``
    本身上回放（慢；用于在小 trace 上交叉核对）。块池的时钟就是 trace 的时间戳。
    """
    if mode not in ("keys", "tokens"):
        raise ValueError(tr(f"mode must be 'keys' or 'tokens', got {mode!r}",
                            f"mode 只能是 'keys' 或 'tokens'，实际是 {mode!r}"))
    now = [0.0]
    kwargs = dict(max_pinned=policy.max_pinned, min_residence=policy.min_residence,
                  clock=lambda: now[0])
    if mode == "keys":
        pool = prehashed(pool_cls)(num_blocks, **kwargs)
    else:
        sizes = {r.block_size for r in trace}
        if len(sizes) > 1:
            raise ValueError(tr("token mode needs one block size for the whole trace", "token 模式要求整个 trace 使用同一个块大小"))
        pool = pool_cls(num_blocks, sizes.pop() if sizes else 1, **kwargs)
    pinning = policy.max_pinned > 0
    use_counts: Counter[bytes] = Counter()
    result = SimResult(policy.name, num_blocks)
    for i, req in enumerate(trace):
        now[0] = req.timestamp
        rid = f"r{i}"
        tokens = req.keys if mode == "keys" else request_tokens(req)
        try:
            adm = pool.admit(rid, tokens)
        except PoolFullError:
            if not policy.max_pinned and not policy.min_residence and len(tokens) <= num_blocks:
                _check_queue_length(pool)  # nothing is held between requests: every block was free
            result.add(req, 0, rejected=True)
            continue
        state = pool.requests[rid]
        _check_table(state.blocks)
        pool.commit(rid)
        if pinning and pool.num_pinned < policy.max_pinned:
            for j, key in enumerate(state.keys):  # prefix first: pins stay prefix-closed
                use_counts[key] += 1
                block = state.blocks[j]
                if block.key != key:
                    break  # a duplicate that could not register: nothing cached to pin
                if use_counts[key] >= policy.pin_after_uses:
                    pinned = pool.pin(block)
                    _check_pin(pool, block, pinned, policy.max_pinned)
                    if not pinned:
                        break
        before = [block.ref_count for block in state.blocks]
        pool.release(rid)
        _check_released(pool, state.blocks, before)
        result.add(req, adm.hit_blocks)
    return result


# -- what the replay reads from the learner's pool, checked before it is counted ---------------------
# zh: -- 回放从学习者的块池里读到的东西，先检查再计数 ------------------------------------------------------
def _check_table(blocks: Sequence) -> None:
    """A block table holds real blocks only: a sentinel (id -1) there came out of ``popleft``."""
    for block in blocks:
        if block.block_id < 0:
            raise ResultError("s04.popleft", "a sentinel (block -1) as the next block to reuse: step over mid, "
                              "and never hand out head, mid or tail",
                              "一个哨兵块（编号 -1）作为下一个要复用的块：要跨过 mid，head、mid、tail 都绝不能交出去")


def _check_pin(pool, block, pinned: object, max_pinned: int) -> None:
    """``pin`` answers True or False; a pinned block is out of the free queue, and the cap holds."""
    if type(pinned) is not bool:
        raise ResultError("s04.pin", f"{pinned!r:.40} instead of True or False", f"{pinned!r:.40}，而不是 True 或 False")
    if pool.num_pinned > max_pinned:
        raise ResultError("s04.pin", f"True with {pool.num_pinned} blocks pinned, over max_pinned = {max_pinned}",
                          f"True，这时已固定 {pool.num_pinned} 个块，超过了 max_pinned = {max_pinned}")
    if pinned and (block.ref_count < 1 or block in pool.free_queue):
        raise ResultError("s04.pin", f"True for block {block.block_id}, which is still evictable (ref_count "
                          f"{block.ref_count}, in the free queue: {block in pool.free_queue})",
                          f"True，可块 {block.block_id} 仍然可能被淘汰（ref_count {block.ref_count}，"
                          f"在空闲队列里：{block in pool.free_queue}）")


def _check_released(pool, blocks: Sequence, before: Sequence[int]) -> None:
    """After a release, each block of the request holds one reference less, and a block nobody
    references waits in the free queue."""
    for block, count in zip(blocks, before, strict=False):  # a release may empty the learner's own list
        if block.ref_count != count - 1:
            raise ResultError("s04.release_blocks", f"block {block.block_id} with ref_count {block.ref_count} after "
                              f"releasing a request that held it at {count}: each block loses exactly one reference",
                              f"块 {block.block_id} 在释放一个持有它的请求之后 ref_count 为 {block.ref_count}，释放前是 "
                              f"{count}：每个块恰好少一个引用")
        if (block.ref_count == 0) != (block in pool.free_queue):
            raise ResultError("s04.release_blocks", f"block {block.block_id} with ref_count {block.ref_count}, "
                              f"in the free queue: {block in pool.free_queue} (a block is free exactly when "
                              "nobody references it)",
                              f"块 {block.block_id} 的 ref_count 是 {block.ref_count}，在空闲队列里：{block in pool.free_queue}"
                              "（一个块恰好在没人引用时才是空闲的）")


def _check_queue_length(pool) -> None:
    """A request that fits an idle pool was refused: compare ``len(free_queue)`` with the blocks in it."""
    queue = pool.free_queue
    linked = sum(1 for _ in iter(queue))
    if linked > len(queue):
        raise ResultError("s04.append", f"a free queue whose len() is {len(queue)} while {linked} blocks are linked "
                          "in it: count each block you link", f"一个 len() 为 {len(queue)} 的空闲队列，可里面链着 "
                          f"{linked} 个块：每链入一个块都要计数")
    if linked < len(queue):
        raise ResultError("s04.popleft", f"a free queue whose len() is {len(queue)} while only {linked} blocks are "
                          "linked in it: popleft and remove must each count out the block they unlink",
                          f"一个 len() 为 {len(queue)} 的空闲队列，可里面只链着 {linked} 个块："
                          "popleft 和 remove 摘下一个块都要减一")


def belady(trace: Sequence[TraceRequest], num_blocks: int) -> SimResult:
    """Offline optimum (Belady's MIN with bypass) over the trace's block accesses, in order.

    Keeps at most ``num_blocks`` keys; on a miss, if the cache is full, it evicts the cached key
    whose next use is farthest in the future -- or does not cache the new key at all if that one
    is needed even later. No online policy with ``num_blocks`` blocks gets more block hits. It
    is a bound, not a schedule: it may drop a block of the request it is serving and it counts a
    fully cached prompt's last block as a hit, both of which a real pool cannot do. Because a
    prefix is always needed no later than its extensions, it never keeps a block without its
    prefix, so all its hits are prefix hits.

    [zh]
    离线最优（带绕过的 Belady MIN），按顺序处理 trace 的块访问。

    最多保留 ``num_blocks`` 个 key；未命中时如果缓存已满，就淘汰下一次使用离现在最远的那个 key——如果新 key
    要到更晚才会再用，就干脆不缓存它。任何只有 ``num_blocks`` 个块的在线策略，块命中数都不会比它多。它是一个
    上界，不是一种调度：它可能丢掉正在服务的请求的块，还会把完全缓存的提示词的最后一块算作命中，这两件事真实的
    块池都做不到。因为一个前缀总是不晚于它的延伸被用到，它从不会保留一个块而丢掉它的前缀，所以它的命中都是前缀
    命中。
    """
    if num_blocks <= 0:
        raise ValueError(tr("num_blocks must be positive", "num_blocks 必须是正数"))
    flat = [k for r in trace for k in r.keys]
    never = len(flat)
    next_use = [never] * len(flat)
    last_seen: dict[int, int] = {}
    for p in range(len(flat) - 1, -1, -1):
        next_use[p] = last_seen.get(flat[p], never)
        last_seen[flat[p]] = p
    cache: dict[int, int] = {}  # key -> position of its next use
    heap: list[tuple[int, int]] = []  # (-next use, key); stale entries are skipped lazily
    result = SimResult("Belady", num_blocks)
    p = 0
    for req in trace:
        hits = 0
        for k in req.keys:
            nu = next_use[p]
            p += 1
            if k in cache:
                hits += 1
            elif len(cache) >= num_blocks:
                while cache.get(heap[0][1]) != -heap[0][0]:
                    heapq.heappop(heap)
                if -heap[0][0] <= nu:
                    continue  # bypass: the new key is needed last (or never)
                del cache[heapq.heappop(heap)[1]]
            if nu == never:
                cache.pop(k, None)  # never needed again: keeping it cannot help
                continue
            cache[k] = nu
            heapq.heappush(heap, (-nu, k))
        result.add(req, hits)
    return result
