"""The Mooncake trace as text: a production router over HTTP matches prompts character by character, and
the trace carries only chained block hash ids.

Each block hash id maps to a fixed pseudo-random string (``chars_per_block`` characters drawn from a
64-letter alphabet by SHAKE-256 of the seed and the id), and a request's text is its blocks' strings
concatenated, cut to its length in tokens scaled the same way. So two requests whose first ``n`` block
ids are equal have equal first ``n * chars_per_block`` characters, and blocks with different ids differ
(a shared leading character or two by chance, no more: 64 letters, so two strings agree on their first
``k`` characters with probability ``64**-k``). No string is stored: every call derives it again, which
keeps the whole conversation trace (some 180k distinct blocks) out of memory.
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from workbook.traces import MOONCAKE_BLOCK_SIZE as TRACE_BLOCK_TOKENS  # tokens per block of the traces

_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
# 256 byte values onto 64 letters, each letter from exactly 4 of them: uniform
_TABLE = bytes(_ALPHABET[b % len(_ALPHABET)] for b in range(256))


@dataclass(frozen=True)
class TraceText:
    """Block ids to text. Invariants: ``chars_per_block >= 1``; :meth:`block` is a pure function of
    ``(seed, block id, chars_per_block)``; :meth:`request` of blocks ``b`` and ``t`` tokens has length
    ``ceil(t * chars_per_block / 512)`` and is a prefix of the concatenation of ``b``'s strings."""

    seed: int = 0
    chars_per_block: int = TRACE_BLOCK_TOKENS

    def __post_init__(self) -> None:
        if self.chars_per_block < 1:
            raise ValueError(f"chars_per_block must be at least 1, got {self.chars_per_block}")

    def block(self, block_id: int) -> str:
        """The fixed string of one block id."""
        digest = hashlib.shake_256(f"{self.seed}:{block_id}".encode()).digest(self.chars_per_block)
        return digest.translate(_TABLE).decode("ascii")

    def length(self, input_tokens: int) -> int:
        """Characters of a prompt of ``input_tokens`` tokens (rounded up: a partial block keeps one)."""
        return -(-input_tokens * self.chars_per_block // TRACE_BLOCK_TOKENS)

    def request(self, blocks: Sequence[int], input_tokens: int) -> str:
        """A prompt's text: its blocks' strings in order, cut to its length (the last block may be partial)."""
        n = self.length(input_tokens)
        if n > len(blocks) * self.chars_per_block:
            raise ValueError(f"{input_tokens} tokens need more than {len(blocks)} blocks of {TRACE_BLOCK_TOKENS}")
        return "".join(self.block(b) for b in blocks)[:n]
