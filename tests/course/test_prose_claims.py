"""Sentences of stages 1-4 and 8 that state a number, a decision or a comparison, held to the run.

Each stage's prose either renders such a sentence from the run (timings, the timing attack) or states
only what holds on any machine: what seeded, simulated or counted work computes. This file reruns that
work with the notebook's own code (the English instructor notebook, executed up to the cell that
computes it; checks and plots left out) and asserts each sentence, in both languages.
"""
from __future__ import annotations

import contextlib
import io
import re
import sys
import types

import nbformat
import pytest

from autograder.core import layout


def _run(stage_id: str, until: str) -> dict:
    """The namespace of the English instructor notebook run up to (and with) the first code cell whose
    source contains ``until``; ``check(...)`` cells and plots are skipped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nb = nbformat.read(layout.stage_files(stage_id).instructor(), as_version=4)
    module = types.ModuleType("pcw_prose_claims")  # a module of its own, as a kernel's __main__ (dataclasses)
    sys.modules[module.__name__] = module
    ns = vars(module)
    show, plt.show = plt.show, lambda *a, **k: None
    try:
        for cell in nb.cells:
            if cell.cell_type != "code" or cell.source.lstrip().startswith("check("):
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, f"<{stage_id} cell>", "exec"), ns)
            plt.close("all")
            if until in cell.source:
                return ns
    finally:
        plt.show = show
        sys.modules.pop(module.__name__, None)
    raise AssertionError(f"{stage_id}: no code cell contains {until!r}")


def _prose(stage_id: str) -> dict[str, str]:
    """The stage's source text per language (markdown and comments, as written)."""
    text = layout.stage_files(stage_id).source.read_text(encoding="utf-8")
    out = {"en": [], "zh": []}
    lang = None
    for line in text.splitlines():
        if line.startswith("# %%"):
            m = re.search(r'lang="(\w+)"', line)
            lang = m.group(1) if m else None
        elif lang:
            out[lang].append(line.lstrip("# "))
    return {"en": " ".join(out["en"]), "zh": "".join(out["zh"])}  # a Chinese line break is no space


def _says(stage_id: str, en: str, zh: str) -> None:
    prose = _prose(stage_id)
    assert en in prose["en"], f"{stage_id}: the English prose no longer says {en!r}: update this test with it"
    assert zh in prose["zh"], f"{stage_id}: the Chinese prose no longer says {zh!r}: update this test with it"


@pytest.mark.slow  # reruns the recap's measurements
def test_s01_recap_numbers():
    ns = _run("s01", "prefill work saved")
    ledgers = ns["ledgers"]
    hits = sum(v["hit_tokens"] for v in ledgers.values())
    total = hits + sum(v["uncached_tokens"] for v in ledgers.values())
    assert (hits, total, round(100 * hits / total)) == (105, 175, 60)
    assert ledgers[ns["HALF_OF_A"]]["hit_tokens"] == 0
    _says("s01", "105 of 175 prompt tokens (60 %)", "175 个提示词 token 里有 105 个（60%）")


@pytest.mark.slow  # reruns the recap's measurements
def test_s02_recap_numbers():
    ns = _run("s02", "results[name] = blocks")
    france, spain, chain_keys = ns["france"], ns["spain"], ns["chain_keys"]
    shared = next(i for i in range(1, len(spain) + 1) if france[-i] != spain[-i]) - 1
    kf, ks = chain_keys(france, 1), chain_keys(spain, 1)
    assert shared == 23 and sum(a == b for a, b in zip(kf[-shared:], ks[-shared:], strict=True)) == 0
    assert (sum(ns["same_tokens"]), sum(ns["same_keys"]), len(ns["same_keys"])) == (7, 0, 8)
    results = list(ns["results"].values())
    assert results[0] == 5 and results[2] == 0
    _says("s02", "share their last 23 tokens and 0 of the keys", "最后 23 个 token 相同，而这些块的 key 没有一个相同")
    _says("s02", "left 7 of 8 token blocks equal and 0 of 8 keys", "8 个块里 token 相同的有 7 个，key 相同的是 0 个")
    _says("s02", "gave 5 cached blocks (40 tokens) to the same tenant and 0 to another", "同一个租户命中 5 个块（40 个 token），另一个租户命中 0 个")


