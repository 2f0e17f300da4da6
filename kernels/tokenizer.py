"""Tokenizers with one small interface: ``encode``, ``decode``, ``vocab_size``, ``eos_id``.

:class:`ByteTokenizer` works offline (UTF-8 bytes are the tokens). :func:`load_tokenizer` wraps a
Hugging Face tokenizer when ``transformers`` happens to be importable and a path is given; the
course never installs ``transformers`` for you.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class Tokenizer(Protocol):
    vocab_size: int
    eos_id: int

    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: list[int]) -> str: ...


class ByteTokenizer:
    """Token ``i < 256`` is byte ``i``; 256 is BOS, 257 is EOS.

    Invariant: ``decode(encode(s)) == s`` for every str ``s`` (specials decode to nothing).
    """

    bos_id = 256
    eos_id = 257
    vocab_size = 258

    def __init__(self, add_bos: bool = False) -> None:
        self.add_bos = add_bos

    def encode(self, text: str) -> list[int]:
        ids = list(text.encode("utf-8"))
        return [self.bos_id, *ids] if self.add_bos else ids

    def decode(self, ids: list[int]) -> str:
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")


class HFTokenizer:
    """A ``transformers`` tokenizer behind the same small interface."""

    def __init__(self, path: str | Path) -> None:
        from transformers import AutoTokenizer  # optional dependency, imported only here

        self._tok = AutoTokenizer.from_pretrained(str(path))
        self.vocab_size = len(self._tok)
        self.eos_id = self._tok.eos_token_id if self._tok.eos_token_id is not None else -1

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids)


def load_tokenizer(path: str | Path | None = None) -> Tokenizer:
    """The HF tokenizer at ``path`` if one is there and ``transformers`` imports; else bytes."""
    if path is not None and (Path(path) / "tokenizer_config.json").exists():
        try:
            return HFTokenizer(path)
        except ImportError:
            pass
    return ByteTokenizer()
