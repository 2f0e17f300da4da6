"""Realistic wrong answers for each stage-2 TODO, graded by the real grader: each fails its TODO only.
Also a few *right* answers written differently from the reference, which must pass everything."""
from __future__ import annotations

from autograder.core import layout
from autograder.core.pysource import solution_region

SPLIT = "blocks = list(zip(*[iter(tokens[: num_full * block_size])] * block_size))"
DATA = "data = frame(root_seed if parent is None else parent) + frame(encode_tokens(block_tokens))"
TAG = "data += frame(kind.encode()) + frame(value.encode())"
DIGEST = "    key = hashlib.sha256(data).digest()\n"
# chain_keys' reference builds hash_block's bytes itself (faster, bit-identical keys)
CHAIN_PREFIX = "        prefix = key_head + parent + block_head\n"
CHAIN_FIRST = "        prefix = frame(root_seed) + block_head\n"
CHAIN_END = "    end = len(tokens) - len(tokens) % block_size\n"
CHAIN_TAGS = "for kind, value in normalize_extra_keys(extra_keys))"
CHAIN_TAG_BYTES = 'tags = b"".join(frame(kind.encode()) + frame(value.encode())'
CHAIN_DIGEST = "parent = hashlib.sha256(prefix + encoded[start : start + width] + tags).digest()"
_REFERENCE = layout.stage_files("s02").reference.read_text(encoding="utf-8")
_begin, _end = solution_region(_REFERENCE, "chain_keys")
CHAIN_BODY = "\n".join(_REFERENCE.splitlines()[_begin + 1:_end]) + "\n"  # the whole reference answer of TODO 3
CHAIN_LOOP = """    parent: bytes | None = None
    for block in split_blocks(tokens, block_size):
        parent = hash_block(parent, block, extra_keys, root_seed=root_seed)
        keys.append(parent)
"""
RUN = """        if key not in table:
            break
        hits += 1"""
RUN_LOOP = "    for key in keys:\n" + RUN + "\n"
ANSWERS = '    return {"q1": 62, "q2": "B", "q3": "A", "q4": "C", "q5": 32}\n'

# Keys remembered between calls under only some of their inputs (issue 12: memoized keys). Each passes
# the checks that call it once per input; only a sequence of calls with the same tokens under other
# extra keys or root seeds shows the stale key.
MEMO_BY_PARENT_AND_TOKENS = """    # keys are costly: remember them
    memo = hash_block.__dict__.setdefault("memo", {})
    if (parent, tuple(block_tokens)) not in memo:
        memo[(parent, tuple(block_tokens))] = hashlib.sha256(data).digest()
    key = memo[(parent, tuple(block_tokens))]
"""
MEMO_WITHOUT_ROOT_SEED = """    memo = hash_block.__dict__.setdefault("memo", {})
    key = memo.setdefault((parent, tuple(block_tokens), tags), hashlib.sha256(data).digest())
"""
CHAIN_MEMO_BY_TOKENS = """    memo = chain_keys.__dict__.setdefault("memo", {})
    run = (tuple(tokens), block_size)
    if run not in memo:
        parent = None
        for block in split_blocks(tokens, block_size):
            parent = hash_block(parent, block, extra_keys, root_seed=root_seed)
            memo.setdefault(run, []).append(parent)
    keys.extend(memo.get(run, []))
"""
CHAIN_MEMO_BY_PREFIX = """    memo = chain_keys.__dict__.setdefault("memo", {})  # token prefix -> key of its last block
    parent = None
    for i, block in enumerate(split_blocks(tokens, block_size)):
        prefix = tuple(tokens[: (i + 1) * block_size])
        if prefix not in memo:
            memo[prefix] = hash_block(parent, block, extra_keys, root_seed=root_seed)
        parent = memo[prefix]
        keys.append(parent)
"""
CHAIN_MEMO_WITHOUT_ROOT_SEED = """    memo = chain_keys.__dict__.setdefault("memo", {})
    run = (tuple(tokens), block_size, normalize_extra_keys(extra_keys))
    if run not in memo:
        memo[run] = []
        parent = None
        for block in split_blocks(tokens, block_size):
            parent = hash_block(parent, block, extra_keys, root_seed=root_seed)
            memo[run].append(parent)
    keys.extend(memo[run])
"""

