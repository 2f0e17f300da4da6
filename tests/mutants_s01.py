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
    # TODO 2: add_prefix
    "s01.add_prefix/stores_list": ("s01.add_prefix", [(ADD, ADD.replace("prefix = tuple(self._normalize(prefix_tokens))", "prefix = self._normalize(prefix_tokens)"))]),
    "s01.add_prefix/accepts_empty": ("s01.add_prefix", [(ADD, "        prefix = tuple(self._normalize(prefix_tokens))")]),
    "s01.add_prefix/skips_normalize": ("s01.add_prefix", [(ADD, ADD.replace("tuple(self._normalize(prefix_tokens))", "tuple(prefix_tokens)"))]),
    "s01.add_prefix/appends_before_validating": ("s01.add_prefix", [(ADD, """        self.cached_prefixes.append(tuple(prefix_tokens))
        prefix = tuple(self._normalize(prefix_tokens))
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
    # TODO 4: split_prompt
    "s01.split_prompt/off_by_one": ("s01.split_prompt", [(SPLIT, SPLIT.replace("prompt[:hit_len]", "prompt[:hit_len + 1]").replace("prompt[hit_len:]", "prompt[hit_len + 1:]"))]),
    "s01.split_prompt/suffix_overlaps": ("s01.split_prompt", [(SPLIT, SPLIT.replace("prompt[hit_len:]", "prompt[max(hit_len - 1, 0):]"))]),
    "s01.split_prompt/tuples": ("s01.split_prompt", [(SPLIT, SPLIT.replace("prompt[:hit_len]", "tuple(prompt[:hit_len])").replace("prompt[hit_len:]", "tuple(prompt[hit_len:])"))]),
    # TODO 5: cache_stats
    "s01.cache_stats/unrounded": ("s01.cache_stats", [(STATS, "reuse_ratio = hit_tokens / len(prompt) if prompt else 0.0")]),
    "s01.cache_stats/divides_by_zero": ("s01.cache_stats", [(STATS, "reuse_ratio = round(hit_tokens / len(prompt), 4)")]),
    "s01.cache_stats/uncached_ratio": ("s01.cache_stats", [(STATS, "reuse_ratio = round(uncached_tokens / len(prompt), 4) if prompt else 0.0")]),
    "s01.cache_stats/percent": ("s01.cache_stats", [(STATS, "reuse_ratio = round(100 * hit_tokens / len(prompt), 2) if prompt else 0.0")]),
    # TODO 6: quiz
    "s01.quiz/text_boundaries": ("s01.quiz", [(ANSWERS, ANSWERS.replace('"q2": "A"', '"q2": "C"'))]),
    "s01.quiz/longest_registered_not_longest_match": ("s01.quiz", [(ANSWERS, ANSWERS.replace('"q1": "C"', '"q1": "A"'))]),
    "s01.quiz/cached_share_instead_of_suffix": ("s01.quiz", [(ANSWERS, ANSWERS.replace('"q5": 0.03', '"q5": 0.97'))]),
    "s01.quiz/unanswered": ("s01.quiz", [(ANSWERS, '    return {"q1": "C"}\n')]),
}
