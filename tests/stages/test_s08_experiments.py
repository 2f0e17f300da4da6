"""Stage 8's given experiment modules: weak keys collide and serve wrong KV, SHA-256 keys and token
checks stop it, salts isolate tenants, and the timing harness's statistics are right.

No test here asserts anything about time: the engine tests check what the engine *served* (its
ledger, its logits); the statistics are tested on synthetic samples.
"""
from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from kernels.model import DecoderLM, ModelConfig
from solutions.s02_block_hash import chain_keys, hash_block
from solutions.s03_block_pool import BlockPool
from solutions.s08_cache_attacks import birthday_search, tenant_extra_keys
from tests.support.machine import scaled
from workbook.collision_demo import colliding_prompts, collision_demo
from workbook.tenant_isolation import TenantPool, make_tenant_workload, replay
from workbook.timing_attack import SharedEngine, TimingSamples, effect_size, load_samples, recover_secret, roc_auc, sample_hit_miss, save_samples
from workbook.weak_keys import (
    TokenCheckedPool,
    WeakKeyPool,
    expected_birthday_tries,
    first_block_key,
    random_blocks,
    second_preimage_search,
    truncate_key,
    verification_cost,
    weak_chain_keys,
)


@pytest.fixture(scope="module")
def model() -> DecoderLM:
    return DecoderLM.random(ModelConfig.tiny(), seed=0)


@pytest.fixture(scope="module")
def pair16():
    """Two different first blocks whose keys agree on 16 bits (found by stage 8's birthday search)."""
    earlier, later, _ = birthday_search(first_block_key(16), random_blocks(0, 16))
    return earlier, later


# -- truncated keys -------------------------------------------------------------------------------
@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32), st.integers(1, 256))
@settings(max_examples=200, deadline=None)
def test_truncate_key_collides_exactly_when_top_bits_agree(a, b, bits):
    top = lambda k: int.from_bytes(k, "big") >> (256 - bits)  # noqa: E731
    assert len(truncate_key(a, bits)) == (bits + 7) // 8
    assert (truncate_key(a, bits) == truncate_key(b, bits)) == (top(a) == top(b))


def test_truncate_key_rejects_bad_widths():
    for bits in (0, 257, True, 8.0):
        with pytest.raises(ValueError):
            truncate_key(b"\0" * 32, bits)


def test_weak_chain_keys_full_width_are_stage_2_keys():
    tokens = list(range(40))
    assert weak_chain_keys(tokens, 8, None) == chain_keys(tokens, 8)
    assert weak_chain_keys(tokens, 8, None, [("salt", "a")]) == chain_keys(tokens, 8, [("salt", "a")])
    assert [len(k) for k in weak_chain_keys(tokens, 8, 12)] == [2] * 5


def test_birthday_pair_is_two_blocks_with_one_key(pair16):
    earlier, later = pair16
    assert earlier != later and len(earlier) == len(later) == 16
    assert first_block_key(16)(earlier) == first_block_key(16)(later)
    assert hash_block(None, earlier) != hash_block(None, later)  # the full keys differ, of course


def test_birthday_search_cost_follows_the_square_root_law():
    # mean tries over 30 searches at 12 bits is within 25% of sqrt(pi/2 * 2**12) ~ 80
    tries = [birthday_search(first_block_key(12), random_blocks(seed, 4))[2] for seed in range(30)]
    assert 0.75 * expected_birthday_tries(12) < sum(tries) / len(tries) < 1.25 * expected_birthday_tries(12)


def test_second_preimage_finds_a_block_with_the_victims_key():
    victim = tuple(range(4))
    found, tries = second_preimage_search(first_block_key(8), victim, random_blocks(3, 4))
    assert found is not None and found != victim and tries > 0
    assert first_block_key(8)(found) == first_block_key(8)(victim)


# -- the collision on the engine ------------------------------------------------------------------
def test_collision_serves_the_other_prompts_kv(model, pair16):
    prompts = colliding_prompts(pair16)
    assert prompts[0] != prompts[1] and prompts[0][16:] == prompts[1][16:]
    weak = collision_demo(model, prompts, WeakKeyPool(64, 16, key_bits=16))
    assert weak.hit_tokens == 64  # every full block "hit": the collision carries down the chain
    assert weak.wrong_kv and weak.max_abs_diff > 1e-2


@pytest.mark.parametrize("pool", [lambda: WeakKeyPool(64, 16, key_bits=None), lambda: BlockPool(64, 16),
                                  lambda: TokenCheckedPool(64, 16, key_bits=16)],
                         ids=["sha256", "stage3", "token_check"])
def test_sha256_keys_and_token_checks_stop_the_collision(model, pair16, pool):
    outcome = collision_demo(model, colliding_prompts(pair16), pool())
    assert outcome.hit_tokens == 0 and not outcome.wrong_kv and outcome.same_argmax
    assert outcome.max_abs_diff <= 1e-4


