"""Stage 5 spec and public checks: a radix tree prefix cache.

Most probes return :func:`checked`: the tree as labelled records, one per node (parents first,
siblings in key order: ``start`` in tokens, ``key``, ``slots``, ``lock_ref``, ``last_access``), the
two sizes, and whether the cache's invariants hold; so a check compares the whole shape of the tree,
its locks and access times with the reference's, and a failure names the first field that differs.
Slot ids in the fixtures are 100, 101, ... for the first sequence inserted, 200, 201, ... for the
second, and so on.

Everything a learner reads here exists in English and Chinese (``L(en, zh)``).
"""
from __future__ import annotations

import re

from autograder.checks.common import record
from autograder.core.i18n import L
from autograder.core.quiz import Question, Quiz
from autograder.core.spec import Stage, Todo


def _width(ch: str) -> int:
    return 2 if ord(ch) > 0x2E80 else 1


def _wrap(paragraph: str, first: int, rest: int) -> list[str]:
    """Break ``paragraph`` into lines of at most ``first`` (then ``rest``) display columns, at spaces or
    between Chinese characters (never inside a Latin word)."""
    lines, line, col, width = [], "", 0, first
    # a Latin word, a run of spaces, or one Chinese character with the punctuation that may not start a line
    for word in re.findall(r"[A-Za-z0-9_.,;:'()\[\]/+-]+[，。；：、）]*|\s+|[（]?.[，。；：、）]*", paragraph):
        w = sum(_width(c) for c in word)
        if word.isspace():
            if line:
                line, col = line + " ", col + 1
            continue
        if col + w > width and line.strip():
            lines.append(line.rstrip())
            line, col, width = "", 0, rest
        line, col = line + word, col + w
    if line.strip():
        lines.append(line.rstrip())
    return lines


def contract(en: str, zh: str) -> L:
    """A contract, reflowed for a code comment: the first line follows ``# TODO n (sNN.name):``, and
    the invariant starts a line of its own."""
    def flow(text: str) -> str:
        # lines of the source join into paragraphs; "Invariant:" / "不变量：" starts a new one
        text = re.sub(r"\n(?!Invariant:|不变量：)", lambda m: " ", text)
        text = re.sub(r"(?<=[\u2e80-\uffff]) (?=[\u2e80-\uffff])", "", text)
        out: list[str] = []
        for i, paragraph in enumerate(text.split("\n")):
            out += _wrap(paragraph, 60 if i == 0 else 92, 92)
        return "\n".join(out)
    return L(flow(en), flow(zh))

