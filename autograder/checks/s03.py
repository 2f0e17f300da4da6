"""Stage 3 spec and public checks: block pool, ref counts and block tables.

Everything a learner reads here exists in English and Chinese (``L(en, zh)``): titles, contracts,
hint tiers, check titles and hints, the quiz. Contracts state what to set or return and the
invariant, never code; hint tiers go from the idea (1) over the approach (2) to a skeleton with blanks (3).

Probes summarise a pool as labelled plain data (:func:`pool_state`, :func:`admission`) and never
depend on the order in which ``release`` hands blocks to the free queue (stage 4 decides that
order): a setup either frees single-block requests, or reuses every freed block, or leaves enough
never-used blocks that no freed block is handed out again. :class:`Prefill` is the probes' ground
truth for stale hits: it remembers which prefix each physical block's KV was written for, without
looking at keys, so a hit on overwritten or unwritten KV shows up as a stale hit.
"""
from __future__ import annotations

from autograder.checks.common import attempt, record
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s03",
    title=L("Block pool and block tables", "块池与块表"),
    summary=L("a block pool: ref-counted physical blocks, per-request block tables, commit after prefill",
              "块池：带引用计数的物理块、每个请求的块表、prefill 之后再提交"),
    minutes=60,
    todos=[
        Todo("s03.lookup", 1, target="BlockPool.lookup", points=2,
             title=L("find the cached leading blocks", "找出开头连续命中的缓存块"),
             contract=L(
                 "Put into `hits` the cached blocks of the longest leading\n"
                 "run of keys that the cache map holds, in key order: stop at the first key that is not\n"
                 "cached, and take at most max_hits blocks (prefill must still compute at least one prompt\n"
                 "token). Change nothing: no ref count, free queue or cache entry. Cost: one look-up in the\n"
                 "cache map per key, whatever the pool's size.",
                 "把 keys 从头开始、在缓存表里连续命中的\n"
                 "那一段所对应的块按 key 的顺序放进 `hits`：遇到第一个不在缓存里的 key 就停下，并且最多\n"
                 "取 max_hits 个块（prefill 至少还要算一个提示词 token）。不改动任何状态：引用计数、\n"
                 "空闲队列、缓存表都保持原样。代价：每个 key 在缓存表里查一次，与池的大小无关。"),
             hints=(
                 L("A block's KV depends on every token before it: once one key misses, the blocks after it "
                   "were computed for a different prefix, even if their own tokens match. And the last prompt "
                   "token must go through prefill to produce the logits of the first output token.",
                   "一个块的 KV 取决于它前面的所有 token：只要有一个 key 未命中，后面的块就是在另一个前缀下算出来的，"
                   "哪怕它们自己的 token 一样。另外，提示词的最后一个 token 必须经过 prefill，才能得到第一个输出 "
                   "token 的 logits。"),
                 L("Walk the first `max_hits` keys in order and look each one up in `self.cached` (a dict from "
                   "key to Block): one dict look-up per key, never a scan over the cached keys or the blocks. "
                   "Stop at the first key that is missing.",
                   "按顺序遍历前 `max_hits` 个 key，逐个在 `self.cached`（key 到 `Block` 的字典）里查：每个 key "
                   "查一次字典，不要遍历所有缓存的 key 或所有块。遇到第一个查不到的 key 就停。"),
                 L("for key in keys[:___]:\n"
                   "    block = ___\n"
                   "    if block is None:\n"
                   "        break\n"
                   "    hits.append(block)",
                   "for key in keys[:___]:\n"
                   "    block = ___\n"
                   "    if block is None:\n"
                   "        break\n"
                   "    hits.append(block)"),
             )),
        Todo("s03.allocate_block", 2, target="BlockPool.allocate_block", points=2,
             title=L("hand out a free block, forgetting its old key", "分配一个空闲块，并忘掉它原来的 key"),
             contract=L(
                 "Set `block` to the block the free queue hands out next,\n"
                 "now in use: one reference and no key. If it still held cached content, that KV is about\n"
                 "to be overwritten, so its old key must leave the cache map as well: no later request may\n"
                 "hit it. Cost: constant, whatever the pool's size (touch only this block and its own key).",
                 "把 `block` 设为空闲队列接下来交出的那个块，\n"
                 "并让它进入使用状态：引用计数为 1，没有 key。如果它还存着已缓存的内容，这些 KV 马上就要\n"
                 "被覆盖，所以它原来的 key 也必须从缓存表里删掉：之后任何请求都不能再命中它。\n"
                 "代价：常数时间，与池的大小无关（只动这个块和它自己的 key）。"),
             hints=(
                 L("A free block can still be cached (the green blocks in the pictures). Handing it out for new "
                   "content overwrites its KV; a key left behind would let a later request read someone else's "
                   "KV: a stale hit.",
                   "空闲块仍然可能是缓存着的（图里绿色的块）。把它交给新内容，它的 KV 就会被覆盖；如果旧 key "
                   "留在表里，之后的请求就会读到别人的 KV，这就是过期命中（stale hit）。"),
                 L("Take the block from the free queue (the queue decides which one). If it has a key, delete "
                   "exactly that entry from `self.cached` and clear the block's key; then give it one reference. "
                   "The block knows its own key: never search the pool or the cache map.",
                   "从空闲队列里取块（取哪一个由队列决定）。如果它有 key，就从 `self.cached` 里删掉正好这一项，"
                   "并清空块上的 key；然后把引用计数设为 1。块自己记着 key，不需要在池或缓存表里查找。"),
                 L("block = self.free_queue.popleft()\n"
                   "if block.key is not None:\n"
                   "    # its old key must stop hitting\n"
                   "    ___\n"
                   "    block.key = None\n"
                   "block.ref_count = ___",
                   "block = self.free_queue.popleft()\n"
                   "if block.key is not None:\n"
                   "    # 它原来的 key 必须不再命中\n"
                   "    ___\n"
                   "    block.key = None\n"
                   "block.ref_count = ___"),
             )),
        Todo("s03.admit", 3, target="BlockPool.admit", points=3,
             title=L("admit a request: hits, capacity, fresh blocks", "接纳请求：命中块、容量检查、新块"),
             contract=L(
                 "Set `blocks` to the request's block table: its hits in\n"
                 "order, then num_new fresh blocks. First check capacity, before changing anything: the fresh\n"
                 "blocks must come from free blocks that are not this request's own hits (a hit on a free\n"
                 "cached block leaves the free queue). If they do not fit, raise PoolFullError and leave the\n"
                 "pool exactly as it was. Each hit gains one reference, and a hit that was free leaves the\n"
                 "free queue. Register nothing in the cache here. Cost: independent of the pool's size\n"
                 "(count free blocks by the free queue's length).",
                 "把 `blocks` 设为这个请求的块表：先是按顺序\n"
                 "排列的命中块，再是 num_new 个新块。在改动任何状态之前先检查容量：新块只能来自空闲块中\n"
                 "不属于本请求命中块的那些（命中一个空闲的缓存块，会把它移出空闲队列）。放不下就抛出\n"
                 "PoolFullError，池保持原样。每个命中块的引用计数加 1，原本空闲的命中块要移出空闲队列。\n"
                 "这里不往缓存表里登记任何东西。代价：与池的大小无关（空闲块的数量用空闲队列的长度来算）。"),
             hints=(
                 L("Reviving a free cached block takes it out of the free queue, so it cannot also be handed "
                   "out as a fresh block. Validate before you mutate: a refused request leaves no trace.",
                   "重新启用（revive）一个空闲的缓存块会把它移出空闲队列，所以它不能同时再被当作新块分配出去。"
                   "先校验、再修改：被拒绝的请求不能留下任何痕迹。"),
                 L("Count the hits whose ref count is 0; the request fits only if `num_new` is at most the number "
                   "of free blocks minus that count. Then take the hits (one more reference each; the free ones "
                   "leave the free queue) before you get the fresh blocks from `allocate_block`.",
                   "数一数命中块里引用计数为 0 的有几个；只有当 `num_new` 不超过空闲块数减去这个数时，请求才放得下。"
                   "然后先拿下命中块（各加一个引用，空闲的那些移出空闲队列），再用 `allocate_block` 取新块。"),
                 L("# free cached hits: they leave the free queue, so they cannot also be fresh blocks\n"
                   "revived = sum(1 for block in hits if ___)\n"
                   "if num_new > ___:\n"
                   "    raise PoolFullError(...)\n"
                   "for block in hits:\n"
                   "    if block.ref_count == 0:\n"
                   "        ___\n"
                   "    block.ref_count += 1\n"
                   "blocks = hits + [___ for _ in range(num_new)]",
                   "# 空闲的缓存命中块：它们会离开空闲队列，所以不能再算作新块的来源\n"
                   "revived = sum(1 for block in hits if ___)\n"
                   "if num_new > ___:\n"
                   "    raise PoolFullError(...)\n"
                   "for block in hits:\n"
                   "    if block.ref_count == 0:\n"
                   "        ___\n"
                   "    block.ref_count += 1\n"
                   "blocks = hits + [___ for _ in range(num_new)]"),
             )),
        Todo("s03.commit", 4, target="BlockPool.commit", points=2,
             title=L("register blocks after prefill", "prefill 之后登记块"),
             contract=L(
                 "Prefill has written the request's KV. Register each of\n"
                 "its full blocks after the hits under the key stored for it at admission, on the block and\n"
                 "in the cache map, unless that key is already cached (then the block that holds it stays,\n"
                 "and this block keeps no key). Hits and the partial tail are not registered. A key points\n"
                 "at exactly one block.",
                 "prefill 已经写好了这个请求的 KV。\n"
                 "对命中块之后的每个满块，用接纳时为它保存的 key 登记：块上记下 key，缓存表里也记一项；\n"
                 "如果这个 key 已经在缓存里，就保留原来那个块，这个块不带 key。命中块和未满的尾块都不\n"
                 "登记。一个 key 只指向一个块。"),
             hints=(
                 L("Only KV that has been written may be found by its key. The keys were hashed once at "
                   "admission, with the request's extra keys, and stored on the request.",
                   "只有已经写好的 KV 才能通过 key 被找到。key 在接纳时已经算过一次（带着请求的附加 key），"
                   "并保存在请求的状态里。"),
                 L("Go through the positions from `state.hit_blocks` up to the number of keys in `state.keys`; "
                   "pair each key with the block at the same position of `state.blocks`; skip a key that "
                   "`self.cached` already has.",
                   "从 `state.hit_blocks` 开始，遍历到 `state.keys` 里 key 的个数为止；把每个 key 和 "
                   "`state.blocks` 中同一位置的块配对；`self.cached` 里已经有的 key 就跳过。"),
                 L("for i in range(___, len(state.keys)):\n"
                   "    key = state.keys[i]\n"
                   "    if ___:\n"
                   "        block = state.blocks[i]\n"
                   "        block.key = key\n"
                   "        ___",
                   "for i in range(___, len(state.keys)):\n"
                   "    key = state.keys[i]\n"
                   "    if ___:\n"
                   "        block = state.blocks[i]\n"
                   "        block.key = key\n"
                   "        ___"),
             )),
        Todo("s03.release", 5, target="BlockPool.release", points=2,
             title=L("release a request's blocks", "释放请求的块"),
             contract=L(
                 "Drop the request's reference to each block of its block\n"
                 "table. A block that no live request holds any more goes to the free queue, once, and keeps\n"
                 "its key: it stays cached until it is handed out for other content. A block another request\n"
                 "still holds stays in use.",
                 "去掉这个请求对其块表中每个块的引用。\n"
                 "没有任何活跃请求再持有的块进入空闲队列（只进一次），并保留它的 key：在被分配给别的内容\n"
                 "之前，它一直是缓存着的。其他请求还持有的块继续处于使用中。"),
             hints=(
                 L("Ref counts keep sharing safe: a block leaves use only when the last block table holding it "
                   "is gone. A freed block still holds valid KV, so it stays findable.",
                   "引用计数保证共享是安全的：只有最后一个持有它的块表消失，块才不再被使用。被释放的块里 KV "
                   "仍然有效，所以它依然可以被找到。"),
                 L("For each block of the request: one reference less; when the count reaches zero, append the "
                   "block to the free queue. Leave keys and `self.cached` alone.",
                   "对请求的每个块：引用计数减 1；减到 0 时，把块追加到空闲队列。不要动 key 和 `self.cached`。"),
                 L("for block in state.blocks:\n"
                   "    block.ref_count -= 1\n"
                   "    if ___:\n"
                   "        ___",
                   "for block in state.blocks:\n"
                   "    block.ref_count -= 1\n"
                   "    if ___:\n"
                   "        ___"),
             )),
    ],
    quiz=Quiz(number=6, points=2, questions=(
        Question("q1", L("Block size 16. A 1,000-token prompt arrives, and its first 512 tokens are cached (32 full "
                         "blocks). How many fresh blocks does `admit` allocate?",
                         "块大小为 16。来了一个 1,000 个 token 的提示词，它的前 512 个 token 已经缓存（32 个满块）。"
                         "`admit` 要分配几个新块？"),
                 L("A block table has one entry per block_size tokens, partial tail included; hits fill the first "
                   "entries.", "块表每 block_size 个 token 占一项，未满的尾块也算一项；命中块占前面几项。"),
                 decimals=0),
        Question("q2", L("Block size 16. A 1,024-token prompt arrives, and all 64 of its full blocks are cached. "
                         "How many blocks does it hit?",
                         "块大小为 16。一个 1,024 个 token 的提示词到达，它的 64 个满块全都已经缓存。它命中几个块？"),
                 L("Prefill must compute at least one prompt token, to produce the logits of the first output "
                   "token.", "prefill 至少要计算一个提示词 token，才能得到第一个输出 token 的 logits。"),
                 decimals=0),
        Question("q3", L("Why are a request's new blocks registered under their keys in `commit`, not in `admit`?",
                         "为什么请求的新块要在 `commit` 里登记 key，而不是在 `admit` 里？"),
                 L("Think of what a hit on such a block would read between admission and the end of prefill.",
                   "想一想：在接纳之后、prefill 结束之前，命中这样一个块会读到什么。"),
                 choices=(L("hashing is cheaper after prefill", "prefill 之后算哈希更便宜"),
                          L("their KV does not exist until prefill has written it", "prefill 写完之前，它们的 KV 还不存在"),
                          L("admit does not know the keys yet", "`admit` 时还不知道这些 key"))),
        Question("q4", L("The pool has 100 free blocks. A request hits 30 of them (free cached blocks) and needs "
                         "some fresh blocks. At most how many fresh blocks can it get?",
                         "池里有 100 个空闲块。一个请求命中了其中 30 个（空闲的缓存块），还需要一些新块。"
                         "它最多能拿到几个新块？"),
                 L("A revived hit leaves the free queue.", "被复用的命中块会离开空闲队列。"), decimals=0),
        Question("q5", L("When does a cached block's key stop producing hits?", "一个缓存块的 key 什么时候不再命中？"),
                 L("A block with ref count 0 still holds valid KV.", "引用计数为 0 的块里仍然是有效的 KV。"),
                 choices=(L("when its ref count drops to 0", "它的引用计数降到 0 时"),
                          L("when the request that wrote it is released", "写入它的请求被释放时"),
                          L("when the free queue hands it out for other content", "空闲队列把它分配给别的内容时"))),
        Question("q6", L("A commits a system prompt. Then 20 other requests are admitted and hit it; 7 of them "
                         "finish (are released), and then A is released too. What is the ref count of the system "
                         "prompt's first block now?",
                         "A 提交了一段 system prompt（系统提示词）。之后又有 20 个请求被接纳并命中了它；其中 7 个"
                         "结束（被释放），然后 A 也被释放。system prompt 的第一个块现在的引用计数是多少？"),
                 L("The ref count is the number of live block tables that hold the block.",
                   "引用计数等于持有这个块的活跃块表的个数。"), decimals=0),
    )),
    time_limit_s=10,
    memory_limit_mb=512,
)


