"""Stage 6 spec and public checks: prefill that reuses cached KV blocks through a block table.

Probes run a tiny seeded model (2 layers, 4 query / 2 kv heads, head dim 16) and return small
summaries -- lists of ints, ledgers, "matches a full prefill within 1e-4" -- never big tensors.
"""
from __future__ import annotations

import random

from autograder.spec import Stage, Todo

STAGE = Stage(
    id="s06",
    title="Paged prefill with a cached prefix",
    subtitle="分页 KV 与前缀复用的预填充",
    summary="a paged-attention prefill that skips the cached prefix on a small Llama-style model",
    todos=[
        Todo("s06.suffix_positions", 1, target="suffix_positions", points=2,
             title="absolute positions of the uncached tokens"),
        Todo("s06.slot_mapping", 2, target="slot_mapping", points=2, title="position -> pool slot through the table",
             twins=("kernels.paged_attention:_context_slots",)),
        Todo("s06.write_kv", 3, target="write_kv", points=2, title="write the new K/V into the pool"),
        Todo("s06.paged_attention", 4, target="paged_attention", points=3,
             title="causal attention over cached + new keys",
             twins=("kernels.paged_attention:paged_attention_torch", "kernels.triton_paged_attention:paged_attention_triton",
                    "kernels.triton_paged_attention:_paged_prefill_kernel")),
        Todo("s06.prefill", 5, target="PagedPrefiller.prefill", points=3, title="prefill only the suffix"),
    ],
    time_limit_s=30,
    memory_limit_mb=4096,  # torch alone maps well over 1 GiB of address space
    preload=["torch"],
)

ATOL = 1e-4  # fp32: a cached prefill must match a full prefill this closely


# -- helpers shared with the hidden checks ----------------------------------------------------------
def tiny_model(seed: int = 0):
    """The probes' model: ``kernels``' tiny config with seeded random weights (a few ms to build)."""
    from kernels.model import DecoderLM, ModelConfig

    return DecoderLM.random(ModelConfig.tiny(), seed=seed)


def rand_tokens(seed: int, n: int, vocab: int = 512) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def long_list(x) -> object:
    """A tensor as (dtype, values); anything else as a one-line description (which never passes)."""
    import torch

    if not isinstance(x, torch.Tensor):
        return f"not a tensor: {type(x).__name__}"
    return str(x.dtype).removeprefix("torch."), x.tolist()


def logits_report(logits, model, prompt) -> object:
    """Does ``logits`` equal a full prefill's last-token logits (within ATOL), and its argmax."""
    import torch

    if not isinstance(logits, torch.Tensor):
        return f"logits are not a tensor: {type(logits).__name__}"
    if tuple(logits.shape) != (model.config.vocab_size,):
        return f"logits have shape {tuple(logits.shape)}, expected ({model.config.vocab_size},)"
    with torch.no_grad():
        full = model(torch.tensor(prompt))
    return {"matches_full_prefill": bool((logits.float() - full).abs().max() <= ATOL),
            "argmax": int(torch.argmax(logits))}


