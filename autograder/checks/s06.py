"""Stage 6 spec and public checks: prefill that reuses cached KV blocks through a block table.

Everything a learner reads here exists in English and Chinese (``L(en, zh)``). Probes run a tiny
seeded model (2 layers, 4 query / 2 kv heads, head dim 16) or a hand-filled one-layer pool, and
return labelled records and tensor summaries (``tensor``: shape, dtype, device, values), so a
failure shows the largest difference and the first index where it occurs.

Each check is built to catch one kind of bug, and its hint speaks about that bug only: the
causal-mask, offset and block-table checks of TODO 4 use one kv head per query head (so a
grouped-query slip cannot fail them), the grouped-query check has no cache (so a missing offset
cannot fail it), and so on. The device contract is probed on PyTorch's ``meta`` device (shapes
and devices, no values), so a tensor created on the wrong device fails on a CPU-only machine too.
"""
from __future__ import annotations

import random

from autograder.checks.common import record, tensor
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s06",
    title=L("Paged prefill with a cached prefix", "分页 KV 与前缀复用的预填充"),
    summary=L("a paged-attention prefill that skips the cached prefix on a small Llama-style model",
              "在一个小型 Llama 式模型上实现分页 attention 的 prefill，跳过已缓存的前缀"),
    minutes=90,
    todos=[
        Todo("s06.suffix_positions", 1, target="suffix_positions", points=2,
             title=L("absolute positions of the uncached tokens", "未缓存 token 的绝对位置"),
             contract=L(
                 "Set positions: the absolute positions of the computed tokens.\n"
                 "They run from hit_tokens up to num_tokens - 1, in order, as an int64 tensor created on the\n"
                 "given device.\n"
                 "Invariant: the first computed token sits right after the cached prefix, because RoPE\n"
                 "rotates every token by its absolute position and the cached keys were rotated by theirs.",
                 "设置 positions：要计算的那些 token 的绝对位置。\n"
                 "从 hit_tokens 到 num_tokens - 1 按顺序排列，是一个直接建在给定设备（device）上的 int64 张量。\n"
                 "不变量：第一个要计算的 token 紧接在缓存前缀之后——RoPE 按绝对位置旋转每个 token，\n"
                 "缓存里的 key 也是按它们自己的绝对位置旋转的。"),
             hints=(L("The cached prefix already occupies positions 0 to hit_tokens - 1. The new tokens come "
                      "right after it, and RoPE needs those absolute numbers, not 0, 1, 2, ...",
                      "缓存前缀已经占了位置 0 到 hit_tokens - 1，新 token 紧跟在后面。RoPE 要的是这些绝对位置，"
                      "而不是 0, 1, 2, ..."),
                    L("Make a range of integers that starts at hit_tokens (included) and stops at num_tokens "
                      "(excluded). Ask for int64 and create it directly on the requested device, so the same "
                      "code works on a GPU.",
                      "生成一个从 hit_tokens（含）到 num_tokens（不含）的整数序列。指定 int64，并直接建在要求的设备上，"
                      "这样同一段代码在 GPU 上也能用。"),
                    L("positions = torch.arange(___, ___, dtype=___, device=___)",
                      "positions = torch.arange(___, ___, dtype=___, device=___)"))),
        Todo("s06.slot_mapping", 2, target="slot_mapping", points=2,
             twins=("kernels.paged_attention:_context_slots",),
             title=L("position → pool slot through the block table", "通过块表把位置映射到 KV 池槽位"),
             contract=L(
                 "Set slots: one int64 pool slot per entry of positions.\n"
                 "A position belongs to the request's block number position div block_size; the block table\n"
                 "names the physical block of the pool that holds it; the row inside the block is position\n"
                 "mod block_size; the flat slot is physical block times block_size plus row.\n"
                 "Invariant: any table order works (tables are shuffled and non-contiguous in general), and\n"
                 "the slots are computed with tensor operations on the positions' device, without copying\n"
                 "the positions to the host.",
                 "设置 slots：positions 里每个位置对应一个 int64 的 KV 池槽位。\n"
                 "一个位置属于请求的第（位置 整除 block_size）个块；块表给出这个块在 KV 池里的物理块；\n"
                 "块内的行号是 位置 模 block_size；平铺后的槽位 = 物理块号 × block_size + 行号。\n"
                 "不变量：块表是任意顺序都要对（块表一般是打乱的、不连续的）；槽位用张量运算在 positions 所在的\n"
                 "设备上算出来，不把 positions 拷回主机（CPU）。"),
             hints=(L("The block table translates the request's block number into the pool's physical block; "
                      "inside a block, the row is the same on both sides.",
                      "块表把“请求里的第几个块”翻译成 KV 池里的物理块；在块内部，行号两边是一样的。"),
                    L("Divide each position by the block size (integer division) to get its request block and "
                      "take the remainder as its row. Index `table` (the given code already made it a tensor on "
                      "the positions' device) with the tensor of request blocks, then combine block and row. No "
                      "Python loop: it would have to copy the positions to the host.",
                      "把每个位置整除块大小得到它在请求里的块号，余数就是行号。用这个块号张量去索引 `table`"
                      "（前面给定的代码已经把它变成了和 positions 同设备的张量），再把物理块号和行号合成槽位。"
                      "不要写 Python 循环：那样得先把 positions 拷回主机。"),
                    L("# block of the table, times the block size, plus the row inside the block\n"
                      "slots = table[___] * block_size + ___",
                      "# 块表里的物理块号乘以块大小，再加上块内的行号\n"
                      "slots = table[___] * block_size + ___"))),
        Todo("s06.write_kv", 3, target="write_kv", points=2,
             title=L("write the new K/V into the pool", "把新的 K/V 写进 KV 池"),
             contract=L(
                 "Store the new K and V rows in the pool, in place.\n"
                 "Row i of k and row i of v go to slot number i of slots, in layer `layer`: K into the pool's\n"
                 "K tensor, V into its V tensor (the layer's flat K and flat V are views of the pool, indexed\n"
                 "by slot).\n"
                 "Invariant: every other slot and every other layer keeps its content.",
                 "把新的 K、V 行原地存进 KV 池。\n"
                 "k 的第 i 行和 v 的第 i 行存到第 `layer` 层、slots 里第 i 个槽位上：K 写进 KV 池的 K 张量，\n"
                 "V 写进它的 V 张量（这一层的 flat K、flat V 是 KV 池的视图，按槽位索引）。\n"
                 "不变量：其他槽位、其他层的内容都保持不变。"),
             hints=(L("The pool is one big tensor per layer; a slot is one row of its flat view. Storing new "
                      "tokens' K/V means assigning rows of that view, in place.",
                      "KV 池每层就是一个大张量，一个槽位就是它平铺视图里的一行。存新 token 的 K/V，"
                      "就是原地给这个视图的若干行赋值。"),
                    L("Take the layer's flat K view and assign k to the rows that slots selects (indexing with a "
                      "tensor on the left of an assignment writes in place); do the same for v with the flat V "
                      "view. A copy (clone, a new tensor) would leave the pool unchanged.",
                      "取这一层的 flat K 视图，把 k 赋给 slots 选中的那些行（赋值号左边用张量做索引就是原地写入）；"
                      "v 也一样，写进 flat V 视图。注意别写进副本：写进拷贝（clone 出来的或新建的张量）的话，KV 池本身一点都不会变。"),
                    L("# write through the flat view itself: a copy would leave the pool unchanged\n"
                      "pool.flat_k(layer)[___] = k\n"
                      "pool.flat_v(layer)[___] = ___",
                      "# 直接通过展平视图写入：写到副本上，KV 池不会变\n"
                      "pool.flat_k(layer)[___] = k\n"
                      "pool.flat_v(layer)[___] = ___"))),
        Todo("s06.paged_attention", 4, target="paged_attention", points=3,
             title=L("causal attention over cached + new keys", "对缓存 key 与新 key 做因果 attention"),
             twins=("kernels.paged_attention:paged_attention_torch",
                    "kernels.triton_paged_attention:paged_attention_triton",
                    "kernels.triton_paged_attention:_paged_prefill_kernel"),
             contract=L(
                 "Set out, of shape [T, Hq, D]: causal attention through the pool.\n"
                 "The T new queries, at absolute positions offset to offset + T - 1, attend over the keys and\n"
                 "values of positions 0 to offset + T - 1, read from layer `layer` of the pool through the\n"
                 "block table. Query i may see key j exactly when j is at most offset + i. Query head h reads\n"
                 "kv head h div group (grouped-query attention).\n"
                 "Every tensor you create (positions, slots, mask) lives on the device of q.\n"
                 "Invariant: no position after offset + T - 1 is read, whatever stale content its slot holds.",
                 "设置 out，形状 [T, Hq, D]：经由 KV 池的因果 attention。\n"
                 "T 个新 query（绝对位置 offset 到 offset + T - 1）对位置 0 到 offset + T - 1 的 key、value\n"
                 "做 attention，K/V 通过块表从 KV 池的第 `layer` 层读出。\n"
                 "第 i 个 query 能看到第 j 个 key，当且仅当 j 不超过 offset + i。第 h 个 query 头读第\n"
                 "（h 整除 group）个 kv 头（分组查询注意力，GQA）。\n"
                 "你新建的张量（位置、槽位、掩码）都放在 q 所在的设备上。\n"
                 "不变量：offset + T - 1 之后的位置一律不读，不管它们的槽位里留着什么旧内容。"),
             hints=(L("New query i is the token at absolute position offset + i: it sees the whole cached prefix "
                      "plus the new tokens up to itself. So the causal mask is shifted by the hit length, and "
                      "K/V comes from the slots the block table gives, not from the start of the pool.",
                      "第 i 个新 query 就是绝对位置 offset + i 上的 token：它能看到整个缓存前缀，以及新 token 中"
                      "它自己和它之前的那些。所以因果掩码要按命中长度平移，K/V 要从块表给出的槽位读，而不是从 KV 池开头读。"),
                    L("Gather the K/V rows of positions 0 to offset + T - 1 with TODO 2's slot arithmetic (or call "
                      "slot_mapping). Repeat each kv head group times next to itself so that query heads line up "
                      "with kv heads. Build a boolean mask [T, offset + T], True where the key position is at most "
                      "the query position. Attend with F.scaled_dot_product_attention, which wants heads before "
                      "tokens. Create every arange on q's device.",
                      "用 TODO 2 的槽位算法（或直接调用 slot_mapping）取出位置 0 到 offset + T - 1 的 K/V 行。"
                      "把每个 kv 头就地重复 group 次，让 query 头和 kv 头一一对上。构造布尔掩码 [T, offset + T]："
                      "key 的位置不超过 query 的位置处为 True。用 F.scaled_dot_product_attention 计算，它要求头维在"
                      " token 维之前。所有 arange 都建在 q 的设备上。"),
                    L("n = offset + t\n"
                      "table = torch.as_tensor(block_table, dtype=torch.long, device=q.device)\n"
                      "key_pos = torch.arange(n, device=q.device)\n"
                      "# the pool slot of every key position, as in TODO 2\n"
                      "slots = ___\n"
                      "k = pool.flat_k(layer)[slots].repeat_interleave(___, dim=1)\n"
                      "v = pool.flat_v(layer)[slots].repeat_interleave(___, dim=1)\n"
                      "query_pos = torch.arange(___, n, device=q.device)\n"
                      "# query i sees the keys up to its own position\n"
                      "mask = ___\n"
                      "# [None] adds the batch dimension: SDPA's fused kernels take 4-D input only\n"
                      "out = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],\n"
                      "                                     v.transpose(0, 1)[None], attn_mask=mask)[0].transpose(0, 1)",
                      "n = offset + t\n"
                      "table = torch.as_tensor(block_table, dtype=torch.long, device=q.device)\n"
                      "key_pos = torch.arange(n, device=q.device)\n"
                      "# 每个 key 位置在 pool 里的槽位，和 TODO 2 一样\n"
                      "slots = ___\n"
                      "k = pool.flat_k(layer)[slots].repeat_interleave(___, dim=1)\n"
                      "v = pool.flat_v(layer)[slots].repeat_interleave(___, dim=1)\n"
                      "query_pos = torch.arange(___, n, device=q.device)\n"
                      "# 第 i 个 query 只看到它自己位置及之前的 key\n"
                      "mask = ___\n"
                      "# [None] 加上 batch 维：SDPA 的融合 kernel 只接受 4 维输入\n"
                      "out = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],\n"
                      "                                     v.transpose(0, 1)[None], attn_mask=mask)[0].transpose(0, 1)"))),
        Todo("s06.prefill", 5, target="PagedPrefiller.prefill", points=3,
             title=L("prefill only the suffix", "只对后缀做 prefill"),
             contract=L(
                 "Prefill only the tokens after the hit; set logits and ledger.\n"
                 "Admit the prompt into the engine's block manager and compute only the tokens after the hit:\n"
                 "the hit is the admission's hit_tokens, capped at the prompt length minus one (the last\n"
                 "token's logits are the point of prefill). Run the model on those tokens at their absolute\n"
                 "positions with an attend callback that stores each layer's new K/V at their slots and then\n"
                 "returns the engine's attention over the pool, with the block table and the hit as offset.\n"
                 "Commit the request, so its new full blocks hit later. Set logits (the model's last-token\n"
                 "logits) and ledger, a dict with hit_tokens and computed_tokens.\n"
                 "Invariant: the logits equal a full prefill's; every tensor you create (token ids, positions,\n"
                 "block table) lives on the engine's device.",
                 "只对命中之后的 token 做 prefill；设置 logits 和 ledger。\n"
                 "把提示词接纳（admit）进引擎的块管理器，只计算命中部分之后的 token：命中长度取 admission 的\n"
                 "hit_tokens，但最多是提示词长度减一（prefill 要的就是最后一个 token 的 logits）。在这些 token 的\n"
                 "绝对位置上运行模型，传入一个 attend 回调：它先把这一层新的 K/V 存到各自的槽位，再返回引擎的\n"
                 "attention 在 KV 池上的结果（块表，以及命中长度作为 offset）。然后提交（commit）这个请求，让它新的\n"
                 "满块以后能被命中。设置 logits（模型给出的最后一个 token 的 logits）和 ledger——一个包含 hit_tokens\n"
                 "和 computed_tokens 的字典。\n"
                 "不变量：logits 与完整 prefill 的一致；你新建的张量（token id、位置、块表）都放在引擎的设备上。"),
             hints=(L("A cached prefill is an ordinary prefill of the suffix, except that attention also reads the "
                      "prefix's K/V from the pool. Whatever the block manager reports as cached must be read from "
                      "there, not recomputed.",
                      "带缓存的 prefill 就是对后缀做一次普通的 prefill，只是 attention 还要从 KV 池里读前缀的 K/V。"
                      "块管理器说已经缓存的部分，必须从 KV 池里读，不能重新计算。"),
                    L("In order: admit; cap the hit so that at least one token is computed; positions (TODO 1) and "
                      "slots (TODO 2) on self.device; a nested attend(layer, q, k, v) that calls write_kv and then "
                      "returns self.attention(q, self.pool, layer, table, hit); run self.model on the suffix's token "
                      "ids with those positions and attend; commit; build the ledger.",
                      "依次：接纳（`admit`）；给命中长度封顶，保证至少计算一个 token；在 `self.device` 上算出位置"
                      "（TODO 1）和槽位（TODO 2）；定义一个内部函数 `attend(layer, q, k, v)`，先调用 `write_kv`，再返回 "
                      "`self.attention(q, self.pool, layer, table, hit)`；用后缀的 token id、这些位置和 `attend` 调用 "
                      "`self.model`；提交（`commit`）；最后写 ledger。"),
                    L("admission = self.blocks.admit(request_id, tokens)\n"
                      "# at least the last token is computed\n"
                      "hit = min(___, ___)\n"
                      "positions = suffix_positions(hit, len(tokens), device=self.device)\n"
                      "table = torch.tensor(admission.block_table, dtype=torch.long, device=self.device)\n"
                      "slots = slot_mapping(___, ___, self.block_size)\n"
                      "\n"
                      "def attend(layer, q, k, v):\n"
                      "    write_kv(self.pool, layer, ___, k, v)\n"
                      "    return self.attention(q, self.pool, layer, table, ___)\n"
                      "\n"
                      "token_ids = torch.tensor(___, dtype=torch.long, device=self.device)\n"
                      "logits = self.model(token_ids, positions, attend)\n"
                      "# the KV is written now: make the full blocks findable\n"
                      "___\n"
                      'ledger = {"hit_tokens": hit, "computed_tokens": ___}',
                      "admission = self.blocks.admit(request_id, tokens)\n"
                      "# 至少要计算最后一个 token\n"
                      "hit = min(___, ___)\n"
                      "positions = suffix_positions(hit, len(tokens), device=self.device)\n"
                      "table = torch.tensor(admission.block_table, dtype=torch.long, device=self.device)\n"
                      "slots = slot_mapping(___, ___, self.block_size)\n"
                      "\n"
                      "def attend(layer, q, k, v):\n"
                      "    write_kv(self.pool, layer, ___, k, v)\n"
                      "    return self.attention(q, self.pool, layer, table, ___)\n"
                      "\n"
                      "token_ids = torch.tensor(___, dtype=torch.long, device=self.device)\n"
                      "logits = self.model(token_ids, positions, attend)\n"
                      "# KV 已经写好：让这些满块能被找到\n"
                      "___\n"
                      'ledger = {"hit_tokens": hit, "computed_tokens": ___}'))),
    ],
    quiz=Quiz(number=6, points=2, questions=(
        Question("q1", L("A prompt of 20 tokens, blocks of 4, and its first 12 tokens are cached. At which absolute "
                         "position is the first token that prefill computes?",
                         "一个 20 个 token 的提示词，块大小为 4，前 12 个 token 已缓存。prefill 计算的第一个 token "
                         "在哪个绝对位置？"),
                 L("Positions count from the start of the prompt, cached tokens included: RoPE rotates by that number.",
                   "位置从提示词开头数起，缓存的 token 也算在内：RoPE 就是按这个数旋转的。"),
                 decimals=0),
        Question("q2", L("Block table [7, 2, 5], block size 4. Which flat pool slot holds position 9?",
                         "块表为 [7, 2, 5]，块大小为 4。位置 9 存在 KV 池的哪个平铺槽位？"),
                 L("Find the position's block in the request, look that block up in the table, then add the row.",
                   "先算出这个位置在请求里的第几个块，再去块表里查它的物理块，最后加上块内的行号。"),
                 decimals=0),
        Question("q3", L("Three new tokens follow six cached ones, and the mask lets query i see key j only when "
                         "j <= i (no offset). What happens?",
                         "6 个缓存 token 之后有 3 个新 token，掩码只在 j <= i 时让第 i 个 query 看到第 j 个 key"
                         "（没有平移）。会发生什么？"),
                 L("Write out query 0's absolute position, and which keys this mask lets it see.",
                   "写出第 0 个 query 的绝对位置，再看这个掩码让它看到了哪些 key。"),
                 choices=(L("nothing: a causal mask does not depend on the cache", "没有影响：因果掩码和缓存无关"),
                          L("the new queries see tokens after themselves", "新 query 会看到它后面的 token"),
                          L("each new query sees only the first few cached keys, so the logits are wrong",
                            "每个新 query 只看到最前面几个缓存 key，logits 因此出错"))),
        Question("q4", L("Grouped-query attention with 6 query heads and 2 kv heads. Which kv head does query head 4 "
                         "read (counting from 0)?",
                         "分组查询注意力：6 个 query 头，2 个 kv 头。第 4 个 query 头（从 0 数）读哪个 kv 头？"),
                 L("Consecutive query heads share a kv head: how many query heads does each kv head serve?",
                   "相邻的 query 头共用一个 kv 头：每个 kv 头服务几个 query 头？"),
                 choices=(L("kv head 0", "第 0 个 kv 头"), L("kv head 1", "第 1 个 kv 头"),
                          L("it reads both kv heads", "两个 kv 头都读"))),
        Question("q5", L("What does a prefix cache make cheaper?", "前缀缓存让什么变便宜了？"),
                 L("Ask which work is skipped when the K/V comes from the pool, and which work still reads it.",
                   "想一想：K/V 从 KV 池里读出来时，哪些计算被省掉了，哪些计算仍然要读它。"),
                 choices=(L("every decode step (TPOT) of a request whose prompt hit",
                            "提示词命中了的请求，其每一步 decode（TPOT）"),
                          L("the prefill of the cached tokens, and so TTFT", "已缓存 token 的 prefill，从而降低 TTFT"),
                          L("the new tokens' attention to the cached prefix", "新 token 对缓存前缀的 attention"))),
        Question("q6", L("The seed article counts about 97% of prefill compute saved for 4,096 cached and 128 new "
                         "tokens; the course's FLOP model gives about 96% on Qwen2.5-0.5B. Where does the gap come from?",
                         "常见的入门估算是：缓存 4,096 个 token、新来 128 个 token 时，约省下 97% 的 prefill 计算；本课程的 FLOP 模型"
                         "在 Qwen2.5-0.5B 上给出约 96%。差距从哪里来？"),
                 L("Split prefill into work that scales with the tokens computed and work that scales with the keys "
                   "each of them reads.", "把 prefill 拆成两部分：随计算的 token 数增长的，和随每个 token 读的 key 数增长的。"),
                 choices=(L("hashing the prompt's blocks costs FLOPs", "对提示词分块做哈希要花 FLOPs"),
                          L("the new tokens still attend to every cached key", "新 token 仍然要对每个缓存 key 做 attention"),
                          L("RoPE has to be applied to the cached keys again", "缓存的 key 要重新做一次 RoPE"))),
    )),
    time_limit_s=30,
    memory_limit_mb=4096,  # torch alone maps well over 1 GiB of address space
    preload=["torch"],
)

