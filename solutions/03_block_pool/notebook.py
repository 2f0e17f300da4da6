# %% [markdown] lang="en"
# # Stage 3 · Block pool and block tables
#
# **Goal:** give cached KV a physical home. A pool of `num_blocks` physical KV blocks is shared by
# all requests; each request gets a **block table** (its logical blocks → physical blocks); blocks
# with the same content are shared through their stage-2 keys and **reference counts**. A block
# nobody uses stays cached until the pool needs it for other content, and at that moment, not a
# moment later, its old key must stop hitting.
#
# ## Learning objectives
# After this stage you can:
# 1. explain how block tables let many requests read the same physical KV blocks, and why ref counts
#    make that sharing safe;
# 2. implement admission, commit and release over a block pool, registering a block's key only once
#    prefill has written its KV;
# 3. keep a freed block cached until it is reused, and drop its key exactly when its KV is
#    overwritten, so no request ever reads someone else's KV (a *stale hit*);
# 4. check capacity before changing anything, counting revived cache hits against the free blocks;
# 5. keep every operation's cost independent of the pool's size.
#
# ## Prerequisites
# - [Stage 2 · Chained block hashing](02_block_hash.ipynb): the keys this pool stores (`chain_keys`),
#   and why a block's key covers its whole prefix.
# - [Stage 1 · Prefix matching](01_prefix_match.ipynb): only a *leading* run of matching tokens can
#   reuse KV, and prefill must compute at least the last prompt token.
# - Python classes, dicts and lists.
#
# **Time:** about 60 min.

# %% [markdown] lang="zh"
# # 第 3 阶段 · 块池与块表
#
# **目标：** 给缓存下来的 KV 安一个实实在在的“家”。一个块池（block pool）里有 `num_blocks` 个物理块，
# 所有请求共用；每个请求有一张**块表**（block table），把它的逻辑块映射到物理块上；内容相同的块通过
# 第 2 阶段算出的块 key 和**引用计数**来共享。没人使用的块依然保留缓存，直到块池需要用它装别的内容；
# 就在那一刻（不能晚），它原来的 key 必须失效。
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 说清楚块表怎样让多个请求读取同一批物理 KV 块，以及为什么引用计数能让这种共享是安全的；
# 2. 在块池上实现接纳、提交和释放，并且只在 prefill 写好 KV 之后才登记块的 key；
# 3. 让被释放的块在被重新分配之前一直保持缓存，并在它的 KV 被覆盖的那一刻删掉它的 key，
#    保证任何请求都不会读到别人的 KV，即不会出现*过期命中*（stale hit）；
# 4. 在改动任何状态之前先检查容量，并把被重新启用的缓存命中块从空闲块里扣掉；
# 5. 让每个操作的代价都与块池的大小无关。
#
# ## 前置知识
# - [第 2 阶段 · 链式块哈希](02_block_hash.ipynb)：块池里存的 key（`chain_keys`）从哪来，以及为什么
#   一个块的 key 覆盖了它前面的整个前缀。
# - [第 1 阶段 · 前缀匹配](01_prefix_match.ipynb)：只有开头连续相同的 token 才能复用 KV，而且 prefill
#   至少要计算提示词的最后一个 token。
# - Python 的类、字典和列表。
#
# **用时：** 约 60 分钟。

# %% [markdown] lang="en"
# ### How this notebook works
# Run the setup cell first: besides the course helpers it imports stage 2's `chain_keys` and
# defines the classes this stage gives you: `Block`, the `FreeQueue` protocol and its simple
# implementation `SimpleFreeQueue`, `PoolFullError`, `Admission` and `RequestState`. Read them. The
# five TODOs are methods of `BlockPool`, in one code cell: replace each `raise NotImplementedError()`,
# re-run the cell, then run the `check(...)` cell of that TODO. Each TODO comment states its
# contract; `hint("s03.lookup")` (and so on) gives a hint, and calling it again gives the next,
# more concrete one. **Only the `BlockPool` cell and the quiz cell are graded** (everything else
# comes from the course when grading): keep any helper you write inside the class.
#
# | TODO | method | what it does |
# |---|---|---|
# | 1 | `lookup` | the cached blocks of a prompt's leading keys (at least one token left to compute) |
# | 2 | `allocate_block` | hand out a free block; a cached one forgets its old key |
# | 3 | `admit` | capacity check, take the hits, allocate fresh blocks |
# | 4 | `commit` | after prefill, register the request's new full blocks |
# | 5 | `release` | drop the request's references; unused blocks become free but stay cached |
# | 6 | `quiz` | the concept quiz at the end |