MUTANTS = {
    # TODO 1: split_blocks
    "s02.split_blocks/keeps_partial_tail": ("s02.split_blocks", [
        (SPLIT, "blocks = [tuple(tokens[i : i + block_size]) for i in range(0, len(tokens), block_size)]")]),
    "s02.split_blocks/lists_not_tuples": ("s02.split_blocks", [
        (SPLIT, "blocks = [list(tokens[i : i + block_size]) for i in range(0, num_full * block_size, block_size)]")]),
    "s02.split_blocks/overlapping_windows": ("s02.split_blocks", [
        (SPLIT, "blocks = [tuple(tokens[i : i + block_size]) for i in range(num_full)]")]),
    "s02.split_blocks/misses_last_block": ("s02.split_blocks", [
        (SPLIT, "blocks = [tuple(tokens[i : i + block_size]) for i in range(0, len(tokens) - block_size, block_size)]")]),
    # takes the blocks off the caller's list (a tuple or a range cannot even be changed)
    "s02.split_blocks/consumes_the_callers_list": ("s02.split_blocks", [(SPLIT, """blocks = []
    while len(tokens) >= block_size:
        blocks.append(tuple(tokens[:block_size]))
        del tokens[:block_size]""")]),
    "s02.split_blocks/drops_repeated_blocks": ("s02.split_blocks", [(SPLIT, SPLIT.replace("list(zip(", "list(dict.fromkeys(zip(") + ")")]),
    # TODO 2: hash_block
    "s02.hash_block/python_hash": ("s02.hash_block", [(DIGEST, "    key = hash(data).to_bytes(8, 'little', signed=True)\n")]),
    "s02.hash_block/ignores_parent": ("s02.hash_block", [(DATA, DATA.replace("root_seed if parent is None else parent", "root_seed"))]),
    "s02.hash_block/untagged_extra_keys": ("s02.hash_block", [(TAG, "data += frame(value.encode())")]),
    "s02.hash_block/raw_extra_keys": ("s02.hash_block", [("for kind, value in tags:", "for kind, value in extra_keys or ():")]),
    "s02.hash_block/str_encoding": ("s02.hash_block", [
        (DATA, DATA.replace("frame(encode_tokens(block_tokens))", "frame(str(list(block_tokens)).encode())"))]),
    "s02.hash_block/module_root_seed": ("s02.hash_block", [(DATA, DATA.replace("root_seed if", "ROOT_SEED if"))]),
    # token boundaries: the digits of 1, 23 and of 12, 3 are the same text
    "s02.hash_block/joined_digits": ("s02.hash_block", [
        (DATA, DATA.replace("frame(encode_tokens(block_tokens))", "frame(''.join(map(str, block_tokens)).encode())"))]),
    "s02.hash_block/memo_by_parent_and_tokens": ("s02.hash_block", [(DIGEST, MEMO_BY_PARENT_AND_TOKENS)]),
    "s02.hash_block/memo_without_root_seed": ("s02.hash_block", [(DIGEST, MEMO_WITHOUT_ROOT_SEED)]),
    "s02.hash_block/unframed_extra_keys": ("s02.hash_block", [(TAG, "data += kind.encode() + value.encode()")]),
    "s02.hash_block/extra_keys_in_given_order": ("s02.hash_block", [
        ("for kind, value in tags:", "for kind, value in [pair for pair in extra_keys or () if pair[1]]:")]),
    # "robust" tenant ids: values that differ in case, spaces or Unicode form merged (a cross-tenant hit)
    "s02.hash_block/pairs_through_a_dict": ("s02.hash_block", [("for kind, value in tags:", "for kind, value in sorted(dict(tags).items()):")]),
    "s02.hash_block/case_folded_values": ("s02.hash_block", [(TAG, TAG.replace("value.encode()", "value.casefold().encode()"))]),
    "s02.hash_block/stripped_values": ("s02.hash_block", [(TAG, TAG.replace("value.encode()", "value.strip().encode()"))]),
    "s02.hash_block/nfkc_values": ("s02.hash_block", [
        (TAG, TAG.replace("value.encode()", "__import__('unicodedata').normalize('NFKC', value).encode()"))]),
    "s02.hash_block/ascii_values": ("s02.hash_block", [(TAG, TAG.replace("value.encode()", "value.encode('ascii', 'replace')"))]),
    # TODO 3: chain_keys
    "s02.chain_keys/no_parent": ("s02.chain_keys", [(CHAIN_PREFIX, CHAIN_FIRST)]),
    "s02.chain_keys/drops_extra_keys": ("s02.chain_keys", [(CHAIN_DIGEST, CHAIN_DIGEST.replace(" + tags)", ")"))]),
    "s02.chain_keys/drops_root_seed": ("s02.chain_keys", [(CHAIN_FIRST, CHAIN_FIRST.replace("root_seed", "ROOT_SEED"))]),
    "s02.chain_keys/hashes_partial_tail": ("s02.chain_keys", [(CHAIN_END, "    end = len(tokens)\n")]),
    # the same mistakes in the straightforward loop the hint describes
    "s02.chain_keys/loop_without_parent": ("s02.chain_keys", [
        (CHAIN_BODY, CHAIN_LOOP.replace("hash_block(parent,", "hash_block(None,"))]),
    "s02.chain_keys/loop_drops_extra_keys": ("s02.chain_keys", [
        (CHAIN_BODY, CHAIN_LOOP.replace("block, extra_keys, root_seed", "block, root_seed"))]),
    "s02.chain_keys/loop_hashes_partial_tail": ("s02.chain_keys", [
        (CHAIN_BODY, CHAIN_LOOP.replace("split_blocks(tokens, block_size)",
                                        "[tokens[i:i + block_size] for i in range(0, len(tokens), block_size)]"))]),
    "s02.chain_keys/memo_by_tokens": ("s02.chain_keys", [(CHAIN_BODY, CHAIN_MEMO_BY_TOKENS)]),
    "s02.chain_keys/memo_by_token_prefix": ("s02.chain_keys", [(CHAIN_BODY, CHAIN_MEMO_BY_PREFIX)]),
    "s02.chain_keys/memo_without_root_seed": ("s02.chain_keys", [(CHAIN_BODY, CHAIN_MEMO_WITHOUT_ROOT_SEED)]),
    # memoised under every input, but hands out the memo's own list: a caller's append changes the next answer
    "s02.chain_keys/returns_the_memo_list": ("s02.chain_keys", [(CHAIN_BODY, """    memo = chain_keys.__dict__.setdefault("memo", {})
    run = (tuple(tokens), block_size, normalize_extra_keys(extra_keys), root_seed)
    if run not in memo:
        memo[run] = []
        parent = None
        for block in split_blocks(tokens, block_size):
            parent = hash_block(parent, block, extra_keys, root_seed=root_seed)
            memo[run].append(parent)
    keys = memo[run]
""")]),
    "s02.chain_keys/extra_keys_in_given_order": ("s02.chain_keys", [(CHAIN_TAGS, CHAIN_TAGS.replace(
        "normalize_extra_keys(extra_keys))", "extra_keys or () if value)"))]),
    # pairs collapsed by a dict: one value per kind, so images [C, B] get the keys of images [A, B]
    # a falsy seed taken for "not given": an empty seed silently becomes the default one
    "s02.chain_keys/empty_seed_becomes_default": ("s02.chain_keys", [(CHAIN_END, "    root_seed = root_seed or ROOT_SEED\n" + CHAIN_END)]),
    "s02.chain_keys/pairs_through_a_dict": ("s02.chain_keys", [(CHAIN_TAGS, CHAIN_TAGS.replace(
        "normalize_extra_keys(extra_keys))", "sorted(dict(normalize_extra_keys(extra_keys)).items()))"))]),
    "s02.chain_keys/case_folded_values": ("s02.chain_keys", [(CHAIN_TAG_BYTES, CHAIN_TAG_BYTES.replace("value.encode()", "value.lower().encode()"))]),
    # TODO 4: longest_cached_run
    "s02.longest_cached_run/skips_misses": ("s02.longest_cached_run", [(RUN, RUN.replace("break", "continue"))]),
    "s02.longest_cached_run/tests_value": ("s02.longest_cached_run", [(RUN, RUN.replace("if key not in table:", "if not table.get(key):"))]),
    "s02.longest_cached_run/from_the_end": ("s02.longest_cached_run", [("    for key in keys:\n", "    for key in reversed(keys):\n")]),
    # right counts at the wrong cost (issue 12: budgets for the run count)
    "s02.longest_cached_run/copies_the_table_to_a_set": ("s02.longest_cached_run", [
        (RUN_LOOP, "    cached = set(table)\n" + RUN_LOOP.replace("not in table", "not in cached"))]),
    "s02.longest_cached_run/scans_the_table_as_a_list": ("s02.longest_cached_run", [
        (RUN, RUN.replace("not in table", "not in list(table)"))]),
    "s02.longest_cached_run/rechecks_the_keys_so_far": ("s02.longest_cached_run", [
        (RUN_LOOP, "    while hits < len(keys) and all(key in table for key in keys[: hits + 1]):\n        hits += 1\n")]),
    "s02.longest_cached_run/counts_each_key_once": ("s02.longest_cached_run", [("    for key in keys:\n", "    for key in dict.fromkeys(keys):\n")]),
    # TODO 5: quiz
    "s02.quiz/tail_gets_a_key": ("s02.quiz", [(ANSWERS, ANSWERS.replace('"q1": 62', '"q1": 63'))]),
    "s02.quiz/later_blocks_still_equal": ("s02.quiz", [(ANSWERS, ANSWERS.replace('"q2": "B"', '"q2": "A"'))]),
    "s02.quiz/counts_hits_after_a_miss": ("s02.quiz", [(ANSWERS, ANSWERS.replace('"q5": 32', '"q5": 48'))]),
    "s02.quiz/unanswered": ("s02.quiz", [(ANSWERS, '    return {"q1": 62}\n')]),
    # only a falsy parent taken for "no parent": b'' gets the root seed's key
    "s02.hash_block/parent_or_root_seed": ("s02.hash_block", [(DATA, DATA.replace(
        "root_seed if parent is None else parent", "parent or root_seed"))]),
    # the partial tail trimmed off the caller's own list
    "s02.chain_keys/drops_the_callers_tail": ("s02.chain_keys", [(CHAIN_END, CHAIN_END + """    if isinstance(tokens, list):
        del tokens[end:]
""")]),
    # audit, issue 41 class 2: only the first extra key digested
    "s02.hash_block/first_tag_only": ("s02.hash_block", [("    for kind, value in tags:\n", "    for kind, value in list(tags)[:1]:\n")]),
    # audit, issue 41 class 6: the caller's keys consumed (popped from the end of the reversed list)
    "s02.longest_cached_run/pops_the_callers_keys": ("s02.longest_cached_run", [(RUN_LOOP, """    keys.reverse()
    while keys and keys[-1] in table:
        keys.pop()
        hits += 1
""")]),
}

