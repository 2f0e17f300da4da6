"""Stage 9 spec and public checks: routing across replicas by the prefix each holds, and a KV tier.

What a learner reads of this stage (titles, contracts, hint tiers, check titles and hints, the quiz)
is in ``checks.toml`` beside this module, in English and Chinese; this module keeps the skeleton and the
probes. Every probe runs on simulated costs (:data:`workbook.fleet.FLEET_COST`), never on a clock, so
a result is the same on every machine.
"""
from __future__ import annotations

from autograder.checks.common import attempt, plain
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s09",
    minutes=75,
    todos=[
        Todo("s09.apply", 1, target="KVIndex.apply", points=3),
        Todo("s09.overlap_scores", 2, target="overlap_scores", points=2),
        Todo("s09.choose_replica", 3, target="choose_replica", points=3),
        Todo("s09.fetch_or_recompute", 4, target="fetch_or_recompute", points=2),
    ],
    quiz=Quiz(number=5, points=2, questions=(
        Question("q1"),
        Question("q2"),
        Question("q3"),
        Question("q4"),
        Question("q5", decimals=0),
    )),
    time_limit_s=20,
    memory_limit_mb=1024,
)


# -- helpers (hidden checks import them from here) ----------------------------------------------
def event(kind: str, replica: int, tier: str, block: int, seq: int):
    """One KV event, built at run time (never a shared constant)."""
    from workbook.fleet import KVEvent

    return KVEvent(kind, replica, tier, block, seq, 0.0).checked()


def feed(impl, events) -> dict:
    """Apply ``events`` in the given order to a fresh index: what each ``apply`` returned, every
    block's holders (sorted) and the index's length."""
    index = impl.KVIndex()
    returned = [attempt(lambda e=e: index.apply(e)) for e in events]
    blocks = sorted({e.block for e in events})
    return {"returned": plain(returned),
            "holders": {b: sorted(index.holders(b).items()) for b in blocks},
            "len": len(index)}


class StaticIndex:
    """An index that answers ``holders`` from a fixed table: TODO 2's checks do not need TODO 1."""

    def __init__(self, table: dict) -> None:
        self.table = table

    def holders(self, block: int) -> dict:
        return dict(self.table.get(block, {}))


def table(*replicas: dict) -> StaticIndex:
    """``replicas[r]`` maps block -> tier for replica ``r``."""
    out: dict = {}
    for r, held in enumerate(replicas):
        for block, tier in held.items():
            out.setdefault(block, {})[r] = tier
    return StaticIndex(out)


def request(blocks: int, tokens: int | None = None, first: int = 0):
    """A request of ``blocks`` chained blocks (ids ``first ..``), the last block full unless ``tokens``."""
    from workbook.fleet import Request

    return Request(0, 0.0, tokens if tokens is not None else 512 * blocks, 1, tuple(range(first, first + blocks)))


def cost(gbps: float = 25.0):
    from workbook.fleet import FLEET_COST

    return FLEET_COST.with_bandwidth(gbps)


# -- TODO 1: KVIndex.apply ------------------------------------------------------------------------
@STAGE.check("s09.apply", call="stored/removed events of 2 replicas, in order")
def events_in_order(impl):
    return feed(impl, [event("stored", 0, "gpu", 7, 0), event("stored", 1, "gpu", 7, 0),
                       event("stored", 0, "gpu", 8, 1), event("removed", 0, "gpu", 7, 2)])


@STAGE.check("s09.apply", call="removed (seq 5) arrives before stored (seq 3) of the same block and replica",
             specificity=2)
def stale_event_never_undoes(impl):
    return feed(impl, [event("stored", 0, "gpu", 3, 1), event("removed", 0, "gpu", 3, 5),
                       event("stored", 0, "gpu", 3, 3)])


@STAGE.check("s09.apply", call="every event of a short stream delivered twice", specificity=1)
def duplicates_change_nothing(impl):
    stream = [event("stored", 2, "gpu", 11, 0), event("removed", 2, "gpu", 11, 1),
              event("stored", 2, "host", 11, 2)]
    return feed(impl, [e for e in stream for _ in range(2)])


@STAGE.check("s09.apply", call="replica 0: block 20 (seq 9) arrives before block 21 (seq 4)", specificity=3)
def seq_is_per_block(impl):
    return feed(impl, [event("stored", 0, "gpu", 20, 9), event("stored", 0, "gpu", 21, 4),
                       event("stored", 1, "gpu", 21, 0)])


@STAGE.check("s09.apply", call="gpu -> host move delivered backwards: stored host (seq 6), removed gpu (seq 5)")
def tier_move_out_of_order(impl):
    return feed(impl, [event("stored", 1, "gpu", 30, 4), event("stored", 1, "host", 30, 6),
                       event("removed", 1, "gpu", 30, 5)])


# -- TODO 2: overlap_scores -----------------------------------------------------------------------
@STAGE.check("s09.overlap_scores", call="replica 0 holds blocks 0, 1, 3 on its GPU (not 2); blocks 0..4",
             specificity=2)