# %% [markdown] lang="zh"
# ### 这个笔记本怎么用
# 先运行设置单元：它除了导入课程的辅助工具，还会导入第 2 阶段的 `chain_keys`，并定义本阶段直接给你的
# 几个类：`Block`、`FreeQueue` 协议和它的简单实现 `SimpleFreeQueue`、`PoolFullError`、`Admission` 以及
# `RequestState`。请先读一遍。五个 TODO 都是 `BlockPool` 的方法，写在同一个代码单元里：把每个
# `raise NotImplementedError()` 换成你的代码，重新运行这个单元，再运行该 TODO 对应的 `check(...)` 单元。
# 每个 TODO 的注释写明了它的约定；卡住时调用 `hint("s03.lookup")`（其他 TODO 同理）看提示，再调用一次
# 会给出下一条更具体的提示。**只有 `BlockPool` 单元和小测单元会被评分**（评分时其余单元都用课程自带的
# 版本），所以你写的辅助函数请放在类里面。
#
# | TODO | 方法 | 作用 |
# |---|---|---|
# | 1 | `lookup` | 找出提示词开头各 key 对应的缓存块（至少留一个 token 去计算） |
# | 2 | `allocate_block` | 分配一个空闲块；如果它带着缓存，要忘掉原来的 key |
# | 3 | `admit` | 检查容量、拿下命中块、分配新块 |
# | 4 | `commit` | prefill 之后，登记请求新写的满块 |
# | 5 | `release` | 去掉请求的引用；不再被使用的块变为空闲，但仍然缓存着 |
# | 6 | `quiz` | 最后的概念小测 |

# %% setup="course"
from workbook.predictions import why

# %% given="Block,FreeQueue,SimpleFreeQueue,PoolFullError,Admission,RequestState"

# %% [markdown] lang="en"
# ## The life of a request
#
# ```text
#  admit ──► prefill (writes KV) ──► commit ──► decode ... ──► release
#  │                                 │                         │
#  hits: ref_count += 1              full blocks get keys      ref_count -= 1
#  rest: fresh blocks                (now others may hit)      0 → free queue, still cached
# ```
#
# * **Admission** computes the prompt's chained keys once (`keys_of`), finds the cached leading
#   blocks (`lookup`) and takes them: one more reference each. The rest of the prompt gets fresh
#   blocks. At least one prompt token is always computed, because prefill must produce the logits
#   of the last prompt token: a fully cached, block-aligned prompt recomputes its last block.
# * **Commit** comes after prefill has written the KV. Only then may the new full blocks be
#   registered under their keys in the pool's **cache map** `cached` (key → block): a hit must
#   never point at KV that has not been written yet. The keys were computed at admission and stored
#   in `RequestState`; nothing is hashed twice.
# * **Release** drops the request's references. A block whose ref count reaches 0 goes to the free
#   queue **with its key**: it is free, but still cached, and a later request can *revive* it with
#   a hit. Only when the free queue hands it out for other content (`allocate_block`) is its key
#   forgotten; a key left behind would let a later request read KV that was overwritten.
#
# **Capacity.** A hit on a *free* cached block takes that block out of the free queue. So if a
# request revives `r` free cached blocks and needs `n` fresh ones, it fits only when
# `n <= len(free_queue) - r`. When it does not fit, `admit` raises `PoolFullError` and changes
# nothing at all: check first, then mutate.
#
# **Invariants** (`BlockPool.violations()` lists the broken ones; the pictures below show them):
# free + in use = total; no ref count is negative; a block's ref count is the number of live block
# tables holding it, so a block in a live block table is never handed out again; a key points at
# exactly one block, and that block holds the key.
#
# **Cost.** A real pool holds 10⁵–10⁶ blocks and serves thousands of requests a second, so no
# operation may walk the pool or scan the cache map: `lookup` does one dict look-up per key,
# `allocate_block` pops the free queue and drops the block's *own* key, and `admit` counts free
# blocks by the queue's length (`num_in_use` walks every block: it is for pictures and invariants).
#
# Which free block is handed out next is the free queue's choice. Stage 3 uses first in, first
# out; stage 4 plugs LRU eviction and its policies in through the same `FreeQueue` protocol,
# without changing `BlockPool`.

