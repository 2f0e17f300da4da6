"""Benchmark scripts (run them as ``python benchmarks/bench_x.py``; they are not tests)."""
