"""Tests of the stage-6 reference: paged prefill with a cached prefix equals a full prefill."""
from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.flops import prefill_flops
from kernels.kv_pool import KVPool
from kernels.model import DecoderLM, ModelConfig
from kernels.paged_attention import causal_attention, paged_attention_torch
from solutions.s03_block_pool import Block, BlockPool
from solutions.s04_eviction import EvictionPool
from solutions.s06_paged_prefill import (
    PagedPrefiller,
    full_prefill,
    generate_full,
    paged_attention,
    pool_attention,
    quiz,
    slot_mapping,
    suffix_positions,
    write_kv,
)

ATOL = 1e-4


@pytest.fixture(scope="module")
def model() -> DecoderLM:
    return DecoderLM.random(ModelConfig.tiny(), seed=0)


class RandomFreeQueue:
    """A free queue that hands out blocks in a seeded random order: block tables come out shuffled."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.blocks: list[Block] = []

    def append(self, block: Block) -> None:
        self.blocks.append(block)

    def popleft(self) -> Block:
        return self.blocks.pop(self.rng.randrange(len(self.blocks)))

    def remove(self, block: Block) -> None:
        self.blocks.remove(block)

    def __len__(self) -> int:
        return len(self.blocks)


def tokens(seed: int, n: int, vocab: int = 512) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


# -- TODO 1 --------------------------------------------------------------------------------------
def test_s06_suffix_positions_continue_after_hit():
    assert suffix_positions(8, 13).tolist() == [8, 9, 10, 11, 12]
    assert suffix_positions(0, 2).dtype == torch.long
    for bad in ((3, 3), (-1, 2), (5, 2)):
        with pytest.raises(ValueError):
            suffix_positions(*bad)


# -- TODO 2 --------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_s06_slot_mapping_matches_block_and_row(data):
    block_size = data.draw(st.integers(1, 8))
    table = data.draw(st.lists(st.integers(0, 50), min_size=1, max_size=6, unique=True))
    positions = data.draw(st.lists(st.integers(0, len(table) * block_size - 1), max_size=20))
    got = slot_mapping(table, torch.tensor(positions, dtype=torch.long), block_size).tolist()
    assert got == [table[p // block_size] * block_size + p % block_size for p in positions]


def test_s06_slot_mapping_rejects_positions_beyond_table():
    with pytest.raises(ValueError):
        slot_mapping([3, 1], torch.tensor([8]), 4)


# -- TODO 3 --------------------------------------------------------------------------------------
def test_s06_write_kv_touches_only_its_slots():
    pool = KVPool(2, 4, 4, 2, 8)
    k, v = torch.randn(3, 2, 8), torch.randn(3, 2, 8)
    write_kv(pool, 1, torch.tensor([13, 2, 7]), k, v)
    assert torch.equal(pool.k[1][3, 1], k[0]) and torch.equal(pool.v[1][0, 2], v[1]) and torch.equal(pool.k[1][1, 3], k[2])
    assert pool.k[0].abs().sum() == 0
    assert int((pool.k[1].abs().sum(dim=(2, 3)) > 0).sum()) == 3


def test_s06_write_kv_validates_before_writing():
    pool = KVPool(1, 2, 4, 2, 8)
    with pytest.raises(ValueError):
        write_kv(pool, 0, torch.tensor([1, 99]), torch.ones(2, 2, 8), torch.ones(2, 2, 8))
    with pytest.raises(ValueError):
        write_kv(pool, 0, torch.tensor([1, 2]), torch.ones(2, 2, 8), torch.ones(3, 2, 8))
    assert pool.k[0].abs().sum() == 0 and pool.v[0].abs().sum() == 0


# -- TODO 4 --------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 30), data=st.data(), block_size=st.sampled_from([1, 2, 4, 5]),
       group=st.sampled_from([1, 2]), seed=st.integers(0, 1000))
def test_s06_paged_attention_matches_dense_causal(n, data, block_size, group, seed):
    offset = data.draw(st.integers(0, n - 1))
    gen = torch.Generator().manual_seed(seed)
    hkv, d = 2, 8
    q = torch.randn(n, hkv * group, d, generator=gen)
    k, v = torch.randn(n, hkv, d, generator=gen), torch.randn(n, hkv, d, generator=gen)
    blocks = -(-n // block_size)
    pool = KVPool(1, blocks + 4, block_size, hkv, d)
    pool.k[0].normal_(generator=gen)  # stale content in unused slots must not leak in
    pool.v[0].normal_(generator=gen)
    table = torch.randperm(blocks + 4, generator=gen)[:blocks].tolist()
    write_kv(pool, 0, slot_mapping(table, torch.arange(n), block_size), k, v)
    got = paged_attention(q[offset:], pool, 0, table, offset)
    assert max_diff(got, causal_attention(q, k, v)[offset:]) < 1e-5
    assert max_diff(got, paged_attention_torch(q[offset:], pool.k[0], pool.v[0], torch.tensor(table), offset)) < 1e-5


# -- TODO 5: prefill equals a full prefill -------------------------------------------------------
def test_s06_prefill_cold_prompt_computes_everything(model):
    engine = PagedPrefiller(model, 16, 4)
    prompt = tokens(0, 10)
    logits, ledger = engine.prefill(prompt)
    assert ledger == {"hit_tokens": 0, "computed_tokens": 10}
    assert max_diff(logits, full_prefill(model, prompt)) <= ATOL


def test_s06_prefill_hit_at_block_boundary(model):
    engine = PagedPrefiller(model, 32, 4)
    system = tokens(1, 16)
    engine.prefill(system + [7, 8])
    prompt = system + tokens(2, 6)
    logits, ledger = engine.prefill(prompt)
    assert ledger == {"hit_tokens": 16, "computed_tokens": 6}
    assert max_diff(logits, full_prefill(model, prompt)) <= ATOL


def test_s06_prefill_whole_prompt_cached_still_computes(model):
    engine = PagedPrefiller(model, 32, 4)
    for prompt, hit in ((tokens(3, 16), 12), (tokens(4, 18), 16)):
        engine.prefill(prompt)
        logits, ledger = engine.prefill(prompt)
        assert ledger == {"hit_tokens": hit, "computed_tokens": len(prompt) - hit}
        assert max_diff(logits, full_prefill(model, prompt)) <= ATOL


def test_s06_prefill_shuffled_block_table(model):
    blocks = BlockPool(40, 4, free_queue=RandomFreeQueue(seed=5))
    engine = PagedPrefiller(model, 40, 4, blocks=blocks)
    system = tokens(5, 20)
    engine.prefill(system + [1])
    prompt = system + tokens(6, 9)
    logits, ledger = engine.prefill(prompt, request_id="r", keep=True)
    table = blocks.block_table("r")
    assert ledger["hit_tokens"] == 20
    assert table != sorted(table) and table != list(range(table[0], table[0] + len(table)))
    assert max_diff(logits, full_prefill(model, prompt)) <= ATOL


def test_s06_prefill_requests_sharing_blocks(model):
    engine = PagedPrefiller(model, 64, 4)
    system = tokens(7, 24)
    prompts = [system + tokens(10 + i, 3 + 2 * i) for i in range(4)]
    ledgers = []
    for i, prompt in enumerate(prompts):  # all alive at once: the system blocks are shared
        logits, ledger = engine.prefill(prompt, request_id=f"r{i}", keep=True)
        ledgers.append(ledger)
        assert max_diff(logits, full_prefill(model, prompt)) <= ATOL
    assert [led["hit_tokens"] for led in ledgers] == [0, 24, 24, 24]
    shared = engine.blocks.block_table("r3")[:6]
    assert all(engine.blocks.blocks[b].ref_count == 4 for b in shared)
    assert shared == engine.blocks.block_table("r0")[:6]


def test_s06_prefill_reads_the_pool_not_a_recomputation(model):
    # The cached path must *use* the cached K/V: corrupting it changes the answer.
    engine = PagedPrefiller(model, 32, 4)
    system = tokens(8, 16)
    engine.prefill(system + [3])
    prompt = system + [4, 5]
    clean, _ = engine.prefill(prompt)
    for layer in range(model.config.num_hidden_layers):
        engine.pool.k[layer].mul_(-1.0)
    corrupted, ledger = engine.prefill(prompt)
    assert ledger["hit_tokens"] == 16 and max_diff(clean, corrupted) > 1e-2


def test_s06_prefill_rejects_bad_prompts_without_state_change(model):
    engine = PagedPrefiller(model, 8, 4)
    for bad in ([], [1, 512], [1, -1], [1.0]):
        with pytest.raises(ValueError):
            engine.prefill(bad)
    # Only stage 4's held-reference pseudo-requests (ids starting with '#') may be there.
    assert engine.blocks.num_free == 8 and not [r for r in engine.blocks.requests if not r.startswith("#")]


@pytest.mark.slow  # generates with the model, cache on and off
def test_s06_greedy_generation_is_identical_with_cache(model):
    engine = PagedPrefiller(model, 64, 4)
    prompt = tokens(9, 21)
    cached, ledgers = engine.generate(prompt, 32)
    assert cached == generate_full(model, prompt, 32)
    assert len(set(cached)) > 4  # a model that repeats one token would make this test weak
    assert all(led["computed_tokens"] <= 4 for led in ledgers[1:])  # only the tail block is recomputed


def test_s06_pool_attention_adapter_gives_the_same_logits(model):
    engine = PagedPrefiller(model, 32, 4, attention=pool_attention(paged_attention_torch))
    system = tokens(11, 12)
    engine.prefill(system)
    prompt = system + [1, 2, 3]
    logits, ledger = engine.prefill(prompt)
    assert ledger["hit_tokens"] == 12 and max_diff(logits, full_prefill(model, prompt)) <= ATOL


def test_s06_prefill_on_qwen2_tied_llama_layouts():
    for cfg in (ModelConfig.tiny(tie_word_embeddings=True),
                ModelConfig.tiny(model_type="llama", qkv_bias=False, num_key_value_heads=4)):
        model = DecoderLM.random(cfg, seed=2)
        engine = PagedPrefiller(model, 16, 8)
        prompt = tokens(12, 20)
        engine.prefill(prompt[:17])
        logits, ledger = engine.prefill(prompt)
        assert ledger["hit_tokens"] == 16 and max_diff(logits, full_prefill(model, prompt)) <= ATOL


# -- the device contract: every tensor a TODO creates lives on its inputs' device --------------------
META = torch.device("meta")


def test_s06_suffix_positions_on_the_requested_device():
    out = suffix_positions(3, 7, device="meta")
    assert out.device == META and out.dtype == torch.long and out.shape == (4,)


def test_s06_slot_mapping_stays_on_the_positions_device():
    assert slot_mapping([5, 2, 9], torch.arange(4, 9, device="meta"), 4).device == META
    assert slot_mapping(torch.tensor([3, 1], device="meta"), torch.arange(2, 7, device="meta"), 4).device == META


def test_s06_paged_attention_stays_on_the_device_of_q():
    pool = KVPool(1, 8, 4, 2, 8, device="meta")
    out = paged_attention(torch.empty(3, 4, 8, device="meta"), pool, 0, [3, 0, 5], 6)
    assert out.device == META and out.shape == (3, 4, 8)


def test_s06_prefill_runs_on_the_model_device():
    with torch.device("meta"):
        model = DecoderLM(ModelConfig.tiny())
    engine = PagedPrefiller(model, 16, 4)
    system = tokens(13, 16)
    engine.prefill(system + [1])
    logits, ledger = engine.prefill(system + [2, 3])
    assert logits.device == META and ledger == {"hit_tokens": 16, "computed_tokens": 2}
    assert engine.pool.device == META


# -- stage 4's eviction order ----------------------------------------------------------------------
def test_s06_engine_uses_stage_4_eviction_by_default(model):
    assert isinstance(PagedPrefiller(model, 8, 4).blocks, EvictionPool)


def _second_round_hits(model, blocks) -> list[int]:
    """Three 32-token system prompts in turn, twice, through a pool with room for about two of them."""
    rng = random.Random(3)
    systems = [[rng.randrange(512) for _ in range(32)] for _ in range(3)]
    engine = PagedPrefiller(model, blocks.num_blocks, blocks.block_size, blocks=blocks)
    hits = []
    for _ in range(2):
        for system in systems:
            prompt = system + [rng.randrange(512) for _ in range(3)]
            logits, ledger = engine.prefill(prompt)
            hits.append(ledger["hit_tokens"])
    assert max_diff(logits, full_prefill(model, prompt)) <= ATOL
    return hits[3:]


def test_s06_tail_first_release_keeps_prefixes_in_a_pool_too_small(model):
    """The notebook's claim: with stage 3's queue (head first) a rotation of prompts that does not fit
    hits nothing; with stage 4's order (tail first, LRU) every prompt keeps a prefix that hits."""
    assert _second_round_hits(model, BlockPool(20, 4)) == [0, 0, 0]
    assert all(h > 0 and h % 4 == 0 for h in _second_round_hits(model, EvictionPool(20, 4)))


