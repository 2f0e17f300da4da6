"""Run the benchmarks and write what they print to ``docs/performance.md`` and ``docs/performance.zh.md``,
the one home of every measured figure in the project's prose (the README and the other pages link here
instead of quoting numbers, which go stale).

Each page states when it was written, on which machine (cores, CPU model, memory, OS, Python, torch
and nbgrader versions, the load when the run began, the commit) and by which command; each section
gives the script's exact command line and its output, unedited. Benchmarks print ratios measured in
the same run wherever they can, so the figures mean something only next to the machine they came from.

    python -m benchmarks.report                      # every benchmark at its default size (an hour or more on 2 cores)
    python -m benchmarks.report --quick              # every benchmark's smoke-test size (minutes)
    python -m benchmarks.report --only main_job traces --quick
    python -m benchmarks.report --quick --out /tmp   # write the pages elsewhere

A quick run measures small workloads: its figures show the shape of each comparison, not the sizes the
full run uses, and the page says which kind of run wrote it. A script that fails or times out is
reported as such on the page, with the end of its error output; the report's own exit status is 1 then.
A benchmark that needs a CUDA GPU is listed as skipped on a machine without one, and one that needs
SGLang's router (the ``[bench]`` extra) where it is not installed.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.router import sglang

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@dataclass(frozen=True)
class Bench:
    """One benchmark script and how the report runs it. Invariants: ``script`` is a file of
    ``benchmarks/``; ``full`` and ``quick`` are its arguments for a full and a quick run; ``what``
    holds the same sentence in English and Chinese; ``needs`` is ``""``, ``"cuda"`` or ``"router"``
    (SGLang's router, the optional ``[bench]`` extra)."""

    name: str
    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    what: dict[str, str]
    needs: str = ""


BENCHES: tuple[Bench, ...] = (
    Bench("main_job", "bench_main_job.py", (), ("--quick",),
          {"en": "The README's main job (`python -m autograder grade notebooks/ solutions/*.ipynb solutions/zh/*.ipynb`) with an empty "
                 "store of trusted material and with a warm one: wall time and CPU of the whole process tree.",
           "zh": "README 里的主任务（`python -m autograder grade notebooks/ solutions/*.ipynb solutions/zh/*.ipynb`），分别在可信材料存储为空和"
                 "已预热时运行：墙钟时间和整棵进程树的 CPU 时间。"}),
    Bench("block_pool", "bench_block_pool.py", (), ("--quick",),
          {"en": "Stages 2–3: `chain_keys` vs `hash_block` per block vs the sha256 floor; the full cycle "
                 "(lookup, `admit(keys=)`, commit, release) vs the old one hashing twice.",
           "zh": "第 2–3 阶段：`chain_keys` 与逐块 `hash_block`、sha256 下限的对比；完整流程（查找、`admit(keys=)`、"
                 "提交、释放）与旧的两次哈希流程的对比。"}),
    Bench("free_queue", "bench_free_queue.py", (), ("--quick",),
          {"en": "Stage 4: the O(1) LRU linked list vs stage 3's `OrderedDict` queue, `deque` and `list` at 1k "
                 "and 100k blocks.",
           "zh": "第 4 阶段：O(1) 的 LRU 链表与第 3 阶段的 `OrderedDict` 队列、`deque`、`list` 在 1k 和 100k "
                 "个块时的对比。"}),
    Bench("traces", "bench_traces.py", (), ("--quick",),
          {"en": "Stage 4: LRU, pinning, minimum residence and Belady on the Mooncake traces (hit rates, replay "
                 "time vs LRU).",
           "zh": "第 4 阶段：LRU、固定、最短驻留和 Belady 在 Mooncake 轨迹上的命中率，以及相对 LRU 的回放耗时。"}),
    Bench("radix", "bench_radix.py", (), ("--quick",),
          {"en": "Stage 5: the radix tree evicting per request (incremental vs the TODO's scan) vs hashing every "
                 "block and the block pool; cost per request at 1k vs 100k blocks.",
           "zh": "第 5 阶段：基数树逐请求淘汰（增量式与 TODO 里的全扫描）与逐块哈希、块池的对比；1k 与 100k "
                 "个块时每个请求的开销。"}),
    Bench("prefill", "bench_prefill.py", (), ("--quick",),
          {"en": "Stage 6: TTFT of a full vs a cached prefill, measured and predicted by the FLOP model "
                 "calibrated in the same run.",
           "zh": "第 6 阶段：完整 prefill 与复用缓存前缀的 prefill 的 TTFT，实测值与同一次运行里校准的 FLOP "
                 "模型预测值的对比。"}),
    Bench("serving", "bench_serving.py", (), ("--quick",),
          {"en": "Stage 7: serving with the prefix cache on vs off on each workload (hit rate, TTFT, TPOT, "
                 "throughput ratios, identical tokens).",
           "zh": "第 7 阶段：在每种负载上开关前缀缓存的服务对比（命中率、TTFT、TPOT、吞吐量之比，生成的 token "
                 "是否一致）。"}),
    Bench("side_channel", "bench_side_channel.py", (), ("--quick",),
          {"en": "Stage 8: collision cost vs key width, wrong KV on a collision, hit/miss TTFT (AUC, KS) vs shared "
                 "prefix, secret recovery, with and without per-tenant salts; isolation's hit-rate cost.",
           "zh": "第 8 阶段：碰撞代价与 key 位宽、碰撞时读到错误的 KV、命中与未命中的 TTFT（AUC、KS）与共享前缀"
                 "长度、秘密恢复，有无按租户加盐；隔离对命中率的代价。"}),
    Bench("router", "bench_router.py", (), ("--quick",),
          {"en": "Stage 9 beside a production router: SGLang's router (cache-aware policy) routes the conversation "
                 "trace as text in front of mock engine workers; its choices are scored in the stage's simulator next "
                 "to the reference router and the baselines (hit rate, TTFT p50/p90, balance).",
           "zh": "第 9 阶段与生产级路由器的对比：SGLang 的路由器（cache-aware 策略）把对话轨迹当作文本，路由给模拟的"
                 "推理引擎 worker；它的选择放进本阶段的模拟器打分，与参考路由器和各基线并列（命中率、TTFT p50/p90、"
                 "负载均衡度）。"}, needs="router"),
    Bench("kv_index", "bench_kv_index.py", (), ("--quick",),
          {"en": "Stage 9: routing cost per request with the reference `KVIndex` holding 10k, 100k and 1M blocks, "
                 "against the 10k index's.",
           "zh": "第 9 阶段：参考实现的 `KVIndex` 分别持有 1 万、10 万和 100 万个块时，每个请求的路由开销，以及与 1 万个块"
                 "时的比值。"}),
    Bench("grading", "bench_grading.py", (), ("--quick",),
          {"en": "A generated class per stage graded by the CLI, by nbgrader with this course (`nbgrader "
                 "autograde` and `python -m autograder autograde`) and by plain `nbgrader autograde`: seconds and "
                 "CPU-seconds per submission, cores busy, ratios, one child's CPU by phase, projections for "
                 "1,000 and 10,000 submissions.",
           "zh": "按阶段生成一个班的提交，分别用命令行、带本课程配置的 nbgrader（`nbgrader autograde` 和 "
                 "`python -m autograder autograde`）以及原生 `nbgrader autograde` 评分：每份提交的秒数和 CPU 秒数、"
                 "忙碌的核数、各种比值、一个子进程按阶段的 CPU 开销，以及 1,000 和 10,000 份提交的推算。"}),
    Bench("grading_isolation", "bench_grading_isolation.py", (), ("--quick",),
          {"en": "What kernel isolation adds per graded TODO, at each level this machine offers.",
           "zh": "在这台机器能提供的每个隔离级别下，内核隔离给每个被评分的 TODO 增加的开销。"}),
    Bench("isolation", "bench_isolation.py", (), ("--quick",),
          {"en": "What each isolation level costs per child launch, against a plain launch of the same interpreter.",
           "zh": "每个隔离级别启动一个子进程的开销，与不加隔离地启动同一个解释器相比。"}),
    Bench("hostile_channel", "bench_hostile_channel.py", (), (),
          {"en": "The grader's own CPU-seconds and peak memory per submission for each hostile result channel of "
                 "the corpus (a flood after a broken rule, millions of containers, deep nesting), against an honest "
                 "submission in the same run.",
           "zh": "对语料库里每一种恶意结果通道（破坏规则后的洪水、上百万个容器、极深的嵌套），评分器自身每份提交花的 "
                 "CPU 秒数和内存峰值，与同一次运行里一份正常提交对比。"}),
    Bench("trusted_store", "bench_trusted_store.py", (), ("--stages", "s01", "s06"),
          {"en": "CPU-seconds a new grading process spends on a stage's trusted material with no store, an empty "
                 "one and a warm one.",
           "zh": "新的评分进程为一个阶段准备可信材料所花的 CPU 秒数：不用存储、存储为空、存储已预热三种情况。"}),
    Bench("gpu_check", "gpu_check.py", (), (),
          {"en": "Stage 6 on a CUDA GPU: the Triton kernel vs the torch reference, TTFT at Qwen2.5-0.5B's shape, "
                 "the serving loop.",
           "zh": "第 6 阶段在 CUDA GPU 上：Triton kernel 与 torch 参考实现的对比、Qwen2.5-0.5B 规模下的 TTFT、"
                 "服务循环。"}, needs="cuda"),
)

WORDS = {
    "en": {"title": "# Performance", "other": "[中文](performance.zh.md)",
           "intro": "Every measured figure of the project lives on this page. It is written by the benchmarks "
                    "(`benchmarks/report.py`); do not edit it by hand: rerun the command below to refresh it.",
           "date": "date (UTC)", "machine": "machine", "command": "command", "kind": "run",
           "quick": "quick: each benchmark's smoke-test size. The figures show the shape of each comparison on "
                    "small workloads, not the sizes a full run measures.",
           "full": "full: each benchmark at its default size.",
           "load": "load average when the run began", "commit": "commit",
           "how": "Run by", "took": "took", "skipped": "skipped", "failed": "failed, exit status",
           "no_cuda": "no CUDA GPU on this machine", "timeout": "stopped after the time limit of",
           "no_router": "SGLang's router is not installed here (the `[bench]` extra: `pip install -e '.[bench]'`)",
           "field": "field", "value": "value", "cores": "cores (usable/present)"},
    "zh": {"title": "# 性能", "other": "[English](performance.md)",
           "intro": "本项目所有实测数字都只写在这一页。它由基准测试脚本生成（`benchmarks/report.py`），请不要手工修改："
                    "要更新，重新运行下面的命令即可。",
           "date": "日期（UTC）", "machine": "机器", "command": "命令", "kind": "运行方式",
           "quick": "快速：每个基准测试都用冒烟测试的规模。这些数字只反映小负载下各项对比的大致形态，不是完整运行"
                    "所测的规模。",
           "full": "完整：每个基准测试都用默认规模。",
           "load": "开始运行时的平均负载", "commit": "提交",
           "how": "运行命令", "took": "耗时", "skipped": "跳过", "failed": "失败，退出码",
           "no_cuda": "这台机器没有 CUDA GPU", "timeout": "超过时间限制后被停止：",
           "no_router": "这台机器没有安装 SGLang 的路由器（附加依赖 `[bench]`：`pip install -e '.[bench]'`）",
           "field": "项目", "value": "值", "cores": "核数（可用/总数）"},
}


def _version(package: str) -> str:
    """An installed distribution's version, without importing it."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.0f} GiB"
    except OSError:
        pass
    return "unknown"


def _cores() -> str:
    """Usable and present cores ("2/2"): a benchmark can only use the cores of its affinity."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{usable}/{os.cpu_count()}"


def _commit() -> str:
    p = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=ROOT,
                       capture_output=True, text=True)
    return p.stdout.strip() or "unknown"


