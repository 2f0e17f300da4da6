"""A small decoder-only Llama/Qwen2-style language model, written to be read.

One sequence at a time (no batch dimension): token ids are a 1-D tensor ``[T]`` and every hidden
state is ``[T, hidden_size]``. That keeps the prefix-cache code about *which tokens* are computed,
not about padding.

The module tree mirrors the Hugging Face layout, so ``state_dict()`` keys are the checkpoint's
parameter names (``model.layers.0.self_attn.q_proj.weight``, ``model.norm.weight``,
``lm_head.weight``...). A checkpoint directory with ``config.json`` + ``*.safetensors`` (Qwen2 or
Llama) loads with :func:`load_model`; :func:`save_model` writes the same layout. Offline, or for
tests, :meth:`DecoderLM.random` builds a model with seeded random weights.

Attention is a parameter of :meth:`DecoderLM.forward`: the model computes q, k, v (after RoPE) for
the tokens it is given and hands them to an :data:`AttentionFn`, which decides what the queries see.
The default is the full causal prefill; the prefix cache passes one that writes k/v into a paged pool
and attends over cached + new keys.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from autograder.i18n import tr
from kernels.config import ModelConfig
from kernels.paged_attention import causal_attention

#: ``attention(layer_index, q [T, Hq, D], k [T, Hkv, D], v [T, Hkv, D]) -> out [T, Hq, D]``.
#: q and k already carry RoPE at the tokens' absolute positions.
#: 中文：attention 的调用约定同上；q 和 k 已经按 token 的绝对位置做过 RoPE。
AttentionFn = Callable[[int, Tensor, Tensor, Tensor], Tensor]


class RMSNorm(nn.Module):
    """``x / rms(x) * weight``, computed in float32 (as HF does) and cast back."""

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rope_cos_sin(positions: Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """cos and sin tables ``[T, head_dim]`` for absolute ``positions`` (HF's half-split layout).

    Computed in float32 from the positions themselves, so the same position gets bit-identical
    tables whether it is computed in a full prefill or in a cached suffix.
    """
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim))
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate ``x [T, H, D]`` by the tables ``[T, D]`` (rotate-half convention)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


class Attention(nn.Module):
    """Projections of one attention layer; *what* the queries attend to is the caller's choice."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, q, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(cfg.hidden_size, kv, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(cfg.hidden_size, kv, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(q, cfg.hidden_size, bias=cfg.o_bias)

    def forward(self, layer: int, x: Tensor, cos: Tensor, sin: Tensor, attention: AttentionFn) -> Tensor:
        cfg, t = self.cfg, x.shape[0]
        q = self.q_proj(x).view(t, cfg.num_attention_heads, cfg.head_dim)
        k = self.k_proj(x).view(t, cfg.num_key_value_heads, cfg.head_dim)
        v = self.v_proj(x).view(t, cfg.num_key_value_heads, cfg.head_dim)
        out = attention(layer, apply_rope(q, cos, sin), apply_rope(k, cos, sin), v)
        return self.o_proj(out.reshape(t, -1))


class MLP(nn.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, layer: int, x: Tensor, cos: Tensor, sin: Tensor, attention: AttentionFn) -> Tensor:
        x = x + self.self_attn(layer, self.input_layernorm(x), cos, sin, attention)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    """The ``model.`` prefix of the checkpoint: embeddings, layers, final norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


def _full_causal(layer: int, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return causal_attention(q, k, v)


class DecoderLM(nn.Module):
    """Decoder-only causal LM.

    Call it as ``model(token_ids, positions, attention)``: each layer computes ``q [T, Hq, D]`` and
    ``k, v [T, Hkv, D]`` for the given tokens (RoPE applied at ``positions``) and calls
    ``attention(layer, q, k, v) -> [T, Hq, D]`` (see ``AttentionFn``).

    Invariants: parameter names equal the HF checkpoint names; with ``tie_word_embeddings`` the
    output head *is* the embedding matrix (one tensor, so a tied checkpoint has no ``lm_head.weight``).

    [zh]
    只有解码器的因果语言模型。

    调用方式是 ``model(token_ids, positions, attention)``：每一层为给定的 token 算出 ``q [T, Hq, D]``
    和 ``k, v [T, Hkv, D]``（已在 ``positions`` 上做过 RoPE），然后调用
    ``attention(layer, q, k, v) -> [T, Hq, D]``（见 ``AttentionFn``）。

    不变量：参数名与 HF checkpoint 中的名字一致；``tie_word_embeddings`` 时输出头*就是*嵌入矩阵
    （同一个张量，所以共享权重的 checkpoint 里没有 ``lm_head.weight``）。
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        self.model = Backbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    @classmethod
    def random(cls, cfg: ModelConfig | None = None, *, seed: int = 0, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu") -> DecoderLM:
        """A model with seeded random weights (same seed, device and dtype: same weights).

        Linear weights ~ N(0, 1/fan_in) and embeddings ~ N(0, 1), so activations and logits are O(1)
        and greedy decoding has clear winners (HF's 0.02 init gives near-ties on tiny models).

        [zh]
        用固定种子生成随机权重的模型（种子、设备和 dtype 相同，权重就相同）。

        线性层权重 ~ N(0, 1/fan_in)，嵌入 ~ N(0, 1)，这样激活值和 logits 都是 O(1) 量级，贪心解码
        有明确的胜者（HF 的 0.02 初始化在很小的模型上会让候选几乎打平）。
        """
        cfg = cfg or ModelConfig.tiny()
        device = torch.device(device)
        with torch.device(device):
            model = cls(cfg)
        gen = torch.Generator(device=device).manual_seed(seed)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith("bias"):
                    p.normal_(0.0, 0.1, generator=gen)
                elif name == "model.embed_tokens.weight":
                    p.normal_(0.0, 1.0, generator=gen)
                else:
                    p.normal_(0.0, 1.0 / math.sqrt(p.shape[1]), generator=gen)
        return model.to(dtype).eval()

    def forward(self, token_ids: Tensor, positions: Tensor | None = None,
                attention: AttentionFn | None = None, *, last_only: bool = True) -> Tensor:
        """Logits for ``token_ids [T]`` at absolute ``positions [T]`` (default ``0..T-1``).

        ``attention`` defaults to the full causal prefill, which is only right when the tokens are the
        whole sequence (positions ``0..T-1``). ``last_only`` returns ``[vocab]`` for the last token
        only -- a prefill needs nothing else, and the head is the biggest matmul of a short suffix.
        Otherwise returns ``[T, vocab]``.

        [zh]
        ``token_ids [T]`` 在绝对位置 ``positions [T]``（默认 ``0..T-1``）上的 logits。

        ``attention`` 默认是完整的因果 prefill，只有当这些 token 就是整个序列（位置 ``0..T-1``）时才对。
        ``last_only`` 时只返回最后一个 token 的 ``[vocab]``——prefill 只需要它，而且对很短的后缀来说，
        输出头是最大的一次矩阵乘。否则返回 ``[T, vocab]``。
        """
        if token_ids.dim() != 1 or token_ids.numel() == 0:
            raise ValueError(tr("token_ids must be a non-empty 1-D tensor", "token_ids 必须是非空的一维张量"))
        if positions is None:
            positions = torch.arange(token_ids.numel(), device=token_ids.device)
        if positions.shape != token_ids.shape:
            raise ValueError(tr("positions must have the shape of token_ids", "positions 的形状必须与 token_ids 相同"))
        attention = attention or _full_causal
        x = self.model.embed_tokens(token_ids)
        cos, sin = rope_cos_sin(positions, self.config.head_dim, self.config.rope_theta, x.dtype)
        for i, layer in enumerate(self.model.layers):
            x = layer(i, x, cos, sin, attention)
        if last_only:
            x = x[-1:]
        logits = self.lm_head(self.model.norm(x))
        return logits[0] if last_only else logits


def save_model(model: DecoderLM, directory: str | Path) -> Path:
    """Write ``config.json`` + ``model.safetensors`` in the HF layout; returns the directory."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(model.config.to_hf_dict(), indent=2))
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        del state["lm_head.weight"]  # the same tensor as the embedding; safetensors refuses aliases
    save_file(state, str(directory / "model.safetensors"))
    return directory


def load_model(path: str | Path | None = None, *, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu", seed: int = 0) -> DecoderLM:
    """Load an HF-layout checkpoint directory, or (``path=None``) the tiny seeded random model.

    Every tensor of the checkpoint must match a parameter and vice versa (``lm_head.weight`` may be
    absent when tied), so a layout mistake fails loudly instead of leaving random weights behind.
    """
    if path is None:
        return DecoderLM.random(ModelConfig.tiny(), seed=seed, dtype=dtype, device=device)
    from safetensors.torch import load_file

    directory = Path(path)
    cfg = ModelConfig.from_hf_dict(json.loads((directory / "config.json").read_text()))
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(tr(f"no *.safetensors in {directory}", f"{directory} 里没有 *.safetensors 文件"))
    state: dict[str, Tensor] = {}
    for f in files:
        state.update(load_file(str(f)))
    if cfg.tie_word_embeddings:
        state.pop("lm_head.weight", None)
    with torch.device("meta"):
        model = DecoderLM(cfg)
    expected = set(model.state_dict())
    if cfg.tie_word_embeddings:
        expected.discard("lm_head.weight")
    missing, unexpected = expected - set(state), set(state) - expected
    if missing or unexpected:
        raise ValueError(tr(f"checkpoint does not match the model: missing {sorted(missing)[:5]}, "
                            f"unexpected {sorted(unexpected)[:5]}",
                            f"checkpoint 与模型不匹配：缺少 {sorted(missing)[:5]}，"
                            f"多出 {sorted(unexpected)[:5]}"))
    model.load_state_dict(state, strict=False, assign=True)
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    return model.to(device=device, dtype=dtype).eval()
