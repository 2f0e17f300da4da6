# %% [markdown] lang="en"
# # Stage 4 · Eviction: LRU, pinning and residence
#
# **Goal:** when the KV pool is full, decide *which* cached block to overwrite. You build the free
# queue production engines use (an LRU list with O(1) operations, threaded through the blocks
# themselves), plug it into stage 3's `BlockPool`, add two policies that protect blocks (pinning and
# a minimum residence time), and measure all of them on synthetic traffic and on real request traces,
# against the best any policy could do.
#
# ## Learning objectives
# After this stage you can:
# 1. implement an LRU free queue whose append, pop and remove-from-the-middle all take O(1), using a
#    doubly linked list with sentinels;
# 2. explain why a finished request must free its blocks tail first, and what "prefix-closed" means
#    for a prefix cache;
# 3. protect blocks with pinning and a minimum residence time by holding references, and say when
#    each one helps and when it hurts;
# 4. read a hit-rate curve against Belady's offline bound and tell how much a better policy could
#    still win on a workload.
#
# ## Prerequisites
# - [Stage 3 · Block pool](03_block_pool.ipynb): `BlockPool`, reference counts, the free queue, and
#   why free blocks keep their keys.
# - [Stage 2 · Chained block hashing](02_block_hash.ipynb): a block's key names its whole prefix, so
#   a hit needs every block before it.
# - Python: classes and a little pointer thinking (a doubly linked list).
#
# **Time:** about 75 min.
#
# *How this notebook works.* Run the setup cell first. Each TODO sits inside the code cell of a class:
# replace `raise NotImplementedError()` with your code, re-run that cell, then run the `check(...)`
# cell below it. A check prints ✅ or ❌ per case, with the input, expected and actual values and a
# hint; if a failure really comes from an earlier TODO, it says which one to fix first. Stuck? Call
# `hint("s04.append")` (any TODO id): each call shows the next of three hints. Only the cells with
# TODOs are graded, so keep any helper you write inside them; stage 3's pool (`BlockPool`, `Block`,
# `PoolFullError`), the trace tools and the simulator (`simulate_with`, `belady`, `Policy`) are given
# and imported by the setup cell.

# %% [markdown] lang="zh"
# # 第 4 阶段 · 缓存淘汰：LRU、固定与最短驻留
#
# **目标：** KV 块池满了以后，决定*该覆盖哪一个*缓存块。你会实现生产级推理引擎使用的那种空闲队列
# （一个各项操作都是 O(1) 的 LRU 链表，直接穿过块本身），把它接进第 3 阶段的 `BlockPool`，再加上两种
# 保护块的策略——固定（pinning）和最短驻留时间，最后在合成流量和真实请求 trace（请求轨迹）上测量它们，
# 并和理论上任何策略能达到的最好结果做对比。
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 用带哨兵的双向链表实现一个 LRU 空闲队列，让追加、弹出和从中间移除都是 O(1)；
# 2. 解释为什么请求结束时必须从尾部开始释放块，以及对前缀缓存来说“前缀封闭”是什么意思；
# 3. 通过持有引用来实现固定和最短驻留时间，并说清楚它们各自什么时候有用、什么时候反而有害；
# 4. 把命中率曲线和 Belady 离线上界放在一起读，判断在某种负载下更好的策略还能多赢多少。
#
# ## 前置知识
# - [第 3 阶段 · 块池](03_block_pool.ipynb)：`BlockPool`、引用计数、空闲队列，以及空闲块为什么要保留自己的 key。
# - [第 2 阶段 · 链式块哈希](02_block_hash.ipynb)：块的 key 代表它的整个前缀，所以要命中一个块，它前面的每一块都必须命中。
# - Python：类，以及一点点指针思维（双向链表）。
#
# **用时：** 约 75 分钟。
#
# *这个笔记本怎么用。* 先运行 setup 单元。每个 TODO 都在某个类的代码单元里：把 `raise NotImplementedError()`
# 换成你的代码，重新运行那个单元，再运行它下面的 `check(...)` 单元。检查会对每个用例打印 ✅ 或 ❌，附上输入、
# 期望值、实际值和一条提示；如果失败其实是前面某个 TODO 造成的，它会直接告诉你先去修哪一个。卡住了就调用
# `hint("s04.append")`（换成任意 TODO 的编号），每调用一次给出下一条提示，一共三条。只有含 TODO 的单元会被评分，
# 所以你写的辅助函数都要放在这些单元里。第 3 阶段的块池（`BlockPool`、`Block`、`PoolFullError`）、trace 工具和
# 模拟器（`simulate_with`、`belady`、`Policy`）都是给定的，setup 单元已经导入好了。

# %% setup="course"
from workbook.predictions import why
from autograder.textwidth import pad

