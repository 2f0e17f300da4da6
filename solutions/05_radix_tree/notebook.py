# %% [markdown] lang="en"
# # Stage 5 · A radix tree prefix cache
#
# **Goal:** store the cached token sequences themselves in a tree, so that one walk from the root
# finds the longest cached prefix of a prompt, at token granularity if you like, and decide what
# to forget by whole nodes, least recently used first, never touching what a running request uses.
#
# ## Learning objectives
# After this stage you can:
# 1. find the longest cached prefix of a prompt in a radix tree, splitting an edge where a match ends;
# 2. insert a prompt's uncached remainder as one new leaf, and say how much of it was cached already;
# 3. keep lock counts on shared paths right when several requests hold and release them;
# 4. evict least recently used unlocked leaves, whole, and explain why a locked node never goes;
# 5. compare the tree with stage 3's block pool on reuse, memory and lookup cost.
#
# ## Prerequisites
# - [Stage 3 · block pool](03_block_pool.ipynb): KV slots, reference counts, admit/commit/release.
# - [Stage 4 · eviction](04_eviction.ipynb): LRU order and why a block in use is never evicted.
# - Python dicts and a heap (`heapq`); what a trie is helps but is not needed.
#
# **Time:** about 90 min.
#
# *How this notebook works.* Run the setup cell first: besides the course helpers it imports the
# two small classes this stage gives you, `TreeNode` and `PrefixMatch` (described below). All six
# TODOs are methods of one class, `RadixCache`, in one code cell: replace each
# `raise NotImplementedError()` with your code, re-run the cell, then run the `check(...)` cell of
# that TODO. A check prints ✅ or ❌ per case, with the input, the expected and actual values and a
# hint; `hint("s05.match_prefix")` gives the next hint tier for a TODO each time you call it.
# **Only the cell with the TODOs (and the quiz cell) is graded** (everything else comes from the
# course when grading): keep any helper you write inside the class.
#
# | TODO | method | what it does |
# |---|---|---|
# | 1 | `_split_node` | cut one edge in two, so that a boundary inside it becomes a node |
# | 2 | `match_prefix` | walk from the root: the longest cached prefix, its KV slots, the node where it ends |
# | 3 | `insert` | add the part of a sequence that is not cached yet; say how much already was |
# | 4 | `inc_lock_ref` | a request in flight locks its path to the root |
# | 5 | `dec_lock_ref` | the request is done: release the lock |
# | 6 | `evict` | free at least `n` tokens: least recently used unlocked leaves first |
# | 7 | `quiz` | the concept quiz at the end |

# %% [markdown] lang="zh"
# # 第 5 阶段 · 基数树前缀缓存
#
# **目标：** 把缓存的 token 序列本身存进一棵树：从根往下走一趟，就能找到提示词（prompt）已缓存的最长
# 前缀，需要的话可以精确到单个 token；内存不够时按整个节点淘汰，最近最少使用的先走，而且绝不动正在运行
# 的请求要用的东西。
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 在基数树里找出提示词已缓存的最长前缀，并在匹配结束的地方把边切开；
# 2. 把提示词尚未缓存的剩余部分作为一个新叶子节点插入，并说出其中原本已缓存了多少；
# 3. 多个请求在共享路径上加锁、解锁时，保证每个节点的锁数始终正确；
# 4. 按最近最少使用的顺序整节点淘汰未加锁的叶子，并解释为什么加了锁的节点永远不会被淘汰；
# 5. 从复用量、内存和查找代价三方面，比较这棵树和第 3 阶段的块池。
#
# ## 前置知识
# - [第 3 阶段 · 块池](03_block_pool.ipynb)：KV 槽位、引用计数，以及接纳、提交、释放这套流程。
# - [第 4 阶段 · 淘汰](04_eviction.ipynb)：LRU 顺序，以及为什么正在使用的块绝不能淘汰。
# - Python 的字典和堆（`heapq`）；知道什么是字典树（trie）会更好，但不是必须的。
#
# **用时：** 约 90 分钟。
#
# *这本笔记本怎么用。* 先运行环境设置单元：除了课程的辅助工具，它还会导入本阶段直接给你的两个小类
# `TreeNode` 和 `PrefixMatch`（下面会介绍）。六个 TODO 都是同一个类 `RadixCache` 的方法，写在同一个
# 代码单元里：把每个 `raise NotImplementedError()` 换成你的代码，重新运行这个单元，再运行对应 TODO 的
# `check(...)` 单元。检查会为每个用例打印 ✅ 或 ❌，并给出输入、期望值、实际值和一条提示；
# `hint("s05.match_prefix")` 每调用一次，就给出这个 TODO 的下一级提示。**只有含 TODO 的单元（以及小测
# 单元）会被评分**（评分时其余单元都用课程自带的版本），所以你写的辅助函数要放在这个类里面。
#
# | TODO | 方法 | 作用 |
# |---|---|---|
# | 1 | `_split_node` | 把一条边切成两段，让边中间的某个边界成为节点 |
# | 2 | `match_prefix` | 从根往下走：找出最长缓存前缀、它的 KV 槽位，以及前缀结束处的节点 |
# | 3 | `insert` | 把序列中还没缓存的部分加进去，并返回原本已缓存了多少 |
# | 4 | `inc_lock_ref` | 运行中的请求给它到根的整条路径加锁 |
# | 5 | `dec_lock_ref` | 请求结束：释放这把锁 |
# | 6 | `evict` | 至少释放 `n` 个 token：最近最少使用的未加锁叶子先走 |
# | 7 | `quiz` | 最后的概念小测 |

# %% setup="course"
from workbook.predictions import why
from autograder.textwidth import pad