ATOL = 1e-4  # fp32: a cached prefill must match a full prefill this closely
ATTN_ATOL = 1e-5  # one attention call in fp32


# -- helpers shared with the hidden checks ----------------------------------------------------------
def tiny_model(seed: int = 0):
    """The probes' model: ``kernels``' tiny config with seeded random weights (a few ms to build)."""
    from kernels.model import DecoderLM, ModelConfig

    return DecoderLM.random(ModelConfig.tiny(), seed=seed)


def rand_tokens(seed: int, n: int, vocab: int = 512) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def not_a_tensor(x) -> str | None:
    import torch

    return None if isinstance(x, torch.Tensor) else f"not a tensor: {type(x).__name__}"


def values(x, decimals: int = 6) -> object:
    """A tensor as shape, dtype, device and values (``tensor``); anything else as a one-line description."""
    return not_a_tensor(x) or tensor(x, decimals)


def int_values(x) -> object:
    """A tensor's values as int64 (its dtype is another check's business)."""
    return not_a_tensor(x) or tensor(x.long())


def meta_device() -> str:
    """The ``meta`` device (shapes and devices, no values), ready for the probes.

    The first elementwise op on it imports ``torch._dynamo`` (about 1.5 s of CPU, paid only by the
    probes that need it). That import asks :mod:`tempfile` for a directory, which tries to create and
    delete a file; a grading child may not delete files, so torch then gets the child's own working
    directory for its cache (never used by these probes)."""
    import os
    import sys
    import tempfile

    if "torch._dynamo" not in sys.modules and "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        try:
            tempfile.gettempdir()
        except OSError:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.getcwd()
    return "meta"