# %% [markdown] lang="en"
# ## Where eviction happens
#
# In stage 3 a block whose `ref_count` drops to 0 is not wiped: it keeps its key and waits in the
# pool's **free queue**, so that a later request with the same prefix can still hit it. When a request
# needs a fresh block, `allocate_block` takes `free_queue.popleft()`; if that block still held cached
# content, its key is dropped and **the old key stops hitting**. So *which* block `popleft` returns is
# the eviction policy, and only blocks with `ref_count == 0` can ever be evicted: blocks in use are
# not in the queue at all.
#
# Stage 3's `SimpleFreeQueue` is first in, first out. A cache wants **least recently used** (LRU): a
# block that was just used is likely to be used again. Three operations must be cheap, because they
# run for every block of every request:
#
# | operation | when | LRU meaning |
# |---|---|---|
# | `append(block)` | a block's ref count dropped to 0 | it is now the *most* recently used free block |
# | `popleft()` | the pool needs a block for new content | hand out the *least* recently used one |
# | `remove(block)` | a free cached block got a hit | take it out, from wherever it is |
#
# `remove` is the catch: a hit can land anywhere in the queue. `list.remove` or `deque.remove` search
# for the block, O(n) per hit, and a pool holds 10⁵–10⁶ blocks. The fix (vLLM's free block queue does
# the same) is a **doubly linked list threaded through the blocks themselves**: each `Block` has
# `prev_free`/`next_free` slots, so a block knows its neighbours and unlinks itself in O(1). Three
# sentinel blocks (id −1, owned by no pool) mark the ends and a middle point:
#
# ```
# head ⇄ [blocks without a key, oldest first] ⇄ mid ⇄ [cached blocks, LRU … MRU] ⇄ tail
# ```
#
# A block **without a key** (a partial tail, or a duplicate that could not register) holds nothing
# anyone can hit, so it is reused before any cached block: it goes before `mid`. Because every real
# block has a neighbour on both sides, linking and unlinking never test for the ends of the list: the
# given helpers `_link_before(node, block)` and `_unlink(block)` do all the pointer work. Your three
# TODOs decide *where* a block goes and keep the length right.

# %% [markdown] lang="zh"
# ## 淘汰发生在哪里
#
# 在第 3 阶段里，`ref_count` 降到 0 的块并不会被清空：它保留着自己的 key，在块池的**空闲队列**里等待，
# 这样之后有相同前缀的请求仍然可以命中它。当某个请求需要新块时，`allocate_block` 调用 `free_queue.popleft()`
# 拿一个块；如果这个块里还缓存着内容，它的 key 会被删掉，**旧 key 从此不再命中**。所以 `popleft` 交出*哪一个*块，
# 就是淘汰策略本身；而且只有 `ref_count == 0` 的块才可能被淘汰——正在使用的块根本不在队列里。
#
# 第 3 阶段的 `SimpleFreeQueue` 是先进先出。缓存想要的是**最近最少使用**（LRU）：刚被用过的块，很可能马上又会被用到。
# 有三个操作必须很便宜，因为每个请求的每个块都要走一遍：
#
# | 操作 | 什么时候调用 | 在 LRU 里的含义 |
# |---|---|---|
# | `append(block)` | 块的引用计数降到 0 | 它成为*最近*使用过的空闲块 |
# | `popleft()` | 块池需要一个块来装新内容 | 交出*最久*没用过的那个 |
# | `remove(block)` | 一个空闲的缓存块被命中 | 不管它在哪里，都把它取出来 |
#
# 难点在 `remove`：命中可能落在队列的任何位置。`list.remove` 或 `deque.remove` 都要先把这个块找出来，每次命中
# 都是 O(n)，而一个块池有 10⁵–10⁶ 个块。解决办法（vLLM 的空闲块队列也是这么做的）是一条**直接穿过块本身的双向链表**：
# 每个 `Block` 都有 `prev_free`/`next_free` 两个字段，块知道自己的邻居，O(1) 就能把自己摘下来。
# 另有三个哨兵块（id 为 −1，不属于任何块池）标出两端和中间的分界：
#
# ```
# head ⇄ [没有 key 的块，先来的在前] ⇄ mid ⇄ [缓存块，LRU … MRU] ⇄ tail
# ```
#
# **没有 key** 的块（未满的尾块，或者因为内容重复而没能登记的块）里没有任何可以命中的东西，所以它要先于所有缓存块
# 被复用：它排在 `mid` 前面。因为每个真实的块两边都有邻居，插入和摘除时都不用判断是否到了链表两端：给定的辅助方法
# `_link_before(node, block)` 和 `_unlink(block)` 负责所有指针操作。你的三个 TODO 决定块*放在哪里*，并维护好长度。

# %% solution="LRUFreeQueue"

# %% [markdown] lang="en"
# ### Check TODO 1 · `append`
# Cached blocks join before the tail sentinel, keyless ones before the mid sentinel; the length counts them.

# %% [markdown] lang="zh"
# ### 检查 TODO 1 · `append`
# 缓存块接在 `tail` 哨兵前面，无 key 的块接在 `mid` 哨兵前面；长度要把它们都算上。

# %% check="s04.append"

# %% [markdown] lang="en"
# ### Check TODO 2 · `popleft`
# The first block after the head, stepping over the mid sentinel: keyless blocks first, then the least
# recently used.

# %% [markdown] lang="zh"
# ### 检查 TODO 2 · `popleft`
# 取 head 之后的第一个块，遇到 mid 哨兵就跳过：先出无 key 的块，再出最久未使用的缓存块。

# %% check="s04.popleft"

# %% [markdown] lang="en"
# ### Check TODO 3 · `remove`
# A hit on a free block takes it out in O(1); a block that is not in the queue raises `ValueError`. The
# last check runs a request, a second one that revives its free blocks, and a third that must still hit.
#
# In a check's input, `run(pool, rid, tokens)` admits, commits and releases one request and returns how
# many blocks it hit, and `clock` is a fake clock whose time `clock.t` the check sets; both live in
# `autograder/checks/s04.py`, which you may read.