# Right answers that do not look like the reference: they must pass every TODO.
EQUIVALENT = {
    "split_by_slicing": [(SPLIT, "blocks = [tuple(tokens[i * block_size : (i + 1) * block_size]) for i in range(num_full)]")],
    "hash_incrementally": [(DATA, "h = hashlib.sha256(frame(parent if parent is not None else root_seed))\n"
                                  "    h.update(frame(encode_tokens(block_tokens)))\n    data = b''"),
                           (TAG, "h.update(frame(kind.encode()) + frame(value.encode()))"),
                           (DIGEST, "    key = h.digest()\n")],
    # the loop the hint describes (the reference builds the same bytes faster)
    "chain_with_hash_block": [(CHAIN_BODY, CHAIN_LOOP)],
    # remembering keys is fine when every input of the key is part of what they are remembered under
    "hash_memo_under_all_inputs": [(DIGEST, """    memo = hash_block.__dict__.setdefault("memo", {})
    entry = (root_seed if parent is None else parent, tuple(block_tokens), tags)
    if entry not in memo:
        memo[entry] = hashlib.sha256(data).digest()
    key = memo[entry]
""")],
    "run_with_takewhile": [(RUN_LOOP, "    import itertools\n    hits = sum(1 for _ in itertools.takewhile(table.__contains__, keys))\n")],
    "chain_by_index": [(CHAIN_BODY, "    blocks = split_blocks(tokens, block_size)\n    for i in range(len(blocks)):\n"
                        "        keys.append(hash_block(keys[i - 1] if i else None, blocks[i], extra_keys, root_seed=root_seed))\n")],
}

