"""What each predict-then-run demo says once the answer is out, in both languages.

The explanations name the answer, so they live here and not in the notebook cell under the
prediction: the cell shows only ``reveal(my_guess, answer, why("sNN.my_guess"))``. A text with
fields is filled from the run (``why("s04.my_guess_2", belady=...)``). The notebook sources of every
stage import this module; it imports nothing of the course but its text type.

[zh]
每个“先预测，再运行”演示在揭晓答案之后说的话（中英双语）。这些解释会说出答案，所以放在这里，而不放在
预测下面的笔记本单元里：单元里只有 ``reveal(my_guess, answer, why("sNN.my_guess"))``。带占位符的文本由
这次运行的数值填入（``why("s04.my_guess_2", belady=...)``）。
"""
from __future__ import annotations

from autograder.i18n import L, text

#: prediction id (stage and guess variable) -> what the demo says after the answer
WHY: dict[str, L] = {
    "s01.my_guess": L(
      "Token 23 is not token 2: the KV of position 1 was computed for 23. Ids are compared, never digits.",
      "token 23 不是 token 2：第 1 个位置的 KV 是为 23 算的。比较的是 id，"
      "而不是数字的文本。"),
    "s01.my_guess_2": L(
      "This manager reuses whole registered prefixes only: 20 shared tokens are not the 40 of A. Stage "
      "2 reuses block by block, stage 5 token by token.",
      "这个管理器只复用完整的已登记前缀：共享的 20 个 token 不等于 A 的全部 40 个。第 "
      "2 阶段按块复用，第 5 阶段按 token 复用。"),
    "s02.my_guess": L(
      "hash() of a str is salted per process; sha256 is the same everywhere, so only it can name a "
      "shared cache entry.",
      "str 的 hash() 每个进程加的盐都不同；sha256 在哪里都一样，所以只有它能给共享的缓存条目命名。"),
    "s02.my_guess_2": L(
      "Same token, different key: the key of the '?' digests every key before it, and those saw 'France' "
      "or 'Spain'. A hash of the block alone would wrongly call them equal.",
      "token 相同，key 不同：'?' 的 key 摘要了它前面的每一个 key，而那些 key "
      "分别见过 'France' 和 'Spain'。如果只对块本身做哈希，就会错误地认为两者相同。"),
    "s02.my_guess_3": L(
      "The salt is digested into the key of block 0, and every later key chains on it: no key of tenant "
      "B can equal one of the table's.",
      "盐值被摘要进第 0 块的 key，之后的每个 key 又都接在它后面：租户 B 的 key 没有一个能等于表里的 "
      "key。"),
    "s03.my_guess": L(
      "Only full blocks get keys: A's 3-token tail was never registered, so C recomputes it.",
      "只有满块才有 key：A 那个 3 个 token 的尾块从没登记过，所以 C 要重新计算它。"),
    "s03.my_guess_2": L(
      "Releasing a request frees its blocks but keeps their keys: #0 and #1 (the system prompt) and "
      "#3 (B's full question block) stay cached until the free queue hands them out.",
      "释放请求会让它的块空闲，但 key 保留：#0、#1（system prompt）和 #3（B "
      "问题部分的满块）会一直缓存着，直到空闲队列把它们分配出去。"),
    "s03.my_guess_3": L(
      "Reviving #0 and #1 takes them out of the free queue, which leaves 2 free blocks for 3 fresh "
      "ones: refused, and nothing changed.",
      "重新启用 #0 和 #1 会把它们移出空闲队列，只剩 2 个空闲块，却需要 3 个新块：被拒绝，"
      "状态没有任何改变。"),
    "s04.my_guess": L(
      "Freed head first, LRU evicts the first two system blocks; the blocks left behind hang off a "
      "missing prefix and can never hit.",
      "从头部释放时，LRU 淘汰的是 system prompt 的前两块；剩下的块挂在一个缺失的前缀后面，"
      "再也不可能命中。"),
    "s04.my_guess_2": L(
      "Each prompt is evicted just before its turn comes again, so LRU gets nothing; Belady, which "
      "keeps a fixed subset, gets {belady:.2f} at the same size.",
      "每个提示词都恰好在轮到它之前被淘汰，所以 LRU 什么也命中不了；而 Belady 固定保留其中一部分，"
      "同样的容量下能达到 {belady:.2f}。"),
    "s04.my_guess_3": L(
      "LRU {lru:.3f}, with pinning {pin:.3f}: nearly every conversation shares only one short first "
      "block, and most reuse is a conversation's next turn, which pins cannot predict.",
      "LRU 为 {lru:.3f}，加上固定后为 {pin:.3f}：几乎所有对话只共享一个很短的开头块，"
      "大部分复用来自同一个对话的下一轮，而这是固定预测不了的。"),
    "s04.my_guess_4": L(
      "LRU {lru:.3f} against Belady {belady:.3f}: recency alone leaves most of what a small cache could "
      "hold on the table.",
      "LRU 为 {lru:.3f}，Belady 为 {belady:.3f}：只看最近使用的时间，"
      "小缓存本可以拿到的命中大部分都浪费了。"),
    "s05.my_guess": L(
      "The second insert splits the first edge after 'the c' (TODO 1) and hangs 'ow ran' below it as "
      "one new leaf: 'the c', 'at sat' and 'ow ran'. The shared part is stored once.",
      "第二次插入在 'the c' 之后把第一条边切开（TODO 1），再把 'ow ran' 作为一个新叶子挂在下面："
      "'the c'、'at sat' 和 'ow ran'。共享的部分只存一份。"),
    "s05.my_guess_2": L(
      "Leaves by last access: B's own part (t=2), C (t=3), A's own part (t=4: matching A again refreshed "
      "its whole path, the system prompt included). The system prompt is not a leaf while A's part "
      "hangs below it.",
      "按最近访问时间排列叶子：B 自己的部分（t=2）、C（t=3）、A 自己的部分（t=4：再次匹配 "
      "A 刷新了它的整条路径，包括 system prompt）。A 的部分还挂在下面，所以 system "
      "prompt 不是叶子。"),
    "s05.my_guess_3": L(
      "Only full blocks are shared: 18 blocks of 16 hold 288 prompt tokens; the 19th block mixes the "
      "prompt's last 12 tokens with the request's own fresh ones, so no other request has it.",
      "只有满块才能共享：18 个 16 token 的块装下 288 个提示词 token；第 19 "
      "块混着提示词的最后 12 个 token 和这个请求自己的新 token，别的请求不会有同样的块。"),
    "s05.my_guess_4": L(
      "Per request, your evict had {large:,.0f} unlocked leaves to look at in the larger cache against "
      "{small:,.0f} in the small one ({growth:.0f}x as many, counted): an evict that keeps nothing between "
      "calls looks at every unlocked leaf on every call, and the larger cache holds far more of them. The "
      "incremental one pays only for what it drops. Measured on this machine, your evict's time per request "
      "grew {measured:.0f}x; that time also pays for matching and inserting each prompt, work that barely "
      "depends on the cache's size.",
      "每个请求里，你的 evict 在大缓存中要查看 {large:,.0f} 个未加锁叶子，在小缓存中只有 {small:,.0f} 个"
      "（数出来的，是它的 {growth:.0f} 倍）：在两次调用之间什么都不保留的 evict，每次调用都要看一遍所有未加锁的"
      "叶子，而大缓存里这样的叶子多得多。增量版本只为它淘汰掉的东西付出代价。在这台机器上实测，大缓存里你的 "
      "evict 每个请求的耗时是小缓存的 {measured:.0f} 倍；这个耗时里还包括每条提示词的匹配和插入，这部分工作"
      "和缓存大小基本无关。"),
    "s06.my_guess": L(
      "This cache works in full blocks (stage 2's keys): the tail block is not cached, so each step "
      "recomputes it. A real decoder keeps the request's own partial block and computes one token per "
      "step.",
      "这个缓存以满块为单位（第 2 阶段的 key）：尾块不进缓存，所以每一步都要把它重算一遍。真实的解码器会保留请求自己那个未满的块，"
      "每一步只算 1 个 token。"),
    "s06.my_guess_2": L(
      "The linear part saves exactly the token ratio (0.97); attention saves less, because the new "
      "tokens still read every cached key. So the whole saves a little less than 97 %, and the speedup "
      "is well below 33x.",
      "线性部分节省的正好是 token 比例（0.97）；attention 省得少，因为新 token "
      "仍然要读每一个缓存 key。所以总的节省略低于 97%，加速比也明显低于 33 倍。"),
    "s06.my_guess_3": L(
      "The FLOP model runs every kind of work at one rate; real hardware does not, and the gap can "
      "go either way (the next cell explains why).",
      "FLOP 模型假设各类工作都以同一速率运行；真实硬件并非如此，偏差可能朝任一方向（下一个单元解释原因）"
      "。"),
    "s06.my_guess_4": L(
      "Head first, the oldest prompt loses its first blocks, and a prompt without its first block hits "
      "nothing. Tail first, every prompt keeps a prefix that still hits.",
      "按从头到尾的顺序释放，最早的提示词先丢掉开头的块，而没有第一个块的提示词什么也命中不了。先释放尾块，"
      "每个提示词都能保住一段仍能命中的前缀。"),
    "s07.my_guess": L(
      "Each group's first request misses; the other 11 hit all 512 prefix tokens and none of their "
      "question: 44 × 512 hit tokens over about 48 × 544 prompt tokens. The FLOPs saved ({saved:.0%}) "
      "are a little lower: the questions still attend to the cached prefix.",
      "每组的第一个请求未命中；其余 11 个命中全部 512 个前缀 token，问题部分一个也不命中："
      "44 × 512 个命中 token，除以大约 48 × 544 个提示词 token。省下的 "
      "FLOPs（{saved:.0%}）略低一些：问题部分仍要对缓存的前缀做 attention。"),
    "s07.my_guess_2": L(
      "TPOT p50 changed by {change:+.0%}. A decode step at the same batch size does the same work "
      "either way (the right plot measures it; its two curves differ by timing noise only). What "
      "changes is what happens *between* a request's decode steps: prefills run first, so every "
      "newcomer's prefill stalls all running requests, and cached prefills are much shorter.",
      "TPOT p50 变化了 {change:+.0%}。批大小相同时，一个 decode 步骤无论开不开缓存做的计算都一样"
      "（右图测的就是它，两条曲线的差别只是计时噪声）。变的是一个请求两次 decode 步骤*之间*发生的事：prefill 优先，所以每个新请求的 "
      "prefill 都会让所有正在运行的请求停下来等，而带缓存的 prefill 短得多。"),
    "s07.my_guess_3": L(
      "Below the cliff the cache is on but nothing hits, so the repeat visits compute their whole "
      "prompt, as without the cache. Once the pool holds the 12 prefixes next to the running requests, "
      "most tokens hit and a repeat visit computes only its question. {verdict}",
      "在悬崖之前，缓存虽然开着却什么也命中不了，所以重复访问和不开缓存时一样要计算整个提示词。一旦块池在正在"
      "运行的请求之外还能留住这 12 个前缀，大部分 token 都会命中，重复访问只需计算它的问题。{verdict}"),
    "s09.my_guess": L(
      "Affinity (C): with the largest overlap and no look at queues, it keeps sending a prefix's followers to "
      "the replica that holds it, and that replica does {balance:.2f}x the mean work.",
      "亲和路由（C）：只看最大重叠、不看队列，它会把同一前缀的后续请求一直发给持有它的副本，这个副本的工作量是"
      "平均值的 {balance:.2f} 倍。"),
    "s09.my_guess_2": L(
      "About 5 GB/s: 10 blocks are 640 MiB, 0.13 s at 5 GB/s, about what their 5,120 tokens cost to recompute "
      "after 2,048 cached ones. Any PCIe link is far above it, so a host tier pays for this prompt.",
      "大约 5 GB/s：10 个块是 640 MiB，5 GB/s 下要 0.13 秒，差不多等于在 2,048 个缓存 token 之后重算这 5,120 个 token "
      "的时间。任何 PCIe 链路都远高于这个值，所以对这个提示词来说，主机内存层是划算的。"),
    "s08.my_guess": L(
      "Any two blocks may collide: about sqrt(pi/2 * 65,536) = 321 tries, not 65,536.",
      "任意两个块都可能碰撞：大约 sqrt(pi/2 * 65,536) = 321 次，而不是 65,536 "
      "次。"),
    "s08.my_guess_2": L(
      "A chained key sees its parent only through the parent's key: once block 0 collides, the identical "
      "later blocks get identical keys too, so all 4 full blocks (64 tokens) hit, with the wrong KV.",
      "链式 key 只通过父 key 看到前面的内容：第 0 个块一旦碰撞，后面 token 相同的块 "
      "key 也完全相同，于是 4 个满块（64 个 token）全部命中，拿到的却是错误的 KV。"),
    "s08.my_guess_3": L(
      "With salts the attacker's probes never hit the victim's blocks, so its guess is a roll of an "
      "8-sided die: right about 1/8 of the time. {run}",
      "加盐之后，攻击者的探测永远命中不了受害者的块，它的猜测就像掷一个 8 面骰子：大约 1/8 的时候猜对。"
      "{run}"),
    "s08.my_guess_3:inside": L(
      "This run's 95% interval contains 1/8: chance, within the noise of 40 trials.",
      "这次运行的 95% 置信区间包含 1/8：就是瞎猜，落在 40 次试验的噪声范围内。"),
    "s08.my_guess_3:outside": L(
      "This run's 95% interval misses 1/8: the attacker still got 0 cached tokens (see above), so the "
      "gap is timing noise of this busy machine; run the cell again.",
      "这次运行的 95% 置信区间没有包含 1/8：攻击者拿到的缓存 token 仍然是 0（见上面）"
      "，所以这点差距是这台繁忙机器的计时噪声；可以再运行一次这个单元。"),
}


def why(key: str, **values: object) -> str:
    """The explanation of prediction ``key`` in the notebook's language, its fields filled from ``values``.

    ``s05.my_guess_4`` takes the unlocked leaves looked at per request in the two caches, ``small`` and
    ``large`` (their ratio ``growth`` is added), and ``measured``, this machine's ratio of times;
    ``s07.my_guess_3`` takes ``verdict``, the sentence :func:`solutions.s07_serving.sweep_verdict`
    rendered from the sweep; ``s08.my_guess_3`` takes ``chance_inside`` (whether this run's interval
    holds the chance rate) and adds the sentence for that case.

    [zh]
    预测 ``key`` 的解释（当前笔记本的语言），占位符由 ``values`` 填入。
    """
    if key == "s05.my_guess_4":
        values["growth"] = values["large"] / values["small"]
    if key == "s08.my_guess_3":
        inside = values.pop("chance_inside")
        values["run"] = WHY[f"{key}:{'inside' if inside else 'outside'}"]
    return text(WHY[key].format(**values) if values else WHY[key])
