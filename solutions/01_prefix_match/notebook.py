# %% [markdown] lang="en"
# # Stage 1 · Prefix cache matching and reuse
#
# **Goal:** decide, for an incoming prompt, how many of its leading tokens could reuse KV cache that
# earlier requests already computed, and how many still need prefill.
#
# ## Learning objectives
# After this stage you can:
# 1. explain why only a run of equal tokens that starts at position 0 can reuse cached KV;
# 2. find the longest registered prefix of a prompt, comparing token ids (never their text);
# 3. split a prompt into the reusable prefix and the suffix that still needs prefill;
# 4. keep a reuse ledger (hit tokens, uncached tokens, reuse ratio) and say what it does not measure.
#
# ## Prerequisites
# Python lists, tuples and slicing. What a KV cache is: prefill computes a key and a value per token
# and layer, and later tokens attend to them (the [glossary](../docs/glossary.md) has the terms).
# This is the first stage; stage 2 ([02_block_hash](02_block_hash.ipynb)) builds on it.
#
# **Time:** about 45 min.
#
# *How this notebook works.* Run the setup cell first. All five TODOs sit in the code cell of
# `PrefixCacheManager`: each TODO comment states what to write; replace `raise NotImplementedError()`
# with your code, re-run the cell, then run the `check(...)` cell of that TODO. A check prints ✅ or ❌
# per case, with the input, the expected and actual values and a hint. Stuck? `hint("s01.match_prefix")`
# prints a hint; call it again for the next, more concrete one.

# %% [markdown] lang="zh"
# # 第 1 阶段 · 前缀缓存的匹配与复用
#
# **目标：** 对一个新来的提示词（prompt），判断它开头有多少个 token 可以复用之前请求已经算好的
# KV cache（键值缓存），又有多少个 token 仍然需要 prefill（预填充）。
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 解释为什么只有从第 0 个位置开始、连续相同的那段 token 才能复用已缓存的 KV；
# 2. 找出提示词的最长已登记前缀，比较的是 token id，而不是它们的文本；
# 3. 把提示词拆成可复用前缀和仍需 prefill 的后缀；
# 4. 维护一本复用账本（命中数、未命中数、复用率），并说清它衡量不了什么。
#
# ## 前置知识
# Python 的列表、元组和切片。还要知道 KV cache 是什么：prefill 为每一层的每个 token 算出一个 key
# 和一个 value，后面的 token 在做 attention（注意力）时会读取它们。这是第一个阶段；第 2 阶段
# （[02_block_hash](02_block_hash.ipynb)）在它的基础上继续。
#
# **用时：** 约 45 分钟。
#
# *怎么使用这个笔记本。* 先运行环境设置单元。五个 TODO 都在 `PrefixCacheManager` 这个代码单元里：
# 每条 TODO 注释说明要写什么；把 `raise NotImplementedError()` 换成你的代码，重新运行这个单元，再运行
# 对应 TODO 的 `check(...)` 单元。检查会逐项打印 ✅ 或 ❌，并给出输入、期望值、实际值和一条提示。
# 卡住了就调用 `hint("s01.match_prefix")` 看提示，再调用一次会给出下一条更具体的提示。

# %% setup="course"
from workbook.predictions import why

# %% [markdown] lang="en"
# ## Why shared prefixes repeat work
#
# Prefill turns a prompt into keys and values (the KV cache) for every layer. Many requests begin
# with the *same* tokens: a system prompt of a few thousand tokens, the tool descriptions of an
# agent, a retrieved document, or the earlier turns of a chat. Without reuse, each request pays to
# prefill those tokens again, and the KV computed for the previous request is thrown away.
#
# The KV of a token depends on that token **and every token before it**. So only a run of equal
# tokens that starts at position 0 can be reused: the same words in the middle of two prompts sit
# after different contexts and have different KV.
#
# The path of one request through a prefix cache:
#
# | step | question | this notebook |
# |---|---|---|
# | register | which prefixes have KV stored? | `add_prefix` (TODO 2) |
# | longest match | how far from the start does the prompt agree with one of them? | `match_prefix` (TODO 3) |
# | split | what is reused, what is left to prefill? | `split_prompt` (TODO 4) |
# | reuse ledger | how much work did we save on this prompt? | `cache_stats` (TODO 5) |
#
# `prompt = reusable_prefix + suffix`: the suffix starts at the first token that differs and runs
# to the end of the prompt; it still goes through prefill, and its new KV may be registered for the
# next request. Everything starts with a clean token sequence (TODO 1).