def test_s06_keyless_blocks_are_reused_before_cached_ones(model):
    # A leaves two cached full blocks and one keyless partial tail; B needs one block. Stage 4's queue
    # hands out the keyless tail, so A still hits both full blocks; stage 3's FIFO evicts A's first block.
    a, b = tokens(14, 10), tokens(15, 3)
    for blocks, expected_hit in ((EvictionPool(3, 4), 8), (BlockPool(3, 4), 0)):
        engine = PagedPrefiller(model, 3, 4, blocks=blocks)
        engine.prefill(a)
        engine.prefill(b)
        logits, ledger = engine.prefill(a)
        assert ledger["hit_tokens"] == expected_hit, type(blocks).__name__
        assert max_diff(logits, full_prefill(model, a)) <= ATOL


# -- the notebook's FLOP reconciliation (the seed article's 97 %) ---------------------------------------
def test_s06_flop_model_reconciles_the_97_percent_figure():
    cfg, p, q = ModelConfig.qwen2_5_0_5b(), 4096, 128
    full, cached = prefill_flops(cfg, p + q), prefill_flops(cfg, q, p)
    saved = {part: 1 - cached[part] / full[part] for part in full}
    assert saved["linear"] == pytest.approx(1 - q / (p + q))  # the token ratio: about 97 %
    assert saved["attention"] < saved["linear"]  # the suffix still reads every cached key
    assert 0.95 < saved["total"] < 1 - q / (p + q)