def test_token_check_counts_the_rejection_and_keeps_honest_hits(model, pair16):
    pool = TokenCheckedPool(64, 16, key_bits=16)
    first, second = colliding_prompts(pair16)
    for i, prompt in enumerate([first, second, first]):
        admission = pool.admit(f"r{i}", prompt)
        pool.commit(f"r{i}")
        pool.release(f"r{i}")
        pool.check_invariants()
    assert pool.rejected == 1
    assert admission.hit_tokens == 64  # the first prompt still hits its own blocks


@given(st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=12), min_size=1, max_size=25),
       st.integers(1, 3), st.integers(5, 12))
@settings(max_examples=60, deadline=None)
def test_token_checked_hits_hold_exactly_the_requests_prefix(prompts, bits, num_blocks):
    """With 1-3 bit keys, collisions are everywhere; every verified hit must still hold KV computed
    for the request's own prefix (a shadow records which prefix each block's content was made for)."""
    pool = TokenCheckedPool(num_blocks, 2, key_bits=bits)
    made_for: dict[int, tuple[int, ...]] = {}
    for i, tokens in enumerate(prompts):
        try:
            admission = pool.admit(f"r{i}", tokens)
        except Exception:  # PoolFullError: nothing changed
            continue
        for j, block_id in enumerate(admission.block_table):
            if j < admission.hit_blocks:
                assert made_for[block_id] == tuple(tokens[: (j + 1) * 2])
            else:
                made_for[block_id] = tuple(tokens[: (j + 1) * 2])
        pool.commit(f"r{i}")
        pool.release(f"r{i}")
    pool.check_invariants()


def test_weak_pool_without_checks_does_serve_wrong_prefixes():
    """The property above fails without the token check (so that test has teeth)."""
    rng = random.Random(5)
    pool = WeakKeyPool(64, 2, key_bits=2)
    made_for: dict[int, tuple[int, ...]] = {}
    wrong = 0
    for i in range(40):
        tokens = [rng.randrange(3) for _ in range(rng.randint(3, 9))]
        admission = pool.admit(f"r{i}", tokens)
        for j, block_id in enumerate(admission.block_table):
            if j < admission.hit_blocks:
                wrong += made_for[block_id] != tuple(tokens[: (j + 1) * 2])
            else:
                made_for[block_id] = tuple(tokens[: (j + 1) * 2])
        pool.commit(f"r{i}")
        pool.release(f"r{i}")
    assert wrong > 0


def test_verification_cost_reports_positive_numbers():
    cost = verification_cost(num_prompts=4, blocks_per_prompt=4, repeat=1)
    assert cost["plain"] > 0 and cost["checked"] > 0 and cost["stored_bytes_per_block"] == 4 * 16 + 16


# -- tenants ----------------------------------------------------------------------------------------
def _hits(pool: TenantPool, sends) -> list[int]:
    out = []
    for i, (tenant, tokens) in enumerate(sends):
        with pool.acting_for(tenant):
            admission = pool.admit(f"r{len(pool.requests)}-{i}-{tenant}", tokens)
        rid = admission.request_id
        pool.commit(rid)
        pool.release(rid)
        out.append(admission.hit_tokens)
    return out


def test_salted_pool_isolates_tenants_and_keeps_their_own_hits():
    prompt = list(range(33))
    salted = TenantPool(64, 8, extra_keys_for=tenant_extra_keys)
    assert _hits(salted, [("alice", prompt), ("bob", prompt), ("alice", prompt), ("bob", prompt)]) == [0, 0, 32, 32]
    shared = TenantPool(64, 8)
    assert _hits(shared, [("alice", prompt), ("bob", prompt)]) == [0, 32]


def test_salted_pool_refuses_requests_without_a_tenant():
    pool = TenantPool(8, 4, extra_keys_for=tenant_extra_keys)
    with pytest.raises(RuntimeError):
        pool.admit("r0", [1, 2, 3, 4, 5])
    assert pool.requests == {} and pool.num_free == 8


def test_remembered_keys_are_the_computed_ones_handed_out_as_copies():
    remembering = TenantPool(64, 8, extra_keys_for=tenant_extra_keys, remember_keys=True)
    plain = TenantPool(64, 8, extra_keys_for=tenant_extra_keys)
    salt = tenant_extra_keys("alice", None)
    for tokens, extra in [(list(range(20)), None), (list(range(20)), salt), (list(range(16)) + [99], salt),
                          (list(range(5)), None)]:
        first = remembering.keys_of(tokens, extra)
        assert first == remembering.keys_of(tokens, extra) == plain.keys_of(tokens, extra)
        first.append(b"changed by the caller")
        assert remembering.keys_of(tokens, extra) == plain.keys_of(tokens, extra)
    # one entry per (full blocks, extra keys): the tail is not part of the key
    assert len(remembering._known_keys) == 3


