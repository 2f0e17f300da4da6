"""The model's shape, apart from the model: reading it needs no torch.

:class:`ModelConfig` describes a Llama/Qwen2-style decoder (field names as in Hugging Face's
``config.json``). It lives here, not in :mod:`kernels.model`, so that what only reasons about shapes
(the FLOP model, the stage-7 TTFT predictor, a grading child of stage 7) never imports torch;
:mod:`kernels.model` re-exports it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from autograder.i18n import tr


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the model; field names follow Hugging Face ``config.json``.

    Invariants (checked in ``__post_init__``): ``num_attention_heads`` is a multiple of
    ``num_key_value_heads`` (grouped-query attention), ``head_dim`` is even (RoPE rotates pairs).
    ``qkv_bias``: Qwen2 has biases on q/k/v; ``o_bias``: Llama's ``attention_bias`` puts one on o too.

    [zh]
    模型的形状；字段名与 Hugging Face 的 ``config.json`` 一致。

    不变量（在 ``__post_init__`` 里检查）：``num_attention_heads`` 是 ``num_key_value_heads`` 的整数倍
    （分组查询注意力），``head_dim`` 是偶数（RoPE 按两个一组旋转）。
    ``qkv_bias``：Qwen2 在 q/k/v 上有偏置；``o_bias``：Llama 的 ``attention_bias`` 让 o 也带偏置。
    """

    vocab_size: int = 512
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 0  # 0 means hidden_size // num_attention_heads
    max_position_embeddings: int = 32768
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    qkv_bias: bool = True
    o_bias: bool = False
    model_type: str = "qwen2"

    def __post_init__(self) -> None:
        if self.head_dim == 0:
            if self.hidden_size % self.num_attention_heads:
                raise ValueError(tr("hidden_size must be a multiple of num_attention_heads",
                                    "hidden_size 必须是 num_attention_heads 的整数倍"))
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_attention_heads)
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(tr("num_attention_heads must be a multiple of num_key_value_heads",
                                "num_attention_heads 必须是 num_key_value_heads 的整数倍"))
        if self.head_dim % 2:
            raise ValueError(tr("head_dim must be even for RoPE", "RoPE 要求 head_dim 是偶数"))

    # -- presets ---------------------------------------------------------------------------------
    @classmethod
    def tiny(cls, **overrides: object) -> ModelConfig:
        """The offline default: 2 layers, 64 wide, byte-level vocabulary; runs in milliseconds.

        [zh]
        离线默认配置：2 层、宽 64、字节级词表；几毫秒就能跑完。
        """
        return cls(**overrides)  # type: ignore[arg-type]

    @classmethod
    def qwen2_5_0_5b(cls, **overrides: object) -> ModelConfig:
        """Qwen2.5-0.5B's dimensions (about 494M parameters with tied embeddings).

        [zh]
        Qwen2.5-0.5B 的各项尺寸（共享嵌入时约 4.94 亿参数）。
        """
        base: dict[str, object] = dict(
            vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
            num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
            rms_norm_eps=1e-6, rope_theta=1_000_000.0, tie_word_embeddings=True, qkv_bias=True,
        )
        base.update(overrides)
        return cls(**base)  # type: ignore[arg-type]

    # -- Hugging Face config.json ----------------------------------------------------------------
    @classmethod
    def from_hf_dict(cls, raw: dict) -> ModelConfig:
        """Read a Qwen2 or Llama ``config.json`` dict; unknown keys are ignored.

        [zh]
        读取 Qwen2 或 Llama 的 ``config.json`` 字典；不认识的键会被忽略。
        """
        model_type = str(raw.get("model_type", "llama"))
        if model_type not in ("qwen2", "llama"):
            raise ValueError(tr(f"unsupported model_type {model_type!r} (qwen2 or llama)",
                                f"不支持的 model_type {model_type!r}（只支持 qwen2 或 llama）"))
        if raw.get("mlp_bias"):
            raise ValueError(tr("mlp_bias is not supported", "不支持 mlp_bias"))
        scaling = raw.get("rope_scaling")
        if scaling and scaling.get("rope_type", scaling.get("type")) not in (None, "default"):
            raise ValueError(tr(f"rope_scaling {scaling!r} is not supported", f"不支持 rope_scaling {scaling!r}"))
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in raw.items() if k in names}
        kwargs["head_dim"] = int(raw.get("head_dim") or 0)
        kwargs.setdefault("num_key_value_heads", raw["num_attention_heads"])
        if model_type == "qwen2":
            kwargs["qkv_bias"], kwargs["o_bias"] = True, False
        else:
            bias = bool(raw.get("attention_bias", False))
            kwargs["qkv_bias"], kwargs["o_bias"] = bias, bias
        kwargs["model_type"] = model_type
        return cls(**kwargs)

    def to_hf_dict(self) -> dict:
        """The ``config.json`` content that :meth:`from_hf_dict` reads back to an equal config.

        [zh]
        ``config.json`` 的内容，:meth:`from_hf_dict` 读回来得到一个相等的配置。
        """
        raw = asdict(self)
        del raw["qkv_bias"], raw["o_bias"]
        if self.model_type == "qwen2":
            raw["architectures"] = ["Qwen2ForCausalLM"]
        else:
            raw["architectures"] = ["LlamaForCausalLM"]
            raw["attention_bias"] = self.qkv_bias
        raw["hidden_act"] = "silu"
        return raw

    def num_parameters(self) -> int:
        """Parameter count (embeddings counted once when tied).

        [zh]
        参数个数（共享嵌入时嵌入只算一次）。
        """
        h, d = self.hidden_size, self.head_dim
        q, kv = self.num_attention_heads * d, self.num_key_value_heads * d
        attn = h * q + 2 * h * kv + q * h
        attn += (q + 2 * kv) * self.qkv_bias + h * self.o_bias
        mlp = 3 * h * self.intermediate_size
        layer = attn + mlp + 2 * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_hidden_layers * layer + h + head
