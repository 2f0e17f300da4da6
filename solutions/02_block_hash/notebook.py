# %% [markdown] lang="en"
# # Stage 2 · Chained block hashing
#
# **Goal:** give every *full block* of a prompt a key that names the whole prefix up to and
# including that block, so that a table from keys to KV blocks can tell, block by block, how much
# of a new prompt is already cached.
#
# ## Learning objectives
# After this stage you can:
# 1. cut a prompt into full blocks and explain why the partial tail is never cached;
# 2. compute a block key that is the same in every process (sha256 over an unambiguous encoding),
#    and say why Python's `hash()` cannot serve as a cache key;
# 3. chain the keys so that key *i* stands for the first *i + 1* blocks, and keep tenants or adapters
#    apart with tagged extra keys (salts);
# 4. find the longest run of leading cached blocks, at a cost that grows with the prompt, not the cache.
#
# ## Prerequisites
# Stage 1 ([01_prefix_match](01_prefix_match.ipynb)): only a run of equal tokens from position 0
# can be reused. Python bytes and `hashlib`. The [glossary](../docs/glossary.md) has the terms.
#
# **Time:** about 60 min.
#
# *How this notebook works.* Run the setup cell first: besides the course helpers it defines the
# small tools this stage gives you (`ROOT_SEED`, `frame`, `encode_tokens`, `normalize_extra_keys`);
# read them, you will use them. Each TODO is a function in its own code cell, and its TODO comment
# says what to write: replace `raise NotImplementedError()` with your code, re-run that cell, then
# run the `check(...)` cell below it. Stuck? `hint("s02.hash_block")` prints a hint; call it again
# for the next, more concrete one.
#
# | TODO | function | what it does |
# |---|---|---|
# | 1 | `split_blocks` | cut a prompt into full blocks of `block_size` tokens |
# | 2 | `hash_block` | the key of one block: sha256 of (parent key, tokens, extra keys) |
# | 3 | `chain_keys` | the keys of all full blocks of a prompt, each chained on the previous one |
# | 4 | `longest_cached_run` | how many leading keys a table holds |

# %% [markdown] lang="zh"
# # 第 2 阶段 · 链式块哈希
#
# **目标：** 给提示词的每个*满块*算一个 key，让它代表从开头一直到这个块为止的整个前缀。这样，一张从
# key 映射到 KV 块的表就能逐块告诉我们：新来的提示词有多少已经在缓存里了。
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 把提示词切成满块，并解释为什么未满的尾块永远不进缓存；
# 2. 算出在任何进程里都相同的块 key（对无歧义的编码做 sha256），并说明为什么 Python 的 `hash()`
#    不能用作缓存 key；
# 3. 把 key 串成链，让第 *i* 个 key 代表前 *i + 1* 个块；用带 kind 标签的附加 key（盐值）把不同租户
#    或不同适配器隔开；
# 4. 找出开头连续命中的最长块数，而且开销随提示词长度增长，而不是随缓存大小增长。
#
# ## 前置知识
# 第 1 阶段（[01_prefix_match](01_prefix_match.ipynb)）：只有从第 0 个位置开始连续相同的 token 才能复用。
# Python 的 bytes 和 `hashlib`。
#
# **用时：** 约 60 分钟。
#
# *怎么使用这个笔记本。* 先运行环境设置单元：除了课程的辅助工具，它还定义了本阶段直接提供给你的几个
# 小工具（`ROOT_SEED`、`frame`、`encode_tokens`、`normalize_extra_keys`），读一读，后面要用。
# 每个 TODO 是单独一个代码单元里的函数，TODO 注释说明要写什么：把 `raise NotImplementedError()`
# 换成你的代码，重新运行这个单元，再运行下面的 `check(...)` 单元。卡住了就调用
# `hint("s02.hash_block")` 看提示，再调用一次会给出下一条更具体的提示。
#
# | TODO | 函数 | 作用 |
# |---|---|---|
# | 1 | `split_blocks` | 把提示词切成每块 `block_size` 个 token 的满块 |
# | 2 | `hash_block` | 一个块的 key：对（父 key, token, 附加 key）做 sha256 |
# | 3 | `chain_keys` | 提示词所有满块的 key，每个都接在前一个之后 |
# | 4 | `longest_cached_run` | 表里有开头连续的几个 key |

