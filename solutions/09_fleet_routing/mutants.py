"""Realistic wrong answers for each stage-9 TODO: each must fail its own TODO only."""
from __future__ import annotations

STALE = """        if event.seq <= self._last_seq.get(key, -1):
            return False
"""
RECORD = "        self._last_seq[key] = event.seq\n"
DROP = """            else:
                del live[r]"""
TTFT = "        ttft = queue_ms[r] + cost.prefill_ms(request.input_tokens - cached, cached) + cost.transfer_ms(host)\n"
WITHOUT = "    without = cost.cached_tokens(request, gpu_hit)\n"
WITH = "    with_tier = cost.cached_tokens(request, gpu_hit + host_hit)\n"
ANSWERS = '    return {"q1": "B", "q2": "C", "q3": "A", "q4": "B", "q5": 3}\n'

MUTANTS = {
    # TODO 1: the index
    "s09.apply/ignores_sequence_numbers": ("s09.apply", [(STALE, "")]),
    "s09.apply/one_sequence_per_replica": (
        "s09.apply", [("        key = (event.block, event.replica)\n", "        key = event.replica\n")]),
    "s09.apply/forgets_removals": (
        "s09.apply", [(RECORD, ""), ("            self._holders.setdefault(event.block, {})[event.replica] = event.tier\n",
                                      "            self._holders.setdefault(event.block, {})[event.replica] = event.tier\n"
                                      "            self._last_seq[key] = event.seq\n")]),
    "s09.apply/duplicates_reapplied": (
        "s09.apply", [("        if event.seq <= self._last_seq.get(key, -1):\n",
                       "        if event.seq < self._last_seq.get(key, -1):\n")]),
    # TODO 2: overlap
    "s09.overlap_scores/counts_past_the_first_miss": (
        "s09.overlap_scores", [(DROP, "            else:\n                pass")]),
    "s09.overlap_scores/gpu_blocks_continue_the_host_run": (
        "s09.overlap_scores", [("            if here == tier:\n",
                                "            if here == tier or (tier == HOST and here == GPU):\n")]),
    "s09.overlap_scores/host_run_needs_a_gpu_hit": (
        "s09.overlap_scores", [("            elif tier == GPU and here == HOST:\n",
                                "            elif tier == GPU and here == HOST and scores[r][0]:\n")]),
    # TODO 3: the router
    "s09.choose_replica/ignores_queue": (
        "s09.choose_replica", [(TTFT, TTFT.replace("queue_ms[r] + ", ""))]),
    "s09.choose_replica/ignores_cache": (
        "s09.choose_replica", [("        cached = cost.cached_tokens(request, gpu + host)\n",
                                "        cached = cost.cached_tokens(request, 0)\n")]),
    "s09.choose_replica/ignores_transfer": (
        "s09.choose_replica", [(TTFT, TTFT.replace(" + cost.transfer_ms(host)", ""))]),
    "s09.choose_replica/highest_id_wins_ties": (
        "s09.choose_replica", [("        return ttft, r\n", "        return ttft, -r\n")]),
    "s09.choose_replica/every_held_token_cached": (
        "s09.choose_replica", [("        cached = cost.cached_tokens(request, gpu + host)\n",
                                "        cached = min((gpu + host) * request.block_size, request.input_tokens)\n")]),
    # TODO 4: the tier
    "s09.fetch_or_recompute/always_fetches": (
        "s09.fetch_or_recompute", [("    return fetch < recompute\n", "    return True\n")]),
    "s09.fetch_or_recompute/prices_blocks_as_if_at_the_start": (
        "s09.fetch_or_recompute", [(WITHOUT, "    without = 0\n"),
                                   (WITH, "    with_tier = cost.cached_tokens(request, host_hit)\n")]),
    "s09.fetch_or_recompute/every_held_token_cached": (
        "s09.fetch_or_recompute", [(WITH, "    with_tier = (gpu_hit + host_hit) * request.block_size\n")]),
    # the quiz
    "s09.quiz/applies_in_arrival_order": ("s09.quiz", [(ANSWERS, ANSWERS.replace('"q1": "B"', '"q1": "C"'))]),
    "s09.quiz/counts_blocks_after_the_miss": ("s09.quiz", [(ANSWERS, ANSWERS.replace('"q5": 3', '"q5": 5'))]),
    "s09.quiz/unanswered": ("s09.quiz", [(ANSWERS, '    return {"q1": "B"}\n')]),
}

# The check whose hint each wrong answer must read first (tests/course/test_mutants.py asserts it).
LEADS = {
    "s09.apply/ignores_sequence_numbers": "stale_event_never_undoes",
    "s09.apply/one_sequence_per_replica": "seq_is_per_block",
    "s09.apply/forgets_removals": "stale_event_never_undoes",
    "s09.apply/duplicates_reapplied": "duplicates_change_nothing",
    "s09.overlap_scores/counts_past_the_first_miss": "first_miss_ends_match",
    "s09.overlap_scores/gpu_blocks_continue_the_host_run": "host_then_gpu_ends_match",
    "s09.overlap_scores/host_run_needs_a_gpu_hit": "host_then_gpu_ends_match",
    "s09.choose_replica/ignores_queue": "queue_counts",
    "s09.choose_replica/ignores_cache": "overlap_counts",
    "s09.choose_replica/ignores_transfer": "transfer_counts",
    "s09.choose_replica/highest_id_wins_ties": "tie_rule_and_whole_prompt",
    "s09.choose_replica/every_held_token_cached": "tie_rule_and_whole_prompt",
    "s09.fetch_or_recompute/always_fetches": "slow_link_recomputes",
    "s09.fetch_or_recompute/prices_blocks_as_if_at_the_start": "deep_blocks_cost_more",
    "s09.fetch_or_recompute/every_held_token_cached": "whole_prompt_in_host",
    "s09.quiz/applies_in_arrival_order": "q1",
    "s09.quiz/counts_blocks_after_the_miss": "q5",
    "s09.quiz/unanswered": "q2",
}
