# %% [markdown]
# # Stage 5 · A radix tree prefix cache | 基数树前缀缓存
#
# **Goal:** store the cached token sequences themselves in a tree, so that one walk from the root
# finds the longest cached prefix of a prompt, at token granularity if you like, and decide what
# to forget by whole nodes, least recently used first, never touching what a running request uses.
#
# *How this notebook works.* Run the setup cell first: besides the course helpers it imports the
# two small classes this stage gives you, `TreeNode` and `PrefixMatch` (described below). All six
# TODOs are methods of one class, `RadixCache`, in one code cell: replace each
# `raise NotImplementedError()` with your code, re-run the cell, then run the `check(...)` cell of
# that TODO. A check prints ✅ or ❌ per case, with the input, the expected and actual values and a
# hint. **Only the cell with the TODOs is graded** (everything else comes from the course when
# grading): keep any helper you write inside the class.
#
# | TODO | method | what it does |
# |---|---|---|
# | 1 | `_split_node` | cut one edge in two, so that a boundary inside it becomes a node |
# | 2 | `match_prefix` | walk from the root: the longest cached prefix, its KV slots, the node where it ends |
# | 3 | `insert` | add the part of a sequence that is not cached yet; say how much already was |
# | 4 | `inc_lock_ref` | a request in flight locks its path to the root |
# | 5 | `dec_lock_ref` | the request is done: release the lock |
# | 6 | `evict` | free at least `n` tokens: least recently used unlocked leaves first |

# %% setup="course"

# %% [markdown]
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
# prefix is a shared path.
#
# ### What you are given
# `TreeNode` (one node and the edge above it):
#
# | field | meaning |
# |---|---|
# | `key` | the tuple of tokens on the edge from the parent to this node |
# | `value` | the KV slot of each of those tokens (a tuple of ints, `len(value) == len(key)`) |
# | `children` | dict: first token of a child's edge (a tuple of the first page when `page_size > 1`) → child |
# | `parent` | the parent node (`None` for the root and for evicted nodes) |
# | `lock_ref` | how many requests in flight hold this node (through it or a descendant) |
# | `last_access` | the time this node was last on a matched or inserted path |
# | `id` | a number, unique per cache; it breaks ties between equal access times |
#
# `PrefixMatch(slots, last_node)` is what `match_prefix` returns (`.length == len(slots)`).
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

# %% solution="RadixCache"

# %% [markdown]
# ### Check TODO 1 · `_split_node`
# Splitting `[1 2 3 4]` at 2 puts a new node `[1 2]` between the old node's parent and the old
# node, which keeps `[3 4]`. Tokens, slots, locks and access time stay as they were: only the
# shape changes.

# %% check="s05._split_node"

# %% [markdown]
# ### Check TODO 2 · `match_prefix`
# Walk from the root. At a node, the child to follow is `node.children.get(self._child_key(key,
# pos))`; `self._common_len(child.key, key, pos)` says how far it matches. When the match stops
# *inside* the child's edge, split it: then `last_node` covers exactly the matched tokens, which
# is what a request must lock (TODO 4). Stamp every node on the path with `now`.
#
# With `page_size > 1` only whole pages match (a KV page is allocated and shared as a unit), so
# `[1 2 3 9]` against a cached `[1 2 3 4]` with pages of 2 matches `[1 2]`; a key shorter than one
# page matches nothing and changes nothing.

# %% check="s05.match_prefix"

# %% [markdown]
# A match that ends inside an edge, before and after: the tree holds `"the cat sat"`, and
# `"the cow"` matches `"the c"`. The edge is split at that boundary; the red border marks the
# nodes the match touched.

# %%
import matplotlib.pyplot as plt

from solutions.radix_view import draw_tree, snapshot


def toks(text: str) -> list[int]:
    """A toy tokenizer for the pictures: one token per character."""
    return [ord(c) for c in text]


def text(tokens) -> str:
    return "".join(map(chr, tokens))


