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

Importing this package is cheap: it imports torch, never triton (that happens on first use).
"""

from kernels.kv_pool import KVPool
from kernels.model import AttentionFn, DecoderLM, ModelConfig, load_model, save_model
from kernels.paged_attention import causal_attention, paged_attention_torch
from kernels.tokenizer import ByteTokenizer, load_tokenizer

__all__ = [
    "AttentionFn",
    "ByteTokenizer",
    "DecoderLM",
    "KVPool",
    "ModelConfig",
    "causal_attention",
    "load_model",
    "load_tokenizer",
    "paged_attention_torch",
    "save_model",
]
