"""Stage 6 spec and public checks: prefill that reuses cached KV blocks through a block table.

What a learner reads of this stage is in ``s06.toml`` beside this module, in English and Chinese.
Probes run a tiny
seeded model (2 layers, 4 query / 2 kv heads, head dim 16) or a hand-filled one-layer pool, and
return labelled records and tensor summaries (``tensor``: shape, dtype, device, values), so a
failure shows the largest difference and the first index where it occurs.

Each check is built to catch one kind of bug, and its hint speaks about that bug only: the
causal-mask, offset and block-table checks of TODO 4 use one kv head per query head (so a
grouped-query slip cannot fail them), the grouped-query check has no cache (so a missing offset
cannot fail it), and so on. The device contract is probed on PyTorch's ``meta`` device (shapes
and devices, no values), so a tensor created on the wrong device fails on a CPU-only machine too.
"""
from __future__ import annotations

import random

from autograder.checks.common import record, tensor
from autograder.checks.meta import meta_device, meta_probe, on_meta
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s06",
    minutes=90,
    todos=[
        Todo("s06.suffix_positions", 1, target="suffix_positions", points=2),
        Todo("s06.slot_mapping", 2, target="slot_mapping", points=2,
             twins=("kernels.paged_attention:_context_slots",)),
        Todo("s06.write_kv", 3, target="write_kv", points=2),
        Todo("s06.paged_attention", 4, target="paged_attention", points=3,
             twins=("kernels.paged_attention:paged_attention_torch",
                    "kernels.triton_paged_attention:paged_attention_triton",
                    "kernels.triton_paged_attention:_paged_prefill_kernel")),
        Todo("s06.prefill", 5, target="PagedPrefiller.prefill", points=3),
    ],
    quiz=Quiz(number=6, points=2, questions=(
        Question("q1", decimals=0),
        Question("q2", decimals=0),
        Question("q3"),
        Question("q4"),
        Question("q5"),
        Question("q6"),
    )),
    time_limit_s=30,
    memory_limit_mb=4096,  # torch alone maps well over 1 GiB of address space
    preload=["torch"],
)

ATOL = 1e-4  # fp32: a cached prefill must match a full prefill this closely
ATTN_ATOL = 1e-5  # one attention call in fp32


# -- helpers shared with the hidden checks ----------------------------------------------------------
def tiny_model(seed: int = 0):
    """The probes' model: ``kernels``' tiny config with seeded random weights (a few ms to build)."""
    from kernels.model import DecoderLM, ModelConfig

    return DecoderLM.random(ModelConfig.tiny(), seed=seed)


def rand_tokens(seed: int, n: int, vocab: int = 512) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def not_a_tensor(x) -> str | None:
    import torch

    return None if isinstance(x, torch.Tensor) else f"not a tensor: {type(x).__name__}"


def values(x, decimals: int = 6) -> object:
    """A tensor as shape, dtype, device and values (``tensor``); anything else as a one-line description."""
    return not_a_tensor(x) or tensor(x, decimals)


def int_values(x) -> object:
    """A tensor's values as int64 (its dtype is another check's business)."""
    return not_a_tensor(x) or tensor(x.long())


def device_of(x) -> object:
    """Where a tensor lives. A ``meta`` tensor has a shape and a device, but no values to compare."""
    return not_a_tensor(x) or record(device=x.device.type)