with demo("s05.match_prefix"):
    cache = RadixCache()
    cache.insert(toks("the cat sat"), list(range(11)))
    before = snapshot(cache)
    match = cache.match_prefix(toks("the cow"))
    after = snapshot(cache)
    print(f"hit {match.length} tokens {text(toks('the cow')[:match.length])!r}, slots {match.slots}")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    draw_tree(before, decode=text, title="before", ax=axes[0])
    draw_tree(after, decode=text, title="after match_prefix('the cow')", ax=axes[1],
              touched=frozenset(n.id for n in after if n.last_access == match.last_node.last_access))
    plt.show()

# %% [markdown]
# ### Check TODO 3 · `insert`
# After prefill, the request's KV goes in: walk like `match_prefix` (split where the paths diverge
# inside an edge), and where no child continues, hang one new leaf with the rest of the tokens and
# their slots. Its tokens are unlocked, so they count as evictable. Return how many leading
# tokens were already cached: for those the tree keeps *its* slots, and the caller frees its own
# copies (the ones it computed twice, because two requests with the same prefix ran at once).

# %% check="s05.insert"

# %% [markdown]
# ### Check TODO 4 · `inc_lock_ref` and TODO 5 · `dec_lock_ref`
# A request in flight reads the KV of its whole matched path, so it locks the path: every node
# from its `last_node` up to the root gets `lock_ref += 1`. A node with `lock_ref > 0` is
# *protected* and eviction skips it. The cache keeps two counters so that a scheduler can ask
# "how much could I free?" in O(1): `evictable_size + protected_size == tokens in the tree`.
# Tokens move between them only when a node's `lock_ref` goes 0 → 1 (lock) or 1 → 0 (unlock).

# %% check="s05.inc_lock_ref"

# %% check="s05.dec_lock_ref"

# %% [markdown]
# ### Check TODO 6 · `evict`
# When KV memory runs short, drop leaves, least recently used first (a heap keyed by
# `(last_access, id)`), and never a locked one. Removing a leaf can turn its parent into a leaf;
# then the parent is a candidate too (if unlocked and not the root), so one call can eat a whole
# cold branch from the bottom up. Nodes go whole: `evict(1)` on a 64-token leaf frees 64 slots.

# %% check="s05.evict"

# %% [markdown]
# ## See it: a cache serving a few chat requests
#
# Requests share a system prompt. Each one is *matched* on arrival (its cached prefix is found and
# locked while it runs), then its KV is *inserted* after prefill, and it *unlocks* when done. A
# request that keeps running after prefill moves its lock down to the node that ends its whole
# prompt (SGLang does the same), so that its own new tokens cannot be evicted under it.
# Memory pressure then evicts the least recently used unlocked leaves, and never the path of the
# request still running. Move the slider (or press play) to replay the steps; each box shows the node's id, its token span `[start, end)`, its
# tokens, its lock count and its last access time. Where widgets do not run (a static copy of
# this notebook), the cell shows a picture of the final tree instead, and `view.picture(step)`
# draws any step as a plain matplotlib figure. Try your own requests: `view.match(...)`,
# `view.lock(...)`, `view.insert(...)`, `view.unlock(...)` and `view.evict(n)` update the widget.

# %%
from IPython.display import display

from solutions.radix_view import RadixView

SYSTEM = "Be brief. "
with demo("s05.evict"):
    view = RadixView(RadixCache(), decode=text, title="a chat server's prefix cache")
    view.insert(toks(SYSTEM + "Hi!"))                     # request A ran on an empty cache
    b = view.match(toks(SYSTEM + "What is KV?"))          # B arrives: the system prompt hits
    view.lock(b)                                           # ... and stays locked while B runs
    view.insert(toks(SYSTEM + "What is KV?"))             # after prefill, B's KV goes in
    view.unlock(b)                                         # B is done
    c = view.match(toks(SYSTEM + "What is a trie?"))      # C shares "What is " with B
    view.lock(c)
    view.insert(toks(SYSTEM + "What is a trie?"))
    c_all = view.match(toks(SYSTEM + "What is a trie?"))  # C keeps decoding: move its lock
    view.lock(c_all)                                       # to its whole prompt ...
    view.unlock(c)                                         # ... and drop the first one
    view.evict(4)                                          # pressure: the coldest unlocked leaves go
    view.evict(100)                                        # nothing else can: C's path is locked
    display(view)