def on_meta(action):
    """``action()``, which runs learner code on meta tensors. Copying a meta tensor to the host (tolist,
    cpu, numpy) makes torch raise ``NotImplementedError("Cannot copy out of meta tensor")``, which the
    grader would read as an unfinished TODO: it becomes a ``RuntimeError`` saying what happened."""
    try:
        return action()
    except NotImplementedError as exc:
        if "meta tensor" not in str(exc):
            raise
        raise RuntimeError(f"a tensor was copied to the host (tolist, cpu, numpy ...): {exc}") from None


def device_of(x) -> object:
    """Where a tensor lives. A ``meta`` tensor has a shape and a device, but no values to compare."""
    return not_a_tensor(x) or record(device=x.device.type)


def attention_inputs(n: int, table: list[int], offset: int, *, group: int = 1, block_size: int = 4,
                     num_blocks: int = 8, seed: int = 0, device: str = "cpu"):
    """A one-layer pool holding random K/V of positions 0..n-1 at the slots ``table`` gives, and the
    queries of positions offset..n-1. Unused slots hold noise, so reading a wrong slot changes the answer.
    On ``device="meta"`` nothing has values: only shapes and devices."""
    import torch

    from kernels.kv_pool import KVPool

    hkv, d = 2, 8
    pool = KVPool(1, num_blocks, block_size, hkv, d, device=device)
    if device == "meta":
        return pool, torch.empty(n - offset, hkv * group, d, device=meta_device())
    gen = torch.Generator().manual_seed(seed)
    pool.k[0].normal_(generator=gen)
    pool.v[0].normal_(generator=gen)
    q = torch.randn(n, hkv * group, d, generator=gen)
    k, v = torch.randn(n, hkv, d, generator=gen), torch.randn(n, hkv, d, generator=gen)
    for p in range(n):  # placed by hand, so TODOs 2 and 3 are not needed to set the probe up
        pool.k[0][table[p // block_size], p % block_size] = k[p]
        pool.v[0][table[p // block_size], p % block_size] = v[p]
    return pool, q[offset:]


def attend(impl, n: int, table: list[int], offset: int, **kw) -> object:
    pool, q = attention_inputs(n, table, offset, **kw)
    return values(impl.paged_attention(q, pool, 0, table, offset))


def prefill_report(logits, ledger) -> object:
    return record(ledger=ledger, logits=values(logits, decimals=5))


def cached_engine(impl, model, system: list[int], *, num_blocks: int = 32, block_size: int = 4, blocks=None):
    """An engine whose pool already caches ``system`` (prefilled once with a one-token question)."""
    engine = impl.PagedPrefiller(model, num_blocks, block_size, blocks=blocks)
    engine.prefill(system + [1])
    return engine


def whole_prompt_pool(impl, num_blocks: int, block_size: int):
    """A stage-3 pool whose lookup may hit every full block, even of a fully cached prompt
    (as a token-granular cache like stage 5's radix tree could)."""

    class WholePromptPool(impl.BlockPool):
        def lookup(self, keys, num_tokens):
            hits = []
            for key in keys:
                block = self.cached.get(key)
                if block is None:
                    break
                hits.append(block)
            return hits

    return WholePromptPool(num_blocks, block_size)


def meta_model():
    """The tiny model on the ``meta`` device, recording where the token ids and positions it is called
    with live (a meta embedding accepts CPU token ids, a GPU one does not: the record catches that)."""
    import torch

    from kernels.model import DecoderLM, ModelConfig

    class DeviceRecorder(DecoderLM):
        def forward(self, token_ids, positions=None, attention=None, **kw):
            self.seen = record(token_ids=getattr(getattr(token_ids, "device", None), "type", type(token_ids).__name__),
                               positions=getattr(getattr(positions, "device", None), "type", type(positions).__name__))
            return super().forward(token_ids, positions, attention, **kw)

    with torch.device(meta_device()):
        return DeviceRecorder(ModelConfig.tiny())


# -- TODO 1: suffix_positions ---------------------------------------------------------------------
@STAGE.check("s06.suffix_positions", call="suffix_positions(8, 13)",
             title=L("continues after the cached prefix", "接在缓存前缀之后"),
             hint=L("The computed tokens continue after the hit: positions hit_tokens to num_tokens - 1, not from 0.",
                    "要计算的 token 接在命中部分之后：位置是 hit_tokens 到 num_tokens - 1，而不是从 0 开始。"))
def after_a_hit(impl):
    return int_values(impl.suffix_positions(8, 13))


@STAGE.check("s06.suffix_positions", call="suffix_positions(0, 3)",
             title=L("no hit: every position from 0", "没有命中：从 0 开始的所有位置"),
             hint=L("With no hit every token is computed: positions 0 to num_tokens - 1, the last one included.",
                    "没有命中时每个 token 都要计算：位置 0 到 num_tokens - 1，最后一个也要包含。"))
def without_a_hit(impl):
    return int_values(impl.suffix_positions(0, 3))


@STAGE.check("s06.suffix_positions", call="suffix_positions(2, 5).dtype",
             title=L("positions are int64", "位置是 int64"),
             hint=L("Positions index tables and feed RoPE: make them int64 (torch.long), not floats.",
                    "位置要用来索引块表、也要送进 RoPE：用 int64（torch.long），不要用浮点数。"))
def positions_are_int64(impl):
    out = impl.suffix_positions(2, 5)
    return not_a_tensor(out) or record(dtype=str(out.dtype).removeprefix("torch."))


@STAGE.check("s06.suffix_positions", call='suffix_positions(3, 7, device="meta")',
             title=L("created on the requested device", "建在要求的设备上"),
             hint=L("Create the positions on the device you are given (device=...): a tensor made without it "
                    "lands on the CPU, and a GPU model cannot use it.",
                    "在传入的设备上创建位置张量（device=...）：不指定设备的张量会落在 CPU 上，GPU 上的模型用不了。"))
def created_on_the_device(impl):
    return device_of(on_meta(lambda: impl.suffix_positions(3, 7, device=meta_device())))


# -- TODO 2: slot_mapping -------------------------------------------------------------------------
@STAGE.check("s06.slot_mapping", call="slot_mapping([5, 2, 9], torch.arange(12), block_size=4)",
             title=L("every position of a shuffled table", "打乱块表下的每个位置"),
             hint=L("Position p is row p % B of physical block table[p // B]: its slot is that block's first "
                    "slot (block × B) plus the row.",
                    "位置 p 是物理块 table[p // B] 的第 p % B 行：槽位 = 这个块的第一个槽位（块号 × B）+ 行号。"))
def whole_table(impl):
    import torch

    return values(impl.slot_mapping([5, 2, 9], torch.arange(12), 4))


@STAGE.check("s06.slot_mapping", call="slot_mapping([7, 3], torch.tensor([5, 6, 7]), block_size=4)",
             title=L("a suffix starts inside the table", "后缀从块表中间开始"),
             hint=L("Look each position itself up (position 5 is in the table's second block); do not number "
                    "the given positions from 0.",
                    "按位置本身去查（位置 5 在块表的第二个块里）；不要把传入的位置重新从 0 编号。"))
def suffix_positions_only(impl):
    import torch

    return values(impl.slot_mapping([7, 3], torch.tensor([5, 6, 7]), 4))


@STAGE.check("s06.slot_mapping", call="slot_mapping([4, 0, 2], torch.arange(3), block_size=1)",
             title=L("block size 1", "块大小为 1"),
             hint=L("With block size 1 every position is a block of its own: its slot is the table's entry for it, "
                    "so the table's order is the request's order, not the pool's.",
                    "块大小为 1 时每个位置自成一块：它的槽位就是块表里对应的那一项——块表的顺序是请求的顺序，不是 KV 池的顺序。"))
def block_size_one(impl):
    import torch

    return values(impl.slot_mapping([4, 0, 2], torch.arange(3), 1))


@STAGE.check("s06.slot_mapping", call='slot_mapping([5, 2, 9], torch.arange(4, 9, device="meta"), 4)',
             title=L("stays on the positions' device", "留在 positions 所在的设备上"),
             hint=L("Compute the slots from the positions with tensor operations, so they stay on the positions' "
                    "device; a list built in Python (through tolist or a loop) goes through the host and ends on the CPU.",
                    "用张量运算从 positions 算出槽位，结果才会留在 positions 的设备上；用 Python 列表（tolist 或循环）"
                    "拼出来的结果要经过主机，最后落在 CPU 上。"))
def stays_on_the_device(impl):
    import torch

    return device_of(on_meta(lambda: impl.slot_mapping([5, 2, 9], torch.arange(4, 9, device=meta_device()), 4)))


@STAGE.check("s06.slot_mapping", call="slot_mapping(torch.tensor([3, 8, 1]), torch.tensor([2, 3, 4, 8]), block_size=3)",
             title=L("a block table given as a tensor", "以张量形式给出的块表"),
             hint=L("The table may come as a list or as a tensor: index the tensor the given code made of it "
                    "(table), with the request block of each position, and add the row.",
                    "块表可能是列表，也可能是张量：用给定代码转换出来的那个张量（table），按每个位置所在的请求块去索引，"
                    "再加上块内行号。"))
def table_given_as_a_tensor(impl):
    import torch

    return values(impl.slot_mapping(torch.tensor([3, 8, 1]), torch.tensor([2, 3, 4, 8]), 3))


# -- TODO 3: write_kv -----------------------------------------------------------------------------
def _write_probe(impl, slots: list[int], layer: int = 0, num_layers: int = 1) -> list:
    """Write distinct K (rows 1, 2, 3, ...) and V (-1, -2, ...) rows; report, per layer, which slot holds which row."""
    import torch

    from kernels.kv_pool import KVPool

    pool = KVPool(num_layers, 4, 4, 2, 4)
    n = len(slots)
    k = torch.arange(1, n + 1, dtype=torch.float32)[:, None, None].expand(n, 2, 4).contiguous()
    impl.write_kv(pool, layer, torch.tensor(slots), k, -k)
    where = []
    for lay in range(num_layers):
        fk, fv = pool.flat_k(lay), pool.flat_v(lay)
        where.append(record(
            k_rows={s: round(float(fk[s].mean()), 4) for s in range(pool.num_slots) if fk[s].abs().sum() > 0},
            v_rows={s: round(float(fv[s].mean()), 4) for s in range(pool.num_slots) if fv[s].abs().sum() > 0}))
    return where


@STAGE.check("s06.write_kv", call="write_kv(pool, 0, torch.tensor([13, 2, 7]), k, v)  # k rows 1, 2, 3; v = -k",
             title=L("each row lands in its slot", "每一行落在自己的槽位"),
             hint=L("Row i of k and v must end up in the pool itself, at slot slots[i] of the layer's flat view "
                    "(not at slot i, not in a copy).",
                    "k、v 的第 i 行必须写进 KV 池本身，落在这一层平铺视图的 slots[i] 槽位上（不是第 i 个槽位，也不是写进副本）。"))
def rows_land_in_their_slots(impl):
    return _write_probe(impl, [13, 2, 7])


@STAGE.check("s06.write_kv", call="write_kv(pool, 1, torch.tensor([0, 1]), k, v)  # pool: 2 layers",
             title=L("only the given layer", "只写给定的那一层"),
             hint=L("Write only layer `layer`; every other layer keeps its K/V.",
                    "只写第 `layer` 层；其他层的 K/V 保持不变。"))
def only_its_layer(impl):
    return _write_probe(impl, [0, 1], layer=1, num_layers=2)


@STAGE.check("s06.write_kv",
             call=L("write_kv(pool, 0, torch.tensor([11, 4]), k, v)  # v = -k; wherever a row landed, is V there -K?",
                    "write_kv(pool, 0, torch.tensor([11, 4]), k, v)  # v = -k；不管某一行落在哪里，那里的 V 是否等于 -K？"),
             specificity=1,
             title=L("V goes to the V pool", "V 写进 V 的 KV 池"),
             hint=L("v belongs in the layer's flat V view, k in its flat K view: never the same tensor for both.",
                    "v 写进这一层的 flat V 视图，k 写进 flat K 视图：两者不能写同一个张量。"))
def v_is_not_k(impl):
    rows = _write_probe(impl, [11, 4])[0]
    k_rows, v_rows = rows["k_rows"], rows["v_rows"]
    # only the pairing of K and V is judged here (where the rows land is another check's business)
    return record(v_is_minus_k_wherever_written=set(k_rows) == set(v_rows)
                  and all(v_rows[s] == -k_rows[s] for s in k_rows))


@STAGE.check("s06.write_kv",
             call=L("write_kv(pool, 0, torch.tensor([6, 0, 9]), k, v); then write_kv(pool, 0, torch.tensor([0]), "
                    "k2, v2)  # the slot is reused: k rows 1, 2, 3, then 5; v = -k",
                    "write_kv(pool, 0, torch.tensor([6, 0, 9]), k, v)；再 write_kv(pool, 0, torch.tensor([0]), "
                    "k2, v2)  # 槽位被重新使用：k 的各行依次是 1、2、3，然后是 5；v = -k"),
             title=L("a reused slot is overwritten", "被重新使用的槽位会被覆盖"),
             hint=L("A slot that is written again holds the new row only (assign, do not add to what is there: a "
                    "reused block's old K/V must not leak into the new one); the other slots keep theirs.",
                    "再次写入的槽位只保留新的那一行（要赋值，不能加到原有内容上：被重新使用的块里的旧 K/V 不能混进新内容）；"
                    "其他槽位保持原样。"))
def overwrite_replaces_the_row(impl):
    import torch

    from kernels.kv_pool import KVPool

    pool = KVPool(1, 4, 4, 2, 4)
    k = torch.arange(1, 4, dtype=torch.float32)[:, None, None].expand(3, 2, 4).contiguous()
    impl.write_kv(pool, 0, torch.tensor([6, 0, 9]), k, -k)
    k2 = torch.full((1, 2, 4), 5.0)
    impl.write_kv(pool, 0, torch.tensor([0]), k2, -k2)
    fk, fv = pool.flat_k(0), pool.flat_v(0)
    return record(k_rows={s: round(float(fk[s].mean()), 4) for s in range(pool.num_slots) if fk[s].abs().sum() > 0},
                  v_rows={s: round(float(fv[s].mean()), 4) for s in range(pool.num_slots) if fv[s].abs().sum() > 0})


# -- TODO 4: paged_attention ----------------------------------------------------------------------
@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [0, 1], 0)  # T=5, Hq=Hkv=2",
             title=L("a causal mask", "因果掩码"), atol=ATTN_ATOL,
             hint=L("Query i may see keys 0 to i, its own position included: mask every key after the query's own "
                    "position, and only those.",
                    "第 i 个 query 能看到 key 0 到 i，包括它自己的位置：只把 query 自身位置之后的 key 遮住。"))
def causal_mask(impl):
    return attend(impl, 5, [0, 1], 0)


@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [0, 1, 2], 6)  # T=3, Hq=Hkv=2",
             title=L("the mask is shifted by the offset", "掩码按 offset 平移"), atol=ATTN_ATOL,
             hint=L("New query i sits at absolute position offset + i: it sees keys 0 to offset + i, the whole "
                    "cached prefix included. Shift the causal mask by offset.",
                    "第 i 个新 query 位于绝对位置 offset + i：它能看到 key 0 到 offset + i，包括整个缓存前缀。"
                    "因果掩码要按 offset 平移。"))