# -- probe helpers (hidden checks import them from here) -----------------------------------------
def pool_state(pool) -> dict:
    """A pool as labelled plain data: ref counts, number of free blocks, cached and keyed block ids."""
    return record(
        ref_counts=[b.ref_count for b in pool.blocks],
        free=len(pool.free_queue),
        cached_blocks=sorted(b.block_id for b in pool.cached.values()),
        keyed_blocks=[b.block_id for b in pool.blocks if b.key is not None],
        requests=sorted(pool.requests),
    )


def admission(a) -> dict:
    """An ``Admission`` as a labelled record."""
    return record(request_id=a.request_id, block_table=a.block_table, hit_blocks=a.hit_blocks,
                  hit_tokens=a.hit_tokens)


def ids(blocks) -> list:
    return [b.block_id for b in blocks]


def committed(impl, num_blocks: int, block_size: int, *prompts):
    """A pool in which each prompt was admitted (as 'a', then 'a1', 'a2', ...) and committed."""
    pool = impl.BlockPool(num_blocks, block_size)
    for i, tokens in enumerate(prompts):
        rid = f"a{i}" if i else "a"
        pool.admit(rid, tokens)
        pool.commit(rid)
    return pool


class Prefill:
    """The probes' ground truth: which prefix the KV in each physical block was written for.

    Prefill writes a request's fresh blocks between ``admit`` and ``commit``: at ``admit`` they hold
    nothing valid yet (``None``), at ``commit`` each holds the request's prefix up to its end. A hit
    is *stale* when its block does not hold exactly the prefix the request asked for. This knows
    nothing of keys, so a key left behind on overwritten KV shows up here. Handing out as a fresh
    block one that a live request still holds (its own hits included) overwrites that request's KV
    under it: that is recorded as stale too, whichever path handed the block out.
    """

    def __init__(self, pool) -> None:
        self.pool = pool
        self.written: dict[int, tuple | None] = {}
        self.pending: dict[str, list[tuple[int, tuple]]] = {}
        self.live: dict[str, list[int]] = {}
        self.stale: list[dict] = []

    def content(self, tokens, extra_keys, i: int) -> tuple:
        return tuple(extra_keys or ()), tuple(tokens[: (i + 1) * self.pool.block_size])

    def admit(self, rid: str, tokens, extra_keys=None):
        a = self.pool.admit(rid, tokens, extra_keys)
        for i in range(a.hit_blocks):
            if self.written.get(a.block_table[i]) != self.content(tokens, extra_keys, i):
                self.stale.append(record(request=rid, block_index=i, block=a.block_table[i]))
        fresh = list(enumerate(a.block_table))[a.hit_blocks:]
        for _, b in fresh:
            holders = [r for r, table in self.live.items() if b in table]
            if holders or a.block_table.count(b) > 1:
                self.stale.append(record(request=rid, overwrote_block=b, held_by=holders[0] if holders else rid))
            self.written[b] = None  # being overwritten by this request's prefill
        self.pending[rid] = [(b, self.content(tokens, extra_keys, i)) for i, b in fresh]
        self.live[rid] = list(a.block_table)
        return a

    def commit(self, rid: str) -> None:
        for b, content in self.pending.pop(rid):
            self.written[b] = content
        self.pool.commit(rid)

    def release(self, rid: str) -> None:
        self.pending.pop(rid, None)
        self.live.pop(rid, None)
        self.pool.release(rid)


