# %% [markdown] lang="en"
# # Stage 6 · Paged prefill with a cached prefix
#
# **Goal:** make the prefix cache real on a (small) transformer. Stage 3's `BlockPool` said *which*
# physical blocks hold a prompt's prefix; here those blocks hold actual keys and values, and a
# prefill computes **only the tokens after the hit**, reading the prefix's K/V through the block
# table. Then you count what that should save, measure time to first token (TTFT) with and without
# the cached prefix, and see where a prefix cache does not help.
#
# ## Learning objectives
# After this stage you can:
# 1. place the uncached tokens of a prompt at their absolute positions and find each one's slot in a
#    paged K/V pool through a (shuffled) block table;
# 2. write paged attention for a cached prefill: a causal mask shifted by the hit length, grouped-query
#    heads, tensors on the right device;
# 3. build a prefill that computes only the suffix and still produces exactly a full prefill's logits;
# 4. predict with a FLOP model what a cached prefix saves, reconcile it with the usual "97 %" figure,
#    and compare it with a measured TTFT;
# 5. name the cases where a prefix cache does not help.
#
# ## Prerequisites
# - [Stage 2](02_block_hash.ipynb): chained block keys, full blocks only.
# - [Stage 3](03_block_pool.ipynb): `BlockPool.admit / commit / release`, block tables, hits.
# - [Stage 4](04_eviction.ipynb): the LRU free queue and the tail-first release order (this engine uses them).
# - Attention with queries, keys and values; a little PyTorch (tensors, indexing, `device`).
#
# **Time:** about 90 min.

# %% [markdown] lang="zh"
# # 第 6 阶段 · 分页 KV 与前缀复用的预填充
#
# **目标：** 在一个（小型）Transformer 上把前缀缓存真正做出来。第 3 阶段的 `BlockPool` 只决定了提示词的前缀放在
# *哪些*物理块里；这一阶段，这些块里装的是真实的 key 和 value，prefill（预填充）**只计算命中部分之后的 token**，
# 前缀的 K/V 通过块表从 KV 池里读。然后你会算一算这样应该省下多少计算，实测有无缓存前缀时的
# TTFT（首 token 延迟），并看清前缀缓存在哪些情况下帮不上忙。
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 给提示词中未缓存的 token 分配正确的绝对位置，并通过（打乱的）块表找到它们在分页 KV 池里的槽位；
# 2. 为带缓存的 prefill 写出 paged attention：按命中长度平移的因果掩码、分组查询注意力的头对应、张量放在正确的设备上；
# 3. 实现只计算后缀的 prefill，并且得到和完整 prefill 完全一致的 logits；
# 4. 用 FLOP 模型预测缓存前缀能省下多少计算，把它和常见的“省 97%”说法对上账，再和实测的 TTFT 比较；
# 5. 说出前缀缓存帮不上忙的几种情况。
#
# ## 前置知识
# - [第 2 阶段](02_block_hash.ipynb)：链式块 key，只对满块计算。
# - [第 3 阶段](03_block_pool.ipynb)：`BlockPool.admit / commit / release`、块表、命中。
# - [第 4 阶段](04_eviction.ipynb)：LRU 空闲队列和“先释放尾块”的顺序（本阶段的引擎直接用它们）。
# - 了解 attention 里的 query、key、value；会一点 PyTorch（张量、索引、`device`）。
#
# **用时：** 约 90 分钟。

# %% [markdown] lang="en"
# *How this notebook works.* Run the setup cell first: besides the course helpers it imports the
# `kernels` package (a small Llama/Qwen2-style model, a paged K/V pool, reference attention) and
# stages 3 and 4's block pools. Each TODO sits in its own code cell: replace `raise NotImplementedError()`
# with your code, re-run that cell, then run the `check(...)` cell below it. Stuck? `hint("s06.slot_mapping")`
# shows a hint; call it again for the next one (hints cost nothing). **Only the TODO cells are graded**
# (everything else comes from the course when grading): keep any helper you write inside them.
# Everything runs on a CPU in about a minute; on a GPU the TTFT section also runs the Triton kernel.
#
# | TODO | function | what it does |
# |---|---|---|
# | 1 | `suffix_positions` | absolute positions of the uncached tokens |
# | 2 | `slot_mapping` | position → slot of the pool, through the block table |
# | 3 | `write_kv` | store the new tokens' K/V in the pool |
# | 4 | `paged_attention` | new queries attend to cached + new keys, causal with an offset |
# | 5 | `PagedPrefiller.prefill` | admit, compute the suffix only, commit; logits + ledger |
# | 6 | `quiz` | the concept quiz at the end |

# %% [markdown] lang="zh"
# *这个笔记本怎么用。* 先运行 setup 单元：除了课程工具，它还会导入 `kernels` 包（一个小型 Llama/Qwen2 式模型、
# 分页 KV 池、参考 attention）以及第 3、4 阶段的块池。每个 TODO 都在单独的代码单元里：把
# `raise NotImplementedError()` 换成你的代码，重新运行这个单元，再运行它下面的 `check(...)` 单元。
# 卡住了就调用 `hint("s06.slot_mapping")` 看提示，再调用一次看下一条（看提示不扣分）。
# **只有 TODO 单元会被评分**（评分时其余单元都用课程自带的版本），所以你写的辅助函数要放在 TODO 单元里。
# 在 CPU 上全部跑完大约一分钟；有 GPU 时，TTFT 那一节还会运行 Triton kernel（算子）。
#
# | TODO | 函数 | 作用 |
# |---|---|---|
# | 1 | `suffix_positions` | 未缓存 token 的绝对位置 |
# | 2 | `slot_mapping` | 通过块表把位置映射到 KV 池的槽位 |
# | 3 | `write_kv` | 把新 token 的 K/V 存进 KV 池 |
# | 4 | `paged_attention` | 新 query 对缓存 key 和新 key 做带偏移的因果 attention |
# | 5 | `PagedPrefiller.prefill` | 接纳、只算后缀、提交；返回 logits 和账目 |
# | 6 | `quiz` | 最后的概念小测 |

