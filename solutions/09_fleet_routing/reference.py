"""Stage 9 reference: routing requests across replicas by the prefix each holds, with a KV tier behind.

1. :meth:`KVIndex.apply` -- fold one replica's KV event into a global index, block id -> {replica: tier};
   events may come late, twice or out of order, and a stale one never undoes a newer one.
2. :func:`overlap_scores` -- per replica, the leading blocks of a request it holds on its GPU and how
   many more its host tier adds right after them (the chain means the first miss ends the match).
3. :func:`choose_replica` -- the replica with the lowest predicted TTFT: queue wait + prefill of what it
   does not hold + transfer of what its host tier holds; ties: the lower id.
4. :func:`fetch_or_recompute` -- fetch the host-tier blocks only when the transfer beats recomputing them.

Given code after the TODOs turns them into routers for :func:`workbook.fleet.simulate`:
:class:`PrefixRouter` (the index fed by events, the learner's router), :class:`Affinity` (largest
overlap, blind to queues) and :class:`ApproximateRouter` (the router's own bounded record of what it
sent where, no events), and :func:`decision` renders a run's verdict as a paragraph.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from autograder.i18n import tr
from workbook.contract import ResultError
from workbook.fleet import GPU, HOST, STORED, CostModel, FleetRun, FleetView, KVEvent, Request


class KVIndex:
    """A global index of the fleet's caches, built from the replicas' KV events.

    Invariants: ``holders(b)`` maps each replica that holds block ``b`` to its tier (``"gpu"`` or
    ``"host"``), by the newest event applied for ``(b, replica)``; for each such pair the index
    remembers the largest ``seq`` applied (removals included), and an event with a ``seq`` not larger
    than that changes nothing; a block no replica holds has no entry (``len`` counts blocks held).
    Routing reads one dict per request block, so its cost does not grow with the fleet's cache.

    [zh]
    由各副本的 KV 事件构建的全局索引。``holders(b)`` 给出持有块 ``b`` 的每个副本及其所在层；对每个
    （块, 副本）对，索引记住已应用事件中最大的 ``seq``（删除事件也算），``seq`` 不大于它的事件不改变任何东西；
    没有任何副本持有的块不占条目。
    """

    def __init__(self) -> None:
        self._holders: dict[int, dict[int, str]] = {}
        self._last_seq: dict[tuple[int, int], int] = {}

    def holders(self, block: int) -> dict[int, str]:
        """Replica -> tier for every replica that holds ``block`` (a copy; empty when none does).

        [zh]
        持有 ``block`` 的每个副本 -> 所在层（副本的拷贝；没有副本持有时为空）。
        """
        return dict(self._holders.get(block, {}))

    def __len__(self) -> int:
        return len(self._holders)

    def apply(self, event: KVEvent) -> bool:
        """Fold ``event`` into the index; ``True`` when it was applied (its ``seq`` was newer than every
        event applied so far for its block and replica), ``False`` when it was stale.

        [zh]
        把 ``event`` 合入索引；若它比该（块, 副本）已应用的所有事件都新，返回 ``True``，过时的事件返回 ``False``。
        """
        # TODO 1 (s09.apply)
        ### BEGIN SOLUTION
        key = (event.block, event.replica)
        if event.seq <= self._last_seq.get(key, -1):
            return False
        self._last_seq[key] = event.seq
        if event.kind == STORED:
            self._holders.setdefault(event.block, {})[event.replica] = event.tier
        else:
            held = self._holders.get(event.block)
            if held is not None:
                held.pop(event.replica, None)
                if not held:
                    del self._holders[event.block]
        return True
        ### END SOLUTION


def overlap_scores(index: KVIndex, blocks: Sequence[int], replicas: int) -> list[tuple[int, int]]:
    """For each replica ``0 .. replicas - 1``: ``(gpu, host)`` where ``gpu`` is how many leading blocks
    of ``blocks`` it holds on its GPU, and ``host`` how many blocks right after those it holds in its
    host tier (both runs end at the first block it does not hold in that tier).

    [zh]
    对每个副本 ``0 .. replicas - 1`` 给出 ``(gpu, host)``：``gpu`` 是它在 GPU 上持有 ``blocks`` 开头连续多少个块，
    ``host`` 是紧接其后它在主机内存层又持有连续多少个块（两段都在第一个不在该层的块处结束）。
    """
    # TODO 2 (s09.overlap_scores)
    ### BEGIN SOLUTION
    scores = [[0, 0] for _ in range(replicas)]
    # replicas still matching, and the tier they match in
    # zh: 仍在匹配的副本，以及它们正在匹配的层
    live = {r: GPU for r in range(replicas)}
    for block in blocks:
        if not live:
            break
        held = index.holders(block)
        for r, tier in list(live.items()):
            here = held.get(r)
            if here == tier:
                scores[r][0 if tier == GPU else 1] += 1
            elif tier == GPU and here == HOST:
                live[r] = HOST
                scores[r][1] += 1
            else:
                del live[r]
    return [(g, h) for g, h in scores]
    ### END SOLUTION


def choose_replica(scores: Sequence[tuple[int, int]], queue_ms: Sequence[float], request: Request,
                   cost: CostModel) -> int:
    """The replica with the lowest predicted TTFT for ``request``: its queue wait ``queue_ms[r]``, plus
    ``cost.prefill_ms`` of the tokens it must compute after the tokens its ``gpu + host`` leading
    blocks give (``cost.cached_tokens``), plus ``cost.transfer_ms`` of its ``host`` blocks. Ties go to
    the lower replica id.

    [zh]
    为 ``request`` 选预测 TTFT 最低的副本：排队等待 ``queue_ms[r]``，加上在 ``gpu + host`` 个开头块提供的
    token（``cost.cached_tokens``）之后还要计算的 token 的 ``cost.prefill_ms``，再加上 ``host`` 个块的
    ``cost.transfer_ms``。并列时选编号小的。
    """
    # TODO 3 (s09.choose_replica)
    ### BEGIN SOLUTION
    def predicted(r: int) -> tuple[float, int]:
        gpu, host = scores[r]
        cached = cost.cached_tokens(request, gpu + host)
        ttft = queue_ms[r] + cost.prefill_ms(request.input_tokens - cached, cached) + cost.transfer_ms(host)
        return ttft, r

    return min(range(len(scores)), key=predicted)
    ### END SOLUTION


def fetch_or_recompute(request: Request, gpu_hit: int, host_hit: int, cost: CostModel) -> bool:
    """Whether to fetch the ``host_hit`` blocks found in the host tier (after ``gpu_hit`` GPU blocks):
    ``True`` only when their transfer plus the prefill that is left is strictly faster than
    recomputing them with the rest of the prompt.

    [zh]
    是否取回主机内存层里命中的 ``host_hit`` 个块（排在 ``gpu_hit`` 个 GPU 块之后）：只有当“传输时间 + 剩下的
    prefill”严格快于“连同提示词其余部分一起重算它们”时才返回 ``True``。
    """
    # TODO 4 (s09.fetch_or_recompute)
    ### BEGIN SOLUTION
    if host_hit == 0:
        return False
    without = cost.cached_tokens(request, gpu_hit)
    with_tier = cost.cached_tokens(request, gpu_hit + host_hit)
    recompute = cost.prefill_ms(request.input_tokens - without, without)
    fetch = cost.transfer_ms(host_hit) + cost.prefill_ms(request.input_tokens - with_tier, with_tier)
    return fetch < recompute
    ### END SOLUTION


# ------------------------------------------------------------------------------------------------
# Given code: routers built on the TODOs (used by the demos and by the router benchmark)
# zh: 给定代码：用这些 TODO 搭出的路由器（演示和路由基准测试都会用到）
# ------------------------------------------------------------------------------------------------
def _checked_scores(scores: object, request: Request, replicas: int) -> list[tuple[int, int]]:
    """The TODO 2 result, validated before a router trusts it.

    [zh]
    TODO 2 的结果，在路由器使用之前先做校验。
    """
    ok = isinstance(scores, list) and len(scores) == replicas and all(
        isinstance(s, tuple) and len(s) == 2 and all(type(x) is int and x >= 0 for x in s)
        and s[0] + s[1] <= len(request.blocks) for s in scores)
    if not ok:
        raise ResultError("s09.overlap_scores",
                          f"{str(scores)[:80]}, not one (gpu, host) pair of counts per replica",
                          f"{str(scores)[:80]}，不是每个副本一对 (gpu, host) 计数")
    return scores  # type: ignore[return-value]


def _checked_choice(choice: object, replicas: int) -> int:
    """The TODO 3 result, validated before the fleet serves on it.

    [zh]
    TODO 3 的结果，在集群按它服务之前先做校验。
    """
    if type(choice) is not int or not 0 <= choice < replicas:
        raise ResultError("s09.choose_replica", f"{choice!r}, not a replica id in 0..{replicas - 1}",
                          f"{choice!r}，不是 0..{replicas - 1} 中的副本编号")
    return choice


class PrefixRouter:
    """The precise router: a :class:`KVIndex` fed by the replicas' events, :func:`overlap_scores` and
    :func:`choose_replica`. Invariant: its index holds exactly the events delivered so far.

    [zh]
    精确路由器：由副本事件驱动的 :class:`KVIndex`，加上 :func:`overlap_scores` 和 :func:`choose_replica`。
    """

    name = "prefix-aware"

    def __init__(self) -> None:
        self.index = KVIndex()

    def observe(self, event: KVEvent) -> None:
        self.index.apply(event)

    def choose(self, request: Request, view: FleetView) -> int:
        scores = _checked_scores(overlap_scores(self.index, request.blocks, view.replicas), request, view.replicas)
        return _checked_choice(choose_replica(scores, view.queue_ms, request, view.cost), view.replicas)


class Affinity(PrefixRouter):
    """Pure affinity: the largest overlap (GPU + host blocks), blind to queues; ties: the shorter
    queue, then the lower id.

    [zh]
    纯亲和路由：选重叠（GPU + 主机内存层的块）最多的副本，不看排队；并列时选排队短的，再选编号小的。
    """

    name = "affinity"

    def choose(self, request: Request, view: FleetView) -> int:
        scores = _checked_scores(overlap_scores(self.index, request.blocks, view.replicas), request, view.replicas)
        return min(range(view.replicas), key=lambda r: (-(scores[r][0] + scores[r][1]), view.queue_ms[r], r))


class ApproximateRouter:
    """The approximate router: no events; per replica a bounded LRU record (``capacity`` blocks) of the
    blocks it routed there, read as if the replica held them on its GPU, then :func:`choose_replica`.
    Invariants: each record holds at most ``capacity`` blocks, the most recently routed ones;
    ``beliefs[i]`` is the overlap it believed the replica it chose for the ``i``-th request held.

    [zh]
    近似路由器：不看事件；为每个副本记一份有上限（``capacity`` 个块）的 LRU 记录，记下发往它的块，
    当作这些块都在它的 GPU 上，再用 :func:`choose_replica` 选择。
    """

    name = "approximate"

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(tr("capacity must be >= 1", "capacity 必须 >= 1"))
        self.capacity = capacity
        self.records: list[OrderedDict[int, None]] = []
        self.beliefs: list[int] = []

    def believed(self, blocks: Sequence[int], r: int) -> int:
        """Leading blocks the router believes replica ``r`` holds.

        [zh]
        路由器认为副本 ``r`` 持有的开头连续块数。
        """
        n = 0
        while n < len(blocks) and blocks[n] in self.records[r]:
            n += 1
        return n

    def choose(self, request: Request, view: FleetView) -> int:
        while len(self.records) < view.replicas:
            self.records.append(OrderedDict())
        scores = [(self.believed(request.blocks, r), 0) for r in range(view.replicas)]
        r = _checked_choice(choose_replica(scores, view.queue_ms, request, view.cost), view.replicas)
        self.beliefs.append(scores[r][0])
        record = self.records[r]
        # tail first, as the replicas do
        # zh: 和副本一样，从尾部开始
        for b in reversed(request.blocks):
            record[b] = None
            record.move_to_end(b)
        while len(record) > self.capacity:
            record.popitem(last=False)
        return r


def decision(runs: Sequence[FleetRun]) -> str:
    """A paragraph that states which router gave the lowest TTFT p90 at each fleet size, with its hit
    rate and balance next to the runner-up's, in the notebook's language: rendered from the runs, so it
    holds for them.

    [zh]
    一段结论：每种副本数下哪个路由器的 TTFT p90 最低，并给出它和第二名的命中率与负载均衡度；由运行结果生成。
    """
    parts = []
    for n in sorted({run.replicas for run in runs}):
        ranked = sorted((run for run in runs if run.replicas == n), key=lambda run: (run.ttft(90), run.policy))
        best = ranked[0]
        if len(ranked) == 1:
            continue
        second = ranked[1]
        parts.append(tr(
            f"At {n} replicas, {best.policy} gives the lowest TTFT p90 ({best.ttft(90):.0f} ms, hit rate "
            f"{best.hit_rate:.1%}, balance {best.balance:.2f}); next is {second.policy} ({second.ttft(90):.0f} ms, "
            f"hit rate {second.hit_rate:.1%}, balance {second.balance:.2f}).",
            f"{n} 个副本时，{best.policy} 的 TTFT p90 最低（{best.ttft(90):.0f} ms，命中率 {best.hit_rate:.1%}，"
            f"负载均衡度 {best.balance:.2f}）；其次是 {second.policy}（{second.ttft(90):.0f} ms，命中率 "
            f"{second.hit_rate:.1%}，负载均衡度 {second.balance:.2f}）。"))
    return " ".join(parts)


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 5 (s09.quiz)
    ### BEGIN SOLUTION
    return {"q1": "B", "q2": "C", "q3": "A", "q4": "B", "q5": 3}
    ### END SOLUTION