# %% setup="course"
from workbook.predictions import why
from autograder.textwidth import pad

# %% given="ROOT_SEED,MAX_TOKEN_ID,_TOKEN_STRUCTS,frame,encode_tokens,normalize_extra_keys"

# %% [markdown] lang="en"
# ## Blocks: the unit of reuse
#
# Stage 1 matched whole registered prefixes. A serving engine stores KV in fixed-size **blocks**
# of `block_size` tokens (16 is common) and reuses it block by block. Only **full** blocks are
# shared: the last, partial block of a prompt is still being filled (the next generated tokens go
# there), so its content is not final and it must never be found by another request.
#
# A prompt of 10 tokens with `block_size = 4` has two full blocks, `[t0..t3]` and `[t4..t7]`; the
# tail `[t8, t9]` is never cached.

# %% [markdown] lang="zh"
# ## 块：复用的单位
#
# 第 1 阶段匹配的是完整的已登记前缀。推理服务引擎则把 KV 存在固定大小的**块**里，每块 `block_size`
# 个 token（常见取值是 16），并且按块复用。只有**满块**才能共享：提示词最后那个不满的块还在被填写
# （接下来生成的 token 会写进去），内容还不是最终结果，绝不能让别的请求找到它。
#
# 一个 10 个 token 的提示词，`block_size = 4` 时有两个满块 `[t0..t3]` 和 `[t4..t7]`；尾块
# `[t8, t9]` 永远不进缓存。

# %% solution="split_blocks"

# %% check="s02.split_blocks"

# %% [markdown] lang="en"
# ## The key of one block
#
# The KV of a token depends on every token before it. So the key of block *i* must cover the whole
# prefix, not just the block's own tokens. Hashing the prefix from scratch for every block would
# cost O(n²); instead each key digests **its parent's key** (the key of block *i − 1*) together
# with its own tokens. Block 0 has no parent: a configurable **root seed** stands in (change it
# per model or deployment, and their caches can never collide).
#
# Three more rules make the key safe to use as the name of a cache entry:
#
# 1. **A real cryptographic hash** (`hashlib.sha256`), over a **canonical byte encoding**:
#    `frame(x)` prefixes each field with its length, so that no two different inputs give the same
#    bytes, and `encode_tokens` writes each token id as 4 little-endian bytes (compact, the same on
#    every machine, and without the ambiguity of text: the digits of `[1, 23]` and `[12, 3]` read
#    the same).
# 2. **Never Python's `hash()`.** Its value for `str` and `bytes` changes from process to process
#    (`PYTHONHASHSEED`), it has only 64 bits, and collisions are easy to construct. A cache whose
#    keys outlive one process (several workers, a restart, a KV store shared between servers) needs
#    the same key everywhere.
# 3. **Extra keys, tagged by kind.** Two tenants must not share KV (a timing side channel can
#    reveal what another tenant's prompt contained), and KV computed under a LoRA adapter is not the
#    KV of the base model. Such context enters the key as `(kind, value)` pairs, e.g.
#    `("salt", "tenant-42")` or `("lora", "sql-adapter")`. The kind is digested too, so a salt "X"
#    and an adapter "X" never share a block. `normalize_extra_keys` (given) sorts the pairs and
#    drops empty values: an empty salt behaves exactly as no salt.
#
# The digested bytes are `frame(parent or root_seed) + frame(encode_tokens(tokens))`, followed by
# `frame(kind) + frame(value)` (UTF-8) for each normalized extra key. Every input of the key is part
# of it: if you ever remember keys between calls, remember them under all of their inputs.
#
# ### Predict, then run
# The next cell starts two Python processes with different `PYTHONHASHSEED` values and hashes the
# same text, `'What is 2+2?'`, in each, with `hash()` and with sha256. Does `hash()` give the same
# value in both processes? Write `True` or `False`.