def _has_cuda() -> bool:
    """Asked in a child: importing torch here would put its threads in the way of every benchmark."""
    p = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                       capture_output=True, text=True)
    return p.stdout.strip() == "True"


def machine() -> list[tuple[str, str]]:
    """The facts a reader needs to weigh the figures: what ran them, and how busy it was."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return [("cores", _cores()), ("CPU", _cpu_model()), ("memory", _memory_gib()),
            ("OS", platform.platform()), ("Python", platform.python_version()),
            ("torch", _version("torch")), ("nbgrader", _version("nbgrader")), ("load", load),
            ("commit", _commit())]


@dataclass(frozen=True)
class Outcome:
    """What one benchmark run gave. Invariants: ``skipped`` is empty or the reason it did not run (then
    ``output`` is empty and ``status`` is 0); ``timed_out`` implies ``status`` is not 0."""

    bench: Bench
    argv: tuple[str, ...]
    status: int = 0
    seconds: float = 0.0
    output: str = ""
    skipped: str = ""
    timed_out: bool = False


def run(bench: Bench, quick: bool, timeout: float | None, cuda: bool, router: bool = True) -> Outcome:
    argv = (f"benchmarks/{bench.script}", *(bench.quick if quick else bench.full))
    if bench.needs == "cuda" and not cuda:
        return Outcome(bench, argv, skipped="no_cuda")
    if bench.needs == "router" and not router:
        return Outcome(bench, argv, skipped="no_router")
    print(f"running {' '.join(argv)}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return Outcome(bench, argv, 1, time.perf_counter() - start, out, timed_out=True)
    output = p.stdout if p.returncode == 0 else p.stdout + "\n" + p.stderr[-3000:]
    return Outcome(bench, argv, p.returncode, time.perf_counter() - start, output.rstrip())


def page(lang: str, outcomes: list[Outcome], facts: list[tuple[str, str]], when: str, command: str,
         quick: bool, timeout: float | None) -> str:
    """One edition of the page: the same figures, the prose in ``lang``."""
    w = WORDS[lang]
    facts = dict(facts)
    rows = [(w["date"], when),
            (w["machine"], f"{w['cores']} {facts['cores']} · {facts['CPU']} · {facts['memory']} · {facts['OS']}"),
            ("Python · torch · nbgrader", f"{facts['Python']} · {facts['torch']} · {facts['nbgrader']}"),
            (w["load"], facts["load"]), (w["commit"], f"`{facts['commit']}`"),
            (w["command"], f"`{command}`"), (w["kind"], w["quick" if quick else "full"])]
    out = [w["title"], "", f"{w['other']} · {w['intro']}", "", f"| {w['field']} | {w['value']} |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in rows]
    for o in outcomes:
        out += ["", f"## {o.bench.name}", "", o.bench.what[lang], "",
                f"{w['how']} `python {shlex.join(o.argv)}`" + (f" · {w['took']} {o.seconds:.0f} s" if not o.skipped else "")]
        if o.skipped:
            out += ["", f"*{w['skipped']}: {w[o.skipped]}.*"]
            continue
        if o.timed_out:
            out += ["", f"*{w['timeout']} {timeout:.0f} s.*"]
        elif o.status:
            out += ["", f"*{w['failed']} {o.status}.*"]
        out += ["", "```text", o.output, "```"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="each benchmark's smoke-test size")
    ap.add_argument("--only", nargs="+", choices=[b.name for b in BENCHES], help="these benchmarks only")
    ap.add_argument("--timeout", type=float, default=None, help="seconds each benchmark may run (default: no limit)")
    ap.add_argument("--out", type=Path, default=DOCS, help="folder the two pages are written to")
    args = ap.parse_args(argv)
    command = shlex.join(["python", "-m", "benchmarks.report", *(argv if argv is not None else sys.argv[1:])])
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    facts = machine()
    cuda = _has_cuda()
    router, _ = sglang.available()
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]
    outcomes = [run(b, args.quick, args.timeout, cuda, router) for b in chosen]
    args.out.mkdir(parents=True, exist_ok=True)
    for lang, name in (("en", "performance.md"), ("zh", "performance.zh.md")):
        (args.out / name).write_text(page(lang, outcomes, facts, when, command, args.quick, args.timeout),
                                     encoding="utf-8")
    return 1 if any(o.status for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
