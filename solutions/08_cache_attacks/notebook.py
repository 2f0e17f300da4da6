# %% [markdown] lang="en"
# # Stage 8 · Attacks on a shared prefix cache
#
# **Goal:** a prefix cache shares KV between requests, so it also shares *information* between the
# users who sent them. In this stage you attack the engine you built in stages 2–6 in two ways: you make
# two different prompts collide on one block key, and you time the first token to learn how someone
# else's prompt starts. Then you close both holes and measure what closing them costs.
#
# Real engines learned this the hard way. In vLLM, CVE-2025-25183: block hashes built on Python's
# `hash()` had a predictable root, so colliding prompts could be crafted. CVE-2025-46570: a prefix hit
# shortens the time to first token (TTFT), and that is measurable from outside. Gu et al. (ICML 2025)
# detected prompt caches shared across users in seven commercial LLM APIs with nothing but response
# times and a statistical test. Everything below runs against *your* engine, inside this notebook: no
# attack leaves the machine.
#
# *How this notebook works.* Run the setup cell first. Each TODO sits in its own code cell; replace
# `raise NotImplementedError()` with your code, re-run that cell, then run the `check(...)` cell under
# it. **Only the TODO cells are graded** (everything else comes from the course when grading): keep any
# helper you write inside them. The four TODOs never measure time; they run on recorded or synthetic
# samples, so their grades are the same on every machine. The experiments around them do time the
# engine: their numbers change from run to run (more on a busy machine), and the notebook prints what *this*
# run measured.
#
# | TODO | function | what it does |
# |---|---|---|
# | 1 | `birthday_search` | two different blocks with the same (truncated) key |
# | 2 | `fit_threshold` | a hit/miss threshold on TTFT, from labelled samples |
# | 3 | `detect_sharing` | a one-sided two-sample KS test: are hits faster? |
# | 4 | `tenant_extra_keys` | a per-tenant salt in every block key |
# | 5 | `quiz` | the concept quiz |
#
# ## Learning objectives
# After this stage you can:
# 1. find two blocks with the same truncated key by a birthday search, explain why an engine keyed that way
#    serves one prompt's KV to another, and name the two fixes and what each costs;
# 2. measure a TTFT side channel: calibrate a hit/miss threshold, score it on held-out samples, and report
#    ROC AUC as the shared prefix grows;
# 3. audit a cache for cross-user sharing with a one-sided two-sample Kolmogorov–Smirnov test, as Gu et al.
#    did on commercial APIs;
# 4. isolate tenants with a salt in every block key, and measure the hit rate that isolation costs.
#
# ## Prerequisites
# - [Stage 2](02_block_hash.ipynb): chained block keys and extra keys (the salt goes there).
# - [Stage 3](03_block_pool.ipynb): the block pool, whose hits are decided by key alone.
# - [Stage 6](06_paged_prefill.ipynb): the engine whose prefill skips cached blocks, and TTFT.
# - A little statistics: a threshold rule, ROC AUC, a p-value.
#
# **Time:** about 75 min.

# %% [markdown] lang="zh"
# # 第 8 阶段 · 共享前缀缓存的攻击与防御
#
# **目标：** 前缀缓存让不同请求共享 KV，也就让发出这些请求的用户共享了*信息*。本阶段你要从两个方向攻击
# 自己在第 2–6 阶段搭好的引擎：一是让两个不同的提示词在同一个块 key 上碰撞；二是给首 token 计时，推断
# 别人的提示词是怎么开头的。然后把两个漏洞都堵上，并测一测堵漏洞要付出多少代价。
#
# 真实的推理引擎是吃过亏才明白这一点的。vLLM 的 CVE-2025-25183：块哈希基于 Python 的 `hash()`，
# 哈希链的起点可以预测，于是有人能构造出互相碰撞的提示词。CVE-2025-46570：前缀命中会缩短
# TTFT（首 token 延迟），而这个差别从外部就能测出来。Gu 等人（ICML 2025）只凭响应时间和一个统计检验，
# 就在七家商用大模型 API 里发现了跨用户共享的提示词缓存。下面所有实验都只针对*你自己的*引擎，
# 在这个笔记本里运行：没有任何攻击会离开这台机器。
#
# *这个笔记本怎么用。* 先运行设置单元。每个 TODO 占一个代码单元：把 `raise NotImplementedError()`
# 换成你的代码，重新运行这个单元，再运行它下面的 `check(...)` 单元。**只有 TODO 单元会被评分**
# （评分时其余单元都用课程自带的版本），所以你写的辅助函数要放在 TODO 单元里面。四个 TODO 都不计时，
# 只处理录好的或合成的样本，所以在任何机器上得分都一样。TODO 周围的实验会给引擎计时：每次运行的数字
# 每次都会不同（机器越忙差别越大），笔记本打印的是*这一次*运行测到的结果。
#
# | TODO | 函数 | 作用 |
# |---|---|---|
# | 1 | `birthday_search` | 找两个（截断后的）key 相同的不同块 |
# | 2 | `fit_threshold` | 用带标签的样本定出 TTFT 的命中/未命中阈值 |
# | 3 | `detect_sharing` | 单侧两样本 KS 检验：命中是不是更快？ |
# | 4 | `tenant_extra_keys` | 在每个块 key 里按租户加盐 |
# | 5 | `quiz` | 概念小测 |
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 用生日攻击搜索找到截断 key 相同的两个块，解释为什么按这种 key 查缓存的引擎会把一个提示词的 KV
#    交给另一个提示词，并说出两种修复办法以及各自的代价；
# 2. 测量 TTFT 侧信道：校准命中/未命中的阈值，在留出的样本上评估它，并报告 ROC AUC 随共享前缀变长
#    如何变化；
# 3. 像 Gu 等人审计商用 API 那样，用单侧两样本 Kolmogorov–Smirnov 检验判断一个缓存是否跨用户共享；
# 4. 在每个块 key 里按租户加盐，把租户隔离开，并测出隔离损失了多少命中率。
#
# ## 前置知识
# - [第 2 阶段](02_block_hash.ipynb)：链式块 key 和附加 key（盐值就加在这里）。
# - [第 3 阶段](03_block_pool.ipynb)：块池——它只凭 key 判断是否命中。
# - [第 6 阶段](06_paged_prefill.ipynb)：跳过已缓存块的 prefill（预填充）引擎，以及 TTFT。
# - 一点统计知识：阈值规则、ROC AUC、p 值。
#
# **用时：** 约 75 分钟。

# %% setup="course"
from workbook.predictions import why
from autograder.textwidth import pad

# %% [markdown] lang="en"
# The experiments use stage 6's engine on a tiny model with seeded random weights (enough to tell whether
# two computations agree), and given code in `solutions/`: `weak_keys` (truncated keys and a pool that
# checks tokens on a hit), `collision_demo`, `timing_attack` (a shared engine, labelled TTFT samples,
# ROC AUC) and `tenant_isolation` (a salted pool and a multi-tenant workload). Read them when you want to
# see how an experiment is done; none of them contains a TODO's answer.

# %% [markdown] lang="zh"
# 实验用的是第 6 阶段的引擎，跑在一个用固定种子随机初始化的小模型上（足以判断两种算法的结果是否一致），
# 外加 `solutions/` 里课程给出的代码：`weak_keys`（截断的 key，以及命中时核对 token 的块池）、
# `collision_demo`、`timing_attack`（多人共用的引擎、带标签的 TTFT 样本、ROC AUC）和
# `tenant_isolation`（加盐的块池和多租户负载）。想知道某个实验具体怎么做，可以去读这些代码；
# 里面没有任何 TODO 的答案。

# %%
# The experiments' tools (not graded, not needed by the TODOs).
# zh: 实验用到的工具（不评分，TODO 也用不到）。
import statistics

import matplotlib.pyplot as plt

from kernels.model import DecoderLM, ModelConfig
from workbook.collision_demo import collision_demo, colliding_prompts
from workbook.block_pool import BlockPool
from workbook.tenant_isolation import make_tenant_workload, replay
from workbook.timing_attack import SharedEngine, effect_size, prefix_sweep, recover_secret, sample_hit_miss
from workbook.weak_keys import (TokenCheckedPool, WeakKeyPool, expected_birthday_tries, first_block_key, key_costs,
                                 random_blocks, verification_cost)

model = DecoderLM.random(ModelConfig.tiny(), seed=0)
# What this run measured, summed up at the end.
# zh: 这次运行测到的数字，最后汇总。
measured = {}

