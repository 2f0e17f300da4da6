# %% [markdown]
# # Stage 4 · Eviction: LRU, pinning and residence | 缓存淘汰：LRU、固定与最短驻留
#
# **Goal:** when the KV pool is full, decide *which* cached block to overwrite. You will build the
# free queue production engines use (an LRU list with O(1) operations, threaded through the blocks
# themselves), plug it into stage 3's `BlockPool`, add two policies that protect blocks (pinning
# and a minimum residence time), and measure all of them on synthetic traffic and on real request
# traces against the best any policy could do.
#
# *How this notebook works.* Run the setup cell first. Each TODO sits inside the code cell of a
# class; replace `raise NotImplementedError()` with your code, re-run that cell, then run the
# `check(...)` cell for that TODO. A check prints ✅ or ❌ per case, with the input, the expected
# and actual values and a hint. Only the cells with TODOs are graded: keep any helper you write
# inside them. Stage 3's pool (`BlockPool`, `Block`, `PoolFullError`), the trace tools and the
# simulator (`simulate_with`, `belady`, `Policy`) are given and imported by the setup cell.

# %% setup="course"

# %% [markdown]
# ## Where eviction happens
#
# In stage 3 a block whose `ref_count` drops to 0 is not wiped: it keeps its key and waits in the
# pool's **free queue**, so that a later request with the same prefix can still hit it. When a
# request needs a fresh block, `allocate_block` takes `free_queue.popleft()`; if that block still
# held cached content, its key is dropped and **the old key stops hitting**. So *which* block
# `popleft` returns is the eviction policy, and only blocks with `ref_count == 0` can ever be
# evicted: blocks in use are not in the queue at all.
#
# Stage 3's `SimpleFreeQueue` is first in, first out. A cache wants **least recently used** (LRU):
# a block that was just hit is likely to be hit again. Three operations must be cheap, because
# they run for every block of every request:
#
# | operation | when | LRU meaning |
# |---|---|---|
# | `append(block)` | a block's ref count dropped to 0 | it is now the *most* recently used free block |
# | `popleft()` | the pool needs a block for new content | hand out the *least* recently used one |
# | `remove(block)` | a free cached block got a hit | take it out, from wherever it is |
#
# `remove` is the catch: a hit can land anywhere in the queue. `list.remove` or `deque.remove`
# search for the block, O(n) per hit; a pool holds 10⁵–10⁶ blocks. The fix (vLLM's free block
# queue does the same) is a **doubly linked list threaded through the blocks themselves**: each
# `Block` has `prev_free`/`next_free` slots, so a block knows its neighbours and unlinks itself in
# O(1). Three sentinel blocks (id −1, owned by no pool) mark the ends and a middle point:
#
# ```
# head ⇄ [blocks without a key, oldest first] ⇄ mid ⇄ [cached blocks, LRU … MRU] ⇄ tail
# ```
#
# A block **without a key** (a partial tail, or a duplicate that could not register) holds nothing
# anyone can hit, so it is reused before any cached block: it goes before `mid`. Because every real
# block has a neighbour on both sides, linking and unlinking never test for the ends of the list:
# the given helpers `_link_before(node, block)` and `_unlink(block)` do all the pointer work.

# %% solution="LRUFreeQueue"

# %% [markdown]
# ### Check TODO 1 · `append`
# Cached blocks are linked before `self._tail`, keyless ones before `self._mid`; `len` counts them.

# %% check="s04.append"

# %% [markdown]
# ### Check TODO 2 · `popleft`
# The first block after `head`, skipping `mid`: keyless blocks first, then the least recently used.

# %% check="s04.popleft"

# %% [markdown]
# ### Check TODO 3 · `remove`
# A hit on a free block takes it out in O(1); a block not in the queue raises `ValueError`.

# %% check="s04.remove"

# %% [markdown]
# ### See it: the cost of a hit on a free block
# The same workload, a hit somewhere in the middle of the free queue followed by the block's
# release, on your linked list and on a `deque`. The linked list's cost does not depend on the
# pool size; `deque.remove` walks half the queue.

# %%
import random
import time
from collections import deque


def cost_per_hit_us(make_queue, n, hits=300):
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


with demo("s04.remove"):
    print(f"{'free blocks':>11} {'LRUFreeQueue':>14} {'deque':>12}")
    for n in (1_000, 10_000, 100_000):
        print(f"{n:>11} {cost_per_hit_us(LRUFreeQueue, n):>11.2f} us {cost_per_hit_us(deque, n):>9.2f} us")