# %% [markdown] lang="zh"
# ### 检查 TODO 3 · `remove`
# 命中空闲块时 O(1) 地把它取出；不在队列里的块要抛出 `ValueError`。最后一个检查先运行一个请求，再运行一个
# 重新启用它那些空闲块的请求，第三个请求必须仍然能命中。
#
# 检查的输入里，`run(pool, rid, tokens)` 表示对一个请求依次执行接纳、提交和释放，并返回它命中的块数；`clock`
# 是一个假时钟，由检查来设置它的时间 `clock.t`。两者都定义在 `autograder/checks/s04.py` 里，可以随时打开看。

# %% check="s04.remove"

# %% [markdown] lang="en"
# ### See it: the cost of a hit on a free block
# The same workload, a hit somewhere in the middle of the free queue followed by the block's release,
# on your linked list and on a `deque`. The linked list does the same few steps at any pool size
# (its time still varies with the machine's load, and creeps up once the blocks outgrow the CPU's
# caches); `deque.remove` walks through half the queue to find the block, so its time grows with
# the queue. The line under the table says how the two grew in this run.

# %% [markdown] lang="zh"
# ### 动手看：命中一个空闲块要花多少时间
# 同样的负载——命中空闲队列中间的某个块，然后再释放它——分别跑在你的链表和 `deque` 上。不管块池多大，链表做的
# 都是同样几步（耗时仍会随机器负载波动，块多到装不进 CPU 缓存之后也会有所上升）；`deque.remove` 要走过半个队列才能
# 找到那个块，所以耗时随队列一起增长。表格下面那一行给出这次运行里两者各增长了多少。

# %%
import random
import time
from collections import deque