# %% [markdown] lang="en"
# ## Part 1 · Collisions
#
# Stage 2's key of block *i* is SHA-256 over the key of block *i − 1*, the block's tokens and the extra
# keys: 256 bits. Stage 3's pool decides a hit **by key alone**; it never compares tokens. That is safe only
# while no two different prefixes ever share a key. Short keys are not safe: a key truncated to save
# memory, or a fast 64-bit hash like Python's `hash()`. In vLLM the root of the chain was `hash(None)`,
# which Python 3.12 made a fixed constant, so anyone could compute the keys offline and search for
# collisions at leisure (CVE-2025-25183).
#
# Here we shorten the keys on purpose: `workbook.weak_keys` keeps the top *k* bits of each chained key.
# How many random blocks does it take until two of them share one of the 2^k keys? Not 2^k: **any pair** may
# collide, and the number of pairs grows with the square of the number of tries. This is the birthday
# paradox: the expected number of tries is about √(π/2 · 2^k), about 320 at 16 bits. Hitting one *given*
# victim block instead (a second preimage) takes about 2^k tries.

# %% [markdown] lang="zh"
# ## 第一部分 · 碰撞
#
# 第 2 阶段里，第 *i* 个块的 key 是对“第 *i − 1* 个块的 key、本块的 token、附加 key”做 SHA-256，
# 共 256 位。第 3 阶段的块池**只凭 key** 判断是否命中，从不比较 token。只有在两个不同的前缀永远不会得到
# 同一个 key 时，这样做才安全。key 太短就不安全：比如为了省内存把 key 截断，或者用 Python 的 `hash()`
# 这种又快又只有 64 位的哈希。vLLM 的哈希链起点是 `hash(None)`，而 Python 3.12 把它变成了一个固定常数，
# 于是任何人都能离线算出这些 key，慢慢搜索碰撞（CVE-2025-25183）。
#
# 这里我们故意把 key 变短：`workbook.weak_keys` 只保留每个链式 key 的高 *k* 位。要试多少个随机块，
# 才会有两个块落到 2^k 个 key 中的同一个上？不是 2^k 个：**任意一对**块都可能碰撞，而块对的数量随尝试
# 次数的平方增长。这就是生日悖论：期望的尝试次数约为 √(π/2 · 2^k)，16 位时大约 320 次。如果要撞上
# *某一个指定的*受害者块（第二原像），则需要大约 2^k 次。

# %% [markdown] lang="en"
# ### TODO 1 · A birthday search
#
# `birthday_search(key_of, candidates)` takes candidate blocks in order and stops at the first one whose key
# an earlier, *different* block already had. `key_of` is any key function, for instance
# `first_block_key(16)`: stage 2's key of a first block cut to 16 bits. A `Block` is a tuple of token ids.

# %% [markdown] lang="zh"
# ### TODO 1 · 生日攻击搜索
#
# `birthday_search(key_of, candidates)` 按顺序取候选块，遇到第一个“key 已经被前面某个*不同*的块用过”的
# 块就停下。`key_of` 可以是任意 key 函数，比如 `first_block_key(16)`：第 2 阶段里第一个块的 key，
# 截断到 16 位。`Block` 是由 token id 组成的 tuple。

# %% given="Block"

# %% solution="birthday_search"

# %% check="s08.birthday_search"

# %% [markdown] lang="en"
# ### Predict, then run
# Keys cut to 16 bits: 65,536 different keys. Averaged over 20 searches with random 16-token blocks, how many
# blocks does your search take until two share a key? Write a number.

# %% [markdown] lang="zh"
# ### 先预测，再运行
# key 截断到 16 位：一共 65,536 种 key。用随机的 16-token 块搜索 20 次取平均，要试多少个块才会有两个块
# key 相同？写下一个数。

# %%
my_guess = None  # your prediction: a number
# zh: 你的预测：一个数

# %%
with demo("s08.birthday_search"):
    widths, searches = (8, 12, 16, 20), 20
    mean_tries = {}
    for bits in widths:
        key_of = first_block_key(bits)
        runs = [birthday_search(key_of, random_blocks(seed, 16)) for seed in range(searches)]
        # Every pair found really is two different blocks with one key.
        # zh: 找到的每一对确实是两个不同的块、同一个 key。
        assert all(a != b and key_of(a) == key_of(b) for a, b, _ in runs)
        mean_tries[bits] = statistics.mean(tries for _, _, tries in runs)
    print(tr(f"{'bits':>4} {'keys':>10} {'mean tries':>10} {'sqrt(pi/2 * 2^bits)':>20}",
             f"{pad('位数', 4, '>')} {pad('key 总数', 10, '>')} {pad('平均尝试次数', 10, '>')} {'sqrt(pi/2 * 2^bits)':>20}"))
    for bits in widths:
        print(f"{bits:>4} {2 ** bits:>10,} {mean_tries[bits]:>10.0f} {expected_birthday_tries(bits):>20.0f}")
    measured["birthday_tries_16"] = mean_tries[16]
    reveal(my_guess, mean_tries[16], why("s08.my_guess"), within=100)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(widths, [mean_tries[b] for b in widths], "o-", label=tr("measured (mean of 20)", "实测（20 次平均）"))
    ax.plot(widths, [expected_birthday_tries(b) for b in widths], "--", label="sqrt(pi/2 * 2^k)")
    ax.plot(widths, [2 ** b for b in widths], ":", color="grey", label=tr("2^k: one given block", "2^k：撞上指定的一个块"))
    ax.set_yscale("log", base=2)
    ax.set_xlabel(tr("key width k (bits)", "key 位宽 k（位）"))
    ax.set_ylabel(tr("blocks tried until a collision", "碰撞前试过的块数"))
    ax.set_title(tr("Birthday search on truncated SHA-256 keys", "截断 SHA-256 key 上的生日攻击搜索"))
    ax.legend()
    plt.show()

# %% [markdown] lang="en"
# ### A collision on the engine
#
# Take a colliding pair at 16 bits and build two prompts from it: each starts with one block of the pair and
# continues with the *same* three blocks and five tokens. The engine (stage 6's `PagedPrefiller`) prefills the
# first prompt, which caches its blocks, then the second one. We compare the second prompt's logits with a
# full prefill of it, on four block pools: keys truncated to 16 bits, full SHA-256 keys, stage 3's own pool,
# and 16-bit keys whose hits are checked against the block's tokens (`TokenCheckedPool`).

# %% [markdown] lang="zh"
# ### 引擎上的碰撞
#
# 取一对 16 位下碰撞的块，拼出两个提示词：各自以这对块中的一个开头，后面接*相同的*三个块和五个 token。
# 引擎（第 6 阶段的 `PagedPrefiller`）先对第一个提示词做 prefill，把它的块缓存起来，再处理第二个。
# 我们把第二个提示词的 logits 和完整 prefill 的结果相比，一共换四种块池：key 截断到 16 位、完整的
# SHA-256 key、第 3 阶段原来的块池，以及 key 仍是 16 位、但命中时会核对块里 token 的
# `TokenCheckedPool`。

# %% [markdown] lang="en"
# ### Predict, then run
# The two prompts have 4 full blocks of 16 tokens (plus a 5-token tail) and differ only in block 0. With
# 16-bit keys, how many tokens of the second prompt does the engine serve from the cache?

# %% [markdown] lang="zh"
# ### 先预测，再运行
# 两个提示词都有 4 个 16-token 的满块（外加 5 个 token 的尾巴），只有第 0 个块不同。key 截断到 16 位时，
# 引擎会从缓存里给第二个提示词提供多少个 token？

# %%
my_guess_2 = None  # your prediction: a number of tokens
# zh: 你的预测：token 的个数