# %% [markdown]
# ## A pool that evicts well
#
# `EvictionPool` is stage 3's `BlockPool` with your `LRUFreeQueue` plugged in, plus three things.
#
# **Release order (TODO 4).** When a request ends, its blocks are handed to the queue **from the
# tail of its block table to its head**. The queue then holds the prompt's first block as the most
# recent and its last block as the least recent, so LRU evicts a prompt from its end. That keeps
# the cache **prefix-closed**: whenever a block is cached, so is every block before it. Freed
# head first, LRU would evict the shared system prompt first and keep the private tails hanging
# off it, which can never hit again: a hit needs the whole prefix (stage 2's `longest_cached_run`).
#
# **Pinning (TODO 5).** Some prefixes are worth keeping no matter what: a system prompt every
# request starts with, the hottest RAG documents. A *pin* holds one extra reference on the block,
# so the pool's own rule ("only `ref_count == 0` blocks are evicted") protects it, and a free
# block that gets pinned must leave the free queue. Pins are capped (`max_pinned < num_blocks`):
# without a cap, pinning every hot block could leave no block to serve new requests.
#
# **Minimum residence time (TODO 6).** A block that a request has just computed is held (again by
# one extra reference) until `min_residence` seconds have passed, so that a burst of one-off
# requests cannot flush it before it had a chance to be reused. Time comes from an injectable
# `clock`, so tests and trace replays control it. `expire()` runs at the start of every `admit`.
#
# The extra references are recorded as pseudo-requests (`#pinned`, `#young:<n>`), so stage 3's
# invariant "`ref_count` = number of block tables holding the block" and `violations()` still hold.

# %% solution="EvictionPool"

# %% [markdown]
# ### Check TODO 4 · `release_blocks`
# One reference less on each block, tail first; a block whose count reaches 0 joins the free queue.

# %% check="s04.release_blocks"

# %% [markdown]
# ### Check TODO 5 · `pin`
# At the cap: `False`, nothing changes. Otherwise: out of the free queue if it was free, one more
# reference, recorded in `self._pinned` and the `#pinned` pseudo-request.

# %% check="s04.pin"

# %% [markdown]
# ### Check TODO 6 · `expire`
# A hold registered at `t` ends once `clock() - t >= min_residence`, oldest first.

# %% check="s04.expire"

# %% [markdown]
# ### See it: prefix-closed or not
# A request "system prompt (4 blocks) + question (2 blocks)" ran in a pool of 8 blocks; then a
# request needs 4 fresh blocks, so 2 cached blocks must go. Freed tail first, LRU evicts the
# question; freed head first, it evicts the start of the system prompt, and the blocks left
# behind can never hit: the next request with the same system prompt gets nothing.

# %%
class HeadFirstPool(EvictionPool):
    """The wrong order, for comparison: free the block table from its head."""

    def release_blocks(self, blocks):
        for block in blocks:
            block.ref_count -= 1
            if block.ref_count == 0:
                self.free_queue.append(block)


with demo("s04.release_blocks"):
    system, a, b = [1, 2, 3, 4], [10, 11], [20, 21]
    for pool_cls in (EvictionPool, HeadFirstPool):
        pool = pool_cls(8, 1)
        pool.admit("a", system + a)
        pool.commit("a")
        pool.release("a")
        pool.admit("new", [90, 91, 92, 93])  # 2 free blocks + 2 evictions
        marks = "".join("█" if pool.is_cached(k) else "·" for k in pool.keys_of(system + a))
        hits_b = len(pool.lookup(pool.keys_of(system + b), len(system + b)))
        print(f"{pool_cls.__name__:>13}: system + a is now {marks}; a request 'system + b' hits {hits_b} blocks")
    print("(█ cached, · evicted)")

# %% [markdown]
# ## Measuring policies on traffic
#
# The simulator (`simulate_with`, given) replays a trace one request at a time through *your*
# pool: admit, commit, release, with the pool's clock set to each request's arrival time. A trace
# request is a list of **chained block ids** (equal ids = equal prefix), so no hashing is needed
# and long traces replay in seconds. It reports the **block hit rate** (hit blocks / all blocks),
# the **token hit rate** (weighted by the tokens each block holds) and the **prefix hit rate**
# (requests that reused at least one block). Policies:
#
# - `LRU`: your queue, nothing protected;
# - `LRU + pinning`: a block is pinned, prefix first, once requests have used it twice, until a
#   quarter of the pool is pinned (an online "pin the hottest prefixes");
# - `LRU + min residence`: newly computed blocks are held for a few seconds of trace time; a request
#   that cannot get blocks because everything is held or pinned is **rejected** (counted as misses);
# - `Belady`: the offline optimum. Knowing the future, evict the block whose next use is farthest
#   away (or do not cache the new block at all if it is needed even later). No policy can beat it;
#   the gap between a curve and Belady is what a smarter policy could still win.
#
# Synthetic traffic first: one long system prompt, RAG with documents of Zipf popularity,
# interleaved multi-turn chats, and 40 tenants' system prompts visited round-robin.

# %%
import matplotlib.pyplot as plt

from solutions.traces import (load_mooncake, multiturn_traffic, rag_traffic, system_prompt_traffic,
                              thrashing_traffic, trace_stats)

POLICY_STYLE = {"LRU": "-o", "LRU + pinning": "-s", "LRU + min residence": "-^", "Belady (offline bound)": "k--"}