# %% [markdown] lang="zh"
# ## 为什么共享前缀会带来重复计算
#
# prefill 会把提示词变成每一层的 key 和 value，也就是 KV cache。很多请求的开头是*同一段* token：
# 几千个 token 的 system prompt（系统提示词）、agent 的工具说明、检索到的文档，或者多轮对话里之前的
# 几轮。如果不复用，每个请求都要为这段 token 重新付一次 prefill 的代价，上一个请求算好的 KV 则被白白
# 丢掉。
#
# 一个 token 的 KV 不仅取决于它自己，**还取决于它前面的所有 token**。所以只有从第 0 个位置开始、
# 连续相同的那段 token 才能复用：两个提示词中间出现的相同词语，前面的上下文不同，KV 也就不同。
#
# 一个请求经过前缀缓存的路径：
#
# | 步骤 | 要回答的问题 | 本笔记本中的实现 |
# |---|---|---|
# | 登记 | 哪些前缀已经存了 KV？ | `add_prefix`（TODO 2） |
# | 最长匹配 | 提示词从开头起和其中某个前缀一致到哪里？ | `match_prefix`（TODO 3） |
# | 拆分 | 哪部分复用，哪部分还要 prefill？ | `split_prompt`（TODO 4） |
# | 复用账本 | 这个提示词省下了多少工作？ | `cache_stats`（TODO 5） |
#
# `prompt = reusable_prefix + suffix`：后缀从第一个不一致的 token 开始，一直到提示词结尾；它仍然要做
# prefill，算出的新 KV 可以登记下来留给下一个请求。一切都从一个干净的 token 序列开始（TODO 1）。

# %% solution="PrefixCacheManager"

# %% [markdown] lang="en"
# ### Check TODO 1 · `_normalize`
# Any sequence (list, tuple, generator) becomes a new `list[int]` in the same order; a token that is
# not an `int` raises `TypeError` before it can reach the index.

# %% [markdown] lang="zh"
# ### 检查 TODO 1 · `_normalize`
# 任何序列（list、tuple、生成器）都变成一个新的 `list[int]`，顺序不变；不是 `int` 的 token 在进入索引
# 之前就抛出 `TypeError`。

# %% check="s01.normalize"

# %% [markdown] lang="en"
# ### Check TODO 2 · `add_prefix`
# Prefixes are stored as tuples (so `[1, 2]` and `(1, 2)` are the same prefix), once each, in the
# order they were first added. An empty prefix is refused with `ValueError`.

# %% [markdown] lang="zh"
# ### 检查 TODO 2 · `add_prefix`
# 前缀存成 tuple（这样 `[1, 2]` 和 `(1, 2)` 是同一个前缀），每个只存一次，按第一次登记的顺序排列。
# 空前缀用 `ValueError` 拒绝。

# %% check="s01.add_prefix"

# %% [markdown] lang="en"
# ### Check TODO 3 · `match_prefix`
# The longest registered prefix that equals the *beginning* of the prompt, token id by token id.

# %% [markdown] lang="zh"
# ### 检查 TODO 3 · `match_prefix`
# 找出与提示词*开头*逐个 token id 都相等的已登记前缀，取其中最长的那个。

# %% check="s01.match_prefix"

# %% [markdown] lang="en"
# ### Predict, then run: token boundaries
# The manager holds one prefix, `[1, 2]`. The prompt is `[1, 23, 4]`. Written as text, `"1 2"` is
# the beginning of `"1 23 4"`. How many tokens of the prompt hit? Write your guess (a number).

# %% [markdown] lang="zh"
# ### 先预测，再运行：token 的边界
# 管理器里只有一个前缀 `[1, 2]`，提示词是 `[1, 23, 4]`。写成文本的话，`"1 2"` 正是 `"1 23 4"` 的开头。
# 这个提示词有多少个 token 命中？先写下你的猜测（一个数）。

# %%
# your prediction: a number of tokens
# zh: 你的预测：命中的 token 数
my_guess = None

# %%
with demo("s01.normalize", "s01.add_prefix", "s01.match_prefix"):
    boundary = PrefixCacheManager()
    boundary.add_prefix([1, 2])
    text_says = " ".join(map(str, [1, 23, 4])).startswith(" ".join(map(str, [1, 2])))
    print(tr("compared as text, [1, 2] starts [1, 23, 4]:", "按文本比较，[1, 2] 是 [1, 23, 4] 的开头："), text_says)
    reveal(my_guess, boundary.match_prefix([1, 23, 4]), why("s01.my_guess"))

# %% [markdown] lang="en"
# ### Check TODO 4 · `split_prompt`
# `reusable_prefix + suffix == prompt`, and the hit is the length of the reusable prefix.

# %% [markdown] lang="zh"
# ### 检查 TODO 4 · `split_prompt`
# `reusable_prefix + suffix == prompt`，命中长度就是可复用前缀的长度。

# %% check="s01.split_prompt"