# The check whose hint each wrong answer must read first (its mistake's own check), by wrong answer.
LEADS = {
    "s02.hash_block/parent_or_root_seed": "empty_parent_is_a_parent",
    "s02.chain_keys/drops_the_callers_tail": "callers_tokens_left_alone",
    "s02.split_blocks/keeps_partial_tail": "tail_is_dropped",
    "s02.split_blocks/lists_not_tuples": "exact_multiple",
    "s02.split_blocks/overlapping_windows": "exact_multiple",
    "s02.split_blocks/misses_last_block": "exact_multiple",
    "s02.split_blocks/consumes_the_callers_list": "any_sequence_left_alone",
    "s02.split_blocks/drops_repeated_blocks": "repeats_size_one_and_empty",
    "s02.hash_block/python_hash": "first_block",
    "s02.hash_block/ignores_parent": "parent_is_digested",
    "s02.hash_block/untagged_extra_keys": "extra_keys_are_tagged",
    "s02.hash_block/raw_extra_keys": "empty_salt_is_no_salt",
    "s02.hash_block/str_encoding": "first_block",
    "s02.hash_block/module_root_seed": "same_tokens_other_extra_keys_in_one_sequence",
    "s02.hash_block/joined_digits": "first_block",
    "s02.hash_block/memo_by_parent_and_tokens": "same_tokens_other_extra_keys_in_one_sequence",
    "s02.hash_block/memo_without_root_seed": "same_tokens_other_extra_keys_in_one_sequence",
    "s02.hash_block/unframed_extra_keys": "framing_keeps_kind_and_value_apart",
    "s02.hash_block/extra_keys_in_given_order": "order_of_extra_keys_does_not_matter",
    "s02.hash_block/pairs_through_a_dict": "pairs_of_one_kind_all_count",
    "s02.hash_block/case_folded_values": "extra_key_values_kept_exactly",
    "s02.hash_block/stripped_values": "extra_key_values_kept_exactly",
    "s02.hash_block/nfkc_values": "extra_key_values_kept_exactly",
    "s02.hash_block/ascii_values": "extra_key_values_kept_exactly",
    "s02.chain_keys/no_parent": "three_blocks",
    "s02.chain_keys/drops_extra_keys": "extra_keys_reach_every_block",
    "s02.chain_keys/drops_root_seed": "same_prompt_other_salts_in_one_sequence",
    "s02.chain_keys/hashes_partial_tail": "partial_tail_has_no_key",
    "s02.chain_keys/loop_without_parent": "three_blocks",
    "s02.chain_keys/loop_drops_extra_keys": "extra_keys_reach_every_block",
    "s02.chain_keys/loop_hashes_partial_tail": "partial_tail_has_no_key",
    "s02.chain_keys/memo_by_tokens": "same_prompt_other_salts_in_one_sequence",
    "s02.chain_keys/memo_by_token_prefix": "same_prompt_other_salts_in_one_sequence",
    "s02.chain_keys/memo_without_root_seed": "same_prompt_other_salts_in_one_sequence",
    "s02.chain_keys/extra_keys_in_given_order": "non_ascii_extra_keys_in_any_order",
    "s02.chain_keys/pairs_through_a_dict": "pairs_of_one_kind_count_in_every_block",
    "s02.chain_keys/returns_the_memo_list": "fresh_list_per_call",
    "s02.chain_keys/empty_seed_becomes_default": "empty_root_seed_is_not_the_default",
    "s02.chain_keys/case_folded_values": "non_ascii_extra_keys_in_any_order",
    "s02.longest_cached_run/skips_misses": "stops_at_first_miss",
    "s02.longest_cached_run/tests_value": "stored_value_does_not_matter",
    "s02.longest_cached_run/from_the_end": "first_key_missing",
    "s02.longest_cached_run/copies_the_table_to_a_set": "lookups_stay_cheap",
    "s02.longest_cached_run/scans_the_table_as_a_list": "lookups_stay_cheap",
    "s02.longest_cached_run/rechecks_the_keys_so_far": "lookups_stay_cheap",
    "s02.longest_cached_run/counts_each_key_once": "stored_value_does_not_matter",
    "s02.quiz/tail_gets_a_key": "q1",
    "s02.quiz/later_blocks_still_equal": "q2",
    "s02.quiz/counts_hits_after_a_miss": "q5",
    "s02.quiz/unanswered": "q2",
    "s02.hash_block/first_tag_only": "order_of_extra_keys_does_not_matter",
    "s02.longest_cached_run/pops_the_callers_keys": "lookups_stay_cheap",
}
