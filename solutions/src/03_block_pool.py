# %% [markdown]
# # Stage 3 · Block pool and block tables | 块池与块表
#
# **Goal:** give cached KV a physical home. A pool of `num_blocks` physical KV blocks is shared by
# all requests; each request gets a **block table** (its logical blocks → physical blocks); blocks
# with the same content are shared through their stage-2 keys and **reference counts**.
#
# *How this notebook works.* Run the setup cell first: besides the course helpers it imports
# stage 2's `chain_keys` and defines the classes this stage gives you: `Block`, the `FreeQueue`
# protocol and its simple implementation `SimpleFreeQueue`, `PoolFullError`, `Admission` and
# `RequestState`. Read them. The five TODOs are methods of `BlockPool`, in one code cell: replace
# each `raise NotImplementedError()`, re-run the cell, then run the `check(...)` cell of that TODO.
# **Only the `BlockPool` cell is graded** (everything else comes from the course when grading):
# keep any helper you write inside the class.
#
# | TODO | method | what it does |
# |---|---|---|
# | 1 | `lookup` | the cached blocks of a prompt's leading keys (at least one token left to compute) |
# | 2 | `allocate_block` | hand out a free block; a cached one forgets its old key |
# | 3 | `admit` | capacity check, take the hits, allocate fresh blocks |
# | 4 | `commit` | after prefill, register the request's new full blocks |
# | 5 | `release` | drop the request's references; unused blocks become free but stay cached |

# %% setup="course"

# %% given="Block,FreeQueue,SimpleFreeQueue,PoolFullError,Admission,RequestState"

# %% [markdown]
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
#   blocks (`lookup`) and takes them: `ref_count += 1`. The rest of the prompt gets fresh blocks.
#   At least one prompt token is always computed, because prefill must produce the logits of the
#   last prompt token: a fully cached, block-aligned prompt recomputes its last block.
# * **Commit** comes after prefill has written the KV. Only then may the new full blocks be
#   registered under their keys: a hit must never point at KV that has not been written yet. The
#   keys were computed at admission and stored in `RequestState`; nothing is hashed twice.
# * **Release** drops the request's references. A block whose `ref_count` reaches 0 goes to the
#   free queue **with its key**: it is free, but still cached, and a later request can revive it
#   with a hit. Only when the free queue hands it out for other content (`allocate_block`) is its
#   key forgotten.
#
# **Capacity.** A hit on a *free* cached block takes that block out of the free queue. So if a
# request hits `r` free cached blocks and needs `n` fresh ones, it fits only when
# `n <= len(free_queue) - r`. When it does not fit, `admit` raises `PoolFullError` and changes
# nothing at all: check first, then mutate.
#
# **Invariants** (`BlockPool.violations()` lists the broken ones; the pictures below show them):
# free + in use = total; no ref count is negative; a block's ref count is the number of live block
# tables holding it, so a block in a live block table is never handed out again; a key points at
# exactly one block, and that block holds the key.
#
# Which free block is handed out next is the free queue's choice. Stage 3 uses first-in-first-out;
# stage 4 plugs LRU eviction and its policies in through the same `FreeQueue` protocol, without
# changing `BlockPool`.

# %% solution="BlockPool"

# %% [markdown]
# ### Check TODO 1 · `lookup`
# The cached blocks of the longest leading run of keys, never more than
# `(num_tokens - 1) // block_size` of them; `lookup` changes nothing. `ids(blocks)` lists block ids.

# %% check="s03.lookup"

# %% [markdown]
# ### Check TODO 2 · `allocate_block`
# The next free block, now in use (`ref_count == 1`) and without a key; if it was cached, its key
# no longer hits. `pool_state(pool)` in the checks summarises ref counts, free count, and which
# blocks are cached or keyed.

# %% check="s03.allocate_block"

# %% [markdown]
# ### Check TODO 3 · `admit`
# Hits first in the block table, then fresh blocks; refuse cleanly with `PoolFullError`. In the
# checks, `admission(a)` is `[a.request_id, a.block_table, a.hit_blocks, a.hit_tokens]`, and a
# `-> ?` in the input means "the result, or the name of the exception raised".

# %% check="s03.admit"

# %% [markdown]
# ### Check TODO 4 · `commit`
# Register each fresh full block unless its key is already cached (first writer wins).

# %% check="s03.commit"

