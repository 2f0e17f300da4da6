"""Hidden checks of stage 9: real event streams shuffled and duplicated, random fleets, read counts,
bandwidth sweeps. Never shipped to learners. Their titles and hints, in both languages, are in
``hidden.toml`` beside this module."""
from __future__ import annotations

import random

from autograder.checks.common import attempt, plain
from autograder.checks.s09 import STAGE, StaticIndex, choose, event, feed, fetch, request, table


def replica_stream(seed: int, replicas: int = 3, requests: int = 40):
    """The events real replicas emit (small GPU and host tiers, chained prompts), in emission order."""
    from workbook.fleet import Replica

    rng = random.Random(seed)
    fleet = [Replica(r, gpu_blocks=6, host_blocks=5) for r in range(replicas)]
    events = []
    for i in range(requests):
        root = rng.randrange(4)
        blocks = [100 * root + j for j in range(rng.randint(1, 7))]
        events += fleet[rng.randrange(replicas)].admit(blocks, float(i))
    return events


# -- TODO 1 ---------------------------------------------------------------------------------------
@STAGE.check("s09.apply", hidden=True, sibling="stale_event_never_undoes")
def shuffled_and_duplicated_stream(impl):
    rng = random.Random(9)
    events = replica_stream(9)
    delivered = events + rng.sample(events, len(events) // 3)
    rng.shuffle(delivered)
    result = feed(impl, delivered)
    return {"applied": result["returned"].count(True), "holders": result["holders"], "len": result["len"]}


@STAGE.check("s09.apply", hidden=True, sibling="events_in_order")
def removal_before_any_store(impl):
    return feed(impl, [event("removed", 4, "host", 50, 7), event("stored", 4, "host", 50, 2),
                       event("stored", 5, "gpu", 50, 1), event("removed", 5, "gpu", 50, 3)])


# -- TODO 2 ---------------------------------------------------------------------------------------
@STAGE.check("s09.overlap_scores", hidden=True, sibling="host_run_after_gpu")
def random_fleets(impl):
    rng = random.Random(21)
    out = []
    for _ in range(30):
        replicas = rng.randint(1, 6)
        held = [{b: rng.choice(("gpu", "gpu", "host")) for b in range(10) if rng.random() < 0.8}
                for _ in range(replicas)]
        index, blocks = table(*held), list(range(rng.randint(0, 10)))
        out.append(plain(attempt(lambda i=index, b=blocks, n=replicas: impl.overlap_scores(i, b, n))))
    return out


class CountingIndex(StaticIndex):
    """A static index of 50k blocks that counts ``holders`` calls."""

    def __init__(self, table_: dict) -> None:
        super().__init__(table_)
        self.reads = 0

    def holders(self, block: int) -> dict:
        self.reads += 1
        return super().holders(block)


@STAGE.check("s09.overlap_scores", hidden=True, sibling="first_miss_ends_match")
def reads_stop_with_the_matches(impl):
    big = {b: {r: "gpu" for r in range(8)} for b in range(1000, 51_000)}
    big.update({b: {r: "gpu" for r in range(8)} for b in range(3)})
    index = CountingIndex(big)
    scores = plain(attempt(lambda: impl.overlap_scores(index, list(range(40)), 8)))
    return {"scores": scores, "few_reads": index.reads <= 2 * 4 * 8}  # each replica: its 3 hits and 1 miss, twice at most


# -- TODO 3 ---------------------------------------------------------------------------------------
@STAGE.check("s09.choose_replica", hidden=True, sibling="overlap_counts")
def random_choices(impl):
    rng = random.Random(33)
    out = []
    for _ in range(40):
        blocks = rng.randint(1, 40)
        scores = []
        for _ in range(8):
            g = rng.randint(0, blocks)
            scores.append((g, rng.randint(0, blocks - g)))
        queue = [rng.choice((0.0, rng.uniform(0, 3000))) for _ in range(8)]
        out.append(choose(impl, scores, queue, request(blocks, tokens=512 * blocks - rng.randrange(512)),
                          gbps=rng.choice((0.5, 4.0, 25.0))))
    return out


@STAGE.check("s09.choose_replica", hidden=True, sibling="tie_rule_and_whole_prompt")
def ties_among_many(impl):
    scores = [(0, 0), (1, 0), (2, 0), (4, 0), (3, 0), (2, 0), (4, 0), (0, 0)]
    return [choose(impl, scores, [0.0] * 8, request(8)),
            choose(impl, [(0, 1)] * 6, [7.0, 7.0, 3.0, 7.0, 3.0, 3.0], request(3))]


# -- TODO 4 ---------------------------------------------------------------------------------------
@STAGE.check("s09.fetch_or_recompute", hidden=True, sibling="slow_link_recomputes")
def bandwidth_sweep(impl):
    return [[fetch(impl, 48, gpu, 6, bw) for bw in (0.5, 2.0, 3.0, 5.0, 8.0, 64.0)] for gpu in (0, 12, 40)]


@STAGE.check("s09.fetch_or_recompute", hidden=True, sibling="whole_prompt_in_host")
def short_last_block(impl):
    return [fetch(impl, blocks, 0, blocks, bw, tokens=512 * (blocks - 1) + 1)
            for blocks in (1, 2, 5) for bw in (0.3, 30.0)]
