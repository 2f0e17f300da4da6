"""Realistic wrong answers for each stage-1 TODO, graded by the real grader: each fails its TODO only."""
from __future__ import annotations

NORMALIZE = """        normalized = list(tokens)
        for token in normalized:
            if not isinstance(token, int):
                raise TypeError(f"tokens must be ints, got {type(token).__name__}: {token!r}")
        return normalized"""
ADD = """        prefix = tuple(self._normalize(prefix_tokens))
        if not prefix:
            raise ValueError("an empty prefix cannot be cached")"""
MATCH = "is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix"
SPLIT = """        reusable_prefix = prompt[:hit_len]
        suffix = prompt[hit_len:]"""
STATS = "reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0"
ANSWERS = '    return {"q1": "C", "q2": "A", "q3": "B", "q4": "B", "q5": 0.03}\n'

MUTANTS = {
    # TODO 1: _normalize
    "s01.normalize/accepts_strings": ("s01.normalize", [(NORMALIZE, "        return list(tokens)")]),
    "s01.normalize/sorts": ("s01.normalize", [(NORMALIZE, "        return sorted(tokens)")]),
    "s01.normalize/returns_tuple": ("s01.normalize", [(NORMALIZE, NORMALIZE.replace("return normalized", "return tuple(normalized)"))]),
    "s01.normalize/returns_input_itself": ("s01.normalize", [(NORMALIZE, NORMALIZE.replace("normalized = list(tokens)", "normalized = tokens if isinstance(tokens, list) else list(tokens)"))]),
    "s01.normalize/drops_repeated_tokens": ("s01.normalize", [(NORMALIZE, NORMALIZE.replace("list(tokens)", "list(dict.fromkeys(tokens))"))]),
    # checks the caller's iterable, then copies it: a generator is empty by then
    "s01.normalize/checks_then_copies": ("s01.normalize", [(NORMALIZE, """        for token in tokens:
            if not isinstance(token, int):
                raise TypeError(f"tokens must be ints, got {type(token).__name__}: {token!r}")
        return list(tokens)""")]),
    "s01.normalize/refuses_empty": ("s01.normalize", [(NORMALIZE, NORMALIZE.replace("        return normalized", """        if not normalized:
            raise ValueError("no tokens")
        return normalized"""))]),
    "s01.normalize/converts_with_int": ("s01.normalize", [(NORMALIZE, "        return [int(token) for token in tokens]")]),
    "s01.normalize/accepts_whole_floats": ("s01.normalize", [(NORMALIZE, NORMALIZE.replace(
        "if not isinstance(token, int):", "if not isinstance(token, int) and not (isinstance(token, float) and token.is_integer()):"))]),
    # a falsy token taken for "nothing to check": 0.0, None and '' pass as token ids
    "s01.normalize/falsy_tokens_unchecked": ("s01.normalize", [(NORMALIZE, NORMALIZE.replace(
        "if not isinstance(token, int):", "if token and not isinstance(token, int):"))]),
    # TODO 2: add_prefix
    "s01.add_prefix/stores_list": ("s01.add_prefix", [(ADD, ADD.replace("prefix = tuple(self._normalize(prefix_tokens))", "prefix = self._normalize(prefix_tokens)"))]),
    "s01.add_prefix/accepts_empty": ("s01.add_prefix", [(ADD, "        prefix = tuple(self._normalize(prefix_tokens))")]),
    "s01.add_prefix/skips_normalize": ("s01.add_prefix", [(ADD, ADD.replace("tuple(self._normalize(prefix_tokens))", "tuple(prefix_tokens)"))]),
    "s01.add_prefix/appends_before_validating": ("s01.add_prefix", [(ADD, """        self.cached_prefixes.append(tuple(prefix_tokens))
        prefix = tuple(self._normalize(prefix_tokens))
        if not prefix:
            raise ValueError("an empty prefix cannot be cached")""")]),
    # validates with TODO 1, then reads the caller's iterable again: a generator is empty by then
    # "not given" decided on the argument's truth value: an empty generator is truthy and registers ()
    "s01.add_prefix/falsy_argument_check": ("s01.add_prefix", [(ADD, """        if not prefix_tokens:
            raise ValueError("an empty prefix cannot be cached")
        prefix = tuple(self._normalize(prefix_tokens))""")]),
    "s01.add_prefix/reads_the_generator_twice": ("s01.add_prefix", [(ADD, """        self._normalize(prefix_tokens)
        prefix = tuple(prefix_tokens)
        if not prefix:
            raise ValueError("an empty prefix cannot be cached")""")]),
    # TODO 3: match_prefix
    "s01.match_prefix/substring": ("s01.match_prefix", [(MATCH, "is_match = any(tuple(prompt[i:i + len(cached_prefix)]) == cached_prefix for i in range(len(prompt)))")]),
    "s01.match_prefix/suffix": ("s01.match_prefix", [(MATCH, "is_match = tuple(prompt[len(prompt) - len(cached_prefix):]) == cached_prefix")]),
    "s01.match_prefix/first_token_only": ("s01.match_prefix", [(MATCH, "is_match = prompt[:1] == list(cached_prefix[:1])")]),
    "s01.match_prefix/off_by_one": ("s01.match_prefix", [(MATCH, "is_match = tuple(prompt[: len(cached_prefix) - 1]) == cached_prefix[:-1]")]),
    # token boundaries: comparing text instead of ids ("1 2" starts "1 23"; "12" + "3" == "1" + "23")
    "s01.match_prefix/joined_digits": ("s01.match_prefix", [
        (MATCH, "is_match = ''.join(map(str, prompt)).startswith(''.join(map(str, cached_prefix)))")]),
    "s01.match_prefix/space_joined_text": ("s01.match_prefix", [
        (MATCH, "is_match = ' '.join(map(str, prompt)).startswith(' '.join(map(str, cached_prefix)))")]),
    "s01.match_prefix/str_of_list": ("s01.match_prefix", [
        (MATCH, "is_match = str(prompt).startswith(str(list(cached_prefix))[:-1])")]),
    # equal ids compared by identity: small ints are cached objects, ids above 256 built at run time are not
    "s01.match_prefix/identity_not_equality": ("s01.match_prefix", [
        (MATCH, "is_match = all(a is b for a, b in zip(prompt, cached_prefix))")]),
    "s01.match_prefix/needs_a_token_left": ("s01.match_prefix", [
        (MATCH, "is_match = len(cached_prefix) < len(prompt) and " + MATCH.removeprefix("is_match = "))]),
    "s01.match_prefix/compares_the_callers_sequence": ("s01.match_prefix", [
        (MATCH, MATCH.replace("prompt[:", "prompt_tokens[:"))]),
    # TODO 4: split_prompt
    "s01.split_prompt/off_by_one": ("s01.split_prompt", [(SPLIT, SPLIT.replace("prompt[:hit_len]", "prompt[:hit_len + 1]").replace("prompt[hit_len:]", "prompt[hit_len + 1:]"))]),
    "s01.split_prompt/suffix_overlaps": ("s01.split_prompt", [(SPLIT, SPLIT.replace("prompt[hit_len:]", "prompt[max(hit_len - 1, 0):]"))]),
    "s01.split_prompt/tuples": ("s01.split_prompt", [(SPLIT, SPLIT.replace("prompt[:hit_len]", "tuple(prompt[:hit_len])").replace("prompt[hit_len:]", "tuple(prompt[hit_len:])"))]),
    "s01.split_prompt/cuts_the_callers_sequence": ("s01.split_prompt", [(SPLIT, SPLIT.replace("= prompt[", "= prompt_tokens["))]),
    # TODO 5: cache_stats
    "s01.cache_stats/unrounded": ("s01.cache_stats", [(STATS, "reuse_ratio = hit_tokens / len(prompt) if prompt else 0.0")]),
    "s01.cache_stats/divides_by_zero": ("s01.cache_stats", [(STATS, "reuse_ratio = round(hit_tokens / len(prompt), 4)")]),
    "s01.cache_stats/uncached_ratio": ("s01.cache_stats", [(STATS, "reuse_ratio = round(uncached_tokens / len(prompt), 4) if prompt else 0.0")]),
    "s01.cache_stats/percent": ("s01.cache_stats", [(STATS, "reuse_ratio = round(100 * hit_tokens / len(prompt), 2) if prompt else 0.0")]),
    "s01.cache_stats/truncates": ("s01.cache_stats", [(STATS, "reuse_ratio = int(hit_tokens / len(prompt) * 10_000) / 10_000 if prompt else 0.0")]),
    # the caller's iterable read again after TODO 1 copied it: a generator prompt gets 0 hits
    "s01.cache_stats/reads_the_generator_twice": ("s01.cache_stats", [(
        "hit_tokens = self.match_prefix(prompt)", "hit_tokens = self.match_prefix(prompt_tokens)")]),
    "s01.cache_stats/two_decimals": ("s01.cache_stats", [(STATS, STATS.replace(", 4)", ", 2)"))]),
    # "is there a token?" asked of the caller's object: an empty generator is truthy, and divides by zero
    "s01.cache_stats/guard_on_the_callers_object": ("s01.cache_stats", [(STATS, STATS.replace(
        "if prompt else", "if prompt_tokens else"))]),
    # TODO 6: quiz
    "s01.quiz/text_boundaries": ("s01.quiz", [(ANSWERS, ANSWERS.replace('"q2": "A"', '"q2": "C"'))]),
    "s01.quiz/longest_registered_not_longest_match": ("s01.quiz", [(ANSWERS, ANSWERS.replace('"q1": "C"', '"q1": "A"'))]),
    "s01.quiz/cached_share_instead_of_suffix": ("s01.quiz", [(ANSWERS, ANSWERS.replace('"q5": 0.03', '"q5": 0.97'))]),
    "s01.quiz/unanswered": ("s01.quiz", [(ANSWERS, '    return {"q1": "C"}\n')]),
    # audit, issue 41 class 2: the rule checked on the first token only
    "s01.normalize/first_token_type_only": ("s01.normalize", [(NORMALIZE, NORMALIZE.replace(
        "for token in normalized:", "for token in normalized[:1]:"))]),
}

