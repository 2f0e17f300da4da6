"""Tests of kernels.kv_pool, kernels.tokenizer, kernels.device and kernels.flops."""
from __future__ import annotations

import pytest
import torch

from kernels.device import describe_device, paged_attention_for
from kernels.flops import predicted_speedup, prefill_flops
from kernels.kv_pool import KVPool
from kernels.model import ModelConfig
from kernels.paged_attention import paged_attention_torch
from kernels.tokenizer import ByteTokenizer, load_tokenizer


def test_kernels_kv_pool_shapes_and_views():
    pool = KVPool.for_model(ModelConfig.tiny(), num_blocks=5, block_size=4)
    assert len(pool.k) == len(pool.v) == 2
    assert pool.k[1].shape == (5, 4, 2, 16) and pool.num_slots == 20
    pool.flat_k(1)[9] = 1.0  # slot 9 = block 2, row 1
    assert pool.k[1][2, 1].eq(1.0).all() and pool.k[1].sum() == 2 * 16
    assert pool.k[0].sum() == 0 and pool.v[1].sum() == 0
    assert pool.nbytes == 2 * 2 * 5 * 4 * 2 * 16 * 4


def test_kernels_kv_pool_rejects_empty_shapes():
    with pytest.raises(ValueError, match="block_size"):
        KVPool(2, 4, 0, 2, 16)


def test_kernels_tokenizer_byte_round_trip():
    tok = ByteTokenizer()
    text = "prefix caching · 前缀缓存"
    ids = tok.encode(text)
    assert all(0 <= i < 256 for i in ids) and tok.decode(ids) == text
    with_bos = ByteTokenizer(add_bos=True).encode("a")
    assert with_bos == [tok.bos_id, ord("a")] and tok.decode(with_bos + [tok.eos_id]) == "a"


def test_kernels_tokenizer_falls_back_to_bytes(tmp_path):
    assert isinstance(load_tokenizer(), ByteTokenizer)
    assert isinstance(load_tokenizer(tmp_path), ByteTokenizer)  # no tokenizer_config.json there


def test_kernels_device_cpu_uses_torch_reference():
    name, fn = paged_attention_for("cpu")
    assert name == "torch" and fn is paged_attention_torch
    assert describe_device("cpu").startswith("cpu:")
    from autograder.core.i18n import language, set_language

    was = language()
    try:  # the line a Chinese notebook prints says the thread count in Chinese (and never "1 torch threads")
        set_language("zh")
        assert "个 torch 线程" in describe_device("cpu") and "threads" not in describe_device("cpu")
        set_language("en")
        n = torch.get_num_threads()
        assert f"{n} torch thread{'' if n == 1 else 's'}," in describe_device("cpu")
    finally:
        set_language(was)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: Triton is selected only on CUDA")
def test_kernels_device_cuda_uses_triton():
    name, _ = paged_attention_for("cuda")
    assert name == "triton"
    assert describe_device("cuda").startswith("cuda:")


def test_kernels_flops_cache_removes_linear_work_but_not_prefix_attention():
    cfg = ModelConfig.qwen2_5_0_5b()
    full = prefill_flops(cfg, 1024 + 64)
    cached = prefill_flops(cfg, 64, cached=1024)
    assert cached["linear"] * (1024 + 64) == pytest.approx(full["linear"] * 64)
    assert cached["head"] == full["head"]
    # attention of the suffix over the prefix is still paid: 64 queries x ~1100 keys each
    assert cached["attention"] > 64 * 1024 / (1088 * 1089 / 2) * full["attention"]
    assert 1 < predicted_speedup(cfg, 1024, 64) < 1088 / 64
    assert predicted_speedup(cfg, 4096, 64) > predicted_speedup(cfg, 256, 64)


def test_kernels_flops_attention_counts_keys_seen():
    cfg = ModelConfig(vocab_size=8, hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1)
    # 2 new tokens after 3 cached: they see 4 and 5 keys; 2 FLOPs x (QK + PV) x heads x head_dim
    assert prefill_flops(cfg, 2, cached=3)["attention"] == 2 * 2 * 2 * 4 * (4 + 5)
    with pytest.raises(ValueError):
        prefill_flops(cfg, 0)


def test_kernels_a_failing_triton_kernel_falls_back_to_torch_with_one_line():
    """Forced failure of the fast path: the same outputs from the torch reference, and a message once."""
    import torch

    from kernels.device import WithFallback
    from kernels.paged_attention import paged_attention_torch

    def broken(*args, **kwargs):
        raise RuntimeError("PTX assembly failed: unsupported architecture sm_999")

    said: list[str] = []
    fn = WithFallback("Triton", broken, say=said.append)
    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 4, 8, generator=g)
    k_cache, v_cache = torch.randn(4, 2, 2, 8, generator=g), torch.randn(4, 2, 2, 8, generator=g)
    table = torch.tensor([2, 0, 3])
    for _ in range(3):
        out = fn(q, k_cache, v_cache, table, 2)
        torch.testing.assert_close(out, paged_attention_torch(q, k_cache, v_cache, table, 2))
    assert fn.fallen and len(said) == 1
    assert "Triton" in said[0] and "torch" in said[0] and "sm_999" in said[0]


def test_shapes_and_rates_need_no_torch_so_stage_7_grades_without_it():
    """What only reasons about shapes and measured rates imports no torch: a stage-7 grading child
    (its setup cells, reference and checks) stays small; kernels' public names still resolve."""
    import subprocess
    import sys

    from autograder.core.pysource import imported_modules
    from autograder.core.spec import load_stage
    from autograder.grading.trusted import setup_cells

    probe = ("import sys, kernels.config, kernels.flops, kernels.calibration, solutions.s07_serving, "
             "autograder.checks.s07, solutions.hidden.s07; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    stage = load_stage("s07", hidden=True)
    assert "torch" not in stage.preload
    assert not any("torch" in imported_modules(c) for c in setup_cells(stage))
    import kernels
    from kernels.cost_model import Calibration
    from kernels.model import ModelConfig as FromModel

    assert kernels.ModelConfig is FromModel is ModelConfig and kernels.KVPool is KVPool
    assert Calibration.__module__ == "kernels.calibration"