# %%
with demo("s08.birthday_search"):
    earlier, later, tries = birthday_search(first_block_key(16), random_blocks(0, 16))
    prompts = colliding_prompts((earlier, later))
    print(tr(f"colliding pair after {tries} tries; prompts of {len(prompts[0])} tokens that differ in block 0 only",
             f"试了 {tries} 次找到碰撞对；两个提示词各 {len(prompts[0])} 个 token，只有第 0 个块不同"))
    pools = [WeakKeyPool(64, 16, key_bits=16), WeakKeyPool(64, 16, key_bits=None), BlockPool(64, 16),
             TokenCheckedPool(64, 16, key_bits=16)]
    outcomes = [collision_demo(model, prompts, pool) for pool in pools]
    print(tr(f"{'pool':<26} {'hit tokens':>10} {'max |dlogits|':>13} {'same 1st token':>14} {'wrong KV':>8}",
             f"{pad('块池', 26, '<')} {pad('命中 token', 10, '>')} {pad('最大 |dlogits|', 13, '>')} {pad('首 token 相同', 14, '>')} {pad('KV 错误', 8, '>')}"))
    for o in outcomes:
        print(f"{pad(o.pool, 26)} {o.hit_tokens:>10} {o.max_abs_diff:>13.2e} {str(o.same_argmax):>14} {str(o.wrong_kv):>8}")
    measured["collision_max_dlogits"] = outcomes[0].max_abs_diff
    measured["sha256_hit_tokens"] = outcomes[1].hit_tokens
    reveal(my_guess_2, outcomes[0].hit_tokens, why("s08.my_guess_2"))
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.barh([o.pool for o in outcomes], [max(o.max_abs_diff, 1e-8) for o in outcomes], color=["C3", "C2", "C2", "C2"])
    ax.set_xscale("log")
    ax.set_xlabel(tr("max |logits - full prefill| of the second prompt", "第二个提示词：最大 |logits − 完整 prefill|"))
    ax.set_title(tr("Truncated keys serve another prompt's KV", "截断的 key 把别的提示词的 KV 交了出来"))
    plt.show()

# %% [markdown] lang="en"
# ### Two fixes, and what they cost
#
# - **Collision-resistant keys.** With stage 2's full SHA-256 keys a birthday search needs about 2^128 tries.
#   vLLM first randomised the root of its `hash()` chain (the fix of CVE-2025-25183), then offered SHA-256
#   block hashes (v0.8.3), and made them the default in v0.10.2. Cost: one SHA-256 per block instead of a fast
#   hash; vLLM's design doc puts it at about 100–200 ns per token, negligible next to prefill.
# - **Check the tokens on a hit.** `TokenCheckedPool` keeps each cached block's tokens and its parent block,
#   and counts a hit only if both match the request. A collision becomes a miss, even with weak keys. Cost:
#   the block's token ids stored next to its KV (80 bytes here, against about 2 MiB of KV per 16-token block
#   for an 8B Llama-style model), and one comparison per hit block.
#
# The cell below measures both costs on this machine, and what a birthday search would take at each key
# width.

# %% [markdown] lang="zh"
# ### 两种修复办法及其代价
#
# - **抗碰撞的 key。** 用第 2 阶段完整的 SHA-256 key，生日攻击搜索大约要 2^128 次。vLLM 先把 `hash()`
#   哈希链的起点改成随机值（CVE-2025-25183 的修复），随后提供了 SHA-256 块哈希（v0.8.3），并在 v0.10.2
#   把它设为默认。代价：每个块算一次 SHA-256，而不是一个很快的哈希；按 vLLM 设计文档的估计，每个 token
#   大约多花 100–200 纳秒，和 prefill 相比可以忽略。
# - **命中时核对 token。** `TokenCheckedPool` 为每个缓存块记下它的 token 和父块，只有两者都和请求对得上
#   才算命中。这样一来，即使 key 很弱，碰撞也只会变成一次未命中。代价：KV 旁边要多存这个块的 token id
#   （这里是 80 字节；而对 8B 规模的 Llama 类模型，一个 16-token 块的 KV 约有 2 MiB），每个命中块
#   还要多做一次比较。
#
# 下面的单元在这台机器上测出这两项代价，并估算不同 key 位宽下生日攻击搜索要花多久。

# %%
costs = key_costs(num_blocks=64, repeat=3)
checked = verification_cost(num_prompts=16, repeat=3)
print(tr("keying one 16-token block (ns, CPU):", "给一个 16-token 块算 key（纳秒，CPU 时间）：")
      + f" SHA-256 {costs['sha256']:.0f}, Python hash() {costs['python_hash']:.0f}"
      + tr(f" -> SHA-256 costs {costs['sha256'] / costs['python_hash']:.0f}x more",
           f" -> SHA-256 贵 {costs['sha256'] / costs['python_hash']:.0f} 倍"))
print(tr(f"admitting a fully cached 16-block prompt: {checked['plain']:.1f} us by key alone, "
         f"{checked['checked']:.1f} us with token checks ({checked['check_us_per_hit_block']:.2f} us per hit block, "
         f"{checked['stored_bytes_per_block']} bytes stored per block)",
         f"接纳一个 16 个块全部命中的提示词：只看 key {checked['plain']:.1f} 微秒，核对 token "
         f"{checked['checked']:.1f} 微秒（每个命中块多 {checked['check_us_per_hit_block']:.2f} 微秒，"
         f"每个块多存 {checked['stored_bytes_per_block']} 字节）"))
per_second = 1e9 / costs["sha256"]
print(tr("\nexpected birthday search on one core at this SHA-256 rate:", "\n按这台机器单核的 SHA-256 速度，生日攻击搜索预计耗时："))
for bits in (32, 64, 128, 256):
    seconds = expected_birthday_tries(bits) / per_second
    print(tr(f"  {bits:>3} bits: {expected_birthday_tries(bits):.1e} tries = {seconds / 3600:.1e} core-hours",
             f"  {bits:>3} 位：{expected_birthday_tries(bits):.1e} 次 = {seconds / 3600:.1e} 核·小时"))

# %% [markdown] lang="en"
# At 64 bits, the width of Python's `hash()`, a collision is within reach of a single core: the 64-bit line
# above gives the core-hours at this machine's SHA-256 rate (a hash ten times faster, with a root known in advance,
# makes it cheaper still). At 256 bits, no computer will ever find one.

# %% [markdown] lang="zh"
# 在 64 位（Python `hash()` 的位宽）下，单个核就能找到一次碰撞：上面 64 位那一行按这台机器的 SHA-256 速度给出了
# 所需的核·小时（如果哈希快十倍、起点又事先知道，还会更便宜）。到了 256 位，任何计算机都不可能找到。

# %% [markdown] lang="en"
# ## Part 2 · The timing side channel
#
# Strong keys stop collisions, but a correct hit still leaks. A hit skips the prefill of the cached blocks,
# so the first token comes back sooner. The threat model: a *victim* and an *attacker* send requests to
# one engine with one shared cache. The victim's prompt contains something private (a document, a name,
# a diagnosis). The attacker sends a guess and times it: if the first token comes back fast, the guess's
# prefix was in the cache, so somebody sent it.
#
# The harness (`workbook.timing_attack`) plays both sides against stage 6's engine. A **hit trial**: the
# victim sends a fresh random prompt, then the attacker sends a prompt whose first *L* tokens are the
# victim's and whose rest is its own; the attacker's TTFT is recorded with the label "hit". A **miss
# trial** is the same with nothing shared. Hit and miss trials are interleaved in a seeded random order
# (so load from elsewhere hits both alike), and every trial uses fresh prompts.
#
# ### How we time, and what a real attacker sees
# The harness measures the **CPU time of the serving thread** (`time.thread_time`), with one torch thread
# and the garbage collector paused. Why not the wall clock? This notebook was written on a 2-core machine
# shared with other jobs: a prefill of a few milliseconds can be descheduled for longer than it runs, and
# wall-clock samples came out erratic. CPU time counts only the work the serving thread did, and that
# work is exactly what a hit saves.
#
# A real attacker cannot read the server's CPU time. It measures wall-clock TTFT at the client, across a
# network, and the noise grows: network jitter, queueing behind other users' requests, batching. The signal
# itself stays: a hit skips the same work, and on a real model that work is milliseconds to seconds, far
# more than on our tiny one. So the attacker needs more samples per guess (repeat the probe, keep the minimum
# or median), longer shared prefixes, or quiet hours. That is why the published attacks and audits use
# hundreds of samples and a statistical test rather than one timing. A cell below repeats one measurement
# on the wall clock of this machine, for comparison.