def offset_shifts_the_mask(impl):
    return attend(impl, 9, [0, 1, 2], 6)


@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [3, 0], 0)  # T=7, Hq=Hkv=2",
             title=L("K/V read through the block table", "通过块表读取 K/V"), atol=ATTN_ATOL,
             hint=L("Read K/V through the block table: position p is in physical block table[p // B], which is "
                    "not block p // B of the pool.",
                    "要通过块表读 K/V：位置 p 在物理块 table[p // B] 里，而不是 KV 池的第 p // B 个块。"))
def reads_through_the_table(impl):
    return attend(impl, 7, [3, 0], 0)


@STAGE.check("s06.paged_attention", call="paged_attention(q, pool, 0, [0, 1], 0)  # T=5, Hq=6, Hkv=2",
             title=L("grouped-query heads", "分组查询注意力的头对应"), atol=ATTN_ATOL,
             hint=L("Query head h reads kv head h // group: repeat each kv head in place (0, 0, 0, 1, 1, 1), "
                    "not the whole set (0, 1, 0, 1, 0, 1).",
                    "第 h 个 query 头读第 h // group 个 kv 头：每个 kv 头就地重复（0, 0, 0, 1, 1, 1），"
                    "而不是整组重复（0, 1, 0, 1, 0, 1）。"))