def test_s06_quiz_answers_every_question():
    from autograder.core.spec import load_stage

    stage = load_stage("s06", hidden=False)
    assert set(quiz()) == {question.id for question in stage.quiz.questions}


@pytest.mark.slow
def test_ttft_speedup_the_notebook_states_repeats_within_a_third():
    """The stage-6 notebook prints and reveals the TTFT speedup at its largest prefix and says that two
    runs of the cell agree within about a third: three identical runs of its measurement (same model,
    prompts and engine) must all lie within a third of the largest, on a machine shared with another
    test worker (the suite's normal state)."""
    from kernels.prefill import TTFT_CONFIG, measure_ttft

    model = DecoderLM.random(TTFT_CONFIG, seed=0)
    question, block, prefixes = 64, 16, [1536]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # not the measurement's one thread (the suite runs with one: tests/conftest.py)
    speedups = []
    # Three runs are three pairs, each a "run the cell twice" of its own. Why a third, not the 15 % the
    # sentence once said: beside another busy process the five runs of one CI job spread from 11.0x to
    # 14.7x, and of another from 11.4x to 16.2x (the cached path is 40 ms of many small operations, whose
    # CPU time moves with what shares the caches); this machine, quiet or beside one busy process of three
    # kinds, gave 13.1x-16.3x over 16 runs.
    try:
        for _ in range(3):
            rows = measure_ttft(model, lambda p: PagedPrefiller(model, num_blocks=(p + 4 * question) // block + 8,
                                                                block_size=block), prefixes, question)
            assert all(r.hit_tokens == r.prefix and r.max_diff <= 1e-3 for r in rows), rows
            speedups.append(rows[-1].speedup)
        assert torch.get_num_threads() == 2, "the measurement restores torch's thread count"
    finally:
        torch.set_num_threads(threads)
    print("speedups at P=1536:", [round(s, 2) for s in speedups])
    assert max(speedups) - min(speedups) <= max(speedups) / 3, speedups