# %% [markdown] lang="zh"
# ## 第二部分 · 计时侧信道
#
# 强 key 能防住碰撞，但*正确的*命中照样会泄露信息。命中时，已缓存块的 prefill 被跳过，首 token 就回来得
# 更早。威胁模型是这样的：*受害者*和*攻击者*把请求发给同一个引擎，共用同一个缓存。受害者的提示词里有
# 隐私内容（一份文档、一个名字、一条诊断）。攻击者发出一个猜测并计时：首 token 回来得快，说明这个猜测
# 的前缀已经在缓存里——有人发过它。
#
# 实验代码（`workbook.timing_attack`）在第 6 阶段的引擎上同时扮演双方。一次**命中试验**：受害者发一个
# 新的随机提示词，攻击者随后发一个提示词，前 *L* 个 token 与受害者的相同，其余是自己的；攻击者的 TTFT
# 记下来，标签为“命中”。**未命中试验**也一样，只是什么都不共享。命中和未命中试验按固定种子的随机顺序
# 交错进行（这样别处来的负载对两者影响相同），每次试验都用全新的提示词。
#
# ### 怎样计时，以及真实攻击者能看到什么
# 实验代码测的是**服务线程的 CPU 时间**（`time.thread_time`）：torch 只用一个线程，测量期间暂停垃圾
# 回收。为什么不用墙钟时间？这个笔记本是在一台和别的任务共用的 2 核机器上写的：一次只要几毫秒的
# prefill，被操作系统切走的时间可能比它本身运行的时间还长，墙钟时间的样本乱成一团。CPU 时间只统计服务
# 线程自己做的工作，而这部分工作恰恰就是命中所省下的。
#
# 真实的攻击者读不到服务器的 CPU 时间，只能在客户端隔着网络测墙钟意义上的 TTFT，噪声会大得多：网络抖动、
# 排在其他用户请求后面的等待、批处理。但信号本身还在：命中省下的工作一点不少，而在真实的大模型上，这部分
# 工作是几毫秒到几秒，比我们这个小模型大得多。所以攻击者需要为每个猜测多测几次（重复探测，取最小值或
# 中位数）、用更长的共享前缀，或者挑空闲时段。这也是为什么公开的攻击和审计都用几百个样本加统计检验，
# 而不是只测一次。后面有一个单元用这台机器的墙钟时间重做一次测量，可以对比一下。

# %% [markdown] lang="en"
# ### Does the attacker see a hit?
# The cell below takes 25 hit and 25 miss samples at each shared length *L*: 0, 8, 16, 32, 64 and 128 tokens
# (the block size is 16). **ROC AUC** is the probability that a random hit sample is faster than a random miss
# sample: 0.5 is chance, 1.0 means every hit is faster than every miss. It needs no threshold, so it is a fair
# first look.

# %% [markdown] lang="zh"
# ### 攻击者能看出命中吗？
# 下面的单元在每个共享长度 *L* 上各采 25 个命中样本和 25 个未命中样本，*L* 取 0、8、16、32、64、128 个
# token（块大小是 16）。**ROC AUC** 是“随便取一个命中样本，它比随便取的一个未命中样本更快”的概率：
# 0.5 等于瞎猜，1.0 表示每个命中都比每个未命中快。它不需要阈值，适合先粗看一眼。

# %%
shared = SharedEngine(model)
lengths = [0, 8, 16, 32, 64, 128]
shared.warm_up(max(lengths) + 16)
sweep = prefix_sweep(shared, lengths, n=25)
print(tr(f"{'shared L':>8} {'served':>6} {'hit ms':>7} {'miss ms':>7} {'AUC':>5} {'robust d':>8}",
         f"{pad('共享 L', 8, '>')} {pad('缓存提供', 6, '>')} {pad('命中 ms', 7, '>')} {pad('未命中 ms', 7, '>')} {'AUC':>5} {pad('稳健 d', 8, '>')}"))
for p in sweep:
    e = effect_size(p.samples.hit, p.samples.miss)
    print(f"{p.shared_len:>8} {p.served_tokens:>6} {e['median_hit_ms']:>7.3f} {e['median_miss_ms']:>7.3f} "
          f"{e['auc']:>5.2f} {e['robust_d']:>8.1f}")
measured["auc_by_length_shared"] = {p.shared_len: round(p.auc, 2) for p in sweep}
# What this run shows: the AUC where nothing is served (noise), and whether it rose with every longer prefix.
# zh: 这次运行说明了什么：什么都没从缓存取时的 AUC（噪声），以及共享前缀每变长一次 AUC 是否都升高。
noise = [p.auc for p in sweep if p.served_tokens == 0]
served = [p for p in sweep if p.served_tokens > 0]
rising = all(a.auc < b.auc for a, b in zip(served, served[1:]))
print(tr(f"nothing served (L = {', '.join(str(p.shared_len) for p in sweep if p.served_tokens == 0)}): AUC "
         f"{', '.join(f'{a:.2f}' for a in noise)}, noise alone; from one block on the AUC "
         + ("rose with every longer prefix" if rising else "did not rise at every step: noise outweighed the "
            "saving of some prefixes in this run")
         + f", up to {served[-1].auc:.2f} at L = {served[-1].shared_len}",
         f"什么都没从缓存取（L = {'、'.join(str(p.shared_len) for p in sweep if p.served_tokens == 0)}）：AUC "
         f"{'、'.join(f'{a:.2f}' for a in noise)}，纯属噪声；从一个块开始，AUC "
         + ("随共享前缀变长而逐级升高" if rising else "并没有每一级都升高：这次运行里，噪声盖过了某些前缀省下的时间")
         + f"，L = {served[-1].shared_len} 时达到 {served[-1].auc:.2f}"))
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(lengths, [p.auc for p in sweep], "o-", label=tr("one shared cache", "所有人共用一个缓存"))
ax.axhline(0.5, color="grey", ls=":", label=tr("chance", "瞎猜"))
ax.set_xlabel(tr("tokens shared with the victim's prompt (block size 16)", "与受害者提示词共享的 token 数（块大小 16）"))
ax.set_ylabel("ROC AUC")
ax.set_ylim(0.2, 1.05)
ax.set_title(tr("Hit or miss, from TTFT alone (25 + 25 samples per point)", "只看 TTFT 判断命中与否（每个点 25 + 25 个样本）"))
ax.legend()
plt.show()

# %% [markdown] lang="en"
# "served" is how many tokens the engine actually took from the cache on a hit trial: only **whole blocks**
# hit, so 8 shared tokens give nothing at all: the engine does the same work as on a miss, and an AUC away
# from 0.5 there (or at 0 shared tokens) is noise. (A token-granular cache, such as stage 5's radix tree,
# leaks at every token, and that is what token-by-token prompt-stealing attacks use.) "robust d" is the
# effect size: the difference of the medians over the spread of the samples. From one block on, every cached
# block is work the hit skips, so the signal should grow with the number of cached tokens; on a busy machine
# the saving of a short prefix can drown in the noise. The line under the table says how this run went.
#
# Now the same measurement on the wall clock of this machine (64 of 80 tokens shared), next to the CPU clock:

# %% [markdown] lang="zh"
# “缓存提供”一列是命中试验里引擎真正从缓存取出的 token 数：只有**整块**才会命中，所以共享 8 个 token
# 什么也得不到：引擎做的计算和未命中时一样，这一行（以及共享 0 个 token 那一行）的 AUC 偏离 0.5 多少都只是
# 噪声。（按 token 粒度缓存的结构，比如第 5 阶段的基数树，每多一个 token 都会泄露，逐 token 窃取提示词的
# 攻击正是利用了这一点。）“稳健 d”是效应量：两组中位数之差除以样本的离散程度。从一个块开始，每个缓存块都是
# 命中时省掉的计算，所以信号应当随缓存的 token 数增长；机器很忙时，短前缀省下的那点时间可能淹没在噪声里。
# 表格下面那一行说明了这次运行的情况。
#
# 下面用这台机器的墙钟时间重做同一个测量（80 个 token 里共享 64 个），和 CPU 时间放在一起比较：

# %%
wall = SharedEngine(model, clock="wall")
wall.warm_up(80)
for name, engine in ((tr("CPU time ", "CPU 时间"), shared), (tr("wall clock", "墙钟时间"), wall)):
    s = sample_hit_miss(engine, n=25, prompt_len=80, shared_len=64, seed=3)
    e = effect_size(s.hit, s.miss)
    print(tr(f"{name}: AUC {e['auc']:.2f}, median hit {e['median_hit_ms']:.3f} ms vs miss {e['median_miss_ms']:.3f} ms, "
             f"robust d {e['robust_d']:.1f}",
             f"{name}：AUC {e['auc']:.2f}，命中中位数 {e['median_hit_ms']:.3f} ms，未命中 {e['median_miss_ms']:.3f} ms，"
             f"稳健 d {e['robust_d']:.1f}"))