# %% setup="course"
from workbook.predictions import why
import random

from autograder.textwidth import pad
from kernels.model import ModelConfig

# %% [markdown] lang="en"
# ## The model and the pool
#
# `kernels.model.DecoderLM` is a decoder-only model like Llama and Qwen2: token embedding, then
# layers of (RMSNorm → attention with RoPE and grouped-query heads → RMSNorm → SwiGLU MLP), a final
# norm and an output head. It loads a Hugging Face checkpoint (`config.json` + `*.safetensors`)
# with `kernels.model.load_model(path)`; offline we use seeded random weights, which is enough to
# check that two ways of computing the same thing agree.
#
# The model takes the attention as an argument. For the tokens it is given, each layer computes
# `q [T, Hq, D]`, `k, v [T, Hkv, D]` (RoPE already applied at the tokens' positions) and calls
# `attend(layer, q, k, v)`. A full prefill passes plain causal attention; a cached prefill passes
# one that also reads the prefix from the pool.
#
# The pool (`kernels.kv_pool.KVPool`) has, per layer, a K and a V tensor of shape
# `[num_blocks, block_size, Hkv, D]`. Row `r` of block `b` is **slot** `b * block_size + r`;
# `pool.flat_k(layer)` views the K tensor as `[num_slots, Hkv, D]`, indexed by slot.
# `help(DecoderLM)` and `help(KVPool)` give both in full.

# %% [markdown] lang="zh"
# ## 模型和 KV 池
#
# `kernels.model.DecoderLM` 是和 Llama、Qwen2 一样的 decoder-only 模型：先是 token 嵌入，然后是若干层
# （RMSNorm → 带 RoPE 和分组查询头的 attention → RMSNorm → SwiGLU MLP），最后是一个归一化层和输出头。
# 它可以用 `kernels.model.load_model(path)` 加载 Hugging Face 格式的权重（`config.json` + `*.safetensors`）；
# 离线时我们用固定种子的随机权重——要验证两种算法算出的结果是否一致，这就够了。
#
# 模型把 attention 当作参数传进来。对输入的 token，每一层算出 `q [T, Hq, D]` 和 `k, v [T, Hkv, D]`
# （已经按 token 的位置做过 RoPE），然后调用 `attend(layer, q, k, v)`。完整 prefill 传入普通的因果 attention；
# 带缓存的 prefill 传入的 attention 还会从 KV 池里读前缀。
#
# KV 池（`kernels.kv_pool.KVPool`）每层有一个 K 张量和一个 V 张量，形状都是 `[num_blocks, block_size, Hkv, D]`。
# 第 `b` 个块的第 `r` 行就是**槽位** `b * block_size + r`；`pool.flat_k(layer)` 把 K 张量看成
# `[num_slots, Hkv, D]`，按槽位索引。`help(DecoderLM)` 和 `help(KVPool)` 里有完整的中文说明。

# %%
# One CPU thread for torch: these models are small, and a second thread mostly waits for the first
# (on a shared or busy machine, every operation then waits for a time slice). Both sides of every
# comparison below run on the same single thread.
# zh: torch 只用一个 CPU 线程：这里的模型都很小，第二个线程大多在等第一个（机器繁忙或与人共用时，每个操作都要
# zh: 等时间片）。下面每一组对比的两边都在同一个线程上运行。
torch.set_num_threads(1)

model = DecoderLM.random(ModelConfig.tiny(), seed=0)
cfg = model.config
print(tr(f"tiny model: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}, {cfg.num_attention_heads} query heads "
         f"sharing {cfg.num_key_value_heads} kv heads of dim {cfg.head_dim}, vocab {cfg.vocab_size}",
         f"小模型：{cfg.num_hidden_layers} 层，隐藏维 {cfg.hidden_size}，{cfg.num_attention_heads} 个 query 头"
         f"共用 {cfg.num_key_value_heads} 个 kv 头，头维 {cfg.head_dim}，词表 {cfg.vocab_size}"))
pool = KVPool.for_model(cfg, num_blocks=8, block_size=4)
print(tr("one layer's K in the pool:", "pool 里一层的 K："), tuple(pool.k[0].shape),
      tr("-> flat view", "-> 平铺视图"), tuple(pool.flat_k(0).shape))

# %% [markdown] lang="en"
# ## TODO 1 · Positions of the uncached tokens
#
# A prompt of `n` tokens whose first `hit` tokens are cached computes tokens `hit .. n-1`. RoPE
# rotates a token's query and key by its **absolute position**, and the cached keys were rotated by
# theirs, so the new tokens must be at positions `hit, hit+1, ...`, not `0, 1, ...`: restarting at
# 0 gives every new token the rotation of a token at the start of the prompt, and its attention
# scores to the prefix come out wrong.
#
# The function also takes a `device`. Code that creates a tensor without saying where puts it on the
# CPU; on a GPU that tensor then meets the model's tensors and fails (or is copied every call). The
# checks probe this on PyTorch's `meta` device, which has shapes and devices but no values, so a
# wrong device fails here too, on a machine without a GPU.

# %% [markdown] lang="zh"
# ## TODO 1 · 未缓存 token 的位置
#
# 一个 `n` 个 token 的提示词，前 `hit` 个已经缓存，那么要计算的是第 `hit .. n-1` 个 token。RoPE 按**绝对位置**
# 旋转每个 token 的 query 和 key，缓存里的 key 也是按它们各自的位置旋转过的，所以新 token 的位置必须是
# `hit, hit+1, ...`，而不是 `0, 1, ...`。如果从 0 重新编号，每个新 token 都会被当成提示词开头的 token 来旋转，
# 它对前缀的 attention 分数就全错了。
#
# 这个函数还接收一个 `device` 参数。新建张量时不指定设备，张量就会落在 CPU 上；到了 GPU 上，这个张量碰到模型的张量
# 就会报错（或者每次调用都要拷贝一次）。检查会在 PyTorch 的 `meta` 设备上验证这一点：`meta` 张量只有形状和设备、
# 没有数值，所以即使机器上没有 GPU，设备放错了也能被发现。

