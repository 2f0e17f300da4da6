"""Stage 1 reference: a ledger of registered prefixes and longest-prefix matching.

No KV tensors, physical blocks or eviction here: the manager only decides, for a prompt, how many
leading tokens could come from cache and how many still need prefill. Tokens are compared as whole
integer ids, never as text: a prefix ``[1, 2]`` does not match a prompt ``[1, 23, ...]``.
"""
from __future__ import annotations

from typing import Sequence

#: The messages the reference raises inside its TODO regions, in Chinese: the grader shows a Chinese-edition
#: learner "expected: raises ..." with them (a learner writes their own message; only the type is graded).
RAISED_ZH = {
    "an empty prefix cannot be cached": "空前缀不能缓存",
    "tokens must be ints, got str: 'bad'": "token 必须是 int，实际是 str：'bad'",
    "tokens must be ints, got float: 5.0": "token 必须是 int，实际是 float：5.0",
}


class PrefixCacheManager:
    """Registers shared prefixes and answers how much of a prompt they cover.

    Invariants:
    - ``cached_prefixes`` holds non-empty tuples of ``int`` in the order they were first added;
    - no tuple appears twice;
    - no method changes the sequences it is given.

    [zh]
    登记共享前缀，并回答一个提示词（prompt）有多少可以由这些前缀覆盖。

    不变量：
    - ``cached_prefixes`` 里是非空的 ``int`` 元组，按第一次登记的顺序排列；
    - 同一个元组不会出现两次；
    - 任何方法都不修改传进来的序列。
    """

    def __init__(self) -> None:
        self.cached_prefixes: list[tuple[int, ...]] = []

    def _normalize(self, tokens: Sequence[int]) -> list[int]:
        """Return ``tokens`` as a new list in the same order; ``TypeError`` if any is not an int.

        [zh]
        把 ``tokens`` 复制成一个新的 list，顺序不变；只要有一个不是 int 就抛出 ``TypeError``。
        """
        # TODO 1 (s01.normalize)
        ### BEGIN SOLUTION
        normalized = list(tokens)
        for token in normalized:
            if not isinstance(token, int):
                raise TypeError(f"tokens must be ints, got {type(token).__name__}: {token!r}")
        return normalized
        ### END SOLUTION

    def add_prefix(self, prefix_tokens: Sequence[int]) -> None:
        """Register ``prefix_tokens``; ``ValueError`` if empty; a duplicate is not added again.

        [zh]
        登记 ``prefix_tokens``；空前缀抛出 ``ValueError``；重复的前缀不会再登记一次。
        """
        # TODO 2 (s01.add_prefix)
        ### BEGIN SOLUTION
        prefix = tuple(self._normalize(prefix_tokens))
        if not prefix:
            raise ValueError("an empty prefix cannot be cached")
        ### END SOLUTION
        if prefix not in self.cached_prefixes:
            self.cached_prefixes.append(prefix)

    def match_prefix(self, prompt_tokens: Sequence[int]) -> int:
        """Length of the longest registered prefix that equals the start of the prompt (0 if none).

        [zh]
        与提示词开头完全相同的已登记前缀中，最长的那个有多长（没有就是 0）。
        """
        prompt = self._normalize(prompt_tokens)
        best_len = 0
        for cached_prefix in self.cached_prefixes:
            if len(cached_prefix) > len(prompt):
                continue
            # TODO 3 (s01.match_prefix)
            ### BEGIN SOLUTION
            is_match = tuple(prompt[: len(cached_prefix)]) == cached_prefix
            ### END SOLUTION
            if is_match:
                best_len = max(best_len, len(cached_prefix))
        return best_len

    def split_prompt(self, prompt_tokens: Sequence[int]) -> tuple[list[int], list[int], int]:
        """``(prompt[:hit], prompt[hit:], hit)``: the reusable prefix, the suffix to prefill, hit.

        [zh]
        返回（可复用前缀, 仍需 prefill 的后缀, 命中长度）。
        """
        prompt = self._normalize(prompt_tokens)
        hit_len = self.match_prefix(prompt)
        # TODO 4 (s01.split_prompt)
        ### BEGIN SOLUTION
        reusable_prefix = prompt[:hit_len]
        suffix = prompt[hit_len:]
        ### END SOLUTION
        return reusable_prefix, suffix, hit_len

    def cache_stats(self, prompt_tokens: Sequence[int]) -> dict:
        """Token ledger of one prompt: hit tokens, uncached tokens and their ratio (4 decimals).

        This counts tokens; it says nothing yet about KV memory or time to first token.

        [zh]
        一个提示词的 token 账本：命中的 token 数、未命中的 token 数和复用率（保留 4 位小数）。

        这里数的是 token，还说明不了 KV 显存或首 token 延迟（TTFT）。
        """
        prompt = self._normalize(prompt_tokens)
        # TODO 5 (s01.cache_stats)
        ### BEGIN SOLUTION
        hit_tokens = self.match_prefix(prompt)
        uncached_tokens = len(prompt) - hit_tokens
        reuse_ratio = round(hit_tokens / len(prompt), 4) if prompt else 0.0
        ### END SOLUTION
        return {"hit_tokens": hit_tokens, "uncached_tokens": uncached_tokens, "reuse_ratio": reuse_ratio}


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 6 (s01.quiz)
    ### BEGIN SOLUTION
    return {"q1": "C", "q2": "A", "q3": "B", "q4": "B", "q5": 0.03}
    ### END SOLUTION