# %% [markdown] lang="zh"
# ## 一个块的 key
#
# 一个 token 的 KV 取决于它前面的所有 token。所以第 *i* 块的 key 必须覆盖整个前缀，而不只是本块的
# token。如果每一块都从头对整个前缀做哈希，开销是 O(n²)；更好的做法是让每个 key 把**父 key**（第
# *i − 1* 块的 key）和本块的 token 一起摘要。第 0 块没有父 key，由一个可配置的**根种子**代替（按模型
# 或部署换一个根种子，它们的缓存就永远不会撞到一起）。
#
# 还有三条规则，保证这个 key 能安全地用作缓存条目的名字：
#
# 1. **用真正的密码学哈希**（`hashlib.sha256`），作用在**规范的字节编码**上：`frame(x)` 给每个字段
#    加上长度前缀，这样两个不同的输入永远不会得到相同的字节；`encode_tokens` 把每个 token id 写成
#    4 个小端字节（紧凑、在任何机器上都一样，而且没有文本的歧义：`[1, 23]` 和 `[12, 3]` 的数字连起来
#    是一样的）。
# 2. **绝不用 Python 的 `hash()`。** 它对 `str` 和 `bytes` 的取值每个进程都不一样（`PYTHONHASHSEED`），
#    只有 64 位，而且很容易构造碰撞。只要缓存的 key 比单个进程活得久（多个 worker、重启、多台服务器
#    共享的 KV 存储），就需要在所有地方都相同的 key。
# 3. **附加 key 带上 kind 标签。** 两个租户不能共享 KV（计时侧信道可能泄露另一个租户的提示词内容），
#    在 LoRA 适配器下算出的 KV 也不是基座模型的 KV。这类上下文以 `(kind, value)` 对的形式进入 key，
#    比如 `("salt", "tenant-42")` 或 `("lora", "sql-adapter")`。kind 也要摘要进去，这样盐值 "X" 和
#    适配器 "X" 永远不会共享块。给定的 `normalize_extra_keys` 会把这些对排序，并去掉空值：空盐值和
#    没有盐值完全一样。
#
# 参与摘要的字节是 `frame(parent or root_seed) + frame(encode_tokens(tokens))`，后面再跟上每个规范化后
# 附加 key 的 `frame(kind) + frame(value)`（UTF-8 编码）。key 的每一项输入都是它的一部分：如果你想在
# 多次调用之间记住 key，就必须按它的全部输入来记。
#
# ### 先预测，再运行
# 下一个单元会启动两个 Python 进程，它们的 `PYTHONHASHSEED` 不同；每个进程都对同一段文本
# `'What is 2+2?'` 分别做 `hash()` 和 sha256。`hash()` 在两个进程里的结果相同吗？写下 `True` 或 `False`。

# %%
# your prediction: True or False
# zh: 你的预测：True 或 False
my_guess = None

# %%
import os
import subprocess
import sys

probe = (
    "import hashlib\n"
    "text = 'What is 2+2?'\n"
    "print(hash(text), hash(text.encode()), hash((87, 104, 97, 116)), "
    "hashlib.sha256(text.encode()).hexdigest()[:16])"
)
runs = {}
for seed in ("1", "2"):
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    runs[seed] = out.stdout.split()
print(f"{'PYTHONHASHSEED':>15} {'hash(str)':>21} {'hash(bytes)':>21} {pad(tr('hash(tuple of ints)', 'hash(整数元组)'), 21, '>')} {'sha256':>17}")
for seed, values in runs.items():
    print(f"{seed:>15} " + " ".join(f"{v:>21}" for v in values[:3]) + f" {values[3]:>17}")
print("hash(-1) == hash(-2):", hash(-1) == hash(-2),
      tr(" <- CPython's C API uses -1 to signal an error, so hash(-1) is made -2: hash() promises no uniqueness",
         " <- CPython 的 C 接口用 -1 表示出错，所以 hash(-1) 被改成了 -2：hash() 从不保证互不相同"))
reveal(my_guess, runs["1"][0] == runs["2"][0], why("s02.my_guess"))