# %% solution="suffix_positions"

# %% check="s06.suffix_positions"

# %% [markdown] lang="en"
# ## TODO 2 · From a position to a slot
#
# The block table lists the request's physical blocks in token order: position `p` lives in block
# `block_table[p // B]` at row `p % B`, i.e. slot `block_table[p // B] * B + p % B`. The blocks of a
# table are **not** consecutive in the pool in general: they were handed out by the free queue, some
# are shared with other requests, some were cached long ago.

# %% [markdown] lang="zh"
# ## TODO 2 · 从位置到槽位
#
# 块表按 token 顺序列出请求用到的物理块：位置 `p` 在块 `block_table[p // B]` 的第 `p % B` 行，也就是槽位
# `block_table[p // B] * B + p % B`。一般来说，块表里的块在 KV 池中**并不**连续：它们是空闲队列分出来的，
# 有的和别的请求共享，有的是很久以前缓存下来的。

# %% solution="slot_mapping"

# %% check="s06.slot_mapping"

# %%
with demo("s06.slot_mapping"):
    table = [5, 2, 7]
    print(tr("block table", "块表"), table, tr("(block size 4)", "（块大小 4）"))
    for p, s in enumerate(slot_mapping(table, torch.arange(12), 4).tolist()):
        print(tr(f"  position {p:2d} -> block {table[p // 4]} row {p % 4} -> slot {s}",
                 f"  位置 {p:2d} -> 块 {table[p // 4]} 第 {p % 4} 行 -> 槽位 {s}"))

# %% [markdown] lang="en"
# ## TODO 3 · Writing the new K/V
#
# Each layer writes the new tokens' K and V into their slots, *before* attention reads them: a new
# query also attends to the new keys before it (and to its own).

# %% [markdown] lang="zh"
# ## TODO 3 · 写入新的 K/V
#
# 每一层都要在 attention 读取*之前*，把新 token 的 K 和 V 写进它们的槽位：新 query 也要关注它前面的新 key
# （以及它自己的 key）。

# %% solution="write_kv"

# %% check="s06.write_kv"

# %% [markdown] lang="en"
# ## TODO 4 · Attention over cached + new keys
#
# The `T` new queries are at positions `offset .. offset+T-1` (`offset` = hit length). Gather the
# K/V of positions `0 .. offset+T-1` through the block table, and mask causally **with the offset**:
# query `i` may see key `j` iff `j <= offset + i`. A mask without the offset (`j <= i`) hides most of
# the prefix from every new query.
#
# ```
#              keys: cached prefix (offset)      new tokens (T)
#   query 0          ■ ■ ■ ■ ■ ■ ■ ■             ■ □ □
#   query 1          ■ ■ ■ ■ ■ ■ ■ ■             ■ ■ □
#   query 2          ■ ■ ■ ■ ■ ■ ■ ■             ■ ■ ■
# ```
#
# With grouped-query attention (GQA) `Hq` query heads share `Hkv` kv heads: head `h` reads kv head
# `h // (Hq // Hkv)`, so each kv head is repeated `Hq // Hkv` times *next to itself*. Every tensor you
# create here (positions, slots, mask) goes on `q`'s device. `kernels.paged_attention.paged_attention_torch`
# and the Triton kernel in `kernels.triton_paged_attention` do the same job on raw pool tensors; they
# are blocked while this TODO is graded, so write your own.

# %% [markdown] lang="zh"
# ## TODO 4 · 对缓存 key 和新 key 做 attention
#
# `T` 个新 query 位于 `offset .. offset+T-1`（`offset` 就是命中长度）。通过块表取出位置 `0 .. offset+T-1`
# 的 K/V，再**带着 offset** 做因果掩码：第 `i` 个 query 能看到第 `j` 个 key，当且仅当 `j <= offset + i`。
# 如果掩码不带 offset（`j <= i`），每个新 query 都看不到前缀的大部分。
#
# ```
#              key：缓存的前缀（offset 个）      新 token（T 个）
#   query 0          ■ ■ ■ ■ ■ ■ ■ ■             ■ □ □
#   query 1          ■ ■ ■ ■ ■ ■ ■ ■             ■ ■ □
#   query 2          ■ ■ ■ ■ ■ ■ ■ ■             ■ ■ ■
# ```
#
# 在分组查询注意力（GQA）里，`Hq` 个 query 头共用 `Hkv` 个 kv 头：第 `h` 个头读第 `h // (Hq // Hkv)` 个
# kv 头，所以每个 kv 头要*就地*重复 `Hq // Hkv` 次。这里新建的张量（位置、槽位、掩码）都要放在 `q` 的设备上。
# `kernels.paged_attention.paged_attention_torch` 和 `kernels.triton_paged_attention` 里的 Triton kernel
# 在原始 KV 池张量上做的是同一件事；评分这个 TODO 时它们会被屏蔽，请自己实现。

# %% solution="paged_attention"

# %% check="s06.paged_attention"