def grouped_query_heads(impl):
    return attend(impl, 5, [0, 1], 0, group=3)


@STAGE.check("s06.paged_attention", call='paged_attention(q, pool, 0, [3, 0, 5], 6)  # q, pool: device="meta"; T=3, Hq=4, Hkv=2',
             title=L("helper tensors on q's device", "辅助张量建在 q 的设备上"),
             hint=L("Create positions, slots and the mask on q's device (device=q.device): a tensor made without "
                    "it lands on the CPU and cannot meet q on a GPU.",
                    "位置、槽位和掩码都要建在 q 的设备上（device=q.device）：不指定设备的张量会落在 CPU 上，"
                    "和 GPU 上的 q 无法一起计算。"))
def helpers_on_q_device(impl):
    pool, q = attention_inputs(9, [3, 0, 5], 6, group=2, device="meta")
    return device_of(on_meta(lambda: impl.paged_attention(q, pool, 0, [3, 0, 5], 6)))


# -- TODO 5: prefill ------------------------------------------------------------------------------
@STAGE.check("s06.prefill", call="PagedPrefiller(model, 32, 4).prefill(p10)",
             title=L("a cold prompt", "冷启动的提示词"), atol=ATOL,
             hint=L("Nothing is cached yet: compute every token (hit 0) and return the last token's logits.",
                    "还什么都没缓存：计算所有 token（命中 0），返回最后一个 token 的 logits。"))