# %% [markdown] lang="en"
# `hash()` of the text changes with the process; sha256 does not. (CPython happens not to salt
# the hash of small integers and tuples of them, but that is an implementation detail, and any
# extra key such as a salt is a string.)

# %% [markdown] lang="zh"
# 文本的 `hash()` 随进程变化，sha256 不会。（CPython 恰好不给小整数及其元组的哈希加盐，但这只是实现
# 细节；而且盐值这类附加 key 都是字符串。）

# %% solution="hash_block"

# %% check="s02.hash_block"

# %% [markdown] lang="en"
# The same block under different extra keys, and two checks of the rules above:

# %% [markdown] lang="zh"
# 同一个块配上不同的附加 key，以及对上面几条规则的两个验证：

# %%
with demo("s02.hash_block"):
    rows = {
        tr("no extra keys", "没有附加 key"): None,
        tr("salt 'X'", "盐值 'X'"): [("salt", "X")],
        tr("adapter 'X'", "适配器 'X'"): [("lora", "X")],
        tr("empty salt ''", "空盐值 ''"): [("salt", "")],
        tr("salt 'X' + adapter 'A'", "盐值 'X' + 适配器 'A'"): [("salt", "X"), ("lora", "A")],
        tr("adapter 'A' + salt 'X'", "适配器 'A' + 盐值 'X'"): [("lora", "A"), ("salt", "X")],
    }
    for name, extra in rows.items():
        print(f"{pad(name, 24)} {hash_block(None, [1, 2, 3, 4], extra).hex()[:16]}")
    print()
    print(tr("salt 'X' vs adapter 'X' differ:", "盐值 'X' 与适配器 'X' 不同："),
          hash_block(None, [1, 2], [("salt", "X")]) != hash_block(None, [1, 2], [("lora", "X")]))
    print(tr("empty salt == no salt:", "空盐值 == 没有盐值："),
          hash_block(None, [1, 2], [("salt", "")]) == hash_block(None, [1, 2]))
    print(tr("[1, 23] vs [12, 3] differ:", "[1, 23] 与 [12, 3] 不同："),
          hash_block(None, [1, 23]) != hash_block(None, [12, 3]))

# %% [markdown] lang="en"
# ## Chaining the keys of a prompt
#
# `chain_keys` walks the full blocks in order; each key becomes the parent of the next. The last
# key therefore stands for the whole prefix: two prompts share key *i* exactly when their first
# `(i + 1) * block_size` tokens (and extra keys, and root seed) are equal.

# %% [markdown] lang="zh"
# ## 把提示词的 key 串成链
#
# `chain_keys` 按顺序遍历各个满块，每个 key 都成为下一块的父 key。因此最后一个 key 代表整个前缀：
# 两个提示词的第 *i* 个 key 相同，当且仅当它们的前 `(i + 1) * block_size` 个 token（以及附加 key 和
# 根种子）都相同。

# %% solution="chain_keys"

# %% check="s02.chain_keys"

# %% [markdown] lang="en"
# ### Same tokens, different keys
#
# Take the two prompts *"The capital of France is Paris. What is 2+2?"* and *"…Spain…"*, with a
# toy byte-level tokenizer (`list(text.encode())`, one token per byte). "France" is one byte longer
# than "Spain", so the shared ending lines up block for block only with one-token blocks
# (`block_size = 1`). Every block of the ending " is Paris. What is 2+2?" holds the *same* token in
# both prompts.
#
# ### Predict, then run
# Do the two prompts' *last* blocks (the `?`) get the same key? Write `True` or `False`.

# %% [markdown] lang="zh"
# ### token 相同，key 不同
#
# 取两个提示词 *"The capital of France is Paris. What is 2+2?"* 和 *"…Spain…"*，用一个按字节切分的
# 玩具分词器（`list(text.encode())`，每个字节一个 token）。"France" 比 "Spain" 多一个字节，所以只有在
# 单 token 块（`block_size = 1`）时，两者共同的结尾才能逐块对齐。结尾 " is Paris. What is 2+2?" 的
# 每一块在两个提示词里都是*同一个* token。
#
# ### 先预测，再运行
# 两个提示词的*最后*一块（那个 `?`）会得到相同的 key 吗？写下 `True` 或 `False`。