# What walks a whole container: the cost checks count these calls instead of timing them, so the
# verdict is the same on every machine.
_MAP_WALKS = ("__iter__", "__reversed__", "keys", "values", "items", "copy")
_LIST_WALKS = ("__iter__", "__reversed__", "__getitem__", "__contains__", "index", "count", "copy")


def _counting(base: type, counter: dict, field: str, methods: tuple) -> type:
    """A subclass of ``base`` whose ``methods`` add one to ``counter[field]`` per call."""
    def wrap(name: str):
        original = getattr(base, name)

        def method(self, *args, **kwargs):
            counter[field] += 1
            return original(self, *args, **kwargs)
        return method
    return type(f"Watched_{base.__name__}", (base,), {name: wrap(name) for name in methods})


def watched_pool(impl, num_blocks: int, block_size: int):
    """A pool whose cache map, block list and free queue count every walk over them (iterating,
    ``keys``/``values``/``items``, copying, indexing the block list). Nothing else changes: they are
    a dict, a list and stage 3's queue. Returns the pool and the counter, to be zeroed before the
    operation under test."""
    counter = {"cache_map_walks": 0, "block_list_walks": 0, "free_queue_walks": 0}
    queue = _counting(impl.SimpleFreeQueue, counter, "free_queue_walks", ("__iter__",))()
    pool = impl.BlockPool(num_blocks, block_size, free_queue=queue)
    pool.cached = _counting(dict, counter, "cache_map_walks", _MAP_WALKS)(pool.cached)
    pool.blocks = _counting(list, counter, "block_list_walks", _LIST_WALKS)(pool.blocks)
    return pool, counter


def walks_during(counter: dict, action) -> tuple:
    """``action()``'s result and the walks it made (the counter is zeroed first)."""
    for field in counter:
        counter[field] = 0
    result = action()
    return result, dict(counter)