# %% [markdown]
# ## Radix tree or block pool?
#
# The same seeded workload (`benchmarks/workload.py`: a few shared prompts, each request one of them
# plus fresh tokens) through stage 3's `BlockPool` (block size 16) and through the radix tree with
# page size 16 and 1. The prompts are 300 tokens long on purpose: 18 full blocks and 12 tokens
# more. Both caches leave at least one token to compute (a prompt must produce logits), so the tree
# is matched on `tokens[:-1]`, like the pool.

# %%
import time

from solutions.workload import make_workload
from solutions.s03_block_pool import BlockPool

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


with demo("s05.evict"):
    rows = {"block pool (16)": run_pool(requests),
            "radix tree, page 16": run_tree(requests, 16),
            "radix tree, page 1": run_tree(requests, 1)}
    total = sum(len(t) for t in requests)
    print(f"{'':<22}{'hit tokens':>12}{'KV tokens kept':>16}{'lookup (us)':>13}")
    for name, (hits, kept, us) in rows.items():
        print(f"{name:<22}{hits:>12,}{kept:>16,}{us:>13.1f}")
    print(f"(of {total:,} prompt tokens in {len(requests)} requests)")
    fig, axes = plt.subplots(1, 2, figsize=(10, 2.6))
    names = list(rows)
    axes[0].barh(names, [r[0] / 1000 for r in rows.values()], color="tab:green")
    axes[0].set_title("hit tokens, thousands (higher is better)")
    axes[1].barh(names, [r[1] / 1000 for r in rows.values()], color="tab:blue")
    axes[1].set_title("KV tokens kept cached, thousands")
    for ax in axes:
        ax.invert_yaxis()
    fig.tight_layout()
    plt.show()

# %% [markdown]
# What to read in it:
#
# - **Partial-block matches.** The pool and the page-16 tree reuse 288 tokens of each 300-token
#   prompt: the 19th block holds 12 prompt tokens and 4 fresh ones, so no other request has it.
#   The page-1 tree reuses all 300 (and, now and then, a fresh token that happens to coincide).
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
#
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

# %% given="IncrementalEviction"

# %% [markdown]
# **Predict first.** Two caches, one 16 times larger than the other, serve a stream of requests
# (40 shared 64-token prompts, each plus 16 fresh tokens) until they are full; then 3 rounds of 200
# more requests go through your `evict` and the incremental one, each request evicting what it
# lacks. How much more does a request cost in the larger cache with your `evict`? With the
# incremental one? (`benchmarks/bench_radix.py` measures the same at 1,000 and 100,000 blocks.)

# %%
import itertools
import statistics
import time

from solutions.radix_sim import RadixServer
from solutions.workload import iter_workload


def full_server(cache, capacity: int):
    """A server whose cache has just filled up (every later request evicts), and its request stream."""
    stream = iter_workload(seed=1, num_prompts=40, prompt_len=64, num_requests=None, fresh_tokens=16)
    server = RadixServer(cache, capacity)
    server.fill(stream)
    return server, stream


with demo("s05.evict"):
    class IncrementalRadixCache(IncrementalEviction, RadixCache):
        """Your RadixCache, with the given eviction that keeps its candidates between calls."""

    print(f"{'KV slots':>9}{'leaves':>8}{'your evict (us/request)':>25}{'incremental':>13}{'ratio':>8}  same tree")
    for capacity in (2_048, 32_768):
        servers = {"scan": full_server(RadixCache(), capacity),
                   "incremental": full_server(IncrementalRadixCache(), capacity)}
        us = {name: [] for name in servers}
        for _ in range(3):  # interleaved rounds: the same 200 requests through both caches, in turn
            for name, (server, stream) in servers.items():
                batch = list(itertools.islice(stream, 200))
                start = time.process_time()
                server.serve(batch)
                us[name].append((time.process_time() - start) / len(batch) * 1e6)
        scan, fast = servers["scan"][0].cache, servers["incremental"][0].cache
        ratio = statistics.median(a / b for a, b in zip(us["scan"], us["incremental"]))
        leaves = sum(1 for n in scan.nodes() if not n.children)
        print(f"{capacity:>9,}{leaves:>8,}{statistics.median(us['scan']):>25.1f}"
              f"{statistics.median(us['incremental']):>13.1f}{ratio:>7.1f}x  {scan.describe() == fast.describe()}")

# %% [markdown]
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