def cold_prompt(impl):
    model = tiny_model()
    logits, ledger = impl.PagedPrefiller(model, 32, 4).prefill(rand_tokens(1, 10))
    return prefill_report(logits, ledger)


@STAGE.check("s06.prefill", call="engine.prefill(system16 + [1]); engine.prefill(system16 + q5)",
             title=L("a hit at a block boundary", "在块边界处命中"), atol=ATOL,
             hint=L("The first request's 16 tokens are committed, so the second one hits them: compute only the "
                    "5 tokens after the hit, at their absolute positions, with the hit as attention offset.",
                    "第一个请求的 16 个 token 已经提交，第二个请求会命中它们：只计算命中之后的 5 个 token，"
                    "用它们的绝对位置，并以命中长度作为 attention 的 offset。"))
def hit_at_block_boundary(impl):
    model = tiny_model()
    system = rand_tokens(2, 16)
    engine = cached_engine(impl, model, system)
    logits, ledger = engine.prefill(system + rand_tokens(3, 5))
    return prefill_report(logits, ledger)


@STAGE.check("s06.prefill", call=L("engine.prefill(p16); engine.prefill(p16)  # block size 4; both ledgers",
                                     "engine.prefill(p16)；engine.prefill(p16)  # 块大小为 4；两次的 ledger"),
             title=L("the same prompt twice", "同一个提示词两次"), atol=ATOL,
             specificity=1,
             hint=L("Commit after the model ran: the second, identical prompt must hit the blocks the first one wrote.",
                    "模型跑完之后要提交（`commit`）：第二个完全相同的提示词必须命中第一个写下的块。"))
