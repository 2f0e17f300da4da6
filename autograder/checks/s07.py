"""Stage 7 spec and public checks: measuring a prefix cache under traffic, and deciding a setting.

Every TODO is a pure function over measurements, so the probes feed them seeded synthetic data
(latency lists, ledgers, calibrations, sweeps) and return plain values: nothing is timed here.
FLOP counts are reported in GFLOP and times in milliseconds, compared with a small tolerance, so
that a correct answer summing in another order still passes.

Everything a learner reads here exists in English and Chinese (``L(en, zh)``). Contracts say what to
set or return and the invariant, never code; hint tiers go from the idea (1) over the approach (2) to
a skeleton with blanks (3). Each check's hint speaks only about the bug that check detects.
"""
from __future__ import annotations

import random

from autograder.checks.common import plain, record
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s07",
    title=L("Serving with a prefix cache: measure, explain, decide", "带前缀缓存的服务：测量、解释、决策"),
    subtitle="带前缀缓存的服务：测量、解释、决策",
    summary=L("serving: TTFT, TPOT and hit rate with the cache on and off on four workloads, a calibrated cost "
              "model, and a decision record for the pool size",
              "服务：在四种负载上对比开关缓存时的 TTFT、TPOT 和命中率，用校准过的成本模型解释测量结果，"
              "并为块池大小写一份决策记录"),
    minutes=80,
    todos=[
        Todo("s07.latency_summary", 1, target="latency_summary", points=2,
             title=L("percentiles of a latency list", "延迟列表的分位数"),
             contract=L(
                 "Add one entry per requested percentile to the summary.\n"
                 "Its key is the letter p followed by the percentile written without trailing zeros (p50, p90,\n"
                 "p99.9). Its value sits at the fractional rank p/100 times (count - 1) of the values sorted\n"
                 "from smallest to largest, where rank 0 is the smallest: between two neighbouring ranks,\n"
                 "interpolate linearly; an integer rank gives that value exactly.\n"
                 "Invariants: p0 is the minimum, p100 the maximum, p50 the median; the caller's list is left\n"
                 "unchanged.",
                 "为每个要求的分位数在 summary 里加一项。\n"
                 "键是字母 p 加上去掉末尾 0 的分位数（p50、p90、p99.9）。值位于从小到大排序后的第\n"
                 "p/100 ×（count − 1）个位置（小数位置，位置 0 是最小值）：落在两个相邻位置之间时做线性插值；\n"
                 "位置恰好是整数时就取那个值本身。\n"
                 "不变量：p0 是最小值，p100 是最大值，p50 是中位数；调用者传入的列表保持不变。"),
             hints=(L("A percentile is a position in the sorted list: p90 lies 90% of the way from the smallest "
                      "value to the largest. Between two measured values, walk the straight line between them.",
                      "分位数就是排好序的列表里的一个位置：p90 位于从最小值到最大值 90% 的地方。落在两个测量值"
                      "之间时，就在它们之间的直线上取值。"),
                    L("Sort a copy once. For each percentile compute the fractional rank, split it into its integer "
                      "part (floor) and the fraction, and mix the value at the floor with the next one (never past "
                      "the last index).",
                      "先对一个副本排一次序。对每个分位数算出小数位置，拆成整数部分（向下取整）和小数部分，"
                      "再把整数位置上的值和下一个值按小数部分混合（下一个位置不能超过最后一个下标）。"),
                    L("ordered = sorted(xs)\n"
                      "for p in percentiles:\n"
                      "    # fractional rank: 0 is the smallest value, len(ordered) - 1 the largest\n"
                      "    rank = ___\n"
                      "    lo = math.floor(rank)\n"
                      "    hi = min(lo + 1, len(ordered) - 1)\n"
                      '    summary[f"p{p:g}"] = ordered[lo] + ___',
                      "ordered = sorted(xs)\n"
                      "for p in percentiles:\n"
                      "    # 小数位置：0 是最小值，len(ordered) - 1 是最大值\n"
                      "    rank = ___\n"
                      "    lo = math.floor(rank)\n"
                      "    hi = min(lo + 1, len(ordered) - 1)\n"
                      '    summary[f"p{p:g}"] = ordered[lo] + ___'))),
        Todo("s07.cache_accounting", 2, target="cache_accounting", points=3,
             title=L("hit rate and saved FLOPs from a run's ledger", "根据一次运行的账目算命中率和省下的 FLOPs"),
             contract=L(
                 "Set totals to the dict of nine entries the docstring lists.\n"
                 "The hit rate is weighted by tokens: all hit tokens over all prompt tokens (0.0 for an empty\n"
                 "ledger). Without the cache a request computes its whole prompt; with it, only its computed\n"
                 "tokens, and those still attend to the hit tokens before them: that attention is not saved.\n"
                 "The saved fraction is the saved FLOPs over the FLOPs without the cache (0.0 when nothing\n"
                 "was computed).\n"
                 "Invariants: the hit rate lies between 0 and 1; the FLOPs with the cache never exceed the FLOPs\n"
                 "without it.",
                 "把 totals 设成 docstring 列出的那 9 项组成的字典。\n"
                 "命中率按 token 加权：所有命中 token 除以所有提示词 token（账目为空时为 0.0）。不开缓存时，\n"
                 "一个请求要计算整个提示词；开了缓存，只计算它的 computed token，而这些 token 仍然要对前面\n"
                 "命中的 token 做 attention：这部分 attention 省不掉。\n"
                 "省下的比例是省下的 FLOPs 除以不开缓存时的 FLOPs（什么都没算时为 0.0）。\n"
                 "不变量：命中率在 0 和 1 之间；开缓存的 FLOPs 永远不超过不开缓存的 FLOPs。"),
             hints=(L("What a user's request saves is measured in tokens, not requests: a 4,000-token hit counts more "
                      "than a 10-token miss. A cached prefix removes the prefix's own work, but the new tokens still "
                      "read all of it in attention.",
                      "一个请求省下多少要按 token 算，而不是按请求算：命中 4,000 个 token 比未命中 10 个 token 分量"
                      "重得多。缓存的前缀省掉的是前缀自己的计算，但新 token 在 attention 里仍然要把前缀全部读一遍。"),
                    L("Sum the token columns over the ledger. For the FLOPs, call prefill_flops twice per request: "
                      "once for the whole prompt with nothing cached, once for the computed tokens after the hit "
                      "tokens; add up each call's total.",
                      "先把账目里的各列 token 数加起来。FLOPs 方面，每个请求调用两次 prefill_flops：一次是整个提示词、"
                      "没有缓存；一次是命中 token 之后的 computed token；把每次结果里的 total 加起来。"),
                    L('prompt = sum(e["prompt_tokens"] for e in ledger)\n'
                      'hit = sum(e["hit_tokens"] for e in ledger)\n'
                      'without = sum(prefill_flops(cfg, ___)["total"] for e in ledger)\n'
                      'with_cache = sum(prefill_flops(cfg, ___, ___)["total"] for e in ledger)\n'
                      "totals = {\n"
                      '    "requests": len(ledger),\n'
                      '    "prompt_tokens": prompt,\n'
                      '    "hit_tokens": hit,\n'
                      '    "hit_rate": ___,\n'
                      '    "requests_with_hit": ___,\n'
                      '    "flops_without_cache": without,\n'
                      '    "flops_with_cache": with_cache,\n'
                      '    "saved_flops": without - with_cache,\n'
                      '    "saved_fraction": ___,\n'
                      "}",
                      'prompt = sum(e["prompt_tokens"] for e in ledger)\n'
                      'hit = sum(e["hit_tokens"] for e in ledger)\n'
                      'without = sum(prefill_flops(cfg, ___)["total"] for e in ledger)\n'
                      'with_cache = sum(prefill_flops(cfg, ___, ___)["total"] for e in ledger)\n'
                      "totals = {\n"
                      '    "requests": len(ledger),\n'
                      '    "prompt_tokens": prompt,\n'
                      '    "hit_tokens": hit,\n'
                      '    "hit_rate": ___,\n'
                      '    "requests_with_hit": ___,\n'
                      '    "flops_without_cache": without,\n'
                      '    "flops_with_cache": with_cache,\n'
                      '    "saved_flops": without - with_cache,\n'
                      '    "saved_fraction": ___,\n'
                      "}"))),
        Todo("s07.predict_ttft", 3, target="predict_ttft", points=3,
             title=L("predicted TTFT from measured rates", "用实测速率预测 TTFT"),
             contract=L(
                 "Set seconds to the predicted prefill time.\n"
                 "Take the FLOPs by kind of work from prefill_flops for these computed and cached tokens, and\n"
                 "divide each kind by the rate this device reached for that work at this prefill's sizes: the\n"
                 "linear layers at the GEMM rate for one row per computed token; attention at the attention\n"
                 "rate for the computed tokens' queries over the whole context (computed plus cached tokens);\n"
                 "the output head at the head rate. Add the measured time that is not FLOPs for this prefill.\n"
                 "Invariant: more cached tokens never make a prediction faster at the same computed tokens.",
                 "把 seconds 设成预测的 prefill 时间。\n"
                 "用 prefill_flops 按这次的 computed 和 cached token 数得到各类计算的 FLOPs，每一类都除以本设备\n"
                 "在这次 prefill 的规模下做这类计算的实测速率：线性层用“每个 computed token 一行”时的 GEMM 速率；\n"
                 "attention 用“computed token 的 query 对整个上下文（computed 加 cached token）”时的 attention 速率；\n"
                 "输出头用输出头的速率。最后加上这次 prefill 里不属于 FLOPs 的实测时间。\n"
                 "不变量：computed token 数不变时，cached token 越多，预测时间绝不会变短。"),
             hints=(L("A device does not run every kind of work at one speed: a 64-row matmul, a long attention and a "
                      "one-row output head each have their own measured rate. Time is work over rate, per kind of "
                      "work, summed, plus what is not FLOPs at all.",
                      "设备做不同的计算时速度并不一样：64 行的矩阵乘、很长的 attention、只有一行的输出头，各有各的实测"
                      "速率。时间 = 计算量 ÷ 速率，按类别分别算再加起来，再加上根本不算 FLOPs 的那部分时间。"),
                    L("Get the FLOPs by part once (linear, attention, head) for this computed/cached split. Divide "
                      "each part by the calibration's rate read at this prefill's sizes (rows are the computed tokens; "
                      "the context is computed plus cached), then add the calibration's other seconds.",
                      "先按这次的 computed/cached 划分一次性拿到分项 FLOPs（linear、attention、head）。每一项除以从"
                      "校准结果里按这次 prefill 的规模读出的速率（行数是 computed token 数；上下文是 computed 加 "
                      "cached），再加上校准结果里的其他时间。"),
                    L("flops = prefill_flops(cfg, computed, cached)\n"
                      "# each kind of work at the rate measured for it at these sizes\n"
                      'seconds = (flops["linear"] / cal.gemm_rate(___)\n'
                      '           + flops["attention"] / cal.attention_rate(___, ___)\n'
                      '           + flops["head"] / cal.head_flops_per_s\n'
                      "           + cal.other_s(computed, cached))",
                      "flops = prefill_flops(cfg, computed, cached)\n"
                      "# 每类计算都用它在这个规模下的实测速率\n"
                      'seconds = (flops["linear"] / cal.gemm_rate(___)\n'
                      '           + flops["attention"] / cal.attention_rate(___, ___)\n'
                      '           + flops["head"] / cal.head_flops_per_s\n'
                      "           + cal.other_s(computed, cached))"))),
        Todo("s07.choose_setting", 4, target="choose_setting", points=3,
             title=L("the cheapest setting that meets an SLO", "满足 SLO 的最省设置"),
             contract=L(
                 "Set chosen to a copy of the setting the rule below picks,\n"
                 "or to None when no measured setting meets every bound of the SLO (the given helper _meets\n"
                 "says whether one setting does). The rule, among the settings that meet the SLO: the smallest\n"
                 "pool; at equal pool size, the lower values of the SLO's metrics, compared in the SLO's order\n"
                 "(first metric first); then cache off before cache on (the simpler system).\n"
                 "Invariants: the result does not depend on the order of the measurements, and changing it\n"
                 "never changes the caller's data.",
                 "把 chosen 设成按下面规则选出的那个设置的副本；\n"
                 "如果没有任何一个测过的设置满足 SLO 的全部上限，就设成 None（给定的辅助函数 _meets 判断单个设置\n"
                 "是否满足）。规则是，在满足 SLO 的设置里：块池最小的优先；块池一样大时，按 SLO 中指标的顺序比较，\n"
                 "值更低的优先（先比第一个指标，一样再比第二个……）；都一样时，关缓存优先于开缓存（系统更简单）。\n"
                 "不变量：结果与测量结果的排列顺序无关；修改返回值不会改动调用者的数据。"),
             hints=(L("Memory is what a pool costs: the cheapest setting that keeps the promise wins. If nothing keeps "
                      "it, the honest answer is 'none', not the least bad setting.",
                      "块池的代价就是显存：能兑现承诺的设置里，最省的那个胜出。如果一个都兑现不了，诚实的回答是"
                      "“没有”，而不是挑一个最不差的。"),
                    L("Keep only the settings that _meets accepts; with none left, the answer is None. Otherwise take "
                      "the minimum under one sort key: the pool size, then the values of the SLO's metrics in the SLO's "
                      "order, then the cache flag (False sorts before True); return a copy of it.",
                      "只留下 _meets 接受的设置；一个都不剩，答案就是 None。否则按一个排序键取最小值：先比块池大小，"
                      "再按 SLO 中的顺序比各个指标的值，最后比缓存开关（False 排在 True 前面）；返回它的副本。"),
                    L("meeting = [m for m in measurements if _meets(m, slo)]\n"
                      "if not meeting:\n"
                      "    chosen = None\n"
                      "else:\n"
                      "    # smallest pool first, then the SLO's metrics in its order, then cache off before cache on\n"
                      "    best = min(meeting, key=lambda m: (___, *(___ for k in slo), ___))\n"
                      "    chosen = dict(best)",
                      "meeting = [m for m in measurements if _meets(m, slo)]\n"
                      "if not meeting:\n"
                      "    chosen = None\n"
                      "else:\n"
                      "    # 先比块池大小，再按 SLO 的顺序比各指标，最后关缓存优先于开缓存\n"
                      "    best = min(meeting, key=lambda m: (___, *(___ for k in slo), ___))\n"
                      "    chosen = dict(best)"))),
    ],
    quiz=Quiz(number=5, points=2, questions=(
        Question("q1", L("Four requests share a 1,024-token system prompt (64 full blocks of 16 tokens); each adds its "
                         "own 64-token question, so every prompt has 1,088 tokens. They arrive one after another, cache "
                         "on, in a pool large enough for all of them. What is the token-weighted hit rate over the "
                         "four requests? (2 decimals)",
                         "四个请求共用一段 1,024 个 token 的 system prompt（64 个 16 token 的满块），每个请求再加上自己的 "
                         "64 个 token 的问题，所以每个提示词都是 1,088 个 token。它们一个接一个到达，缓存打开，块池大到"
                         "装得下全部内容。这四个请求按 token 加权的命中率是多少？（保留 2 位小数）"),
                 L("The first request finds nothing; each later one hits the whole shared prefix and none of its own "
                   "question. Divide all hit tokens by all prompt tokens.",
                   "第一个请求什么也找不到；之后的每个请求命中整段共享前缀，但自己的问题一个 token 也命中不了。"
                   "用所有命中 token 除以所有提示词 token。"),
                 decimals=2),
        Question("q2", L("With the cache on, the shared-prefix workload's TPOT p50 dropped. What explains it?",
                         "打开缓存后，共享前缀负载的 TPOT p50 下降了。原因是什么？"),
                 L("Ask what one decode step computes, and what else runs on the same device between two decode steps.",
                   "想一想一次 decode 步骤算的是什么，以及两次 decode 步骤之间，同一个设备上还在跑什么。"),
                 choices=(L("decode steps read the prefix's K/V from the cache instead of recomputing it, so each step "
                            "does less work",
                            "decode 步骤从缓存里读前缀的 K/V，而不是重新计算，所以每一步的计算更少"),
                          L("decode steps do the same work either way; running requests wait less while newcomers are "
                            "prefilled, because cached prefills are short",
                            "两种情况下 decode 步骤的计算完全一样；只是新请求做 prefill 时，正在运行的请求等得更少了，"
                            "因为带缓存的 prefill 很短"),
                          L("cached requests use a smaller attention kernel during decode", "带缓存的请求在 decode 时用了"
                            "更小的 attention kernel"))),
        Question("q3", L("Every prompt is unique. Compared with the cache off, what should the cache-on run show?",
                         "每个提示词都不一样。和关缓存相比，开缓存的运行应该是什么结果？"),
                 L("Count what the cache adds to a request that can never hit, and compare it with the prefill the "
                   "request needs anyway.",
                   "算一算：对一个永远不可能命中的请求，缓存额外加了哪些工作？再和这个请求本来就要做的 prefill 比一比。"),
                 choices=(L("a small hit rate, since random blocks sometimes repeat",
                            "有一点命中率，因为随机生成的块偶尔会重复"),
                          L("hit rate 0 and a clearly higher TTFT, since every lookup misses",
                            "命中率为 0，而且 TTFT 明显变高，因为每次查找都未命中"),
                          L("hit rate 0 and TTFT equal within noise: the extra work is hashing and looking up a few "
                            "blocks, tiny next to a prefill",
                            "命中率为 0，TTFT 在噪声范围内不变：多出来的只是对几个块做哈希和查找，和 prefill 相比微不足道"))),
        Question("q4", L("Twelve prefixes of 12 blocks each (144 blocks) are visited round-robin. Besides the running "
                         "requests, the LRU pool can keep about 100 free cached blocks. What is the hit rate?",
                         "12 个前缀、每个 12 块（共 144 块）轮流被访问。除去正在运行的请求，LRU 块池大约还能留住 100 个"
                         "空闲的缓存块。命中率是多少？"),
                 L("Follow one prefix: how many other blocks are freed between two of its turns, and which blocks does "
                   "LRU hand out first?",
                   "盯住一个前缀看：它相邻两次被访问之间，有多少别的块被释放？LRU 又会先把哪些块交出去？"),
                 choices=(L("close to 0: each prefix is evicted just before its turn comes back",
                            "接近 0：每个前缀都恰好在轮到它之前被淘汰"),
                          L("about 100/144, the share of the prefixes the pool can hold",
                            "大约 100/144，也就是块池装得下的那部分前缀所占的比例"),
                          L("about one half: LRU keeps the more recent half of the prefixes",
                            "大约一半：LRU 会留住较新的那一半前缀"))),
        Question("q5", L("Why does the cost model read the GEMM rate at the prefill's own row count instead of using "
                         "one peak FLOP rate for everything?",
                         "为什么成本模型要按这次 prefill 自己的行数读取 GEMM 速率，而不是对所有计算都用同一个峰值 FLOP 速率？"),
                 L("Think about what a matmul with few rows must still read from memory, and how much work it does per "
                   "value it reads.",
                   "想一想：行数很少的矩阵乘仍然要从内存里读哪些数据，每读一个数又能做多少计算。"),
                 choices=(L("because the FLOP count of a matmul is not proportional to its number of rows",
                            "因为矩阵乘的 FLOPs 与行数不成正比"),
                          L("because measuring the GEMMs at every size also calibrates attention, which shares their rate",
                            "因为在各种规模下测 GEMM 也就顺带校准了 attention，二者速率相同"),
                          L("because a few-row matmul reads the same weights as a many-row one but does little work per "
                            "weight, so it runs at a far lower FLOP rate; one rate would predict cached prefills far "
                            "too fast",
                            "因为行数少的矩阵乘和行数多的读的是同样的权重，每个权重上做的计算却很少，所以 FLOP 速率低得多；"
                            "只用一个速率会把带缓存的 prefill 预测得快很多"))),
        Question("q6", L("A sweep measured, with the cache on, p90 TTFT of 0.90 s at 64 blocks, 0.85 s at 128, 0.32 s at "
                         "192 and 0.30 s at 256; with the cache off, 0.88 s at every size. The SLO is p90 TTFT of at most "
                         "0.40 s. Which pool size (in blocks) does the decision rule choose?",
                         "一次扫描测得：开缓存时，64 块的 p90 TTFT 为 0.90 秒，128 块为 0.85 秒，192 块为 0.32 秒，"
                         "256 块为 0.30 秒；关缓存时各个大小都是 0.88 秒。SLO 是 p90 TTFT 不超过 0.40 秒。"
                         "按决策规则会选多大的块池（以块计）？"),
                 L("Keep the settings that meet every bound, then take the cheapest one among them.",
                   "先留下满足所有上限的设置，再从中挑最省的。"),
                 decimals=0),
    )),
    time_limit_s=20,
    memory_limit_mb=1024,  # its TODOs and checks need no torch (kernels.config, kernels.calibration)
)

