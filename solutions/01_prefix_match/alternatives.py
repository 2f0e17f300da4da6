"""Correct answers to each stage-1 code TODO written another way than the reference: each must earn
full marks (``tests/course/test_mutants.py`` grades them with the wrong answers). ``ALTERNATIVES`` maps a TODO
id to ``{name: edits}``, the edits being text replacements of the reference module inside that
TODO's function, as in ``mutants.py`` beside this file."""
from __future__ import annotations

from tests.mutants_s01 import ADD, MATCH, NORMALIZE, SPLIT, STATS

STATS_BLOCK = """        hit_tokens = self.match_prefix(prompt)
        uncached_tokens = len(prompt) - hit_tokens
        """ + STATS + "\n"

ALTERNATIVES = {
    "s01.normalize": {
        "comprehension_then_all": [(NORMALIZE, """        normalized = [token for token in tokens]
        if not all(isinstance(token, int) for token in normalized):
            bad = next(token for token in normalized if not isinstance(token, int))
            raise TypeError(f"not a token id: {bad!r}")
        return normalized""")],
        "append_while_checking": [(NORMALIZE, """        normalized = []
        for token in tokens:
            if isinstance(token, int):
                normalized.append(token)
            else:
                raise TypeError(type(token).__name__)
        return normalized""")],
        "operator_index": [(NORMALIZE, """        import operator
        # operator.index accepts exactly the integers and raises TypeError for anything else
        return [operator.index(token) for token in tokens]""")],
        "numbers_integral_with_map": [(NORMALIZE, """        import numbers
        normalized = list(iter(tokens))
        if any(map(lambda t: not isinstance(t, numbers.Integral), normalized)):
            raise TypeError("every token must be an integer id")
        return normalized""")],
    },
    "s01.add_prefix": {
        "star_unpacking": [(ADD, """        prefix = (*self._normalize(prefix_tokens),)
        if len(prefix) == 0:
            raise ValueError("empty prefix")""")],
        "walrus": [(ADD, """        if not (prefix := tuple(self._normalize(prefix_tokens))):
            raise ValueError("empty prefix")""")],
        "check_the_list_then_freeze": [(ADD, """        tokens = self._normalize(prefix_tokens)
        if tokens == []:
            raise ValueError("empty prefix")
        prefix = tuple(tokens)""")],
    },
    "s01.match_prefix": {
        "all_over_zip": [(MATCH, "is_match = all(a == b for a, b in zip(prompt, cached_prefix))")],
        "list_against_list": [(MATCH, "is_match = prompt[: len(cached_prefix)] == list(cached_prefix)")],
        "first_difference_with_next": [(MATCH, "is_match = next((False for i, t in enumerate(cached_prefix) "
                                                "if prompt[i] != t), True)")],
        "itertools_starmap": [(MATCH, "is_match = all(__import__('itertools').starmap(__import__('operator').eq, "
                                      "zip(cached_prefix, prompt)))")],
        "numpy_array_equal": [(MATCH, "is_match = __import__('numpy').array_equal(prompt[: len(cached_prefix)], "
                                      "cached_prefix)")],
    },
    "s01.split_prompt": {
        "tuple_assignment": [(SPLIT, "        reusable_prefix, suffix = prompt[:hit_len], prompt[hit_len:]")],
        "itertools_islice": [(SPLIT, """        from itertools import islice
        reusable_prefix = list(islice(prompt, hit_len))
        suffix = list(islice(prompt, hit_len, None))""")],
        "one_loop": [(SPLIT, """        reusable_prefix, suffix = [], []
        for i, token in enumerate(prompt):
            (reusable_prefix if i < hit_len else suffix).append(token)""")],
        "deque_popleft": [(SPLIT, """        from collections import deque
        rest = deque(prompt)
        reusable_prefix = [rest.popleft() for _ in range(hit_len)]
        suffix = list(rest)""")],
    },
    "s01.cache_stats": {
        "from_the_split": [(STATS_BLOCK, """        reusable, suffix, hit_tokens = self.split_prompt(prompt)
        uncached_tokens = len(suffix)
        reuse_ratio = round(len(reusable) / len(prompt), 4) if len(prompt) > 0 else 0.0
""")],
        # numpy's rounding; its answer is a numpy.float64, a number all the same
        "numpy_round": [(STATS, "reuse_ratio = __import__('numpy').round(hit_tokens / max(len(prompt), 1), 4)")],
        "decimal_quantize": [(STATS_BLOCK, """        from decimal import ROUND_HALF_EVEN, Decimal
        hit_tokens = self.match_prefix(prompt)
        uncached_tokens = len(prompt) - hit_tokens
        reuse_ratio = 0.0
        if prompt:
            exact = Decimal(hit_tokens / len(prompt))
            reuse_ratio = float(exact.quantize(Decimal("0.0001"), rounding=ROUND_HALF_EVEN))
""")],
    },
}