def whole_prompt_again(impl):
    model = tiny_model()
    prompt = rand_tokens(4, 16)
    engine = impl.PagedPrefiller(model, 32, 4)
    _, first = engine.prefill(prompt)
    _, second = engine.prefill(prompt)
    # the ledgers only: whether the first prompt's blocks were committed (the logits are other checks' business)
    return record(first_ledger=first, second_ledger=second)


@STAGE.check("s06.prefill", call="engine.prefill(system16 + [1]); engine.pool.k[layer] *= -1; engine.prefill(system16 + q3)",
             title=L("the answer follows the pool", "结果随 KV 池内容而变"), atol=1e-3,
             hint=L("The cached tokens' K/V must be read from the pool, not recomputed: change the pool and the "
                    "answer must change with it.",
                    "缓存 token 的 K/V 必须从 KV 池里读，不能重新计算：KV 池变了，结果也必须跟着变。"))
def output_follows_the_pool(impl):
    import torch

    model = tiny_model()
    system = rand_tokens(5, 16)
    engine = cached_engine(impl, model, system)
    for layer in range(model.config.num_hidden_layers):
        engine.pool.k[layer].mul_(-1.0)
    logits, ledger = engine.prefill(system + rand_tokens(6, 3))
    if not isinstance(logits, torch.Tensor):
        return record(ledger=ledger, logits=not_a_tensor(logits))
    top = torch.topk(logits.float(), 3)
    return record(ledger=ledger, top3_tokens=top.indices.tolist(), top3_logits=[float(x) for x in top.values])