# %% [markdown] lang="zh"
# ## 一个请求的一生
#
# ```text
#  接纳 ──► prefill（写入 KV）──► 提交 ──► decode ... ──► 释放
#  │                              │                       │
#  命中块：ref_count += 1         满块得到 key            ref_count -= 1
#  其余部分：分配新块             （其他请求从此能命中）  降到 0 → 进入空闲队列，仍然缓存着
# ```
#
# * **接纳**：先把提示词的链式 key 算一次（`keys_of`），找出开头连续命中的缓存块（`lookup`），
#   把它们拿下来，每个块的引用计数加 1。提示词剩下的部分分配新块。提示词至少有一个 token 要计算，
#   因为 prefill 必须产出最后一个提示词 token 的 logits：一个完全已缓存、长度又正好是块大小整数倍的
#   提示词，要重新计算它的最后一个块。
# * **提交**：发生在 prefill 把 KV 写好之后。只有到这时，新的满块才能以各自的 key 登记到块池的
#   **缓存表** `cached`（key → 块）里：命中绝不能指向还没写好的 KV。key 在接纳时已经算好并存在
#   `RequestState` 里，不会重复哈希。
# * **释放**：去掉请求持有的引用。引用计数降到 0 的块**带着它的 key** 进入空闲队列：它空闲了，但仍然
#   缓存着，之后的请求命中它就能把它*重新启用*（revive）。只有当空闲队列把它分配给别的内容时
#   （`allocate_block`），它的 key 才被删掉；如果旧 key 留在表里，之后的请求就会读到已经被覆盖的 KV。
#
# **容量。** 命中一个*空闲*的缓存块，会把它移出空闲队列。所以如果一个请求重新启用了 `r` 个空闲缓存块，
# 还需要 `n` 个新块，那么只有 `n <= len(free_queue) - r` 时才放得下。放不下时，`admit` 抛出
# `PoolFullError`，并且不改动任何状态：先检查，再修改。
#
# **不变量**（`BlockPool.violations()` 会列出被破坏的那些；下面的图也会显示）：空闲块数加使用中的块数
# 等于总块数；引用计数不为负；一个块的引用计数等于持有它的活跃块表个数，所以活跃块表里的块绝不会被
# 再次分配；一个 key 只指向一个块，并且那个块记着这个 key。
#
# **代价。** 真实的块池有 10⁵–10⁶ 个块，每秒要处理上千个请求，所以任何操作都不能遍历整个池或扫描
# 整张缓存表：`lookup` 每个 key 查一次字典；`allocate_block` 从空闲队列弹出一个块，只删掉这个块
# *自己*的 key；`admit` 用队列长度来数空闲块（`num_in_use` 会遍历所有块，只用于画图和检查不变量）。
#
# 下一个分配出去的是哪个空闲块，由空闲队列决定。第 3 阶段用先进先出；第 4 阶段会通过同一个
# `FreeQueue` 协议接入 LRU 淘汰及其策略，`BlockPool` 一行都不用改。

# %% solution="BlockPool"

# %% [markdown] lang="en"
# ### Check TODO 1 · `lookup`
# The cached blocks of the longest leading run of keys, never more than
# `(num_tokens - 1) // block_size` of them; `lookup` changes nothing. In the checks, `ids(blocks)`
# lists block ids.

# %% [markdown] lang="zh"
# ### 检查 TODO 1 · `lookup`
# 返回开头连续命中的那一段 key 对应的缓存块，最多 `(num_tokens - 1) // block_size` 个；`lookup`
# 不改动任何状态。检查里的 `ids(blocks)` 列出块的编号。

# %% check="s03.lookup"

# %% [markdown] lang="en"
# ### Check TODO 2 · `allocate_block`
# The next free block, now in use (one reference) and without a key; if it was cached, its key no
# longer hits. In the checks, `pool_state(pool)` summarises ref counts, the number of free blocks,
# and which blocks are cached or keyed; *stale hits* count hits on blocks whose KV was written for
# another prefix.

# %% [markdown] lang="zh"
# ### 检查 TODO 2 · `allocate_block`
# 交出下一个空闲块，它进入使用状态（一个引用）且不带 key；如果它原来缓存着内容，原来的 key 不能再命中。
# 检查里的 `pool_state(pool)` 汇总了各块的引用计数、空闲块数，以及哪些块在缓存表里、哪些块带 key；
# *stale hits*（过期命中）数的是命中了为别的前缀写入 KV 的块的次数。

# %% check="s03.allocate_block"

# %% [markdown] lang="en"
# ### Check TODO 3 · `admit`
# Hits first in the block table, then fresh blocks; refuse cleanly with `PoolFullError`; a revived
# block stays cached for the next request. In the checks, `admission(a)` shows an `Admission`'s
# fields, and a `-> ?` in the input means "the result, or the name of the exception raised".

# %% [markdown] lang="zh"
# ### 检查 TODO 3 · `admit`
# 块表里先是命中块，再是新块；放不下时干净地抛出 `PoolFullError`；被重新启用的块对下一个请求依然是
# 缓存着的。检查里的 `admission(a)` 显示 `Admission` 的各个字段；输入里的 `-> ?` 表示“结果，或者抛出
# 的异常名”。

# %% check="s03.admit"

# %% [markdown] lang="en"
# ### Check TODO 4 · `commit`
# Register each fresh full block unless its key is already cached (the first writer keeps it).

# %% [markdown] lang="zh"
# ### 检查 TODO 4 · `commit`
# 登记每个新写的满块，除非它的 key 已经在缓存表里（先登记的块保留这个 key）。

