"""Stage 1 reference: a ledger of registered prefixes and longest-prefix matching.

No KV tensors, physical blocks or eviction here: the manager only decides, for a prompt, how many
leading tokens could come from cache and how many still need prefill.
"""
from __future__ import annotations

from typing import Sequence


class PrefixCacheManager:
    """Registers shared prefixes and answers how much of a prompt they cover.

    Invariants:
    - ``cached_prefixes`` holds non-empty tuples of ``int`` in the order they were first added;
    - no tuple appears twice;
    - no method changes the sequences it is given.
    """

    def __init__(self) -> None:
        self.cached_prefixes: list[tuple[int, ...]] = []

    def _normalize(self, tokens: Sequence[int]) -> list[int]:
        """Return ``tokens`` as a new list in the same order; ``TypeError`` if any is not an int."""
        # TODO 1 (s01.normalize): copy `tokens` into a list (any iterable may come in: list,
        # tuple, generator), raise TypeError if one of them is not an int, and return the list.
        # Hint: build the list first, then check every element with isinstance(token, int).
        ### BEGIN SOLUTION
        normalized = list(tokens)
        for token in normalized:
            if not isinstance(token, int):
                raise TypeError(f"tokens must be ints, got {type(token).__name__}: {token!r}")
        return normalized
        ### END SOLUTION

    def add_prefix(self, prefix_tokens: Sequence[int]) -> None:
        """Register ``prefix_tokens``; ``ValueError`` if empty; a duplicate is not added again."""
        # TODO 2 (s01.add_prefix): set `prefix` to the normalized tokens as a tuple (so that equal
        # prefixes compare equal in `cached_prefixes`), and refuse an empty one with ValueError.
        # Hint: validate everything before you append anything.
        ### BEGIN SOLUTION
        prefix = tuple(self._normalize(prefix_tokens))
        if not prefix:
            raise ValueError("an empty prefix cannot be cached")
        ### END SOLUTION
        if prefix not in self.cached_prefixes:
            self.cached_prefixes.append(prefix)

    def match_prefix(self, prompt_tokens: Sequence[int]) -> int:
        """Length of the longest registered prefix that equals the start of the prompt (0 if none)."""
        prompt = self._normalize(prompt_tokens)
        best_len = 0
        for cached_prefix in self.cached_prefixes:
            if len(cached_prefix) > len(prompt):
                continue
            # TODO 3 (s01.match_prefix): set `is_match` to whether `cached_prefix` equals the
            # *beginning* of the prompt. Equal tokens in the middle of the prompt never count.
            # Hint: compare the tuple with the first len(cached_prefix) tokens of the prompt.
            ### BEGIN SOLUTION
            is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix
            ### END SOLUTION
            if is_match:
                best_len = max(best_len, len(cached_prefix))
        return best_len

    def split_prompt(self, prompt_tokens: Sequence[int]) -> tuple[list[int], list[int], int]:
        """``(prompt[:hit], prompt[hit:], hit)``: the reusable prefix, the suffix to prefill, hit."""
        prompt = self._normalize(prompt_tokens)
        hit_len = self.match_prefix(prompt)
        # TODO 4 (s01.split_prompt): cut the prompt at `hit_len` into `reusable_prefix` and the
        # `suffix` that still needs prefill. Together they must give back the whole prompt.
        # Hint: two slices of `prompt`, both lists.
        ### BEGIN SOLUTION
        reusable_prefix = prompt[:hit_len]
        suffix = prompt[hit_len:]
        ### END SOLUTION
        return reusable_prefix, suffix, hit_len

    def cache_stats(self, prompt_tokens: Sequence[int]) -> dict:
        """Token ledger of one prompt: hit tokens, uncached tokens and their ratio (4 decimals).

        This counts tokens; it says nothing yet about KV memory or time to first token.
        """
        prompt = self._normalize(prompt_tokens)
        # TODO 5 (s01.cache_stats): set `hit_tokens`, `uncached_tokens` (still to prefill) and
        # `reuse_ratio` = hit / len(prompt) rounded to 4 decimals (0.0 for an empty prompt).
        # Hint: round(x, 4); guard the division for the empty prompt.
        ### BEGIN SOLUTION
        hit_tokens = self.match_prefix(prompt)
        uncached_tokens = len(prompt) - hit_tokens
        reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0
        ### END SOLUTION
        return {"hit_tokens": hit_tokens, "uncached_tokens": uncached_tokens, "reuse_ratio": reuse_ratio}