def cost_per_hit_us(make_queue, n, hits=200):
    """Microseconds per hit-and-release on a queue of ``n`` free cached blocks.

    [zh]
    在有 ``n`` 个空闲缓存块的队列上，每次“命中再释放”花费的微秒数。
    """
    blocks = [Block(i, key=b"k%d" % i) for i in range(n)]
    q = make_queue()
    for b in blocks:
        q.append(b)
    rng = random.Random(0)
    middle = [blocks[rng.randrange(n // 4, 3 * n // 4)] for _ in range(hits)]
    t0 = time.perf_counter()
    for b in middle:
        q.remove(b)
        q.append(b)
    return (time.perf_counter() - t0) / hits * 1e6


with demo("s04.append", "s04.remove"):
    print(f"{pad(tr('free blocks', '空闲块数'), 12, '>')} {'LRUFreeQueue':>14} {'deque':>12}")
    hit_us = {}
    for n in (1_000, 10_000, 100_000):
        hit_us[n] = cost_per_hit_us(LRUFreeQueue, n), cost_per_hit_us(deque, n)
        print(f"{n:>12} {hit_us[n][0]:>11.2f} us {hit_us[n][1]:>9.2f} us")
    (linked_small, deque_small), (linked_big, deque_big) = hit_us[1_000], hit_us[100_000]
    print(tr(f"from 1,000 to 100,000 free blocks: your linked list {linked_big / linked_small:.1f}x, deque.remove "
             f"{deque_big / deque_small:.0f}x; at 100,000, deque.remove costs {deque_big / linked_big:,.0f}x more per hit",
             f"从 1,000 到 100,000 个空闲块：你的链表变成 {linked_big / linked_small:.1f} 倍，deque.remove 变成 "
             f"{deque_big / deque_small:.0f} 倍；在 100,000 个时，deque.remove 每次命中贵 {deque_big / linked_big:,.0f} 倍"))

# %% [markdown] lang="en"
# ## A pool that evicts well
#
# `EvictionPool` is stage 3's `BlockPool` with your `LRUFreeQueue` plugged in, plus three things.
#
# **Release order (TODO 4).** When a request ends, its blocks are handed to the queue **from the tail
# of its block table to its head**. The queue then holds the prompt's first block as the most recent
# and its last block as the least recent, so LRU evicts a prompt from its end. That keeps the cache
# **prefix-closed**: whenever a block is cached, so is every block before it. Freed head first, LRU
# would evict the shared system prompt first and keep the private tails hanging off it, which can
# never hit again: a hit needs the whole prefix (stage 2's `longest_cached_run`).
#
# **Pinning (TODO 5).** Some prefixes are worth keeping no matter what: a system prompt every request
# starts with, the hottest RAG documents. A *pin* holds one extra reference on the block, so the pool's
# own rule ("only `ref_count == 0` blocks are evicted") protects it, and a free block that gets pinned
# must leave the free queue. Pins are capped (`max_pinned < num_blocks`): without a cap, pinning every
# hot block could leave no block to serve new requests.
#
# **Minimum residence time (TODO 6).** A block that a request has just computed is held (again by one
# extra reference) until `min_residence` seconds have passed, so that a burst of one-off requests
# cannot flush it before it had a chance to be reused. Time comes from an injectable `clock`, so tests
# and trace replays control it. `expire()` runs at the start of every `admit`.
#
# The extra references are recorded as pseudo-requests (`#pinned`, `#young:<n>`), so stage 3's
# invariant "`ref_count` = number of block tables holding the block" and `violations()` still hold.

# %% [markdown] lang="zh"
# ## 一个会“挑着淘汰”的块池
#
# `EvictionPool` 就是第 3 阶段的 `BlockPool` 换上你的 `LRUFreeQueue`，再加三样东西。
#
# **释放顺序（TODO 4）。** 请求结束时，它的块**从块表的尾部到头部**依次交给队列。于是在队列里，提示词的第一块是
# 最近使用的，最后一块是最久未使用的，LRU 就会从提示词的末尾开始淘汰。这样缓存始终是**前缀封闭**的：只要一个块
# 还在缓存里，它前面的每一块也都在。如果从头部开始释放，LRU 会先淘汰大家共享的 system prompt（系统提示词），
# 留下挂在它后面的那些私有尾块——而这些尾块再也不可能命中，因为命中需要完整的前缀（第 2 阶段的 `longest_cached_run`）。
#
# **固定（TODO 5）。** 有些前缀无论如何都值得留着：每个请求都以它开头的 system prompt，最热门的 RAG 文档。
# *固定*就是给块多加一个引用，这样块池自己的规则（“只淘汰 `ref_count == 0` 的块”）就会保护它；一个空闲块被固定时，
# 必须离开空闲队列。固定的数量有上限（`max_pinned < num_blocks`）：没有上限的话，把热点块全部固定之后，
# 可能就没有块可以服务新请求了。
#
# **最短驻留时间（TODO 6）。** 请求刚算出来的块会被持有（同样是多加一个引用），直到过了 `min_residence` 秒，
# 这样一阵一次性的请求就没法在它有机会被复用之前把它冲掉。时间来自可注入的 `clock`，测试和 trace 回放都能控制它。
# 每次 `admit` 一开始都会调用 `expire()`。
#
# 这些额外的引用都记在伪请求名下（`#pinned`、`#young:<n>`），所以第 3 阶段的不变量“`ref_count` 等于持有这个块的
# 块表个数”以及 `violations()` 依然成立。

# %% solution="EvictionPool"

# %% [markdown] lang="en"
# ### Check TODO 4 · `release_blocks`
# One reference less on each block, tail first; a block whose count reaches 0 joins the free queue.

# %% [markdown] lang="zh"
# ### 检查 TODO 4 · `release_blocks`
# 每个块少一个引用，从尾部开始；计数降到 0 的块进入空闲队列。

# %% check="s04.release_blocks"

# %% [markdown] lang="en"
# ### Check TODO 5 · `pin`
# At the cap: `False`, nothing changes. Otherwise: out of the free queue if it was free, one more
# reference, recorded in the pinned set and for the `#pinned` pseudo-request.

# %% [markdown] lang="zh"
# ### 检查 TODO 5 · `pin`
# 达到上限：返回 `False`，什么都不改。否则：如果块是空闲的就先离开空闲队列，再多加一个引用，
# 并记到已固定集合和 `#pinned` 伪请求名下。

# %% check="s04.pin"

# %% [markdown] lang="en"
# ### Check TODO 6 · `expire`
# A hold registered at time `t` ends once the pool's clock shows `t + min_residence` or later, oldest first.

# %% [markdown] lang="zh"
# ### 检查 TODO 6 · `expire`
# 在时刻 `t` 登记的持有，等块池的时钟走到 `t + min_residence` 或更晚时结束，按先后顺序逐个结束。

# %% check="s04.expire"

# %% [markdown] lang="en"
# ### Predict, then run: prefix-closed or not
# A request "system prompt (4 blocks) + question *a* (2 blocks)" ran in a pool of 8 blocks and
# finished; then a request needs 4 fresh blocks, so 2 cached blocks must go. Afterwards a request
# "system prompt + question *b*" arrives. Freed tail first, LRU evicts question *a*, and the new
# request hits the whole system prompt: 4 blocks. **If the pool had freed the first request head
# first, how many blocks would "system prompt + b" hit?**

# %% [markdown] lang="zh"
# ### 先预测，再运行：前缀封闭与否
# 在一个有 8 个块的块池里，请求“system prompt（4 块）+ 问题 *a*（2 块）”运行完毕；接着另一个请求需要 4 个新块，
# 于是必须淘汰 2 个缓存块。之后来了一个请求“system prompt + 问题 *b*”。从尾部释放时，LRU 淘汰的是问题 *a*，
# 新请求命中整个 system prompt：4 块。**如果块池当初是从头部开始释放第一个请求的，“system prompt + b”能命中几块？**

# %%
my_guess = None  # your prediction: a number of blocks
# zh: 你的预测：命中的块数

# %%
class HeadFirstPool(EvictionPool):
    """The wrong order, for comparison: free the block table from its head.

    [zh]
    错误的顺序，用来对比：从块表的头部开始释放。
    """

    def release_blocks(self, blocks):
        for block in blocks:
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)


def hits_after_eviction(pool_cls):
    """Run the scenario above on a pool of class ``pool_cls``; what survives and what hits.

    [zh]
    在 ``pool_cls`` 类型的块池上运行上面的场景；返回留下了什么、能命中多少。
    """
    system, a, b = [1, 2, 3, 4], [10, 11], [20, 21]
    pool = pool_cls(8, 1)
    pool.admit("a", system + a)
    pool.commit("a")
    pool.release("a")
    # 2 free keyless blocks + 2 evictions
    # zh: 2 个空闲的无 key 块 + 2 次淘汰
    pool.admit("new", [90, 91, 92, 93])
    marks = "".join("█" if pool.is_cached(k) else "·" for k in pool.keys_of(system + a))
    return marks, len(pool.lookup(pool.keys_of(system + b), len(system + b)))


with demo("s04.append", "s04.popleft", "s04.remove", "s04.release_blocks", "s04.pin", "s04.expire"):
    for pool_cls in (EvictionPool, HeadFirstPool):
        marks, hits = hits_after_eviction(pool_cls)
        print(tr(f"{pool_cls.__name__:>13}: system + a is now {marks}; 'system + b' hits {hits} blocks",
                 f"{pool_cls.__name__:>13}：system + a 现在是 {marks}；“system + b” 命中 {hits} 块"))
    print(tr("(█ cached, · evicted)", "（█ 仍在缓存，· 已淘汰）"))
    reveal(my_guess, hits_after_eviction(HeadFirstPool)[1], why("s04.my_guess"))

# %% [markdown] lang="en"
# ## Measuring policies on traffic
#
# The simulator (`simulate_with`, given) replays a trace one request at a time through *your* pool:
# admit, commit, release, with the pool's clock set to each request's arrival time. A trace request is
# a list of **chained block ids** (equal ids = equal prefix), so no hashing is needed and long traces
# replay in seconds. It reports the **block hit rate** (hit blocks / all blocks), the **token hit rate**
# (weighted by the tokens each block holds) and the **prefix hit rate** (requests that reused at least
# one block). Policies:
#
# - **LRU**: your queue, nothing protected;
# - **LRU + pinning**: a block is pinned, prefix first, once requests have used it twice, until a
#   quarter of the pool is pinned (an online "pin the hottest prefixes");
# - **LRU + min residence**: newly computed blocks are held for a few seconds of trace time; a request
#   that cannot get blocks because everything is held or pinned is **rejected** (counted as misses);
# - **Belady**: the offline optimum. Knowing the future, evict the block whose next use is farthest
#   away (or do not cache the new block at all if it is needed even later). No policy can beat it; the
#   gap between a curve and Belady is what a smarter policy could still win.
#
# Synthetic traffic first: one long system prompt, RAG with documents of Zipf popularity, interleaved
# multi-turn chats, and 40 tenants' system prompts visited round-robin (32 blocks each, 1,280 blocks in
# all, plus the questions).
#
# ### Predict, then run: a working set a little larger than the cache
# **With 1,200 blocks, nearly room for all 40 tenants' prompts, what block hit rate does plain LRU get
# on the round-robin traffic?** Write a number between 0 and 1.

# %% [markdown] lang="zh"
# ## 在流量上测量各种策略
#
# 模拟器（`simulate_with`，给定代码）把一条 trace 逐个请求地回放到*你的*块池里：接纳、提交、释放，块池的时钟设为
# 每个请求的到达时刻。trace 里的请求是一串**链式块 id**（id 相同就是前缀相同），所以不需要再算哈希，很长的 trace
# 几秒钟就能回放完。它报告三种命中率：**块命中率**（命中块数 / 总块数）、**token 命中率**（按每块装的 token 数加权）
# 和**前缀命中率**（至少复用了一个块的请求所占的比例）。参与比较的策略：
#
# - **LRU**：你的队列，不保护任何块；
# - **LRU + 固定**：一个块被请求用过两次之后就固定它（从前缀开始固定），直到固定的块占满块池的四分之一——一种在线的
#   “固定最热门前缀”做法；
# - **LRU + 最短驻留**：新算出来的块要在 trace 时间里被持有几秒；如果所有块都被持有或固定、请求拿不到块，
#   它就会被**拒绝**（按未命中计）；
# - **Belady**：离线最优。它知道未来，淘汰下一次使用离现在最远的块（如果新块的下一次使用比它们都远，干脆不缓存新块）。
#   没有任何策略能超过它；一条曲线和 Belady 之间的差距，就是更聪明的策略还有机会赢回来的部分。
#
# 先看合成流量：一个很长的 system prompt；带 Zipf 热度分布文档的 RAG；交错进行的多轮对话；还有 40 个租户的 system prompt
# 轮流访问（每个 32 块，一共 1,280 块，另加各自的问题）。
#
# ### 先预测，再运行：工作集比缓存稍大一点
# **缓存有 1,200 个块，差不多能装下全部 40 个租户的提示词。在轮流访问的流量上，普通 LRU 的块命中率是多少？**
# 写一个 0 到 1 之间的数。

# %%
my_guess_2 = None  # your prediction: a hit rate between 0 and 1
# zh: 你的预测：0 到 1 之间的命中率

# %%
import matplotlib.pyplot as plt

from autograder.plots import log_axis
from workbook.traces import (load_mooncake, multiturn_traffic, rag_traffic, system_prompt_traffic,
                              thrashing_traffic, trace_stats)

# How each policy is drawn, and its label in the notebook's language.
# zh: 每种策略的画法，以及它在当前语言下的图例文字。
POLICIES = {
    "lru": ("-o", tr("LRU", "LRU")),
    "pin": ("-s", tr("LRU + pinning", "LRU + 固定")),
    "res": ("-^", tr("LRU + min residence", "LRU + 最短驻留")),
    "belady": ("k--", tr("Belady (offline bound)", "Belady（离线上界）")),
}


def hit_rate_curves(trace, capacities, *, pin_fraction=0.25, residence_s=5.0):
    """Block hit rate of each policy at each capacity (in blocks).

    [zh]
    每种策略在每个容量（以块计）下的块命中率。
    """
    curves = {name: [] for name in POLICIES}
    for cap in capacities:
        policies = {
            "lru": LRU,
            "pin": Policy("pin", max_pinned=int(cap * pin_fraction)),
            "res": Policy("residence", min_residence=residence_s),
        }
        for name, policy in policies.items():
            curves[name].append(simulate_with(trace, cap, policy, pool_cls=EvictionPool).block_hit_rate)
        curves["belady"].append(belady(trace, cap).block_hit_rate)
    return curves


def plot_curves(ax, capacities, curves, title):
    for name, ys in curves.items():
        style, label = POLICIES[name]
        ax.plot(capacities, ys, style, label=label, markersize=4)
    log_axis(ax, "x")
    ax.set_ylim(0, 1)
    ax.set_xlabel(tr("cache capacity (blocks)", "缓存容量（块）"))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


workloads = {
    tr("one long system prompt", "一个很长的 system prompt"): system_prompt_traffic(250, seed=0),
    tr("RAG (Zipf documents)", "RAG（Zipf 分布的文档）"): rag_traffic(600, seed=0),
    tr("multi-turn chats", "多轮对话"): multiturn_traffic(120, seed=0),
    tr("40 system prompts, round-robin", "40 个 system prompt 轮流访问"): thrashing_traffic(600, seed=0),
}
capacities = [75, 150, 300, 600, 1200]
with demo("s04.append", "s04.popleft", "s04.remove", "s04.release_blocks", "s04.pin", "s04.expire"):
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), sharey=True)
    all_curves = {}
    for ax, (name, trace) in zip(axes, workloads.items()):
        all_curves[name] = hit_rate_curves(trace, capacities)
        plot_curves(ax, capacities, all_curves[name], name)
    axes[0].set_ylabel(tr("block hit rate", "块命中率"))
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    plt.show()
    loop = all_curves[list(workloads)[-1]]
    reveal(my_guess_2, loop["lru"][-1], why("s04.my_guess_2", belady=loop["belady"][-1]), within=0.05,
           bounds=(0, 1))