def filled_pool(impl, n: int, table: list[int], offset: int, t: int, *, group: int = 2, block_size: int = 4,
                num_blocks: int = 8, seed: int = 0, noise: bool = True):
    """A 1-layer pool holding random K/V of positions 0..n-1 at the slots ``table`` gives; q of the last t.

    Unused slots hold noise (``noise``), so reading a wrong slot changes the answer. Returns
    (pool, q, dense causal attention of the same q/k/v for positions offset..n-1).
    """
    import torch

    from kernels.kv_pool import KVPool
    from kernels.paged_attention import causal_attention

    gen = torch.Generator().manual_seed(seed)
    hkv, d = 2, 8
    pool = KVPool(1, num_blocks, block_size, hkv, d)
    if noise:
        pool.k[0].normal_(generator=gen)
        pool.v[0].normal_(generator=gen)
    q = torch.randn(n, hkv * group, d, generator=gen)
    k, v = torch.randn(n, hkv, d, generator=gen), torch.randn(n, hkv, d, generator=gen)
    for p in range(n):  # placed by hand, so TODO 2/3 are not needed to set the probe up
        pool.k[0][table[p // block_size], p % block_size] = k[p]
        pool.v[0][table[p // block_size], p % block_size] = v[p]
    assert n == offset + t
    return pool, q[offset:], causal_attention(q, k, v)[offset:]


def attention_report(out, dense) -> object:
    import torch

    if not isinstance(out, torch.Tensor):
        return f"not a tensor: {type(out).__name__}"
    if out.shape != dense.shape:
        return f"shape {tuple(out.shape)}, expected {tuple(dense.shape)}"
    per_query = (out - dense).abs().amax(dim=(1, 2))
    return {"queries_matching_dense_causal": [bool(x <= 1e-5) for x in per_query]}


def cached_engine(impl, model, system: list[int], *, num_blocks: int = 32, block_size: int = 4, blocks=None):
    """An engine whose pool already caches ``system`` (prefilled once with a one-token question)."""
    engine = impl.PagedPrefiller(model, num_blocks, block_size, blocks=blocks)
    engine.prefill(system + [1])
    return engine


# -- TODO 1: suffix_positions ---------------------------------------------------------------------
@STAGE.check("s06.suffix_positions", call="suffix_positions(8, 13)",
             hint="The uncached tokens continue after the hit: positions hit .. num_tokens-1, not 0 ...")
def after_a_hit(impl):
    return long_list(impl.suffix_positions(8, 13))


@STAGE.check("s06.suffix_positions", call="suffix_positions(0, 3)",
             hint="With no hit every token is computed, from position 0; use dtype=torch.long.")
def without_a_hit(impl):
    return long_list(impl.suffix_positions(0, 3))


@STAGE.check("s06.suffix_positions", call="suffix_positions(15, 16)",
             hint="Only the last token left: one position, 15.")
def last_token_only(impl):
    return long_list(impl.suffix_positions(15, 16))


# -- TODO 2: slot_mapping -------------------------------------------------------------------------
@STAGE.check("s06.slot_mapping", call="slot_mapping([5, 2, 9], torch.arange(12), block_size=4)",
             hint="Position p is in physical block table[p // B], row p % B: slot = block * B + row.")
def whole_table(impl):
    import torch

    return long_list(impl.slot_mapping([5, 2, 9], torch.arange(12), 4))


@STAGE.check("s06.slot_mapping", call="slot_mapping([7, 3], torch.tensor([5, 6, 7]), block_size=4)",
             hint="A suffix's positions start inside the table: look each one up, do not start at block 0.")
def suffix_positions_only(impl):
    import torch

    return long_list(impl.slot_mapping([7, 3], torch.tensor([5, 6, 7]), 4))


@STAGE.check("s06.slot_mapping", call="slot_mapping([4, 0, 2], torch.arange(3), block_size=1)",
             hint="The table's order is the request's order, not the pool's: never assume consecutive blocks.")
def block_size_one(impl):
    import torch

    return long_list(impl.slot_mapping([4, 0, 2], torch.arange(3), 1))


# -- TODO 3: write_kv -----------------------------------------------------------------------------
def _write_probe(impl, slots: list[int], layer: int = 0, num_layers: int = 1):
    """Write distinct K (1, 2, 3, ...) and V (-1, -2, ...) rows; report where each landed."""
    import torch

    from kernels.kv_pool import KVPool

    pool = KVPool(num_layers, 4, 4, 2, 4)
    n = len(slots)
    k = torch.arange(1, n + 1, dtype=torch.float32)[:, None, None].expand(n, 2, 4).contiguous()
    impl.write_kv(pool, layer, torch.tensor(slots), k, -k)
    where = []
    for lay in range(num_layers):
        fk, fv = pool.flat_k(lay), pool.flat_v(lay)
        where.append({"k": {s: round(float(fk[s].mean()), 4) for s in range(pool.num_slots) if fk[s].abs().sum() > 0},
                      "v": {s: round(float(fv[s].mean()), 4) for s in range(pool.num_slots) if fv[s].abs().sum() > 0}})
    return where


@STAGE.check("s06.write_kv", call="write_kv(pool, 0, torch.tensor([13, 2, 7]), k, v)  # k rows 1, 2, 3; v = -k",
             hint="Row i of k goes to slot slots[i] of pool.flat_k(layer); same for v into pool.flat_v(layer).")
def rows_land_in_their_slots(impl):
    return _write_probe(impl, [13, 2, 7])


@STAGE.check("s06.write_kv", call="2-layer pool; write_kv(pool, 1, torch.tensor([0, 1]), k, v)",
             hint="Write only the given layer; the other layers keep their K/V.")
def only_its_layer(impl):
    return _write_probe(impl, [0, 1], layer=1, num_layers=2)


@STAGE.check("s06.write_kv", call="write_kv(pool, 0, torch.tensor([15, 4]), k, v)  # v = -k",
             hint="V goes into pool.flat_v, K into pool.flat_k: never the same tensor for both.")
def v_is_not_k(impl):
    return _write_probe(impl, [15, 4])[0]["v"]


# -- TODO 4: paged_attention ----------------------------------------------------------------------
@STAGE.check("s06.paged_attention", call="no cache: 5 queries, offset 0, block table [3, 6]",
             hint="Query i sees keys 0..i: a causal mask; without a cache this is plain causal attention.")
def no_offset(impl):
    pool, q, dense = filled_pool(impl, 5, [3, 6], 0, 5)
    return attention_report(impl.paged_attention(q, pool, 0, [3, 6], 0), dense)


@STAGE.check("s06.paged_attention", call="6 cached + 3 new tokens, block table [3, 0, 5], offset 6",
             hint="Query i is at position offset+i: it sees keys 0..offset+i, read through the block table.")
def offset_and_shuffled_table(impl):
    pool, q, dense = filled_pool(impl, 9, [3, 0, 5], 6, 3)
    return attention_report(impl.paged_attention(q, pool, 0, [3, 0, 5], 6), dense)


@STAGE.check("s06.paged_attention", call="grouped-query attention: 6 query heads, 2 kv heads, offset 4",
             hint="Query head h reads kv head h // group: repeat_interleave, not repeat.")
def grouped_query_heads(impl):
    pool, q, dense = filled_pool(impl, 7, [1, 7], 4, 3, group=3)
    return attention_report(impl.paged_attention(q, pool, 0, [1, 7], 4), dense)


# -- TODO 5: prefill ------------------------------------------------------------------------------
@STAGE.check("s06.prefill", call="fresh engine (32 blocks of 4); prefill(10 random tokens)",
             hint="Nothing cached: compute every token; the logits must equal a full prefill's.")
def cold_prompt(impl):
    model = tiny_model()
    prompt = rand_tokens(1, 10)
    logits, ledger = impl.PagedPrefiller(model, 32, 4).prefill(prompt)
    return ledger, logits_report(logits, model, prompt)


@STAGE.check("s06.prefill", call="prefill(system16 + [1]); then prefill(system16 + 5 new tokens)",
             hint="Admit, compute only the tokens after hit_tokens, and commit so later requests hit.")
def hit_at_block_boundary(impl):
    model = tiny_model()
    system = rand_tokens(2, 16)
    engine = cached_engine(impl, model, system)
    prompt = system + rand_tokens(3, 5)
    logits, ledger = engine.prefill(prompt)
    return ledger, logits_report(logits, model, prompt)


@STAGE.check("s06.prefill", call="prefill(p) twice, len(p) == 16, block size 4",
             hint="A fully cached prompt still computes at least one token (the pool leaves the last block).")
def whole_prompt_again(impl):
    model = tiny_model()
    prompt = rand_tokens(4, 16)
    engine = impl.PagedPrefiller(model, 32, 4)
    engine.prefill(prompt)
    logits, ledger = engine.prefill(prompt)
    return ledger, logits_report(logits, model, prompt)


@STAGE.check("s06.prefill", call="cache system16; multiply every K in the pool by -1; prefill(system16 + 3 tokens)",
             hint="The cached tokens' K/V must be *read from the pool*, not recomputed: the answer follows the pool.",
             atol=1e-3)
def output_follows_the_pool(impl):
    import torch

    model = tiny_model()
    system = rand_tokens(5, 16)
    engine = cached_engine(impl, model, system)
    for layer in range(model.config.num_hidden_layers):
        engine.pool.k[layer].mul_(-1.0)
    prompt = system + rand_tokens(6, 3)
    logits, ledger = engine.prefill(prompt)
    if not isinstance(logits, torch.Tensor):
        return ledger, f"logits are not a tensor: {type(logits).__name__}"
    top = torch.topk(logits.float(), 3)
    return ledger, top.indices.tolist(), [float(x) for x in top.values]


@STAGE.check("s06.prefill", call="a block manager that reports all 16 tokens of a prompt as cached; prefill it",
             hint="Whatever the manager says, compute at least the last token: hit = min(hit_tokens, len - 1).")
def manager_reports_everything_cached(impl):
    model = tiny_model()
    prompt = rand_tokens(7, 16)
    engine = impl.PagedPrefiller(model, 32, 4, blocks=whole_prompt_pool(impl, 32, 4))
    engine.prefill(prompt)
    logits, ledger = engine.prefill(prompt)
    return ledger, logits_report(logits, model, prompt)


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
