"""Stage 8's experiments end to end, with the numbers the notebook shows: how large and how repeatable
each effect is on this machine, and how long each experiment takes.

1. **Collisions**: birthday-search cost vs key width (measured mean tries vs sqrt(pi/2 * 2**bits)),
   a second preimage for comparison, the collision on stage 6's engine with truncated keys, full
   SHA-256 keys and token checks, and what keys and checks cost (baseline: Python's ``hash``, and
   the same admission without the check).
2. **Timing side channel** on stage 6's engine (tiny model): hit vs miss TTFT as the shared prefix
   grows (ROC AUC, medians, robust effect size, one-sided KS), unsalted vs salted (the baseline:
   what chance looks like); a threshold calibrated on half the samples and scored on the other half;
   recovering a secret among candidates vs chance; the wall clock vs the CPU clock.
3. **Isolation's cost** on a multi-tenant workload: hit rate and memory, shared vs salted.

    python benchmarks/bench_side_channel.py                 # about a minute on 2 busy cores
    python benchmarks/bench_side_channel.py --record s.json # also save every TTFT sample as JSON
    python benchmarks/bench_side_channel.py --quick         # smoke test, seconds
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.s03_block_pool import BlockPool  # noqa: E402
from solutions.s08_cache_attacks import accuracy, birthday_search, detect_sharing, fit_threshold, tenant_extra_keys  # noqa: E402
from workbook.collision_demo import colliding_prompts, collision_demo  # noqa: E402
from workbook.tenant_isolation import make_tenant_workload, replay  # noqa: E402
from workbook.timing_attack import SharedEngine, effect_size, prefix_sweep, recover_secret, sample_hit_miss, save_samples  # noqa: E402
from workbook.weak_keys import (  # noqa: E402
    TokenCheckedPool,
    WeakKeyPool,
    expected_birthday_tries,
    first_block_key,
    key_costs,
    random_blocks,
    second_preimage_search,
    verification_cost,
)


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 90 - len(title)))


def collisions(quick: bool) -> None:
    section("1. collisions with truncated keys")
    searches = 5 if quick else 40
    print(f"{'bits':>4} {'mean tries':>10} {'expected':>9} {'ms/search':>9}   ({searches} seeded searches each)")
    for bits in (8, 12, 16) if quick else (8, 12, 16, 20, 24):
        start = time.perf_counter()
        tries = [birthday_search(first_block_key(bits), random_blocks(seed, 16))[2] for seed in range(searches)]
        ms = (time.perf_counter() - start) / searches * 1e3
        print(f"{bits:>4} {statistics.mean(tries):>10.0f} {expected_birthday_tries(bits):>9.0f} {ms:>9.2f}")
    for bits in (8,) if quick else (12, 16):
        start = time.perf_counter()
        _, tries = second_preimage_search(first_block_key(bits), tuple(range(16)), random_blocks(99, 16))
        print(f"second preimage of one victim block at {bits} bits: {tries} tries, "
              f"{time.perf_counter() - start:.2f} s (expected about 2**{bits} = {2 ** bits})")
    costs = key_costs(num_blocks=16 if quick else 256, repeat=1 if quick else 7)
    rate = 1e6 / costs["sha256"]  # keys per millisecond on one core
    for bits in (32, 64, 128, 256):
        print(f"birthday search at {bits:>3} bits: ~{expected_birthday_tries(bits):.1e} tries = "
              f"~{expected_birthday_tries(bits) / rate / 1e3 / 3600:.1e} core-hours at this machine's SHA-256 rate")

    from kernels.model import DecoderLM, ModelConfig

    model = DecoderLM.random(ModelConfig.tiny(), seed=0)
    earlier, later, tries = birthday_search(first_block_key(16), random_blocks(0, 16))
    prompts = colliding_prompts((earlier, later))
    print(f"\ncolliding pair at 16 bits after {tries} tries; prompts of {len(prompts[0])} tokens that differ "
          f"in block 0 only")
    print(f"{'pool':<26} {'hit tokens':>10} {'max |dlogits|':>13} {'same token':>10} {'wrong KV':>8}")
    for pool in (WeakKeyPool(64, 16, key_bits=16), WeakKeyPool(64, 16, key_bits=None), BlockPool(64, 16),
                 TokenCheckedPool(64, 16, key_bits=16)):
        o = collision_demo(model, prompts, pool)
        print(f"{o.pool:<26} {o.hit_tokens:>10} {o.max_abs_diff:>13.2e} {str(o.same_argmax):>10} {str(o.wrong_kv):>8}")

    print("\nkeying cost, ns per 16-token block: " + ", ".join(f"{k} {v:.0f}" for k, v in costs.items())
          + f"  (SHA-256 / Python hash = {costs['sha256'] / costs['python_hash']:.1f}x)")
    v = verification_cost(num_prompts=4 if quick else 64, repeat=1 if quick else 7)
    print(f"admitting a fully cached 16-block prompt: {v['plain']:.1f} us plain, {v['checked']:.1f} us with token "
          f"checks ({v['checked'] / v['plain']:.2f}x; {v['check_us_per_hit_block']:.2f} us per hit block); "
          f"{v['stored_bytes_per_block']} bytes stored per block")


def timing(quick: bool, record: Path | None) -> None:
    section("2. the timing side channel (tiny model, CPU clock of the serving thread)")
    n, trials = (6, 6) if quick else (25, 40)
    lengths = [0, 8, 16, 64] if quick else [0, 8, 16, 32, 64, 128]
    recorded = {}
    engines = {"shared": SharedEngine(), "salted": SharedEngine(extra_keys_for=tenant_extra_keys)}
    for engine in engines.values():
        engine.warm_up(max(lengths) + 16)
    for name, engine in engines.items():
        start = time.perf_counter()
        points = prefix_sweep(engine, lengths, n=n)
        print(f"\n{name}: {n} hit + {n} miss samples per length, prompts of {max(lengths) + 16} tokens "
              f"({time.perf_counter() - start:.1f} s)")
        print(f"{'shared':>6} {'served':>6} {'hit ms':>7} {'miss ms':>7} {'ratio':>6} {'AUC':>5} {'rob. d':>6} "
              f"{'KS D':>5} {'KS p':>8} {'detected':>8}")
        for p in points:
            e = effect_size(p.samples.hit, p.samples.miss)
            d, pv, detected = detect_sharing(p.samples.hit, p.samples.miss)
            print(f"{p.shared_len:>6} {p.served_tokens:>6} {e['median_hit_ms']:>7.2f} {e['median_miss_ms']:>7.2f} "
                  f"{e['ratio']:>6.2f} {e['auc']:>5.2f} {e['robust_d']:>6.1f} {d:>5.2f} {pv:>8.1e} {str(detected):>8}")
            recorded[f"{name}/sweep/{p.shared_len}"] = p.samples

    print("\nthreshold calibrated on half the samples, accuracy on the other half (shared prefix 64 of 80 tokens):")
    for name, engine in engines.items():
        s = sample_hit_miss(engine, n=2 * n, prompt_len=80, shared_len=64, seed=7)
        recorded[f"{name}/calibration/64"] = s
        t = fit_threshold(s.hit[:n], s.miss[:n])
        print(f"  {name}: threshold {t * 1e3:.3f} ms, held-out accuracy {accuracy(t, s.hit[n:], s.miss[n:]):.2f} "
              f"(chance 0.5, {2 * n} held-out samples)")

    print("\nrecovering a secret: the victim's prompt starts with one of 8 candidate 128-token secrets")
    for name, engine in engines.items():
        start = time.perf_counter()
        r = recover_secret(engine, num_candidates=8, secret_len=128, trials=trials)
        print(f"  {name}: {r.correct}/{r.trials} right = {r.accuracy:.2f} (chance {r.chance:.3f}; 95% CI "
              f"{r.ci95[0]:.2f}-{r.ci95[1]:.2f}; one-sided binomial p {r.p_value:.1e}) "
              f"[{time.perf_counter() - start:.1f} s]")

    print("\nthe same hit/miss test on the wall clock (what a remote client sees, plus this machine's load):")
    wall = SharedEngine(clock="wall")
    wall.warm_up(80)
    for shared_len in (16, 64):
        s = sample_hit_miss(wall, n=n, prompt_len=80, shared_len=shared_len, seed=3)
        recorded[f"shared-wall/{shared_len}"] = s
        e = effect_size(s.hit, s.miss)
        print(f"  shared {shared_len:>3} of 80: AUC {e['auc']:.2f}, hit {e['median_hit_ms']:.2f} ms vs miss "
              f"{e['median_miss_ms']:.2f} ms, robust d {e['robust_d']:.1f}")
    if record is not None:
        print(f"\nsamples recorded to {save_samples(record, recorded)}")


def isolation(quick: bool) -> None:
    section("3. the cost of isolation on a multi-tenant workload")
    workload = make_tenant_workload(0, num_requests=300 if quick else 2000)
    print("8 tenants, 4 shared + 4 private prompts per tenant (512 tokens), half the requests shared; "
          "hit rate = tokens served from cache / prompt tokens")
    print(f"{'blocks':>6} {'shared: hit':>11} {'salted: hit':>11} {'lost':>6} {'shared-prompt hits':>19} "
          f"{'blocks to keep all':>19}")
    for blocks in (4096, 1024, 512):
        a = replay(workload, extra_keys_for=None, num_blocks=blocks)
        b = replay(workload, extra_keys_for=tenant_extra_keys, num_blocks=blocks)
        print(f"{blocks:>6} {a.hit_rate:>11.3f} {b.hit_rate:>11.3f} {a.hit_rate - b.hit_rate:>6.3f} "
              f"{a.shared_hit_rate:>8.3f} -> {b.shared_hit_rate:.3f} {a.distinct_blocks:>8} -> {b.distinct_blocks}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--record", type=Path, help="save every TTFT sample to this JSON file")
    args = parser.parse_args()
    for name, step in (("collisions", lambda: collisions(args.quick)), ("timing", lambda: timing(args.quick, args.record)),
                       ("isolation", lambda: isolation(args.quick))):
        start = time.perf_counter()
        step()
        print(f"[{name}: {time.perf_counter() - start:.1f} s]")


if __name__ == "__main__":
    main()
