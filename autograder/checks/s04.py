"""Stage 4 spec and public checks: LRU eviction, pinning and minimum residence time.

Everything a learner reads here exists in English and Chinese (``L(en, zh)``). Contracts say what to
set or return and the invariant, never code; hint tiers go from the idea (1) over the approach (2) to
a skeleton with blanks (3). Each check's hint speaks only about the bug that check detects.
"""
from __future__ import annotations

from autograder.checks.common import raised as caught  # hidden checks import it from here too
from autograder.checks.common import record
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo

STAGE = Stage(
    id="s04",
    title=L("Eviction: LRU, pinning and residence", "缓存淘汰：LRU、固定与最短驻留"),
    subtitle="缓存淘汰：LRU、固定与最短驻留",
    summary=L("eviction: an O(1) LRU free queue, pinning, minimum residence time, hit rates on real traces",
              "缓存淘汰：O(1) 的 LRU 空闲队列、固定（pinning）、最短驻留时间，以及真实 trace 上的命中率"),
    minutes=75,
    todos=[
        Todo("s04.append", 1, target="LRUFreeQueue.append", points=2,
             title=L("free a block at the most recent end", "把块释放到最近使用的一端"),
             contract=L(
                 "Link the block in as the most recently used free block, and count it.\n"
                 "A block with a key joins the cached run at its most recent end (just before the tail sentinel);\n"
                 "a block without a key joins the keyless run at its end (just before the mid sentinel), so every\n"
                 "keyless block is reused before any cached one.\n"
                 "Invariant: afterwards the block is a member (its own links are set) and the length is one larger.",
                 "把这个块作为“最近使用”的空闲块链入队列，并计入长度。\n"
                 "有 key 的块接到缓存段最近使用的一端（`tail` 哨兵正前方）；没有 key 的块接到无 key 段的末尾\n"
                 "（mid 哨兵正前方），这样任何无 key 的块都会先于缓存块被复用。\n"
                 "不变量：完成后这个块是队列成员（它自己的两个链接已设好），长度加一。"),
             hints=(L("LRU order is simply the order in which blocks became free: the block freed last is the most "
                      "recent. Keyless blocks hold nothing anyone can hit, so they wait in their own run in front.",
                      "LRU 顺序就是块变成空闲的先后顺序：最后释放的块就是最近使用的。无 key 的块里没有可命中的内容，"
                      "所以它们单独排在前面一段。"),
                    L("Choose the sentinel to insert in front of from the block's key (no key: mid; a key: tail), let "
                      "the given linking helper do the pointer work, and keep the length counter in step.",
                      "根据块有没有 key 选出要插在哪个哨兵前面（没有 key：`mid`；有 key：`tail`），指针操作交给给定的"
                      "插入辅助方法，同时让长度计数器保持同步。"),
                    L("# keyless blocks join the end of the keyless run, cached ones the end of the cached run\n"
                      "self._link_before(___, block)\n"
                      "self._len += 1",
                      "# 无 key 的块排到无 key 段的末尾，有 key 的块排到缓存段的末尾\n"
                      "self._link_before(___, block)\n"
                      "self._len += 1"))),
        Todo("s04.popleft", 2, target="LRUFreeQueue.popleft", points=2,
             title=L("hand out the least recent block", "交出最久未使用的块"),
             contract=L(
                 "Take out and return the first block after the head sentinel,\n"
                 "stepping over the mid sentinel: the oldest keyless block if there is one, else the least recently\n"
                 "used cached block.\n"
                 "Invariant: the returned block has left the queue completely (both of its links are empty again)\n"
                 "and the length is one smaller. The empty queue is handled above the region.",
                 "取出并返回 head 哨兵之后的第一个块，\n遇到 mid 哨兵就跳过它："
                 "有无 key 的块就是其中最早的那个，否则是最近最少使用的缓存块。\n"
                 "不变量：返回的块已经完全离开队列（它的两个链接重新为空），长度减一。队列为空的情况在区域上方已经处理。"),
             hints=(L("The head end of the list is the least recently used end. The mid sentinel is only a marker "
                      "between the two runs, never a block to hand out.",
                      "链表的 head 一端就是最久未使用的一端。mid 哨兵只是两段之间的分界标记，绝不能把它交出去。"),
                    L("Look at the node right after head; if it is mid, the keyless run is empty and the node after "
                      "mid is the answer. Unlink it with the given helper, count it out, and return it.",
                      "看 head 后面紧挨着的节点；如果它是 mid，说明无 key 段是空的，mid 后面的节点才是答案。"
                      "用给定的摘除辅助方法把它摘下，长度减一，再返回它。"),
                    L("block = self._head.next_free\n"
                      "if block is ___:\n"
                      "    # a marker between the two runs is not a block\n"
                      "    block = ___\n"
                      "self._unlink(block)\n"
                      "self._len -= 1\n"
                      "return block",
                      "block = self._head.next_free\n"
                      "if block is ___:\n"
                      "    # 两段之间的哨兵不是块\n"
                      "    block = ___\n"
                      "self._unlink(block)\n"
                      "self._len -= 1\n"
                      "return block"))),
        Todo("s04.remove", 3, target="LRUFreeQueue.remove", points=2,
             title=L("O(1) remove from the middle", "O(1) 地从中间移除"),
             contract=L(
                 "Take the block out of the queue wherever it sits, in constant time,\n"
                 "and count it out.\n"
                 "A block that is not a member (its links are empty) raises ValueError before anything changes.\n"
                 "Invariant: never search the list: the block's own links say where it is.",
                 "不管块在队列的哪个位置，\n都要在常数时间内把它移出队列，并把长度减一。\n"
                 "不是队列成员的块（两个链接为空）要在改动任何东西之前抛出 ValueError。\n"
                 "不变量：绝不搜索链表：块自己的链接已经说明了它在哪里。"),
             hints=(L("A hit can land on any free block. In a doubly linked list a block knows both neighbours, so it "
                      "can leave in constant time without anyone looking for it.",
                      "命中可能落在任何一个空闲块上。在双向链表里，块知道自己的两个邻居，所以不用谁去找它，"
                      "常数时间就能离开。"),
                    L("Test membership through the block's own previous link and raise if it is empty; otherwise "
                      "unlink it with the given helper and decrement the length.",
                      "用块自己的前向链接判断它是否在队列里，为空就抛异常；否则用给定的摘除辅助方法摘下它，长度减一。"),
                    L("# validate before touching any link\n"
                      "if ___:\n"
                      "    raise ValueError(...)\n"
                      "self._unlink(block)\n"
                      "self._len -= 1",
                      "# 先校验，再动链接\n"
                      "if ___:\n"
                      "    raise ValueError(...)\n"
                      "self._unlink(block)\n"
                      "self._len -= 1"))),
        Todo("s04.release_blocks", 4, target="EvictionPool.release_blocks", points=2,
             title=L("release a block table tail first", "从尾部开始释放块表"),
             contract=L(
                 "Drop one reference on every block of the table,\n"
                 "going from its last block to its first; a block whose count reaches 0 joins the free queue at\n"
                 "that moment, and a block that another request still holds stays out of it.\n"
                 "Invariant: afterwards a prompt's prefix is more recent in the queue than its tail, so LRU evicts\n"
                 "the tail first and the cache stays prefix-closed (a cached block's prefix is cached too).",
                 "给块表里的每个块释放一个引用，\n顺序是从最后一块到第一块；"
                 "引用计数降到 0 的块在那一刻进入空闲队列，仍被其他请求持有的块不进队列。\n"
                 "不变量：完成后，在队列里提示词的前缀比它的尾部更“新”，所以 LRU 先淘汰尾部，\n"
                 "缓存保持前缀封闭（一个缓存块的前缀也一定在缓存里）。"),
             hints=(L("A hit needs the whole prefix. If LRU evicted a prompt's first block, its later blocks would stay "
                      "cached but could never hit again: the tail has to go first.",
                      "命中需要完整的前缀。如果 LRU 先淘汰了提示词的第一块，后面的块虽然还在缓存里，却再也不可能"
                      "命中：必须先淘汰尾部。"),
                    L("Walk the table in reverse order, decrement each block's count, and append to the free queue "
                      "exactly the blocks whose count has just reached 0.",
                      "倒序遍历块表，把每个块的引用计数减一，只把计数刚好降到 0 的块追加到空闲队列。"),
                    L("for block in ___:\n"
                      "    block.ref_count -= 1\n"
                      "    if block.ref_count == 0:\n"
                      "        ___",
                      "for block in ___:\n"
                      "    block.ref_count -= 1\n"
                      "    if block.ref_count == 0:\n"
                      "        ___"))),
        Todo("s04.pin", 5, target="EvictionPool.pin", points=3,
             title=L("pin a hot block, within a cap", "在上限之内固定热点块"),
             contract=L(
                 "Return False and change nothing when max_pinned blocks are pinned already.\n"
                 "Otherwise hold one more reference on the block (a free block first leaves the free queue: only\n"
                 "unreferenced blocks may wait there), record the pin in the set of pinned ids and in the block list\n"
                 "of the PIN_ID pseudo-request, and return True.\n"
                 "Invariant: a pinned block is never in the free queue, and its reference count includes the pin.",
                 "已经固定了 max_pinned 个块时，返回 False，什么都不改。\n"
                 "否则给这个块多加一个引用（空闲的块要先离开空闲队列：只有没被引用的块才能待在那里），\n"
                 "把这次固定记到已固定 id 的集合里、以及伪请求 PIN_ID 的块列表里，然后返回 True。\n"
                 "不变量：被固定的块永远不在空闲队列里，它的引用计数包含这次固定。"),
             hints=(L("The pool only ever evicts blocks nobody references. A pin is simply one more reference, held by "
                      "a pseudo-request that never ends; the cap keeps pins from taking the whole pool.",
                      "块池只会淘汰没有任何引用的块。固定就是多加一个引用，由一个永不结束的伪请求持有；"
                      "上限保证固定的块不会占满整个块池。"),
                    L("Check the cap first. If the block is free (count 0), take it out of the free queue before "
                      "raising its count; then add its id to the pinned set and the block to the pseudo-request's list.",
                      "先检查上限。如果块是空闲的（计数为 0），在增加计数之前先把它移出空闲队列；然后把它的 id "
                      "加入已固定集合，把块加入伪请求的块列表。"),
                    L("if ___:\n"
                      "    return False\n"
                      "if block.ref_count == 0:\n"
                      "    ___\n"
                      "block.ref_count += 1\n"
                      "self._pinned.add(block.block_id)\n"
                      "# the pin's extra reference is held by the pool's pin request\n"
                      "___\n"
                      "return True",
                      "if ___:\n"
                      "    return False\n"
                      "if block.ref_count == 0:\n"
                      "    ___\n"
                      "block.ref_count += 1\n"
                      "self._pinned.add(block.block_id)\n"
                      "# 固定带来的那个额外引用，记在块池的固定请求名下\n"
                      "___\n"
                      "return True"))),
        Todo("s04.expire", 6, target="EvictionPool.expire", points=2,
             title=L("end residence holds on time", "按时结束驻留持有"),
             contract=L(
                 "Inside the loop over the holds (oldest first):\n"
                 "stop as soon as the oldest remaining hold is still too young, that is, less than min_residence\n"
                 "seconds of the pool's own clock have passed since it was registered. A hold exactly min_residence\n"
                 "old has ended: then do nothing, and the code after the region releases it and counts it.",
                 "在遍历持有的循环里（从最早的开始）：\n"
                 "一旦剩下最早的那个持有还“太年轻”，就停止循环；“太年轻”指从它登记到现在，按块池自己的时钟\n"
                 "还不到 min_residence 秒。恰好满 min_residence 秒的持有已经结束：这时什么都不用做，\n"
                 "区域后面的代码会释放它并计数。"),
             hints=(L("Holds are queued in the order they were made, so once one is too young, every later one is "
                      "younger still: there is nothing left to release.",
                      "持有是按登记顺序排队的，一旦某个还太年轻，后面的只会更年轻：已经没有可以释放的了。"),
                    L("Compare the time since registration (the clock value read above the loop minus registered_at) "
                      "with min_residence, and leave the loop while it is smaller. Use the pool's clock, not wall time.",
                      "拿登记以来经过的时间（循环上方读到的时钟值减去 registered_at）和 min_residence 比较，"
                      "小于它就跳出循环。用块池自己的时钟，不要用系统时间。"),
                    L("# holds are oldest first: the first one still too young ends the loop\n"
                      "if ___:\n"
                      "    break",
                      "# 持有按从早到晚排列：遇到第一个还没到期的就结束循环\n"
                      "if ___:\n"
                      "    break"))),
    ],
    quiz=Quiz(number=7, points=2, questions=(
        Question("q1", L("Which blocks can the pool ever overwrite with new content?",
                         "块池可能用新内容覆盖哪些块？"),
                 L("Think about what the free queue holds and what a reference count protects.",
                   "想想空闲队列里放的是什么块，以及引用计数保护的是什么。"),
                 choices=(L("any block whose key is in the cache map", "任何 key 在缓存表里的块"),
                          L("only blocks nobody references, the ones waiting in the free queue",
                            "只有没人引用的块，也就是在空闲队列里等待的那些"),
                          L("the blocks of the oldest live request", "最早的那个活跃请求的块"))),
        Question("q2", L("A free cached block in a pool of a million blocks gets a hit. Why is a doubly linked list "
                         "through the blocks a better free queue than a deque?",
                         "一个有一百万个块的块池里，某个空闲缓存块被命中了。为什么穿过块本身的双向链表比 deque "
                         "更适合做空闲队列？"),
                 L("Count the steps each structure needs to take one given element out of its middle.",
                   "数一数两种结构要从中间取出一个指定元素各需要多少步。"),
                 choices=(L("the block knows its neighbours, so it leaves in constant time; a deque must search for it",
                            "块知道自己的邻居，所以能在常数时间内离开；deque 必须先把它找出来"),
                          L("a deque cannot hold blocks without a key, so they would need a second structure",
                            "deque 装不了没有 key 的块，只能再建一个结构来放它们"),
                          L("a deque copies each block's KV data whenever the block moves through it",
                            "块在 deque 里移动时，deque 会把它的 KV 数据复制一遍"))),
        Question("q3", L("A fresh pool of 6 blocks of 16 tokens, your LRU queue and tail-first release. Request A, a "
                         "64-token prompt (4 full blocks), runs and finishes; then request B, 64 other tokens, runs and "
                         "finishes. A third request sends A's 64 tokens plus one more. How many of its tokens are "
                         "cache hits?",
                         "一个新的块池：6 个块，每块 16 个 token，用你的 LRU 队列，从尾部开始释放。请求 A 是一个 64 token "
                         "的提示词（4 个满块），运行并结束；接着请求 B 是另外 64 个 token，运行并结束。第三个请求发来 A 的 "
                         "64 个 token 再加 1 个 token。它有多少个 token 命中缓存？"),
                 L("Follow the free queue: which blocks does B take (keyless ones first), and in which order did A's "
                   "blocks enter the queue?",
                   "跟着空闲队列走一遍：B 拿走了哪些块（无 key 的先拿），A 的块又是按什么顺序进入队列的？"),
                 decimals=0),
        Question("q4", L("Why must max_pinned stay below num_blocks?", "为什么 max_pinned 必须小于 num_blocks？"),
                 L("A pinned block holds a reference forever. What does a new request need from the pool?",
                   "被固定的块永远持有一个引用。一个新请求需要从块池里拿到什么？"),
                 choices=(L("it does not matter: a pin only costs a counter", "无所谓：固定只多占一个计数器"),
                          L("pinned blocks would be evicted first, undoing the pins", "被固定的块会被最先淘汰，固定就白做了"),
                          L("with every block pinned no request could get a fresh block: every admission would fail",
                            "所有块都被固定后，任何请求都拿不到新块：每次接纳都会失败"))),
        Question("q5", L("min_residence is 10 s. A request's new blocks are registered at clock time 3. What is the "
                         "earliest clock time at which expire() ends their hold?",
                         "min_residence 是 10 秒。某个请求的新块在时钟时刻 3 登记。expire() 最早在哪个时钟时刻"
                         "结束对它们的持有？"),
                 L("The hold lasts at least min_residence; decide whether the boundary itself counts.",
                   "持有至少持续 min_residence；想清楚边界那一刻算不算到期。"),
                 decimals=0),
        Question("q6", L("On the Mooncake traces Belady's curve lies far above LRU at small capacities. Why can a server "
                         "not simply run Belady's policy?",
                         "在 Mooncake trace 上，小容量时 Belady 曲线远高于 LRU。为什么服务端不能直接用 Belady 策略？"),
                 L("Look at what Belady's rule reads to pick its victim.", "看看 Belady 的规则挑选淘汰对象时读了什么信息。"),
                 choices=(L("it is too slow: it needs a heap over all cached blocks", "太慢了：它要对所有缓存块维护一个堆"),
                          L("it ignores reference counts, so it would evict blocks in use", "它不管引用计数，会淘汰正在使用的块"),
                          L("it needs to know when each block will be used next, that is, the future requests",
                            "它需要知道每个块下一次什么时候被用到，也就是未来的请求"))),
    )),
    time_limit_s=20,
    memory_limit_mb=1024,
)