def attention_inputs(n: int, table: list[int], offset: int, *, group: int = 1, block_size: int = 4,
                     num_blocks: int = 8, seed: int = 0, device: str = "cpu"):
    """A one-layer pool holding random K/V of positions 0..n-1 at the slots ``table`` gives, and the
    queries of positions offset..n-1. Unused slots hold noise, so reading a wrong slot changes the answer.
    On ``device="meta"`` nothing has values: only shapes and devices."""
    import torch

    from kernels.kv_pool import KVPool

    hkv, d = 2, 8
    pool = KVPool(1, num_blocks, block_size, hkv, d, device=device)
    if device == "meta":
        return pool, torch.empty(n - offset, hkv * group, d, device=meta_device())
    gen = torch.Generator().manual_seed(seed)
    pool.k[0].normal_(generator=gen)
    pool.v[0].normal_(generator=gen)
    q = torch.randn(n, hkv * group, d, generator=gen)
    k, v = torch.randn(n, hkv, d, generator=gen), torch.randn(n, hkv, d, generator=gen)
    for p in range(n):  # placed by hand, so TODOs 2 and 3 are not needed to set the probe up
        pool.k[0][table[p // block_size], p % block_size] = k[p]
        pool.v[0][table[p // block_size], p % block_size] = v[p]
    return pool, q[offset:]


def attend(impl, n: int, table: list[int], offset: int, **kw) -> object:
    pool, q = attention_inputs(n, table, offset, **kw)
    return values(impl.paged_attention(q, pool, 0, table, offset))


def prefill_report(logits, ledger) -> object:
    return record(ledger=ledger, logits=values(logits, decimals=5))


def cached_engine(impl, model, system: list[int], *, num_blocks: int = 32, block_size: int = 4, blocks=None):
    """An engine whose pool already caches ``system`` (prefilled once with a one-token question)."""
    engine = impl.PagedPrefiller(model, num_blocks, block_size, blocks=blocks)
    engine.prefill(system + [1])
    return engine


def whole_prompt_pool(impl, num_blocks: int, block_size: int):
    """A stage-3 pool whose lookup may hit every full block, even of a fully cached prompt
    (as a token-granular cache like stage 5's radix tree could)."""

    class WholePromptPool(impl.BlockPool):
        def lookup(self, keys, num_tokens):
            hits = []
            for key in keys:
                block = self.cached.get(key)
                if block is None:
                    break
                hits.append(block)
            return hits

    return WholePromptPool(num_blocks, block_size)


def meta_model():
    """The tiny model on the ``meta`` device, recording where the token ids and positions it is called
    with live (a meta embedding accepts CPU token ids, a GPU one does not: the record catches that)."""
    import torch

    from kernels.model import DecoderLM, ModelConfig

    class DeviceRecorder(DecoderLM):
        def forward(self, token_ids, positions=None, attention=None, **kw):
            self.seen = record(token_ids=getattr(getattr(token_ids, "device", None), "type", type(token_ids).__name__),
                               positions=getattr(getattr(positions, "device", None), "type", type(positions).__name__))
            return super().forward(token_ids, positions, attention, **kw)

    with torch.device(meta_device()):
        return DeviceRecorder(ModelConfig.tiny())


# -- TODO 1: suffix_positions ---------------------------------------------------------------------
@STAGE.check("s06.suffix_positions", call="suffix_positions(8, 13)")
def after_a_hit(impl):
    return int_values(impl.suffix_positions(8, 13))


@STAGE.check("s06.suffix_positions", call="suffix_positions(0, 3)")
def without_a_hit(impl):
    return int_values(impl.suffix_positions(0, 3))


@STAGE.check("s06.suffix_positions", call="suffix_positions(2, 5).dtype")
def positions_are_int64(impl):
    out = impl.suffix_positions(2, 5)
    return not_a_tensor(out) or record(dtype=str(out.dtype).removeprefix("torch."))


@STAGE.check("s06.suffix_positions", call='suffix_positions(3, 7, device="meta")')
@meta_probe
def created_on_the_device(impl):
    return device_of(on_meta(lambda: impl.suffix_positions(3, 7, device=meta_device())))


# -- TODO 2: slot_mapping -------------------------------------------------------------------------
@STAGE.check("s06.slot_mapping", call="slot_mapping([5, 2, 9], torch.arange(12), block_size=4)")
def whole_table(impl):
    import torch

    return values(impl.slot_mapping([5, 2, 9], torch.arange(12), 4))


@STAGE.check("s06.slot_mapping", call="slot_mapping([7, 3], torch.tensor([5, 6, 7]), block_size=4)")
def suffix_positions_only(impl):
    import torch

    return values(impl.slot_mapping([7, 3], torch.tensor([5, 6, 7]), 4))


@STAGE.check("s06.slot_mapping", call="slot_mapping([4, 0, 2], torch.arange(3), block_size=1)")
def block_size_one(impl):
    import torch

    return values(impl.slot_mapping([4, 0, 2], torch.arange(3), 1))


@STAGE.check("s06.slot_mapping", call='slot_mapping([5, 2, 9], torch.arange(4, 9, device="meta"), 4)')
@meta_probe
def stays_on_the_device(impl):
    import torch

    return device_of(on_meta(lambda: impl.slot_mapping([5, 2, 9], torch.arange(4, 9, device=meta_device()), 4)))


@STAGE.check("s06.slot_mapping", call="slot_mapping(torch.tensor([3, 8, 1]), torch.tensor([2, 3, 4, 8]), block_size=3)")
def table_given_as_a_tensor(impl):
    import torch

    return values(impl.slot_mapping(torch.tensor([3, 8, 1]), torch.tensor([2, 3, 4, 8]), 3))


# -- TODO 3: write_kv -----------------------------------------------------------------------------
def _write_probe(impl, slots: list[int], layer: int = 0, num_layers: int = 1) -> list:
    """Write distinct K (rows 1, 2, 3, ...) and V (-1, -2, ...) rows; report, per layer, which slot holds which row."""
    import torch

    from kernels.kv_pool import KVPool

    pool = KVPool(num_layers, 4, 4, 2, 4)
    n = len(slots)
    k = torch.arange(1, n + 1, dtype=torch.float32)[:, None, None].expand(n, 2, 4).contiguous()
    impl.write_kv(pool, layer, torch.tensor(slots), k, -k)
    where = []
    for lay in range(num_layers):
        fk, fv = pool.flat_k(lay), pool.flat_v(lay)
        where.append(record(
            k_rows={s: round(float(fk[s].mean()), 4) for s in range(pool.num_slots) if fk[s].abs().sum() > 0},
            v_rows={s: round(float(fv[s].mean()), 4) for s in range(pool.num_slots) if fv[s].abs().sum() > 0}))
    return where


@STAGE.check("s06.write_kv", call="write_kv(pool, 0, torch.tensor([13, 2, 7]), k, v)  # k rows 1, 2, 3; v = -k")
def rows_land_in_their_slots(impl):
    return _write_probe(impl, [13, 2, 7])


@STAGE.check("s06.write_kv", call="write_kv(pool, 1, torch.tensor([0, 1]), k, v)  # pool: 2 layers")
def only_its_layer(impl):
    return _write_probe(impl, [0, 1], layer=1, num_layers=2)


@STAGE.check("s06.write_kv",
             specificity=1)
def v_is_not_k(impl):
    rows = _write_probe(impl, [11, 4])[0]
    k_rows, v_rows = rows["k_rows"], rows["v_rows"]
    # only the pairing of K and V is judged here (where the rows land is another check's business)
    return record(v_is_minus_k_wherever_written=set(k_rows) == set(v_rows)
                  and all(v_rows[s] == -k_rows[s] for s in k_rows))


@STAGE.check("s06.write_kv")
def overwrite_replaces_the_row(impl):
    import torch

    from kernels.kv_pool import KVPool

    pool = KVPool(1, 4, 4, 2, 4)
    k = torch.arange(1, 4, dtype=torch.float32)[:, None, None].expand(3, 2, 4).contiguous()
    impl.write_kv(pool, 0, torch.tensor([6, 0, 9]), k, -k)
    k2 = torch.full((1, 2, 4), 5.0)
    impl.write_kv(pool, 0, torch.tensor([0]), k2, -k2)
    fk, fv = pool.flat_k(0), pool.flat_v(0)
    return record(k_rows={s: round(float(fk[s].mean()), 4) for s in range(pool.num_slots) if fk[s].abs().sum() > 0},
                  v_rows={s: round(float(fv[s].mean()), 4) for s in range(pool.num_slots) if fv[s].abs().sum() > 0})


# -- TODO 4: paged_attention ----------------------------------------------------------------------
@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [0, 1], 0)  # T=5, Hq=Hkv=2", atol=ATTN_ATOL)
def causal_mask(impl):
    return attend(impl, 5, [0, 1], 0)


@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [0, 1, 2], 6)  # T=3, Hq=Hkv=2", atol=ATTN_ATOL)
def offset_shifts_the_mask(impl):
    return attend(impl, 9, [0, 1, 2], 6)


@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [3, 0], 0)  # T=7, Hq=Hkv=2", atol=ATTN_ATOL)
def reads_through_the_table(impl):
    return attend(impl, 7, [3, 0], 0)


@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [0, 1], 0)  # T=5, Hq=6, Hkv=2", atol=ATTN_ATOL)
def grouped_query_heads(impl):
    return attend(impl, 5, [0, 1], 0, group=3)