@STAGE.check("s06.prefill", call="PagedPrefiller(model, 32, 4, blocks=WholePromptPool(32, 4)); prefill(p16) twice",
             title=L("at least one token is computed", "至少计算一个 token"), atol=ATOL,
             hint=L("Whatever the block manager reports, compute at least the last token: cap the hit at "
                    "len(prompt) - 1.",
                    "不管块管理器报告什么，至少要计算最后一个 token：命中长度最多取 len(提示词) - 1。"))
def manager_reports_everything_cached(impl):
    model = tiny_model()
    prompt = rand_tokens(7, 16)
    engine = impl.PagedPrefiller(model, 32, 4, blocks=whole_prompt_pool(impl, 32, 4))
    engine.prefill(prompt)
    logits, ledger = engine.prefill(prompt)
    return prefill_report(logits, ledger)


@STAGE.check("s06.prefill", call='engine = PagedPrefiller(model_on_meta, 32, 4); engine.prefill(system16 + [1]); engine.prefill(system16 + q3)',
             title=L("tensors on the engine's device", "张量建在引擎的设备上"),
             hint=L("Create the token ids, positions and block table on self.device (the model's device), "
                    "not on the default CPU.",
                    "token id、位置和块表都要建在 self.device（模型所在的设备）上，而不是默认的 CPU 上。"))
def tensors_on_the_engine_device(impl):
    model = meta_model()
    system = rand_tokens(8, 16)
    engine = on_meta(lambda: cached_engine(impl, model, system))
    logits, _ = on_meta(lambda: engine.prefill(system + rand_tokens(9, 3)))
    return record(model_called_with=getattr(model, "seen", "the model was not called"), logits=device_of(logits))
