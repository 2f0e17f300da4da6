"""The interleaved-rounds helper every benchmark uses: rotation, per-round ratios, validation."""
from __future__ import annotations

import pytest

from benchmarks.rounds import interleaved, summary


def test_rounds_rotate_order_and_compute_per_round_ratios():
    calls: list[str] = []
    r = interleaved({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2},
                    baseline="a", rounds=3, warmup=False, clock="wall")
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert len(r.seconds["a"]) == len(r.seconds["b"]) == 3
    assert r.results == {"a": 1, "b": 2}
    assert r.ratios("b") == [t / b for t, b in zip(r.seconds["b"], r.seconds["a"], strict=True)]
    assert r.speedups("b") == pytest.approx([1 / q for q in r.ratios("b")])


def test_rounds_validate_before_running():
    with pytest.raises(ValueError):
        interleaved({"a": lambda: None}, baseline="missing")
    with pytest.raises(ValueError):
        interleaved({"a": lambda: None}, baseline="a", rounds=0)


def test_summary_reports_min_and_median():
    assert summary([3.0, 1.0, 2.0]) == "min 1.00 · median 2.00"
