"""The pieces of the real-router benchmark (``benchmarks/bench_router.py``): the trace as text, mock
engine workers on loopback, SGLang's router as a child process, and the replay that drives it."""