# %% [markdown] lang="en"
# ## TODO 5 · Prefill only the suffix
#
# `PagedPrefiller` holds the model, the K/V pool and a block manager of the same shape: stage 4's
# `EvictionPool` unless you pass another one (why stage 4's, the last section shows). `prefill`:
#
# 1. admits the prompt: the block table, and `hit_tokens` whose K/V is already in the pool;
# 2. computes only the tokens after the hit, and **at least one**: the last token's logits are what
#    prefill is for. Stage 3's pool already leaves the last block of a fully cached prompt to be
#    recomputed; a block manager that does not (a token-granular one) must not make prefill compute
#    nothing;
# 3. runs the model on those tokens at their positions, with an `attend` that writes each layer's
#    new K/V (TODOs 2, 3) and calls `self.attention` (TODO 4 by default);
# 4. commits, so the new *full* blocks hit for later requests (the partial tail block is never
#    cached: its content is not complete);
# 5. returns the logits and a ledger of hit and computed tokens.
#
# The result must equal a full prefill's logits (fp32, within 1e-4) in every case: a hit at a block
# boundary, a fully cached prompt, a shuffled block table, requests sharing blocks.

# %% [markdown] lang="zh"
# ## TODO 5 · 只对后缀做 prefill
#
# `PagedPrefiller` 持有模型、KV 池，以及一个同样大小的块管理器：默认是第 4 阶段的 `EvictionPool`，
# 也可以传入别的（为什么默认用第 4 阶段的，最后一节会演示）。`prefill` 要做的事：
#
# 1. 接纳（admit）提示词：拿到块表，以及 K/V 已经在 KV 池里的 `hit_tokens`；
# 2. 只计算命中之后的 token，而且**至少一个**：prefill 要的就是最后一个 token 的 logits。第 3 阶段的块池
#    遇到整个提示词都已缓存时，本来就会留出最后一个块重新计算；但换成不这么做的块管理器（比如按 token 粒度缓存的），
#    prefill 也不能一个 token 都不算；
# 3. 在这些 token 的位置上运行模型，传入的 `attend` 负责写入每一层新的 K/V（TODO 2、3），再调用
#    `self.attention`（默认就是 TODO 4）；
# 4. 提交（commit），让新的*满块*以后能被命中（未满的尾块永远不缓存：它的内容还不完整）；
# 5. 返回 logits，以及记录命中与计算 token 数的账目（ledger）。
#
# 在所有情况下，结果都必须等于完整 prefill 的 logits（fp32，误差不超过 1e-4）：在块边界命中、整个提示词都已缓存、
# 块表被打乱、多个请求共享块。

# %% solution="PagedPrefiller"

# %% check="s06.prefill"

# %% [markdown] lang="en"
# ## See it: same logits, less work
#
# A system prompt of 64 tokens, cached by a first request; then questions that share it. The cached
# path must give the full prefill's logits, and greedy decoding must produce the same tokens with
# and without the cache. `PagedPrefiller.generate` decodes by calling `prefill` on the sequence so
# far, so every decoding step is a cached prefill.
#
# ### Predict, then run
# Block size 4. How many tokens does each of those decoding steps compute?
# **A** always 1 (the new token) · **B** between 1 and 4 · **C** the whole sequence so far.

# %% [markdown] lang="zh"
# ## 看一看：logits 一样，计算更少
#
# 第一个请求缓存了一段 64 个 token 的 system prompt（系统提示词），之后的问题都共用它。带缓存的路径必须得到和完整
# prefill 相同的 logits，贪心解码有无缓存也必须生成相同的 token。`PagedPrefiller.generate` 每生成一个 token
# 都对当前序列调用一次 `prefill`，所以每一步解码都是一次带缓存的 prefill。
#
# ### 先预测，再运行
# 块大小为 4。每一步解码要计算多少个 token？
# **A** 总是 1 个（新 token）· **B** 1 到 4 个之间 · **C** 到目前为止的整个序列。

# %%
my_guess = None  # your prediction: "A", "B" or "C"
# zh: 你的预测："A"、"B" 或 "C"

# %%
with demo("s06.suffix_positions", "s06.slot_mapping", "s06.write_kv", "s06.paged_attention", "s06.prefill"):
    engine = PagedPrefiller(model, num_blocks=64, block_size=4)
    rng = random.Random(0)
    system = [rng.randrange(cfg.vocab_size) for _ in range(64)]
    for i in range(3):
        prompt = system + [rng.randrange(cfg.vocab_size) for _ in range(5 + i)]
        logits, ledger = engine.prefill(prompt)
        diff = (logits - full_prefill(model, prompt)).abs().max().item()
        print(tr(f"request {i}: {ledger}, max |cached - full| = {diff:.1e}",
                 f"请求 {i}：{ledger}，max |缓存 - 完整| = {diff:.1e}"))
    new_cached, ledgers = engine.generate(system + [1, 2, 3], 12)
    new_full = generate_full(model, system + [1, 2, 3], 12)
    print(tr("greedy tokens identical with and without the cache:", "有无缓存时贪心解码的 token 完全相同："),
          new_cached == new_full)
    per_step = [led["computed_tokens"] for led in ledgers[1:]]
    print(tr("tokens computed per decoding step:", "每一步解码计算的 token 数："), per_step)
    reveal(my_guess, "B" if max(per_step) > 1 else "A", why("s06.my_guess"))

# %% [markdown] lang="en"
# ## How much should a cached prefix save?
#
# A common estimate (it is the seed article's): with $P = 4096$ cached and $Q = 128$ new tokens,
# $1 - Q/(P+Q) = 1 - 128/4224 \approx 97\%$ of the prefill compute is saved. That counts **tokens**.
# The course's FLOP model (`kernels.flops.prefill_flops`) counts the work of each part of a prefill
# of $C$ computed tokens after $K$ cached ones, for $L$ layers, $H_q$ query heads of dimension $D$:
#
# $$F(C, K) = \underbrace{L \, C \, c_{\text{lin}}}_{\text{projections + MLP}}
#   + \underbrace{4 L H_q D \left(C K + \tfrac{C(C+1)}{2}\right)}_{\text{attention: keys each new token reads}}
#   + \underbrace{2 h V}_{\text{output head, last token}}$$
#
# A full prefill is $F(P+Q, 0)$, a cached one $F(Q, P)$, and the saving is $1 - F(Q, P) / F(P+Q, 0)$.
# The linear part saves exactly the token ratio; attention saves less, because every new token still
# reads all $P$ cached keys (the $C K$ term).
#
# ### Predict, then run
# On Qwen2.5-0.5B's shape, what fraction of the prefill FLOPs does the cache save for $P = 4096$,
# $Q = 128$: more than, exactly, or less than 0.97? Write a number such as 0.9.