STAGE = Stage(
    id="s05",
    title=L("A radix tree prefix cache", "基数树前缀缓存"),
    subtitle="基数树前缀缓存",
    summary=L("a radix tree: longest match, node split, leaf eviction, lock refs, with a live tree view",
              "基数树：最长前缀匹配、节点分裂、叶子淘汰、锁引用，附实时树视图"),
    minutes=90,
    todos=[
        Todo("s05._split_node", 1, target="RadixCache._split_node", points=2,
             title=L("split an edge in two", "把一条边切成两段"),
             contract=contract(
                 "Set the variable new to a fresh node that holds the first split_len tokens of the edge\n"
                 "of child and their slots, and hang it under the old parent of child. The node child keeps\n"
                 "the remaining tokens and slots and now hangs under new. The new node copies lock_ref and\n"
                 "last_access from child.\n"
                 "Invariant: every node is filed in its parent's children dict under the first token (page)\n"
                 "of its own edge; the tree holds the same tokens, slots and sizes as before.",
                 "让变量 new 指向一个新节点：它持有 child 这条边的前 split_len 个 token 及其槽位，挂在\n"
                 "child 原来的父节点下；child 保留剩下的 token 和槽位，改挂到 new 下面。新节点从 child\n"
                 "复制 lock_ref 和 last_access。\n"
                 "不变量：每个节点都以自己这条边的第一个 token（按页时是第一页）为键，登记在父节点的\n"
                 "children 字典里；树中的 token、槽位和两个计数都与之前相同。"),
             hints=(
                 L("A split changes only the shape of the tree: the same tokens, slots and locks, now on two "
                   "edges instead of one. Whatever covered the old edge (its locks, its access time) covers both "
                   "parts.",
                   "分裂只改变树的形状：还是那些 token、槽位和锁，只是从一条边变成了两条。原来覆盖整条边的东西"
                   "（锁、访问时间）同样覆盖切开后的两段。"),
                 L("Make the upper node first (first split_len tokens and slots, the old parent, the old access "
                   "time), give it the same lock count, shorten child to the rest, then fix three links: the "
                   "parent of child, the children of the new node, and the entry in the old parent's children, "
                   "which must now point to the new node.",
                   "先建上半段的新节点（前 split_len 个 token 和槽位、原父节点、原访问时间），给它同样的锁数，"
                   "再把 child 截成剩下的部分，最后修好三处链接：child 的父节点、新节点的 children，以及原父节点 "
                   "children 里的那一项——它现在要指向新节点。"),
                 L("parent = child.parent\n"
                   "new = self._new_node(child.key[:split_len], child.value[:split_len], parent, child.last_access)\n"
                   "new.lock_ref = ___\n"
                   "child.key = ___\n"
                   "child.value = ___\n"
                   "child.parent = ___\n"
                   "new.children[self._child_key(child.key)] = child\n"
                   "parent.children[___] = new",
                   "parent = child.parent\n"
                   "new = self._new_node(child.key[:split_len], child.value[:split_len], parent, child.last_access)\n"
                   "new.lock_ref = ___\n"
                   "child.key = ___\n"
                   "child.value = ___\n"
                   "child.parent = ___\n"
                   "new.children[self._child_key(child.key)] = child\n"
                   "parent.children[___] = new"))),
        Todo("s05.match_prefix", 2, target="RadixCache.match_prefix", points=3,
             title=L("longest cached prefix, splitting at the boundary", "最长缓存前缀，并在边界处分裂"),
             contract=contract(
                 "Walk down from the root along key (the tokens, cut to whole pages). Leave the variable node\n"
                 "at the node where the longest cached prefix ends, and put the slots of the matched tokens,\n"
                 "in order, into the list slots. A match that ends inside an edge splits that edge first, so\n"
                 "the matched tokens end exactly at a node. Every node on the matched path gets the time now\n"
                 "as its last_access; other nodes keep theirs. Find each child to follow with one lookup in\n"
                 "the children dict (never a scan over all children), and compare tokens as whole numbers,\n"
                 "one by one.",
                 "从根出发沿着 key（截到整页的 token）往下走。让 node 停在最长缓存前缀结束的节点上，\n"
                 "并把这些 token 的槽位按顺序放进 slots。匹配若停在某条边的中间，先把这条边切开，使匹配\n"
                 "上的 token 恰好在一个节点处结束。匹配路径上的每个节点把 last_access 设为 now，其他\n"
                 "节点保持不变。要走的子节点用 children 查一次字典找到，不要扫描全部子节点；token 作为\n"
                 "整数逐个比较。"),
             hints=(
                 L("Each child is filed under the first token (page) of its edge, so one dictionary lookup per "
                   "level finds the only child that can continue the prompt. The match ends where no child "
                   "continues, or inside an edge at the first token that differs.",
                   "每个子节点都以它这条边的第一个 token（按页时是第一页）为键登记，所以每一层查一次字典，就能找到"
                   "唯一可能接着匹配下去的子节点。匹配停在没有子节点能接上的地方，或者停在某条边里第一个不相同的 "
                   "token 处。"),
                 L("Loop while pos < len(key): look the child up; stop if there is none. Count how many of its "
                   "tokens match from pos (the given _common_len does it, in whole pages). If fewer than its edge, "
                   "split it there and continue with the upper part. Stamp it, add its slots, move node and pos "
                   "down.",
                   "当 pos < len(key) 时循环：查出子节点，没有就停。数出它的边从 pos 起有多少个 token 匹配（已给的 "
                   "_common_len 会按整页算好）。如果比边短，就在那里切开，接着用上半段。给它打上时间戳、加上它的"
                   "槽位，把 node 和 pos 往下移。"),
                 L("pos = 0\n"
                   "while pos < len(key):\n"
                   "    child = node.children.get(self._child_key(key, pos))\n"
                   "    if child is None:\n"
                   "        break\n"
                   "    matched = self._common_len(child.key, key, pos)\n"
                   "    if ___:\n"
                   "        # the match ends inside this edge\n"
                   "        child = self._split_node(child, matched)\n"
                   "    child.last_access = now\n"
                   "    slots.extend(___)\n"
                   "    node = child\n"
                   "    pos += ___",
                   "pos = 0\n"
                   "while pos < len(key):\n"
                   "    child = node.children.get(self._child_key(key, pos))\n"
                   "    if child is None:\n"
                   "        break\n"
                   "    matched = self._common_len(child.key, key, pos)\n"
                   "    if ___:\n"
                   "        # 匹配停在这条边的中间\n"
                   "        child = self._split_node(child, matched)\n"
                   "    child.last_access = now\n"
                   "    slots.extend(___)\n"
                   "    node = child\n"
                   "    pos += ___"))),
        Todo("s05.insert", 3, target="RadixCache.insert", points=3,
             title=L("insert the uncached remainder", "插入尚未缓存的剩余部分"),
             contract=contract(
                 "Walk down like a match: follow the child filed under the next token (page), split an edge\n"
                 "where the paths diverge inside it, and give every node you pass the time now as its\n"
                 "last_access. Where no child continues, hang one new leaf under the current node with the\n"
                 "rest of key and value, count its tokens as evictable, and stop. Leave the variable pos at\n"
                 "the number of leading tokens that were cached before this call: the code below returns\n"
                 "it. For those tokens the tree keeps its own slots.",
                 "像匹配一样往下走：沿着以下一个 token（按页时是下一页）为键的子节点前进，两条路径在某条边\n"
                 "中间分叉时把这条边切开，经过的每个节点都把 last_access 设为 now。走到没有子节点能接上\n"
                 "的地方，就在 node 下挂一个新叶子节点，放 key 和 value 剩下的部分，把它的 token 计入\n"
                 "可淘汰的数量，然后停下。让 pos 等于这次调用之前开头已缓存的 token 数：下面的代码会返回它。\n"
                 "这些 token 仍用树里原有的槽位。"),
             hints=(
                 L("Insert is a match that does not stop where the cached part ends: it adds what is missing as "
                   "one new leaf. The tree keeps its own KV for the part it already had.",
                   "insert 就是一次不在缓存部分末尾停下的匹配：缺的部分作为一个新叶子节点补上。已有的部分，树继续"
                   "用自己原来的 KV。"),
                 L("Use the loop of match_prefix, without collecting slots. When the lookup finds no child, make "
                   "the leaf from key[pos:] and value[pos:], file it in node.children, add its length to "
                   "evictable_size and break: pos is then the cached length.",
                   "沿用 match_prefix 的循环，只是不收集槽位。查不到子节点时，用 key[pos:] 和 value[pos:] 建叶子，"
                   "登记进 node.children，把它的长度加到 evictable_size 上，然后 break：此时 pos 正好是已缓存的"
                   "长度。"),
                 L("while pos < len(key):\n"
                   "    child = node.children.get(self._child_key(key, pos))\n"
                   "    if child is None:\n"
                   "        # the rest of the key becomes one new leaf\n"
                   "        leaf = self._new_node(___, ___, node, now)\n"
                   "        node.children[self._child_key(key, pos)] = leaf\n"
                   "        self.evictable_size += ___\n"
                   "        break\n"
                   "    matched = self._common_len(child.key, key, pos)\n"
                   "    if ___:\n"
                   "        child = self._split_node(child, matched)\n"
                   "    child.last_access = now\n"
                   "    node = child\n"
                   "    pos += matched",
                   "while pos < len(key):\n"
                   "    child = node.children.get(self._child_key(key, pos))\n"
                   "    if child is None:\n"
                   "        # key 剩下的部分成为一个新的叶子节点\n"
                   "        leaf = self._new_node(___, ___, node, now)\n"
                   "        node.children[self._child_key(key, pos)] = leaf\n"
                   "        self.evictable_size += ___\n"
                   "        break\n"
                   "    matched = self._common_len(child.key, key, pos)\n"
                   "    if ___:\n"
                   "        child = self._split_node(child, matched)\n"
                   "    child.last_access = now\n"
                   "    node = child\n"
                   "    pos += matched"))),
        Todo("s05.inc_lock_ref", 4, target="RadixCache.inc_lock_ref", points=2,
             title=L("lock a path for a request in flight", "为运行中的请求锁住一条路径"),
             contract=contract(
                 "Add one lock to every node from node up to the root (the root itself is never locked).\n"
                 "A node whose lock_ref goes from 0 to 1 moves its tokens from evictable_size to\n"
                 "protected_size; moved is the total that moved.\n"
                 "Invariant: a node holds at least as many locks as its children together, so every node on\n"
                 "the path has one lock more after the call, also the ones that were locked already.",
                 "给从 node 到根（不含根，根从不加锁）路径上的每个节点各加一把锁。lock_ref 从 0 变成 1\n"
                 "的节点，把它的 token 数从 evictable_size 挪到 protected_size；moved 是挪动的总数。\n"
                 "不变量：一个节点的锁数不少于它所有子节点的锁数之和，所以调用之后路径上每个节点都多一把锁，\n"
                 "原本已经加了锁的节点也一样。"),
             hints=(
                 L("A request reads the KV of its whole path, so its lock must hold every ancestor too. Two "
                   "requests on the same path mean two locks on each node of it.",
                   "请求要读它整条路径上的 KV，所以它的锁也必须锁住每个祖先节点。两个请求走同一条路径，路径上"
                   "每个节点就有两把锁。"),
                 L("Walk up with node = node.parent until you reach the root. On each node: if it was unlocked, "
                   "move its token count between the two sizes; then add the lock. Do not stop at a node that is "
                   "locked already: its ancestors need this request's lock as well.",
                   "用 node = node.parent 往上走，直到根。对每个节点：如果原来没锁，就把它的 token 数在两个计数"
                   "之间挪动；然后加锁。遇到已经加锁的节点也不要停：它的祖先同样需要这个请求的锁。"),
                 L("while node is not self.root:\n"
                   "    if ___:\n"
                   "        self.evictable_size -= len(node.key)\n"
                   "        self.protected_size += len(node.key)\n"
                   "        moved += len(node.key)\n"
                   "    node.lock_ref += 1\n"
                   "    node = ___",
                   "while node is not self.root:\n"
                   "    if ___:\n"
                   "        self.evictable_size -= len(node.key)\n"
                   "        self.protected_size += len(node.key)\n"
                   "        moved += len(node.key)\n"
                   "    node.lock_ref += 1\n"
                   "    node = ___"))),
        Todo("s05.dec_lock_ref", 5, target="RadixCache.dec_lock_ref", points=2,
             title=L("release a lock", "释放一把锁"),
             contract=contract(
                 "Undo one earlier lock on the same node: take one lock off every node from node up to the\n"
                 "root. A node whose lock_ref reaches 0 moves its tokens back from protected_size to\n"
                 "evictable_size; moved is the total that moved. A node that another request still holds\n"
                 "stays protected, and its ancestors still lose this request's lock: walk the whole path.",
                 "撤销之前在同一个节点上加的一把锁：从 node 到根路径上的每个节点各减一把锁。lock_ref\n"
                 "降到 0 的节点，把它的 token 数从 protected_size 挪回 evictable_size；moved 是挪动的\n"
                 "总数。仍被其他请求持有的节点继续受保护，但它的祖先仍要去掉这个请求的锁：整条路径都要走完。"),
             hints=(
                 L("Locks are counted per request. Releasing one request must leave the locks of the other "
                   "requests on the same path exactly as they were.",
                   "锁是按请求计数的。释放一个请求的锁，同一路径上其他请求的锁必须原样保留。"),
                 L("The mirror image of inc_lock_ref: walk up to the root, take one lock off each node, and move "
                   "tokens back only for nodes whose count just became 0. Keep walking when a node stays locked.",
                   "与 inc_lock_ref 正好相反：往上走到根，每个节点减一把锁，只有锁数刚好变成 0 的节点才把 token "
                   "挪回去。某个节点仍有锁时也要继续往上走。"),
                 L("while node is not self.root:\n"
                   "    node.lock_ref -= 1\n"
                   "    if ___:\n"
                   "        self.protected_size -= ___\n"
                   "        self.evictable_size += ___\n"
                   "        moved += ___\n"
                   "    node = node.parent",
                   "while node is not self.root:\n"
                   "    node.lock_ref -= 1\n"
                   "    if ___:\n"
                   "        self.protected_size -= ___\n"
                   "        self.evictable_size += ___\n"
                   "        moved += ___\n"
                   "    node = node.parent"))),
        Todo("s05.evict", 6, target="RadixCache.evict", points=3,
             title=L("evict least recently used leaves", "淘汰最近最少使用的叶子节点"),
             contract=contract(
                 "Drop unlocked leaves, least recently used first (on equal times the smaller node id first),\n"
                 "until freed holds at least num_tokens slots or no unlocked leaf is left. A dropped node\n"
                 "goes whole: it leaves its parent's children, its parent becomes None, its slots go to\n"
                 "the end of freed and its tokens come off evictable_size. A parent that loses its last\n"
                 "child becomes a candidate too, unless it is locked or the root.",
                 "淘汰未加锁的叶子节点，最近最少使用的先走（访问时间相同时节点 id 小的先走），直到 freed\n"
                 "里至少有 num_tokens 个槽位，或者没有未加锁的叶子可淘汰。节点整个淘汰：它从父节点的\n"
                 "children 里移除，parent 设为 None，它的槽位追加到 freed 末尾，它的 token 从\n"
                 "evictable_size 里扣掉。父节点失去最后一个子节点后也成为候选，除非它加了锁或者是根。"),
             hints=(
                 L("Only a leaf can go (an inner node's KV is the prefix of its children's), and never a locked "
                   "one. Dropping a leaf can turn its parent into a leaf, so one call may eat a whole cold branch "
                   "from the bottom up.",
                   "只有叶子节点能被淘汰（内部节点的 KV 是它子节点的前缀），而且加了锁的绝不能淘汰。淘汰一个叶子"
                   "可能让它的父节点变成叶子，所以一次调用可能从下往上吃掉一整条冷分支。"),
                 L("Collect the unlocked leaves into a heap ordered by (last_access, id). Pop, detach, free; if "
                   "the parent just became a leaf, is unlocked and is not the root, push it. Loop while fewer "
                   "than num_tokens slots were freed and the heap is not empty.",
                   "把未加锁的叶子节点放进按 (last_access, id) 排序的堆。弹出、摘除、释放；如果父节点刚变成叶子、"
                   "没有加锁、又不是根，就把它压入堆。释放的槽位不足 num_tokens 且堆不空时继续循环。"),
                 L("heap = [(leaf.last_access, leaf.id, leaf) for leaf in self._leaves() if ___]\n"
                   "heapq.heapify(heap)\n"
                   "while ___ and heap:\n"
                   "    _, _, leaf = heapq.heappop(heap)\n"
                   "    parent = leaf.parent\n"
                   "    del parent.children[self._child_key(leaf.key)]\n"
                   "    # detached: locking it later is an error\n"
                   "    leaf.parent = None\n"
                   "    freed.extend(leaf.value)\n"
                   "    self.evictable_size -= len(leaf.key)\n"
                   "    # a parent that just lost its last child may be a candidate now\n"
                   "    if ___:\n"
                   "        heapq.heappush(heap, (parent.last_access, parent.id, parent))",
                   "heap = [(leaf.last_access, leaf.id, leaf) for leaf in self._leaves() if ___]\n"
                   "heapq.heapify(heap)\n"
                   "while ___ and heap:\n"
                   "    _, _, leaf = heapq.heappop(heap)\n"
                   "    parent = leaf.parent\n"
                   "    del parent.children[self._child_key(leaf.key)]\n"
                   "    # 已摘除：之后再给它加锁就是错误\n"
                   "    leaf.parent = None\n"
                   "    freed.extend(leaf.value)\n"
                   "    self.evictable_size -= len(leaf.key)\n"
                   "    # 刚失去最后一个子节点的父节点，现在可能也成了候选\n"
                   "    if ___:\n"
                   "        heapq.heappush(heap, (parent.last_access, parent.id, parent))"))),
    ],
    quiz=Quiz(number=7, points=2, questions=(
        Question("q1", L("The tree holds [1 2 3 4 5 6] as one edge. Then match_prefix([1, 2, 3, 9]) and "
                         "match_prefix([1, 9]) run. How many nodes does the tree have now, not counting the root?",
                         "树里有一条边 [1 2 3 4 5 6]。接着依次执行 match_prefix([1, 2, 3, 9]) 和 "
                         "match_prefix([1, 9])。现在树里有几个节点（不算根）？"),
                 L("A match that ends inside an edge cuts it there; a match that ends at a node cuts nothing.",
                   "匹配停在边的中间就在那里切开；停在节点上就什么也不切。"),
                 choices=(L("2 nodes", "2 个"), L("3 nodes", "3 个"), L("4 nodes", "4 个"), L("6 nodes", "6 个"))),
        Question("q2", L("Requests A and B both locked the same leaf, whose path has two nodes. A finishes and "
                         "unlocks. What holds now?",
                         "请求 A 和 B 都锁了同一个叶子节点，它的路径上有两个节点。A 结束并解锁。现在是什么状态？"),
                 L("Each request adds one lock to every node of its path, and takes only its own lock away.",
                   "每个请求给路径上每个节点各加一把锁，解锁时也只拿走自己那一把。"),
                 choices=(L("both nodes are evictable again", "两个节点都重新变成可淘汰"),
                          L("both nodes keep one lock and stay protected", "两个节点都还剩一把锁，仍受保护"),
                          L("the leaf is evictable, its parent is still protected",
                            "叶子可淘汰，它的父节点仍受保护"))),
        Question("q3", L("page_size is 16 and the tree holds a 64-token prompt. A new prompt shares its first 40 "
                         "tokens with it and then differs. How many of its tokens hit?",
                         "page_size 为 16，树里有一条 64 个 token 的提示词。一条新提示词与它的前 40 个 token 相同，"
                         "之后就不同了。新提示词命中多少个 token？"),
                 L("With pages, KV is shared a whole page at a time.", "按页缓存时，KV 以整页为单位共享。"),
                 decimals=0),
        Question("q4", L("Why does match_prefix split the edge where a match ends?",
                         "match_prefix 为什么要在匹配结束的地方把边切开？"),
                 L("Think of what the request locks next, and what that lock must not cover.",
                   "想一想请求接下来要锁住什么，以及这把锁不应该覆盖什么。"),
                 choices=(L("so that locking last_node protects exactly the matched tokens",
                            "这样给 last_node 加锁时，恰好保护匹配上的那些 token"),
                          L("to free the unmatched tokens of the edge at once", "为了立刻释放边上没匹配上的 token"),
                          L("because a dictionary lookup needs edges of one token", "因为字典查找要求每条边只有一个 token"))),
        Question("q5", L("evict(1) is called and the least recently used unlocked leaf holds 64 tokens. How many "
                         "slots come back?",
                         "调用 evict(1)，最近最少使用的未加锁叶子节点有 64 个 token。会返回多少个槽位？"),
                 L("Eviction works on nodes, not on single tokens.", "淘汰的单位是节点，不是单个 token。"),
                 decimals=0),
        Question("q6", L("A node has 10,000 children. What does a correct match_prefix pay to find the child to "
                         "follow?",
                         "某个节点有 10,000 个子节点。正确的 match_prefix 要付出多少代价才能找到要走的那个子节点？"),
                 L("Look at what the children dict is keyed by.", "看看 children 字典是用什么做键的。"),
                 choices=(L("10,000 comparisons: every child is checked", "10,000 次比较：每个子节点都要看一遍"),
                          L("about 14 comparisons: a binary search", "大约 14 次比较：二分查找"),
                          L("one dictionary lookup, whatever the number of children",
                            "一次字典查找，不管有多少个子节点"))),
    )),
    time_limit_s=10,
    memory_limit_mb=512,
)