# %% [markdown] lang="en"
# ## From a table of block keys to a tree of tokens
#
# Stages 2–4 find a prompt's cached prefix by hashing it block by block and probing a table with
# each key. That works, and it is what vLLM does, but it has two costs: every lookup hashes every
# full block of the prompt (a sha256 each), and reuse stops at the last *full* block. SGLang's
# RadixAttention stores the sequences themselves instead, in a **radix tree** (a trie whose chains
# of single-child nodes are merged into one edge):
#
# ```text
# root
# ├── "You are a helpful assistant. "          <- a shared system prompt: one edge, stored once
# │   ├── "What is KV cache?"                  <- request A's own part
# │   └── "Explain paging"                     <- request B's own part
# │       └── " in detail."                    <- a later turn of B's conversation
# └── "Translate to French: "                   <- another system prompt
# ```
#
# A lookup reads the prompt once and follows the edges: the path it can follow is the longest
# cached prefix, and the nodes on it hold the KV. Sharing is visible in the shape: a shared
# prefix is a shared path. Tokens are compared as whole numbers: token `12` is not tokens `1, 2`.
#
# ### What you are given
# `TreeNode` (one node and the edge above it):
#
# | field | meaning |
# |---|---|
# | `key` | the tuple of tokens on the edge from the parent to this node |
# | `value` | the KV slot of each of those tokens (a tuple of ints, as long as `key`) |
# | `children` | dict: first token of a child's edge (a tuple of the first page when `page_size > 1`) → child |
# | `parent` | the parent node (`None` for the root and for evicted nodes) |
# | `lock_ref` | how many requests in flight hold this node (through it or a descendant) |
# | `last_access` | the time this node was last on a matched or inserted path |
# | `id` | a number, unique per cache; it breaks ties between equal access times |
#
# `PrefixMatch(slots, last_node)` is what `match_prefix` returns (its `length` is the number of slots).
#
# In `RadixCache` these are given: `_page_aligned(tokens)` (the tokens as a tuple, cut to whole
# pages), `_child_key(key, pos)` (the `children` key of an edge that starts at `key[pos]`),
# `_common_len(edge, key, pos)` (how many tokens of `edge` match `key[pos:]`, in whole pages),
# `_new_node(...)`, and the read-only helpers `nodes()`, `path_tokens(node)`, `describe()` and
# `check_invariants()`. The cache never allocates KV memory itself: `insert` takes the slots the
# caller computed into, and `evict` returns the slots it dropped, for the caller's allocator.
#
# Access times come from `clock`, by default a counter that ticks once per `match_prefix` or
# `insert`, so every run (and every check) sees the same times.

# %% [markdown] lang="zh"
# ## 从块 key 表到 token 树
#
# 第 2–4 阶段查找提示词的缓存前缀时，是把它一块一块地算哈希，再拿每个 key 去查表。这个办法可行，vLLM
# 也是这么做的，但有两个代价：每次查找都要给提示词的每个满块算一次哈希（每块一次 sha256）；而且复用只能
# 到最后一个*满块*为止。SGLang 的 RadixAttention 换了个思路：直接把序列本身存进一棵**基数树**（radix
# tree，也就是把只有一个孩子的节点链合并成一条边的字典树）：
#
# ```text
# root
# ├── "You are a helpful assistant. "          <- 共享的 system prompt：一条边，只存一份
# │   ├── "What is KV cache?"                  <- 请求 A 自己的部分
# │   └── "Explain paging"                     <- 请求 B 自己的部分
# │       └── " in detail."                    <- B 这段对话的下一轮
# └── "Translate to French: "                   <- 另一个 system prompt
# ```
#
# 查找时把提示词读一遍、沿着边往下走：能走通的那条路径就是最长缓存前缀，路径上的节点保存着对应的 KV。
# 共享关系直接体现在树的形状上：共享前缀就是共享路径。token 按整数比较：token `12` 不等于 token
# `1, 2`。
#
# ### 已经给你的部分
# `TreeNode`（一个节点，连同它上方的那条边）：
#
# | 字段 | 含义 |
# |---|---|
# | `key` | 从父节点到这个节点的边上的 token 元组 |
# | `value` | 这些 token 各自的 KV 槽位（int 元组，长度与 `key` 相同） |
# | `children` | 字典：子节点那条边的第一个 token（`page_size > 1` 时是第一页组成的元组）→ 子节点 |
# | `parent` | 父节点（根节点和已淘汰的节点为 `None`） |
# | `lock_ref` | 有多少个运行中的请求持有这个节点（直接持有，或通过某个后代持有） |
# | `last_access` | 这个节点最近一次出现在匹配路径或插入路径上的时间 |
# | `id` | 编号，在同一个缓存里唯一；访问时间相同时用它决定先后 |
#
# `PrefixMatch(slots, last_node)` 是 `match_prefix` 的返回值（它的 `length` 就是槽位的个数）。
#
# `RadixCache` 里已经给出：`_page_aligned(tokens)`（把 tokens 转成元组并截到整页）、
# `_child_key(key, pos)`（从 `key[pos]` 开始的边在 `children` 里用的键）、`_common_len(edge, key, pos)`
# （`edge` 有多少个 token 与 `key[pos:]` 相同，按整页计）、`_new_node(...)`，以及只读的辅助方法
# `nodes()`、`path_tokens(node)`、`describe()` 和 `check_invariants()`。缓存本身从不分配 KV 内存：
# `insert` 接收调用者已经算好 KV 的槽位，`evict` 把淘汰掉的槽位交还给调用者的分配器。
#
# 访问时间来自 `clock`，默认是一个计数器，每次 `match_prefix` 或 `insert` 加一，所以每次运行（以及每个
# 检查）看到的时间都一样。

# %% solution="RadixCache"

# %% [markdown] lang="en"
# ### Check TODO 1 · `_split_node`
# Splitting `[1 2 3 4]` at 2 puts a new node `[1 2]` between the old node's parent and the old
# node, which keeps `[3 4]`. Tokens, slots, locks and access time stay as they were: only the
# shape changes.

# %% [markdown] lang="zh"
# ### 检查 TODO 1 · `_split_node`
# 在位置 2 切开 `[1 2 3 4]`：新节点 `[1 2]` 插到旧节点和它的父节点之间，旧节点保留 `[3 4]`。token、
# 槽位、锁和访问时间都不变，变的只是树的形状。

# %% check="s05._split_node"