# %%
# your prediction: True or False
# zh: 你的预测：True 或 False
my_guess_2 = None

# %%
def byte_tokens(text: str) -> list[int]:
    return list(text.encode())


france = byte_tokens("The capital of France is Paris. What is 2+2?")
spain = byte_tokens("The capital of Spain is Paris. What is 2+2?")
with demo("s02.split_blocks", "s02.hash_block", "s02.chain_keys"):
    kf, ks = chain_keys(france, 1), chain_keys(spain, 1)
    print(f"{pad(tr('block', '块'), 6, '>')} {'token':>6} {pad(tr('France key', 'France 的 key'), 12, '>')} "
          f"{pad(tr('Spain key', 'Spain 的 key'), 12, '>')} {pad(tr('block alone (no parent)', '单独哈希（无父 key）'), 24, '>')}")
    for back in range(6, 0, -1):
        tok = france[-back]
        alone = hash_block(None, [tok]).hex()[:8]
        print(f"{len(france) - back:>6} {chr(tok)!r:>6} {kf[-back].hex()[:8]:>12} {ks[-back].hex()[:8]:>12} "
              f"{pad(alone + tr(' (both)', '（两者相同）'), 24, '>')}")
    reveal(my_guess_2, kf[-1] == ks[-1], why("s02.my_guess_2"))

# %% [markdown] lang="en"
# ### One token early changes every later key
#
# Change a single token of block 0 and compare block by block: the tokens of every later block are
# still equal, but no key is. The top row compares tokens, the bottom row keys.

# %% [markdown] lang="zh"
# ### 前面改一个 token，后面的 key 全变
#
# 改动第 0 块里的一个 token，再逐块比较：之后每一块的 token 仍然相同，但没有一个 key 相同。上面一行比较
# token，下面一行比较 key。

# %%
import matplotlib.pyplot as plt

with demo("s02.split_blocks", "s02.hash_block", "s02.chain_keys"):
    # 32 tokens = 8 blocks of 4
    # zh: 32 个 token = 8 个块，每块 4 个
    base = list(range(100, 132))
    # one token of block 0 changed
    # zh: 只改了第 0 块的一个 token
    edited = [7] + base[1:]
    ka, kb = chain_keys(base, 4), chain_keys(edited, 4)
    same_tokens = [a == b for a, b in zip(split_blocks(base, 4), split_blocks(edited, 4))]
    same_keys = [a == b for a, b in zip(ka, kb)]
    fig, ax = plt.subplots(figsize=(8, 1.8))
    for row, flags in enumerate([same_tokens, same_keys]):
        for i, same in enumerate(flags):
            ax.add_patch(plt.Rectangle((i, 1 - row), 0.95, 0.9, color="tab:green" if same else "tab:red"))
            ax.text(i + 0.47, 1.45 - row, "=" if same else "≠", ha="center", va="center", color="white")
    ax.set_xlim(0, len(ka))
    ax.set_ylim(0, 2)
    ax.set_yticks([1.45, 0.45], [tr("tokens", "token"), tr("keys", "key")])
    ax.set_xticks([i + 0.47 for i in range(len(ka))], [tr(f"block {i}", f"第 {i} 块") for i in range(len(ka))])
    ax.set_title(tr("prompt vs. the same prompt with token 0 changed", "原提示词 vs. 改了第 0 个 token 的提示词"))
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    plt.show()
    print(tr("equal token blocks:", "token 相同的块："), sum(same_tokens), "/", len(same_tokens),
          tr("| equal keys:", "| key 相同的块："), sum(same_keys), "/", len(same_keys))

# %% [markdown] lang="en"
# ## Looking a prompt up
#
# A cache is now a table `key -> physical block`. For a new prompt we compute its keys and walk
# them from the start: the hit is the **longest run of leading keys** in the table. Stop at the
# first miss, even if a later key is in the table (a cache can give up block *i* and keep block
# *i + 1*): prefill computes one contiguous run of tokens, from the first uncached token to the
# end of the prompt, so a cached block after a miss would sit inside that run.
#
# This lookup runs for every request, against a table of possibly millions of blocks: its cost must
# grow with the keys it looks at, never with the size of the table.