# %% [markdown] lang="zh"
# ## 缓存前缀应该省多少？
#
# 一个常见的入门估算：缓存 $P = 4096$ 个 token、新来 $Q = 128$ 个时，省下
# $1 - Q/(P+Q) = 1 - 128/4224 \approx 97\%$ 的 prefill 计算。这是在数 **token**。本课程的 FLOP 模型
# （`kernels.flops.prefill_flops`）则按部分计算工作量：在 $K$ 个缓存 token 之后计算 $C$ 个 token，模型有 $L$ 层、
# $H_q$ 个维度为 $D$ 的 query 头：
#
# $$F(C, K) = \underbrace{L \, C \, c_{\text{lin}}}_{\text{投影 + MLP}}
#   + \underbrace{4 L H_q D \left(C K + \tfrac{C(C+1)}{2}\right)}_{\text{attention：每个新 token 读的 key 数}}
#   + \underbrace{2 h V}_{\text{输出头，只算最后一个 token}}$$
#
# 完整 prefill 是 $F(P+Q, 0)$，带缓存的是 $F(Q, P)$，节省的比例是 $1 - F(Q, P) / F(P+Q, 0)$。
# 线性部分节省的比例正好等于 token 比例；attention 省得少一些，因为每个新 token 仍然要读全部 $P$ 个缓存 key
# （也就是 $C K$ 这一项）。
#
# ### 先预测，再运行
# 按 Qwen2.5-0.5B 的结构，$P = 4096$、$Q = 128$ 时，缓存省下的 prefill FLOPs 比例比 0.97 大、相等还是小？
# 写一个数，比如 0.9。

# %%
my_guess_2 = None  # your prediction: a fraction such as 0.9
# zh: 你的预测：一个比例，比如 0.9

# %%
from kernels.flops import prefill_flops

# The seed article counts tokens: saved = 1 - Q / (P + Q).
# The FLOP model counts work: saved = 1 - F(Q computed after P cached) / F(P + Q computed).
# zh: 入门估算数的是 token：节省 = 1 - Q / (P + Q)。
# zh: FLOP 模型数的是工作量：节省 = 1 - F(缓存 P 个之后算 Q 个) / F(完整算 P + Q 个)。
qwen = ModelConfig.qwen2_5_0_5b()
P, Q = 4096, 128
full, cached = prefill_flops(qwen, P + Q), prefill_flops(qwen, Q, P)
print(tr("token ratio (seed article): 1 - Q/(P+Q) =", "token 比例（入门估算）：1 - Q/(P+Q) ="), f"{1 - Q / (P + Q):.4f}")
print(f"{pad(tr('part', '部分'), 10, '>')} {pad(tr('full GFLOP', '完整 GFLOP'), 12, '>')} {pad(tr('cached GFLOP', '缓存 GFLOP'), 12, '>')} {pad(tr('saved', '节省'), 8, '>')}")
names = {"linear": tr("linear", "线性"), "attention": "attention", "head": tr("head", "输出头"), "total": tr("total", "合计")}
for part, name in names.items():
    saved = 1 - cached[part] / full[part]
    print(f"{name:>10} {full[part] / 1e9:>12.1f} {cached[part] / 1e9:>12.2f} {saved:>8.4f}")
saved_total = 1 - cached["total"] / full["total"]
print(tr(f"attention's share of the work: {full['attention'] / full['total']:.0%} of a full prefill, "
         f"{cached['attention'] / cached['total']:.0%} of a cached one",
         f"attention 在总工作量中的占比：完整 prefill 中 {full['attention'] / full['total']:.0%}，"
         f"带缓存时 {cached['attention'] / cached['total']:.0%}"))
print(tr(f"predicted TTFT speedup: {full['total'] / cached['total']:.1f}x (the token ratio alone would say "
         f"{(P + Q) / Q:.1f}x)", f"预测的 TTFT 加速比：{full['total'] / cached['total']:.1f} 倍（只看 token 比例会是 "
         f"{(P + Q) / Q:.1f} 倍）"))
reveal(my_guess_2, saved_total, why("s06.my_guess_2"), within=0.005, bounds=(0, 1))

# %% [markdown] lang="en"
# ## Measure it: TTFT with and without a cached prefix
#
# Time to first token is the prefill time. The baseline is a full prefill with the fastest causal
# attention torch has (`F.scaled_dot_product_attention(is_causal=True)`), not a slow loop. Both
# paths run with a fresh question each time, for 7 rounds: each round times one full prefill between
# three cached ones, so whatever else the machine starts or stops doing slows both paths alike, and the
# speedup is the ratio of their median times (a round that something else slowed moves no median). On a
# CPU the clock is this process's CPU time on one torch
# thread, so other programs' waiting is not counted either (run the cell twice: the speedups agree
# within about a third; programs sharing the CPU's caches still move them). The
# model here is small, so that the whole measurement takes well under a minute on a CPU;
# `benchmarks/bench_prefill.py` measures at real sizes.
#
# ### Predict, then run
# With the largest cached prefix below and a 64-token question, will the measured TTFT speedup reach
# the FLOP model's prediction? Write the speedup you expect (a number, e.g. 5).