# %% [markdown] lang="en"
# ### Check TODO 5 · `cache_stats`
# `reuse_ratio` is the hit tokens over the prompt's length, rounded to 4 decimals; 0.0 for an empty
# prompt.

# %% [markdown] lang="zh"
# ### 检查 TODO 5 · `cache_stats`
# `reuse_ratio` 等于命中 token 数除以提示词长度，保留 4 位小数；空提示词为 0.0。

# %% check="s01.cache_stats"

# %% [markdown] lang="en"
# ## See it: what each prompt reuses
#
# A toy workload: two system prompts are registered (A with 40 tokens, B with 25), then five prompts
# arrive. Each bar of the plot below is one prompt: the green part is reused from cache, the grey
# part still needs prefill.
#
# ### Predict, then run
# The prompt "half of A" starts with the first 20 tokens of system prompt A, then 3 other tokens.
# How many of its tokens does this manager reuse? Write your guess.

# %% [markdown] lang="zh"
# ## 动手看看：每个提示词复用了多少
#
# 一个玩具工作负载：先登记两段 system prompt（A 有 40 个 token，B 有 25 个），然后来了五个提示词。
# 下图每一条横条代表一个提示词：绿色部分从缓存复用，灰色部分仍要 prefill。
#
# ### 先预测，再运行
# 提示词 “A 的一半” 以 system prompt A 的前 20 个 token 开头，后面再跟 3 个别的 token。
# 这个管理器能为它复用多少个 token？先写下你的猜测。

# %%
# your prediction: a number of tokens
# zh: 你的预测：复用的 token 数
my_guess_2 = None

# %%
import matplotlib.pyplot as plt

# a 40-token system prompt
# zh: 一段 40 个 token 的 system prompt
SYSTEM_A = list(range(100, 140))
# a 25-token one
# zh: 一段 25 个 token 的 system prompt
SYSTEM_B = list(range(200, 225))
HALF_OF_A = tr("half of A", "A 的一半")
prompts = {
    tr("A + question", "A + 问题"): SYSTEM_A + [1, 2, 3, 4, 5, 6],
    tr("A + long question", "A + 长问题"): SYSTEM_A + list(range(30)),
    tr("B + question", "B + 问题"): SYSTEM_B + [7, 8, 9],
    HALF_OF_A: SYSTEM_A[:20] + [5, 5, 5],
    tr("no system prompt", "没有 system prompt"): [9, 9, 9, 9, 9, 9, 9, 9],
}

with demo("s01.normalize", "s01.add_prefix", "s01.match_prefix", "s01.split_prompt", "s01.cache_stats"):
    manager = PrefixCacheManager()
    manager.add_prefix(SYSTEM_A)
    manager.add_prefix(SYSTEM_B)
    ledgers = {name: manager.cache_stats(p) for name, p in prompts.items()}
    reveal(my_guess_2, ledgers[HALF_OF_A]["hit_tokens"], why("s01.my_guess_2"))
    names = list(ledgers)
    hits = [ledgers[n]["hit_tokens"] for n in names]
    rest = [ledgers[n]["uncached_tokens"] for n in names]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.barh(names, hits, color="tab:green", label=tr("reused (hit_tokens)", "复用（hit_tokens）"))
    ax.barh(names, rest, left=hits, color="lightgrey", label=tr("prefill (uncached_tokens)", "prefill（uncached_tokens）"))
    for i, n in enumerate(names):
        ax.text(hits[i] + rest[i] + 0.5, i, f"{ledgers[n]['reuse_ratio']:.0%}", va="center")
    ax.invert_yaxis()
    ax.set_xlabel(tr("tokens", "token 数"))
    ax.legend(loc="lower right")
    ax.set_title(tr("Prompt = reusable prefix + suffix", "提示词 = 可复用前缀 + 后缀"))
    plt.show()
    total = sum(hits) + sum(rest)
    print(tr("prefill work saved on this workload:", "这个工作负载上省下的 prefill 工作量："),
          f"{sum(hits)}/{total} = {sum(hits) / total:.1%}")

# %% [markdown] lang="en"
# ## What the ledger does not say, and when prefix caching does not help
#
# `reuse_ratio` counts tokens. Whether reuse makes a server faster also depends on where the KV
# lives, how much memory it holds, and how long the suffix takes to prefill. Prefix caching does not
# help when:
#
# - **prompts are unique**: nothing at their start was seen before, so every token is a miss;
# - **the work is decode**: generating the answer token by token reads the KV cache at every step,
#   cached or not, so the time per output token does not change;
# - **the cache is smaller than the working set**: prefixes are evicted before they are used again;
# - **the suffix is long**: it is still prefilled, and it still attends to the whole cached prefix.
#
# Stage 3 gives the KV a physical home (blocks), stage 4 decides what to forget when memory runs out,
# and stage 6 measures time to first token (TTFT) with and without a cached prefix.