# %% [markdown]
# ### Check TODO 5 · `release`
# `ref_count -= 1`; blocks that reach 0 are appended to the free queue, keys kept.

# %% check="s03.release"

# %% [markdown]
# ## See it: block tables sharing physical blocks
#
# A 10-block pool with blocks of 4 tokens. Requests A, B and C share an 8-token system prompt
# (two blocks); A and C even have the same question. Each request row is its block table: a
# logical block points at the physical block that holds its KV. Physical blocks are coloured by
# state: **in use** (orange, with the ref count), **free but cached** (green: a hit revives it),
# **free and empty** (grey).

# %%
import matplotlib.pyplot as plt

COLORS = {"in use": "#f4a261", "free, cached": "#8ecf8e", "free, empty": "#e5e5e5"}


def block_state(block) -> str:
    if block.ref_count > 0:
        return "in use"
    return "free, cached" if block.key is not None else "free, empty"


def draw_pool(pool, ax, title: str = "") -> None:
    """Block tables (top rows) pointing into the physical pool (bottom row)."""
    ax.clear()
    n = pool.num_blocks
    for b in pool.blocks:
        state = block_state(b)
        ax.add_patch(plt.Rectangle((b.block_id, 0), 0.9, 0.9, color=COLORS[state]))
        label = f"#{b.block_id}\nrc={b.ref_count}" + ("\nkey" if b.key is not None else "")
        ax.text(b.block_id + 0.45, 0.45, label, ha="center", va="center", fontsize=8)
    rows = list(pool.requests.items())
    for r, (rid, state) in enumerate(rows):
        y = 2.2 + 1.3 * r
        ax.text(-0.3, y + 0.45, f"{rid}{'' if state.committed else ' (prefill)'}", ha="right", va="center")
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
    ok = not pool.violations()
    ax.set_title(f"{title}\nfree {free} + in use {pool.num_in_use} = {free + pool.num_in_use} of {n}; "
                 f"invariants {'hold' if ok else 'BROKEN'}", fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    handles += [plt.Rectangle((0, 0), 1, 1, fill=False, ec="tab:green", lw=2),
                plt.Rectangle((0, 0), 1, 1, fill=False, ec="tab:blue", lw=2)]
    ax.legend(handles, [*COLORS, "hit (shared)", "fresh"], loc="upper right", fontsize=7, ncol=5,
              bbox_to_anchor=(1.0, -0.02))


SYSTEM = list(range(100, 108))                 # an 8-token system prompt: 2 full blocks
QUESTION_1, QUESTION_2 = [1, 2, 3], [4, 5, 6, 7, 8]

with demo("s03.release"):
    pool = BlockPool(10, 4)
    pool.admit("A", SYSTEM + QUESTION_1)
    pool.commit("A")
    pool.admit("B", SYSTEM + QUESTION_2)
    pool.admit("C", SYSTEM + QUESTION_1)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    draw_pool(pool, ax, "A committed; B and C hit A's system-prompt blocks #0 and #1")
    plt.show()

# %% [markdown]
# C has the same 11 tokens as A, yet it hits only A's two *full* blocks: A's third block is partial
# (3 tokens) and was never registered. B is still in prefill, so nothing of it can be hit yet.
#
# ## Step through it
#
# The stepper replays a scripted sequence one operation at a time (drag the slider or use the
# buttons). Watch for:
#
# * step 9: every request is released, yet blocks #0, #1 and #3 stay cached (green);
# * step 10: D needs six fresh blocks; the free queue hands out #3 among them, so B's third
#   block is overwritten and its key forgotten;
# * step 11: E would revive #0 and #1 and needs three fresh blocks, but only two free blocks are
#   left besides its own hits: refused, and nothing changed;
# * step 15: F has the same prompt as B but hits only the system prompt: B's third block is gone.

# %%
import ipywidgets as widgets
from IPython.display import clear_output, display

OTHER = list(range(200, 224))                  # an unrelated 24-token prompt: 6 blocks
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
    """A fresh pool with the first `steps` operations of SCRIPT applied; returns (pool, last message)."""
    pool = BlockPool(10, 4)
    message = "an empty pool: every block is free"
    for op, rid, tokens in SCRIPT[:steps]:
        if op == "admit":
            try:
                a = pool.admit(rid, tokens)
                message = f"admit {rid}: {len(tokens)} tokens, {a.hit_blocks} hit blocks, table {a.block_table}"
            except PoolFullError as exc:
                message = f"admit {rid} refused, nothing changed: {exc}"
        elif op == "commit":
            pool.commit(rid)
            message = f"commit {rid}: its full blocks are registered under their keys"
        else:
            pool.release(rid)
            message = f"release {rid}: ref counts drop; blocks at 0 are free but keep their keys"
    return pool, message


slider = widgets.IntSlider(value=0, min=0, max=len(SCRIPT), description="step")
back = widgets.Button(description="◀ back")
forward = widgets.Button(description="next ▶")
screen = widgets.Output()


def render(_=None) -> None:
    with screen:
        clear_output(wait=True)
        with demo("s03.release"):
            pool, message = replay(slider.value)
            fig, ax = plt.subplots(figsize=(9, 5))
            draw_pool(pool, ax, f"step {slider.value}: {message}")
            plt.show()


back.on_click(lambda _: setattr(slider, "value", max(0, slider.value - 1)))
forward.on_click(lambda _: setattr(slider, "value", min(len(SCRIPT), slider.value + 1)))
slider.observe(render, names="value")
display(widgets.VBox([widgets.HBox([back, forward, slider]), screen]))
render()

# %% [markdown]
# No widgets where you run this (e.g. a plain script)? The same pictures for a few steps:

# %%
with demo("s03.release"):
    steps = (6, 9, 11, 15)
    replays = [replay(step) for step in steps]
    fig, axes = plt.subplots(2, 2, figsize=(14, 8.5))
    for ax, step, (pool, message) in zip(axes.flat, steps, replays):
        draw_pool(pool, ax, f"step {step}: {message}")
    plt.tight_layout()
    plt.show()

# %% [markdown]
# ## The invariants under a random workload
#
# 400 random operations (admit, commit, release) over prompts that share heads, on a 24-block
# pool. After every operation `check_invariants()` runs; the picture shows how the pool is split
# between blocks in use, free cached blocks and free empty blocks. The top edge stays flat:
# free + in use is always the whole pool.

# %%
import random

with demo("s03.release"):
    rng = random.Random(0)
    pool = BlockPool(24, 4)
    heads = [SYSTEM, SYSTEM[:4] + [50, 51, 52, 53], list(range(300, 312))]
    live, pending, history, refused = [], [], [], 0
    for step in range(400):
        roll = rng.random()
        if roll < 0.45 or not live:
            rid = f"r{step}"
            tokens = rng.choice(heads) + [rng.randrange(5) for _ in range(rng.randint(1, 9))]
            try:
                pool.admit(rid, tokens)
                live.append(rid)
                pending.append(rid)
            except PoolFullError:
                refused += 1
        elif roll < 0.75 and pending:
            pool.commit(pending.pop(rng.randrange(len(pending))))
        else:
            rid = live.pop(rng.randrange(len(live)))
            if rid in pending:
                pending.remove(rid)        # released before commit: an aborted request
            pool.release(rid)
        pool.check_invariants()
        states = [block_state(b) for b in pool.blocks]
        history.append([states.count(s) for s in COLORS])
    fig, ax = plt.subplots(figsize=(9, 3))
    ax.stackplot(range(len(history)), *zip(*history), labels=list(COLORS), colors=list(COLORS.values()))
    ax.set_xlabel("operation")
    ax.set_ylabel("blocks")
    ax.set_ylim(0, pool.num_blocks + 1)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"400 operations, invariants checked after each: all held ({refused} admissions refused cleanly)")
    plt.show()

# %% [markdown]
# ## What this stage leaves open
#
# `SimpleFreeQueue` hands out the block that has been free the longest, and `release` frees a
# request's blocks head first. Is that the block we should give up? Stage 4 makes the choice
# explicit: an O(1) LRU free queue (a doubly linked list through `Block.prev_free/next_free`),
# tail-first freeing, pinning and a minimum residence time, all plugged into this `BlockPool`
# through the `FreeQueue` protocol. The benchmark `python benchmarks/bench_block_pool.py` drives
# this pool with 10,000 requests as a scheduler does (look the prompt up, then admit it with the keys
# the lookup computed: `admit(rid, tokens, keys=keys)` hashes nothing twice) and compares the cycle
# with hashing alone.