# %% [markdown] lang="en"
# ### Check TODO 2 · `match_prefix`
# Walk from the root. At each node, one dictionary lookup finds the only child that can continue the
# prompt; the given `_common_len` says how far its edge matches. When the match stops *inside* the
# child's edge, split it: then `last_node` covers exactly the matched tokens, which is what a
# request must lock (TODO 4). Stamp every node on the path with `now`.
#
# With `page_size > 1` only whole pages match (a KV page is allocated and shared as a unit), so
# `[1 2 3 9]` against a cached `[1 2 3 4]` with pages of 2 matches `[1 2]`; a key shorter than one
# page matches nothing and changes nothing.

# %% [markdown] lang="zh"
# ### 检查 TODO 2 · `match_prefix`
# 从根出发往下走。在每个节点上，查一次字典就能找到唯一可能接着匹配的子节点；已给的 `_common_len`
# 告诉你它的边匹配到哪里。如果匹配停在子节点这条边的*中间*，就把边切开：这样 `last_node` 恰好覆盖匹配
# 上的 token，而这正是请求接下来要加锁的范围（TODO 4）。路径上的每个节点都要记下时间 `now`。
#
# `page_size > 1` 时只有整页才算匹配（KV 页是整页分配、整页共享的）：页大小为 2 时，用 `[1 2 3 9]`
# 去匹配已缓存的 `[1 2 3 4]`，只能匹配到 `[1 2]`；不足一页的 key 什么也匹配不上，也不改变任何东西。

# %% check="s05.match_prefix"

# %% [markdown] lang="en"
# A match that ends inside an edge, before and after: the tree holds `"the cat sat"` (one token per
# character), and `"the cow"` matches `"the c"`. The edge is split at that boundary; the red border
# marks the nodes the match touched.

# %% [markdown] lang="zh"
# 一次停在边中间的匹配，前后对比：树里有 `"the cat sat"`（每个字符算一个 token），`"the cow"` 能匹配到
# `"the c"`。边在这个边界处被切开；红色边框标出这次匹配动过的节点。

# %%
import matplotlib.pyplot as plt

from workbook.radix_view import draw_tree, snapshot


def toks(text: str) -> list[int]:
    """A toy tokenizer for the pictures: one token per character.

    [zh]
    画图用的玩具分词器：每个字符一个 token。
    """
    return [ord(c) for c in text]


def text(tokens) -> str:
    return "".join(map(chr, tokens))