def hit_rate_curves(trace, capacities, *, pin_fraction=0.25, residence_s=5.0):
    """Block hit rate of each policy at each capacity (in blocks)."""
    curves = {name: [] for name in POLICY_STYLE}
    for cap in capacities:
        policies = {
            "LRU": LRU,
            "LRU + pinning": Policy("pin", max_pinned=int(cap * pin_fraction)),
            "LRU + min residence": Policy("residence", min_residence=residence_s),
        }
        for name, policy in policies.items():
            curves[name].append(simulate_with(trace, cap, policy, pool_cls=EvictionPool).block_hit_rate)
        curves["Belady (offline bound)"].append(belady(trace, cap).block_hit_rate)
    return curves


def plot_curves(ax, capacities, curves, title):
    for name, ys in curves.items():
        ax.plot(capacities, ys, POLICY_STYLE[name], label=name, markersize=4)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_ylim(0, 1)
    ax.set_xlabel("cache capacity (blocks)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


workloads = {
    "one long system prompt": system_prompt_traffic(1500, seed=0),
    "RAG (Zipf documents)": rag_traffic(1500, seed=0),
    "multi-turn chats": multiturn_traffic(250, seed=0),
    "40 system prompts, round-robin": thrashing_traffic(1500, seed=0),
}
capacities = [75, 150, 300, 600, 1200, 2400]
with demo("s04.expire"):
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), sharey=True)
    for ax, (name, trace) in zip(axes, workloads.items()):
        plot_curves(ax, capacities, hit_rate_curves(trace, capacities), name)
    axes[0].set_ylabel("block hit rate")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    plt.show()

# %% [markdown]
# ## Real traffic: the Mooncake traces
#
# Moonshot AI released request traces of their Kimi service with the Mooncake paper: for every
# request its arrival time, its length and its prompt as **chained hashes of 512-token blocks**,
# exactly the form our simulator replays. The *conversation* trace has 12,031 requests; the
# *synthetic* one (3,993 requests) mixes ShareGPT, L-Eval and LooGLE prompts. To keep this notebook
# fast we replay at most their first 4,000 requests (the whole traces take about a second per replay; see
# `benchmarks/bench_traces.py`). Capacities are fractions of the distinct blocks in the replayed
# part, and the residence time is 60 s of trace time.
#
# *Data: Mooncake FAST'25 traces, Apache-2.0, from github.com/kvcache-ai/Mooncake. Qin et al.,
# "Mooncake: Trading More Storage for Less Computation — A KVCache-centric Architecture for Serving
# LLM Chatbot", USENIX FAST 2025. See `data/README.md`.*

# %%
with demo("s04.expire"):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, name in zip(axes, ("conversation", "synthetic")):
        trace = load_mooncake(name, limit=4000)
        stats = trace_stats(trace)
        caps = [int(stats["distinct_blocks"] * f) for f in (0.02, 0.05, 0.1, 0.2, 0.4)]
        curves = hit_rate_curves(trace, caps, residence_s=60.0)
        plot_curves(ax, caps, curves, f"Mooncake {name} ({stats['requests']} requests)")
        ax.axhline(stats["infinite_cache_block_hit_rate"], color="grey", lw=0.8, ls=":")
        print(f"{name}: {stats['block_accesses']} block accesses, {stats['distinct_blocks']} distinct; "
              f"infinite cache: {stats['infinite_cache_block_hit_rate']:.3f} (dotted line)")
    axes[0].set_ylabel("block hit rate")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    plt.show()

# %% [markdown]
# ## What the plots show
#
# - **LRU is optimal when reuse is recent.** With one long system prompt every policy but one sits
#   on the bound at any capacity: the prompt is used by every request, so it is always the most
#   recent thing in the cache.
# - **LRU collapses when the working set is a little larger than the cache.** With 40 tenants
#   visited round-robin, each prompt is evicted just before it is needed again: LRU gets *nothing*
#   until the cache holds all of them, while Belady keeps a fixed subset and gets a hit rate
#   proportional to the capacity. Pinning and a minimum residence time both recover part of that:
#   they stop the cache from turning over, which is what Belady does on a loop.
# - **Pinning helps skewed reuse, and hurts when the hot set moves.** On RAG traffic with Zipf
#   popularity, pinning the most used documents adds a few points at small capacities. On chats,
#   the blocks that got pinned early belong to conversations that end; the pinned quarter of the
#   pool is then dead weight, and pinning falls *below* plain LRU. The Mooncake synthetic trace
#   shows the same loss; on the conversation trace, where nearly every request shares one short
#   first block and most reuse is a conversation's next turn, pinning changes little. The cap is
#   what keeps the loss bounded.
# - **Residence protects the wrong blocks when new content is unique.** A held block is held
#   whether or not anyone will ever reuse it: with one-off user questions, the held blocks crowd out
#   useful ones and requests are rejected until holds expire (the system-prompt and RAG curves at
#   small capacities). It pays off only under the loop pattern.
# - **Far from the bound.** At small capacities LRU gets a fifth to a half of Belady's hit rate on
#   the Mooncake traces. Recency alone leaves a lot on the table; a policy that knew more (which
#   conversations are still active, how far away a prefix's next use usually is) could close part
#   of the gap. Belady itself is not a policy (it reads the future), only the ceiling.