@pytest.mark.slow
def test_s03_stepper_and_pool_size_sentences():
    ns = _run("s03", "sizes = [8, 12, 16, 24, 32, 48]")
    replay, shares = ns["replay"], dict(zip([8, 12, 16, 24, 32, 48], ns["shares"], strict=True))
    assert 3 in [b.block_id for b in replay(10)[0].requests["D"].blocks]  # step 10: D takes #3
    assert replay(15)[0].requests["F"].hit_blocks == 2  # step 15: F hits only the system prompt
    assert round(shares[24], 1) == 0.6 and round(shares[8], 1) == 0.4
    assert shares[8] < shares[24]  # too few blocks: fewer tokens skip prefill
    _says("s03", "about 60 % of all admitted prompt tokens on a 24-block pool", "24 块的池上被接纳的提示词 token 约有 60% 跳过了 prefill")
    _says("s03", "on an 8-block pool only about 40 % did", "换成 8 块的池，这个比例只有约 40%")


@pytest.mark.slow
def test_s04_what_the_plots_show():
    ns = _run("s04", "reveal(my_guess_4")
    names = list(ns["workloads"])
    system, rag, chats, loop = (ns["all_curves"][n] for n in names)
    caps = ns["capacities"]
    assert system["lru"] == system["belady"]  # LRU sits on the bound at every capacity
    assert max(loop["lru"]) == 0 and max(caps) < 40 * 32  # nothing until the cache holds all 40 prompts
    assert all(p > 0 and r > 0 for p, r in zip(loop["pin"], loop["res"], strict=True))  # both recover part of it
    assert all(abs(b / c - loop["belady"][0] / caps[0]) < 1e-3 for b, c in zip(loop["belady"], caps, strict=True))  # proportional
    assert all(0.02 <= p - lru <= 0.06 for p, lru in zip(rag["pin"][:2], rag["lru"][:2], strict=True))  # "a few points"
    assert all(p <= lru for p, lru in zip(chats["pin"], chats["lru"], strict=True))  # pinning falls below LRU on chats
    assert max(r - lru for name in names[:3] for r, lru in
               zip(ns["all_curves"][name]["res"], ns["all_curves"][name]["lru"], strict=True)) <= 0  # residence: only the loop
    assert system["res"][0] < 0.2 and rag["res"][0] < 0.2  # rejections at small capacities
    conv, synth = ns["mooncake"]["conversation"], ns["mooncake"]["synthetic"]
    assert synth["pin"][0] < synth["lru"][0] and abs(conv["pin"][0] - conv["lru"][0]) < 0.01
    for curves in (conv, synth):
        assert all(0.19 <= lru / bel <= 0.55 for lru, bel in zip(curves["lru"][:2], curves["belady"][:2], strict=True))
    assert (round(conv["lru"][0], 2), round(conv["belady"][0], 2)) == (0.04, 0.21)
    _says("s04", "LRU sits on the bound at", "LRU 在每个容量下都贴着上界")
    _says("s04", "a fifth to a half of Belady's hit rate", "LRU 只拿到 Belady 命中率的五分之一到一半")
    _says("s04", "LRU hits about 4% of the blocks where Belady hits about 21%", "LRU 命中约 4% 的块，")



@pytest.mark.slow  # reruns the eviction demo (counted and timed)
def test_s05_eviction_answer_rests_on_a_count():
    """my_guess_4's answer and the recap's "more than 8 times as many leaves per request" come from the
    leaves counted, never from the times measured beside them: the same on every machine."""
    ns = _run("s05", "reveal(my_guess_4")
    small, large = ns["looked_at"][2_048], ns["looked_at"][32_768]
    assert large / small > 8 and ns["growth"] == large / small
    assert 20 < large / small < 200  # far from the 8x boundary: no rounding of the workload moves it
    _says("s05", "in a cache 16 times larger, more than 8 times as many leaves per request",
          "缓存大 16 倍时，每个请求要看的叶子是原来的 8 倍以上")


def test_s08_isolation_costs():
    """"With room for everything, isolation costs little ... When memory is tight it costs a lot"."""
    from solutions.s08_cache_attacks import tenant_extra_keys
    from workbook.tenant_isolation import make_tenant_workload, replay
    from workbook.weak_keys import expected_birthday_tries

    workload = make_tenant_workload(0, num_requests=2000)
    drop = {}
    for blocks in (4096, 1024, 512):
        shared = replay(workload, extra_keys_for=None, num_blocks=blocks)
        salted = replay(workload, extra_keys_for=tenant_extra_keys, num_blocks=blocks)
        drop[blocks] = shared.hit_rate - salted.hit_rate
    assert drop[4096] < 0.05 and drop[1024] > 0.3 and drop[512] > 0.3
    assert round(expected_birthday_tries(16), -1) == 320
    _says("s08", "With room for everything, isolation costs little", "内存够放下全部内容时，隔离的代价很小")
    _says("s08", "about 320 at 16 bits", "16 位时约 320 次")
