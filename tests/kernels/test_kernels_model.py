"""Tests of kernels.model: HF checkpoint layout round trip, configs, and the forward pass."""
from __future__ import annotations

import json
import math

import pytest
import torch

from kernels.model import DecoderLM, ModelConfig, apply_rope, load_model, rope_cos_sin, save_model

# The config.json of Qwen2.5-0.5B as published (fields the model reads, plus a few it ignores).
QWEN25_05B_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}


def tiny_llama() -> ModelConfig:
    return ModelConfig(vocab_size=300, hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                       num_attention_heads=6, num_key_value_heads=3, tie_word_embeddings=False,
                       qkv_bias=False, o_bias=False, model_type="llama")


def test_kernels_model_qwen2_config_reads_hf_dims():
    cfg = ModelConfig.from_hf_dict(QWEN25_05B_CONFIG)
    assert cfg == ModelConfig.qwen2_5_0_5b()
    assert (cfg.head_dim, cfg.qkv_bias, cfg.o_bias) == (64, True, False)
    # Qwen2.5-0.5B's published parameter count is 0.49B (494,032,768 with tied embeddings).
    assert cfg.num_parameters() == 494_032_768


def test_kernels_model_state_dict_uses_hf_names():
    names = set(DecoderLM.random(ModelConfig.tiny()).state_dict())
    for name in ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                 "model.layers.0.self_attn.q_proj.bias", "model.layers.1.self_attn.v_proj.bias",
                 "model.layers.1.mlp.gate_proj.weight", "model.layers.0.input_layernorm.weight",
                 "model.layers.0.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"):
        assert name in names
    assert "model.layers.0.self_attn.o_proj.bias" not in names  # Qwen2: q/k/v biases only


@pytest.mark.parametrize("cfg", [ModelConfig.tiny(), ModelConfig.tiny(tie_word_embeddings=True), tiny_llama()], ids=["qwen2", "qwen2_tied", "llama_untied"])
def test_kernels_model_checkpoint_round_trip(tmp_path, cfg):
    model = DecoderLM.random(cfg, seed=3)
    save_model(model, tmp_path)
    raw = json.loads((tmp_path / "config.json").read_text())
    assert raw["model_type"] == cfg.model_type
    from safetensors.torch import load_file

    stored = load_file(str(tmp_path / "model.safetensors"))
    assert ("lm_head.weight" in stored) == (not cfg.tie_word_embeddings)
    loaded = load_model(tmp_path)
    assert loaded.config == cfg
    if cfg.tie_word_embeddings:
        assert loaded.lm_head.weight is loaded.model.embed_tokens.weight
    tokens = torch.tensor([5, 17, 2, 99, 41, 7])
    with torch.no_grad():
        assert torch.equal(model(tokens, last_only=False), loaded(tokens, last_only=False))


def test_kernels_model_load_refuses_layout_mismatch(tmp_path):
    from safetensors.torch import load_file, save_file

    save_model(DecoderLM.random(ModelConfig.tiny()), tmp_path)
    state = load_file(str(tmp_path / "model.safetensors"))
    state["model.layers.0.self_attn.q_proj.wieght"] = state.pop("model.layers.0.self_attn.q_proj.weight")
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match="missing"):
        load_model(tmp_path)


def test_kernels_model_load_without_path_is_seeded_tiny_model():
    a, b = load_model(), load_model()
    assert a.config == ModelConfig.tiny()
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    assert not torch.equal(load_model(seed=1).model.embed_tokens.weight, a.model.embed_tokens.weight)


def test_kernels_model_unsupported_configs_are_refused():
    with pytest.raises(ValueError):
        ModelConfig.from_hf_dict({**QWEN25_05B_CONFIG, "model_type": "gpt2"})
    with pytest.raises(ValueError):
        ModelConfig.from_hf_dict({**QWEN25_05B_CONFIG, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})
    with pytest.raises(ValueError):
        ModelConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=3)


def test_kernels_model_last_only_is_last_row():
    model = DecoderLM.random(ModelConfig.tiny())
    tokens = torch.randint(0, 512, (11,), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(model(tokens), model(tokens, last_only=False)[-1], atol=1e-6)


def test_kernels_model_rope_is_relative():
    # RoPE's point: q.k depends on positions only through their difference.
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 16, generator=gen), torch.randn(1, 1, 16, generator=gen)

    def score(pq: int, pk: int) -> float:
        cq, sq = rope_cos_sin(torch.tensor([pq]), 16, 10000.0, torch.float32)
        ck, sk = rope_cos_sin(torch.tensor([pk]), 16, 10000.0, torch.float32)
        return float((apply_rope(q, cq, sq) * apply_rope(k, ck, sk)).sum())

    assert math.isclose(score(7, 3), score(107, 103), rel_tol=1e-4)
    assert abs(score(7, 3) - score(7, 6)) > 0.1


def test_kernels_model_forward_matches_naive_attention():
    # An independent check of the whole layer stack: a loop-based causal attention gives the same logits.
    cfg = ModelConfig.tiny()
    model = DecoderLM.random(cfg, seed=1)
    group = cfg.num_attention_heads // cfg.num_key_value_heads

    def naive(layer, q, k, v):
        t = q.shape[0]
        out = torch.empty_like(q)
        for h in range(q.shape[1]):
            for i in range(t):
                s = (k[: i + 1, h // group] @ q[i, h]) / math.sqrt(q.shape[-1])
                out[i, h] = torch.softmax(s, 0) @ v[: i + 1, h // group]
        return out

    tokens = torch.tensor([1, 200, 3, 44, 5, 301, 7])
    with torch.no_grad():
        fast = model(tokens, last_only=False)
        slow = model(tokens, attention=naive, last_only=False)
    assert (fast - slow).abs().max() < 1e-4


def test_kernels_model_rejects_bad_inputs():
    model = DecoderLM.random()
    with pytest.raises(ValueError):
        model(torch.tensor([], dtype=torch.long))
    with pytest.raises(ValueError):
        model(torch.tensor([1, 2]), positions=torch.tensor([0]))