@STAGE.check("s06.paged_attention", call='paged_attention(q, pool, 0, [3, 0, 5], 6)  # q, pool: device="meta"; T=3, Hq=4, Hkv=2')
@meta_probe
def helpers_on_q_device(impl):
    pool, q = attention_inputs(9, [3, 0, 5], 6, group=2, device="meta")
    return device_of(on_meta(lambda: impl.paged_attention(q, pool, 0, [3, 0, 5], 6)))


# -- TODO 5: prefill ------------------------------------------------------------------------------
@STAGE.check("s06.prefill", call="PagedPrefiller(model, 32, 4).prefill(p10)", atol=ATOL)
def cold_prompt(impl):
    model = tiny_model()
    logits, ledger = impl.PagedPrefiller(model, 32, 4).prefill(rand_tokens(1, 10))
    return prefill_report(logits, ledger)


@STAGE.check("s06.prefill", call="engine.prefill(system16 + [1]); engine.prefill(system16 + q5)", atol=ATOL)
def hit_at_block_boundary(impl):
    model = tiny_model()
    system = rand_tokens(2, 16)
    engine = cached_engine(impl, model, system)
    logits, ledger = engine.prefill(system + rand_tokens(3, 5))
    return prefill_report(logits, ledger)


@STAGE.check("s06.prefill", atol=ATOL,
             specificity=1)