# %% [markdown] lang="zh"
# ## 实测：有无缓存前缀时的 TTFT
#
# 首 token 延迟就是 prefill 的时间。基线是用 torch 最快的因果 attention
# （`F.scaled_dot_product_attention(is_causal=True)`）做完整 prefill，而不是一个很慢的循环。两条路径交替运行，
# 每次都换一个新问题，共 7 轮：每轮在三次带缓存的 prefill 中间做一次完整 prefill，机器上别的程序开始或停下来，
# 两条路径会一起变慢或变快；加速比是两条路径耗时中位数之比（某一轮被别的程序拖慢，中位数也不会跟着变）。在 CPU 上计的是本进程在单个 torch 线程上的 CPU 时间，
# 别的程序占着 CPU 时的等待也不算进来（把这个单元运行两次：加速比相差大约在三分之一以内；和别的程序共用 CPU 缓存，结果仍会有些浮动）。这里的模型很小，在 CPU 上整个测量用不了一分钟；
# 真实规模的测量见 `benchmarks/bench_prefill.py`。
#
# ### 先预测，再运行
# 在下面最长的缓存前缀、64 个 token 的问题上，实测的 TTFT 加速比能达到 FLOP 模型的预测吗？
# 写下你预期的加速比（一个数，比如 5）。

# %%
my_guess_3 = None  # your prediction: the measured speedup at the largest prefix, e.g. 5
# zh: 你的预测：最长前缀下实测的加速比，比如 5

# %%
import matplotlib.pyplot as plt

from kernels.device import default_device, describe_device, paged_attention_for
# measure_ttft() times both paths on a steady clock: on a CPU, this process's CPU seconds on one torch
# thread (other programs on the machine cannot add to them); on a GPU, the wall clock after the device
# has finished. 7 rounds, each one full prefill between three cached ones, every prompt a fresh question;
# it keeps each path's median time.
# zh: measure_ttft() 用稳定的时钟给两条路径计时：CPU 上用本进程在单个 torch 线程上的 CPU 秒数（机器上的其他程序
# zh: 加不进来）；GPU 上用挂钟时间，并等 GPU 算完。共 7 轮，每轮在三次带缓存的 prefill 中间做一次完整 prefill，
# zh: 每个提示词都换一个新问题；每条路径取耗时的中位数。
from kernels.prefill import TTFT_CONFIG, measure_ttft

rows = []  # one TTFTRow per prefix, filled when the demo runs (read again by the closing cell)
# zh: 每个前缀一个 TTFTRow，演示运行后才有内容（最后一个单元还会用到）