# %% [markdown] lang="en"
# ## Real traffic: the Mooncake traces
#
# Moonshot AI released request traces of their Kimi service with the Mooncake paper: for every request
# its arrival time, its length and its prompt as **chained hashes of 512-token blocks**, exactly the form
# our simulator replays. The *conversation* trace has 12,031 requests; the *synthetic* one (3,993
# requests) mixes ShareGPT, L-Eval and LooGLE prompts. To keep this notebook fast we replay their first
# 4,000 requests at three capacities (the whole conversation trace, three times as long, takes about
# three times as long per replay; `benchmarks/bench_traces.py` times it). Capacities are fractions of
# the distinct blocks in the replayed part, and the residence time is 60 s of trace time.
#
# *Data: Mooncake FAST'25 traces, Apache-2.0, from github.com/kvcache-ai/Mooncake. Qin et al.,
# "Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving LLM
# Chatbot", USENIX FAST 2025. See `data/README.md`.*
#
# ### Predict, then run: pinning and the distance to the bound
# Look at the smallest capacity, 2% of the distinct blocks, on the *conversation* trace.
# 1. **Will pinning raise or lower the hit rate there?** A: raise it by more than one point;
#    B: keep it within one point; C: lower it by more than one point.
# 2. **How far is LRU from Belady there?** Write LRU's hit rate as a fraction of Belady's (1 would be
#    optimal).

