"""Realistic wrong answers for each stage-6 TODO, graded by the real grader: each fails its own TODO only.

Three per TODO (every variant costs five child processes that import torch). "Caching the partial
tail" cannot be written in stage 6's code: which blocks get keys is stage 3's business (``chain_keys``
hashes full blocks only, ``BlockPool.commit`` registers them); stage 6 only decides *whether and when*
to commit (``never_commits`` below). "Zero computed tokens" is caught with a block manager that
reports a fully cached prompt (stage 3's own pool already caps its hits, see its ``no_cap`` mutant)."""
from __future__ import annotations



POSITIONS = "positions = torch.arange(hit_tokens, num_tokens, dtype=torch.long, device=device)"
SLOTS = "slots = table[positions // block_size] * block_size + positions % block_size"
WRITE = "    pool.flat_k(layer)[slots] = k\n    pool.flat_v(layer)[slots] = v\n"
GQA = """    k = pool.flat_k(layer)[slots].repeat_interleave(group, dim=1)
    v = pool.flat_v(layer)[slots].repeat_interleave(group, dim=1)"""
MASK = "mask = key_pos[None, :] <= query_pos[:, None]"
HIT = "        hit = min(admission.hit_tokens, len(tokens) - 1)"

MUTANTS = {
    # TODO 1: suffix_positions
    "s06.suffix_positions/restart_at_zero": ("s06.suffix_positions", [(POSITIONS, POSITIONS.replace(
        "arange(hit_tokens, num_tokens", "arange(0, num_tokens - hit_tokens"))]),
    "s06.suffix_positions/off_by_one": ("s06.suffix_positions", [(POSITIONS, POSITIONS.replace(
        "arange(hit_tokens, num_tokens", "arange(hit_tokens + 1, num_tokens + 1"))]),
    "s06.suffix_positions/float_positions": ("s06.suffix_positions", [(POSITIONS, POSITIONS.replace(
        "dtype=torch.long", "dtype=torch.float32"))]),
    # TODO 2: slot_mapping
    "s06.slot_mapping/contiguous_table": ("s06.slot_mapping", [(SLOTS, "slots = table[0] * block_size + positions")]),
    "s06.slot_mapping/off_by_one_slot": ("s06.slot_mapping", [(SLOTS, SLOTS + " + 1")]),
    "s06.slot_mapping/block_id_not_scaled": ("s06.slot_mapping", [(SLOTS, SLOTS.replace(
        "] * block_size +", "] +"))]),
    # TODO 3: write_kv
    "s06.write_kv/v_gets_k": ("s06.write_kv", [(WRITE, WRITE.replace("[slots] = v", "[slots] = k"))]),
    "s06.write_kv/off_by_one_slot": ("s06.write_kv", [(WRITE, WRITE.replace("[slots]", "[slots + 1]"))]),
    "s06.write_kv/writes_a_copy": ("s06.write_kv", [(WRITE, WRITE.replace("(layer)[slots]", "(layer).clone()[slots]"))]),
    # TODO 4: paged_attention
    "s06.paged_attention/missing_causal_offset": ("s06.paged_attention", [(MASK, MASK.replace(
        "query_pos[:, None]", "torch.arange(t)[:, None]"))]),
    "s06.paged_attention/is_causal_ignores_offset": ("s06.paged_attention", [("attn_mask=mask)", "is_causal=True)")]),
    "s06.paged_attention/gqa_heads_tiled": ("s06.paged_attention", [(GQA, GQA.replace(
        ".repeat_interleave(group, dim=1)", ".repeat(1, group, 1)"))]),
    # TODO 5: prefill
    "s06.prefill/zero_computed_tokens_when_fully_cached": ("s06.prefill", [(HIT, "        hit = admission.hit_tokens")]),
    "s06.prefill/never_commits": ("s06.prefill", [("        self.blocks.commit(request_id)\n", "")]),
    "s06.prefill/attention_without_offset": ("s06.prefill", [(
        "return self.attention(q, self.pool, layer, table, hit)", "return self.attention(q, self.pool, layer, table, 0)")]),
}