def first_miss_ends_match(impl):
    return plain(impl.overlap_scores(table({0: "gpu", 1: "gpu", 3: "gpu"}), [0, 1, 2, 3, 4], 1))


@STAGE.check("s09.overlap_scores", call="replica 0: 0 gpu, 1-2 host; replica 1: 0-2 gpu; replica 2: 1 gpu",
             specificity=1)
def host_run_after_gpu(impl):
    return plain(impl.overlap_scores(table({0: "gpu", 1: "host", 2: "host"}, {0: "gpu", 1: "gpu", 2: "gpu"},
                                           {1: "gpu"}), [0, 1, 2, 3], 3))


@STAGE.check("s09.overlap_scores", call="4 replicas, only replica 3 holds anything: blocks 5, 6 in its host tier")
def host_only_and_empty(impl):
    return plain(impl.overlap_scores(table({}, {}, {}, {5: "host", 6: "host", 8: "host"}), [5, 6, 7, 8], 4))


@STAGE.check("s09.overlap_scores", call="replica 0: gpu, host, then gpu again at block 2; replica 1: host, gpu",
             specificity=3)
def host_then_gpu_ends_match(impl):
    return plain(impl.overlap_scores(table({0: "gpu", 1: "host", 2: "host", 3: "gpu"}, {0: "host", 1: "gpu"}),
                                     [0, 1, 2, 3], 2))


# -- TODO 3: choose_replica -----------------------------------------------------------------------
def choose(impl, scores, queue, req, gbps: float = 25.0):
    return plain(attempt(lambda: impl.choose_replica([tuple(s) for s in scores], list(queue), req, cost(gbps))))


@STAGE.check("s09.choose_replica", call="24-block request; replica 0 holds 20 blocks but waits 2000 ms; "
                                        "replica 1 holds nothing, idle", specificity=2)
def queue_counts(impl):
    return choose(impl, [(20, 0), (0, 0)], [2000.0, 0.0], request(24))


@STAGE.check("s09.choose_replica", call="24-block request; replica 0 holds 20 blocks, waits 50 ms; "
                                        "replica 1 holds nothing, waits 10 ms", specificity=2)
def overlap_counts(impl):
    return choose(impl, [(20, 0), (0, 0)], [50.0, 10.0], request(24))


@STAGE.check("s09.choose_replica", call="32 blocks at 1 GB/s: replica 0 holds 2 on GPU + 28 in host memory; "
                                        "replica 1 holds 12 on GPU", specificity=3)
def transfer_counts(impl):
    return choose(impl, [(2, 28), (12, 0)], [0.0, 0.0], request(32), gbps=1.0)


@STAGE.check("s09.choose_replica", call="4 equal replicas; 4 equal scores with queues 5, 5, 1, 1 ms; 3 replicas "
                                        "that hold a whole 2-block prompt", specificity=1)
def tie_rule_and_whole_prompt(impl):
    return [choose(impl, [(3, 0)] * 4, [5.0] * 4, request(6)),
            choose(impl, [(1, 0)] * 4, [5.0, 5.0, 1.0, 1.0], request(6)),
            choose(impl, [(2, 0), (2, 0), (0, 2)], [9.0, 4.0, 4.0], request(2, tokens=1000))]


# -- TODO 4: fetch_or_recompute -------------------------------------------------------------------
def fetch(impl, blocks: int, gpu: int, host: int, gbps: float, tokens: int | None = None):
    return plain(attempt(lambda: impl.fetch_or_recompute(request(blocks, tokens), gpu, host, cost(gbps))))


@STAGE.check("s09.fetch_or_recompute", call="[fetch(16 blocks, gpu=4, host=h, 25 GB/s) for h in (0, 1, 10)]")
def fast_link_fetches(impl):
    return [fetch(impl, 16, 4, h, 25.0) for h in (0, 1, 10)]


@STAGE.check("s09.fetch_or_recompute", call="[fetch(16 blocks, gpu=4, host=10, bw) for bw in (0.2, 1, 4, 50)]",
             specificity=3)
def slow_link_recomputes(impl):
    return [fetch(impl, 16, 4, 10, bw) for bw in (0.2, 1.0, 4.0, 50.0)]


@STAGE.check("s09.fetch_or_recompute", call="[fetch(64 blocks, gpu=g, host=4, 4 GB/s) for g in (0, 56)]",
             specificity=2)
def deep_blocks_cost_more(impl):
    return [fetch(impl, 64, g, 4, 4.0) for g in (0, 56)]


@STAGE.check("s09.fetch_or_recompute", call="a 3-block prompt of 1100 tokens, gpu=1, host=2, at 1 and 40 GB/s",
             specificity=1)
def whole_prompt_in_host(impl):
    return [fetch(impl, 3, 1, 2, bw, tokens=1100) for bw in (1.0, 40.0)]
