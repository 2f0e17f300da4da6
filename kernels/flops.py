"""A FLOP model of prefill, to predict what a cached prefix should save.

Counts multiply-adds as 2 FLOPs and ignores element-wise work (norms, RoPE, activations, softmax),
which is small next to the matmuls. For ``computed`` new tokens after ``cached`` tokens whose K/V is
reused:

- projections (q, k, v, o) and the MLP: proportional to ``computed`` -- the cache removes this work;
- attention: new query ``i`` (absolute position ``p``) scores and mixes ``p + 1`` keys, so the suffix
  still pays for reading the whole cached prefix -- this part does *not* go away;
- the output head: once, for the last token (a prefill only needs the next-token logits).
"""

from __future__ import annotations

from autograder.i18n import tr
from kernels.config import ModelConfig


def prefill_flops(cfg: ModelConfig, computed: int, cached: int = 0) -> dict[str, float]:
    """FLOPs of prefilling ``computed`` tokens after ``cached`` reused ones, by part, plus ``total``.

    [zh]
    在已复用 ``cached`` 个 token 之后再 prefill ``computed`` 个 token 的 FLOPs，按部分列出，另加 ``total``。
    """
    if computed < 1 or cached < 0:
        raise ValueError(tr("need computed >= 1 and cached >= 0", "要求 computed >= 1 且 cached >= 0"))
    h, d = cfg.hidden_size, cfg.head_dim
    q_dim, kv_dim = cfg.num_attention_heads * d, cfg.num_key_value_heads * d
    per_token_linear = 2 * (h * q_dim + 2 * h * kv_dim + q_dim * h) + 2 * 3 * h * cfg.intermediate_size
    # sum over new tokens of the keys each sees: (cached+1) + ... + (cached+computed)
    keys_seen = computed * cached + computed * (computed + 1) / 2
    layers = cfg.num_hidden_layers
    parts = {
        "linear": float(layers * computed * per_token_linear),
        "attention": float(layers * 2 * 2 * cfg.num_attention_heads * d * keys_seen),
        "head": float(2 * h * cfg.vocab_size),
    }
    parts["total"] = sum(parts.values())
    return parts


def predicted_speedup(cfg: ModelConfig, prefix: int, question: int) -> float:
    """Full prefill of ``prefix + question`` tokens over a prefill of ``question`` after a cached prefix.

    [zh]
    整段 ``prefix + question`` 的完整 prefill，与前缀已缓存时只 prefill ``question`` 的 FLOPs 之比。
    """
    full = prefill_flops(cfg, prefix + question)["total"]
    cached = prefill_flops(cfg, question, prefix)["total"]
    return full / cached