# %% [markdown] lang="en"
# ### TODO 2 · A threshold from calibration samples
#
# A practical attacker turns timings into yes/no answers with a threshold: "hit if TTFT < *t*". It
# calibrates *t* on labelled samples it can make itself (send a prompt twice: the second time is a hit;
# send fresh prompts: misses), and picks the *t* that misclassifies the fewest of them. Then it must
# score the rule on **other** samples: accuracy on the samples that chose *t* is optimistic on average (in one
# run the held-out score can still come out higher, by chance). `accuracy` (given below) scores a threshold.

# %% [markdown] lang="zh"
# ### TODO 2 · 用校准样本定阈值
#
# 实际的攻击者会用一个阈值把计时结果变成“是/否”：“TTFT < *t* 就算命中”。它先用自己就能造出来的带标签
# 样本校准 *t*（同一个提示词发两次，第二次就是命中；发全新的提示词，就是未命中），选出判错最少的 *t*。
# 然后必须在**另外的**样本上评估这条规则：在用来选 *t* 的样本上算出的准确率平均而言会偏高（某一次运行里，
# 留出样本上的准确率仍可能碰巧更高）。下面给出的 `accuracy` 用来给一个阈值打分。

# %% given="accuracy"

# %% solution="fit_threshold"

# %% check="s08.fit_threshold"

# %%
with demo("s08.fit_threshold"):
    # 50 hit + 50 miss samples with 64 of 80 tokens shared: fit on the first half, score on the second.
    # zh: 80 个 token 里共享 64 个，采 50 个命中样本和 50 个未命中样本：前一半拟合，后一半评估。
    calib = sample_hit_miss(shared, n=50, prompt_len=80, shared_len=64, seed=7)
    half = 25
    threshold = fit_threshold(calib.hit[:half], calib.miss[:half])
    fit_acc = accuracy(threshold, calib.hit[:half], calib.miss[:half])
    held_out = accuracy(threshold, calib.hit[half:], calib.miss[half:])
    measured["held_out_accuracy_shared"] = held_out
    print(tr(f"threshold {threshold * 1e3:.3f} ms: accuracy {fit_acc:.2f} on the 50 calibration samples, "
             f"{held_out:.2f} on the 50 held-out samples (chance 0.50)",
             f"阈值 {threshold * 1e3:.3f} ms：在 50 个校准样本上准确率 {fit_acc:.2f}，在 50 个留出样本上 "
             f"{held_out:.2f}（瞎猜是 0.50）"))
    fig, ax = plt.subplots(figsize=(6, 2.6))
    ax.plot([t * 1e3 for t in calib.hit[half:]], [1] * half, "o", alpha=0.6, label=tr("held-out hits", "留出的命中样本"))
    ax.plot([t * 1e3 for t in calib.miss[half:]], [0] * half, "s", alpha=0.6, label=tr("held-out misses", "留出的未命中样本"))
    ax.axvline(threshold * 1e3, color="C3", label=tr("fitted threshold", "拟合出的阈值"))
    ax.set_yticks([0, 1], [tr("miss", "未命中"), tr("hit", "命中")])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel(tr("TTFT (ms, CPU time)", "TTFT（毫秒，CPU 时间）"))
    ax.legend(loc="center right", fontsize=8)
    plt.show()

# %% [markdown] lang="en"
# ### TODO 3 · Auditing with a one-sided KS test
#
# Gu et al. audited commercial APIs without any threshold. Per API they took 250 TTFTs of requests that
# should hit (a prompt sent right after a victim account sent it) and 250 that should miss, and asked
# whether the hit times are **stochastically smaller**, with a two-sample Kolmogorov–Smirnov test. The
# statistic *D* is the largest amount by which the empirical CDF of the hits lies *above* the CDF of
# the misses. One-sided, because only faster hits reveal a cache: hits that are slower are no evidence
# of sharing. A small p-value rejects "hits are not faster", and sharing is detected. We use SciPy's
# `ks_2samp`: a maintained implementation, with exact p-values for small samples, instead of a hand-written
# one.

# %% [markdown] lang="zh"
# ### TODO 3 · 用单侧 KS 检验做审计
#
# Gu 等人审计商用 API 时根本不用阈值。对每个 API，他们采 250 个“应该命中”的 TTFT（受害者账号刚发过的
# 提示词）和 250 个“应该未命中”的 TTFT，用两样本 Kolmogorov–Smirnov 检验判断命中时间是不是**在统计
# 意义上更小**。统计量 *D* 是命中样本的经验 CDF 高出未命中样本 CDF 的最大值。之所以是单侧检验，是因为
# 只有“命中更快”才暴露缓存：命中更慢并不是共享的证据。p 值很小，就拒绝“命中并不更快”，也就检测到了共享。
# 这里用 SciPy 的 `ks_2samp`：一个有人维护的实现，小样本时还能给出精确 p 值，不必自己手写。

# %% solution="detect_sharing"

# %% check="s08.detect_sharing"

# %%
with demo("s08.detect_sharing"):
    audits = [(p.shared_len, *detect_sharing(p.samples.hit, p.samples.miss)) for p in sweep]
    print(tr(f"{'shared L':>8} {'KS D':>5} {'p-value':>9} {'detected':>8}   (alpha = 0.001, 25 + 25 samples)",
             f"{pad('共享 L', 8, '>')} {'KS D':>5} {pad('p 值', 9, '>')} {pad('检测到', 8, '>')}   （alpha = 0.001，25 + 25 个样本）"))
    for shared_len, d, p_value, detected in audits:
        print(f"{shared_len:>8} {d:>5.2f} {p_value:>9.1e} {str(detected):>8}")
    at64 = next(p for p in sweep if p.shared_len == 64).samples
    d, p_value, detected = detect_sharing(at64.hit, at64.miss)
    measured["ks_p_value_64_shared"] = p_value
    # The two empirical CDFs at 64 shared tokens; D is the largest gap with hits above misses.
    # zh: 共享 64 个 token 时的两条经验 CDF；D 是命中高出未命中的最大差距。
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for sample, label in ((at64.hit, tr("hit", "命中")), (at64.miss, tr("miss", "未命中"))):
        xs = sorted(t * 1e3 for t in sample)
        ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=label)
    ax.set_xlabel(tr("TTFT (ms, CPU time)", "TTFT（毫秒，CPU 时间）"))
    ax.set_ylabel(tr("empirical CDF", "经验 CDF"))
    ax.set_title(tr(f"64 tokens shared: KS D = {d:.2f}, p = {p_value:.1e}", f"共享 64 个 token：KS D = {d:.2f}，p = {p_value:.1e}"))
    ax.legend()
    plt.show()

# %% [markdown] lang="en"
# ### Recovering a secret
#
# Now the attack itself. The victim's prompt starts with one of *K* = 8 candidate secrets of 128 tokens
# each (think of a form letter whose first paragraph names one of eight patients), followed by a question.
# The attacker knows the candidates, probes each of them once (with a suffix of its own) and guesses the
# one with the fastest TTFT. Chance is 1/8. We run 40 such trials and test the hit count against chance with
# a one-sided binomial test.

# %% [markdown] lang="zh"
# ### 还原秘密
#
# 现在进入真正的攻击。受害者的提示词以 *K* = 8 个候选秘密之一开头，每个 128 个 token（想象一封格式信，
# 第一段写的是八位病人中某一位的名字），后面跟一个问题。攻击者知道这些候选，对每个候选探测一次（后面
# 接上自己的后缀），猜 TTFT 最快的那个。瞎猜的正确率是 1/8。我们做 40 次这样的试验，并用单侧二项检验
# 判断猜对的次数是否显著高于瞎猜。

# %%
recovery = {"shared": recover_secret(shared, num_candidates=8, secret_len=128, trials=40)}
r = recovery["shared"]
measured["recovery_shared"] = f"{r.correct}/{r.trials}"
print(tr(f"one shared cache: {r.correct}/{r.trials} secrets recovered = {r.accuracy:.2f} (chance {r.chance:.3f}; "
         f"95% CI {r.ci95[0]:.2f}-{r.ci95[1]:.2f}; binomial p = {r.p_value:.1e})",
         f"所有人共用一个缓存：{r.trials} 次里还原出 {r.correct} 个秘密 = {r.accuracy:.2f}（瞎猜 {r.chance:.3f}；"
         f"95% 置信区间 {r.ci95[0]:.2f}-{r.ci95[1]:.2f}；二项检验 p = {r.p_value:.1e}）"))

