# %% [markdown]
# # Stage 1 · Prefix cache matching and reuse | Prefix Cache 匹配与复用
#
# **Goal:** decide, for an incoming prompt, how many of its leading tokens could reuse KV cache that
# earlier requests already computed, and how many still need prefill.
#
# *How this notebook works.* Run the setup cell first. Each TODO sits inside the code cell of
# `PrefixCacheManager`; replace `raise NotImplementedError()` with your code, re-run that cell, then
# run the `check(...)` cell for that TODO. A check prints ✅ or ❌ per case, with the input, the
# expected and actual values and a hint. Only the cells with TODOs are graded: keep any helper you
# write inside them.

# %% setup="course"

# %% [markdown]
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

# %% solution="PrefixCacheManager"

# %% [markdown]
# ### Check TODO 1 · `_normalize`
# Any sequence (list, tuple, generator) becomes a new `list[int]` in the same order; a token that is
# not an `int` raises `TypeError` before it can reach the index.

# %% check="s01.normalize"

# %% [markdown]
# ### Check TODO 2 · `add_prefix`
# Prefixes are stored as tuples (so `[1, 2]` and `(1, 2)` are the same prefix), once each, in the
# order they were first added. An empty prefix is refused with `ValueError`.

# %% check="s01.add_prefix"

# %% [markdown]
# ### Check TODO 3 · `match_prefix`
# The longest registered prefix that equals the *beginning* of the prompt.

# %% check="s01.match_prefix"

# %% [markdown]
# ### Check TODO 4 · `split_prompt`

# %% check="s01.split_prompt"

# %% [markdown]
# ### Check TODO 5 · `cache_stats`
# `reuse_ratio = hit_tokens / len(prompt)`, rounded to 4 decimals; 0.0 for an empty prompt.

# %% check="s01.cache_stats"

# %% [markdown]
# ## See it: what each prompt reuses
#
# A toy workload: two system prompts are registered, then prompts arrive that start with one of
# them, with part of one, or with neither. Each bar is one prompt: the green part is reused from
# cache, the grey part still needs prefill. A prompt that shares only *part* of a registered prefix
# gets nothing here, because this manager only matches whole registered prefixes; stages 2 and 5
# make reuse finer-grained (per block, per token).

# %%
import matplotlib.pyplot as plt

SYSTEM_A = list(range(100, 140))   # a 40-token system prompt
SYSTEM_B = list(range(200, 225))   # a 25-token one
prompts = {
    "A + question": SYSTEM_A + [1, 2, 3, 4, 5, 6],
    "A + long question": SYSTEM_A + list(range(30)),
    "B + question": SYSTEM_B + [7, 8, 9],
    "half of A": SYSTEM_A[:20] + [5, 5, 5],
    "no system prompt": [9, 9, 9, 9, 9, 9, 9, 9],
}

with demo("s01.cache_stats"):
    manager = PrefixCacheManager()
    manager.add_prefix(SYSTEM_A)
    manager.add_prefix(SYSTEM_B)
    ledgers = {name: manager.cache_stats(p) for name, p in prompts.items()}
    names = list(ledgers)
    hits = [ledgers[n]["hit_tokens"] for n in names]
    rest = [ledgers[n]["uncached_tokens"] for n in names]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.barh(names, hits, color="tab:green", label="reused (hit_tokens)")
    ax.barh(names, rest, left=hits, color="lightgrey", label="prefill (uncached_tokens)")
    for i, n in enumerate(names):
        ax.text(hits[i] + rest[i] + 0.5, i, f"{ledgers[n]['reuse_ratio']:.0%}", va="center")
    ax.invert_yaxis()
    ax.set_xlabel("tokens")
    ax.legend(loc="lower right")
    ax.set_title("Prompt = reusable prefix + suffix")
    plt.show()
    total = sum(hits) + sum(rest)
    print(f"prefill work saved on this workload: {sum(hits)}/{total} tokens = {sum(hits) / total:.1%}")

# %% [markdown]
# ## What the ledger does not say
#
# `reuse_ratio` counts tokens. Whether reuse makes a server faster also depends on where the KV
# lives, how much memory it holds, and how long the suffix takes to prefill. Attention of the suffix
# still reads the whole prefix, and decode is not cheaper at all. Stage 6 measures time to first
# token with and without a cached prefix; stage 3 gives the KV a physical home (blocks), and stage 4
# decides what to forget when memory runs out.