def test_isolation_costs_first_uses_and_memory_on_a_workload():
    kwargs = dict(num_tenants=4, shared_prompts=2, private_prompts=2, num_requests=300, prompt_len=64)
    workload = make_tenant_workload(1, **kwargs)
    assert workload == make_tenant_workload(1, **kwargs)
    shared = replay(workload, extra_keys_for=None, num_blocks=1024, block_size=16)
    salted = replay(workload, extra_keys_for=tenant_extra_keys, num_blocks=1024, block_size=16)
    assert salted.private_hit_rate == shared.private_hit_rate  # nobody shared private prompts anyway
    assert salted.shared_hit_rate < shared.shared_hit_rate
    assert shared.distinct_blocks == (2 + 4 * 2) * 4  # 4 blocks per prompt, each stored once
    assert salted.distinct_blocks == (2 * 4 + 4 * 2) * 4  # shared prompts stored once per tenant
    tight = replay(workload, extra_keys_for=tenant_extra_keys, num_blocks=24, block_size=16)
    assert tight.hit_rate < salted.hit_rate


# -- the timing harness (statistics on synthetic samples; the engine by its ledger) ----------------
def test_roc_auc_is_the_probability_that_a_hit_is_faster():
    rng = random.Random(3)
    hit = [round(rng.gauss(2, 1), 1) for _ in range(40)]
    miss = [round(rng.gauss(3, 1), 1) for _ in range(30)]
    pairs = [(h < m) + 0.5 * (h == m) for h, m in itertools.product(hit, miss)]
    assert roc_auc(hit, miss) == pytest.approx(sum(pairs) / len(pairs))
    assert roc_auc([1.0, 2.0], [3.0, 4.0]) == 1.0 and roc_auc([3.0, 4.0], [1.0, 2.0]) == 0.0
    assert roc_auc([1.0, 2.0], [1.0, 2.0]) == 0.5


def test_effect_size_of_separated_samples():
    e = effect_size([0.002, 0.0021, 0.0019], [0.006, 0.0061, 0.0059])
    assert e["median_hit_ms"] == pytest.approx(2.0) and e["median_miss_ms"] == pytest.approx(6.0)
    assert e["ratio"] == pytest.approx(3.0) and e["auc"] == 1.0 and e["robust_d"] > 10


def test_samples_round_trip_through_json(tmp_path):
    samples = {"unsalted/64": TimingSamples([0.001, 0.002], [0.005], {"shared_len": 64, "salted": False})}
    path = save_samples(tmp_path / "s.json", samples)
    assert load_samples(path) == samples
    (tmp_path / "bad.json").write_text('{"samples": {}}')
    with pytest.raises(ValueError):
        load_samples(tmp_path / "bad.json")


def test_shared_engine_hits_across_tenants_only_without_salts(model):
    prompt = list(range(40))
    shared = SharedEngine(model, num_blocks=64)
    shared.submit(prompt, tenant="victim")
    assert shared.submit(prompt[:32] + [7] * 8, tenant="attacker").hit_tokens == 32
    salted = SharedEngine(model, num_blocks=64, extra_keys_for=tenant_extra_keys)
    first = salted.submit(prompt, tenant="victim")
    assert salted.submit(prompt, tenant="attacker").hit_tokens == 0
    again = salted.submit(prompt, tenant="victim")
    assert again.hit_tokens == 32 and again.first_token == first.first_token


def test_sample_hit_miss_labels_by_what_was_shared(model):
    engine = SharedEngine(model, num_blocks=128)
    s = sample_hit_miss(engine, n=3, prompt_len=40, shared_len=20)
    assert len(s.hit) == len(s.miss) == 3 and all(t > 0 for t in s.hit + s.miss)
    assert s.meta["hit_tokens"] == [16, 16, 16]  # 20 shared tokens: one full block of 16
    assert torch.get_num_threads() >= 1  # quiet() restored the thread count
    salted = SharedEngine(model, num_blocks=128, extra_keys_for=tenant_extra_keys)
    assert sample_hit_miss(salted, n=2, prompt_len=40, shared_len=32).meta["hit_tokens"] == [0, 0]


def test_recover_secret_bookkeeping(model):
    engine = SharedEngine(model, num_blocks=256)
    r = recover_secret(engine, num_candidates=4, secret_len=16, trials=3, guess=lambda ttfts: 0)
    assert r.trials == 3 and 0 <= r.correct <= 3 and len(r.secret) == 3 and len(r.other) == 9
    assert r.chance == 0.25 and 0 <= r.p_value <= 1 and 0 <= r.ci95[0] <= r.accuracy <= r.ci95[1] <= 1
    assert r.p_value == pytest.approx(stats.binomtest(r.correct, 3, 0.25, alternative="greater").pvalue)


@pytest.mark.slow  # runs every side-channel experiment
def test_bench_side_channel_quick_runs_every_experiment(tmp_path):
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_side_channel.py"), "--quick",
                           "--record", str(tmp_path / "samples.json")], cwd=root, capture_output=True, text=True,
                          timeout=scaled(180))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "WeakKeyPool(16 bits)" in out and "TokenCheckedPool(16 bits)" in out
    assert "[collisions:" in out and "[timing:" in out and "[isolation:" in out
    recorded = load_samples(tmp_path / "samples.json")
    assert {"shared/sweep/64", "salted/sweep/64", "shared/calibration/64"} <= set(recorded)