# %% [markdown] lang="zh"
# ## 查找一个提示词
#
# 现在缓存就是一张 `key -> 物理块` 的表。对一个新提示词，我们算出它的 key，从头往后走：命中的部分是
# 表里**开头连续存在的最长一串 key**。遇到第一个未命中就停下，即使后面某个 key 还在表里（缓存可能丢掉了
# 第 *i* 块却留着第 *i + 1* 块）：prefill 计算的是一段连续的 token，从第一个未缓存的 token 到提示词末尾，
# 未命中之后的已缓存块正落在这段里。
#
# 每个请求都要做一次这样的查找，而表里可能有上百万个块：它的开销必须随它查看的 key 数增长，绝不能随表的
# 大小增长。

# %% solution="longest_cached_run"

# %% check="s02.longest_cached_run"

# %% [markdown] lang="en"
# `lookup` (given) puts the pieces together and answers in blocks and tokens. Note what a hit
# never covers: the partial tail, anything after the first differing block, and anything under
# other extra keys.
#
# ### Predict, then run
# The table below holds the blocks of one request: a 45-token system prompt followed by "Hi!"
# (block size 8, no salt). Another tenant sends the same system prompt with its own salt
# `("salt", "tenant-b")`. How many of its blocks hit? Write a number.

# %% [markdown] lang="zh"
# 给定的 `lookup` 把这些部分组合起来，以块数和 token 数给出答案。注意命中永远覆盖不到的部分：未满的尾块、
# 第一个不同的块之后的所有内容，以及附加 key 不同的一切。
#
# ### 先预测，再运行
# 下面的表里存着一个请求的各个块：45 个 token 的 system prompt 后面跟着 "Hi!"（块大小为 8，没有盐值）。
# 另一个租户带着自己的盐值 `("salt", "tenant-b")` 发来同样的 system prompt。它有几个块命中？写下一个数。

# %% given="lookup"

# %%
# your prediction: a number of blocks
# zh: 你的预测：命中的块数
my_guess_3 = None

# %%
with demo("s02.split_blocks", "s02.hash_block", "s02.chain_keys", "s02.longest_cached_run"):
    # 45 bytes
    # zh: 45 个字节
    system = byte_tokens("You are a helpful assistant. Answer briefly. ")
    table = {key: f"block #{i}" for i, key in enumerate(chain_keys(system + byte_tokens("Hi!"), 8))}
    prompts = {
        tr("same system prompt", "同样的 system prompt"): (system + byte_tokens("What is 2+2?"), None),
        tr("one word changed", "改了一个词"): (byte_tokens("You are a helpful assistant. Answer fully.  ") + byte_tokens("Hi"), None),
        tr("same, other tenant", "同样的内容，另一个租户"): (system + byte_tokens("What is 2+2?"), [("salt", "tenant-b")]),
        tr("shorter than a block", "比一个块还短"): (byte_tokens("You are"), None),
    }
    results = {}
    for name, (prompt, extra) in prompts.items():
        blocks, tokens = lookup(prompt, 8, table, extra)
        results[name] = blocks
        print(f"{pad(name, 22)} {len(prompt):>3} " + tr(f"tokens -> {blocks} cached blocks = {tokens} tokens reused",
                                                   f"个 token -> 命中 {blocks} 个块 = 复用 {tokens} 个 token"))
    reveal(my_guess_3, results[tr("same, other tenant", "同样的内容，另一个租户")], why("s02.my_guess_3"))

# %% [markdown] lang="en"
# ## What this stage does not do yet
#
# The table here maps keys to labels. Stage 3 makes them physical KV blocks with reference counts,
# decides when a block may be registered (only after its KV was written) and what happens to a
# block nobody uses any more; stage 4 decides which cached block to give up when memory runs out.