# %% [markdown] lang="zh"
# ## 账本说明不了什么，以及前缀缓存什么时候帮不上忙
#
# `reuse_ratio` 数的是 token。复用能不能让服务变快，还取决于 KV 存在哪里、占了多少显存、后缀的 prefill
# 要多久。下面几种情况里，前缀缓存帮不上忙：
#
# - **提示词各不相同**：它们的开头以前都没出现过，每个 token 都未命中；
# - **瓶颈在 decode（解码）**：逐个 token 生成回答时，每一步都要读 KV cache，不管它是不是来自缓存，
#   所以每个输出 token 的耗时不会变；
# - **缓存装不下工作集**：前缀还没等到下一次使用就被淘汰了；
# - **后缀很长**：后缀仍然要 prefill，而且仍然要对整段已缓存的前缀做 attention。
#
# 第 3 阶段给 KV 安排物理存放位置（块），第 4 阶段决定显存不够时先丢掉什么，第 6 阶段则实测有无缓存前缀
# 时的 TTFT（首 token 延迟）。

# %% quiz="questions"

# %% scoring="table"

# %% [markdown] lang="en"
# ## Recap
# You built `PrefixCacheManager`: it normalizes token sequences, registers prefixes once each,
# finds the longest registered prefix of a prompt, splits the prompt into the reusable prefix and
# the suffix, and keeps the reuse ledger.
#
# The one invariant: a token is reusable only if **every token before it, from position 0, is the
# same token id** as in the cached prefix. Equal tokens later in the prompt, or digits that happen to
# read the same as text (`[1, 2]` against `[1, 23, ...]`), never count.
#
# What it measured: on the toy workload, 105 of 175 prompt tokens (60 %) came from the cache, and
# the prompt sharing only half of system prompt A got nothing, because this manager reuses whole
# registered prefixes only.
#
# ## Further reading
# - vLLM, *Automatic Prefix Caching* (design document, docs.vllm.ai/en/latest/design/prefix_caching/):
#   how a production engine names cached KV by hashing blocks of tokens with their prefix; stage 2
#   builds exactly that.
# - Zheng et al., *SGLang: Efficient Execution of Structured Language Model Programs* (NeurIPS 2024):
#   RadixAttention, which finds the longest cached prefix token by token in a radix tree (stage 5).
# - Kwon et al., *Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   (SOSP 2023): where reused KV lives, blocks and block tables (stages 3 and 6).
# - Qin et al., *Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving* (FAST 2025):
#   prefix reuse at the scale of a cluster, with the KV cache as a store shared by many machines.
# - Gim et al., *Prompt Cache: Modular Attention Reuse for Low-Latency Inference* (MLSys 2024): what it
#   takes to reuse attention states beyond exact prefixes, which shows why the prefix rule exists.

# %% [markdown] lang="zh"
# ## 回顾
# 你实现了 `PrefixCacheManager`：它把 token 序列规范化，每个前缀只登记一次，找出提示词的最长已登记
# 前缀，把提示词拆成可复用前缀和后缀，并维护复用账本。
#
# 最重要的不变量：一个 token 能复用，当且仅当**从第 0 个位置到它之前的每个 token 都和缓存前缀的 token id
# 相同**。提示词后面出现的相同 token 不算；写成文本后碰巧一样的数字（`[1, 2]` 对 `[1, 23, ...]`）也不算。
#
# 本阶段测得的数字：在玩具工作负载上，175 个提示词 token 里有 105 个（60%）来自缓存；只和 system
# 提示词 A 共享一半的那个提示词一个 token 也没复用上，因为这个管理器只复用完整的已登记前缀。
#
# ## 延伸阅读
# - vLLM，*Automatic Prefix Caching* 设计文档（docs.vllm.ai/en/latest/design/prefix_caching/）：生产级推理
#   引擎怎样把 token 块连同它的前缀一起哈希，作为缓存 KV 的名字；第 2 阶段要实现的正是这个。
# - Zheng 等，*SGLang: Efficient Execution of Structured Language Model Programs*（NeurIPS 2024）：
#   RadixAttention，在基数树（radix tree）上逐个 token 查找最长已缓存前缀（第 5 阶段）。
# - Kwon 等，*Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   （SOSP 2023）：被复用的 KV 存放在哪里，块和块表是怎么回事（第 3、6 阶段）。
# - Qin 等，*Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving*（FAST 2025）：
#   集群规模下的前缀复用，KV cache 成为多台机器共享的存储。
# - Gim 等，*Prompt Cache: Modular Attention Reuse for Low-Latency Inference*（MLSys 2024）：想在精确前缀
#   之外复用 attention 状态需要付出什么，由此也能看出“只复用前缀”这条规则从何而来。