# %% [markdown] lang="zh"
# ## 真实流量：Mooncake trace
#
# 月之暗面（Moonshot AI）随 Mooncake 论文公开了 Kimi 服务的请求 trace：每个请求的到达时间、长度，以及用
# **512 token 一块的链式哈希**表示的提示词——正好是我们的模拟器回放的格式。*conversation* trace 有 12,031 个请求；
# *synthetic* trace（3,993 个请求）混合了 ShareGPT、L-Eval 和 LooGLE 的提示词。为了让笔记本跑得快，我们只回放各自的
# 前 4,000 个请求，并且只取三个容量（完整的 conversation trace 长三倍，每次回放也要多花大约三倍的时间；
# `benchmarks/bench_traces.py` 给它计了时）。容量按回放部分里
# 不同块数的比例来取，驻留时间是 trace 时间里的 60 秒。
#
# *数据：Mooncake FAST'25 traces，Apache-2.0 许可，来自 github.com/kvcache-ai/Mooncake。Qin 等，
# “Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving LLM Chatbot”，
# USENIX FAST 2025。详见 `data/README.md`。*
#
# ### 先预测，再运行：固定的效果，以及离上界有多远
# 看 *conversation* trace 上最小的容量，也就是不同块数的 2%。
# 1. **在那里，固定会提高还是降低命中率？** A：提高一个百分点以上；B：变化不超过一个百分点；C：降低一个百分点以上。
# 2. **在那里，LRU 离 Belady 有多远？** 用 LRU 的命中率占 Belady 命中率的比例来回答（1 表示已经最优）。

# %%
# your prediction: "A", "B" or "C"
# zh: 你的预测：填 "A"、"B" 或 "C"
my_guess_3 = None
# your prediction: LRU's hit rate as a fraction of Belady's (a number)
# zh: 你的预测：LRU 命中率占 Belady 命中率的比例（一个数）
my_guess_4 = None