TIME_ATOL = 1e-6  # latencies in seconds, predictions in ms
GFLOP_ATOL = 1e-6


# -- helpers shared with the hidden checks ----------------------------------------------------------
def model_config(name: str = "small"):
    """The model shapes of the probes: stage 6's benchmark model, or two layers of Qwen2.5-0.5B's shape."""
    from kernels.config import ModelConfig

    if name == "small":
        return ModelConfig(vocab_size=8192, hidden_size=640, intermediate_size=2560, num_hidden_layers=2,
                           num_attention_heads=10, num_key_value_heads=2)
    if name == "qwen2-width":
        return ModelConfig.qwen2_5_0_5b(num_hidden_layers=2, vocab_size=32000, tie_word_embeddings=False)
    return ModelConfig.tiny()


def latencies(seed: int, n: int, scale: float = 0.05) -> list[float]:
    """``n`` seeded latencies (seconds) with a long right tail, like real TTFTs."""
    rng = random.Random(seed)
    return [round(scale * rng.lognormvariate(0.0, 0.6), 6) for _ in range(n)]


def ledger(seed: int, n: int, *, prefix: int = 512, hit_share: float = 0.7) -> list[dict]:
    """``n`` seeded ledger entries: prompts of ``prefix`` + a question; a ``hit_share`` of them hit
    the prefix's full 16-token blocks (stage 3's rule: at least one token is computed)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        prompt = prefix + rng.randint(1, 64)
        hit = (prefix // 16) * 16 if rng.random() < hit_share else 0
        hit = min(hit, prompt - 1)
        out.append({"prompt_tokens": prompt, "hit_tokens": hit, "computed_tokens": prompt - hit})
    return out


def in_gflop(totals) -> object:
    """``cache_accounting``'s dict with every FLOP count in GFLOP (anything else: as it came)."""
    totals = plain(totals)  # numpy's scalars are numbers too (np.sum answers with them)
    if not isinstance(totals, dict):
        return f"not a dict: {type(totals).__name__}"
    return {k: (v / 1e9 if "flops" in k and isinstance(v, (int, float)) else v) for k, v in totals.items()}