# -- probe helpers (the hidden checks use them too) -------------------------------------------------
def slots_for(i: int, tokens) -> list[int]:
    """Slot ids of the ``i``-th sequence inserted by a fixture: 100*(i+1), 100*(i+1)+1, ..."""
    return [100 * (i + 1) + j for j in range(len(tokens))]


def make(impl, *seqs, page_size: int = 1):
    """A cache (default logical clock) with ``seqs`` inserted in order."""
    cache = impl.RadixCache(page_size)
    for i, tokens in enumerate(seqs):
        cache.insert(tokens, slots_for(i, tokens))
    return cache


def sizes(cache) -> dict:
    return record(evictable=cache.evictable_size, protected=cache.protected_size)


def node_at(cache, tokens):
    """The node whose edge ends exactly after ``tokens`` (walks the tree; changes nothing)."""
    node, pos = cache.root, 0
    while pos < len(tokens):
        node = node.children[cache._child_key(tuple(tokens), pos)]
        pos += len(node.key)
    if pos != len(tokens):
        raise KeyError(f"no node ends after {len(tokens)} tokens")
    return node


def _order(k) -> tuple:
    # child keys are ints (page size 1) or tuples of ints (pages): both sort as tuples
    return k if isinstance(k, tuple) else (k,)


def tree(cache, limit: int = 2_000) -> list[dict]:
    """Every node as a record, parents first, siblings in key order, found by walking ``children``
    (so a broken parent link shows up in :func:`invariants`, not as a crash here)."""
    out: list[dict] = []
    stack = [(cache.root, 0)]
    while stack:
        node, start = stack.pop()
        if node is not cache.root:
            out.append(record(start=start, key=list(node.key), slots=list(node.value), lock_ref=node.lock_ref,
                              last_access=node.last_access))
            start += len(node.key)
            if len(out) > limit:
                raise RuntimeError("the tree has a cycle (or far more nodes than this check made)")
        stack.extend((node.children[k], start) for k in sorted(node.children, key=_order, reverse=True))
    return out