# %%
with demo("s04.append", "s04.popleft", "s04.remove", "s04.release_blocks", "s04.pin", "s04.expire"):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    mooncake = {}
    for ax, name in zip(axes, ("conversation", "synthetic")):
        trace = load_mooncake(name, limit=4000)
        stats = trace_stats(trace)
        caps = [int(stats["distinct_blocks"] * f) for f in (0.02, 0.1, 0.4)]
        mooncake[name] = curves = hit_rate_curves(trace, caps, residence_s=60.0)
        plot_curves(ax, caps, curves, tr(f"Mooncake {name} ({stats['requests']} requests)",
                                         f"Mooncake {name}（{stats['requests']} 个请求）"))
        ax.axhline(stats["infinite_cache_block_hit_rate"], color="grey", lw=0.8, ls=":",
                   label=tr("infinite cache", "无限大缓存"))
        print(tr(f"{name}: {stats['block_accesses']} block accesses, {stats['distinct_blocks']} distinct; "
                 f"infinite cache: {stats['infinite_cache_block_hit_rate']:.3f} (dotted line)",
                 f"{name}：访问 {stats['block_accesses']} 次块，其中不同的块 {stats['distinct_blocks']} 个；"
                 f"无限大缓存的命中率：{stats['infinite_cache_block_hit_rate']:.3f}（点线）"))
    axes[0].set_ylabel(tr("block hit rate", "块命中率"))
    axes[0].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    plt.show()
    conv = mooncake["conversation"]
    change = conv["pin"][0] - conv["lru"][0]
    reveal(my_guess_3, "A" if change > 0.01 else "C" if change < -0.01 else "B",
           why("s04.my_guess_3", lru=conv["lru"][0], pin=conv["pin"][0]))
    reveal(my_guess_4, conv["lru"][0] / conv["belady"][0],
           why("s04.my_guess_4", lru=conv["lru"][0], belady=conv["belady"][0]), within=0.05, bounds=(0, 1))

# %% [markdown] lang="en"
# ## What the plots show
#
# - **LRU is optimal when reuse is recent.** With one long system prompt LRU sits on the bound at
#   every capacity: the prompt is used by every request, so it is always the most recent thing in the cache.
# - **LRU collapses when the working set is a little larger than the cache.** With 40 tenants visited
#   round-robin, each prompt is evicted just before it is needed again: LRU gets *nothing* until the
#   cache holds all of them, while Belady keeps a fixed subset and gets a hit rate proportional to the
#   capacity. Pinning and a minimum residence time both recover part of that: they stop the cache from
#   turning over, which is what Belady does on a loop.
# - **Pinning helps skewed reuse, and hurts when the hot set moves.** On RAG traffic with Zipf
#   popularity, pinning the most used documents adds a few points at small capacities. On chats, the
#   blocks that got pinned early belong to conversations that end; the pinned quarter of the pool is
#   then dead weight, and pinning falls *below* plain LRU. The Mooncake synthetic trace shows the same
#   loss; on the conversation trace pinning changes little. The cap is what keeps the loss bounded.
# - **Residence protects the wrong blocks when new content is unique.** A held block is held whether or
#   not anyone will ever reuse it: with one-off user questions, the held blocks crowd out useful ones and
#   requests are rejected until holds expire (the system-prompt and RAG curves at small capacities). It
#   pays off only under the loop pattern.
# - **Far from the bound.** At small capacities LRU gets a fifth to a half of Belady's hit rate on the
#   Mooncake traces. Recency alone leaves a lot on the table; a policy that knew more (which
#   conversations are still active, how far away a prefix's next use usually is) could close part of the
#   gap. Belady itself is not a policy (it reads the future), only the ceiling.
# - **What no policy can fix.** Even an infinite cache reaches only the dotted line: a prompt seen for
#   the first time always misses, and when the pool is much smaller than the working set every policy,
#   Belady included, stays low. Then the answer is more KV memory (or a second tier, as Mooncake does),
#   not a cleverer eviction order.

# %% [markdown] lang="zh"
# ## 这些图说明了什么
#
# - **复用都发生在最近时，LRU 就是最优的。** 只有一个很长的 system prompt 时，LRU 在每个容量下都贴着上界：
#   每个请求都会用到这个提示词，所以它永远是缓存里最近使用的内容。
# - **工作集只比缓存大一点点时，LRU 会彻底崩溃。** 40 个租户轮流访问时，每个提示词都恰好在下一次被需要之前被淘汰：
#   在缓存装得下全部提示词之前，LRU *一次也*命中不了；而 Belady 固定保留其中一部分，命中率和容量成正比。
#   固定和最短驻留时间都能挽回一部分：它们阻止了缓存内容的整体更替，而这正是 Belady 在循环访问下做的事。
# - **复用集中时固定有帮助，热点在变时固定有害。** 在文档热度服从 Zipf 分布的 RAG 流量上，固定最常用的文档能在小容量时
#   多拿几个百分点。在多轮对话里，早早被固定的块属于已经结束的对话，块池里被固定的那四分之一就成了死重，
#   固定反而*不如*普通 LRU。Mooncake synthetic trace 上也有同样的损失；conversation trace 上固定几乎没有影响。
#   正是上限让这种损失有个边界。
# - **新内容都是一次性的时候，驻留保护错了对象。** 被持有的块不管以后有没有人复用都会被持有：用户问题大多只出现一次，
#   这些被持有的块挤掉了有用的块，请求在持有到期之前都会被拒绝（看小容量时 system prompt 和 RAG 的曲线）。
#   只有在循环访问的模式下它才划算。
# - **离上界还很远。** 在 Mooncake trace 上，小容量时 LRU 只拿到 Belady 命中率的五分之一到一半。只看最近使用时间会浪费
#   很多机会；一个知道更多信息的策略（哪些对话还在进行，一个前缀通常隔多久会被再次用到）可以缩小一部分差距。
#   Belady 本身不是一种可用的策略（它要读未来），只是天花板。
# - **任何策略都救不了的情况。** 即使缓存无限大，也只能到点线那么高：第一次出现的提示词一定未命中；而当块池远小于工作集时，
#   包括 Belady 在内的所有策略都上不去。这时该做的是增加 KV 显存（或者像 Mooncake 那样加一层存储），而不是换一种更聪明的淘汰顺序。