# %% [markdown] lang="en"
# ## Part 3 · The fix: a salt per tenant
#
# The cure goes where stage 2 already put LoRA adapters and cache salts: the **extra keys** hashed into every
# block key. Add the tenant as one more extra key, and the same prompt sent by two tenants gets two
# different chains of keys: they never share a block, and neither can time the other. A tenant still hits its
# own blocks. vLLM's fix for CVE-2025-46570 is this idea: an optional per-request `cache_salt`, hashed into
# the first block's key (with chained keys, every later block inherits it); requests share blocks only if
# they carry the same salt.
#
# One rule matters as much as the hash: **the tenant comes from who is calling** (the authenticated
# account), never from what the request says. A request that could name its own tenant (or salt) could
# simply name its victim's. `tenant_extra_keys` refuses such requests, and an empty tenant too (stage 2
# drops an extra key with an empty value, so that tenant would share with everyone). `TENANT_KIND` is the
# kind of the tenant's extra key.

# %% [markdown] lang="zh"
# ## 第三部分 · 修复：每个租户一个盐值
#
# 解药放在第 2 阶段早就放 LoRA 适配器和缓存盐值（cache salt）的地方：混进每个块 key 的**附加 key**。把租户作为
# 又一个附加 key，同一个提示词由两个租户发出，就会得到两条不同的 key 链：它们永远不共享块，谁也没法给
# 对方计时。同一个租户仍然能命中自己的块。vLLM 对 CVE-2025-46570 的修复正是这个思路：每个请求可以带一个
# 可选的 `cache_salt`，混进第一个块的 key（链式 key 会把它传给后面的每个块）；只有盐值相同的请求才共享块。
#
# 有一条规则和哈希同样重要：**租户由调用者的身份决定**（通过认证的账号），绝不由请求内容决定。如果请求能
# 自己指定租户（或盐值），它直接写上受害者的就行了。`tenant_extra_keys` 会拒绝这样的请求，也拒绝空租户
# （第 2 阶段会丢掉值为空的附加 key，这个租户就会和所有人共享）。`TENANT_KIND` 是租户这个附加 key 的种类。

# %% given="TENANT_KIND"

# %% solution="tenant_extra_keys"

# %% check="s08.tenant_extra_keys"

# %% [markdown] lang="en"
# ### Predict, then run
# The same recovery attack (8 candidates, 40 trials) against an engine whose pool salts every block key with
# your `tenant_extra_keys`. What fraction of the secrets will the attacker recover? Write a number between 0
# and 1.

# %% [markdown] lang="zh"
# ### 先预测，再运行
# 对一个用你的 `tenant_extra_keys` 给每个块 key 加盐的引擎，发起同样的还原攻击（8 个候选，40 次试验）。
# 攻击者能还原出多大比例的秘密？写一个 0 到 1 之间的数。

# %%
my_guess_3 = None  # your prediction: a fraction between 0 and 1
# zh: 你的预测：0 到 1 之间的比例

# %%
with demo("s08.tenant_extra_keys"):
    salted = SharedEngine(model, extra_keys_for=tenant_extra_keys)
    salted.warm_up(max(lengths) + 16)
    # The victim still hits its own prompt; the attacker, sending the very same prompt, does not.
    # zh: 受害者再发自己的提示词照样命中；攻击者发一模一样的提示词却不会命中。
    prompt = list(range(200, 280))
    salted.submit(prompt, tenant="victim")
    again, other = salted.submit(prompt, tenant="victim"), salted.submit(prompt, tenant="attacker")
    print(tr(f"same 80-token prompt: victim again -> {again.hit_tokens} cached tokens, attacker -> {other.hit_tokens}",
             f"同一个 80-token 提示词：受害者再发一次 -> 缓存提供 {again.hit_tokens} 个 token，攻击者 -> {other.hit_tokens} 个"))
    # Fewer lengths than before, to save time: below one block nothing can hit anyway.
    # zh: 为了省时间，比前面少测几个长度：不到一个块本来就不可能命中。
    salted_lengths = [0, 16, 64, 128]
    salted_sweep = prefix_sweep(salted, salted_lengths, n=25, prompt_len=max(lengths) + 16)
    recovery["salted"] = recover_secret(salted, num_candidates=8, secret_len=128, trials=40)
    measured["auc_by_length_salted"] = {p.shared_len: round(p.auc, 2) for p in salted_sweep}
    auc_shared = {p.shared_len: p.auc for p in sweep}
    print(tr(f"\n{'shared L':>8} {'AUC one cache':>13} {'AUC salted':>10}", f"\n{pad('共享 L', 8, '>')} {pad('AUC 共用缓存', 13, '>')} {pad('AUC 加盐', 10, '>')}"))
    for p in salted_sweep:
        print(f"{p.shared_len:>8} {auc_shared[p.shared_len]:>13.2f} {p.auc:>10.2f}")
    print()
    for name, r in recovery.items():
        label = tr("one shared cache", "共用一个缓存") if name == "shared" else tr("salted per tenant", "按租户加盐")
        print(tr(f"{label}: {r.correct}/{r.trials} = {r.accuracy:.2f} (chance {r.chance:.3f}; 95% CI "
                 f"{r.ci95[0]:.2f}-{r.ci95[1]:.2f}; binomial p = {r.p_value:.1e})",
                 f"{label}：{r.correct}/{r.trials} = {r.accuracy:.2f}（瞎猜 {r.chance:.3f}；95% 置信区间 "
                 f"{r.ci95[0]:.2f}-{r.ci95[1]:.2f}；二项检验 p = {r.p_value:.1e}）"))
    s = recovery["salted"]
    measured["recovery_salted"] = f"{s.correct}/{s.trials}"
    chance_inside = s.ci95[0] <= s.chance <= s.ci95[1]
    # judged against what salting guarantees (a guess among the candidates: the chance rate), not this
    # run's 40 random trials, whose rate varies around it
    # zh: 按加盐能保证的结果（在候选里瞎猜：也就是随机猜中的概率）来判断，而不是按这次 40 次随机试验的结果，它会在这个值附近波动
    reveal(my_guess_3, s.chance, why("s08.my_guess_3", chance_inside=chance_inside), within=0.06, bounds=(0, 1))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.plot(lengths, [p.auc for p in sweep], "o-", label=tr("one shared cache", "共用一个缓存"))
    left.plot(salted_lengths, [p.auc for p in salted_sweep], "s-", label=tr("salted per tenant", "按租户加盐"))
    left.axhline(0.5, color="grey", ls=":")
    left.set_ylim(0.2, 1.05)
    left.set_xlabel(tr("tokens shared with the victim's prompt", "与受害者提示词共享的 token 数"))
    left.set_ylabel("ROC AUC")
    left.set_title(tr("Hit or miss from TTFT", "只看 TTFT 判断命中与否"))
    left.legend()
    names = list(recovery)
    accs = [recovery[n].accuracy for n in names]
    errors = [[a - recovery[n].ci95[0] for n, a in zip(names, accs)], [recovery[n].ci95[1] - a for n, a in zip(names, accs)]]
    right.bar([tr("one shared cache", "共用一个缓存"), tr("salted per tenant", "按租户加盐")], accs, yerr=errors,
              capsize=6, color=["C3", "C2"])
    right.axhline(1 / 8, color="grey", ls=":", label=tr("chance (1/8)", "瞎猜（1/8）"))
    right.set_ylim(0, 1.05)
    right.set_ylabel(tr("secrets recovered (95% CI)", "还原出的秘密比例（95% 置信区间）"))
    right.set_title(tr("Recovering one of 8 secrets, 40 trials", "8 选 1 的秘密还原，40 次试验"))
    right.legend()
    plt.show()

# %% [markdown] lang="en"
# The attacker's own tools against the salted engine, on 60 + 60 fresh samples with 64 of 80 tokens
# shared: a threshold fitted on half of them and scored on the other half (TODO 2), and the KS audit on
# all of them (TODO 3). Compare with what the same tools scored on the shared cache (TODOs 2 and 3 above).
# The second row is a **control**: the salted engine with *nothing* shared, so any difference there is
# noise alone. Compare the salted row with the control, not with a perfect 0.50: on a busy shared machine
# the noise comes in bursts, so now and then a p-value falls below alpha with nothing to find (that is
# also why auditors repeat their tests).