# %% [markdown] lang="zh"
# ## 本阶段还没做的事
#
# 这里的表只是把 key 映射到标签。第 3 阶段把它们变成带引用计数的物理 KV 块，决定一个块什么时候可以登记
# （只有在它的 KV 写完之后），以及没人再用的块怎么处理；第 4 阶段决定显存不够时先放弃哪个已缓存的块。

# %% quiz="questions"

# %% scoring="table"

# %% [markdown] lang="en"
# ## Recap
# You built the naming scheme of a block cache: `split_blocks` (full blocks only), `hash_block`
# (sha256 over the framed parent key or root seed, token ids and tagged extra keys), `chain_keys`
# (each key on the one before) and `longest_cached_run` (leading hits, one lookup per key).
#
# The one invariant: **key *i* of two prompts is equal exactly when their first *i + 1* blocks,
# their extra keys and their root seed are equal.** Everything else follows from it: a changed
# token changes every later key, a salt keeps tenants apart, and the tail never gets a key.
#
# What it measured: the France and Spain prompts share their last 23 tokens and 0 of the keys of
# those blocks; one changed token in block 0 left 7 of 8 token blocks equal and 0 of 8 keys; the
# same 45-token system prompt gave 5 cached blocks (40 tokens) to the same tenant and 0 to another.
#
# ## Further reading
# - vLLM, *Automatic Prefix Caching* (design document, docs.vllm.ai/en/latest/design/prefix_caching/):
#   a production block hash made of the parent hash, the block's tokens and extra hashes (LoRA,
#   multimodal inputs, cache salt), the same structure as `hash_block`.
# - Kwon et al., *Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   (SOSP 2023): why KV is stored in fixed-size blocks at all, which makes blocks the unit of reuse.
# - Wu et al., *I Know What You Asked: Prompt Leakage via KV-Cache Sharing in Multi-Tenant LLM
#   Serving* (NDSS 2025): what a shared prefix cache leaks between tenants, the reason for salts
#   (stage 8 measures it).
# - Crosby and Wallach, *Denial of Service via Algorithmic Complexity Attacks* (USENIX Security 2003):
#   why Python salts `hash()` per process, and why a cache key must be a cryptographic hash.

# %% [markdown] lang="zh"
# ## 回顾
# 你实现了块缓存的命名方案：`split_blocks`（只要满块）、`hash_block`（对加了长度帧的父 key 或根种子、
# token id 和带 kind 标签的附加 key 做 sha256）、`chain_keys`（每个 key 接在前一个之后）和
# `longest_cached_run`（开头连续的命中，每个 key 查一次）。
#
# 最重要的不变量：**两个提示词的第 *i* 个 key 相等，当且仅当它们的前 *i + 1* 个块、附加 key 和根种子都
# 相同。** 其余的都由它推出：改一个 token，之后的 key 全变；盐值把租户隔开；尾块永远没有 key。
#
# 本阶段测得的数字：France 和 Spain 两个提示词最后 23 个 token 相同，而这些块的 key 没有一个相同；
# 在第 0 块改一个 token 后，8 个块里 token 相同的有 7 个，key 相同的是 0 个；同一段 45 个 token 的
# system prompt，同一个租户命中 5 个块（40 个 token），另一个租户命中 0 个。
#
# ## 延伸阅读
# - vLLM，*Automatic Prefix Caching* 设计文档（docs.vllm.ai/en/latest/design/prefix_caching/）：生产环境里的
#   块哈希由父哈希、本块 token 和附加哈希（LoRA、多模态输入、缓存盐值）组成，和 `hash_block` 的结构一样。
# - Kwon 等，*Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   （SOSP 2023）：KV 为什么要存在固定大小的块里，块也因此成了复用的单位。
# - Wu 等，*I Know What You Asked: Prompt Leakage via KV-Cache Sharing in Multi-Tenant LLM Serving*
#   （NDSS 2025）：共享的前缀缓存会在租户之间泄露什么，这正是要加盐值的原因（第 8 阶段会实测）。
# - Crosby 与 Wallach，*Denial of Service via Algorithmic Complexity Attacks*（USENIX Security 2003）：
#   Python 为什么要给每个进程的 `hash()` 加盐，以及缓存 key 为什么必须用密码学哈希。