def token_fields(totals) -> object:
    """Only the token counts and rates of ``cache_accounting``'s dict (a check of the FLOPs fails alone)."""
    totals = in_gflop(totals)
    if not isinstance(totals, dict):
        return totals
    return {k: v for k, v in totals.items() if "flops" not in k and k != "saved_fraction"}


def calibration(kind: str = "cpu"):
    """A synthetic :class:`kernels.cost_model.Calibration`: rates that differ by size, as on a real CPU.

    GEMMs get faster per FLOP with more rows; attention runs far below the GEMM rate; the head on
    one row is memory-bound. ``kind="slow-attention"`` makes attention 20x slower still, so using
    the wrong rate or the wrong context for it moves the answer a lot.
    """
    from kernels.calibration import Calibration

    attention = {(1, 1): 2e8, (64, 320): 4e9, (64, 1088): 6e9, (64, 4160): 7e9,
                 (320, 320): 1.2e10, (1088, 1088): 1.8e10, (4160, 4160): 2.2e10}
    if kind == "slow-attention":
        attention = {k: v / 20 for k, v in attention.items()}
    return Calibration(
        gemm_flops_per_s={1: 3e9, 64: 3.2e10, 320: 5e10, 1088: 6e10, 4160: 6.5e10},
        head_flops_per_s=8e9,
        attention_flops_per_s=attention,
        elementwise_s={1: 2e-4, 64: 6e-4, 4160: 3e-2},
        overhead_s=1.5e-3,
        bookkeeping_s_per_token=3e-7,
        device="synthetic",
    )