# %% [markdown] lang="zh"
# 再用攻击者自己的工具对加盐的引擎看一遍：80 个 token 里共享 64 个，新采 60 + 60 个样本，一半用来拟合
# 阈值、另一半用来评估（TODO 2），KS 审计则用上全部样本（TODO 3）。可以和同样的工具在共用缓存上的得分对照
# （见上面 TODO 2 和 TODO 3 的演示）。第二行是**对照组**：加盐的引擎，而且*什么都不共享*，所以那里
# 出现的差异全是噪声。加盐那一行要和对照组比，而不是和完美的 0.50 比：在一台繁忙的共用机器上，噪声是
# 一阵一阵来的，偶尔会有 p 值在什么都没有的情况下低于 alpha（这也是审计者要重复检验的原因）。

# %%
with demo("s08.fit_threshold", "s08.detect_sharing", "s08.tenant_extra_keys"):
    n = 60
    rows = ((tr("salted, 64 of 80 tokens shared", "加盐，80 个 token 共享 64 个"), 64),
            (tr("salted, nothing shared (control)", "加盐，什么都不共享（对照组）"), 0))
    results = []
    for label, shared_len in rows:
        s = sample_hit_miss(salted, n=n, prompt_len=80, shared_len=shared_len, seed=11)
        t = fit_threshold(s.hit[: n // 2], s.miss[: n // 2])
        results.append((label, accuracy(t, s.hit[n // 2:], s.miss[n // 2:]), *detect_sharing(s.hit, s.miss)))
    measured["held_out_accuracy_salted"] = results[0][1]
    for label, held_out, d, p_value, detected in results:
        print(label)
        print(tr(f"    held-out accuracy {held_out:.2f} (chance 0.50); KS D {d:.2f}, p = {p_value:.1e}, detected: {detected}",
                 f"    留出样本准确率 {held_out:.2f}（瞎猜 0.50）；KS D {d:.2f}，p = {p_value:.1e}，检测到共享：{detected}"))

# %% [markdown] lang="en"
# ### What isolation costs
#
# Salts also stop *honest* sharing. A multi-tenant workload: 8 tenants; 4 prompts of 512 tokens that every
# tenant sends (a public system prompt, a tool schema, a popular document) and 4 private prompts per tenant;
# half of the requests use a shared prompt. We replay 2,000 requests through a pool with and without salts,
# at three pool sizes, and count the **hit rate** (tokens served from the cache over prompt tokens).

# %% [markdown] lang="zh"
# ### 隔离的代价
#
# 加盐也挡住了*正当的*共享。一个多租户负载：8 个租户；4 个 512-token 的提示词所有租户都会发（公共的
# system prompt（系统提示词）、工具描述、热门文档），另外每个租户有 4 个私有提示词；一半请求用的是共享
# 提示词。我们把 2,000 个请求分别在加盐和不加盐的块池上回放，块池取三种大小，统计**命中率**（缓存提供的
# token 数除以提示词的 token 总数）。

# %%
with demo("s08.tenant_extra_keys"):
    workload = make_tenant_workload(0, num_requests=2000)
    sizes = [4096, 1024, 512]
    rows = {blocks: (replay(workload, extra_keys_for=None, num_blocks=blocks),
                     replay(workload, extra_keys_for=tenant_extra_keys, num_blocks=blocks)) for blocks in sizes}
    print(tr("hit rate, one shared cache -> salted per tenant; on shared prompts; blocks needed to keep everything",
             "命中率：共用缓存 -> 按租户加盐；共享提示词上的命中率；全部缓存所需的块数"))
    for blocks, (a, b) in rows.items():
        print(tr(f"{blocks:>5} blocks: {a.hit_rate:.3f} -> {b.hit_rate:.3f}; shared prompts {a.shared_hit_rate:.3f} -> "
                 f"{b.shared_hit_rate:.3f}; {a.distinct_blocks} -> {b.distinct_blocks} blocks",
                 f"{blocks:>5} 个块：{a.hit_rate:.3f} -> {b.hit_rate:.3f}；共享提示词 {a.shared_hit_rate:.3f} -> "
                 f"{b.shared_hit_rate:.3f}；{a.distinct_blocks} -> {b.distinct_blocks} 个块"))
    measured["hit_rate_1024_blocks"] = f"{rows[1024][0].hit_rate:.3f} -> {rows[1024][1].hit_rate:.3f}"
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(sizes, [rows[n][0].hit_rate for n in sizes], "o-", label=tr("one shared cache", "共用一个缓存"))
    ax.plot(sizes, [rows[n][1].hit_rate for n in sizes], "s-", label=tr("salted per tenant", "按租户加盐"))
    ax.set_xscale("log", base=2)
    ax.set_xlabel(tr("blocks in the pool (16 tokens each)", "块池里的块数（每块 16 个 token）"))
    ax.set_ylabel(tr("hit rate", "命中率"))
    ax.set_ylim(0, 1)
    ax.set_title(tr("What isolation costs: 8 tenants, half the requests shared", "隔离的代价：8 个租户，一半请求共享"))
    ax.legend()
    plt.show()

# %% [markdown] lang="en"
# With room for everything, isolation costs little: each tenant pays once for its first use of each shared
# prompt. When memory is tight it costs a lot: each tenant keeps its own copy of every shared prompt (8
# copies instead of 1), fewer prompts fit, and the pool evicts what would have hit.
#
# ### Other mitigations, and their costs
# - **Salt per tenant, per user, or per request.** What you built isolates tenants (organisations); OpenAI,
#   for instance, limits cache sharing to an organisation. vLLM's `cache_salt` lets the caller choose the
#   group: requests with the same salt share. The finer the group, the less leaks, and the less is reused.
# - **Per-user caches.** A salt per end user, or separate pools: the strongest isolation, and no sharing
#   between users at all. Shared system prompts are stored once per user, and separate pools also split
#   memory into parts that cannot lend to each other.
# - **A minimum shared length, or popular prefixes only.** Share across users only prefixes longer than *N*
#   tokens, or only prefixes that several different users sent. Short prefixes are then never reused across
#   users, and an attacker with a long guess (a known template followed by the secret) still succeeds: this
#   raises the bar, it does not remove the channel.
# - **Hiding the timing.** Delaying every hit to the time of a miss removes the latency win and keeps only
#   the saved compute; random delays only multiply the samples an attacker needs, since noise averages out.
# - **Strong keys** are needed against collisions, but do nothing against timing: a correct hit is exactly
#   what leaks.

# %% [markdown] lang="zh"
# 内存够放下全部内容时，隔离的代价很小：每个租户只在第一次用某个共享提示词时多付一次。内存紧张时代价就
# 很大：每个租户都要保留一份共享提示词的副本（8 份而不是 1 份），能放下的提示词变少，块池会淘汰本来能
# 命中的块。
#
# ### 其他缓解办法及其代价
# - **按租户、按用户或按请求加盐。** 你实现的是按租户（组织）隔离；比如 OpenAI 就只在同一个组织内共享
#   缓存。vLLM 的 `cache_salt` 让调用方自己决定分组：盐值相同的请求才共享。分组越细，泄露越少，能复用的
#   也越少。
# - **每个用户一个缓存。** 每个终端用户一个盐值，或者干脆分开的块池：隔离最彻底，用户之间完全不共享。
#   共享的系统提示词要为每个用户各存一份；分开的块池还会把内存切成互相不能借用的几块。
# - **最短共享长度，或只共享热门前缀。** 跨用户只共享超过 *N* 个 token 的前缀，或者只共享多个不同用户都
#   发过的前缀。这样短前缀永远不能跨用户复用，而攻击者如果猜的是一个长前缀（已知的模板后面接着秘密），
#   照样能成功：这只是提高了门槛，并没有消除这条信道。
# - **掩盖时间差。** 把每次命中都延迟到未命中的时间，就失去了延迟上的好处，只剩下省下的算力；随机延迟只会
#   让攻击者多采一些样本，因为噪声可以被平均掉。
# - **强 key** 是防碰撞的必要条件，但对计时攻击毫无作用：泄露的恰恰是正确的命中。

# %% quiz="questions"

# %% scoring="table"

# %% [markdown] lang="en"
# ## What this run measured

# %% [markdown] lang="zh"
# ## 这次运行测到的结果

# %%
labels = {
    "birthday_tries_16": tr("birthday search at 16 bits, mean tries", "16 位生日攻击搜索的平均尝试次数"),
    "collision_max_dlogits": tr("collision at 16 bits: max |dlogits| vs a full prefill", "16 位碰撞：与完整 prefill 的最大 |dlogits|"),
    "sha256_hit_tokens": tr("the same pair with SHA-256 keys: tokens served from the cache", "同一对块用 SHA-256 key：缓存提供的 token 数"),
    "auc_by_length_shared": tr("ROC AUC by shared length, one shared cache", "按共享长度的 ROC AUC，共用缓存"),
    "held_out_accuracy_shared": tr("held-out accuracy of the threshold, one shared cache", "阈值在留出样本上的准确率，共用缓存"),
    "ks_p_value_64_shared": tr("KS p-value at 64 shared tokens, one shared cache", "共享 64 个 token 时的 KS p 值，共用缓存"),
    "recovery_shared": tr("secrets recovered, one shared cache (chance 5/40)", "还原出的秘密，共用缓存（瞎猜约 5/40）"),
    "auc_by_length_salted": tr("ROC AUC by shared length, salted", "按共享长度的 ROC AUC，加盐"),
    "recovery_salted": tr("secrets recovered, salted (chance 5/40)", "还原出的秘密，加盐（瞎猜约 5/40）"),
    "held_out_accuracy_salted": tr("held-out accuracy of the threshold, salted", "阈值在留出样本上的准确率，加盐"),
    "hit_rate_1024_blocks": tr("hit rate at 1024 blocks, one cache -> salted", "1024 个块时的命中率，共用缓存 -> 加盐"),
}
for key, label in labels.items():
    value = measured.get(key, tr("(finish the TODOs to measure this)", "（完成 TODO 后才能测到）"))
    print(f"{label}: {value:.3g}" if isinstance(value, float) else f"{label}: {value}")
# What these numbers say about this run (a 95% interval that excludes 1/8 is more than chance).
# zh: 这些数字对这次运行意味着什么（95% 置信区间不含 1/8，就说明不是瞎猜）。
print()
for name, r in recovery.items():
    above = r.ci95[0] > r.chance
    label = tr("one shared cache", "共用一个缓存") if name == "shared" else tr("salted per tenant", "按租户加盐")
    print(tr(f"{label}: {r.correct}/{r.trials} secrets recovered, "
             + ("more than chance (the 95% interval lies above 1/8)" if above else
                "no better than chance (the 95% interval reaches down to 1/8)"),
             f"{label}：还原出 {r.correct}/{r.trials} 个秘密，"
             + ("比瞎猜好（95% 置信区间整个在 1/8 之上）" if above else "不比瞎猜好（95% 置信区间包含 1/8 或更低）")))

# %% [markdown] lang="en"
# ## Recap
# You attacked your own prefix cache, and defended it:
# - `birthday_search` found two different blocks with one truncated key in about √(π/2 · 2^k) tries (about
#   320 at 16 bits), and the engine then served one prompt's KV to the other. Full SHA-256 keys, or checking
#   the tokens on a hit, each turn the collision into a miss.
# - `fit_threshold` and `detect_sharing` turned TTFT into evidence: a threshold scored on samples it was
#   not fitted on, and a one-sided KS test that answers "are hits faster?" with a p-value; a cached block is
#   work a hit skips, and the longer the shared prefix, the fewer samples they need on average (with 25 + 25
#   samples on a busy machine, one run can still miss a long prefix and detect a shorter one).
# - `tenant_extra_keys` put the tenant into every block key: the attacker's probes no longer hit the
#   victim's blocks, so recovering a secret is left to chance; each tenant keeps its own hits, and the price
#   is the sharing between tenants.
#
# **The one invariant:** a request may hit a block only if the same principal computed that block for the
# same prefix. The key must identify the prefix (no collisions), and the tenant must be part of the key (no
# crossing between principals).
#
# **The numbers:** the table above, and under it what they say about this run: how well the attack did on
# one shared cache, and whether salting left it at chance. Timing is noisy: the busier the machine, the
# longer the shared prefix the attack needs before its AUC nears 1.0.
#
# ## Further reading
# - vLLM security advisory for CVE-2025-25183 (GHSA-rm76-4mrf-v9r8): how a predictable hash root made
#   collisions practical, and why vLLM moved to SHA-256 block hashes.
# - vLLM security advisory for CVE-2025-46570 (GHSA-4qjh-9fv9-r85r) and the `cache_salt` RFC (vLLM issue
#   #16016): the timing side channel of prefix caching in a production engine, and the design choices behind
#   salting.
# - C. Gu, X. L. Li, R. Kuditipudi, P. Liang, T. Hashimoto, *Auditing Prompt Caching in Language Model APIs*
#   (ICML 2025): the KS audit you wrote, run against real APIs, and what providers changed afterwards.
# - G. Wu et al., *I Know What You Asked: Prompt Leakage via KV-Cache Sharing in Multi-Tenant LLM Serving*
#   (NDSS 2025): token-by-token prompt reconstruction from a radix-tree cache, the next step after this stage.
# - L. Song et al., *The Early Bird Catches the Leak: Unveiling Timing Side Channels in LLM Serving Systems*
#   (arXiv 2409.20002): timing attacks on KV and semantic caches, including black-box tests of online services.
# - vLLM's automatic prefix caching design doc: block hashes with extra keys (LoRA, multimodal inputs, cache
#   salt), the real-engine counterpart of stages 2 and 8.

# %% [markdown] lang="zh"
# ## 回顾
# 你攻击了自己的前缀缓存，又把它守住了：
# - `birthday_search` 大约试 √(π/2 · 2^k) 次（16 位时约 320 次）就找到了两个截断 key 相同的不同块，
#   引擎随后把一个提示词的 KV 交给了另一个提示词。用完整的 SHA-256 key，或者命中时核对 token，任何一种
#   都能把碰撞变成一次未命中。
# - `fit_threshold` 和 `detect_sharing` 把 TTFT 变成了证据：一个在没参与拟合的样本上评估的阈值，以及一个
#   用 p 值回答“命中是不是更快”的单侧 KS 检验；缓存的每个块都是命中时省掉的计算，共享的前缀越长，平均需要的
#   样本就越少（机器繁忙、每组只有 25 个样本时，某一次运行仍可能漏掉较长的前缀，却检测出较短的）。
# - `tenant_extra_keys` 把租户写进了每个块 key：攻击者的探测再也命中不了受害者的块，还原秘密只能靠瞎猜；
#   每个租户仍能命中自己的块，代价是租户之间不再共享。
#
# **最重要的不变量：** 只有当同一个主体为同一个前缀算出了某个块时，请求才能命中这个块。key 必须唯一地
# 标识前缀（不能碰撞），租户必须是 key 的一部分（不同主体之间不能串）。
#
# **测到的数字：** 见上面的表，表下面的几行说明了它们对这次运行意味着什么：攻击在共用缓存上做得怎么样，
# 加盐之后是不是只剩瞎猜。计时是有噪声的：机器越忙，攻击要让 AUC 接近 1.0 所需的共享前缀就越长。
#
# ## 延伸阅读
# - vLLM 关于 CVE-2025-25183 的安全公告（GHSA-rm76-4mrf-v9r8）：可预测的哈希起点如何让碰撞变得可行，
#   以及 vLLM 为什么改用 SHA-256 块哈希。
# - vLLM 关于 CVE-2025-46570 的安全公告（GHSA-4qjh-9fv9-r85r）和 `cache_salt` 的 RFC（vLLM issue
#   #16016）：生产级引擎里前缀缓存的计时侧信道，以及加盐方案背后的设计取舍。
# - C. Gu、X. L. Li、R. Kuditipudi、P. Liang、T. Hashimoto，*Auditing Prompt Caching in Language Model
#   APIs*（ICML 2025）：你写的 KS 审计在真实 API 上的应用，以及厂商随后做了哪些改动。
# - G. Wu 等，*I Know What You Asked: Prompt Leakage via KV-Cache Sharing in Multi-Tenant LLM Serving*
#   （NDSS 2025）：在基数树缓存上逐 token 还原提示词，是本阶段之后的下一步。
# - L. Song 等，*The Early Bird Catches the Leak: Unveiling Timing Side Channels in LLM Serving Systems*
#   （arXiv 2409.20002）：针对 KV cache 和语义缓存的计时攻击，包括对线上服务的黑盒测试。
# - vLLM 自动前缀缓存（automatic prefix caching）的设计文档：带附加 key（LoRA、多模态输入、cache salt）
#   的块哈希，是第 2 阶段和第 8 阶段在真实引擎里的对应物。
