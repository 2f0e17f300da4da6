# %% [markdown]
# # Stage 2 · Chained block hashing | 链式块哈希
#
# **Goal:** give every *full block* of a prompt a key that names the whole prefix up to and
# including that block, so that a table from keys to KV blocks can tell, block by block, how much
# of a new prompt is already cached.
#
# *How this notebook works.* Run the setup cell first: besides the course helpers it defines the
# small tools this stage gives you (`ROOT_SEED`, `frame`, `encode_tokens`, `normalize_extra_keys`);
# read them, you will use them. Each TODO is a function in its own code cell: replace
# `raise NotImplementedError()` with your code, re-run that cell, then run the `check(...)` cell
# below it. A check prints ✅ or ❌ per case, with the input, the expected and actual values and a
# hint. **Only the cells with TODOs are graded** (everything else comes from the course when
# grading): keep any helper you write inside them.
#
# | TODO | function | what it does |
# |---|---|---|
# | 1 | `split_blocks` | cut a prompt into full blocks of `block_size` tokens |
# | 2 | `hash_block` | the key of one block: sha256 of (parent key, tokens, extra keys) |
# | 3 | `chain_keys` | the keys of all full blocks of a prompt, each chained on the previous one |
# | 4 | `longest_cached_run` | how many leading keys a table holds |

# %% setup="course"

# %% given="ROOT_SEED,MAX_TOKEN_ID,_TOKEN_STRUCTS,frame,encode_tokens,normalize_extra_keys"

# %% [markdown]
# ## Blocks: the unit of reuse
#
# Stage 1 matched whole registered prefixes. A serving engine stores KV in fixed-size **blocks**
# of `block_size` tokens (16 is common) and reuses it block by block. Only **full** blocks are
# shared: the last, partial block of a prompt is still being filled (the next generated tokens go
# there), so its content is not final and it must never be found by another request.
#
# A prompt of 10 tokens with `block_size = 4` has two full blocks, `[t0..t3]` and `[t4..t7]`; the
# tail `[t8, t9]` is never cached.

# %% solution="split_blocks"

# %% check="s02.split_blocks"

# %% [markdown]
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
#    bytes, and `encode_tokens` writes each token as 4 little-endian bytes (compact, and the same on
#    every machine; `str(tokens)` would be neither).
# 2. **Never Python's `hash()`.** Its value for `str` and `bytes` changes from process to process
#    (`PYTHONHASHSEED`), it has only 64 bits, and collisions are easy to construct. A cache whose
#    keys outlive one process (several workers, a restart, a KV store shared between servers) needs
#    the same key everywhere. The next cell runs two Python processes to show it.
# 3. **Extra keys, tagged by kind.** Two tenants must not share KV (a timing side channel can
#    reveal what another tenant's prompt contained), and KV computed under a LoRA adapter is not the
#    KV of the base model. Such context enters the key as `(kind, value)` pairs, e.g.
#    `("salt", "tenant-42")` or `("lora", "sql-adapter")`. The kind is digested too, so a salt "X"
#    and an adapter "X" never share a block. `normalize_extra_keys` (given) sorts the pairs and
#    drops empty values: an empty salt behaves exactly as no salt.
#
# The digested bytes are `frame(parent or root_seed) + frame(encode_tokens(tokens))`, followed by
# `frame(kind) + frame(value)` (UTF-8) for each normalized extra key.

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
print(f"{'PYTHONHASHSEED':>15} {'hash(str)':>21} {'hash(bytes)':>21} {'hash(tuple of ints)':>21} {'sha256':>17}")
for seed in ("1", "2"):
    env = dict(os.environ, PYTHONHASHSEED=seed)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    print(f"{seed:>15} " + " ".join(f"{v:>21}" for v in out.stdout.split()[:3]) + f" {out.stdout.split()[3]:>17}")
print("hash(-1) == hash(-2):", hash(-1) == hash(-2), " <- 64-bit, not collision resistant")

# %% [markdown]
# `hash()` of the text changes with the process; sha256 does not. (CPython happens not to salt
# the hash of small integers and tuples of them, but that is an implementation detail, and any
# extra key such as a salt is a string.)

# %% solution="hash_block"

# %% check="s02.hash_block"

# %%
with demo("s02.hash_block"):
    rows = {
        "no extra keys": None,
        "salt 'X'": [("salt", "X")],
        "adapter 'X'": [("lora", "X")],
        "empty salt ''": [("salt", "")],
        "salt 'X' + adapter 'A'": [("salt", "X"), ("lora", "A")],
        "adapter 'A' + salt 'X'": [("lora", "A"), ("salt", "X")],
    }
    for name, extra in rows.items():
        print(f"{name:<24} {hash_block(None, [1, 2, 3, 4], extra).hex()[:16]}")
    print("\nsalt 'X' vs adapter 'X' differ:",
          hash_block(None, [1, 2], [("salt", "X")]) != hash_block(None, [1, 2], [("lora", "X")]))
    print("empty salt == no salt:         ", hash_block(None, [1, 2], [("salt", "")]) == hash_block(None, [1, 2]))