def ms(seconds) -> object:
    """A prediction in milliseconds (anything but a float or int: described, which never passes)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return f"not a number: {type(seconds).__name__}"
    return float(seconds) * 1e3


def setting(cache: bool, num_blocks: int, ttft_p90: float, tpot_p50: float = 0.02, hit_rate: float = 0.0) -> dict:
    """One measured setting, as a sweep records it."""
    return {"cache": cache, "num_blocks": num_blocks, "ttft_p90": ttft_p90, "tpot_p50": tpot_p50, "hit_rate": hit_rate}


def sweep() -> list[dict]:
    """A pool-size sweep, cache on and off, shaped like a thrashing workload: with the cache on,
    p90 TTFT drops once the pool holds the hot prefixes (from 256 blocks on); off, it stays high.
    Listed from the largest pool down, as a sweep that halves the pool would record it."""
    rows = []
    for blocks, on, off, hit in ((1024, 0.21, 0.92, 0.80), (512, 0.22, 0.93, 0.80), (256, 0.30, 0.93, 0.70),
                                 (128, 0.85, 0.94, 0.10), (64, 0.90, 0.95, 0.05)):
        rows.append(setting(True, blocks, on, 0.021, hit))
        rows.append(setting(False, blocks, off, 0.020, 0.0))
    return rows


# -- TODO 1: latency_summary ----------------------------------------------------------------------
@STAGE.check("s07.latency_summary", call="latency_summary([0.3, 0.1, 0.2, 0.5, 0.4])", atol=TIME_ATOL,
             title=L("p50, p90, p99 of five values", "五个值的 p50、p90、p99"),
             hint=L("Sort first; p90 of 5 values sits at rank 0.9 × 4 = 3.6: 60% of the way from the 4th smallest "
                    "value to the 5th.",
                    "先排序；5 个值的 p90 位于位置 0.9 × 4 = 3.6：从第 4 小的值往第 5 小的值走 60%。"))
def five_values(impl):
    return plain(impl.latency_summary([0.3, 0.1, 0.2, 0.5, 0.4]))


@STAGE.check("s07.latency_summary", call="latency_summary([0.8, 0.2], percentiles=(0, 25, 50, 100))", atol=TIME_ATOL,
             title=L("interpolate between two values", "在两个值之间插值"),
             hint=L("Between two ranks, interpolate linearly: p25 of [0.2, 0.8] is 0.2 + 0.25 × 0.6; p0 is the "
                    "minimum and p100 the maximum.",
                    "落在两个位置之间就线性插值：[0.2, 0.8] 的 p25 是 0.2 + 0.25 × 0.6；p0 是最小值，p100 是最大值。"))
def interpolates_between_two(impl):
    return plain(impl.latency_summary([0.8, 0.2], percentiles=(0, 25, 50, 100)))


@STAGE.check("s07.latency_summary", call="latency_summary([5, 1, 4, 2, 3, 9, 7, 8, 6, 10, 11], (10, 50, 90))",
             atol=TIME_ATOL, title=L("integer ranks need no rounding", "整数位置不需要取整"),
             hint=L("With 11 values, p10 is at rank 0.1 × 10 = 1 exactly: the 2nd smallest value, no rounding "
                    "and no scaling by the count.",
                    "有 11 个值时，p10 恰好位于位置 0.1 × 10 = 1：就是第 2 小的值，不需要取整，也不要乘以个数。"))
def integer_ranks(impl):
    return plain(impl.latency_summary([5, 1, 4, 2, 3, 9, 7, 8, 6, 10, 11], (10, 50, 90)))


def skewed_latencies() -> list[float]:
    """A long-tailed list with repeated values, built at run time: p50 is far below the mean, and a
    percentile between two equal neighbours is that value."""
    xs = latencies(11, 9) + [0.04] * 3 + [round(0.04 * 25, 6)]
    random.Random(11).shuffle(xs)
    return xs


@STAGE.check("s07.latency_summary", call=L("xs = 13 long-tailed latencies, three equal; latency_summary(xs, (25, 50, 90, 99.5))",
                    "xs = 13 个长尾延迟，其中三个相等；latency_summary(xs, (25, 50, 90, 99.5))"),
             atol=TIME_ATOL,
             title=L("a long tail with repeated values, the caller's list unchanged",
                     "带重复值的长尾列表，调用者的列表不变"),
             hint=L("A percentile is read from the sorted values, never from the mean (a long tail pulls the mean "
                    "far above p50); equal neighbours give that value; and sort a copy: the caller's list keeps its "
                    "order.",
                    "分位数要从排好序的值里读出来，不能用平均值代替（长尾会把平均值拉到远高于 p50 的地方）；"
                    "两个相等的相邻值之间插值还是这个值；排序时要排副本：调用者的列表保持原来的顺序。"))
def skewed_with_repeats(impl):
    xs = skewed_latencies()
    before = list(xs)
    summary = plain(impl.latency_summary(xs, (25, 50, 90, 99.5)))
    return record(summary=summary, input_unchanged=xs == before)


@STAGE.check("s07.latency_summary", call="latency_summary([1.5], (25, 75))", atol=TIME_ATOL,
             title=L("a single value", "只有一个值"),
             hint=L("One value: every percentile is that value (there is no next rank to interpolate with).",
                    "只有一个值时，每个分位数都是这个值（没有下一个位置可以插值）。"))
def one_value(impl):
    return plain(impl.latency_summary([1.5], (25, 75)))


# -- TODO 2: cache_accounting ---------------------------------------------------------------------
@STAGE.check("s07.cache_accounting", call=L("cache_accounting(3 requests: 528/512 hit, 100/0, 540/512; small model)",
                    "cache_accounting(3 个请求：528/512 命中、100/0、540/512；小模型)"),
             atol=GFLOP_ATOL, title=L("three requests, two of them hit", "三个请求，其中两个命中"),
             hint=L("hit_rate is all hit tokens over all prompt tokens; requests_with_hit counts the requests with "
                    "at least one hit token. FLOPs are shown in GFLOP.",
                    "hit_rate 是所有命中 token 除以所有提示词 token；requests_with_hit 数的是至少命中一个 token 的请求。"
                    "FLOPs 以 GFLOP 为单位显示。"))
def three_requests(impl):
    rows = [{"prompt_tokens": 528, "hit_tokens": 512, "computed_tokens": 16},
            {"prompt_tokens": 100, "hit_tokens": 0, "computed_tokens": 100},
            {"prompt_tokens": 540, "hit_tokens": 512, "computed_tokens": 28}]
    return token_fields(impl.cache_accounting(rows, model_config("small")))


@STAGE.check("s07.cache_accounting", call=L("cache_accounting(one 1000-token request with 992 hit + one 10-token miss)",
                    "cache_accounting(一个 1000 token 的请求命中 992 个 + 一个 10 token 的请求未命中)"),
             atol=GFLOP_ATOL, title=L("the hit rate is weighted by tokens", "命中率按 token 加权"),
             hint=L("Weight by tokens, not by requests: the big request's hits count for almost all of the hit rate.",
                    "按 token 加权，而不是按请求：命中率几乎全由那个大请求的命中决定。"))
def token_weighted(impl):
    rows = [{"prompt_tokens": 1000, "hit_tokens": 992, "computed_tokens": 8},
            {"prompt_tokens": 10, "hit_tokens": 0, "computed_tokens": 10}]
    return token_fields(impl.cache_accounting(rows, model_config("small")))


@STAGE.check("s07.cache_accounting", call=L("cache_accounting(ledger(seed=1, n=20, prefix=4096), small model)",
                    "cache_accounting(ledger(seed=1, n=20, prefix=4096), 小模型)"),
             atol=GFLOP_ATOL, title=L("the question still attends to a long prefix", "问题部分仍要对长前缀做 attention"),
             hint=L("With a cache, the computed tokens still attend to the hit ones: count prefill_flops with the "
                    "hit tokens as cached context, not the computed tokens alone; saved_fraction is saved FLOPs over "
                    "the FLOPs without the cache.",
                    "开了缓存，computed token 仍然要对命中的 token 做 attention：prefill_flops 要把命中 token 作为缓存的"
                    "上下文传进去，不能只算 computed token 自己；saved_fraction 是省下的 FLOPs 除以不开缓存时的 FLOPs。"))
def long_prefix_attention_remains(impl):
    return in_gflop(impl.cache_accounting(ledger(1, 20, prefix=4096), model_config("small")))


@STAGE.check("s07.cache_accounting", call=L("cache_accounting([], tiny model)", "cache_accounting([], 微型模型)"), atol=GFLOP_ATOL,
             title=L("an empty ledger", "空账目"),
             hint=L("An empty ledger: zero requests and tokens, hit_rate and saved_fraction 0.0 (no division by "
                    "zero).",
                    "账目为空时：请求数和 token 数都是 0，hit_rate 和 saved_fraction 都是 0.0（不要除以 0）。"))
def no_requests(impl):
    return in_gflop(impl.cache_accounting([], model_config("tiny")))


# -- TODO 3: predict_ttft -------------------------------------------------------------------------
@STAGE.check("s07.predict_ttft",
             call=L("predict_ttft(small, computed=64, cached=1024, cal) * 1e3  # cal: synthetic rates",
                    "predict_ttft(small, computed=64, cached=1024, cal) * 1e3  # cal：合成的速率"),
             atol=TIME_ATOL, title=L("a cached prefill, in ms", "一次带缓存的 prefill（毫秒）"),
             hint=L("Four terms: linear FLOPs at cal.gemm_rate(computed rows); attention FLOPs at "
                    "cal.attention_rate(computed, computed + cached); head FLOPs at cal.head_flops_per_s; plus "
                    "cal.other_s(computed, cached).",
                    "一共四项：线性层 FLOPs 用 cal.gemm_rate(computed 行数)；attention FLOPs 用 "
                    "cal.attention_rate(computed, computed + cached)；输出头 FLOPs 用 cal.head_flops_per_s；"
                    "再加上 cal.other_s(computed, cached)。"))
def cached_prefill(impl):
    return ms(impl.predict_ttft(model_config("small"), 64, 1024, calibration()))


@STAGE.check("s07.predict_ttft", call="predict_ttft(small, computed=1088, cached=0, cal) * 1e3",
             atol=TIME_ATOL, title=L("a full prefill, in ms", "一次完整 prefill（毫秒）"),
             hint=L("A full prefill is computed = all tokens and cached = 0: the same formula, with the GEMM rate "
                    "read at 1,088 rows.",
                    "完整 prefill 就是 computed = 全部 token、cached = 0：公式不变，GEMM 速率在 1,088 行处读取。"))
def full_prefill(impl):
    return ms(impl.predict_ttft(model_config("small"), 1088, 0, calibration()))


@STAGE.check("s07.predict_ttft", call="[predict_ttft(small, 64, c, cal) * 1e3 for c in (0, 256, 1024, 4096)]",
             atol=TIME_ATOL, title=L("a longer cached prefix costs more attention", "缓存前缀越长，attention 越贵"),
             hint=L("More cached tokens: the same GEMMs, but more attention, because each query reads the whole "
                    "prefix; the attention rate is read at the whole context.",
                    "缓存的 token 越多：GEMM 不变，但 attention 变多，因为每个 query 都要读整个前缀；attention 速率要"
                    "按整个上下文读取。"))
def growing_prefix(impl):
    return [ms(impl.predict_ttft(model_config("small"), 64, c, calibration())) for c in (0, 256, 1024, 4096)]


# -- TODO 4: choose_setting -----------------------------------------------------------------------
@STAGE.check("s07.choose_setting", call=L("choose_setting(sweep(), {'ttft_p90': 0.5})  # 5 pool sizes x cache on/off",
                                        "choose_setting(sweep(), {'ttft_p90': 0.5})  # 5 种块池大小 × 开/关缓存"),
             title=L("the smallest pool that meets the SLO", "满足 SLO 的最小块池"),
             hint=L("Among the settings that meet the SLO, the smallest num_blocks wins: memory is the cost, not "
                    "the latency.",
                    "在满足 SLO 的设置里，num_blocks 最小的胜出：代价是显存，而不是延迟。"))
def smallest_pool_that_meets(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.5})


@STAGE.check("s07.choose_setting", call="choose_setting(sweep(), {'ttft_p90': 0.1})",
             title=L("nothing meets the SLO", "没有设置满足 SLO"),
             hint=L("When no setting meets the SLO, return None: say so rather than pick the least bad one.",
                    "没有设置满足 SLO 时返回 None：如实说明，而不是挑一个最不差的。"))
def nothing_meets(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.1})


@STAGE.check("s07.choose_setting", call="choose_setting(sweep(), {'ttft_p90': 0.95, 'tpot_p50': 0.0205})",
             title=L("every metric of the SLO counts", "SLO 的每个指标都要满足"),
             hint=L("Every metric of the SLO must be within its bound, not only the first one.",
                    "SLO 里的每个指标都必须在上限以内，而不只是第一个。"))
def every_metric_counts(impl):
    return impl.choose_setting(sweep(), {"ttft_p90": 0.95, "tpot_p50": 0.0205})


@STAGE.check("s07.choose_setting",
             call=L("slo = {'tpot_p50': 0.05, 'ttft_p90': 0.5}; choose_setting([on/128/ttft 0.45/tpot 0.02, on/64/0.60, "
                    "off/128/ttft 0.40/tpot 0.03, off/256/0.10], slo); also at 32 blocks on/off ttft 0.25/tpot 0.02 "
                    "and 0.03 under {'ttft_p90': 0.5, 'tpot_p50': 0.05}, and the rows reversed",
                    "slo = {'tpot_p50': 0.05, 'ttft_p90': 0.5}; choose_setting([on/128/ttft 0.45/tpot 0.02, on/64/0.60, "
                    "off/128/ttft 0.40/tpot 0.03, off/256/0.10], slo)；另外 32 块时开/关缓存 ttft 都是 0.25、tpot 分别为 "
                    "0.02 和 0.03，SLO 为 {'ttft_p90': 0.5, 'tpot_p50': 0.05}；以及把各行倒过来的情形"),
             title=L("a tie at equal pool size, broken by the SLO's metrics in its order",
                     "块池一样大时的平局：按 SLO 中指标的顺序来比"),
             hint=L("At equal pool size compare the SLO's metrics in the SLO's order (the first one, whatever its "
                    "name, then the next one on a tie), then cache off before on; and the order of the measurements "
                    "must not matter.",
                    "块池一样大时，按 SLO 里指标的顺序比较（先比第一个，不管它叫什么；打平再比下一个），再是关缓存"
                    "优先于开缓存；测量结果的排列顺序不能影响答案。"))
def tie_at_equal_pool_size(impl):
    rows = [setting(True, 128, 0.45, tpot_p50=0.020), setting(True, 64, 0.60),
            setting(False, 128, 0.40, tpot_p50=0.030), setting(False, 256, 0.10)]
    second = [setting(False, 32, 0.25, tpot_p50=0.03), setting(True, 32, 0.25, tpot_p50=0.02)]
    full_tie = [setting(True, 32, 0.25), setting(False, 32, 0.25)]
    slo = {"tpot_p50": 0.05, "ttft_p90": 0.5}
    ttft_first = {"ttft_p90": 0.5, "tpot_p50": 0.05}
    return record(tpot_first=impl.choose_setting(rows, slo), second_metric=impl.choose_setting(second, ttft_first),
                  full_tie=impl.choose_setting(full_tie, slo), reversed_input=impl.choose_setting(rows[::-1], slo))


@STAGE.check("s07.choose_setting", call="row = setting(on, 128, ttft_p90=0.5); "
                                        "choose_setting([row, setting(off, 64, nan)], {'ttft_p90': 0.5})",
             specificity=1,
             title=L("a value at its bound meets the SLO, NaN never; the answer is a copy",
                     "恰好等于上限算满足、NaN 永远不满足；返回的是副本"),
             hint=L("A value equal to its bound meets the SLO (at most, not below) and a NaN never does; return a "
                    "copy of the chosen measurement, so that changing it leaves the caller's list as it was.",
                    "值恰好等于上限也算满足 SLO（是“不超过”，不是“低于”），NaN 永远不满足；返回被选中测量结果的副本，"
                    "这样修改返回值不会改动调用者的列表。"))
def bound_nan_and_copy(impl):
    rows = [setting(True, 128, 0.25 * 2), setting(False, 64, float("nan"))]
    chosen = impl.choose_setting(rows, {"ttft_p90": 0.5})
    shown = dict(chosen) if isinstance(chosen, dict) else chosen
    if isinstance(chosen, dict):
        chosen["num_blocks"] = -1
    return record(chosen=shown, caller_pool_sizes=[r["num_blocks"] for r in rows])
