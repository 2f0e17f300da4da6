"""GPU check of the paged-attention kernel, cached prefill and the serving loop, in under 5 minutes on one GPU.

0. **Fused attention**: every attention call site (full prefill, torch paged reference, stage 6's
   reference, batched decode, a cached prefill, a serving run) with SDPA restricted to its fused
   backends (flash, memory-efficient, cuDNN): a fallback to the unfused "math" kernel fails.
1. **Kernel**: the Triton paged-attention kernel against the torch reference (``kernels.paged_attention``)
   at Qwen2.5-0.5B's attention shape (14 query heads, 2 kv heads, head dim 64) with a shuffled block
   table: max abs difference and time of each.
2. **End to end**: a model with Qwen2.5-0.5B's dimensions (hidden 896, 24 layers, 14 heads / 2 kv
   heads, MLP 4864, vocab 151936) and random weights. For cached prefixes of 1,024 and 4,096 tokens
   plus a 64-token question: logits of the cached path (stage 6's ``PagedPrefiller`` with the Triton
   kernel) against a full prefill (SDPA ``is_causal=True``) in fp32, then TTFT of both in bf16, the
   measured speedup, and the FLOP model's prediction.
3. **Serving loop** (``workbook/serving.py``) at Qwen2.5-0.5B's shape: cache on vs off on a
   shared-prefix workload (fp32: identical generated tokens; bf16: TTFT p50/p90, TPOT p50, throughput
   and their on/off ratios) and on unique prompts (the cache must not make them slower).

``--quick`` runs everything tiny; on a machine without CUDA it runs the kernel through Triton's
interpreter (``TRITON_INTERPRET=1``, set here before the kernel is imported), so a CPU test can smoke
this script. Exit status 1 if a correctness check fails.

    python benchmarks/gpu_check.py            # on a CUDA machine
    python benchmarks/gpu_check.py --quick    # anywhere, seconds
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

if not torch.cuda.is_available():
    # Must happen before kernels.triton_paged_attention is imported (the @triton.jit decorator reads it).
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kernels.device import describe_device  # noqa: E402
from kernels.flops import predicted_speedup  # noqa: E402
from kernels.model import DecoderLM, ModelConfig  # noqa: E402
from kernels.paged_attention import causal_attention, fused_attention_only, paged_attention_torch, paged_decode_attention_torch  # noqa: E402
from kernels.timing import timed  # noqa: E402
from kernels.triton_paged_attention import paged_attention_triton  # noqa: E402
from solutions.s06_paged_prefill import PagedPrefiller, full_prefill, paged_attention, pool_attention  # noqa: E402
from solutions.s07_serving import summarize_run  # noqa: E402
from workbook import serving_workloads as W  # noqa: E402
from workbook.serving import compare_outputs, serve, warm_up  # noqa: E402

FAILURES: list[str] = []


def bench(fn, device: torch.device, reps: int) -> tuple[float, object]:
    """Median seconds of ``reps`` calls after one warm-up call, and the last result."""
    out = fn()
    times = []
    for _ in range(reps):
        seconds, out = timed(fn, device)
        times.append(seconds)
    return statistics.median(times), out


def expect(ok: bool, what: str) -> str:
    if not ok:
        FAILURES.append(what)
    return "ok" if ok else "FAIL"


def fused_check(device: torch.device, quick: bool) -> None:
    """Every attention call site must run with SDPA restricted to its fused backends."""
    from kernels.kv_pool import KVPool

    cfg = ModelConfig.tiny() if quick else ModelConfig.qwen2_5_0_5b(num_hidden_layers=2)
    dtypes = [torch.float32] + ([torch.bfloat16] if device.type == "cuda" else [])
    print(f"\n[0] fused SDPA at every attention call site (Hq {cfg.num_attention_heads}, Hkv "
          f"{cfg.num_key_value_heads}, D {cfg.head_dim})")
    for dtype in dtypes:
        gen = torch.Generator(device=device).manual_seed(0)
        hq, hkv, d, bs = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, 16
        q = torch.randn(300, hq, d, generator=gen, device=device).to(dtype)
        k = torch.randn(300, hkv, d, generator=gen, device=device).to(dtype)
        pool = KVPool(1, 24, bs, hkv, d, dtype=dtype, device=device)
        pool.k[0].normal_(generator=gen)
        pool.v[0].normal_(generator=gen)
        table = torch.randperm(24, generator=gen, device=device)[:19]
        model = DecoderLM.random(cfg, seed=0, dtype=dtype, device=device)
        sites = {
            "causal_attention (full prefill)": lambda: causal_attention(q, k, k),  # noqa: B023 - run in this iteration
            "paged_attention_torch, offset 0": lambda: paged_attention_torch(q, pool.k[0], pool.v[0], table, 0),  # noqa: B023 - run in this iteration
            "paged_attention_torch, offset 236": lambda: paged_attention_torch(q[:64], pool.k[0], pool.v[0], table,  # noqa: B023 - run in this iteration
                                                                               236),
            "stage 6 paged_attention (reference)": lambda: paged_attention(q[:64], pool, 0, table, 236),  # noqa: B023 - run in this iteration
            "paged_decode_attention_torch": lambda: paged_decode_attention_torch(
                q[:3], pool.k[0], pool.v[0], table[None].expand(3, -1), torch.tensor([5, 300, 77], device=device)),  # noqa: B023 - run in this iteration
            "model full prefill": lambda: full_prefill(model, list(range(200))),  # noqa: B023 - run in this iteration
            "cached prefill (PagedPrefiller)": lambda: PagedPrefiller(model, 40, bs).generate(list(range(100)), 2),  # noqa: B023 - run in this iteration
            "serving run (prefill + batched decode)": lambda: serve(model, W.shared_prefix(  # noqa: B023 - run in this iteration
                num_groups=1, prompts_per_group=3, prefix_len=64, question_len=4, output_len=3, vocab=cfg.vocab_size),
                num_blocks=40),
        }
        for name, run in sites.items():
            try:
                with fused_attention_only(), torch.no_grad():
                    run()
                status = "ok"
            except RuntimeError as exc:
                status = expect(False, f"fused SDPA {dtype} {name}: {str(exc).splitlines()[0][:120]}")
            print(f"{str(dtype).removeprefix('torch.'):>9} {name:<42} {status}")


def kernel_check(device: torch.device, quick: bool) -> None:
    hq, hkv, d, block = (4, 2, 16, 4) if quick else (14, 2, 64, 16)
    cases = [(8, 24), (5, 0)] if quick else [(64, 4096), (64, 1024), (512, 0), (1, 4095)]
    dtypes = [torch.float32] if device.type != "cuda" else [torch.float32, torch.bfloat16]
    reps = 1 if quick else 20
    print(f"\n[1] paged attention kernel: Triton vs torch reference (Hq {hq}, Hkv {hkv}, D {d}, block {block}, "
          f"shuffled table)")
    print(f"{'dtype':>9} {'new T':>6} {'offset':>7} {'max|diff|':>10} {'torch ms':>9} {'triton ms':>10} {'check':>6}")
    gen = torch.Generator(device=device).manual_seed(0)
    for dtype in dtypes:
        tol = 1e-4 if dtype == torch.float32 else 2e-2
        for t, offset in cases:
            n = offset + t
            blocks = -(-n // block)
            num_blocks = blocks + 8
            table = torch.randperm(num_blocks, generator=gen, device=device)[:blocks]
            kc = torch.randn(num_blocks, block, hkv, d, generator=gen, device=device).to(dtype)
            vc = torch.randn(num_blocks, block, hkv, d, generator=gen, device=device).to(dtype)
            q = torch.randn(t, hq, d, generator=gen, device=device).to(dtype)
            t_ref, ref = bench(lambda: paged_attention_torch(q, kc, vc, table, offset), device, reps)  # noqa: B023 - run in this iteration
            t_tri, got = bench(lambda: paged_attention_triton(q, kc, vc, table, offset), device, reps)  # noqa: B023 - run in this iteration
            exact = paged_attention_torch(q.float(), kc.float(), vc.float(), table, offset)
            diff = float((got.float() - exact).abs().max())
            status = expect(diff <= tol, f"kernel {dtype} T={t} offset={offset}: diff {diff:.2e} > {tol}")
            print(f"{str(dtype).removeprefix('torch.'):>9} {t:>6} {offset:>7} {diff:>10.2e} {t_ref * 1e3:>9.3f} "
                  f"{t_tri * 1e3:>10.3f} {status:>6}")


def end_to_end(device: torch.device, quick: bool) -> None:
    cfg = ModelConfig.tiny() if quick else ModelConfig.qwen2_5_0_5b()
    prefixes = [32] if quick else [1024, 4096]
    question, block = (8, 4) if quick else (64, 16)
    reps = 1 if quick else 5
    print(f"\n[2] end to end: {cfg.num_parameters() / 1e6:.0f}M-parameter model "
          f"(hidden {cfg.hidden_size}, {cfg.num_hidden_layers} layers, {cfg.num_attention_heads}/"
          f"{cfg.num_key_value_heads} heads, vocab {cfg.vocab_size}), random weights; question {question} tokens")
    attention = pool_attention(paged_attention_triton)
    dtypes = [torch.float32] + ([torch.bfloat16] if device.type == "cuda" else [])
    print(f"{'dtype':>9} {'prefix':>7} {'hit':>6} {'max|diff|':>10} {'argmax':>7} {'full ms':>9} {'cached ms':>10} "
          f"{'speedup':>8} {'predicted':>10} {'check':>6}")
    for dtype in dtypes:
        model = DecoderLM.random(cfg, seed=0, dtype=dtype, device=device)
        for prefix in prefixes:
            rng = random.Random(prefix)
            system = [rng.randrange(cfg.vocab_size) for _ in range(prefix)]
            questions = [[rng.randrange(cfg.vocab_size) for _ in range(question)] for _ in range(reps + 3)]
            num_blocks = -(-(prefix + question) // block) + (reps + 4) * (-(-question // block) + 1)
            engine = PagedPrefiller(model, num_blocks, block, attention=attention)
            engine.prefill(system + questions[0])  # caches the system prompt
            fresh = iter(questions[1:])  # every cached run gets a new question, so only the prefix hits

            def cached_run():
                return engine.prefill(system + next(fresh))  # noqa: B023 - run in this iteration

            prompt = system + questions[-1]
            t_full, ref = bench(functools.partial(full_prefill, model, prompt), device, reps)  # bound now: `model` is deleted later
            t_cached, _ = bench(cached_run, device, reps)
            logits, ledger = engine.prefill(prompt)
            diff = float((logits.float() - ref.float()).abs().max())
            same_argmax = int(logits.argmax()) == int(ref.argmax())
            if dtype == torch.float32:
                tol = 1e-4 if device.type == "cpu" else 2e-3
                status = expect(diff <= tol and same_argmax and ledger["hit_tokens"] == prefix,
                                f"end to end {dtype} prefix {prefix}: diff {diff:.2e}, argmax {same_argmax}, {ledger}")
            else:
                status = "info"  # bf16 rounding differs between two attention paths; fp32 is the check
            print(f"{str(dtype).removeprefix('torch.'):>9} {prefix:>7} {ledger['hit_tokens']:>6} {diff:>10.2e} "
                  f"{str(same_argmax):>7} {t_full * 1e3:>9.2f} {t_cached * 1e3:>10.2f} {t_full / t_cached:>7.1f}x "
                  f"{predicted_speedup(cfg, prefix, question):>9.1f}x {status:>6}")
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()


def serving_check(device: torch.device, quick: bool) -> None:
    """The serving loop, cache on vs off: identical tokens (fp32), then latencies (bf16 on CUDA)."""
    cfg = ModelConfig.tiny() if quick else ModelConfig.qwen2_5_0_5b()
    vocab = cfg.vocab_size
    print(f"\n[3] serving loop: {cfg.num_parameters() / 1e6:.0f}M-parameter model, random weights, greedy decoding")
    # fp32: the cache must not change a single generated token.
    model = DecoderLM.random(cfg, seed=0, dtype=torch.float32, device=device)
    small = W.shared_prefix(num_groups=2, prompts_per_group=4, prefix_len=48 if quick else 512, question_len=(4, 24),
                            output_len=4 if quick else 8, rate=1000.0, vocab=vocab, seed=1)
    on = serve(model, small, num_blocks=64 if quick else 256, cache=True)
    off = serve(model, small, num_blocks=64 if quick else 256, cache=False)
    differ = compare_outputs(on, off)
    status = expect(not differ, f"serving fp32: generated tokens differ with the cache on for {differ}")
    print(f"fp32, {len(small)} requests: hit rate {summarize_run(on)['hit_rate']:.0%}; generated tokens identical "
          f"on/off: {not differ} {status}")
    del model
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = DecoderLM.random(cfg, seed=0, dtype=dtype, device=device)
    warm_up(model)
    workloads = {
        "shared_prefix": W.shared_prefix(num_groups=4, prompts_per_group=8, prefix_len=64 if quick else 2048,
                                         question_len=(8, 32) if quick else (32, 128), output_len=4 if quick else 32,
                                         rate=20.0 if quick else 40.0, vocab=vocab),
        "unique": W.unique(num_requests=32, prompt_len=(32, 96) if quick else (1024, 3072),
                           output_len=4 if quick else 32, rate=20.0 if quick else 40.0, vocab=vocab),
    }
    blocks = 160 if quick else 1024
    print(f"{str(dtype).removeprefix('torch.')}, pool {blocks} blocks of 16, max batch 8; ratios on/off (TTFT, TPOT: "
          "below 1 = faster with the cache)")
    print(f"{'workload':>14} {'hit':>5} {'TTFT p50 on/off ms':>20} {'TTFT p90 on/off ms':>20} "
          f"{'TPOT p50 on/off ms':>20} "
          f"{'req/s on/off':>14} {'TTFT p50':>9} {'TPOT p50':>9}")
    for name, requests in workloads.items():
        rows = {c: summarize_run(serve(model, requests, num_blocks=blocks, cache=c)) for c in (True, False)}
        a, b = rows[True], rows[False]
        print(f"{name:>14} {a['hit_rate']:>5.0%} {a['ttft_p50'] * 1e3:>9.1f}/{b['ttft_p50'] * 1e3:<10.1f} "
              f"{a['ttft_p90'] * 1e3:>9.1f}/{b['ttft_p90'] * 1e3:<10.1f} "
              f"{a['tpot_p50'] * 1e3:>9.2f}/{b['tpot_p50'] * 1e3:<10.2f} "
              f"{a['requests_per_s']:>6.1f}/{b['requests_per_s']:<7.1f} {a['ttft_p50'] / b['ttft_p50']:>9.2f} "
              f"{a['tpot_p50'] / b['tpot_p50']:>9.2f}")
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes; runs on CPU via the Triton interpreter")
    args = parser.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type != "cuda" and not args.quick:
        print("no CUDA device: run with --quick (Triton interpreter, tiny shapes) or on a GPU machine")
        return 2
    print(f"device: {describe_device(device)}; triton interpreter: {os.environ.get('TRITON_INTERPRET', '0')}")
    start = time.perf_counter()
    fused_check(device, args.quick)
    kernel_check(device, args.quick)
    end_to_end(device, args.quick)
    serving_check(device, args.quick)
    print(f"\n{'all checks passed' if not FAILURES else 'FAILED: ' + '; '.join(FAILURES)} "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    raise SystemExit(main())