def revive_twice(impl, num_blocks: int = 16) -> dict:
    """A committed and released; B hits A's blocks (reviving them), commits, is released; then C,
    with the same system prompt, must hit both blocks again. The pool is large enough that no freed
    block is handed out again, so capacity plays no part."""
    system = list(range(8))
    pool = impl.BlockPool(num_blocks, 4)
    pool.admit("A", system + [1, 2, 3])
    pool.commit("A")
    pool.release("A")
    b = admission(pool.admit("B", system + [4, 5, 6]))
    pool.commit("B")
    pool.release("B")
    c = admission(pool.admit("C", system + [7, 8]))
    return record(B=b, C=c, pool=pool_state(pool))


# -- TODO 1: lookup -------------------------------------------------------------------------------
@STAGE.check("s03.lookup",
             call=L("pool = BlockPool(8, 4); admit + commit range(10); ids(pool.lookup(pool.keys_of(range(10)), 10))",
                    "pool = BlockPool(8, 4)；接纳并提交 range(10)；ids(pool.lookup(pool.keys_of(range(10)), 10))"),
             title=L("returns the cached Block objects of the leading keys", "返回开头各 key 对应的缓存块对象"),
             hint=L("Return the Block objects the cache map holds for the leading keys, in key order.",
                    "返回缓存表里开头这些 key 对应的 `Block` 对象，按 key 的顺序。"))