def invariants(cache) -> str:
    """``"ok"``, or the first invariant the cache's own check finds broken."""
    try:
        cache.check_invariants()
    except AssertionError as exc:
        return f"broken: {exc}"
    return "ok"


def checked(cache) -> dict:
    """The whole tree, both sizes, and whether the invariants hold."""
    return record(tree=tree(cache), **sizes(cache), invariants=invariants(cache))


def big_tokens(*offsets: int) -> list[int]:
    """Token ids of a real vocabulary (above 150,000), computed at run time: each call makes new int
    objects, so two equal ids are equal but not the same object (``is`` tells them apart, ``==`` does not)."""
    base = int("151000")
    return [base + o for o in offsets]


class WalkCounter(dict):
    """A ``children`` dict that counts how often it is walked (iterated, or its keys, values or items
    listed); a lookup (``get``, ``in``, ``[]``) is not a walk."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()

    def keys(self):
        self.walks += 1
        return super().keys()

    def values(self):
        self.walks += 1
        return super().values()

    def items(self):
        self.walks += 1
        return super().items()


def wide_cache(impl, fanout: int, system=(7, 7, 7)):
    """A shared prefix ``system`` with ``fanout`` two-token children below it, built node by node (no
    TODO code runs); the root's and the prefix node's children dicts count their walks."""
    cache = impl.RadixCache()
    inner = cache._new_node(tuple(system), tuple(range(len(system))), cache.root, 0)
    cache.root.children = WalkCounter({cache._child_key(inner.key): inner})
    inner.children = WalkCounter()
    for i in range(fanout):
        node = cache._new_node((10 + i, 3), (10 + 2 * i, 11 + 2 * i), inner, 0)
        dict.__setitem__(inner.children, cache._child_key(node.key), node)
    cache.evictable_size = len(system) + 2 * fanout
    return cache


def walks(cache) -> int:
    """How often the root's and the shared prefix node's children were walked, and reset the counts."""
    inner = next(iter(dict.values(cache.root.children)))
    n = cache.root.children.walks + inner.children.walks
    cache.root.children.walks = inner.children.walks = 0
    return n


# -- TODO 1: _split_node ----------------------------------------------------------------------------
@STAGE.check("s05._split_node",
             call=L("insert([1, 2, 3, 4]); new = _split_node(<node [1 2 3 4]>, 2); new.key, new.value, the tree",
                    "insert([1, 2, 3, 4])；new = _split_node(<节点 [1 2 3 4]>, 2)；new.key、new.value、整棵树"),
             title=L("split in the middle of an edge", "在一条边的中间切开"),
             hint=L("The new node takes the first split_len tokens and their slots; the old node keeps the rest, "
                    "below it.",
                    "新节点拿走前 split_len 个 token 及其槽位；旧节点保留剩下的部分，挂在新节点下面。"))
def split_in_the_middle(impl):
    cache = make(impl, [1, 2, 3, 4])
    new = cache._split_node(node_at(cache, [1, 2, 3, 4]), 2)
    return record(new_key=list(new.key), new_slots=list(new.value), cache=checked(cache))


@STAGE.check("s05._split_node",
             call=L("insert([1, 2, 3]); lock <node [1 2 3]>; _split_node(it, 1); the tree; unlock it; the tree",
                    "insert([1, 2, 3])；给 <节点 [1 2 3]> 加锁；_split_node(它, 1)；整棵树；给它解锁；整棵树"),
             title=L("a split keeps the locks", "分裂后锁还在"),
             hint=L("The new node copies the lock count of the node it splits: the same locks still cover its "
                    "tokens.",
                    "新节点要复制被切节点的锁数：这些 token 仍受原来那些锁的保护。"))
def split_keeps_locks(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache._split_node(leaf, 1)
    during = checked(cache)
    cache.dec_lock_ref(leaf)
    return record(locked=during, unlocked=checked(cache))


@STAGE.check("s05._split_node",
             call=L("insert([1, 2, 3]) at t=1; insert([9]) at t=2; _split_node(<node [1 2 3]>, 2); the tree",
                    "t=1 时 insert([1, 2, 3])；t=2 时 insert([9])；_split_node(<节点 [1 2 3]>, 2)；整棵树"),
             specificity=1,
             title=L("a split keeps the access time", "分裂后访问时间不变"),
             hint=L("The new node copies the last access time of the node it splits (it was last used when that "
                    "node was), not the current time.",
                    "新节点复制被切节点的最近访问时间（它最后一次被用到就是那个节点被用到的时候），而不是当前时间。"))
def split_keeps_access_time(impl):
    cache = make(impl, [1, 2, 3], [9])
    cache._split_node(node_at(cache, [1, 2, 3]), 2)
    return checked(cache)


@STAGE.check("s05._split_node",
             call=L("insert([5, 6, 7, 8]); _split_node(<node>, 1); _split_node(<node [6 7 8]>, 1); "
                    "match_prefix([5, 6, 7, 8]).slots; the tree",
                    "insert([5, 6, 7, 8])；_split_node(<节点>, 1)；_split_node(<节点 [6 7 8]>, 1)；"
                    "match_prefix([5, 6, 7, 8]).slots；整棵树"),
             specificity=2,
             title=L("two splits in a row, then a match", "连续切两次，再做一次匹配"),
             hint=L("A split fixes three links: the old parent's children entry now points to the new node, the "
                    "old node is filed in the new node's children under its own first token, and the old node's "
                    "parent is the new node. A match must still find every token, and each node must name its "
                    "real parent.",
                    "分裂要修好三处链接：原父节点 children 里的那一项改为指向新节点；旧节点以它自己的第一个 token 为键"
                    "登记到新节点的 children 里；旧节点的 parent 改为新节点。之后的匹配必须仍能找到每个 token，"
                    "每个节点的 parent 也必须是它真正的父节点。"))
def split_twice_then_match(impl):
    cache = make(impl, [5, 6, 7, 8])
    leaf = node_at(cache, [5, 6, 7, 8])
    cache._split_node(leaf, 1)
    cache._split_node(leaf, 1)
    return record(slots=cache.match_prefix([5, 6, 7, 8]).slots, cache=checked(cache))


@STAGE.check("s05._split_node",
             call=L("RadixCache(page_size=2): insert([7, 7, 7, 8, 9, 9]); new = _split_node(<node>, 2); new.key; "
                    "match_prefix([7, 7, 7, 8, 9, 9]).slots; the tree",
                    "RadixCache(page_size=2)：insert([7, 7, 7, 8, 9, 9])；new = _split_node(<节点>, 2)；new.key；"
                    "match_prefix([7, 7, 7, 8, 9, 9]).slots；整棵树"),
             title=L("with pages, both parts are filed under their first page", "按页时，两段都以各自的第一页为键登记"),
             hint=L("With pages, a node is filed under the first page of its edge (a tuple), not its first token: "
                    "file both parts with self._child_key.",
                    "按页时，节点以它这条边的第一页（一个元组）为键登记，而不是第一个 token：两段都用 "
                    "self._child_key 登记。"))
def split_on_a_page_boundary(impl):
    cache = make(impl, [7, 7, 7, 8, 9, 9], page_size=2)
    new = cache._split_node(node_at(cache, [7, 7, 7, 8, 9, 9]), 2)
    return record(new_key=list(new.key), slots=cache.match_prefix([7, 7, 7, 8, 9, 9]).slots, cache=checked(cache))


# -- TODO 2: match_prefix ---------------------------------------------------------------------------
@STAGE.check("s05.match_prefix",
             call="insert([1, 2, 3, 4]); insert([1, 2, 5]); m = match_prefix([1, 2, 5, 9]); m.length, m.slots, "
                  "path_tokens(m.last_node)",
             title=L("the longest cached prefix and its slots", "最长缓存前缀及其槽位"),
             hint=L("At each node follow the child whose edge starts with the next token, as long as its tokens "
                    "match; collect the slots on the way.",
                    "在每个节点，沿着边以下一个 token 开头的子节点走，只要 token 还匹配就继续；沿途收集槽位。"))
def longest_prefix_and_slots(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    m = cache.match_prefix([1, 2, 5, 9])
    return record(length=m.length, slots=m.slots, last_node_path=list(cache.path_tokens(m.last_node)))


@STAGE.check("s05.match_prefix",
             call=L("insert([1, 2, 3, 4]); m = match_prefix([1, 2, 3, 9]); m.slots, m.last_node.key, the tree; "
                    "the same match again: its slots",
                    "insert([1, 2, 3, 4])；m = match_prefix([1, 2, 3, 9])；m.slots、m.last_node.key、整棵树；"
                    "再做一次同样的匹配：它的 slots"),
             title=L("a match that ends inside an edge splits it", "停在边中间的匹配会把边切开"),
             hint=L("When the match ends inside an edge, split it there (self._split_node) and go on with the node "
                    "it returns, the upper part: its slots are the matched ones, and last_node is that node.",
                    "匹配停在边的中间时，就在那里切开（self._split_node），接着用它返回的节点——切出来的上半段："
                    "匹配上的槽位是它的槽位，last_node 就是这个节点。"))
def splits_inside_an_edge(impl):
    cache = make(impl, [1, 2, 3, 4])
    m = cache.match_prefix([1, 2, 3, 9])
    shown = record(slots=m.slots, last_node_key=list(m.last_node.key), cache=checked(cache))
    return record(**shown, again=cache.match_prefix([1, 2, 3, 9]).slots, tree_after_again=tree(cache))


@STAGE.check("s05.match_prefix",
             call=L("insert([1, 2]) (t=1); insert([1, 2, 3]) (t=2); insert([7]) (t=3); match_prefix([1, 2, 3]) (t=4); "
                    "the tree",
                    "insert([1, 2]) (t=1)；insert([1, 2, 3]) (t=2)；insert([7]) (t=3)；match_prefix([1, 2, 3]) (t=4)；"
                    "整棵树"),
             specificity=1,
             title=L("the whole matched path gets the new time", "整条匹配路径都记下新时间"),
             hint=L("Set last_access to now on every node of the matched path, not only on the last one.",
                    "匹配路径上的每个节点都要把 last_access 设为 now，不能只设最后一个。"))
def stamps_the_whole_path(impl):
    cache = make(impl, [1, 2], [1, 2, 3], [7])
    cache.match_prefix([1, 2, 3])
    return checked(cache)


@STAGE.check("s05.match_prefix",
             call=L("RadixCache(page_size=2): insert([1, 2, 3, 4, 5, 6]); match_prefix([1, 2, 3, 9]).slots, "
                    "match_prefix([1]).length, the tree",
                    "RadixCache(page_size=2)：insert([1, 2, 3, 4, 5, 6])；match_prefix([1, 2, 3, 9]).slots、"
                    "match_prefix([1]).length、整棵树"),
             title=L("with pages, only whole pages match", "按页时只有整页才算匹配"),
             hint=L("Only whole pages match: look children up by self._child_key(key, pos) and count with "
                    "self._common_len, which rounds down to whole pages.",
                    "只有整页才算匹配：用 self._child_key(key, pos) 查子节点，用 self._common_len 计数，它会向下"
                    "取整到整页。"))
def whole_pages_only(impl):
    cache = make(impl, [1, 2, 3, 4, 5, 6], page_size=2)
    return record(slots=cache.match_prefix([1, 2, 3, 9]).slots, length_of_1=cache.match_prefix([1]).length,
                  cache=checked(cache))


@STAGE.check("s05.match_prefix", call=L("insert([1, 2]); m = match_prefix([3, 1, 2]); m.length, m.slots, m.last_node is root, the tree",
                                        "insert([1, 2])；m = match_prefix([3, 1, 2])；m.length、m.slots、"
                                        "m.last_node is root、整棵树"),
             title=L("no child starts with the first token", "没有子节点以第一个 token 开头"),
             hint=L("When no child starts with the first token, nothing matches and last_node is the root.",
                    "没有子节点以第一个 token 开头时，什么也匹配不上，last_node 就是根。"))
def no_match_returns_root(impl):
    cache = make(impl, [1, 2])
    m = cache.match_prefix([3, 1, 2])
    return record(length=m.length, slots=m.slots, last_node_is_root=m.last_node is cache.root, cache=checked(cache))


@STAGE.check("s05.match_prefix",
             call=L("insert([1, 2, 3]); insert([12, 5]); match_prefix([1, 23, 4]).slots, match_prefix([12, 3]).slots, "
                    "the tree",
                    "insert([1, 2, 3])；insert([12, 5])；match_prefix([1, 23, 4]).slots、match_prefix([12, 3]).slots、"
                    "整棵树"),
             title=L("tokens are whole numbers, not digits", "token 是整数，不是数字字符"),
             hint=L("Compare tokens as numbers, one by one: [1, 2] is not a prefix of [1, 23, ...] or of [12, ...], "
                    "although their digits are.",
                    "把 token 当作数逐个比较：[1, 2] 不是 [1, 23, ...] 或 [12, ...] 的前缀，尽管它们的数字字符是。"))
def token_boundaries(impl):
    cache = make(impl, [1, 2, 3], [12, 5])
    return record(match_1_23_4=cache.match_prefix([1, 23, 4]).slots, match_12_3=cache.match_prefix([12, 3]).slots,
                  cache=checked(cache))


@STAGE.check("s05.match_prefix",
             call=L("insert(a) with a = three token ids above 151,000 and a 9; match_prefix(b) with b equal to a "
                    "up to its last token but built anew at run time; m.length, m.slots, the tree",
                    "insert(a)，a 是三个大于 151,000 的 token id 加一个 9；match_prefix(b)，b 在运行时重新构造，"
                    "除最后一个 token 外与 a 相等；m.length、m.slots、整棵树"),
             title=L("equal token ids that are different objects", "相等但不是同一个对象的 token id"),
             hint=L("Compare tokens by value (==, or the given self._common_len), never by identity (is): two equal "
                    "ids above 256 built at run time are different int objects.",
                    "按值比较 token（用 ==，或者直接用已给的 self._common_len），绝不能按身份比较（is）：运行时构造的"
                    "两个相等的、大于 256 的 id 是两个不同的 int 对象。"))
def equal_ids_are_not_identical(impl):
    cache = make(impl, [*big_tokens(643, 644), 9, *big_tokens(645)])
    m = cache.match_prefix([*big_tokens(643, 644), 9, *big_tokens(646)])
    return record(length=m.length, slots=m.slots, cache=checked(cache))


@STAGE.check("s05.match_prefix",
             call=L("[7, 7, 7] with 1,000 children below it (built by hand; the children dicts count how often "
                    "they are walked); match_prefix([7, 7, 7, 500, 3, 9]); m.length, m.slots, walks",
                    "[7, 7, 7] 下面挂 1,000 个子节点（手工构造；children 字典会统计自己被遍历的次数）；"
                    "match_prefix([7, 7, 7, 500, 3, 9])；m.length、m.slots、遍历次数"),
             title=L("one lookup per level, never a walk over the children", "每层查一次字典，从不遍历子节点"),
             hint=L("Find the child to follow with one lookup in children (get, in or []), keyed by "
                    "self._child_key(key, pos); never walk over children (a loop over it, its keys, values or items): "
                    "a match must not slow down as a node gets more children.",
                    "用 children 查一次字典（get、in 或 []）找到要走的子节点，键是 self._child_key(key, pos)；"
                    "绝不能遍历 children（对它本身、它的 keys、values 或 items 做循环）：子节点再多，匹配也不应变慢。"))
def one_lookup_per_level(impl):
    cache = wide_cache(impl, 1_000)
    m = cache.match_prefix([7, 7, 7, 500, 3, 9])
    return record(length=m.length, slots=m.slots, walks=walks(cache))


# -- TODO 3: insert ---------------------------------------------------------------------------------
@STAGE.check("s05.insert",
             call=L("[insert(s, slots) for s in ([1, 2, 3], [1, 2, 3, 4], [1, 2], [5])]; the tree",
                    "[insert(s, slots) for s in ([1, 2, 3], [1, 2, 3, 4], [1, 2], [5])]；整棵树"),
             title=L("returns how much was cached already", "返回原本已缓存的长度"),
             hint=L("Return how many leading tokens were cached before this insert; for them keep the tree's own "
                    "slots.",
                    "返回这次插入之前开头已缓存的 token 数；这些 token 继续用树里原有的槽位。"))
def returns_tokens_already_cached(impl):
    cache = impl.RadixCache()
    seqs = ([1, 2, 3], [1, 2, 3, 4], [1, 2], [5])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert", call=L("insert([1, 2, 3, 4]); insert([1, 2, 8, 9]); the tree",
                                 "insert([1, 2, 3, 4])；insert([1, 2, 8, 9])；整棵树"),
             specificity=1,
             title=L("paths that diverge inside an edge", "两条路径在边的中间分叉"),
             hint=L("Where the paths diverge inside an edge, split it and hang the new leaf under the split node.",
                    "两条路径在边的中间分叉时，先把边切开，再把新叶子挂在切出来的节点下面。"))
def splits_where_paths_diverge(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 8, 9])
    return checked(cache)


@STAGE.check("s05.insert", call=L("insert([4, 4]); insert([4, 4, 4, 4]) (t=2); the tree, evictable_size",
                                 "insert([4, 4])；insert([4, 4, 4, 4]) (t=2)；整棵树、evictable_size"),
             specificity=2,
             title=L("new tokens count as evictable; the path gets the new time", "新 token 计为可淘汰；路径记下新时间"),
             hint=L("Add the new leaf's tokens to self.evictable_size, and give every node you pass the time now.",
                    "把新叶子的 token 数加到 self.evictable_size 上，并给经过的每个节点记下当前时间 now。"))
def counts_evictable_and_stamps(impl):
    cache = make(impl, [4, 4], [4, 4, 4, 4])
    return checked(cache)


@STAGE.check("s05.insert",
             call=L("RadixCache(page_size=2): insert([1, 2, 3]), insert([1, 2, 5, 6, 7]), insert([1, 2, 5, 8]); the tree",
                    "RadixCache(page_size=2)：insert([1, 2, 3])、insert([1, 2, 5, 6, 7])、insert([1, 2, 5, 8])；整棵树"),
             title=L("with pages, only whole pages go in", "按页时只插入整页"),
             hint=L("Only whole pages go in, and paths diverge at page boundaries (self._common_len rounds down).",
                    "只插入整页，路径也只在页边界处分叉（self._common_len 会向下取整）。"))
def insert_whole_pages_only(impl):
    cache = impl.RadixCache(2)
    seqs = ([1, 2, 3], [1, 2, 5, 6, 7], [1, 2, 5, 8])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert",
             call=L("[insert(s, slots) for s in ([1, 2, 3], [1, 23, 4], [12, 3], [1, 2, 34])]; the tree",
                    "[insert(s, slots) for s in ([1, 2, 3], [1, 23, 4], [12, 3], [1, 2, 34])]；整棵树"),
             title=L("tokens are whole numbers, not digits", "token 是整数，不是数字字符"),
             hint=L("Compare tokens as numbers, one by one (the given self._common_len does): [1, 23, 4] shares only "
                    "its first token with [1, 2, 3], and [12, 3] shares none.",
                    "把 token 当作数逐个比较（已给的 self._common_len 就是这样做的）：[1, 23, 4] 与 [1, 2, 3] 只共享第一个 "
                    "token，[12, 3] 一个也不共享。"))
def insert_token_boundaries(impl):
    cache = impl.RadixCache()
    seqs = ([1, 2, 3], [1, 23, 4], [12, 3], [1, 2, 34])
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert",
             call=L("insert(a), then insert(b) and insert(c): token ids above 151,000 built anew at run time "
                    "for each call, b sharing a's first two tokens, c equal to a; what each returned, the tree",
                    "先 insert(a)，再 insert(b)、insert(c)：每次调用都在运行时重新构造大于 151,000 的 token id，"
                    "b 与 a 的前两个 token 相同，c 与 a 相等；每次的返回值、整棵树"),
             title=L("equal token ids that are different objects", "相等但不是同一个对象的 token id"),
             hint=L("Compare tokens by value (==, or the given self._common_len), never by identity (is): two equal "
                    "ids above 256 built at run time are different int objects.",
                    "按值比较 token（用 ==，或者直接用已给的 self._common_len），绝不能按身份比较（is）：运行时构造的"
                    "两个相等的、大于 256 的 id 是两个不同的 int 对象。"))
def insert_equal_ids_are_not_identical(impl):
    cache = impl.RadixCache()
    seqs = (big_tokens(1, 2, 3, 4), big_tokens(1, 2, 8), big_tokens(1, 2, 3, 4))
    returned = [cache.insert(s, slots_for(i, s)) for i, s in enumerate(seqs)]
    return record(returned=returned, cache=checked(cache))


@STAGE.check("s05.insert",
             call=L("[7, 7, 7] with 1,000 children below it (built by hand; the children dicts count how often "
                    "they are walked); insert([7, 7, 7, 2000, 5]); what it returned, walks",
                    "[7, 7, 7] 下面挂 1,000 个子节点（手工构造；children 字典会统计自己被遍历的次数）；"
                    "insert([7, 7, 7, 2000, 5])；返回值、遍历次数"),
             title=L("one lookup per level, never a walk over the children", "每层查一次字典，从不遍历子节点"),
             hint=L("Find the child to follow with one lookup in children (get, in or []); never walk over children "
                    "(a loop over it, its keys, values or items): a miss would walk them all, and an insert must not "
                    "slow down as a node gets more children.",
                    "用 children 查一次字典（get、in 或 []）找到要走的子节点；绝不能遍历 children（对它本身、它的 "
                    "keys、values 或 items 做循环）：查不到时会把所有子节点都走一遍，子节点再多，插入也不应变慢。"))
def insert_one_lookup_per_level(impl):
    cache = wide_cache(impl, 1_000)
    returned = cache.insert([7, 7, 7, 2000, 5], slots_for(9, [7, 7, 7, 2000, 5]))
    return record(returned=returned, walks=walks(cache), **sizes(cache))


@STAGE.check("s05.insert",
             call=L("insert([4, 5]); lock <node [4 5]>; insert([4, 5, 6, 6]); insert([4, 9]); the tree; evict(100)",
                    "insert([4, 5])；给 <节点 [4 5]> 加锁；insert([4, 5, 6, 6])；insert([4, 9])；整棵树；evict(100)"),
             title=L("a new leaf below a locked path is unlocked", "挂在已加锁路径下的新叶子没有锁"),
             hint=L("A new leaf starts with no lock, whatever its parent holds: its tokens are evictable, even below "
                    "a locked path.",
                    "新叶子一开始没有锁，不管它的父节点持有几把：即使挂在已加锁的路径下，它的 token 也是可淘汰的。"))
def leaf_below_a_locked_path(impl):
    cache = make(impl, [4, 5])
    cache.inc_lock_ref(node_at(cache, [4, 5]))
    cache.insert([4, 5, 6, 6], slots_for(1, [4, 5, 6, 6]))
    cache.insert([4, 9], slots_for(2, [4, 9]))
    return record(cache=checked(cache), evicted=cache.evict(100))


# -- TODO 4: inc_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.inc_lock_ref",
             call=L("insert([1, 2, 3, 4]); insert([1, 2, 5]); inc_lock_ref(<node [5]>); the tree",
                    "insert([1, 2, 3, 4])；insert([1, 2, 5])；inc_lock_ref(<节点 [5]>)；整棵树"),
             title=L("a lock covers the whole path", "一把锁覆盖整条路径"),
             hint=L("Lock every node from node up to the root, and move their tokens from evictable to protected.",
                    "从 node 到根的每个节点都要加锁，并把它们的 token 从可淘汰挪到受保护。"))
def locks_the_whole_path(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    moved = cache.inc_lock_ref(node_at(cache, [1, 2, 5]))
    return record(moved=moved, cache=checked(cache))


@STAGE.check("s05.inc_lock_ref", call=L("insert([1, 2, 3]); lock <node [1 2 3]> twice; moved each time, the tree",
                                        "insert([1, 2, 3])；给 <节点 [1 2 3]> 加两次锁；每次的 moved、整棵树"),
             title=L("a second lock moves nothing", "第二把锁不挪动 token"),
             hint=L("Tokens move to protected only when a node's lock_ref goes from 0 to 1.",
                    "只有节点的 lock_ref 从 0 变成 1 时，token 才挪到受保护。"))
def second_lock_moves_nothing(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    return record(first=cache.inc_lock_ref(leaf), second=cache.inc_lock_ref(leaf), cache=checked(cache))


@STAGE.check("s05.inc_lock_ref",
             call=L("insert([1, 2, 3]); insert([1, 2, 4]); lock <node [1 2]>, then <node [3]>, then <node [4]>",
                    "insert([1, 2, 3])；insert([1, 2, 4])；依次给 <节点 [1 2]>、<节点 [3]>、<节点 [4]> 加锁"),
             title=L("locks below a locked node", "在已加锁节点的下面再加锁"),
             hint=L("A lock on a child adds one more lock to each ancestor, even to one that is locked already; "
                    "only newly locked nodes move tokens.",
                    "给子节点加锁，也要给每个祖先再加一把锁，即使祖先已经加过锁；只有新加锁的节点才挪动 token。"))
def nested_locks(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    moved = [cache.inc_lock_ref(node_at(cache, t)) for t in ([1, 2], [1, 2, 3], [1, 2, 4])]
    return record(moved=moved, cache=checked(cache))


@STAGE.check("s05.inc_lock_ref",
             call=L("insert([1, 2, 3, 4]); insert([1, 2, 5]); insert([1, 6]); two requests lock <node [3 4]>; the tree",
                    "insert([1, 2, 3, 4])；insert([1, 2, 5])；insert([1, 6])；两个请求都给 <节点 [3 4]> 加锁；整棵树"),
             title=L("two requests on the same deep node", "两个请求锁同一个深层节点"),
             hint=L("The second request's lock goes all the way up too: do not stop at a node that is locked "
                    "already, or its ancestors end up with fewer locks than their children.",
                    "第二个请求的锁同样要一直加到根：遇到已经加锁的节点不能停，否则它的祖先的锁数会比子节点还少。"))
def two_requests_lock_a_deep_node(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5], [1, 6])
    deep = node_at(cache, [1, 2, 3, 4])
    first = cache.inc_lock_ref(deep)
    return record(first=first, second=cache.inc_lock_ref(deep), cache=checked(cache))


@STAGE.check("s05.inc_lock_ref",
             call=L("insert([1, 2]); m = match_prefix([8, 8]) (nothing cached: m.last_node is the root); "
                    "inc_lock_ref(m.last_node); moved, root.lock_ref, the tree",
                    "insert([1, 2])；m = match_prefix([8, 8])（什么都没缓存：m.last_node 就是根）；"
                    "inc_lock_ref(m.last_node)；moved、root.lock_ref、整棵树"),
             specificity=1,
             title=L("a request that hit nothing locks the root: nothing is locked", "什么都没命中的请求锁根：什么也不锁"),
             hint=L("Walk up while node is not self.root: the root itself is never locked, so locking it (a request "
                    "that hit nothing) moves nothing and leaves every lock as it was.",
                    "只在 node 不是 self.root 时往上走：根本身从不加锁，所以给根加锁（一个什么都没命中的请求）什么也不挪，"
                    "所有锁都保持原样。"))
def lock_after_a_miss(impl):
    cache = make(impl, [1, 2])
    m = cache.match_prefix([8, 8])
    moved = cache.inc_lock_ref(m.last_node)
    return record(moved=moved, root_lock_ref=cache.root.lock_ref, cache=checked(cache))


# -- TODO 5: dec_lock_ref ---------------------------------------------------------------------------
@STAGE.check("s05.dec_lock_ref",
             call=L("insert([1, 2, 3, 4]); insert([1, 2, 5]); n = <node [5]>; inc_lock_ref(n); dec_lock_ref(n); the tree",
                    "insert([1, 2, 3, 4])；insert([1, 2, 5])；n = <节点 [5]>；inc_lock_ref(n)；dec_lock_ref(n)；整棵树"),
             title=L("an unlock undoes a lock", "解锁撤销加锁"),
             hint=L("Take one lock off every node from node up to the root; a node back at 0 locks is evictable "
                    "again.",
                    "从 node 到根的每个节点各减一把锁；锁数回到 0 的节点重新变成可淘汰。"))
def unlock_restores(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    leaf = node_at(cache, [1, 2, 5])
    cache.inc_lock_ref(leaf)
    return record(moved=cache.dec_lock_ref(leaf), cache=checked(cache))


@STAGE.check("s05.dec_lock_ref", call=L("insert([1, 2, 3]); lock <node> twice; unlock it twice; moved each time",
                                        "insert([1, 2, 3])；给 <节点> 加两次锁；再解锁两次；每次的 moved"),
             title=L("two locks need two unlocks", "两把锁要解两次"),
             hint=L("Tokens move back only when lock_ref reaches 0 after the decrement.",
                    "只有减完之后 lock_ref 变成 0，token 才挪回去。"))
def two_locks_need_two_unlocks(impl):
    cache = make(impl, [1, 2, 3])
    leaf = node_at(cache, [1, 2, 3])
    cache.inc_lock_ref(leaf)
    cache.inc_lock_ref(leaf)
    first = cache.dec_lock_ref(leaf)
    middle = checked(cache)
    return record(first=first, after_first=middle, second=cache.dec_lock_ref(leaf), after_second=checked(cache))


@STAGE.check("s05.dec_lock_ref",
             call=L("insert([1, 2, 3]); insert([1, 2, 4]); lock <node [3]> and <node [4]>; unlock <node [3]>",
                    "insert([1, 2, 3])；insert([1, 2, 4])；给 <节点 [3]> 和 <节点 [4]> 加锁；给 <节点 [3]> 解锁"),
             title=L("a shared parent stays locked", "共享的父节点仍然锁着"),
             hint=L("The shared parent [1 2] stays locked while the other request still holds it.",
                    "另一个请求还持有共享的父节点 [1 2]，所以它必须仍然锁着。"))
def shared_parent_stays_locked(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    a, b = node_at(cache, [1, 2, 3]), node_at(cache, [1, 2, 4])
    cache.inc_lock_ref(a)
    cache.inc_lock_ref(b)
    return record(moved=cache.dec_lock_ref(a), cache=checked(cache))


@STAGE.check("s05.dec_lock_ref",
             call=L("insert([1, 2, 3, 4]); insert([1, 2, 5]); two requests lock <node [3 4]>; "
                    "the first unlocks; the tree; the second unlocks; the tree; evict(100)",
                    "insert([1, 2, 3, 4])；insert([1, 2, 5])；两个请求都给 <节点 [3 4]> 加锁；"
                    "第一个请求解锁；整棵树；第二个请求解锁；整棵树；evict(100)"),
             title=L("two requests on the same deep node", "两个请求锁同一个深层节点"),
             hint=L("Walk the whole path on every unlock, even above a node that stays locked: after the second "
                    "request is done, no lock may be left anywhere.",
                    "每次解锁都要走完整条路径，即使下面的节点仍然锁着也要继续往上：第二个请求结束后，任何地方都不能"
                    "再留下锁。"))
def two_requests_share_a_deep_node(impl):
    cache = make(impl, [1, 2, 3, 4], [1, 2, 5])
    deep = node_at(cache, [1, 2, 3, 4])
    cache.inc_lock_ref(deep)
    cache.inc_lock_ref(deep)
    first = cache.dec_lock_ref(deep)
    after_first = checked(cache)
    second = cache.dec_lock_ref(deep)
    return record(first=first, after_first=after_first, second=second, after_second=checked(cache),
                  evicted=cache.evict(100))


# -- TODO 6: evict ----------------------------------------------------------------------------------
@STAGE.check("s05.evict",
             call=L("insert([1, 1]) (t=1); insert([2, 2]) (t=2); insert([3, 3]) (t=3); match_prefix([1, 1]) (t=4); "
                    "evict(1); evict(3); the tree",
                    "insert([1, 1]) (t=1)；insert([2, 2]) (t=2)；insert([3, 3]) (t=3)；match_prefix([1, 1]) (t=4)；"
                    "evict(1)；evict(3)；整棵树"),
             specificity=2,
             title=L("least recently used first", "最近最少使用的先走"),
             hint=L("Pop leaves by (last_access, id): the least recently used first; a whole node goes at once.",
                    "按 (last_access, id) 弹出叶子：最近最少使用的先走；一个节点整个淘汰。"))
def least_recently_used_first(impl):
    cache = make(impl, [1, 1], [2, 2], [3, 3])
    cache.match_prefix([1, 1])
    first = cache.evict(1)
    return record(first=first, then=cache.evict(3), cache=checked(cache))


@STAGE.check("s05.evict",
             call=L("insert([1, 2, 3]) (t=1); insert([1, 2, 4]) (t=2); insert([5]) (t=3); evict(4); the tree",
                    "insert([1, 2, 3]) (t=1)；insert([1, 2, 4]) (t=2)；insert([5]) (t=3)；evict(4)；整棵树"),
             title=L("a parent left without children is a candidate", "没有子节点的父节点也是候选"),
             hint=L("Only leaves are candidates at first (an inner node's KV is its children's prefix). When a "
                    "parent loses its last child it becomes a leaf: push it on the heap then (never the root).",
                    "一开始只有叶子是候选（内部节点的 KV 是它子节点的前缀）。父节点失去最后一个子节点就成了叶子："
                    "这时再把它压入堆（根除外）。"))
def parent_becomes_a_candidate(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [5])
    return record(freed=cache.evict(4), cache=checked(cache))


@STAGE.check("s05.evict",
             call=L("insert([1, 2, 3]); insert([1, 2, 4]); inc_lock_ref(<node [3]>); evict(100); the tree",
                    "insert([1, 2, 3])；insert([1, 2, 4])；inc_lock_ref(<节点 [3]>)；evict(100)；整棵树"),
             title=L("locked leaves stay", "加锁的叶子留下"),
             hint=L("Only leaves with lock_ref == 0 are candidates; locked nodes stay.",
                    "只有 lock_ref == 0 的叶子才是候选；加了锁的节点留下。"))
def locked_nodes_stay(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4])
    cache.inc_lock_ref(node_at(cache, [1, 2, 3]))
    return record(freed=cache.evict(100), cache=checked(cache))


@STAGE.check("s05.evict",
             call=L("insert([1, 2, 3]); insert([1, 2, 4]); insert([5]); inc_lock_ref(<node [1 2]>); evict(100); "
                    "the tree; dec_lock_ref(<node [1 2]>); evict(100)",
                    "insert([1, 2, 3])；insert([1, 2, 4])；insert([5])；inc_lock_ref(<节点 [1 2]>)；evict(100)；"
                    "整棵树；dec_lock_ref(<节点 [1 2]>)；evict(100)"),
             title=L("a locked inner node loses its last child", "加锁的内部节点失去最后一个子节点"),
             hint=L("A parent that becomes a leaf is a candidate only if it is unlocked: a request still holds a "
                    "locked one, even with no children left.",
                    "变成叶子的父节点只有在没加锁时才是候选：加了锁的父节点即使没有子节点了，也仍有请求在用它。"))
def locked_inner_node_loses_its_last_child(impl):
    cache = make(impl, [1, 2, 3], [1, 2, 4], [5])
    inner = node_at(cache, [1, 2])
    cache.inc_lock_ref(inner)
    first = cache.evict(100)
    during = checked(cache)
    cache.dec_lock_ref(inner)
    return record(freed=first, cache=during, then=cache.evict(100))


@STAGE.check("s05.evict", call=L("insert([1, 2]); insert([3, 4]); evict(0), evict(1), the tree",
                                 "insert([1, 2])；insert([3, 4])；evict(0)、evict(1)、整棵树"),
             specificity=1,
             title=L("stop as soon as enough is freed", "释放够了就停"),
             hint=L("Stop as soon as len(freed) >= num_tokens: evict(0) frees nothing; take evictable_size down.",
                    "一旦 len(freed) >= num_tokens 就停：evict(0) 什么也不释放；记得扣减 evictable_size。"))
def stops_when_enough(impl):
    cache = make(impl, [1, 2], [3, 4])
    return record(zero=cache.evict(0), one=cache.evict(1), cache=checked(cache))


@STAGE.check("s05.evict",
             call=L("cache = RadixCache(clock=a clock that reads 2.0 every time); insert([7, 1]); insert([7, 2]); "
                    "insert([3]); insert([4, 4]); evict(3); evict(2); the tree",
                    "cache = RadixCache(clock=一个每次都读出 2.0 的时钟)；insert([7, 1])；insert([7, 2])；"
                    "insert([3])；insert([4, 4])；evict(3)；evict(2)；整棵树"),
             title=L("equal access times: the older node goes first", "访问时间相同时：先建的节点先走"),
             hint=L("Access times can be equal (a coarse clock): order candidates by (last_access, id), so that a "
                    "tie goes to the older node and two nodes are never compared with each other.",
                    "访问时间可能相同（时钟精度不够时）：按 (last_access, id) 给候选排序，这样平局时先建的节点先走，"
                    "也永远不会拿两个节点本身去比较。"))
def equal_access_times(impl):
    cache = impl.RadixCache(1, clock=lambda: 2.0)
    for i, tokens in enumerate(([7, 1], [7, 2], [3], [4, 4])):
        cache.insert(tokens, slots_for(i, tokens))
    first = cache.evict(3)
    return record(first=first, then=cache.evict(2), cache=checked(cache))


@STAGE.check("s05.evict",
             call=L("insert([5, 5]); insert([6]); insert([8, 8, 8]); n = <node [5 5]>; sorted(evict(100)); "
                    "n.parent is None; inc_lock_ref(n); insert([5, 5, 7]); match_prefix([5, 5, 7]).slots; the tree",
                    "insert([5, 5])；insert([6])；insert([8, 8, 8])；n = <节点 [5 5]>；sorted(evict(100))；"
                    "n.parent is None；inc_lock_ref(n)；insert([5, 5, 7])；match_prefix([5, 5, 7]).slots；整棵树"),
             specificity=3,
             title=L("an evicted node leaves the tree for good", "被淘汰的节点彻底离开这棵树"),
             hint=L("Detach an evicted node completely: delete it from its parent's children and set its parent to "
                    "None, so that a stale reference to it cannot be locked later, and a later insert builds new "
                    "nodes with the new slots.",
                    "被淘汰的节点要彻底摘除：从父节点的 children 里删掉，并把它的 parent 设为 None，这样之后拿着指向它的"
                    "过期引用也无法再给它加锁，之后的插入会用新的槽位建新节点。"))
def evicted_nodes_leave_the_tree(impl):
    cache = make(impl, [5, 5], [6], [8, 8, 8])
    gone = node_at(cache, [5, 5])
    freed = sorted(cache.evict(100))
    detached = gone.parent is None
    try:
        cache.inc_lock_ref(gone)
        relock = "locked"
    except ValueError:
        relock = "ValueError"
    again = cache.insert([5, 5, 7], slots_for(3, [5, 5, 7]))
    return record(freed=freed, parent_is_none=detached, lock_after_eviction=relock, insert_again=again,
                  slots=cache.match_prefix([5, 5, 7]).slots, cache=checked(cache))