with demo("s05._split_node", "s05.match_prefix", "s05.insert"):
    cache = RadixCache()
    cache.insert(toks("the cat sat"), list(range(11)))
    before = snapshot(cache)
    match = cache.match_prefix(toks("the cow"))
    after = snapshot(cache)
    print(tr(f"hit {match.length} tokens {text(toks('the cow')[:match.length])!r}, slots {match.slots}",
             f"命中 {match.length} 个 token {text(toks('the cow')[:match.length])!r}，槽位 {match.slots}"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    draw_tree(before, decode=text, title=tr("before", "匹配之前"), ax=axes[0])
    draw_tree(after, decode=text, title=tr("after match_prefix('the cow')", "match_prefix('the cow') 之后"), ax=axes[1],
              touched=frozenset(n.id for n in after if n.last_access == match.last_node.last_access))
    plt.show()

# %% [markdown] lang="en"
# ### Check TODO 3 · `insert`
# After prefill, the request's KV goes in: walk like `match_prefix` (split where the paths diverge
# inside an edge), and where no child continues, hang one new leaf with the rest of the tokens and
# their slots. Its tokens are unlocked, so they count as evictable. Return how many leading
# tokens were already cached: for those the tree keeps *its* slots, and the caller frees its own
# copies (the ones it computed twice, because two requests with the same prefix ran at once).

# %% [markdown] lang="zh"
# ### 检查 TODO 3 · `insert`
# prefill 结束后，请求的 KV 要放进树里：像 `match_prefix` 那样往下走（两条路径在边的中间分叉时把边
# 切开），走到没有子节点能接上的地方，就挂一个新叶子节点，放剩下的 token 和它们的槽位。新叶子没有加锁，
# 所以它的 token 计为可淘汰。返回值是开头原本已缓存的 token 数：这些 token 继续用树里*原有*的槽位，
# 调用者自己那份（两个前缀相同的请求同时运行时，同一段 KV 被算了两遍）由调用者释放。

# %% check="s05.insert"

# %% [markdown] lang="en"
# ### Predict, then run
# An empty cache gets `insert("the cat sat")`, then `insert("the cow ran")` (one token per
# character). The two prompts share `"the c"` and then diverge in the middle of the first edge.
# How many nodes does the tree have afterwards, not counting the root?

# %% [markdown] lang="zh"
# ### 先预测，再运行
# 一个空缓存先执行 `insert("the cat sat")`，再执行 `insert("the cow ran")`（每个字符一个 token）。两个
# 提示词共享 `"the c"`，然后在第一条边的中间分叉。插入之后树里有几个节点（不算根）？

# %%
my_guess = None  # your prediction: a number of nodes
# zh: 你的预测：节点个数

# %%
with demo("s05._split_node", "s05.match_prefix", "s05.insert"):
    cache = RadixCache()
    cache.insert(toks("the cat sat"), list(range(11)))
    cache.insert(toks("the cow ran"), list(range(100, 111)))
    reveal(my_guess, len(list(cache.nodes())), why("s05.my_guess"))
    draw_tree(snapshot(cache), decode=text, title=tr("two prompts that diverge mid-edge", "在边中间分叉的两个提示词"))
    plt.show()

# %% [markdown] lang="en"
# ### Check TODO 4 · `inc_lock_ref` and TODO 5 · `dec_lock_ref`
# A request in flight reads the KV of its whole matched path, so it locks the path: every node
# from its `last_node` up to the root gets one more lock. A node with `lock_ref > 0` is
# *protected* and eviction skips it. The cache keeps two counters so that a scheduler can ask
# "how much could I free?" in O(1): `evictable_size + protected_size` is the number of tokens in the
# tree. Tokens move between them only when a node's `lock_ref` goes 0 → 1 (lock) or 1 → 0 (unlock).
#
# Paths are shared, and so are their locks: when two requests hold the same node, every node above
# it carries two locks, and the first request to finish must leave exactly one of them behind.

# %% [markdown] lang="zh"
# ### 检查 TODO 4 · `inc_lock_ref` 和 TODO 5 · `dec_lock_ref`
# 运行中的请求要读它整条匹配路径上的 KV，所以要把这条路径锁住：从它的 `last_node` 到根，每个节点都多
# 一把锁。`lock_ref > 0` 的节点是*受保护*的，淘汰时会跳过它。缓存维护两个计数，好让调度器用 O(1) 就能
# 回答"我最多能腾出多少"：`evictable_size + protected_size` 等于树中的 token 总数。只有当某个节点的
# `lock_ref` 从 0 变成 1（加锁）或从 1 变成 0（解锁）时，token 才在两个计数之间挪动。
#
# 路径是共享的，锁也是：两个请求持有同一个节点时，它上面的每个节点都带着两把锁；先结束的那个请求
# 必须恰好留下其中一把。

# %% check="s05.inc_lock_ref"

# %% check="s05.dec_lock_ref"

# %% [markdown] lang="en"
# ### Check TODO 6 · `evict`
# When KV memory runs short, drop leaves, least recently used first (a heap keyed by
# `(last_access, id)`), and never a locked one. Removing a leaf can turn its parent into a leaf;
# then the parent is a candidate too (if unlocked and not the root), so one call can eat a whole
# cold branch from the bottom up. A locked parent that loses its last child stays: a request still
# reads it. Nodes go whole: `evict(1)` on a 64-token leaf frees 64 slots.

# %% [markdown] lang="zh"
# ### 检查 TODO 6 · `evict`
# KV 内存不够时就淘汰叶子节点：最近最少使用的先走（用按 `(last_access, id)` 排序的堆），加了锁的绝不
# 淘汰。删掉一个叶子可能让它的父节点变成叶子；这时父节点（如果没加锁、也不是根）同样成为候选，所以一次
# 调用可以从下往上吃掉一整条冷分支。加了锁的父节点失去最后一个子节点后仍然留着：还有请求在读它。节点
# 整个淘汰：对一个 64 个 token 的叶子调用 `evict(1)`，会释放 64 个槽位。

# %% check="s05.evict"

# %% [markdown] lang="en"
# ### Predict, then run
# A chat server's cache, with a shared system prompt `"Be brief. "`: request A (`"Be brief. Hi!"`) ran
# first, then B (`"Be brief. What is KV?"`), then C (`"Translate: cat"`). Then A's user comes back
# and A's prompt is matched again. Nothing is locked. `evict(1)`: whose leaf goes first? Answer
# `"A"`, `"B"` or `"C"`.

# %% [markdown] lang="zh"
# ### 先预测，再运行
# 一个聊天服务的缓存，有一个共享的 system prompt `"Be brief. "`：请求 A（`"Be brief. Hi!"`）最先运行，
# 接着是 B（`"Be brief. What is KV?"`），然后是 C（`"Translate: cat"`）。之后 A 的用户又回来了，A 的
# 提示词被再次匹配。没有任何节点加锁。执行 `evict(1)`：谁的叶子最先被淘汰？回答 `"A"`、`"B"` 或 `"C"`。

# %%
my_guess_2 = None  # your prediction: "A", "B" or "C"
# zh: 你的预测："A"、"B" 或 "C"

# %%
with demo("s05._split_node", "s05.match_prefix", "s05.insert", "s05.evict"):
    prompts = {"A": "Be brief. Hi!", "B": "Be brief. What is KV?", "C": "Translate: cat"}
    cache = RadixCache()
    # Request number i computes its KV into slots 100*i, 100*i + 1, ...
    # zh: 第 i 个请求把 KV 算进槽位 100*i、100*i + 1……
    for i, prompt in enumerate(prompts.values()):
        cache.insert(toks(prompt), [100 * i + j for j in range(len(prompt))])
    cache.match_prefix(toks(prompts["A"]))
    before = snapshot(cache)
    freed = cache.evict(1)
    name = "ABC"[freed[0] // 100]
    reveal(my_guess_2, name, why("s05.my_guess_2"))
    gone = text(toks(prompts[name])[slot % 100] for slot in freed)
    print(tr(f"evict(1) freed {len(freed)} slots, a whole leaf: {gone!r}",
             f"evict(1) 释放了 {len(freed)} 个槽位，也就是一整个叶子：{gone!r}"))
    draw_tree(before, decode=text, title=tr("before evict(1)", "evict(1) 之前"))
    plt.show()

# %% [markdown] lang="en"
# ## See it: a cache serving a few chat requests
#
# Requests share a system prompt. Each one is *matched* on arrival (its cached prefix is found and
# locked while it runs), then its KV is *inserted* after prefill, and it *unlocks* when done. A
# request that keeps running after prefill moves its lock down to the node that ends its whole
# prompt (SGLang does the same), so that its own new tokens cannot be evicted under it.
# Memory pressure then evicts the least recently used unlocked leaves, and never the path of the
# request still running.
#
# Move the slider (or press play) to replay the steps; each box shows the node's id, its token span
# `[start, end)`, its tokens, its lock count and its last access time. Where widgets do not run (a
# static copy of this notebook), the cell shows a picture of the final tree instead, and
# `view.picture(step)` draws any step as a plain matplotlib figure. Try your own requests:
# `view.match(...)`, `view.lock(...)`, `view.insert(...)`, `view.unlock(...)` and `view.evict(n)`
# update the widget.

# %% [markdown] lang="zh"
# ## 动手看看：一个缓存服务几个聊天请求
#
# 这些请求共享同一个 system prompt。每个请求到达时先*匹配*（找到已缓存的前缀，并在运行期间锁住它），
# prefill 之后把 KV *插入*树中，结束时*解锁*。prefill 之后还要继续运行的请求，会把锁下移到它整个提示词
# 结束的那个节点（SGLang 也是这么做的），免得它自己刚算出的 token 在运行中被淘汰。接着，内存压力会淘汰
# 最近最少使用的未加锁叶子，但绝不会动仍在运行的请求的路径。
#
# 拖动滑块（或点播放）可以回放每一步；每个方框显示节点的 id、它的 token 区间 `[start, end)`、token
# 本身、锁数和最近访问时间。在不能运行小部件（widget）的地方（比如这本笔记本的静态副本），这个单元会
# 改为显示最终那棵树的图片，`view.picture(step)` 也可以把任意一步画成普通的 matplotlib 图。试试你自己的
# 请求：`view.match(...)`、`view.lock(...)`、`view.insert(...)`、`view.unlock(...)` 和 `view.evict(n)`
# 都会更新这个小部件。

# %%
from IPython.display import display

from workbook.radix_view import RadixView

SYSTEM = "Be brief. "
with demo("s05._split_node", "s05.match_prefix", "s05.insert", "s05.inc_lock_ref", "s05.dec_lock_ref", "s05.evict"):
    view = RadixView(RadixCache(), decode=text, title=tr("a chat server's prefix cache", "聊天服务的前缀缓存"))
    # Request A ran on an empty cache.
    # zh: 请求 A 在空缓存上运行。
    view.insert(toks(SYSTEM + "Hi!"))
    # B arrives: the system prompt hits, and stays locked while B runs.
    # zh: B 到达：system prompt 命中，B 运行期间一直锁着。
    b = view.match(toks(SYSTEM + "What is KV?"))
    view.lock(b)
    # After prefill, B's KV goes in; then B is done.
    # zh: prefill 之后 B 的 KV 放进树里；然后 B 结束。
    view.insert(toks(SYSTEM + "What is KV?"))
    view.unlock(b)
    # C shares "What is " with B.
    # zh: C 与 B 共享 "What is "。
    c = view.match(toks(SYSTEM + "What is a trie?"))
    view.lock(c)
    view.insert(toks(SYSTEM + "What is a trie?"))
    # C keeps decoding: move its lock to its whole prompt, then drop the first one.
    # zh: C 还要继续解码：把锁移到它的整个提示词上，再释放原来那把。
    c_all = view.match(toks(SYSTEM + "What is a trie?"))
    view.lock(c_all)
    view.unlock(c)
    # Memory pressure: the coldest unlocked leaves go; then nothing else can, C's path is locked.
    # zh: 内存压力：最冷的未加锁叶子被淘汰；之后什么也淘汰不了，因为 C 的路径锁着。
    view.evict(4)
    view.evict(100)
    display(view)

# %% [markdown] lang="en"
# ## Radix tree or block pool?
#
# The same seeded workload (`workbook/workload.py`: a few shared prompts, each request one of them
# plus fresh tokens) through stage 3's `BlockPool` (block size 16) and through the radix tree with
# page size 16 and 1. The prompts are 300 tokens long on purpose: 18 full blocks and 12 tokens
# more. Both caches leave at least one token to compute (a prompt must produce logits), so the tree
# is matched on `tokens[:-1]`, like the pool.
#
# ### Predict, then run
# A request repeats a 300-token prompt that an earlier request already brought into the block pool
# (block size 16), followed by fresh tokens of its own. How many of the 300 prompt tokens does the
# pool reuse?

# %% [markdown] lang="zh"
# ## 基数树还是块池？
#
# 用同一个固定种子的负载（`workbook/workload.py`：几条共享的提示词，每个请求取其中一条，再接上一些新
# token），分别跑第 3 阶段的 `BlockPool`（块大小 16）和页大小为 16、1 的基数树。提示词故意取 300 个
# token：18 个满块，外加 12 个 token。两种缓存都至少留一个 token 现算（提示词必须产出 logits），所以
# 基数树也和块池一样，用 `tokens[:-1]` 来匹配。
#
# ### 先预测，再运行
# 一个请求重复了一条 300 个 token 的提示词（之前的某个请求已经把它放进块池，块大小 16），后面接着自己的
# 新 token。块池能复用这 300 个提示词 token 中的多少个？

# %%
my_guess_3 = None  # your prediction: a number of tokens
# zh: 你的预测：token 个数

# %%
import time

from workbook.block_pool import BlockPool
from workbook.workload import make_workload

requests = make_workload(seed=0, num_prompts=10, prompt_len=300, num_requests=400, fresh_tokens=20)


def run_pool(requests, block_size=16):
    pool = BlockPool(num_blocks=8192, block_size=block_size)
    hits = 0
    for i, tokens in enumerate(requests):
        hits += pool.admit(f"r{i}", tokens).hit_tokens
        pool.commit(f"r{i}")
        pool.release(f"r{i}")
    start = time.perf_counter()
    for tokens in requests:
        pool.lookup(pool.keys_of(tokens), len(tokens))
    lookup_us = (time.perf_counter() - start) / len(requests) * 1e6
    return hits, len(pool.cached) * block_size, lookup_us


def run_tree(requests, page_size):
    cache = RadixCache(page_size)
    hits, next_slot = 0, 0
    for tokens in requests:
        match = cache.match_prefix(tokens[:-1])
        cache.inc_lock_ref(match.last_node)
        fresh = list(range(next_slot, next_slot + len(tokens) - match.length))
        next_slot += len(fresh)
        cache.insert(tokens, match.slots + fresh)
        cache.dec_lock_ref(match.last_node)
        hits += match.length
    start = time.perf_counter()
    for tokens in requests:
        cache.match_prefix(tokens[:-1])
    lookup_us = (time.perf_counter() - start) / len(requests) * 1e6
    return hits, cache.total_size, lookup_us


with demo("s05._split_node", "s05.match_prefix", "s05.insert", "s05.inc_lock_ref", "s05.dec_lock_ref", "s05.evict"):
    # Two requests with the same prompt: the second one's hit in a fresh pool.
    # zh: 两个提示词相同的请求：在一个新块池里，第二个请求命中多少。
    first = requests[0]
    again = next(t for t in requests[1:] if t[:300] == first[:300])
    pool = BlockPool(num_blocks=64, block_size=16)
    pool.admit("first", first)
    pool.commit("first")
    pool.release("first")
    reveal(my_guess_3, pool.admit("again", again).hit_tokens, why("s05.my_guess_3"))

    rows = {tr("block pool (16)", "块池（16）"): run_pool(requests),
            tr("radix tree, page 16", "基数树，页大小 16"): run_tree(requests, 16),
            tr("radix tree, page 1", "基数树，页大小 1"): run_tree(requests, 1)}
    total = sum(len(t) for t in requests)
    print(f"{'':<22}{pad(tr('hit tokens', '命中 token'), 12, '>')}{pad(tr('KV tokens kept', '保留的 KV token'), 16, '>')}"
          f"{pad(tr('lookup (us)', '查找（us）'), 13, '>')}")
    for name, (hits, kept, us) in rows.items():
        print(f"{name:<22}{hits:>12,}{kept:>16,}{us:>13.1f}")
    print(tr(f"(of {total:,} prompt tokens in {len(requests)} requests)",
             f"（{len(requests)} 个请求，共 {total:,} 个提示词 token）"))
    fig, axes = plt.subplots(1, 2, figsize=(10, 2.6))
    names = list(rows)
    axes[0].barh(names, [r[0] / 1000 for r in rows.values()], color="tab:green")
    axes[0].set_title(tr("hit tokens, thousands (higher is better)", "命中 token 数（千，越高越好）"))
    axes[1].barh(names, [r[1] / 1000 for r in rows.values()], color="tab:blue")
    axes[1].set_title(tr("KV tokens kept cached, thousands", "缓存中保留的 KV token 数（千）"))
    for ax in axes:
        ax.invert_yaxis()
    fig.tight_layout()
    plt.show()

# %% [markdown] lang="en"
# What to read in it:
#
# - **Partial-block matches.** The pool and the page-16 tree reuse 288 tokens of each 300-token
#   prompt: the 19th block holds 12 prompt tokens and 4 fresh ones, so no other request has it.
#   The page-1 tree reuses all 300.
#   With pages, the tree and the pool agree on hits: page granularity, not the data structure,
#   decides what can be shared.
# - **Memory.** With page 16 both keep the same whole pages, and every request keeps its own copy
#   of the prompt's last 12 tokens, because they share a block with its fresh tokens. With page 1
#   the tree keeps that tail once, under the prompt's node, and only the fresh tokens per request
#   (SGLang's default page size is 1: its tree and its KV pool work per token).
# - **Lookup cost.** The pool hashes every full block of the prompt (sha256 over a chain) before it
#   can probe its table; the tree compares tokens along one path, in C, an edge at a time.
#   `benchmarks/bench_radix.py` measures both on 10,000 requests of 2,112 tokens.
# - **Eviction granularity.** The pool frees one block at a time from its LRU queue (stage 4), and a
#   freed block keeps its key until reused, so a partly evicted prefix still hits on its first
#   blocks. The tree frees whole leaves: a cold request tail goes in one step, and a shared prefix
#   stays as long as anything below it is still cached, because a parent is never a leaf while it
#   has children. A long edge is all or nothing, unless a match split it first.

# %% [markdown] lang="zh"
# 怎么看这些结果：
#
# - **不满一块的匹配。** 块池和页大小 16 的基数树，对每条 300 个 token 的提示词都只复用 288 个：第 19
#   块里是 12 个提示词 token 加 4 个新 token，别的请求不会有同样的块。页大小 1 的基数树能复用全部 300
#   个。按页时，基数树和块池的命中数一样：决定能共享多少的
#   是页的粒度，而不是数据结构。
# - **内存。** 页大小 16 时两者保留的整页完全相同，而且每个请求都各自保留一份提示词最后 12 个 token，
#   因为它们和请求自己的新 token 挤在同一个块里。页大小 1 时，基数树把这段尾巴只存一份，挂在提示词的
#   节点下，每个请求只多存自己的新 token（SGLang 默认的页大小就是 1：它的树和 KV 池都按 token 管理）。
# - **查找代价。** 块池要先给提示词的每个满块算哈希（链式的 sha256），才能去查表；基数树只沿着一条
#   路径比较 token，每次比较一整条边，而且是在 C 里完成的。`benchmarks/bench_radix.py` 在 10,000 个
#   2,112 token 的请求上对两者都做了测量。
# - **淘汰粒度。** 块池从它的 LRU 队列里一次释放一个块（第 4 阶段），被释放的块在被重用之前仍保留着
#   它的 key，所以一个被淘汰了一部分的前缀，开头几块仍能命中。基数树按整个叶子淘汰：一个冷掉的请求尾巴
#   一步就没了；而共享前缀只要下面还挂着任何缓存内容就会留着，因为有子节点的父节点永远不是叶子。一条长
#   边要么整条留下、要么整条淘汰，除非之前某次匹配已经把它切开。

# %% [markdown] lang="en"
# ## One eviction per request: scan the tree, or keep the candidates?
#
# A serving engine's scheduler evicts only what the request in front of it lacks, so once KV
# memory is full it calls `evict` for nearly every request. Your `evict` collects every unlocked
# leaf into a heap on each call: each call costs time in proportion to the number of leaves, and a
# full cache of many requests has many leaves. That simple version is easy to get right, and it is
# the one graded. The class below (given, not a TODO) keeps the heap *between* calls instead. It
# hooks into your `match_prefix`, `insert` and `dec_lock_ref` through `super()`, pushes a node each
# time it may have become a candidate, and skips entries that went stale when they reach the top of
# the heap. An eviction then costs O(log n) per dropped node. The course's tests drive it next to
# the simple version with random operations: it evicts exactly the same nodes, in the same order.
# Mix it into a cache class: `class IncrementalRadixCache(IncrementalEviction, RadixCache)`.

# %% [markdown] lang="zh"
# ## 每个请求淘汰一次：扫描整棵树，还是一直维护候选者？
#
# 推理服务引擎的调度器只淘汰眼前这个请求缺的那部分，所以 KV 内存满了以后，几乎每个请求都要调用一次
# `evict`。你写的 `evict` 每次调用都把所有未加锁的叶子收进一个堆：每次调用的耗时与叶子数成正比，而一个
# 装满了许多请求的缓存有很多叶子。这个简单版本容易写对，评分用的也是它。下面这个类（已给出，不是 TODO）
# 则在两次调用*之间*一直保留着这个堆：它通过 `super()` 挂接到你的 `match_prefix`、`insert` 和
# `dec_lock_ref` 上，每当某个节点可能成为候选者就把它压入堆，过期的条目到了堆顶再跳过。这样每淘汰一个
# 节点只需 O(log n)。课程的测试用随机操作把它和简单版本并排运行：两者淘汰的节点完全相同，顺序也相同。
# 用法是把它混入缓存类：`class IncrementalRadixCache(IncrementalEviction, RadixCache)`。

# %% given="IncrementalEviction"

# %% [markdown] lang="en"
# ### Predict, then run
# Two caches, one 16 times larger than the other, serve a stream of requests (40 shared 64-token
# prompts, each plus 16 fresh tokens) until they are full; then 3 rounds of 200 more requests go
# through your `evict` and the incremental one, each request evicting what it lacks. An `evict`
# that keeps nothing between calls must look at every unlocked leaf on each call (the least
# recently used one may be any of them), and that is what its cost grows with. With your `evict`,
# how many times as many leaves does a request make it look at in the larger cache?
# **A** about as many · **B** 2 to 8 times as many · **C** more than 8 times as many.
# The demo counts them, and times both versions on this machine beside the count.
# (`benchmarks/bench_radix.py` measures the same at 1,000 and 100,000 blocks.)

# %% [markdown] lang="zh"
# ### 先预测，再运行
# 两个缓存，一个比另一个大 16 倍，先处理一串请求（40 条共享的 64 token 提示词，每条再接 16 个新 token）
# 直到装满；接着再来 3 轮、每轮 200 个请求，分别交给你的 `evict` 和增量版本处理，每个请求都淘汰自己缺的
# 部分。一个在两次调用之间什么都不保留的 `evict`，每次调用都必须看一遍所有未加锁的叶子（最近最少使用的
# 那个可能是其中任何一个），它的耗时也正是随这个数增长的。用你的 `evict` 时，大缓存里每个请求让它查看的
# 叶子数是小缓存的多少倍？
# **A** 差不多 · **B** 2 到 8 倍 · **C** 8 倍以上。
# 演示会把这些叶子数出来，并在旁边给出两个版本在这台机器上的实测耗时。
# （`benchmarks/bench_radix.py` 在 1,000 和 100,000 个块的规模上测的是同一件事。）

# %%
my_guess_4 = None  # your prediction: "A", "B" or "C"
# zh: 你的预测："A"、"B" 或 "C"

# %%
import itertools
import statistics

from workbook.radix_sim import CountingEviction, RadixServer
from workbook.workload import iter_workload


def full_server(cache, capacity: int):
    """A server whose cache has just filled up (every later request evicts), and its request stream.

    [zh]
    一个缓存刚刚装满的服务（之后的每个请求都要淘汰），以及它的请求流。
    """
    stream = iter_workload(seed=1, num_prompts=40, prompt_len=64, num_requests=None, fresh_tokens=16)
    server = RadixServer(cache, capacity)
    server.fill(stream)
    return server, stream


with demo("s05._split_node", "s05.match_prefix", "s05.insert", "s05.inc_lock_ref", "s05.dec_lock_ref", "s05.evict"):
    class IncrementalRadixCache(IncrementalEviction, RadixCache):
        """Your RadixCache, with the given eviction that keeps its candidates between calls.

        [zh]
        你的 RadixCache，加上已给出的、在两次调用之间保留候选者的淘汰方式。
        """

    class CountedRadixCache(CountingEviction, IncrementalRadixCache):
        """The same, counting at each evict call the unlocked leaves a scan would look at.

        [zh]
        同上，并在每次调用 evict 时数一下扫描版本要查看的未加锁叶子数。
        """

    print(f"{pad(tr('KV slots', 'KV 槽位'), 9, '>')}{pad(tr('leaves', '叶子数'), 8, '>')}"
          f"{pad(tr('looked at/request', '每请求查看'), 19, '>')}{pad(tr('your evict (us/request)', '你的 evict（us/请求）'), 25, '>')}"
          f"{pad(tr('incremental', '增量版本'), 13, '>')}{pad(tr('ratio', '倍数'), 8, '>')}  {tr('same tree', '树相同')}")
    scan_us, looked_at = {}, {}
    for capacity in (2_048, 32_768):
        # The count, untimed: the same requests through a third cache that counts what a scan looks at.
        # zh: 计数（不计时）：同样的请求交给第三个缓存，由它数出扫描版本要查看的叶子。
        counted, counted_stream = full_server(CountedRadixCache(), capacity)
        served = counted.requests
        counted.serve(itertools.islice(counted_stream, 3 * 200))
        looked_at[capacity] = counted.cache.examined / (counted.requests - served)
        servers = {"scan": full_server(RadixCache(), capacity),
                   "incremental": full_server(IncrementalRadixCache(), capacity)}
        us = {name: [] for name in servers}
        # Interleaved rounds: the same 200 requests through both caches, in turn.
        # zh: 交替进行的几轮：同样的 200 个请求轮流交给两个缓存。
        for _ in range(3):
            for name, (server, stream) in servers.items():
                batch = list(itertools.islice(stream, 200))
                start = time.process_time()
                server.serve(batch)
                us[name].append((time.process_time() - start) / len(batch) * 1e6)
        scan, fast = servers["scan"][0].cache, servers["incremental"][0].cache
        ratio = statistics.median(a / b for a, b in zip(us["scan"], us["incremental"]))
        leaves = sum(1 for n in scan.nodes() if not n.children)
        scan_us[capacity] = statistics.median(us["scan"])
        same = scan.describe() == fast.describe() == counted.cache.describe()
        print(f"{capacity:>9,}{leaves:>8,}{looked_at[capacity]:>19,.0f}{scan_us[capacity]:>25.1f}"
              f"{statistics.median(us['incremental']):>13.1f}{ratio:>7.1f}x  {same}")
    # The answer comes from the count (the same on every machine); the time is shown beside it.
    # zh: 答案来自计数（在哪台机器上都一样）；耗时只是放在旁边对照。
    growth = looked_at[32_768] / looked_at[2_048]
    reveal(my_guess_4, "A" if growth < 2 else "B" if growth <= 8 else "C",
           why("s05.my_guess_4", small=looked_at[2_048], large=looked_at[32_768],
               measured=scan_us[32_768] / scan_us[2_048]))

# %% [markdown] lang="en"
# Your `evict` pays for every leaf of the cache on every call, so its cost per request grows with
# the cache; the incremental one pays for the nodes it drops and a few heap operations, whatever
# the size. Both free the same slots: the tree is the same afterwards. A block pool gets the same
# flat cost from its O(1) free queue (stage 4); in a tree the price is bookkeeping in every method
# that can turn a node into a candidate, which is why it is given here rather than part of the TODO.
#
# ## What this tree leaves out
#
# Production trees (SGLang's radix cache, for one) add more: extra keys (LoRA adapter, cache salt)
# so that equal tokens under different adapters never share KV, as stage 2's extra keys do; a hit
# count per node for smarter policies; and a second tier in host memory for evicted KV.

# %% [markdown] lang="zh"
# 你的 `evict` 每次调用都要为缓存里的每个叶子付出代价，所以每个请求的耗时随缓存变大而增长；增量版本
# 只为它淘汰的节点和几次堆操作付出代价，与缓存大小无关。两者释放的槽位完全相同：之后的树也一样。块池靠
# 它 O(1) 的空闲队列（第 4 阶段）同样做到了代价恒定；在树里，代价是每个可能把节点变成候选者的方法都要多
# 记一笔账，所以这部分直接给出，而没有放进 TODO。
#
# ## 这棵树省略了什么
#
# 生产环境里的树（比如 SGLang 的 radix cache）还有更多东西：附加 key（extra keys，例如 LoRA 适配器、
# 缓存盐值），保证同样的 token 在不同适配器下绝不共享 KV，作用和第 2 阶段的附加 key 一样；每个节点的
# 命中计数，用于更聪明的淘汰策略；以及把被淘汰的 KV 放到主机内存里的第二层缓存。

# %% quiz="questions"

# %% scoring="table"

# %% [markdown] lang="en"
# ## Recap
# You built a radix tree prefix cache: `match_prefix` walks one path with a dictionary lookup per
# node and splits the edge where the match ends, `insert` adds the uncached remainder as one leaf,
# `inc_lock_ref`/`dec_lock_ref` count locks along shared paths, and `evict` drops least recently
# used unlocked leaves, whole, bottom up.
#
# The one invariant: **a locked node, and its whole path to the root, is never evicted**; the
# counts behind it (`lock_ref` at least the sum of the children's, `evictable_size +
# protected_size` equal to the tokens in the tree) hold after every operation, however many
# requests share a path.
#
# What the stage measured: a repeated 300-token prompt reuses 288 tokens in a block pool with
# 16-token blocks and all 300 in a radix tree with page size 1; and an `evict` that keeps nothing
# between calls looks at every unlocked leaf on each call: in a cache 16 times larger, more than 8
# times as many leaves per request, while the incremental one pays only for what it drops.
#
# ## Further reading
# - Zheng et al., *SGLang: Efficient Execution of Structured Language Model Programs* (NeurIPS 2024):
#   RadixAttention, the radix tree with LRU leaf eviction and reference counts that this stage builds.
# - vLLM documentation, *Automatic Prefix Caching* (design notes): the hash-per-block alternative of
#   stages 2–4, to weigh against the tree.
# - Kwon et al., *Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   (SOSP 2023): the paged KV memory whose slots the tree's values point to, and why pages matter.
# - Qin et al., *Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving* (FAST 2025):
#   what happens to evicted KV when a cache spans host memory, SSDs and other machines.
# - Morrison, *PATRICIA: Practical Algorithm To Retrieve Information Coded in Alphanumeric* (J. ACM,
#   1968): the original compressed trie, the data structure under RadixAttention.

# %% [markdown] lang="zh"
# ## 回顾
# 你实现了一个基数树前缀缓存：`match_prefix` 每个节点查一次字典、沿一条路径往下走，并在匹配结束的
# 地方把边切开；`insert` 把尚未缓存的剩余部分作为一个叶子加进去；`inc_lock_ref`/`dec_lock_ref` 沿着
# 共享路径给锁计数；`evict` 按最近最少使用的顺序、从下往上整节点淘汰未加锁的叶子。
#
# 最重要的不变量：**加了锁的节点，以及它到根的整条路径，永远不会被淘汰**；支撑它的那些计数（节点的
# `lock_ref` 不少于子节点锁数之和，`evictable_size + protected_size` 等于树中的 token 总数）在每次
# 操作之后都成立，不管有多少请求共享同一条路径。
#
# 本阶段测得的数字：一条重复出现的 300 token 提示词，在块大小 16 的块池里能复用 288 个 token，在页
# 大小 1 的基数树里能复用全部 300 个；在两次调用之间什么都不保留的 `evict`，每次调用都要看一遍所有未加锁
# 的叶子：缓存大 16 倍时，每个请求要看的叶子是原来的 8 倍以上，而增量版本只为它淘汰掉的东西付出代价。
#
# ## 延伸阅读
# - Zheng 等，*SGLang: Efficient Execution of Structured Language Model Programs*（NeurIPS 2024）：
#   RadixAttention，也就是本阶段实现的这棵带 LRU 叶子淘汰和引用计数的基数树。
# - vLLM 文档，*Automatic Prefix Caching*（设计说明）：第 2–4 阶段那种按块哈希的方案，可以和基数树对照
#   着看各自的取舍。
# - Kwon 等，*Efficient Memory Management for Large Language Model Serving with PagedAttention*
#   （SOSP 2023）：树中 value 指向的分页 KV 内存，以及页大小为什么重要。
# - Qin 等，*Mooncake: A KVCache-centric Disaggregated Architecture for LLM Serving*（FAST 2025）：
#   当缓存跨越主机内存、SSD 和其他机器时，被淘汰的 KV 去了哪里。
# - Morrison，*PATRICIA: Practical Algorithm To Retrieve Information Coded in Alphanumeric*（J. ACM，
#   1968）：最早的压缩字典树，RadixAttention 背后的数据结构。
