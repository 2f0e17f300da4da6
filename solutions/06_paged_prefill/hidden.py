"""Hidden checks of stage 6: shuffled tables, stale pool content, shared blocks, generation, devices. Never shipped.
Their titles and hints, in both languages, are in ``hidden.toml`` beside this module."""
from __future__ import annotations

import random

from autograder.checks.common import record
from autograder.checks.meta import meta_probe
from autograder.checks.s06 import (
    ATOL,
    ATTN_ATOL,
    STAGE,
    attend,
    attention_inputs,
    device_of,
    int_values,
    on_meta,
    prefill_report,
    rand_tokens,
    tiny_model,
    values,
    whole_prompt_pool,
)


def own_prefill(impl, todo: str, model, pool, blocks, prompt: list[int]):
    """A cached prefill written out here, with ``impl``'s function for ``todo`` and the reference's
    for the other TODOs 1-4. The probe of one TODO then runs the learner's function end to end
    (the reference ``PagedPrefiller.prefill`` would call the reference's own functions), and it does
    not need later TODO cells to exist yet (an instructor notebook runs its checks top to bottom)."""
    import importlib

    import torch

    ref = importlib.import_module(STAGE.reference)  # in the grader: stubbed at ``todo`` only
    fn = {name: getattr(impl if name == todo else ref, name)
          for name in ("suffix_positions", "slot_mapping", "write_kv", "paged_attention")}
    rid = f"probe-{len(blocks.requests)}-{len(prompt)}"
    admission = blocks.admit(rid, prompt)
    hit = min(admission.hit_tokens, len(prompt) - 1)
    positions = fn["suffix_positions"](hit, len(prompt))
    table = torch.tensor(admission.block_table)
    slots = fn["slot_mapping"](table, positions, blocks.block_size)

    def attend_layer(layer, q, k, v):
        fn["write_kv"](pool, layer, slots, k, v)
        return fn["paged_attention"](q, pool, layer, table, hit)

    with torch.no_grad():
        logits = model(torch.tensor(prompt[hit:]), positions, attend_layer)
    blocks.commit(rid)
    blocks.release(rid)
    return logits, {"hit_tokens": hit, "computed_tokens": len(prompt) - hit}


def own_cached_run(impl, todo: str, model, system: list[int], question: list[int], *, blocks=None,
                   num_blocks: int = 40):
    """Cache ``system`` (with a one-token question), then prefill ``system + question``; both by :func:`own_prefill`."""
    from kernels.kv_pool import KVPool

    blocks = blocks if blocks is not None else impl.BlockPool(num_blocks, 4)
    pool = KVPool.for_model(model.config, blocks.num_blocks, blocks.block_size)
    own_prefill(impl, todo, model, pool, blocks, system + [1])
    logits, ledger = own_prefill(impl, todo, model, pool, blocks, system + question)
    return prefill_report(logits, ledger)