with demo("s06.suffix_positions", "s06.slot_mapping", "s06.write_kv", "s06.paged_attention", "s06.prefill"):
    device = default_device()
    kernel_name, kernel = paged_attention_for(device)
    print(tr("device:", "设备："), describe_device(device), tr("| paged attention:", "| paged attention："),
          kernel_name if device.type == "cuda" else tr("yours (TODO 4)", "你写的（TODO 4）"))
    bench_model = DecoderLM.random(TTFT_CONFIG, seed=0, device=device)
    question, block = 64, 16
    prefixes = [256, 768, 1536]
    rows[:] = measure_ttft(bench_model, lambda p: PagedPrefiller(
        bench_model, num_blocks=(p + 4 * question) // block + 8, block_size=block,
        attention=pool_attention(kernel) if device.type == "cuda" else None), prefixes, question)
    # The cached path must give the full path's answer, from the whole cached prefix.
    # zh: 带缓存的路径必须给出和完整 prefill 一样的结果，并且整个缓存前缀都被复用。
    for r in rows:
        assert r.hit_tokens == r.prefix and r.max_diff <= 1e-3, r
    print(f"{pad(tr('prefix', '前缀'), 7, '>')} {pad(tr('full ms', '完整 ms'), 9, '>')} {pad(tr('cached ms', '缓存 ms'), 10, '>')} "
          f"{pad(tr('measured', '实测'), 9, '>')} {pad(tr('predicted', '预测'), 10, '>')}")
    for r in rows:
        print(f"{r.prefix:>7} {r.full_s * 1e3:>9.1f} {r.cached_s * 1e3:>10.2f} {r.speedup:>8.1f}x {r.predicted:>9.1f}x")
    last = rows[-1]
    verdict = tr("below", "低于") if last.speedup < 0.9 * last.predicted else \
        tr("above", "高于") if last.speedup > 1.1 * last.predicted else tr("close to", "接近")
    print(tr(f"at P = {last.prefix}: measured {last.speedup:.1f}x, {verdict} the FLOP model's {last.predicted:.1f}x",
             f"P = {last.prefix} 时：实测 {last.speedup:.1f} 倍，{verdict} FLOP 模型预测的 {last.predicted:.1f} 倍"))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(prefixes, [r.speedup for r in rows], "o-", label=tr("measured", "实测"))
    ax.plot(prefixes, [r.predicted for r in rows], "s--", label=tr("FLOP model", "FLOP 模型"))
    ax.plot(prefixes, [(p + question) / question for p in prefixes], ":", color="grey",
            label=tr("token ratio (P+Q)/Q: attention ignored", "token 比例 (P+Q)/Q：忽略 attention"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel(tr(f"cached prefix P (tokens), question Q = {question}", f"缓存前缀 P（token 数），问题 Q = {question}"))
    ax.set_ylabel(tr("TTFT speedup (full / cached)", "TTFT 加速比（完整 / 缓存）"))
    ax.set_title(tr(f"Prefix cache TTFT speedup on {device.type}", f"前缀缓存的 TTFT 加速比（{device.type}）"))
    ax.legend()
    plt.show()
    reveal(my_guess_3, last.speedup, why("s06.my_guess_3"), relative=0.25)

# %% [markdown] lang="en"
# ## Reading the plot
#
# - The speedup grows with the prefix, but more slowly than the token ratio `(P+Q)/Q`: the question
#   still attends to every cached key, and that work grows with `P`. For long prefixes attention is
#   most of what is left, which is why fast paged-attention kernels matter *more* with a prefix
#   cache, not less.
# - The line above the plot says whether the measurement fell below, close to or above the FLOP
#   model. The model runs every kind of work at one rate, and real hardware does not. A short suffix
#   runs slower per FLOP: its matmuls have few rows (the weights are read and packed for only 64
#   rows), its attention gathers the prefix's K/V through the block table and applies a mask, and
#   fixed per-layer overhead (Python, kernel launches) weighs more on a short call; on a GPU a
#   64-token suffix cannot even keep the device busy. All of that pushes the measured speedup below
#   the prediction. A full prefill's long causal attention can run slower per FLOP than its matmuls,
#   which pushes the other way. Stage 7 measures the rate of each kind of work and predicts both TTFTs
#   from them.

# %% [markdown] lang="zh"
# ## 怎么读这张图
#
# - 加速比随前缀变长而增大，但增长得比 token 比例 `(P+Q)/Q` 慢：问题仍然要对每个缓存 key 做 attention，
#   这部分工作随 `P` 增长。前缀很长时，剩下的工作大半是 attention——所以有了前缀缓存，快速的 paged attention
#   kernel *更*重要了，而不是更不重要。
# - 图上方那一行输出说明了实测值低于、接近还是高于 FLOP 模型。FLOP 模型假设各类工作都以同一速率运行，真实硬件并非如此。
#   短后缀每个 FLOP 跑得更慢：它的矩阵乘只有很少的行（权重读进来、打包好，只用于 64 行），它的 attention 要通过块表
#   收集前缀的 K/V、还要套掩码，每层固定的开销（Python、kernel 启动）在短调用里占比更大；在 GPU 上，64 个 token
#   的后缀甚至喂不饱整块卡。这些都会让实测加速比低于预测。反过来，完整 prefill 里很长的因果 attention 每个 FLOP
#   可能比矩阵乘还慢，这会把实测值往上推。第 7 阶段会分别测出各类工作的速率，再用它们预测两种 TTFT。

# %% [markdown] lang="en"
# ## When prefix caching does not help
#
# - **Decode does not get cheaper.** A prefix cache saves prefill work, so it cuts TTFT. Each decode
#   step still computes its token and reads the whole KV cache, cached or not: the time per output
#   token (TPOT) stays the same, and a workload dominated by long outputs gains little.
# - **Unique prompts.** A prompt that shares no full block with an earlier one hits nothing (its ledger
#   says `hit_tokens: 0`), and it still pays for hashing its blocks and for the cache's bookkeeping.
# - **The suffix still attends to the whole prefix.** The FLOP cell above shows attention's share of the
#   cached prefill: the longer the prefix, the more of a cached prefill is attention that no cache removes.
# - **A pool too small for the working set.** When the prompts in rotation need more blocks than the
#   pool holds, each new prompt evicts blocks that another one needs soon. How much survives depends on
#   which blocks go first, and this is why the engine uses stage 4's order: keyless blocks before cached
#   ones, least recently used first, and a finished prompt's **tail before its prefix**. Stage 3's simple
#   queue frees a request's blocks head first, so the first block of a prompt is evicted before its later
#   blocks, and without its first block a prompt's chain of keys cannot hit at all.
#
# ### Predict, then run
# Three system prompts A, B, C of 32 tokens (8 blocks of 4) take turns: A, B, C, A, B, C. The pool
# has 20 blocks: room for about two prompts, not three. With **stage 3's** queue and release order, how
# many tokens does each request of the second round hit?

# %% [markdown] lang="zh"
# ## 前缀缓存什么时候帮不上忙
#
# - **decode（解码）不会变便宜。** 前缀缓存省的是 prefill，所以降低的是 TTFT。每一步 decode 仍然要计算自己的 token，
#   并读取整个 KV cache，不管这些 KV 是缓存来的还是现算的：每个输出 token 的耗时（TPOT）不变。以长输出为主的负载收益很小。
# - **独一无二的提示词。** 和之前的提示词没有任何共同满块的提示词什么也命中不了（它的 ledger 显示 `hit_tokens: 0`），
#   却照样要为分块哈希和缓存的簿记付出开销。
# - **后缀仍然要对整个前缀做 attention。** 上面的 FLOP 单元给出了 attention 在带缓存 prefill 中的占比：前缀越长，
#   带缓存的 prefill 里就有越多是缓存省不掉的 attention。
# - **KV 池装不下工作集。** 当轮流出现的提示词需要的块比 KV 池能容纳的还多时，每个新提示词都会淘汰另一个马上要用的块。
#   能留下多少，取决于先淘汰哪些块——这正是引擎采用第 4 阶段淘汰顺序的原因：没有 key 的块先于有缓存内容的块，
#   按 LRU 淘汰，请求结束时**先释放尾块、后释放前缀**。第 3 阶段的简单队列按从头到尾的顺序释放请求的块，
#   于是提示词的第一个块比后面的块先被淘汰；而第一个块没了，这个提示词的整条 key 链就一个也命中不了。
#
# ### 先预测，再运行
# 三个 32 个 token（8 个大小为 4 的块）的 system prompt A、B、C 轮流出现：A、B、C、A、B、C。KV 池有 20 个块：
# 大约装得下两个提示词，装不下三个。用**第 3 阶段**的队列和释放顺序，第二轮的每个请求能命中多少个 token？

# %%
my_guess_4 = None  # your prediction: hit tokens per request in the second round
# zh: 你的预测：第二轮每个请求命中的 token 数

# %%
with demo("s06.suffix_positions", "s06.slot_mapping", "s06.write_kv", "s06.paged_attention", "s06.prefill"):
    rng = random.Random(3)
    systems = [[rng.randrange(cfg.vocab_size) for _ in range(32)] for _ in "ABC"]

    def second_round_hits(blocks):
        """Run A, B, C twice through an engine over ``blocks``; the second round's hit tokens.

        [zh]
        用基于 ``blocks`` 的引擎把 A、B、C 跑两轮；返回第二轮的命中 token 数。
        """
        engine = PagedPrefiller(model, blocks.num_blocks, blocks.block_size, blocks=blocks)
        hits = []
        for _ in range(2):
            for system in systems:
                _, ledger = engine.prefill(system + [rng.randrange(cfg.vocab_size) for _ in range(3)])
                hits.append(ledger["hit_tokens"])
        return hits[3:]

    stage3 = second_round_hits(BlockPool(20, 4))
    stage4 = second_round_hits(EvictionPool(20, 4))
    print(tr("second round, stage 3's order (FIFO queue, head first):", "第二轮，第 3 阶段的顺序（FIFO 队列，先释放头部）："),
          stage3)
    print(tr("second round, stage 4's order (LRU, keyless first, tail first):",
             "第二轮，第 4 阶段的顺序（LRU，无 key 的块优先复用，先释放尾块）："), stage4)
    reveal(my_guess_4, stage3[0], why("s06.my_guess_4"))

# %% quiz="questions"

# %% scoring="table"

# %%
if rows:
    p, measured, predicted = rows[-1].prefix, rows[-1].speedup, rows[-1].predicted
    print(tr(f"This stage measured: TTFT {measured:.1f}x faster with {p} cached tokens and a {question}-token question "
             f"(FLOP model: {predicted:.1f}x; {saved_total:.1%} of Qwen2.5-0.5B's prefill FLOPs saved at P = 4096, Q = 128).",
             f"本阶段测得：缓存 {p} 个 token、问题 {question} 个 token 时，TTFT 快 {measured:.1f} 倍"
             f"（FLOP 模型：{predicted:.1f} 倍；P = 4096、Q = 128 时 Qwen2.5-0.5B 的 prefill FLOPs 省下 {saved_total:.1%}）。"))
else:
    print(tr("Finish TODO 5 and run the TTFT cell to see what this stage measures.",
             "完成 TODO 5 并运行 TTFT 那个单元，就能看到本阶段测出的数字。"))

# %% [markdown] lang="en"
# ## Recap
# You built a prefill that reuses cached K/V: positions that continue after the hit, slots found through
# the block table, the new K/V written into the pool, paged attention with a causal mask shifted by the
# hit length, and a `prefill` that computes only the suffix and commits its full blocks. The one invariant:
# **a cached prefill gives exactly a full prefill's logits** (and greedy decoding the same tokens), for any
# hit, any block table, any device. The cell above prints what this stage measured: the TTFT speedup of a
# cached prefix on this machine, next to the FLOP model's prediction and the share of prefill work a
# 4,096-token prefix saves.
#
# ## Further reading
# - Kwon et al., *Efficient Memory Management for Large Language Model Serving with PagedAttention* (SOSP 2023):
#   the block tables and paged K/V pool this stage uses, and why paging makes sharing cheap.
# - vLLM documentation, *Automatic Prefix Caching* (design document): how a production engine hashes blocks,
#   shares them through block tables and evicts them, the same choices as stages 2–6.
# - Zheng et al., *SGLang: Efficient Execution of Structured Language Model Programs* (NeurIPS 2024):
#   RadixAttention, a token-granular prefix cache (stage 5) feeding the same kind of paged prefill.
# - Qin et al., *Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving* (FAST 2025):
#   what prefix caching buys at scale, and where the cache's K/V lives when GPU memory is not enough.
# - Su et al., *RoFormer: Enhanced Transformer with Rotary Position Embedding* (2021): why absolute
#   positions (TODO 1) decide the cached keys.
# - Ainslie et al., *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints*
#   (EMNLP 2023): the grouped-query heads of TODO 4, and why they shrink the K/V a cache has to keep.

# %% [markdown] lang="zh"
# ## 回顾
# 你实现了一个复用缓存 K/V 的 prefill：位置接在命中之后、通过块表找到槽位、把新的 K/V 写进 KV 池、
# 用按命中长度平移的因果掩码做 paged attention，以及只计算后缀并提交满块的 `prefill`。最重要的不变量：
# **带缓存的 prefill 与完整 prefill 的 logits 完全一致**（贪心解码生成的 token 也相同），不管命中多少、
# 块表如何、在什么设备上。上面的单元输出了本阶段测得的数字：这台机器上缓存前缀带来的 TTFT 加速比，
# 旁边是 FLOP 模型的预测，以及 4,096 个 token 的前缀能省下的 prefill 工作量占比。
#
# ## 延伸阅读
# - Kwon 等，*Efficient Memory Management for Large Language Model Serving with PagedAttention*（SOSP 2023）：
#   本阶段用到的块表和分页 KV 池，以及为什么分页让共享变得廉价。
# - vLLM 文档，*Automatic Prefix Caching*（设计文档）：生产级引擎如何对块做哈希、通过块表共享、如何淘汰，
#   和第 2–6 阶段的选择一一对应。
# - Zheng 等，*SGLang: Efficient Execution of Structured Language Model Programs*（NeurIPS 2024）：
#   RadixAttention，按 token 粒度组织的前缀缓存（第 5 阶段），后面接的也是这种分页 prefill。
# - Qin 等，*Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving*（FAST 2025）：
#   大规模部署下前缀缓存能带来什么，以及显存不够时缓存的 K/V 放在哪里。
# - Su 等，*RoFormer: Enhanced Transformer with Rotary Position Embedding*（2021）：为什么绝对位置（TODO 1）
#   决定了缓存的 key。
# - Ainslie 等，*GQA: Training Generalized Multi-Query Transformer Models from Multi-Head Checkpoints*
#   （EMNLP 2023）：TODO 4 里的分组查询头，以及它为什么能缩小缓存要保存的 K/V。
