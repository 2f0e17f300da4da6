"""The serving loop's virtual clock: a calibrated cost of each prefill and decode step (given code).

A decision taken from measured latencies is only as steady as the machine that measured them: on a
shared CPU one setting's p90 moves by a factor of two or more between runs, and a pool-size sweep
then picks a different pool each time. :class:`~workbook.serving.ServingEngine` can instead advance
its clock by a *cost model* (``cost=``): the run's schedule, hits and latencies then depend on the
requests and the model of cost only, while the measured durations are still recorded beside them.

This module builds that cost model from a :class:`~kernels.calibration.Calibration`:

- :func:`calibrate_serving` measures one on this machine, with the probes of
  :mod:`kernels.cost_model` at the sizes the serving runs use, plus whole decode steps of the
  serving loop by batch size and context and (``prefills=True``) whole prefills through the
  engine's prefiller by computed and cached tokens, on a grid that covers every prefill stage 7's
  four workloads make (:data:`PREFILL_COMPUTED` x :data:`PREFILL_CACHED`);
- :func:`shipped_calibration` reads the one measured once for :data:`~workbook.serving.SERVING_MODEL`
  on the 2-core CPU the course is built on (``serving_calibration.json`` next to this module,
  written by ``python -m workbook.serving_cost``). A decision taken from it is the same on every
  machine and in every run: it is arithmetic over fixed numbers;
- :func:`virtual_cost` turns a calibration into the ``cost(kind, a, b)`` callable the engine takes:
  a prefill costs what the table of measured prefills says (interpolated between its sizes), or,
  given a prefill model (stage 7's ``predict_ttft``), what that model predicts.

Why a table of whole prefills, and not the cost model of stage 7's TODO 3: the notebook needs its
clock before the learner has written the model, and a clock read from timed prefills is the
measurement the model is then checked against.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from autograder.i18n import tr
from kernels import cost_model
from kernels.calibration import Calibration
from kernels.config import ModelConfig
from kernels.device import describe_device, paged_attention_for
from kernels.model import DecoderLM
from kernels.timing import synchronize
from workbook.paged_prefill import PagedPrefiller, pool_attention, write_kv
from workbook.serving import SERVING_MODEL, Request, ServingEngine, ServingPool

__all__ = ["SHIPPED", "GRID", "SHAPES", "DECODE_SHAPES", "PREFILL_COMPUTED", "PREFILL_CACHED", "Cost",
           "PrefillModel", "calibrate_serving", "shipped_calibration", "measured_on", "virtual_cost", "decode_probe",
           "prefill_probe"]

#: The calibration measured once for SERVING_MODEL; written by ``python -m workbook.serving_cost``.
SHIPPED = Path(__file__).with_name("serving_calibration.json")
#: Row counts of the serving runs' prefills, and the (new queries, context) attention shapes.
GRID = (1, 16, 32, 64, 128, 256, 512, 1024)
SHAPES = tuple((q, c) for q in GRID for c in GRID if q <= c)
#: (batch size, context per request) of the decode steps measured: the loop runs at most 8 at once.
DECODE_SHAPES = tuple((b, c) for b in (1, 2, 4, 8) for c in (256, 768))
#: Whole prefills measured, every computed size at every cached size: stage 7's prompts are at most
#: 768 tokens, and hits are multiples of 16 tokens up to 768.
PREFILL_COMPUTED = (1, 16, 32, 64, 128, 256, 512, 768)
PREFILL_CACHED = (0, 128, 256, 512, 768)

#: ``cost(kind, a, b)``: seconds of a prefill (``"prefill"``, computed, cached) or a decode step
#: (``"decode"``, batch size, tokens the batch attends to).
Cost = Callable[[str, int, int], float]
#: ``predict(cfg, computed, cached, calibration)``: seconds of one prefill (stage 7's ``predict_ttft``).
PrefillModel = Callable[[ModelConfig, int, int, Calibration], float]


def virtual_cost(cfg: ModelConfig, cal: Calibration, prefill: PrefillModel | None = None) -> Cost:
    """The engine's ``cost=``: a prefill costs ``cal.prefill_table_s(computed, cached)`` (the measured
    prefills), or ``prefill(cfg, computed, cached, cal)`` when a prefill model is given; a decode step
    of ``batch`` requests over ``context`` tokens in all costs ``cal.decode_s(batch, context / batch)``.

    [zh]
    引擎的 ``cost=``：一次 prefill 的代价是 ``cal.prefill_table_s(computed, cached)``（实测的 prefill），给了
    prefill 模型时则是 ``prefill(cfg, computed, cached, cal)``；``batch`` 个请求、总共对 ``context`` 个 token 的
    一个 decode 步骤的代价是 ``cal.decode_s(batch, context / batch)``。
    """
    def cost(kind: str, a: int, b: int) -> float:
        if kind == "prefill":
            return cal.prefill_table_s(a, b) if prefill is None else prefill(cfg, a, b, cal)
        if kind == "decode":
            return cal.decode_s(a, b / max(a, 1))
        raise ValueError(tr(f"unknown kind of work {kind!r}", f"未知的工作类型 {kind!r}"))

    return cost


def shipped_calibration() -> Calibration:
    """The calibration shipped with the course (SERVING_MODEL, one torch thread, CPU time).

    [zh]
    随课程一起发布的校准（SERVING_MODEL、一个 torch 线程、CPU 时间）。
    """
    return Calibration.from_dict(json.loads(SHIPPED.read_text(encoding="utf-8")))


def measured_on(cal: Calibration) -> str:
    """The machine a calibration was measured on, in the edition's words: ``cal.device`` is written in
    English once (``"cpu: x86_64, 1 torch thread"``); the thread count comes from ``cal.notes``.

    [zh]
    一份校准是在哪台机器上测的，用当前版本的语言说出来：``cal.device`` 只用英文写过一次
    （``"cpu: x86_64, 1 torch thread"``）；线程数取自 ``cal.notes``。
    """
    kind, _, rest = cal.device.partition(": ")
    where = f"{kind}: {rest.split(', ')[0]}" if rest else kind
    n = cal.notes.get("threads")
    if n is None:
        return where
    return where + tr(f", {n} torch thread{'' if n == 1 else 's'}, CPU time", f"，{n} 个 torch 线程，CPU 时间")


def decode_probe(model: DecoderLM, batch: int, context: int, block_size: int = 16, seed: int = 0) -> Callable[[], None]:
    """One decode step of the serving loop: ``batch`` running requests, each at ``context`` tokens.

    The requests are set up as the engine's prefill leaves them (prompt blocks admitted, output
    blocks reserved, the prompts' K/V in the pool) without running the model: the work of a decode
    step does not depend on the values of the K/V it reads, so seeded random ones stand in for
    computed ones. (Prefilling ``batch`` prompts of ``context`` tokens for every shape took half of
    :func:`calibrate_serving`'s time and measured nothing.)"""
    rng = random.Random(seed)
    per = -(-(context + 1) // block_size)
    engine = ServingEngine(model, batch * per + 1, block_size, cache=False, max_batch=batch)
    running = []
    for i in range(batch):
        request = Request(f"decode-{i}", 0.0, tuple(rng.randrange(model.config.vocab_size) for _ in range(context)), 2)
        engine.pool.admit(request.request_id, list(request.prompt))
        engine.pool.commit(request.request_id)
        ledger = {"hit_tokens": 0, "computed_tokens": context}
        running.append(engine._running(request, 0.0, ledger, rng.randrange(model.config.vocab_size), math.nan))
    kv = engine.prefiller.pool
    values = torch.Generator(device=kv.k[0].device).manual_seed(seed)
    for layer in (*kv.k, *kv.v):  # every slot written, as the prefills and the step itself write theirs
        layer.normal_(generator=values)

    def run() -> None:
        engine._decode(running)  # rewrites the same position's K/V each call: the work of one step

    return run


def prefill_probe(model: DecoderLM, computed: int, cached: int, block_size: int = 16, seed: int = 0,
                  questions: int = 16) -> Callable[[], None]:
    """One prefill of the serving loop: ``computed`` fresh tokens after ``cached`` ones that hit (a
    multiple of ``block_size``), through a prefiller on the engine's pool, then the first token read
    back, as :class:`~workbook.serving.ServingEngine` does. With nothing cached the pool's cache is off
    (the cache-off path). Each call takes the next of ``questions`` fresh suffixes, so nothing but the
    prefix ever hits."""
    if cached % block_size:
        raise ValueError(tr(f"cached tokens must be a multiple of {block_size}", f"缓存的 token 数必须是 {block_size} 的倍数"))
    rng = random.Random(seed * 7919 + computed * 31 + cached)
    vocab = model.config.vocab_size
    prefix = [rng.randrange(vocab) for _ in range(cached)]
    suffixes = [[rng.randrange(vocab) for _ in range(computed)] for _ in range(questions)]
    blocks = cached // block_size + 2 * (-(-computed // block_size) + 1) + 2
    attention = pool_attention(paged_attention_for(next(model.parameters()).device)[1])
    prefiller = PagedPrefiller(model, blocks, block_size, blocks=ServingPool(blocks, block_size, cache=cached > 0),
                               attention=attention)
    if cached:
        prefiller.prefill(prefix + [0])  # registers the prefix's full blocks
    turn = iter(range(10**9))

    def run() -> None:
        logits, ledger = prefiller.prefill(prefix + suffixes[next(turn) % questions])
        int(torch.argmax(logits))  # waits for the device, as the engine does
        if ledger["hit_tokens"] != cached:
            raise AssertionError(tr(f"the probe hit {ledger['hit_tokens']} tokens, not {cached}",
                                    f"探针命中了 {ledger['hit_tokens']} 个 token，而不是 {cached} 个"))

    return run


def calibrate_serving(model: DecoderLM, clock: Callable[[], float] = time.process_time, *, reps: int = 5,
                      decode: bool = True, prefills: bool = False) -> Calibration:
    """Measure a :class:`Calibration` for the serving loop on ``clock``: the model's GEMMs at every row
    count of :data:`GRID`, paged attention (with its K/V write) at every shape of :data:`SHAPES`, the
    head, element-wise work, a one-token prefill through the engine's prefiller (its fixed overhead),
    the block manager's bookkeeping, with ``decode`` whole decode steps at :data:`DECODE_SHAPES` and
    with ``prefills`` whole prefills at every (computed, cached) of :data:`PREFILL_COMPUTED` x
    :data:`PREFILL_CACHED`.
    Each is the median of ``reps`` calls after one that warms up.

    [zh]
    在 ``clock`` 上为服务循环测量一份 :class:`Calibration`：模型的 GEMM（:data:`GRID` 中的每个行数）、
    paged attention（连同它写入 K/V，:data:`SHAPES` 中的每种形状）、输出头、逐元素运算、经过引擎的 prefiller
    对一个 token 做的 prefill（即它的固定开销）、块管理器的记账开销，以及 ``decode`` 为真时 :data:`DECODE_SHAPES`
    上完整的 decode 步骤。每一项都先预热调用一次，再取 ``reps`` 次调用的中位数。
    """
    device = next(model.parameters()).device
    cfg = model.config

    def seconds(fn: Callable[[], object]) -> float:
        fn()
        times = []
        for _ in range(reps):
            synchronize(device)
            begin = clock()
            fn()
            synchronize(device)
            times.append(clock() - begin)
        return statistics.median(times)

    attention = pool_attention(paged_attention_for(device)[1])
    one_token = PagedPrefiller(model, 4, 16, blocks=ServingPool(4, 16, cache=False), attention=attention)
    return Calibration.from_seconds(
        cfg,
        gemm_s={r: seconds(cost_model.gemm_probe(model, r)) for r in GRID},
        head_s=seconds(cost_model.head_probe(model)),
        attention_s={s: seconds(cost_model.paged_attention_probe(model, *s, attention, write=write_kv)) for s in SHAPES},
        elementwise_s={r: seconds(cost_model.elementwise_probe(model, r)) for r in GRID},
        forward1_s=seconds(lambda: one_token.prefill([7])),
        bookkeeping_s={n: seconds(cost_model.bookkeeping_probe(lambda n=n: ServingPool(n // 16 + 2, 16), n,
                                                               cfg.vocab_size)) for n in (128, 512)},
        decode_step_s={s: seconds(decode_probe(model, *s)) for s in DECODE_SHAPES} if decode else None,
        prefill_s={(c, k): seconds(prefill_probe(model, c, k)) for k in PREFILL_CACHED for c in PREFILL_COMPUTED}
        if prefills else None,
        device=describe_device(device))


def main(argv: list[str] | None = None) -> int:
    """Measure the shipped calibration: SERVING_MODEL on the CPU, one torch thread, CPU time, median of
    ``--reps``; the median of ``--rounds`` such calibrations, value by value, is what is written."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=SHIPPED)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = DecoderLM.random(SERVING_MODEL, seed=0)
    cals = [calibrate_serving(model, time.process_time, reps=args.reps, prefills=True).to_dict()
            for _ in range(args.rounds)]

    def median_of(values: list[object]) -> object:
        if isinstance(values[0], dict):
            return {k: median_of([v[k] for v in values]) for k in values[0]}  # type: ignore[index]
        if isinstance(values[0], float):
            return statistics.median(values)  # type: ignore[type-var]
        return values[0]

    raw = median_of(cals)  # type: ignore[arg-type]
    assert isinstance(raw, dict)
    # the torch release has one owner (course.toml): the file names the machine, not the release
    raw["device"] = ", ".join(part for part in str(raw["device"]).split(", ") if not part.startswith("torch "))
    raw["notes"] = {"model": "SERVING_MODEL", "threads": 1, "clock": "process_time", "reps": args.reps,
                    "rounds": args.rounds, "written_by": "python -m workbook.serving_cost"}
    Calibration.from_dict(raw)  # refuses anything a calibration may not hold
    args.out.write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(tr(f"written: {args.out}", f"已写入：{args.out}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