class ShuffledFreeQueue:
    """A free queue that hands out blocks in a seeded random order, so block tables come out shuffled."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.blocks: list = []

    def append(self, block) -> None:
        self.blocks.append(block)

    def popleft(self):
        return self.blocks.pop(self.rng.randrange(len(self.blocks)))

    def remove(self, block) -> None:
        self.blocks.remove(block)

    def __len__(self) -> int:
        return len(self.blocks)


# -- TODO 1 ----------------------------------------------------------------------------------------
@STAGE.check("s06.suffix_positions", hidden=True, sibling="after_a_hit")
def long_prefix(impl):
    return int_values(impl.suffix_positions(1000, 1004))


@STAGE.check("s06.suffix_positions", hidden=True, sibling="after_a_hit", atol=ATOL)
def prefill_with_these_positions_matches(impl):
    return own_cached_run(impl, "suffix_positions", tiny_model(seed=3), rand_tokens(20, 12), rand_tokens(21, 6))


# -- TODO 2 ----------------------------------------------------------------------------------------
@STAGE.check("s06.slot_mapping", hidden=True, sibling="suffix_positions_only")
def random_table_suffix(impl):
    import torch

    rng = random.Random(8)
    table = rng.sample(range(64), 6)
    return values(impl.slot_mapping(table, torch.arange(40, 90), 16))


@STAGE.check("s06.slot_mapping", hidden=True, sibling="table_given_as_a_tensor")
def tensor_table(impl):
    import torch

    return values(impl.slot_mapping(torch.tensor([9, 1, 4, 6]), torch.tensor([3, 4, 11, 12, 15]), 4))


@STAGE.check("s06.slot_mapping", hidden=True, sibling="whole_table", atol=ATOL)
def shuffled_prefill_matches(impl):
    blocks = impl.BlockPool(40, 4, free_queue=ShuffledFreeQueue(3))
    return own_cached_run(impl, "slot_mapping", tiny_model(seed=4), rand_tokens(22, 20), rand_tokens(23, 7), blocks=blocks)


# -- TODO 3 ----------------------------------------------------------------------------------------
@STAGE.check("s06.write_kv", hidden=True, sibling="overwrite_replaces_the_row")
def overwrite_keeps_neighbours(impl):
    import torch

    from kernels.kv_pool import KVPool

    pool = KVPool(1, 2, 4, 1, 2)
    impl.write_kv(pool, 0, torch.tensor([1, 2, 3]), torch.ones(3, 1, 2), torch.ones(3, 1, 2))
    impl.write_kv(pool, 0, torch.tensor([2]), torch.full((1, 1, 2), 5.0), torch.full((1, 1, 2), 7.0))
    return record(k=pool.flat_k(0)[:, 0, 0].tolist(), v=pool.flat_v(0)[:, 0, 0].tolist())


@STAGE.check("s06.write_kv", hidden=True, sibling="rows_land_in_their_slots")
def writes_the_pool_itself(impl):
    import torch

    from kernels.kv_pool import KVPool

    pool = KVPool(1, 3, 4, 2, 4)
    k_before, v_before = pool.k[0], pool.v[0]
    gen = torch.Generator().manual_seed(1)
    k, v = torch.randn(2, 2, 4, generator=gen), torch.randn(2, 2, 4, generator=gen)
    impl.write_kv(pool, 0, torch.tensor([10, 5]), k, v)
    return record(same_k_tensor=pool.k[0] is k_before, same_v_tensor=pool.v[0] is v_before,
                  k_at_slot_10=bool(torch.equal(pool.k[0][2, 2], k[0])), v_at_slot_5=bool(torch.equal(pool.v[0][1, 1], v[1])),
                  rows_written=int((pool.k[0] != 0).any(dim=(2, 3)).sum()))


@STAGE.check("s06.write_kv", hidden=True, sibling="rows_land_in_their_slots", atol=ATOL)
def cached_prefill_reads_what_was_written(impl):
    return own_cached_run(impl, "write_kv", tiny_model(seed=5), rand_tokens(24, 8), rand_tokens(25, 9))


# -- TODO 4 ----------------------------------------------------------------------------------------
@STAGE.check("s06.paged_attention", hidden=True, sibling="reads_through_the_table", atol=ATTN_ATOL)
def single_query_long_cache(impl):
    return attend(impl, 16, [6, 2, 7, 0], 15, group=2)


@STAGE.check("s06.paged_attention", hidden=True, sibling="offset_shifts_the_mask", atol=ATTN_ATOL)
def stale_rows_are_masked(impl):
    return attend(impl, 10, [4, 1, 6], 7, seed=3)


@STAGE.check("s06.paged_attention", hidden=True, sibling="offset_shifts_the_mask", atol=ATTN_ATOL)
def many_queries_after_cache(impl):
    return attend(impl, 24, [5, 3, 1, 7, 0, 2], 8, group=2, seed=4)


@STAGE.check("s06.paged_attention", hidden=True, sibling="offset_shifts_the_mask", atol=ATOL)
def prefill_with_this_attention_matches(impl):
    return own_cached_run(impl, "paged_attention", tiny_model(seed=10), rand_tokens(34, 16), rand_tokens(35, 5))


@STAGE.check("s06.paged_attention", hidden=True, sibling="helpers_on_q_device")
@meta_probe
def meta_tensor_table(impl):
    import torch

    pool, q = attention_inputs(7, [1, 7], 4, group=2, device="meta")
    return device_of(on_meta(lambda: impl.paged_attention(q, pool, 0, torch.tensor([1, 7], device=q.device), 4)))


# -- TODO 5 ----------------------------------------------------------------------------------------
@STAGE.check("s06.prefill", hidden=True, sibling="whole_prompt_again")
def greedy_generation_unchanged(impl):
    from kernels.prefill import generate_full

    model = tiny_model(seed=6)
    prompt = rand_tokens(26, 9)
    engine = impl.PagedPrefiller(model, 48, 4)
    cached, ledgers = [], []
    seq = list(prompt)
    for _ in range(6):
        logits, ledger = engine.prefill(seq)
        token = int(logits.argmax())
        seq.append(token)
        cached.append(token)
        ledgers.append(ledger)
    return record(same_tokens=cached == generate_full(model, prompt, 6), ledgers=ledgers)


@STAGE.check("s06.prefill", hidden=True, sibling="hit_at_block_boundary", atol=ATOL)
def requests_sharing_blocks(impl):
    model = tiny_model(seed=7)
    system = rand_tokens(27, 12)
    engine = impl.PagedPrefiller(model, 48, 4)
    out = []
    for i in range(3):
        logits, ledger = engine.prefill(system + rand_tokens(28 + i, 2 + 3 * i), request_id=f"r{i}", keep=True)
        out.append(prefill_report(logits, ledger))
    refs = [engine.blocks.blocks[b].ref_count for b in engine.blocks.block_table("r2")]
    return record(requests=out, ref_counts_of_r2=refs)


@STAGE.check("s06.prefill", hidden=True, sibling="manager_reports_everything_cached", atol=ATOL)
def partial_tail_is_computed(impl):
    model = tiny_model(seed=8)
    prompt = rand_tokens(31, 14)
    engine = impl.PagedPrefiller(model, 32, 4, blocks=whole_prompt_pool(impl, 32, 4))
    engine.prefill(prompt + [3, 3])
    logits, ledger = engine.prefill(prompt)
    return prefill_report(logits, ledger)


@STAGE.check("s06.prefill", hidden=True, sibling="whole_prompt_again", atol=ATOL)
def multi_turn_hits_previous_turn(impl):
    model = tiny_model(seed=9)
    turn1 = rand_tokens(32, 13)
    engine = impl.PagedPrefiller(model, 32, 4)
    engine.prefill(turn1)
    turn2 = turn1 + rand_tokens(33, 6)
    logits, ledger = engine.prefill(turn2)
    return record(turn2=prefill_report(logits, ledger), free_blocks=engine.blocks.num_free)