# The check whose hint each wrong answer must read first (its mistake's own check), by wrong answer.
LEADS = {
    "s01.normalize/accepts_strings": "rejects_string_token",
    "s01.normalize/sorts": "keeps_order",
    "s01.normalize/returns_tuple": "tuple_becomes_list",
    "s01.normalize/returns_input_itself": "returns_a_new_list",
    "s01.normalize/drops_repeated_tokens": "keeps_order",
    "s01.normalize/checks_then_copies": "generator_read_once",
    "s01.normalize/refuses_empty": "empty_and_one_token",
    "s01.normalize/converts_with_int": "rejects_string_token",
    "s01.normalize/accepts_whole_floats": "rejects_whole_float",
    "s01.add_prefix/stores_list": "same_tokens_any_container",
    "s01.add_prefix/accepts_empty": "rejects_empty",
    "s01.add_prefix/skips_normalize": "bad_token_stores_nothing",
    "s01.add_prefix/appends_before_validating": "bad_token_stores_nothing",
    "s01.add_prefix/reads_the_generator_twice": "same_tokens_any_container",
    "s01.match_prefix/substring": "middle_does_not_count",
    "s01.match_prefix/suffix": "middle_does_not_count",
    "s01.match_prefix/first_token_only": "seed_no_match",
    "s01.match_prefix/off_by_one": "seed_no_match",
    "s01.match_prefix/joined_digits": "token_boundaries",
    "s01.match_prefix/space_joined_text": "token_boundaries",
    "s01.match_prefix/str_of_list": "token_boundaries",
    "s01.match_prefix/identity_not_equality": "large_ids_built_at_run_time",
    "s01.match_prefix/needs_a_token_left": "whole_prompt_one_token_and_empty",
    "s01.match_prefix/compares_the_callers_sequence": "any_iterable_prompt",
    "s01.split_prompt/off_by_one": "seed_split",
    "s01.split_prompt/suffix_overlaps": "seed_split",
    "s01.split_prompt/tuples": "seed_split",
    "s01.split_prompt/cuts_the_callers_sequence": "tuple_or_generator_gives_lists",
    "s01.cache_stats/unrounded": "ratio_rounded_to_4_decimals",
    "s01.cache_stats/divides_by_zero": "empty_prompt_stats",
    "s01.cache_stats/uncached_ratio": "seed_stats",
    "s01.cache_stats/percent": "seed_stats",
    "s01.cache_stats/truncates": "ratio_rounded_to_4_decimals",
    "s01.cache_stats/two_decimals": "ratio_rounded_to_4_decimals",
    "s01.cache_stats/reads_the_generator_twice": "generator_prompt_read_once",
    "s01.cache_stats/guard_on_the_callers_object": "empty_iterator_prompt",
    "s01.normalize/falsy_tokens_unchecked": "falsy_tokens_are_checked_too",
    "s01.add_prefix/falsy_argument_check": "empty_in_any_container_is_refused",
    "s01.quiz/text_boundaries": "q2",
    "s01.quiz/longest_registered_not_longest_match": "q1",
    "s01.quiz/cached_share_instead_of_suffix": "q5",
    "s01.quiz/unanswered": "q2",
    "s01.normalize/first_token_type_only": "rejects_string_token",
}