# %% check="s03.commit"

# %% [markdown] lang="en"
# ### Check TODO 5 · `release`
# One reference less per block; blocks that reach 0 are appended to the free queue, keys kept.

# %% [markdown] lang="zh"
# ### 检查 TODO 5 · `release`
# 每个块引用计数减 1；减到 0 的块追加到空闲队列，key 保留。

# %% check="s03.release"

# %% [markdown] lang="en"
# ## See it: block tables sharing physical blocks
#
# A 10-block pool with blocks of 4 tokens. Requests A, B and C share an 8-token system prompt (two
# blocks); A and C even have the same question. Each request row is its block table: a logical
# block points at the physical block that holds its KV. Physical blocks are coloured by state:
# **in use** (orange, with the ref count), **free but cached** (green: a hit revives it), **free
# and empty** (grey).
#
# ### Predict, then run
# A has committed its 11 tokens (two full blocks and a 3-token tail). C arrives with exactly the
# same 11 tokens. How many blocks does C hit?

# %% [markdown] lang="zh"
# ## 看一看：块表共享物理块
#
# 一个有 10 个块的池，每块 4 个 token。请求 A、B、C 共用一段 8 个 token 的 system prompt（系统提示词，
# 占两个块）；A 和 C 连问题都一样。每一行是一个请求的块表：每个逻辑块指向存放它 KV 的物理块。物理块
# 按状态着色：**使用中**（橙色，标出引用计数）、**空闲但缓存着**（绿色：命中就能重新启用）、
# **空闲且为空**（灰色）。
#
# ### 先预测，再运行
# A 已经提交了它的 11 个 token（两个满块加一个 3 个 token 的尾块）。C 带着一模一样的 11 个 token 到达。
# C 能命中几个块？

# %%
my_guess = None  # your prediction: a number
# zh: 你的预测：一个数

# %%
import matplotlib.pyplot as plt

# Block states and their colours; the legend's words come from tr() in draw_pool.
# zh: 块的状态和对应颜色；图例文字由 draw_pool 里的 tr() 给出。
COLORS = {"in use": "#f4a261", "free, cached": "#8ecf8e", "free, empty": "#e5e5e5"}


def state_labels() -> dict:
    """The legend's words for each block state, in the notebook's language.

    [zh]
    各个块状态在图例里的文字，用笔记本的语言。
    """
    return {"in use": tr("in use", "使用中"), "free, cached": tr("free, cached", "空闲·缓存着"),
            "free, empty": tr("free, empty", "空闲·空")}


def block_state(block) -> str:
    if block.ref_count > 0:
        return "in use"
    return "free, cached" if block.key is not None else "free, empty"


