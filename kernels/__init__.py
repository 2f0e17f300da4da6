"""Small, readable building blocks for the GPU stage of the prefix-cache workbook.

Given to learners fully implemented:

- :mod:`kernels.model` -- a decoder-only Llama/Qwen2-style model (RMSNorm, RoPE, GQA, SwiGLU) that
  loads a Hugging Face ``config.json`` + ``*.safetensors`` checkpoint, or builds a tiny model with
  seeded random weights when nothing can be downloaded.
- :mod:`kernels.tokenizer` -- a byte-level tokenizer (offline), or a wrapped HF tokenizer.
- :mod:`kernels.kv_pool` -- a paged K/V pool: one ``[num_blocks, block_size, n_kv_heads, head_dim]``
  tensor for K and one for V per layer.
- :mod:`kernels.paged_attention` -- torch reference of paged causal attention (any device) and the
  full-prefill baseline (``F.scaled_dot_product_attention(is_causal=True)``).
- :mod:`kernels.triton_paged_attention` -- the same paged attention as a Triton kernel (CUDA; on CPU
  only through Triton's interpreter, ``TRITON_INTERPRET=1`` set before import).
- :mod:`kernels.device` -- picks the implementation for a device at run time.
- :mod:`kernels.prefill` -- the no-cache ground truth (full prefill, greedy decoding) and an adapter
  from a paged-attention kernel to the signature a cached prefill calls.
- :mod:`kernels.flops` -- a FLOP model of prefill with and without a cached prefix.

Importing this package is cheap: it imports nothing until a name is asked for (``from kernels import
KVPool`` imports torch then), so that :mod:`kernels.config`, :mod:`kernels.flops` and
:mod:`kernels.calibration`, which reason about shapes and measured rates only, never import torch;
triton is imported on first use only.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "AttentionFn": "kernels.model",
    "ByteTokenizer": "kernels.tokenizer",
    "DecoderLM": "kernels.model",
    "KVPool": "kernels.kv_pool",
    "ModelConfig": "kernels.config",
    "causal_attention": "kernels.paged_attention",
    "load_model": "kernels.model",
    "load_tokenizer": "kernels.tokenizer",
    "paged_attention_torch": "kernels.paged_attention",
    "save_model": "kernels.model",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # once
        return value
    from autograder.i18n import tr

    raise AttributeError(tr(f"module 'kernels' has no attribute {name!r}", f"kernels 模块没有名为 {name!r} 的属性"))


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