def hits_after_commit(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return ids(pool.lookup(pool.keys_of(list(range(10))), 10))


@STAGE.check("s03.lookup",
             call=L("same pool; keys = pool.keys_of(range(10)); ids(lookup([b'?' * 32] + keys[1:], 10)), "
                    "ids(lookup(keys[:1] + [b'?' * 32], 10))",
                    "同一个块池；keys = pool.keys_of(range(10))；ids(lookup([b'?' * 32] + keys[1:], 10))，"
                    "ids(lookup(keys[:1] + [b'?' * 32], 10))"),
             title=L("stops at the first miss", "在第一个未命中处停下"),
             hint=L("Stop at the first key that is not cached: keys after a miss never count, even if they are cached.",
                    "遇到第一个不在缓存里的 key 就停：未命中之后的 key 都不算，哪怕它们在缓存里。"))
def stops_at_first_miss(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    keys = pool.keys_of(list(range(10)))
    return record(first_key_missing=ids(pool.lookup([b"?" * 32] + keys[1:], 10)),
                  second_key_missing=ids(pool.lookup(keys[:1] + [b"?" * 32], 10)))


@STAGE.check("s03.lookup",
             call=L("pool with range(8) committed (block size 4); keys = pool.keys_of(range(8)); "
                    "[ids(pool.lookup(keys, n)) for n in (8, 9, 5, 4)]",
                    "已提交 range(8) 的块池（块大小 4）；keys = pool.keys_of(range(8))；"
                    "[ids(pool.lookup(keys, n)) for n in (8, 9, 5, 4)]"),
             title=L("leaves at least one token to compute", "至少留一个 token 给 prefill 计算"),
             hint=L("At most (num_tokens - 1) // block_size hits: even a fully cached prompt computes its last token.",
                    "最多命中 (num_tokens - 1) // block_size 个块：即使提示词全部已缓存，最后一个 token 也要计算。"))
def leaves_one_token_to_compute(impl):
    pool = committed(impl, 8, 4, list(range(8)))
    keys = pool.keys_of(list(range(8)))
    return {f"num_tokens_{n}": ids(pool.lookup(keys, n)) for n in (8, 9, 5, 4)}


@STAGE.check("s03.lookup",
             call=L("pool = BlockPool(5, 3); A = [4, 4, 4, 4, 4, 4, 9]: admit, commit, release; "
                    "pool.admit('b', [4, 4, 4, 1]); before = pool_state(pool); "
                    "ids(pool.lookup(pool.keys_of(A), 7)), ids(pool.lookup([], 1)), pool_state(pool) == before",
                    "pool = BlockPool(5, 3)；A = [4, 4, 4, 4, 4, 4, 9]：接纳、提交、释放；"
                    "pool.admit('b', [4, 4, 4, 1])；before = pool_state(pool)；"
                    "ids(pool.lookup(pool.keys_of(A), 7))，ids(pool.lookup([], 1))，pool_state(pool) == before"),
             title=L("only looks: the pool is unchanged", "只查不改：块池保持原样"),
             hint=L("lookup only looks: take no reference, leave the free queue and the cache map as they are "
                    "(a free cached block stays free), and an empty list of keys finds nothing.",
                    "lookup 只负责查：不加引用，空闲队列和缓存表都保持原样（空闲的缓存块仍然空闲）；"
                    "空的 key 列表什么也找不到。"))
def looks_without_touching(impl):
    pool = committed(impl, 5, 3, [4, 4, 4, 4, 4, 4, 9])
    pool.release("a")
    pool.admit("b", [4, 4, 4, 1])  # block 0 in use again, block 1 free and cached
    before = pool_state(pool)
    found = ids(pool.lookup(pool.keys_of([4, 4, 4, 4, 4, 4, 9]), 7))
    no_keys = ids(pool.lookup([], 1))
    return record(found=found, no_keys=no_keys, pool_unchanged=pool_state(pool) == before)


@STAGE.check("s03.lookup",
             call=L("pool = BlockPool(12, 2), whose cache map and block list count every walk over them; "
                    "admit + commit [5, 5, 6, 6, 7, 7, 8]; keys = pool.keys_of([5, 5, 6, 6, 9, 9, 8]); "
                    "pool.lookup(keys, 7): the walks it made",
                    "pool = BlockPool(12, 2)，它的缓存表和块列表会记下每一次整体遍历；"
                    "接纳并提交 [5, 5, 6, 6, 7, 7, 8]；keys = pool.keys_of([5, 5, 6, 6, 9, 9, 8])；"
                    "pool.lookup(keys, 7)：它做了几次遍历"),
             title=L("one look-up per key: never walks the cache map or the blocks",
                     "每个 key 查一次：不遍历缓存表，也不遍历所有块"),
             hint=L("Look each key up in self.cached directly (self.cached.get(key)); never loop over the cache "
                    "map's keys or items or over the pool's blocks: that cost grows with the pool.",
                    "每个 key 直接在 self.cached 里查（self.cached.get(key)）；不要遍历缓存表的 key 或条目，"
                    "也不要遍历池里的块：那样的代价会随池的大小增长。"),
             specificity=2)
def lookup_never_walks_the_pool(impl):
    pool, counter = watched_pool(impl, 12, 2)
    pool.admit("a", [5, 5, 6, 6, 7, 7, 8])
    pool.commit("a")
    keys = pool.keys_of([5, 5, 6, 6, 9, 9, 8])
    _, walks = walks_during(counter, lambda: pool.lookup(keys, 7))
    return walks


# -- TODO 2: allocate_block -----------------------------------------------------------------------
@STAGE.check("s03.allocate_block", call="pool = BlockPool(4, 2); b = pool.allocate_block(); "
                                         "b.block_id, b.ref_count, b.key, pool_state(pool)",
             title=L("a fresh pool hands out block 0, in use", "新池交出 0 号块，并进入使用状态"),
             hint=L("Take the next block from the free queue and give it ref_count 1 and no key.",
                    "从空闲队列取下一个块，引用计数设为 1，不带 key。"))
def fresh_pool(impl):
    pool = impl.BlockPool(4, 2)
    b = pool.allocate_block()
    return record(block_id=b.block_id, ref_count=b.ref_count, key=b.key, pool=pool_state(pool))


@STAGE.check("s03.allocate_block",
             call=L("pool = BlockPool(2, 2); admit, commit, release [1, 2, 3]; taken = allocate_block() twice; "
                    "sorted(ids(taken)), pool_state(pool), ids(pool.lookup(pool.keys_of([1, 2, 3]), 3))",
                    "pool = BlockPool(2, 2)；对 [1, 2, 3] 依次接纳、提交、释放；taken = 调用两次 allocate_block() 的结果；"
                    "sorted(ids(taken))，pool_state(pool)，ids(pool.lookup(pool.keys_of([1, 2, 3]), 3))"),
             title=L("a reused block forgets its old key", "被重新分配的块忘掉原来的 key"),
             hint=L("A reused block's old key must stop hitting: remove it from self.cached and clear the block's key.",
                    "被重新分配的块，原来的 key 必须失效：从 self.cached 里删掉它，并清空块上的 key。"))
def reuse_forgets_the_old_key(impl):
    pool = impl.BlockPool(2, 2)
    pool.admit("a", [1, 2, 3])
    pool.commit("a")
    pool.release("a")
    taken = [pool.allocate_block(), pool.allocate_block()]
    return record(taken=sorted(ids(taken)), pool=pool_state(pool),
                  lookup_after=ids(pool.lookup(pool.keys_of([1, 2, 3]), 3)))


@STAGE.check("s03.allocate_block",
             call=L("pool = BlockPool(3, 2); A = [1, 2, 3, 4, 5]: admit, commit, release; B = [7] * 5 (reuses all "
                    "3 blocks): admit, commit, release; then C = A's prompt: admission(C), stale hits of C",
                    "pool = BlockPool(3, 2)；A = [1, 2, 3, 4, 5]：接纳、提交、释放；B = [7] * 5（用掉全部 3 个块）："
                    "接纳、提交、释放；然后 C = A 的提示词：admission(C)，以及 C 的过期命中"),
             title=L("no later request hits overwritten KV", "之后的请求不会命中已被覆盖的 KV"),
             hint=L("B's prefill overwrote A's blocks, so A's keys must be gone: drop a block's old key when you hand it out.",
                    "B 的 prefill 覆盖了 A 的块，所以 A 的 key 必须失效：分配块时要删掉它原来的 key。"))
def overwritten_kv_is_never_hit(impl):
    pool = impl.BlockPool(3, 2)
    prefill = Prefill(pool)
    for rid, tokens in (("A", [1, 2, 3, 4, 5]), ("B", [7] * 5)):
        prefill.admit(rid, tokens)
        prefill.commit(rid)
        prefill.release(rid)
    c = admission(prefill.admit("C", [1, 2, 3, 4, 5]))
    return record(stale_hits=len(prefill.stale), C=c)


@STAGE.check("s03.allocate_block", call="pool = BlockPool(1, 2); first = pool.allocate_block(); "
                                         "first.block_id, pool_state(pool), pool.allocate_block().block_id -> ?",
             title=L("a block is handed out only once", "一个块只会被分配一次"),
             hint=L("Take the block out of the free queue, so it cannot be handed out twice.",
                    "要把块从空闲队列里取出来，它才不会被分配两次。"))
def a_block_is_handed_out_once(impl):
    pool = impl.BlockPool(1, 2)
    first = pool.allocate_block()
    return record(first=first.block_id, pool=pool_state(pool), second=attempt(lambda: pool.allocate_block().block_id))


@STAGE.check("s03.allocate_block",
             call=L("pool = BlockPool(3, 2); admit + commit 'a' = [8, 8] and 'b' = [8, 9]; release both; "
                    "pool.allocate_block(); b = pool.allocate_block(); b.block_id, b.key, pool_state(pool), "
                    "ids(pool.lookup(pool.keys_of([8, 8, 0]), 3)), ids(pool.lookup(pool.keys_of([8, 9, 0]), 3))",
                    "pool = BlockPool(3, 2)；接纳并提交 'a' = [8, 8] 和 'b' = [8, 9]；两个都释放；"
                    "pool.allocate_block()；b = pool.allocate_block()；b.block_id，b.key，pool_state(pool)，"
                    "ids(pool.lookup(pool.keys_of([8, 8, 0]), 3))，ids(pool.lookup(pool.keys_of([8, 9, 0]), 3))"),
             title=L("only the handed-out block forgets its key", "只有被分配出去的块忘掉它的 key"),
             hint=L("Drop only the key of the block you hand out (del self.cached[block.key]); every other cached "
                    "block stays cached and keeps hitting.",
                    "只删掉被分配出去的那个块的 key（`del self.cached[block.key]`）；其他缓存块保持缓存，照样能命中。"))
def other_cached_blocks_stay(impl):
    pool = impl.BlockPool(3, 2)
    for rid, tokens in (("a", [8, 8]), ("b", [8, 9])):  # one block each: block 0, block 1
        pool.admit(rid, tokens)
        pool.commit(rid)
    pool.release("a")
    pool.release("b")  # free queue: 2 (never used), then a's block 0 and b's block 1, both cached
    pool.allocate_block()  # the never-used block 2
    b = pool.allocate_block()  # a's block: it forgets its key, b's block stays cached
    return record(block_id=b.block_id, key=b.key, pool=pool_state(pool),
                  hits_of_a=ids(pool.lookup(pool.keys_of([8, 8, 0]), 3)),
                  hits_of_b=ids(pool.lookup(pool.keys_of([8, 9, 0]), 3)))


@STAGE.check("s03.allocate_block",
             call=L("pool = BlockPool(12, 2), whose cache map, block list and free queue count every walk over them; "
                    "each of its 12 free blocks cached under its own key; "
                    "[pool.allocate_block() for _ in range(12)]: the walks it made",
                    "pool = BlockPool(12, 2)，它的缓存表、块列表和空闲队列会记下每一次整体遍历；"
                    "它的 12 个空闲块各自以自己的 key 缓存着；"
                    "[pool.allocate_block() for _ in range(12)]：它做了几次遍历"),
             title=L("constant time: never walks the cache map or the blocks", "常数时间：不遍历缓存表，也不遍历所有块"),
             hint=L("The block knows its own key: delete exactly self.cached[block.key]; never loop over the cache "
                    "map, the pool's blocks or the free queue to find it.",
                    "块自己记着 key：正好删掉 `self.cached[block.key]`；不要为了找它去遍历缓存表、池里的块或空闲队列。"),
             specificity=2)
def allocate_never_walks_the_pool(impl):
    pool, counter = watched_pool(impl, 12, 2)
    for block in pool.blocks[:12]:  # every block free and cached under its own key
        block.key = bytes([block.block_id]) * 32
        pool.cached[block.key] = block
    _, walks = walks_during(counter, lambda: [pool.allocate_block() for _ in range(12)])
    return walks


# -- TODO 3: admit --------------------------------------------------------------------------------
@STAGE.check("s03.admit", call="pool = BlockPool(8, 4); admission(pool.admit('a', list(range(10)))), pool_state(pool)",
             title=L("an empty pool: only fresh blocks", "空池：全是新块"),
             hint=L("Nothing is cached yet: ceil(10 / 4) = 3 fresh blocks and 0 hits.",
                    "此时什么都没缓存：需要 ceil(10 / 4) = 3 个新块，命中 0 个。"))
def fresh_admission(impl):
    pool = impl.BlockPool(8, 4)
    return record(a=admission(pool.admit("a", list(range(10)))), pool=pool_state(pool))


@STAGE.check("s03.admit",
             call=L("pool = BlockPool(8, 4); admit + commit 'a' = range(10); "
                    "admission(pool.admit('b', list(range(8)) + [42, 43])), pool_state(pool)",
                    "pool = BlockPool(8, 4)；接纳并提交 'a' = range(10)；"
                    "admission(pool.admit('b', list(range(8)) + [42, 43]))，pool_state(pool)"),
             title=L("hits share physical blocks", "命中块共享物理块"),
             hint=L("A hit shares the physical block: its ref count goes up by one, and it comes first in the block table.",
                    "命中就是共享同一个物理块：它的引用计数加 1，并排在块表的最前面。"),
             specificity=2)
def hits_share_physical_blocks(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return record(b=admission(pool.admit("b", list(range(8)) + [42, 43])), pool=pool_state(pool))


@STAGE.check("s03.admit",
             call="pool = BlockPool(8, 2); pool.admit('a', [1, 2, 3]); admission(pool.admit('b', [1, 2, 3])), pool_state(pool)",
             title=L("no hit before commit", "提交之前不会命中"),
             hint=L("Register nothing in admit: a's KV is not written before its commit, so b must not hit it.",
                    "`admit` 里不要登记任何东西：a 提交之前它的 KV 还没写好，b 不能命中它。"),
             specificity=3)
def no_hit_before_commit(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    return record(b=admission(pool.admit("b", [1, 2, 3])), pool=pool_state(pool))


@STAGE.check("s03.admit",
             call="pool = BlockPool(4, 4); pool.admit('a', range(9)); pool.admit('b', range(100, 109)) -> ?, pool_state(pool)",
             title=L("a full pool refuses cleanly", "池满时干净地拒绝"),
             hint=L("Check capacity before changing anything; raise PoolFullError and leave the pool as it was.",
                    "先检查容量再改状态；放不下就抛出 PoolFullError，池保持原样。"),
             specificity=1)
def full_pool_refuses_cleanly(impl):
    pool = impl.BlockPool(4, 4)
    pool.admit("a", list(range(9)))
    outcome = attempt(lambda: admission(pool.admit("b", list(range(100, 109)))))
    return record(b=outcome, pool=pool_state(pool))


@STAGE.check("s03.admit",
             call=L("pool = BlockPool(16, 4); A = range(8) + [1, 2, 3]: admit, commit, release; "
                    "B = range(8) + [4, 5, 6]: admission, commit, release; C = range(8) + [7, 8]: admission; pool_state(pool)",
                    "pool = BlockPool(16, 4)；A = range(8) + [1, 2, 3]：接纳、提交、释放；"
                    "B = range(8) + [4, 5, 6]：admission、提交、释放；C = range(8) + [7, 8]：admission；pool_state(pool)"),
             title=L("a revived block can be revived again", "重新启用过的块还能再次重新启用"),
             hint=L("A hit on a free cached block revives it: take it out of the free queue and add a reference, "
                    "but keep its key, so the next request hits it too.",
                    "命中空闲的缓存块就是复用它：把它移出空闲队列、加一个引用，但保留它的 key，下一个请求才能继续命中。"),
             specificity=2)
def revived_blocks_stay_cached(impl):
    return revive_twice(impl)


@STAGE.check("s03.admit",
             call=L("pool = BlockPool(5, 2); A = [7] * 8 + [1]: admit, commit, release (4 cached blocks + a tail); "
                    "pool.admit('b', [7] * 8 + [20, 21, 22, 23]) -> ?, pool_state(pool); "
                    "admission(pool.admit('c', [7] * 8 + [30])), pool_state(pool)",
                    "pool = BlockPool(5, 2)；A = [7] * 8 + [1]：接纳、提交、释放（4 个缓存块加一个尾块）；"
                    "pool.admit('b', [7] * 8 + [20, 21, 22, 23]) -> ?，pool_state(pool)；"
                    "admission(pool.admit('c', [7] * 8 + [30]))，pool_state(pool)"),
             title=L("a revived hit is not also a fresh block", "被重新启用的命中块不能再算作新块"),
             hint=L("b hits 4 free cached blocks and needs 2 fresh ones, but only 1 free block is not one of its "
                    "hits: count the revived hits against the free blocks, and refuse before changing anything.",
                    "b 命中了 4 个空闲的缓存块，还要 2 个新块，可空闲块里不属于它命中块的只有 1 个："
                    "容量检查时要把被重新启用的命中块从空闲块里扣掉，并且在改动任何状态之前就拒绝。"),
             specificity=1)
def revived_hit_is_not_a_fresh_block(impl):
    pool = committed(impl, 5, 2, [7] * 8 + [1])
    pool.release("a")
    refused = attempt(lambda: admission(pool.admit("b", [7] * 8 + [20, 21, 22, 23])))
    after_refusal = pool_state(pool)
    return record(b=refused, after_refusal=after_refusal, c=admission(pool.admit("c", [7] * 8 + [30])),
                  pool=pool_state(pool))


@STAGE.check("s03.admit",
             call=L("pool = BlockPool(4, 3); pool.admit('x', [9]); admit + commit 'a' = [1, 1, 1]; release 'a', "
                    "then 'x'; pool.admit('y', [8, 8]); pool.admit('z', [8]) (the free queue is now: a's cached "
                    "block, then x's); admission(pool.admit('b', [1, 1, 1, 5])), pool_state(pool)",
                    "pool = BlockPool(4, 3)；pool.admit('x', [9])；接纳并提交 'a' = [1, 1, 1]；先释放 'a'，"
                    "再释放 'x'；pool.admit('y', [8, 8])；pool.admit('z', [8])（此时空闲队列里依次是 a 的缓存块、"
                    "x 的块）；admission(pool.admit('b', [1, 1, 1, 5]))，pool_state(pool)"),
             title=L("a cached hit next in line is not handed out as a fresh block",
                     "排在队首的缓存命中块不会被当作新块分配出去"),
             hint=L("Take the hits out of the free queue before you allocate the fresh blocks: otherwise the queue "
                    "hands out b's own hit (next in line) as its fresh block, and one block holds both.",
                    "先把命中块移出空闲队列，再分配新块：否则队列会把 b 自己的命中块（正排在队首）当作新块交出去，"
                    "一个块同时装两份内容。"),
             specificity=2)
def cached_hit_next_in_line(impl):
    pool = impl.BlockPool(4, 3)
    pool.admit("x", [9])            # block 0
    pool.admit("a", [1, 1, 1])      # block 1
    pool.commit("a")                # block 1 cached as [1, 1, 1]
    pool.release("a")
    pool.release("x")               # free queue: 2, 3, 1, 0
    pool.admit("y", [8, 8])         # block 2
    pool.admit("z", [8])            # block 3; the cached block 1 is next in line
    return record(b=admission(pool.admit("b", [1, 1, 1, 5])), pool=pool_state(pool))


@STAGE.check("s03.admit",
             call=L("pool = BlockPool(4, 3); A = [2, 7, 1, 8, 2, 8, 1, 8]: admit, commit, release; "
                    "B = [3] * 11 (its 4 fresh blocks reuse all of A's): admit, then ids(pool.lookup(pool.keys_of(A), 8)); "
                    "commit, release; C = A's prompt: C's hits and stale hits (KV written for another prefix)",
                    "pool = BlockPool(4, 3)；A = [2, 7, 1, 8, 2, 8, 1, 8]：接纳、提交、释放；"
                    "B = [3] * 11（它的 4 个新块用掉了 A 的全部块）：接纳，然后 ids(pool.lookup(pool.keys_of(A), 8))；"
                    "提交、释放；C = A 的提示词：C 的命中数，以及过期命中（读到为别的前缀写的 KV）的个数"),
             title=L("fresh blocks forget their old keys, however admit gets them",
                     "新块一定忘掉原来的 key，不管 `admit` 怎样拿到它们"),
             hint=L("Get every fresh block from self.allocate_block(): it drops the block's old key. A block taken "
                    "from the free queue directly keeps its old key, so a later request hits KV that B overwrote.",
                    "每个新块都要通过 self.allocate_block() 拿：它会删掉块原来的 key。直接从空闲队列里取的块还带着"
                    "旧 key，之后的请求就会命中已经被 B 覆盖的 KV。"),
             specificity=3)
def fresh_blocks_forget_old_keys(impl):
    pool = impl.BlockPool(4, 3)
    prefill = Prefill(pool)
    a = [2, 7, 1, 8, 2, 8, 1, 8]
    prefill.admit("A", a)
    prefill.commit("A")
    prefill.release("A")
    prefill.admit("B", [3] * 11)
    a_hits_after_b = ids(pool.lookup(pool.keys_of(a), len(a)))
    prefill.commit("B")
    prefill.release("B")
    c = prefill.admit("C", a)
    return record(a_hits_after_b_admitted=a_hits_after_b, c_hits=c.hit_blocks, stale_hits=len(prefill.stale))


@STAGE.check("s03.admit",
             call=L("pool = BlockPool(12, 2), whose cache map, block list and free queue count every walk over them; "
                    "admit + commit + release [5, 5, 6, 6, 7]; pool.admit('b', [5, 5, 6, 6, 1, 2, 3]): "
                    "the walks it made",
                    "pool = BlockPool(12, 2)，它的缓存表、块列表和空闲队列会记下每一次整体遍历；"
                    "对 [5, 5, 6, 6, 7] 依次接纳、提交、释放；pool.admit('b', [5, 5, 6, 6, 1, 2, 3])："
                    "它做了几次遍历"),
             title=L("cost independent of the pool: never walks the blocks or the free queue",
                     "代价与池的大小无关：不遍历所有块，也不遍历空闲队列"),
             hint=L("Count the free blocks by len(self.free_queue) and the revived hits among the request's own hits; "
                    "never walk the pool's blocks (num_in_use does), the free queue or the cache map.",
                    "空闲块数用 len(self.free_queue)，被重新启用的命中块只在本请求自己的命中块里数；不要遍历池里的块"
                    "（num_in_use 就是这样做的），也不要遍历空闲队列或缓存表。"),
             specificity=2)
def admit_never_walks_the_pool(impl):
    pool, counter = watched_pool(impl, 12, 2)
    pool.admit("a", [5, 5, 6, 6, 7])
    pool.commit("a")
    pool.release("a")
    _, walks = walks_during(counter, lambda: pool.admit("b", [5, 5, 6, 6, 1, 2, 3]))
    return walks


# -- TODO 4: commit -------------------------------------------------------------------------------
@STAGE.check("s03.commit", call="pool = BlockPool(8, 4); pool.admit('a', range(10)); pool.commit('a'); pool_state(pool)",
             title=L("registers the full blocks", "登记满块"),
             hint=L("Register each full block after the hits, on the block and in self.cached; never the partial tail.",
                    "命中块之后的每个满块都要登记：块上记 key，self.cached 里也记一项；未满的尾块不登记。"))
def registers_full_blocks(impl):
    pool = impl.BlockPool(8, 4)
    pool.admit("a", list(range(10)))
    pool.commit("a")
    return pool_state(pool)


@STAGE.check("s03.commit", call=L("pool = BlockPool(8, 4); admit + commit 'a' = range(10); admission(pool.admit('b', range(10))), pool_state(pool)",
                                  "pool = BlockPool(8, 4)；接纳并提交 'a' = range(10)；admission(pool.admit('b', range(10)))，pool_state(pool)"),
             title=L("a later request hits what was committed", "之后的请求能命中已提交的块"),
             hint=L("After commit, a request with the same prompt hits every registered block.",
                    "提交之后，提示词相同的请求能命中每一个已登记的块。"))
def later_request_hits(impl):
    pool = committed(impl, 8, 4, list(range(10)))
    return record(b=admission(pool.admit("b", list(range(10)))), pool=pool_state(pool))


@STAGE.check("s03.commit",
             call=L("pool = BlockPool(8, 2); admit 'a' and 'b' = [1, 2, 3]; commit 'b'; commit 'a'; pool_state(pool)",
                    "pool = BlockPool(8, 2)；接纳 'a' 和 'b' = [1, 2, 3]；先提交 'b'，再提交 'a'；pool_state(pool)"),
             title=L("the first writer keeps the key", "先提交的块保留 key"),
             hint=L("If a key is already cached, keep the block that holds it: don't re-point the key or tag a second block.",
                    "如果 key 已经在缓存里，就保留原来那个块：既不要把 key 改指向新块，也不要给第二个块记上这个 key。"))
def first_writer_wins(impl):
    pool = impl.BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    pool.admit("b", [1, 2, 3])
    pool.commit("b")
    pool.commit("a")
    return pool_state(pool)


@STAGE.check("s03.commit",
             call=L("pool = BlockPool(6, 2); tokens = [3, 1, 4, 1, 5]; pool.admit('a', tokens, [('tenant', '租户甲')]); "
                    "pool.commit('a'); ids(pool.lookup(pool.keys_of(tokens, [('tenant', '租户甲')]), 5)), "
                    "ids(pool.lookup(pool.keys_of(tokens), 5)), pool_state(pool)",
                    "pool = BlockPool(6, 2)；tokens = [3, 1, 4, 1, 5]；pool.admit('a', tokens, [('tenant', '租户甲')])；"
                    "pool.commit('a')；ids(pool.lookup(pool.keys_of(tokens, [('tenant', '租户甲')]), 5))，"
                    "ids(pool.lookup(pool.keys_of(tokens), 5))，pool_state(pool)"),
             title=L("registers under the keys admit stored (extra keys included)",
                     "用 `admit` 保存的 key 登记（附加 key 也算在内）"),
             hint=L("Register each block under state.keys[i], the key admit hashed with the request's extra keys; "
                    "a fresh hash of the tokens alone is another key, so the tenant's own request would miss.",
                    "用 `state.keys[i]` 登记每个块，那是 `admit` 带着请求的附加 key 算出的 key；只用 token 重新哈希得到的是"
                    "另一个 key，这个租户自己的请求反而会未命中。"))
def keys_hashed_with_extra_keys(impl):
    pool = impl.BlockPool(6, 2)
    tokens = [3, 1, 4, 1, 5]
    tenant = [("tenant", "".join(("租户", "甲")))]  # built at run time, non-ASCII
    pool.admit("a", tokens, tenant)
    pool.commit("a")
    return record(with_extra_keys=ids(pool.lookup(pool.keys_of(tokens, [("tenant", "租户甲")]), 5)),
                  without=ids(pool.lookup(pool.keys_of(tokens), 5)), pool=pool_state(pool))


# -- TODO 5: release ------------------------------------------------------------------------------
@STAGE.check("s03.release",
             call=L("pool = BlockPool(6, 2); admit + commit 'a' = [1, 2, 3]; pool.admit('b', [1, 2, 4]); "
                    "pool.release('a'); pool_state(pool)",
                    "pool = BlockPool(6, 2)；接纳并提交 'a' = [1, 2, 3]；pool.admit('b', [1, 2, 4])；"
                    "pool.release('a')；pool_state(pool)"),
             title=L("drops one reference per block", "每个块去掉一个引用"),
             hint=L("One reference less per block; only blocks that reach 0 go to the free queue.",
                    "每个块引用计数减 1；只有减到 0 的块才进入空闲队列。"))
def drops_one_reference(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.admit("b", [1, 2, 4])
    pool.release("a")
    return pool_state(pool)


@STAGE.check("s03.release",
             call=L("pool = BlockPool(4, 2); admit + commit 'a' = [1, 2, 3, 4, 5]; pool.release('a'); "
                    "pool_state(pool), admission(pool.admit('b', [1, 2, 3, 4, 9]))",
                    "pool = BlockPool(4, 2)；接纳并提交 'a' = [1, 2, 3, 4, 5]；pool.release('a')；"
                    "pool_state(pool)，admission(pool.admit('b', [1, 2, 3, 4, 9]))"),
             title=L("freed blocks stay cached", "释放的块仍然缓存着"),
             hint=L("A freed block keeps its key: it stays cached until it is handed out for other content.",
                    "被释放的块保留它的 key：在被分配给别的内容之前，它一直缓存着。"))
def freed_blocks_stay_cached(impl):
    pool = committed(impl, 4, 2, [1, 2, 3, 4, 5])
    pool.release("a")
    return record(pool=pool_state(pool), b=admission(pool.admit("b", [1, 2, 3, 4, 9])))


@STAGE.check("s03.release",
             call=L("pool = BlockPool(6, 2); admit + commit 'a' = [1, 2, 3]; pool.admit('b', [1, 2, 4]); "
                    "pool.release('a'); admission(pool.admit('c', [9] * 9)) -> ?, pool_state(pool)",
                    "pool = BlockPool(6, 2)；接纳并提交 'a' = [1, 2, 3]；pool.admit('b', [1, 2, 4])；"
                    "pool.release('a')；admission(pool.admit('c', [9] * 9)) -> ?，pool_state(pool)"),
             title=L("a shared block is never handed out", "共享中的块不会被分配出去"),
             hint=L("Never put a block that a live request still holds into the free queue.",
                    "活跃请求还持有的块，绝不能放进空闲队列。"))
def shared_block_is_never_handed_out(impl):
    pool = committed(impl, 6, 2, [1, 2, 3])
    pool.admit("b", [1, 2, 4])
    pool.release("a")
    return record(c=attempt(lambda: admission(pool.admit("c", [9] * 9))), pool=pool_state(pool))


@STAGE.check("s03.release",
             call=L("pool = BlockPool(6, 2); A = [2, 7, 1, 8, 2, 8, 1]: admit, commit, release; "
                    "B = A[:6] + [9] (hits 3 of A's blocks): admission, commit, release; pool_state(pool); "
                    "admission(pool.admit('c', A[:4] + [5]))",
                    "pool = BlockPool(6, 2)；A = [2, 7, 1, 8, 2, 8, 1]：接纳、提交、释放；"
                    "B = A[:6] + [9]（命中 A 的 3 个块）：admission、提交、释放；pool_state(pool)；"
                    "admission(pool.admit('c', A[:4] + [5]))"),
             title=L("a request's hits are released too", "请求的命中块也要释放"),
             hint=L("Release every block of the table, the hits too: B's hits go back to the free queue with their "
                    "keys, so C hits them again.",
                    "块表里的每个块都要释放，命中块也不例外：B 的命中块带着 key 回到空闲队列，C 才能再次命中它们。"))
def hits_are_released_too(impl):
    a = [2, 7, 1, 8, 2, 8, 1]
    pool = committed(impl, 6, 2, a)
    pool.release("a")
    b = admission(pool.admit("b", a[:6] + [9]))
    pool.commit("b")
    pool.release("b")
    after_b = pool_state(pool)
    return record(b=b, after_b=after_b, c=admission(pool.admit("c", a[:4] + [5])))


@STAGE.check("s03.release",
             call=L("pool = BlockPool(5, 3); pool.admit('q', [4, 4, 4, 4]); pool.release('q') before any commit; "
                    "pool_state(pool); pool.release('q') again -> ?; admission(pool.admit('q', [4, 4, 4, 4]))",
                    "pool = BlockPool(5, 3)；pool.admit('q', [4, 4, 4, 4])；还没提交就 pool.release('q')；"
                    "pool_state(pool)；再次 pool.release('q') -> ?；admission(pool.admit('q', [4, 4, 4, 4]))"),
             title=L("released before commit, and released twice", "提交之前就释放，以及重复释放"),
             hint=L("A request released before commit frees its blocks without keys; releasing it again raises "
                    "KeyError and changes nothing; its id can then be admitted again.",
                    "提交之前就被释放的请求，它的块空闲且不带 key；再释放一次要抛出 KeyError，并且什么都不改；"
                    "之后这个 id 可以再次被接纳。"))
def released_before_commit_and_twice(impl):
    pool = impl.BlockPool(5, 3)
    pool.admit("q", [4, 4, 4, 4])
    pool.release("q")
    after = pool_state(pool)
    twice = attempt(lambda: pool.release("q"))
    return record(after_release=after, release_again=twice, pool_after_the_second=pool_state(pool),
                  again=admission(pool.admit("q", [4, 4, 4, 4])))