# %% quiz="questions"

# %% scoring="table"

# %% [markdown] lang="en"
# ## Recap
#
# You built the eviction layer of a prefix cache: an LRU free queue whose three operations take O(1)
# (a doubly linked list through the blocks, with keyless blocks reused first), a tail-first release
# that keeps the cache prefix-closed, pins and minimum-residence holds that protect blocks by holding
# references, and replays that measure every policy against Belady's bound.
#
# **The one invariant:** only blocks nobody references are in the free queue, so only they can be
# evicted, and protecting a block is just holding one more reference on it.
#
# **The number:** on the first 4,000 requests of Mooncake's conversation trace, with a cache of 2% of
# its distinct blocks, LRU hits about 4% of the blocks where Belady hits about 21%: a fifth of what is
# possible. A hit on a free block costs your linked list the same few steps at any pool size, while
# `deque.remove` grows with the queue: the line under the timing table says by how much in your run.
#
# Next: stage 5 organises the same cache as a radix tree, and stage 6 runs real attention on the block
# tables your pool hands out, in the eviction order you built here.
#
# ## Further reading
# - vLLM documentation, *Automatic Prefix Caching* (design document): the free block queue as a doubly
#   linked list through the blocks, and blocks freed in reverse order so that a prompt's tail is evicted
#   first, as in this stage.
# - L. A. Belady, *A study of replacement algorithms for a virtual-storage computer*, IBM Systems
#   Journal 5(2), 1966: the optimal offline policy (MIN) that bounds every curve you plotted.
# - Qin et al., *Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture
#   for Serving LLM Chatbot*, USENIX FAST 2025: where the traces come from, and what a serving system
#   does when GPU memory is too small for the working set (a second KV tier in CPU memory and SSD).
# - Zheng et al., *SGLang: Efficient Execution of Structured Language Model Programs*, NeurIPS 2024:
#   RadixAttention evicts tree leaves in LRU order and protects nodes in use with reference counts,
#   the same idea in a tree (stage 5).
# - Megiddo and Modha, *ARC: A Self-Tuning, Low Overhead Replacement Cache*, USENIX FAST 2003: a policy
#   that balances recency and frequency and resists exactly the loop pattern that defeats LRU here.
# - Kwon et al., *Efficient Memory Management for Large Language Model Serving with PagedAttention*,
#   SOSP 2023: the block pool and reference counts that eviction works on.

# %% [markdown] lang="zh"
# ## 回顾
#
# 你实现了前缀缓存的淘汰层：一个三项操作都是 O(1) 的 LRU 空闲队列（穿过块本身的双向链表，无 key 的块优先复用）；
# 一种从尾部开始的释放顺序，让缓存保持前缀封闭；通过持有引用来保护块的固定和最短驻留；以及把每种策略都和 Belady
# 上界放在一起比较的回放实验。
#
# **最重要的不变量：** 只有没人引用的块才在空闲队列里，所以只有它们可能被淘汰；保护一个块，就是多持有它一个引用。
#
# **测到的数字：** 在 Mooncake conversation trace 的前 4,000 个请求上，缓存容量取不同块数的 2% 时，LRU 命中约 4% 的块，
# 而 Belady 约为 21%：只拿到了可能值的五分之一。命中一个空闲块时，不管块池多大，你的链表都只做同样几步，
# 而 `deque.remove` 的耗时随队列增长：计时表格下面那一行给出了你这次运行里增长了多少。
#
# 下一步：第 5 阶段把同样的缓存组织成一棵基数树（radix tree）；第 6 阶段在你的块池交出的块表上运行真正的 attention，
# 用的就是你在这里实现的淘汰顺序。
#
# ## 延伸阅读
# - vLLM 文档，*Automatic Prefix Caching*（设计文档）：用穿过块本身的双向链表实现空闲块队列；块按逆序释放，
#   让提示词的尾部先被淘汰——和本阶段的做法一样。
# - L. A. Belady，*A study of replacement algorithms for a virtual-storage computer*，IBM Systems Journal 5(2)，1966：
#   离线最优策略（MIN），也就是你画的每条曲线的上界。
# - Qin 等，*Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving LLM
#   Chatbot*，USENIX FAST 2025：trace 的出处；也讲了当 GPU 显存装不下工作集时，服务系统怎么办（在 CPU 内存和 SSD
#   上再加一层 KV 存储）。
# - Zheng 等，*SGLang: Efficient Execution of Structured Language Model Programs*，NeurIPS 2024：RadixAttention 按 LRU
#   顺序淘汰树的叶子节点，并用引用计数保护正在使用的节点——同样的思路，换成了树（第 5 阶段）。
# - Megiddo 和 Modha，*ARC: A Self-Tuning, Low Overhead Replacement Cache*，USENIX FAST 2003：一种兼顾最近使用和
#   使用频率的策略，恰好能抵抗本阶段让 LRU 失效的那种循环访问。
# - Kwon 等，*Efficient Memory Management for Large Language Model Serving with PagedAttention*，SOSP 2023：
#   淘汰所操作的块池和引用计数，最早就来自这里。