# %% [markdown]
# ## Chaining the keys of a prompt
#
# `chain_keys` walks the full blocks in order; each key becomes the parent of the next. The last
# key therefore stands for the whole prefix: two prompts share key *i* exactly when their first
# `(i + 1) * block_size` tokens (and extra keys) are equal.

# %% solution="chain_keys"

# %% check="s02.chain_keys"

# %% [markdown]
# ### Same tokens, different keys
#
# Take the two prompts *"The capital of France is Paris. What is 2+2?"* and *"…Spain…"*, with a
# toy byte-level tokenizer (`list(text.encode())`, one token per byte). "France" is one byte longer
# than "Spain", so the shared ending lines up block for block only with one-token blocks
# (`block_size = 1`). Every block of the ending " is Paris. What is 2+2?" holds the *same* token in
# both prompts, yet gets a *different* key, because its KV attended to a different country. A hash
# of the block alone (no parent) would wrongly call them equal.

# %%
def byte_tokens(text: str) -> list[int]:
    return list(text.encode())


france = byte_tokens("The capital of France is Paris. What is 2+2?")
spain = byte_tokens("The capital of Spain is Paris. What is 2+2?")
with demo("s02.chain_keys"):
    kf, ks = chain_keys(france, 1), chain_keys(spain, 1)
    print(f"{'block':>6} {'token':>6} {'France key':>12} {'Spain key':>12} {'block alone (no parent)':>24}")
    for back in range(6, 0, -1):
        tok = france[-back]
        alone = hash_block(None, [tok]).hex()[:8]
        print(f"{len(france) - back:>6} {chr(tok)!r:>6} {kf[-back].hex()[:8]:>12} {ks[-back].hex()[:8]:>12} "
              f"{alone + ' (both)':>24}")
    print("last blocks: same tokens:", france[-1:] == spain[-1:], "| same key:", kf[-1] == ks[-1])

# %% [markdown]
# ### One token early changes every later key
#
# Change a single token of block 0 and compare block by block: the tokens of every later block are
# still equal, but no key is. The top row compares tokens, the bottom row keys.

# %%
import matplotlib.pyplot as plt

with demo("s02.chain_keys"):
    base = list(range(100, 132))          # 32 tokens = 8 blocks of 4
    edited = [7] + base[1:]               # one token of block 0 changed
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
    ax.set_yticks([1.45, 0.45], ["tokens", "keys"])
    ax.set_xticks([i + 0.47 for i in range(len(ka))], [f"block {i}" for i in range(len(ka))])
    ax.set_title("prompt vs. the same prompt with token 0 changed")
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    plt.show()

# %% [markdown]
# ## Looking a prompt up
#
# A cache is now a table `key -> physical block`. For a new prompt we compute its keys and walk
# them from the start: the hit is the **longest run of leading keys** in the table. Stop at the
# first miss, even if a later key is in the table (a cache can give up block *i* and keep block
# *i + 1*): prefill computes one contiguous run of tokens, from the first uncached token to the
# end of the prompt, so a cached block after a miss would sit inside that run.

# %% solution="longest_cached_run"

# %% check="s02.longest_cached_run"

# %% [markdown]
# `lookup` (given) puts the pieces together and answers in blocks and tokens. Note what a hit
# never covers: the partial tail, and anything after the first differing block.

# %% given="lookup"

# %%
with demo("s02.longest_cached_run"):
    system = byte_tokens("You are a helpful assistant. Answer briefly. ")   # 45 bytes
    table = {key: f"block #{i}" for i, key in enumerate(chain_keys(system + byte_tokens("Hi!"), 8))}
    prompts = {
        "same system prompt": system + byte_tokens("What is 2+2?"),
        "one word changed": byte_tokens("You are a helpful assistant. Answer fully.  ") + byte_tokens("Hi"),
        "same, other tenant": system + byte_tokens("What is 2+2?"),
        "shorter than a block": byte_tokens("You are"),
    }
    for name, prompt in prompts.items():
        extra = [("salt", "tenant-b")] if "tenant" in name else None
        blocks, tokens = lookup(prompt, 8, table, extra)
        print(f"{name:<22} {len(prompt):>3} tokens -> {blocks} cached blocks = {tokens} tokens reused")

# %% [markdown]
# ## What this stage does not do yet
#
# The table here maps keys to labels. Stage 3 makes them physical KV blocks with reference counts,
# decides when a block may be registered (only after its KV was written) and what happens to a
# block nobody uses any more; stage 4 decides which cached block to give up when memory runs out.