class Clock:
    """An injectable clock for the checks: time moves only when a probe sets ``t``."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def keyed(impl, *ids: int):
    """Blocks that hold cached content (a key), one per id."""
    return [impl.Block(i, key=b"k%d" % i) for i in ids]


def ids(blocks) -> list:
    return [b.block_id for b in blocks]


def cached_ids(pool) -> list:
    """The cached part of a pool's free queue, least recent first."""
    return [b.block_id for b in pool.free_queue if b.key is not None]


def run(pool, rid: str, tokens: list) -> int:
    """Admit, commit and release one request; its number of hit blocks."""
    hits = pool.admit(rid, tokens).hit_blocks
    pool.commit(rid)
    pool.release(rid)
    return hits


def link_reads(impl, op: str, n: int) -> int:
    """How many times one queue operation reads a block's ``prev_free``/``next_free`` on a queue of
    ``2 * n`` blocks (``n`` keyless, then ``n`` cached): a count, not a time, so the same on every machine.
    Only the blocks' reads count (the queue's own sentinels are not watched). ``op``: ``"append"`` (one
    keyless and one cached block), ``"popleft"`` (twice: from the keyless run, then with it empty) or
    ``"remove"`` (a keyless and a cached block from the middle of their runs)."""
    reads = [0]

    class Watched(impl.Block):
        __slots__ = ()

        def __getattribute__(self, name):
            if name in ("prev_free", "next_free"):
                reads[0] += 1
            return object.__getattribute__(self, name)

    q = impl.LRUFreeQueue()
    keyless = [Watched(i) for i in range(n)]
    cached = [Watched(n + i, key=b"k%d" % i) for i in range(n)]
    extra = [Watched(2 * n), Watched(2 * n + 1, key=b"extra")]
    for b in keyless + cached:
        q.append(b)
    reads[0] = 0
    if op == "append":
        for b in extra:
            q.append(b)
    elif op == "popleft":
        for b in keyless[:-1]:  # leave one keyless block: the measured pops take it, then a cached one
            q.remove(b)
        reads[0] = 0
        q.popleft()
        q.popleft()
    else:
        q.remove(keyless[n // 2])
        q.remove(cached[n // 2])
    return reads[0]


def work_grows(impl, op: str) -> dict:
    """Whether ``op`` reads more links on a queue of 80 blocks than on one of 8 (it must not: O(1))."""
    small, large = link_reads(impl, op, 4), link_reads(impl, op, 40)
    return record(link_reads_grow_with_the_queue=large > small)


# -- TODO 1: append -----------------------------------------------------------------------------------
@STAGE.check("s04.append",
             call=L("q = LRUFreeQueue(); q.append(Block(i, key=b'k%d' % i)) for i in 0..3; "
                    "[b.block_id for b in q], len(q)",
                    "q = LRUFreeQueue()；对 i = 0..3 依次 q.append(Block(i, key=b'k%d' % i))；"
                    "[b.block_id for b in q]，len(q)"),
             title=L("cached blocks wait in the order they were freed", "缓存块按释放顺序排队"),
             hint=L("Each cached block goes to the most recent end (just before the tail sentinel), and every append "
                    "adds one to the length.",
                    "每个缓存块都接到最近使用的一端（`tail` 哨兵正前方），每次 `append` 长度都要加一。"))
def cached_blocks_in_order(impl):
    q = impl.LRUFreeQueue()
    for b in keyed(impl, 0, 1, 2, 3):
        q.append(b)
    return record(order=ids(q), length=len(q))


@STAGE.check("s04.append",
             call=L("q.append(b) for b in (Block(0, key=b'k0'), Block(1), Block(2, key=b'k2'), Block(3)); "
                    "[b.block_id for b in q], len(q)",
                    "按 (Block(0, key=b'k0'), Block(1), Block(2, key=b'k2'), Block(3)) 的顺序逐个 q.append(b)；"
                    "[b.block_id for b in q]，len(q)"),
             title=L("keyless blocks wait in front of cached ones", "无 key 的块排在缓存块前面"),
             hint=L("A block without a key joins the end of the keyless run (just before the mid sentinel), in front "
                    "of every cached block.",
                    "没有 key 的块接到无 key 段的末尾（mid 哨兵正前方），排在所有缓存块前面。"))
def keyless_blocks_go_first(impl):
    q = impl.LRUFreeQueue()
    b0, b2 = keyed(impl, 0, 2)
    for b in (b0, impl.Block(1), b2, impl.Block(3)):
        q.append(b)
    return record(order=ids(q), length=len(q))


@STAGE.check("s04.append",
             call=L("blocks = Block(0..4, key=...); q.append(b) for b in blocks; "
                    "[b in q for b in blocks], blocks[0].prev_free is not None, blocks[0].next_free is blocks[1]",
                    "blocks = Block(0..4, key=...)；逐个 q.append(b)；"
                    "[b in q for b in blocks]，blocks[0].prev_free is not None，blocks[0].next_free is blocks[1]"),
             title=L("appended blocks are linked members", "追加的块是链好的队列成员"),
             hint=L("Membership is read from the block's own links: link the block into the list itself instead of "
                    "keeping it in a container of your own.",
                    "是否在队列里是从块自己的链接读出来的：要把块本身链进链表，而不是放进你自己的容器里。"))
def appended_blocks_are_members(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2, 3, 4)
    for b in blocks:
        q.append(b)
    return record(members=[b in q for b in blocks], block0_has_prev=blocks[0].prev_free is not None,
                  block0_next_is_block1=blocks[0].next_free is blocks[1])


@STAGE.check("s04.append",
             call=L("queues of 8 and of 80 blocks (half keyless, half cached) whose blocks count every read of "
                    "their prev_free/next_free; q.append(a keyless block); q.append(a cached block): "
                    "do the reads grow with the queue?",
                    "两个队列，分别有 8 个和 80 个块（一半无 key，一半缓存着），块会记下 prev_free/next_free "
                    "每一次被读取；q.append(一个无 key 的块)；q.append(一个缓存块)：读取次数会随队列变长而增加吗？"),
             title=L("constant time: the work does not grow with the queue", "常数时间：工作量不随队列变长"),
             hint=L("Insert in front of the sentinel you already hold (mid or tail) with the given linking helper; "
                    "never walk the list to find its end.",
                    "用给定的插入辅助方法插到你手里已有的哨兵（`mid` 或 `tail`）前面；绝不要遍历链表去找末尾。"),
             specificity=2)
def append_work_does_not_grow(impl):
    return work_grows(impl, "append")


# -- TODO 2: popleft ----------------------------------------------------------------------------------
@STAGE.check("s04.popleft",
             call=L("q.append(Block(i, key=...)) for i in 0..3; [q.popleft().block_id for _ in range(2)]",
                    "对 i = 0..3 依次 q.append(Block(i, key=...))；[q.popleft().block_id for _ in range(2)]"),
             title=L("the least recently freed block comes out first", "最早释放的块最先出来"),
             hint=L("Hand out the least recently used block, right after the head sentinel (stepping over the mid "
                    "sentinel, which is never handed out), not the most recent one at the tail end.",
                    "要交出的是紧挨 `head` 哨兵的那个最久未使用的块（遇到 mid 哨兵要跳过，它绝不能被交出去），"
                    "而不是 `tail` 一端最近使用的块。"))
def least_recent_first(impl):
    q = impl.LRUFreeQueue()
    for b in keyed(impl, 0, 1, 2, 3):
        q.append(b)
    return record(popped=[q.popleft().block_id for _ in range(2)])


@STAGE.check("s04.popleft",
             call=L("q.append(b) for b in (Block(0, key=...), Block(1), Block(2, key=...), Block(3)); "
                    "[q.popleft().block_id for _ in range(4)]",
                    "按 (Block(0, key=...), Block(1), Block(2, key=...), Block(3)) 的顺序逐个 q.append(b)；"
                    "[q.popleft().block_id for _ in range(4)]"),
             title=L("keyless blocks come out before cached ones", "无 key 的块先于缓存块出来"),
             hint=L("Keyless blocks (between head and mid) come out before cached ones, and the mid sentinel itself "
                    "is never handed out.",
                    "无 key 的块（head 和 mid 之间）先于缓存块出来，mid 哨兵本身绝不能交出去。"))
def keyless_before_cached(impl):
    q = impl.LRUFreeQueue()
    b0, b2 = keyed(impl, 0, 2)
    for b in (b0, impl.Block(1), b2, impl.Block(3)):
        q.append(b)
    return record(popped=[q.popleft().block_id for _ in range(4)])


@STAGE.check("s04.popleft",
             call=L("q.append(b7); q.append(b8); q.popleft() twice; len(q), b7 in q, b7.prev_free is None; "
                    "q.popleft() on the empty queue -> ?; q.append(b7); [b.block_id for b in q]",
                    "q.append(b7)；q.append(b8)；调用两次 q.popleft()；len(q)，b7 in q，b7.prev_free is None；"
                    "对空队列 q.popleft() -> ?；q.append(b7)；[b.block_id for b in q]"),
             title=L("a popped block leaves the queue for good", "弹出的块彻底离开队列"),
             hint=L("A popped block must leave the list completely (both links cleared) and be counted out, so that "
                    "it can be freed again later.",
                    "弹出的块必须完全离开链表（两个链接都清空）并从长度里减掉，这样以后它才能再次被释放。"))
def popped_blocks_leave_the_queue(impl):
    q = impl.LRUFreeQueue()
    b7, b8 = keyed(impl, 7, 8)
    q.append(b7)
    q.append(b8)
    popped = [q.popleft().block_id, q.popleft().block_id]
    after = record(length=len(q), block7_in_queue=b7 in q, block7_links_cleared=b7.prev_free is None)
    err = caught(q.popleft)
    q.append(b7)  # a popped block can be freed again
    return record(popped=popped, after_popping=after, pop_from_empty=err, after_append_again=ids(q))


@STAGE.check("s04.popleft",
             call=L("queues of 8 and of 80 blocks whose blocks count every read of their prev_free/next_free; "
                    "q.popleft() twice (the last keyless block, then with the keyless run empty): "
                    "do the reads grow with the queue?",
                    "两个队列，分别有 8 个和 80 个块，块会记下 prev_free/next_free 每一次被读取；调用两次 q.popleft()"
                    "（先取走最后一个无 key 的块，再在无 key 段为空时取）：读取次数会随队列变长而增加吗？"),
             title=L("constant time: the work does not grow with the queue", "常数时间：工作量不随队列变长"),
             hint=L("Take the node next to the head sentinel (or next to mid when the keyless run is empty); never "
                    "iterate over the queue or search it.",
                    "直接取 head 哨兵旁边的节点（无 key 段为空时取 mid 旁边的）；绝不要遍历或搜索队列。"),
             specificity=2)
def popleft_work_does_not_grow(impl):
    return work_grows(impl, "popleft")


# -- TODO 3: remove -----------------------------------------------------------------------------------
@STAGE.check("s04.remove",
             call=L("q.append(b) for b in blocks = Block(0..4, key=...); q.remove(blocks[2]); "
                    "[b.block_id for b in q], len(q), blocks[2] in q",
                    "blocks = Block(0..4, key=...)，逐个 q.append(b)；q.remove(blocks[2])；"
                    "[b.block_id for b in q]，len(q)，blocks[2] in q"),
             title=L("a block leaves from the middle", "块从中间离开"),
             hint=L("The removed block leaves from where it is: its neighbours close the gap, its own links are "
                    "cleared (so it no longer counts as a member) and the length drops by one.",
                    "被移除的块就地离开：它的两个邻居直接连起来，它自己的链接被清空（因此不再算作队列成员），长度减一。"))
def remove_from_the_middle(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2, 3, 4)
    for b in blocks:
        q.append(b)
    q.remove(blocks[2])
    return record(order=ids(q), length=len(q), block2_in_queue=blocks[2] in q)


@STAGE.check("s04.remove",
             call=L("q.append(a); q.remove(b) -> ? (b is not in q); q.remove(a); "
                    "q.remove(a) a second time -> ?; len(q), [b.block_id for b in q]",
                    "q.append(a)；q.remove(b) -> ?（b 不在 q 里）；q.remove(a)；再 q.remove(a) 一次 -> ?；"
                    "len(q)，[b.block_id for b in q]"),
             title=L("a block that is not in the queue is refused", "不在队列里的块会被拒绝"),
             hint=L("A block that is not in the queue raises ValueError, and the queue stays exactly as it was.",
                    "不在队列里的块要抛出 ValueError，并且队列保持原样。"))
def remove_refuses_non_members(impl):
    q = impl.LRUFreeQueue()
    a, b = keyed(impl, 0, 1)
    q.append(a)
    first = caught(lambda: q.remove(b))
    q.remove(a)
    second = caught(lambda: q.remove(a))
    return record(remove_non_member=first, remove_twice=second, length=len(q), order=ids(q))


@STAGE.check("s04.remove",
             call=L("q.append(b) for b in blocks = Block(0..2, key=...); q.remove(blocks[0]); "
                    "q.append(blocks[0]); [q.popleft().block_id for _ in range(3)]",
                    "blocks = Block(0..2, key=...)，逐个 q.append(b)；q.remove(blocks[0])；q.append(blocks[0])；"
                    "[q.popleft().block_id for _ in range(3)]"),
             title=L("a removed block can be freed again as most recent", "移除后的块能作为最近使用的块再次释放"),
             hint=L("After remove the block must have no links left, so that freeing it again puts it at the most "
                    "recent end.",
                    "remove 之后块不能留有任何链接，这样再次释放时它才会排到最近使用的一端。"))
def hit_then_release_makes_most_recent(impl):
    q = impl.LRUFreeQueue()
    blocks = keyed(impl, 0, 1, 2)
    for b in blocks:
        q.append(b)
    q.remove(blocks[0])
    q.append(blocks[0])
    return record(popped=[q.popleft().block_id for _ in range(3)])


@STAGE.check("s04.remove",
             call=L("pool = BlockPool(6, 1, free_queue=LRUFreeQueue()); A = [1, 2, 3, 4]; "
                    "run = admit, commit, release; "
                    "[run(pool, 'A', A), run(pool, 'B', A + [5]), run(pool, 'C', A + [5, 6])], len(pool.free_queue), pool.violations()",
                    "pool = BlockPool(6, 1, free_queue=LRUFreeQueue())；A = [1, 2, 3, 4]；run = 接纳、提交、释放；"
                    "[run(pool, 'A', A), run(pool, 'B', A + [5]), run(pool, 'C', A + [5, 6])]，len(pool.free_queue)，pool.violations()"),
             title=L("revived blocks keep hitting", "被重新启用的块继续命中"),
             hint=L("A hit on a free cached block takes it out of the queue; when that request ends the block is "
                    "freed again, and the next request must still find it.",
                    "命中空闲缓存块时要把它移出队列；那个请求结束后块会再次被释放，下一个请求必须仍能找到它。"))
def revive_path_through_the_pool(impl):
    pool = impl.BlockPool(6, 1, free_queue=impl.LRUFreeQueue())  # stage 3's pool: EvictionPool comes later
    a = [1, 2, 3, 4]
    hits = [run(pool, "A", a), run(pool, "B", a + [5]), run(pool, "C", a + [5, 6])]
    return record(hits=hits, free_blocks=len(pool.free_queue), violations=pool.violations())


@STAGE.check("s04.remove",
             call=L("queues of 8 and of 80 blocks whose blocks count every read of their prev_free/next_free; "
                    "q.remove(the middle keyless block); q.remove(the middle cached block): "
                    "do the reads grow with the queue?",
                    "两个队列，分别有 8 个和 80 个块，块会记下 prev_free/next_free 每一次被读取；"
                    "q.remove(无 key 段正中间的块)；q.remove(缓存段正中间的块)：读取次数会随队列变长而增加吗？"),
             title=L("constant time: the block leaves through its own links", "常数时间：块通过自己的链接离开"),
             hint=L("The block's own links say where it is: test membership through them and unlink it with the "
                    "given helper; never walk the list looking for it.",
                    "块自己的链接已经说明了它在哪里：用它们判断是否在队列里，再用给定的摘除辅助方法摘下它；"
                    "绝不要遍历链表去找它。"),
             specificity=2)
def remove_work_does_not_grow(impl):
    return work_grows(impl, "remove")


# -- TODO 4: release_blocks ---------------------------------------------------------------------------
@STAGE.check("s04.release_blocks",
             call=L("pool = EvictionPool(8, 2); run(pool, 'a', [1, 2, 3, 4, 5, 6]) (admit, commit, release); "
                    "[b.block_id for b in pool.free_queue if b.key is not None]",
                    "pool = EvictionPool(8, 2)；run(pool, 'a', [1, 2, 3, 4, 5, 6])（接纳、提交、释放）；"
                    "[b.block_id for b in pool.free_queue if b.key is not None]"),
             title=L("the tail is freed first", "尾部先被释放"),
             hint=L("Hand the blocks to the free queue from the last block of the table to the first, so the first "
                    "block ends up the most recent.",
                    "从块表的最后一块到第一块依次交给空闲队列，这样第一块最终是最近使用的。"))
def tail_is_freed_first(impl):
    pool = impl.EvictionPool(8, 2)
    run(pool, "a", [1, 2, 3, 4, 5, 6])
    return record(cached_free_order=cached_ids(pool))


@STAGE.check("s04.release_blocks",
             call=L("pool = EvictionPool(8, 2); "
                    "admit and commit 'a' = [1, 1, 2, 2, 3] and 'b' = [1, 1, 2, 2, 4]; pool.release('a'); "
                    "[b.ref_count for b in pool.blocks], [b.block_id for b in pool.free_queue if b.key is not None]",
                    "pool = EvictionPool(8, 2)；接纳并提交 'a' = [1, 1, 2, 2, 3] 和 'b' = [1, 1, 2, 2, 4]；"
                    "pool.release('a')；"
                    "[b.ref_count for b in pool.blocks]，[b.block_id for b in pool.free_queue if b.key is not None]"),
             title=L("shared blocks stay in use", "共享的块仍在使用"),
             hint=L("Only a block whose count reaches 0 joins the free queue; a block another request still holds "
                    "keeps its reference and stays out.",
                    "只有计数降到 0 的块才进入空闲队列；仍被其他请求持有的块保留引用，不进队列。"))
def shared_blocks_stay_in_use(impl):
    pool = impl.EvictionPool(8, 2)
    pool.admit("a", [1, 1, 2, 2, 3])
    pool.commit("a")
    pool.admit("b", [1, 1, 2, 2, 4])
    pool.commit("b")
    pool.release("a")
    return record(ref_counts=[b.ref_count for b in pool.blocks], cached_free_order=cached_ids(pool))


@STAGE.check("s04.release_blocks",
             call=L("pool = EvictionPool(4, 2); A = [5, 5, 6, 6, 7, 7]; run(pool, 'A', A); "
                    "run(pool, 'B', [9, 9, 9]); "
                    "[pool.is_cached(k) for k in pool.keys_of(A)], run(pool, 'A2', A + [0]) (its hit blocks)",
                    "pool = EvictionPool(4, 2)；A = [5, 5, 6, 6, 7, 7]；run(pool, 'A', A)；"
                    "run(pool, 'B', [9, 9, 9])；"
                    "[pool.is_cached(k) for k in pool.keys_of(A)]，run(pool, 'A2', A + [0])（它命中的块数）"),
             title=L("LRU evicts the tail before the prefix", "LRU 先淘汰尾部，再淘汰前缀"),
             hint=L("Freed tail first, LRU evicts a prompt's last block before its first, so what survives is a "
                    "prefix that still hits.",
                    "从尾部开始释放时，LRU 会先淘汰提示词的最后一块，留下来的是仍能命中的前缀。"))
def lru_evicts_the_tail_before_the_prefix(impl):
    pool = impl.EvictionPool(4, 2)
    a = [5, 5, 6, 6, 7, 7]
    run(pool, "A", a)
    run(pool, "B", [9, 9, 9])
    return record(a_keys_cached=[pool.is_cached(k) for k in pool.keys_of(a)], a_hits_again=run(pool, "A2", a + [0]))


@STAGE.check("s04.release_blocks",
             call=L("pool = EvictionPool(5, 2); run(pool, 'x', [4] * 8) (its 4 blocks freed tail first); "
                    "a = pool.admit('a', [6] * 5) gets blocks whose ids fall along its table; commit, release 'a'; "
                    "a.block_table, [b.block_id for b in pool.free_queue if b.key is not None], "
                    "[b.block_id for b in pool.free_queue if b.key is None]",
                    "pool = EvictionPool(5, 2)；run(pool, 'x', [4] * 8)（它的 4 个块从尾部开始释放）；"
                    "a = pool.admit('a', [6] * 5) 拿到的块，编号沿块表递减；提交、释放 'a'；"
                    "a.block_table，[b.block_id for b in pool.free_queue if b.key is not None]，"
                    "[b.block_id for b in pool.free_queue if b.key is None]"),
             title=L("tail first, whatever the block ids", "从尾部开始释放，与块的编号无关"),
             hint=L("Tail first means the table's order, last entry first: the ids of reused blocks can go down "
                    "along the table, so never order blocks by their id.",
                    "“从尾部开始”指的是块表里的顺序，从最后一项开始：复用的块编号可能沿块表递减，"
                    "所以绝不要按块的编号来排序。"))
def tail_first_whatever_the_block_ids(impl):
    pool = impl.EvictionPool(5, 2)
    run(pool, "x", [4] * 8)
    a = pool.admit("a", [6] * 5)  # the never-used block first, then x's least recent ones: ids go down
    pool.commit("a")
    pool.release("a")
    keyless = [b.block_id for b in pool.free_queue if b.key is None]
    return record(a_table=a.block_table, cached_free_order=cached_ids(pool), keyless_free_order=keyless)


# -- TODO 5: pin ----------------------------------------------------------------------------------------
@STAGE.check("s04.pin",
             call=L("pool = EvictionPool(6, 2, max_pinned=2); run(pool, 'sys', [7] * 6); "
                    "blocks = its 3 cached blocks; "
                    "[pool.pin(b) for b in blocks], pool.num_pinned, [b.ref_count for b in blocks]",
                    "pool = EvictionPool(6, 2, max_pinned=2)；run(pool, 'sys', [7] * 6)；blocks = 它的 3 个缓存块；"
                    "[pool.pin(b) for b in blocks]，pool.num_pinned，[b.ref_count for b in blocks]"),
             title=L("the cap is respected", "遵守固定上限"),
             hint=L("At the cap, pin returns False and leaves the block exactly as it was (no extra reference).",
                    "达到上限时 pin 返回 False，块保持原样（不加引用）。"))
def cap_is_respected(impl):
    pool = impl.EvictionPool(6, 2, max_pinned=2)
    run(pool, "sys", [7] * 6)
    blocks = [pool.cached[k] for k in pool.keys_of([7] * 6)]
    return record(pinned=[pool.pin(b) for b in blocks], num_pinned=pool.num_pinned,
                  ref_counts=[b.ref_count for b in blocks])


@STAGE.check("s04.pin",
             call=L("pool = EvictionPool(4, 1, max_pinned=1); run(pool, 'a', [3, 4]); "
                    "block = the free cached block of [3]; "
                    "pool.pin(block), block.ref_count, block in pool.free_queue, len(pool.free_queue), pool.violations()",
                    "pool = EvictionPool(4, 1, max_pinned=1)；run(pool, 'a', [3, 4])；block = [3] 的那个空闲缓存块；"
                    "pool.pin(block)，block.ref_count，block in pool.free_queue，len(pool.free_queue)，pool.violations()"),
             title=L("a pinned free block leaves the free queue", "被固定的空闲块离开空闲队列"),
             hint=L("Pinning a free block takes it out of the free queue, adds one reference and records it for the "
                    "pin pseudo-request, so the pool's invariants still hold.",
                    "固定一个空闲块时，要把它移出空闲队列、加一个引用，并把它记到固定用的伪请求名下，"
                    "这样块池的不变量才仍然成立。"))
def free_block_leaves_the_queue(impl):
    pool = impl.EvictionPool(4, 1, max_pinned=1)
    run(pool, "a", [3, 4])
    block = pool.cached[pool.keys_of([3])[0]]
    ok = pool.pin(block)
    return record(pinned=ok, ref_count=block.ref_count, in_free_queue=block in pool.free_queue,
                  free_blocks=len(pool.free_queue), violations=pool.violations())


@STAGE.check("s04.pin",
             call=L("pool = EvictionPool(3, 1, max_pinned=1); pool.admit('a', [5, 6]); pool.commit('a'); "
                    "block = a's block of [5] (in use); pool.pin(block); pool.release('a'); "
                    "block.ref_count, block in pool.free_queue, len(pool.free_queue), pool.violations()",
                    "pool = EvictionPool(3, 1, max_pinned=1)；pool.admit('a', [5, 6])；pool.commit('a')；"
                    "block = a 里 [5] 的那个块（正在使用）；pool.pin(block)；pool.release('a')；"
                    "block.ref_count，block in pool.free_queue，len(pool.free_queue)，pool.violations()"),
             title=L("pinning a block in use", "固定一个正在使用的块"),
             hint=L("A block in use is not in the free queue: pinning it only adds a reference, and when its request "
                    "ends it must still stay out of the queue.",
                    "正在使用的块不在空闲队列里：固定它只需加一个引用；它的请求结束后，它也必须留在队列之外。"))
def pin_in_use_block(impl):
    pool = impl.EvictionPool(3, 1, max_pinned=1)
    pool.admit("a", [5, 6])
    pool.commit("a")
    block = pool.cached[pool.keys_of([5])[0]]
    ok = pool.pin(block)
    pool.release("a")
    return record(pinned=ok, ref_count=block.ref_count, in_free_queue=block in pool.free_queue,
                  free_blocks=len(pool.free_queue), violations=pool.violations())


@STAGE.check("s04.pin",
             call=L("pool = EvictionPool(6, 2, max_pinned=2); system = [7] * 4; "
                    "run(pool, 'sys', system + [0]); pool.pin_prefix(pool.keys_of(system)); "
                    "run(pool, f'c{i}', [100 + i] * 8) for i in range(10); "
                    "run(pool, 'sys2', system + [1]), pool.violations()",
                    "pool = EvictionPool(6, 2, max_pinned=2)；system = [7] * 4；run(pool, 'sys', system + [0])；"
                    "pool.pin_prefix(pool.keys_of(system))；"
                    "对 i in range(10) 依次 run(pool, f'c{i}', [100 + i] * 8)；"
                    "run(pool, 'sys2', system + [1])，pool.violations()"),
             title=L("a pinned prefix survives churn", "被固定的前缀经得起冲刷"),
             hint=L("A pinned block holds a reference, so the pool never hands it out: its key keeps hitting however "
                    "many other prompts pass through.",
                    "被固定的块持有一个引用，块池永远不会把它交出去：不管有多少别的提示词经过，它的 key 都能一直命中。"))
def pinned_prefix_survives_churn(impl):
    pool = impl.EvictionPool(6, 2, max_pinned=2)
    system = [7] * 4
    run(pool, "sys", system + [0])
    pinned = pool.pin_prefix(pool.keys_of(system))
    for i in range(10):
        run(pool, f"c{i}", [100 + i] * 8)
    return record(pinned=pinned, system_hits=run(pool, "sys2", system + [1]), violations=pool.violations())


# -- TODO 6: expire -------------------------------------------------------------------------------------
@STAGE.check("s04.expire",
             call=("clock.t = 0; pool = EvictionPool(4, 1, min_residence=10, clock=clock); "
                   "run(pool, 'a', [1, 2, 3]); len(pool.free_queue), pool.admit('b', [4, 5, 6]) -> ?"),
             title=L("young blocks are held", "年轻的块被持有"),
             hint=L("While less than min_residence of the pool's clock has passed, the hold stays and the new blocks "
                    "cannot be evicted: the loop must stop.",
                    "按块池的时钟还不到 min_residence 时，持有保持不变，新块不能被淘汰：循环必须停下。"))
def young_blocks_are_held(impl):
    clock = Clock()
    pool = impl.EvictionPool(4, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    free = len(pool.free_queue)
    err = caught(lambda: pool.admit("b", [4, 5, 6]))
    return record(free_blocks=free, admit_another=err)


@STAGE.check("s04.expire",
             call=("clock.t = 0; pool = EvictionPool(4, 1, min_residence=10, clock=clock); "
                   "run(pool, 'a', [1, 2, 3]); clock.t = 9.5; pool.expire(); clock.t = 10.0; pool.expire(); "
                   "len(pool.free_queue)"),
             title=L("a hold ends at exactly min_residence", "持有恰好在 min_residence 时结束"),
             hint=L("'Not evicted before T has passed': at exactly T the hold has ended, just before T it has not.",
                    "“T 过去之前不淘汰”：恰好到 T 时持有已经结束，差一点到 T 时还没有。"))
def hold_ends_at_exactly_t(impl):
    clock = Clock()
    pool = impl.EvictionPool(4, 1, min_residence=10.0, clock=clock)
    run(pool, "a", [1, 2, 3])
    clock.t = 9.5
    early = pool.expire()
    clock.t = 10.0
    on_time = pool.expire()
    return record(ended_at_9_5=early, ended_at_10=on_time, free_blocks=len(pool.free_queue))


@STAGE.check("s04.expire",
             call=L("pool = EvictionPool(8, 1, min_residence=5, clock=clock); "
                    "at clock.t = 0: run(pool, 'a', [1, 2]); at clock.t = 3: run(pool, 'b', [3, 4]); "
                    "at clock.t = 5 and again at clock.t = 8: pool.expire(), len(pool.free_queue)",
                    "pool = EvictionPool(8, 1, min_residence=5, clock=clock)；"
                    "clock.t = 0 时 run(pool, 'a', [1, 2])；clock.t = 3 时 run(pool, 'b', [3, 4])；"
                    "在 clock.t = 5 和 clock.t = 8 时各做一次：pool.expire()，len(pool.free_queue)"),
             title=L("holds end oldest first", "持有按先后顺序结束"),
             hint=L("Release every hold whose time has passed, oldest first, and stop at the first one that is still young.",
                    "从最早的开始，释放所有已到期的持有，遇到第一个还年轻的就停下。"))
def holds_end_oldest_first(impl):
    clock = Clock()
    pool = impl.EvictionPool(8, 1, min_residence=5.0, clock=clock)
    run(pool, "a", [1, 2])
    clock.t = 3.0
    run(pool, "b", [3, 4])
    clock.t = 5.0
    first = record(ended=pool.expire(), free_blocks=len(pool.free_queue))
    clock.t = 8.0
    second = record(ended=pool.expire(), free_blocks=len(pool.free_queue))
    return record(at_t5=first, at_t8=second)


@STAGE.check("s04.expire",
             call=L("clock.t = 2; pool = EvictionPool(9, 1, min_residence=3, clock=clock); run(pool, 'a', [1, 2]) and "
                    "run(pool, 'b', [3, 4]), both registered at t = 2; clock.t = 4: run(pool, 'c', [5, 6]); "
                    "for t in (4.5, 5, 6.9, 7): clock.t = t; pool.expire(), len(pool.free_queue)",
                    "clock.t = 2；pool = EvictionPool(9, 1, min_residence=3, clock=clock)；run(pool, 'a', [1, 2]) 和 "
                    "run(pool, 'b', [3, 4])，都在 t = 2 登记；clock.t = 4 时 run(pool, 'c', [5, 6])；"
                    "对 t in (4.5, 5, 6.9, 7)：clock.t = t；pool.expire()，len(pool.free_queue)"),
             title=L("holds registered at the same time end together", "同一时刻登记的持有同时结束"),
             hint=L("Keep releasing while the oldest remaining hold has ended: two holds with the same registration "
                    "time end in the same call, and the loop stops only at a hold that is still young.",
                    "只要剩下最早的那个持有已经到期，就继续释放：登记时刻相同的两个持有在同一次调用里结束，"
                    "循环只在遇到还年轻的持有时才停下。"))
def holds_registered_together_end_together(impl):
    clock = Clock(2.0)
    pool = impl.EvictionPool(9, 1, min_residence=3.0, clock=clock)
    run(pool, "a", [1, 2])
    run(pool, "b", [3, 4])
    clock.t = 4.0
    run(pool, "c", [5, 6])
    out = []
    for t in (4.5, 5.0, 6.9, 7.0):
        clock.t = t
        out.append(record(t=t, ended=pool.expire(), free_blocks=len(pool.free_queue)))
    return out
