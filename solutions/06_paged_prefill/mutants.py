"""Realistic wrong answers for each stage-6 TODO, graded by the real grader: each fails its own TODO only.

Every variant costs six child processes that import torch (and three of them torch._dynamo, for the
probes on the ``meta`` device), so each TODO has three or four: the classic slips and, for each TODO
that creates tensors, one device slip (a tensor created without the device it should live on: it
passes every CPU check and fails the probe on the ``meta`` device). "Caching the partial tail"
cannot be written in stage 6's code: which blocks get keys is stage 3's business (``chain_keys``
hashes full blocks only, ``BlockPool.commit`` registers them); stage 6 only decides *whether and
when* to commit (``never_commits`` below). "Zero computed tokens" is caught with a block manager that reports a fully
cached prompt (stage 3's own pool already caps its hits, see its ``no_cap`` mutant).

The mutants of TODO 4 each break one thing, and each fails the public check built for it, with a
hint about that thing only: the missing offset keeps the mask on q's device, the tiled heads keep the
offset. Correct answers written differently live in ``alternatives.py`` beside this file."""
from __future__ import annotations

POSITIONS = "positions = torch.arange(hit_tokens, num_tokens, dtype=torch.long, device=device)"
SLOTS = "slots = table[positions // block_size] * block_size + positions % block_size"
WRITE = "    pool.flat_k(layer)[slots] = k\n    pool.flat_v(layer)[slots] = v\n"
GQA = """    k = pool.flat_k(layer)[slots].repeat_interleave(group, dim=1)
    v = pool.flat_v(layer)[slots].repeat_interleave(group, dim=1)"""
MASK = "mask = key_pos[None, :] <= query_pos[:, None]"
QUERY_POS = "query_pos = torch.arange(offset, n, device=q.device)"
HIT = "        hit = min(admission.hit_tokens, len(tokens) - 1)"
TOKEN_IDS = "token_ids = torch.tensor(tokens[hit:], dtype=torch.long, device=self.device)"
ANSWERS = '    return {"q1": 12, "q2": 21, "q3": "C", "q4": "B", "q5": "B", "q6": "B"}\n'