def draw_pool(pool, ax, title: str = "") -> None:
    """Block tables (top rows) pointing into the physical pool (bottom row).

    [zh]
    上面几行是各请求的块表，指向最下面一行的物理块。
    """
    ax.clear()
    n = pool.num_blocks
    for b in pool.blocks:
        ax.add_patch(plt.Rectangle((b.block_id, 0), 0.9, 0.9, color=COLORS[block_state(b)]))
        label = f"#{b.block_id}\nrc={b.ref_count}" + ("\nkey" if b.key is not None else "")
        ax.text(b.block_id + 0.45, 0.45, label, ha="center", va="center", fontsize=8)
    rows = list(pool.requests.items())
    for r, (rid, state) in enumerate(rows):
        y = 2.2 + 1.3 * r
        name = rid if state.committed else tr(f"{rid} (prefill)", f"{rid}（prefill 中）")
        ax.text(-0.3, y + 0.45, name, ha="right", va="center")
        for i, block in enumerate(state.blocks):
            hit = i < state.hit_blocks
            ax.add_patch(plt.Rectangle((i, y), 0.9, 0.9, fill=False, lw=2,
                                       ec="tab:green" if hit else "tab:blue"))
            ax.text(i + 0.45, y + 0.45, f"→#{block.block_id}", ha="center", va="center", fontsize=8)
            ax.plot([i + 0.45, block.block_id + 0.45], [y, 0.92], color="tab:green" if hit else "tab:blue",
                    lw=0.8, alpha=0.6)
    top = 2.2 + 1.3 * max(len(rows), 1)
    ax.set_xlim(-2.5, max(n, 4) + 0.2)
    ax.set_ylim(-0.3, top)
    ax.axis("off")
    free = len(pool.free_queue)
    verdict = tr("hold", "成立") if not pool.violations() else tr("BROKEN", "被破坏")
    ax.set_title(title + "\n" + tr(f"free {free} + in use {pool.num_in_use} = {free + pool.num_in_use} of {n}; "
                                   f"invariants {verdict}",
                                   f"空闲 {free} + 使用中 {pool.num_in_use} = {free + pool.num_in_use}（共 {n}）；"
                                   f"不变量{verdict}"), fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    handles += [plt.Rectangle((0, 0), 1, 1, fill=False, ec="tab:green", lw=2),
                plt.Rectangle((0, 0), 1, 1, fill=False, ec="tab:blue", lw=2)]
    ax.legend(handles, [*state_labels().values(), tr("hit (shared)", "命中（共享）"), tr("fresh", "新块")],
              loc="upper right", fontsize=7, ncol=5, bbox_to_anchor=(1.0, -0.02))


# An 8-token system prompt (2 full blocks) and two questions.
# zh: 一段 8 个 token 的 system prompt（2 个满块）和两个问题。
SYSTEM = list(range(100, 108))
QUESTION_1, QUESTION_2 = [1, 2, 3], [4, 5, 6, 7, 8]

with demo("s03.lookup", "s03.allocate_block", "s03.admit", "s03.commit"):
    pool = BlockPool(10, 4)
    pool.admit("A", SYSTEM + QUESTION_1)
    pool.commit("A")
    pool.admit("B", SYSTEM + QUESTION_2)
    c = pool.admit("C", SYSTEM + QUESTION_1)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    draw_pool(pool, ax, tr("A committed; B and C hit A's system-prompt blocks #0 and #1",
                           "A 已提交；B 和 C 命中了 A 的 system prompt 块 #0 和 #1"))
    plt.show()
    reveal(my_guess, c.hit_blocks, why("s03.my_guess"))

# %% [markdown] lang="en"
# B is still in prefill, so nothing of its own can be hit yet; C shares A's two full blocks and
# gets a fresh block for its tail, even though A's tail holds the same tokens.
#
# ## Step through it
#
# The stepper replays a scripted sequence one operation at a time (drag the slider or use the
# buttons). Watch for:
#
# * step 10: D needs six fresh blocks; the free queue hands out #3 among them, so B's third block is
#   overwritten and its key forgotten;
# * step 15: F has the same prompt as B but hits only the system prompt: B's third block is gone.
#
# ### Predict, then run
# At step 9 every request has been released. How many of the 10 blocks still hold a key (free, but
# cached)?

# %% [markdown] lang="zh"
# B 还在 prefill，它自己的块还不能被命中；C 共享了 A 的两个满块，尾块则分配了新块，哪怕 A 的尾块里
# 是同样的 token。
#
# ## 一步一步看
#
# 下面的步进器按脚本一次回放一个操作（拖动滑块或点按钮）。注意看：
#
# * 第 10 步：D 需要 6 个新块，空闲队列交出的块里有 #3，于是 B 的第三个块被覆盖，它的 key 也被删掉；
# * 第 15 步：F 的提示词和 B 一样，却只命中了 system prompt：B 的第三个块已经没了。
#
# ### 先预测，再运行
# 到第 9 步，所有请求都已释放。10 个块里还有几个带着 key（空闲，但仍然缓存着）？

# %%
my_guess_2 = None  # your prediction: a number
# zh: 你的预测：一个数

# %%
import ipywidgets as widgets
from IPython.display import clear_output, display

# An unrelated 24-token prompt: 6 blocks.
# zh: 一段无关的 24 个 token 的提示词：6 个块。
OTHER = list(range(200, 224))
SCRIPT = [
    ("admit", "A", SYSTEM + QUESTION_1),
    ("commit", "A", None),
    ("admit", "B", SYSTEM + QUESTION_2),
    ("admit", "C", SYSTEM + QUESTION_1),
    ("commit", "B", None),
    ("commit", "C", None),
    ("release", "A", None),
    ("release", "B", None),
    ("release", "C", None),
    ("admit", "D", OTHER),
    ("admit", "E", SYSTEM + [9] * 9),
    ("commit", "D", None),
    ("release", "D", None),
    ("admit", "E", SYSTEM + [9] * 9),
    ("admit", "F", SYSTEM + QUESTION_2),
    ("admit", "G", OTHER + [0, 0]),
]


def replay(steps: int):
    """A fresh pool with the first ``steps`` operations of SCRIPT applied; returns (pool, last message).

    [zh]
    一个新池，依次执行 SCRIPT 的前 ``steps`` 个操作；返回（池，最后一条说明）。
    """
    pool = BlockPool(10, 4)
    message = tr("an empty pool: every block is free", "空池：所有块都空闲")
    for op, rid, tokens in SCRIPT[:steps]:
        if op == "admit":
            try:
                a = pool.admit(rid, tokens)
                message = tr(f"admit {rid}: {len(tokens)} tokens, {a.hit_blocks} hit blocks, table {a.block_table}",
                             f"接纳 {rid}：{len(tokens)} 个 token，命中 {a.hit_blocks} 个块，块表 {a.block_table}")
            except PoolFullError:
                message = tr(f"admit {rid}: refused (PoolFullError), nothing changed",
                             f"接纳 {rid}：被拒绝（PoolFullError），状态没有任何改变")
        elif op == "commit":
            pool.commit(rid)
            message = tr(f"commit {rid}: its full blocks are registered under their keys",
                         f"提交 {rid}：它的满块以各自的 key 登记")
        else:
            pool.release(rid)
            message = tr(f"release {rid}: ref counts drop; blocks at 0 are free but keep their keys",
                         f"释放 {rid}：引用计数减少；降到 0 的块空闲了，但保留 key")
    return pool, message


slider = widgets.IntSlider(value=0, min=0, max=len(SCRIPT), description=tr("step", "步骤"))
back = widgets.Button(description=tr("◀ back", "◀ 上一步"))
forward = widgets.Button(description=tr("next ▶", "下一步 ▶"))
screen = widgets.Output()


def render(_=None) -> None:
    with screen:
        clear_output(wait=True)
        with demo("s03.lookup", "s03.allocate_block", "s03.admit", "s03.commit", "s03.release"):
            pool, message = replay(slider.value)
            fig, ax = plt.subplots(figsize=(9, 5))
            draw_pool(pool, ax, tr(f"step {slider.value}: {message}", f"第 {slider.value} 步：{message}"))
            plt.show()


back.on_click(lambda _: setattr(slider, "value", max(0, slider.value - 1)))
forward.on_click(lambda _: setattr(slider, "value", min(len(SCRIPT), slider.value + 1)))
slider.observe(render, names="value")
display(widgets.VBox([widgets.HBox([back, forward, slider]), screen]))
render()

with demo("s03.lookup", "s03.allocate_block", "s03.admit", "s03.commit", "s03.release"):
    after_9, _ = replay(9)
    reveal(my_guess_2, sum(b.key is not None for b in after_9.blocks), why("s03.my_guess_2"))

# %% [markdown] lang="en"
# ### Predict, then run: a full pool
# Step 11: E's prompt is the system prompt plus 9 more tokens (5 blocks). It would revive the two
# free cached blocks #0 and #1 and needs 3 fresh blocks. 4 blocks are free at that point, #0 and #1
# among them. Is E **A** admitted, or **B** refused?

# %% [markdown] lang="zh"
# ### 先预测，再运行：池满了
# 第 11 步：E 的提示词是 system prompt 再加 9 个 token（共 5 个块）。它会重新启用空闲的缓存块 #0 和 #1，
# 还需要 3 个新块。这时有 4 个空闲块，#0 和 #1 也在其中。E 是 **A** 被接纳，还是 **B** 被拒绝？

# %%
my_guess_3 = None  # your prediction: "A" or "B"
# zh: 你的预测："A" 或 "B"

# %%
with demo("s03.lookup", "s03.allocate_block", "s03.admit", "s03.commit", "s03.release"):
    before_11, _ = replay(10)
    state_before = [(b.ref_count, b.key) for b in before_11.blocks]
    try:
        before_11.admit("E", SYSTEM + [9] * 9)
        outcome = "A"
    except PoolFullError:
        outcome = "B"
    unchanged = state_before == [(b.ref_count, b.key) for b in before_11.blocks]
    print(tr(f"free blocks: {before_11.num_free}; pool unchanged after the attempt: {unchanged}",
             f"空闲块：{before_11.num_free} 个；尝试之后池的状态没变：{unchanged}"))
    reveal(my_guess_3, outcome, why("s03.my_guess_3"))

# %% [markdown] lang="en"
# No widgets where you run this (e.g. a plain script)? The same pictures for a few steps:

# %% [markdown] lang="zh"
# 运行环境不支持交互控件（比如普通脚本）？下面是其中几步的同样的图：

# %%
with demo("s03.lookup", "s03.allocate_block", "s03.admit", "s03.commit", "s03.release"):
    steps = (6, 9, 11, 15)
    replays = [replay(step) for step in steps]
    fig, axes = plt.subplots(2, 2, figsize=(14, 8.5))
    for ax, step, (pool, message) in zip(axes.flat, steps, replays):
        draw_pool(pool, ax, tr(f"step {step}: {message}", f"第 {step} 步：{message}"))
    plt.tight_layout()
    plt.show()

# %% [markdown] lang="en"
# ## The invariants under a random workload, and what the cache saves
#
# 400 random operations (admit, commit, release) over prompts that share heads, on a 24-block pool.
# After every operation `check_invariants()` runs; the picture shows how the pool is split between
# blocks in use, free cached blocks and free empty blocks. The top edge stays flat: free + in use is
# always the whole pool. The title gives the number this stage measures: the share of admitted
# prompt tokens whose KV came from the cache, so prefill skipped them.

# %% [markdown] lang="zh"
# ## 随机负载下的不变量，以及缓存省下了多少
#
# 在一个 24 块的池上，对开头相同的一批提示词做 400 次随机操作（接纳、提交、释放）。每次操作之后都
# 运行 `check_invariants()`；图里显示池中使用中、空闲但缓存着、空闲且为空三种块各有多少。最上沿一直
# 是平的：空闲块加使用中的块永远是整个池。标题给出本阶段测得的数字：被接纳的提示词 token 中，有多大
# 比例的 KV 来自缓存，因而跳过了 prefill。

# %%
import random


def random_workload(num_blocks: int, steps: int = 400, seed: int = 0):
    """Random admit / commit / release on a pool; checks the invariants after every operation.

    Returns the history of block states, the number of refused admissions, and the share of admitted
    prompt tokens that were cache hits.

    [zh]
    在池上随机地接纳、提交、释放；每次操作之后检查不变量。

    返回各块状态的历史、被拒绝的接纳次数，以及被接纳的提示词 token 中命中缓存的比例。
    """
    rng = random.Random(seed)
    pool = BlockPool(num_blocks, 4)
    heads = [SYSTEM, SYSTEM[:4] + [50, 51, 52, 53], list(range(300, 312))]
    live, pending, history = [], [], []
    refused = hit_tokens = prompt_tokens = 0
    for step in range(steps):
        roll = rng.random()
        if roll < 0.45 or not live:
            rid = f"r{step}"
            tokens = rng.choice(heads) + [rng.randrange(5) for _ in range(rng.randint(1, 9))]
            try:
                a = pool.admit(rid, tokens)
                live.append(rid)
                pending.append(rid)
                hit_tokens += a.hit_tokens
                prompt_tokens += len(tokens)
            except PoolFullError:
                refused += 1
        elif roll < 0.75 and pending:
            pool.commit(pending.pop(rng.randrange(len(pending))))
        else:
            rid = live.pop(rng.randrange(len(live)))
            if rid in pending:
                # Released before commit: an aborted request.
                # zh: 提交之前就释放：一个被中止的请求。
                pending.remove(rid)
            pool.release(rid)
        pool.check_invariants()
        states = [block_state(b) for b in pool.blocks]
        history.append([states.count(s) for s in COLORS])
    return history, refused, hit_tokens / prompt_tokens


with demo("s03.lookup", "s03.allocate_block", "s03.admit", "s03.commit", "s03.release"):
    history, refused, hit_share = random_workload(24)
    fig, ax = plt.subplots(figsize=(9, 3))
    ax.stackplot(range(len(history)), *zip(*history), labels=list(state_labels().values()),
                 colors=list(COLORS.values()))
    ax.set_xlabel(tr("operation", "操作序号"))
    ax.set_ylabel(tr("blocks", "块数"))
    ax.set_ylim(0, 25)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(tr(f"400 operations, invariants checked after each: all held; {refused} admissions refused cleanly; "
                    f"{hit_share:.0%} of prompt tokens hit the cache",
                    f"400 次操作，每次之后都检查不变量：全部成立；{refused} 次接纳被干净地拒绝；"
                    f"{hit_share:.0%} 的 prompt token 命中缓存"), fontsize=9)
    plt.show()

# %% [markdown] lang="en"
# ## When the pool is too small
#
# Prefix caching helps only while the blocks a workload comes back to (its *working set*) still
# hold their KV when the next request arrives. The same random workload on pools of different
# sizes: with too few blocks, cached blocks are handed out for other content before anyone hits
# them again, and the share of prompt tokens that skip prefill drops (stage 4 asks which blocks to
# give up first).

# %% [markdown] lang="zh"
# ## 池太小的时候
#
# 只有当负载反复用到的那些块（它的*工作集*）在下一个请求到来时仍然存着 KV，前缀缓存才有用。下面把
# 同样的随机负载放到不同大小的池上跑：块太少时，缓存块还没等到被再次命中，就被分配给了别的内容，
# 能跳过 prefill 的提示词 token 比例也随之下降（先放弃哪些块，是第 4 阶段的问题）。

# %%
with demo("s03.lookup", "s03.allocate_block", "s03.admit", "s03.commit", "s03.release"):
    sizes = [8, 12, 16, 24, 32, 48]
    shares = [random_workload(n)[2] for n in sizes]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(sizes, [100 * share for share in shares], marker="o")
    ax.set_xlabel(tr("pool size (blocks)", "池的大小（块数）"))
    ax.set_ylabel(tr("prompt tokens that hit (%)", "命中缓存的 prompt token（%）"))
    ax.set_ylim(0, 100)
    ax.set_title(tr("The same 400 operations on pools of different sizes", "同样的 400 次操作，放在不同大小的池上"))
    plt.show()

# %% [markdown] lang="en"
# ## What this stage leaves open
#
# `SimpleFreeQueue` hands out the block that has been free the longest, and `release` frees a
# request's blocks head first. Is that the block we should give up? Stage 4 makes the choice
# explicit: an O(1) LRU free queue (a doubly linked list through `Block.prev_free/next_free`),
# tail-first freeing, pinning and a minimum residence time, all plugged into this `BlockPool`
# through the `FreeQueue` protocol. The benchmark `python benchmarks/bench_block_pool.py` drives
# this pool with 10,000 requests as a scheduler does (look the prompt up, then admit it with the
# keys the lookup computed: `admit(rid, tokens, keys=keys)` hashes nothing twice) and compares the
# cycle with hashing alone.
#
# What a block pool does **not** change: decode still costs the same per output token, the fresh
# suffix still attends to the whole cached prefix, and a workload of unique prompts never hits.

# %% [markdown] lang="zh"
# ## 本阶段留下的问题
#
# `SimpleFreeQueue` 交出的是空闲最久的块，`release` 从块表头部开始释放。被放弃的真该是这个块吗？
# 第 4 阶段会把这个选择做成显式的：O(1) 的 LRU 空闲队列（通过 `Block.prev_free/next_free` 串成的
# 双向链表）、从尾块开始释放、固定（pinning）和最短驻留时间，全都通过 `FreeQueue` 协议接入这个
# `BlockPool`。基准测试 `python benchmarks/bench_block_pool.py` 像调度器那样用 10,000 个请求驱动
# 这个池（先查提示词，再把查询时算好的 key 交给 `admit`：`admit(rid, tokens, keys=keys)` 不会重复哈希），
# 并把整个流程和只做哈希的开销相比较。
#
# 块池**不会**改变的事：decode 每个输出 token 的开销照旧，新的后缀仍然要对整个缓存前缀做 attention，
# 而每个提示词都不一样的负载永远不会命中。

# %% quiz="questions"

# %% scoring="table"

# %% [markdown] lang="en"
# ## Recap
# You built a block pool: `lookup` finds the cached leading blocks, `admit` checks capacity and then
# shares hits and allocates fresh blocks, `commit` registers a request's blocks once prefill has
# written them, `release` frees blocks but keeps them cached, and `allocate_block` drops a block's
# old key exactly when its KV is about to be overwritten. The one invariant that matters: **a key
# points only at KV that was written for exactly that prefix** (never before commit, never after
# reuse), and a block in a live block table is never handed out. On the random workload above, about
# 60 % of all admitted prompt tokens on a 24-block pool skipped prefill (the plot's title shows the
# exact share), with every invariant checked after each of 400 operations; on an 8-block pool only
# about 40 % did.
#
# ## Further reading
# - Kwon et al., *Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   (SOSP 2023): where block tables, physical KV blocks and ref-counted sharing come from.
# - vLLM documentation, *Automatic Prefix Caching* (design docs): the hash-keyed block pool this
#   stage follows, with a free block queue that keeps cached blocks until they are evicted.
# - Zheng et al., *SGLang: Efficient Execution of Structured Language Model Programs* (NeurIPS 2024):
#   RadixAttention, the same sharing organised as a tree of token sequences (stage 5).
# - Qin et al., *Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture
#   for Serving LLM Chatbot* (FAST 2025): what a KV block pool looks like when it spans a cluster.

# %% [markdown] lang="zh"
# ## 回顾
# 你实现了一个块池：`lookup` 找出开头连续命中的缓存块；`admit` 先检查容量，再共享命中块、分配新块；
# `commit` 在 prefill 写好 KV 之后登记请求的块；`release` 释放块但让它们保持缓存；`allocate_block`
# 在块的 KV 即将被覆盖的那一刻删掉它原来的 key。最重要的不变量：**一个 key 只指向为恰好这个前缀写好的
# KV**（提交之前不行，被重新分配之后也不行），而且活跃块表里的块绝不会被分配出去。在上面的随机负载
# 中，24 块的池上被接纳的提示词 token 约有 60% 跳过了 prefill（那张图的标题给出了准确比例），400 次
# 操作中每一次之后都检查了所有不变量；换成 8 块的池，这个比例只有约 40%。
#
# ## 延伸阅读
# - Kwon 等，*Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   （SOSP 2023）：块表、物理 KV 块和基于引用计数的共享，都出自这里。
# - vLLM 文档，*Automatic Prefix Caching*（设计文档）：本阶段参照的以哈希为 key 的块池，其中的空闲块
#   队列会把缓存块一直保留到被淘汰为止。
# - Zheng 等，*SGLang: Efficient Execution of Structured Language Model Programs*（NeurIPS 2024）：
#   RadixAttention，把同样的共享组织成一棵 token 序列树（第 5 阶段）。
# - Qin 等，*Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for
#   Serving LLM Chatbot*（FAST 2025）：当 KV 块池扩展到整个集群时是什么样子。