def whole_prompt_again(impl):
    model = tiny_model()
    prompt = rand_tokens(4, 16)
    engine = impl.PagedPrefiller(model, 32, 4)
    _, first = engine.prefill(prompt)
    _, second = engine.prefill(prompt)
    # the ledgers only: whether the first prompt's blocks were committed (the logits are other checks' business)
    return record(first_ledger=first, second_ledger=second)


@STAGE.check("s06.prefill", call="engine.prefill(system16 + [1]); engine.pool.k[layer] *= -1; engine.prefill(system16 + q3)", atol=1e-3)
def output_follows_the_pool(impl):
    import torch

    model = tiny_model()
    system = rand_tokens(5, 16)
    engine = cached_engine(impl, model, system)
    for layer in range(model.config.num_hidden_layers):
        engine.pool.k[layer].mul_(-1.0)
    logits, ledger = engine.prefill(system + rand_tokens(6, 3))
    if not isinstance(logits, torch.Tensor):
        return record(ledger=ledger, logits=not_a_tensor(logits))
    top = torch.topk(logits.float(), 3)
    return record(ledger=ledger, top3_tokens=top.indices.tolist(), top3_logits=[float(x) for x in top.values])


@STAGE.check("s06.prefill", call="PagedPrefiller(model, 32, 4, blocks=WholePromptPool(32, 4)); prefill(p16) twice", atol=ATOL)
def manager_reports_everything_cached(impl):
    model = tiny_model()
    prompt = rand_tokens(7, 16)
    engine = impl.PagedPrefiller(model, 32, 4, blocks=whole_prompt_pool(impl, 32, 4))
    engine.prefill(prompt)
    logits, ledger = engine.prefill(prompt)
    return prefill_report(logits, ledger)


@STAGE.check("s06.prefill", call='engine = PagedPrefiller(model_on_meta, 32, 4); engine.prefill(system16 + [1]); engine.prefill(system16 + q3)')
@meta_probe
def tensors_on_the_engine_device(impl):
    model = meta_model()
    system = rand_tokens(8, 16)
    engine = on_meta(lambda: cached_engine(impl, model, system))
    logits, _ = on_meta(lambda: engine.prefill(system + rand_tokens(9, 3)))
    return record(model_called_with=getattr(model, "seen", "the model was not called"), logits=device_of(logits))