MUTANTS = {
    # TODO 1: suffix_positions
    "s06.suffix_positions/restart_at_zero": ("s06.suffix_positions", [(POSITIONS, POSITIONS.replace(
        "arange(hit_tokens, num_tokens", "arange(0, num_tokens - hit_tokens"))]),
    "s06.suffix_positions/float_positions": ("s06.suffix_positions", [(POSITIONS, POSITIONS.replace(
        "dtype=torch.long", "dtype=torch.float32"))]),
    "s06.suffix_positions/ignores_device": ("s06.suffix_positions", [(POSITIONS, POSITIONS.replace(
        ", device=device", ""))]),
    # TODO 2: slot_mapping
    "s06.slot_mapping/contiguous_table": ("s06.slot_mapping", [(SLOTS, "slots = table[0] * block_size + positions")]),
    "s06.slot_mapping/block_id_not_scaled": ("s06.slot_mapping", [(SLOTS, SLOTS.replace(
        "] * block_size +", "] +"))]),
    "s06.slot_mapping/python_loop_on_the_host": ("s06.slot_mapping", [(SLOTS, (
        "slots = torch.tensor([int(table[p // block_size]) * block_size + p % block_size\n"
        "                          for p in positions.tolist()], dtype=torch.long)"))]),
    # TODO 3: write_kv
    "s06.write_kv/v_gets_k": ("s06.write_kv", [(WRITE, WRITE.replace("[slots] = v", "[slots] = k"))]),
    "s06.write_kv/off_by_one_slot": ("s06.write_kv", [(WRITE, WRITE.replace("[slots]", "[slots + 1]"))]),
    "s06.write_kv/writes_a_copy": ("s06.write_kv", [(WRITE, WRITE.replace("(layer)[slots]", "(layer).clone()[slots]"))]),
    # TODO 4: paged_attention
    "s06.paged_attention/missing_causal_offset": ("s06.paged_attention", [(MASK, MASK.replace(
        "query_pos[:, None]", "torch.arange(t, device=q.device)[:, None]"))]),
    "s06.paged_attention/is_causal_ignores_offset": ("s06.paged_attention", [("attn_mask=mask)", "is_causal=True)")]),
    "s06.paged_attention/gqa_heads_tiled": ("s06.paged_attention", [(GQA, GQA.replace(
        ".repeat_interleave(group, dim=1)", ".repeat(1, group, 1)"))]),
    "s06.paged_attention/mask_on_the_host": ("s06.paged_attention", [(QUERY_POS, QUERY_POS.replace(
        ", device=q.device", ""))]),
    # TODO 5: prefill
    "s06.prefill/zero_computed_tokens_when_fully_cached": ("s06.prefill", [(HIT, "        hit = admission.hit_tokens")]),
    "s06.prefill/never_commits": ("s06.prefill", [("        self.blocks.commit(request_id)\n", "")]),
    "s06.prefill/attention_without_offset": ("s06.prefill", [(
        "return self.attention(q, self.pool, layer, table, hit)", "return self.attention(q, self.pool, layer, table, 0)")]),
    "s06.prefill/token_ids_on_the_host": ("s06.prefill", [(TOKEN_IDS, TOKEN_IDS.replace(", device=self.device", ""))]),
    # issue 21: off by one at the boundary, a reused slot's stale row, the diagonal of the mask
    "s06.suffix_positions/starts_one_past_the_hit": ("s06.suffix_positions", [(POSITIONS, POSITIONS.replace(
        "arange(hit_tokens, num_tokens", "arange(hit_tokens + 1, num_tokens + 1"))]),
    "s06.write_kv/adds_to_the_stale_row": ("s06.write_kv", [(WRITE, (
        "    pool.flat_k(layer).index_add_(0, slots, k)\n    pool.flat_v(layer).index_add_(0, slots, v)\n"))]),
    "s06.paged_attention/query_cannot_see_itself": ("s06.paged_attention", [(MASK, MASK.replace("<=", "<"))]),
    # the quiz
    "s06.quiz/positions_restart_at_zero": ("s06.quiz", [(ANSWERS, ANSWERS.replace('"q1": 12', '"q1": 0'))]),
    "s06.quiz/slot_is_the_position": ("s06.quiz", [(ANSWERS, ANSWERS.replace('"q2": 21', '"q2": 9'))]),
    "s06.quiz/decode_gets_cheaper": ("s06.quiz", [(ANSWERS, ANSWERS.replace('"q5": "B"', '"q5": "A"'))]),
}

# The check whose hint each wrong answer must read first (its mistake's own check), by wrong answer.
LEADS = {
    "s06.suffix_positions/restart_at_zero": "after_a_hit",
    "s06.suffix_positions/float_positions": "positions_are_int64",
    "s06.suffix_positions/ignores_device": "created_on_the_device",
    "s06.suffix_positions/starts_one_past_the_hit": "after_a_hit",
    "s06.slot_mapping/contiguous_table": "whole_table",
    "s06.slot_mapping/block_id_not_scaled": "whole_table",
    "s06.slot_mapping/python_loop_on_the_host": "stays_on_the_device",
    "s06.write_kv/v_gets_k": "v_is_not_k",
    "s06.write_kv/off_by_one_slot": "rows_land_in_their_slots",
    "s06.write_kv/writes_a_copy": "rows_land_in_their_slots",
    "s06.write_kv/adds_to_the_stale_row": "overwrite_replaces_the_row",
    "s06.paged_attention/missing_causal_offset": "offset_shifts_the_mask",
    "s06.paged_attention/is_causal_ignores_offset": "offset_shifts_the_mask",
    "s06.paged_attention/gqa_heads_tiled": "grouped_query_heads",
    "s06.paged_attention/mask_on_the_host": "helpers_on_q_device",
    "s06.paged_attention/query_cannot_see_itself": "causal_mask",
    "s06.prefill/zero_computed_tokens_when_fully_cached": "manager_reports_everything_cached",
    "s06.prefill/never_commits": "whole_prompt_again",
    "s06.prefill/attention_without_offset": "hit_at_block_boundary",
    "s06.prefill/token_ids_on_the_host": "tensors_on_the_engine_device",
    "s06.quiz/positions_restart_at_zero": "q1",
    "s06.quiz/slot_is_the_position": "q2",
    "s06.quiz/decode_gets_cheaper": "q5",
}
