"""A picture of a radix tree cache, live (ipywidgets) or static (matplotlib). Given code, not a TODO.

:class:`RadixView` wraps a cache. Every operation sent through the view (``insert``, ``match``,
``lock``, ``unlock``, ``evict``) runs on the cache and records a snapshot; the widget shows the
latest one and a slider replays the history. Each box is one node: its token span ``[start, end)``
in the sequence, the tokens themselves, its lock count and its last access time. Colours: locked
(orange), an unlocked leaf that eviction could take (green), an unlocked inner node (blue); a thick
red border marks what the last step touched.

Where widgets do not run (a static notebook viewer, an exported HTML, ``nbconvert``), the view's
display carries a PNG of the current tree as well, and :func:`show_tree` / :meth:`RadixView.picture`
draw one on demand. Labels, captions and titles follow the notebook's language (``tr``).

The view only reads ``cache.root`` and the nodes' ``key``, ``value``, ``children``, ``lock_ref``,
``last_access`` and ``id``, so it works with a learner's cache as long as those are right.
"""
from __future__ import annotations

import base64
import io
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from autograder.i18n import tr
from workbook.contract import ResultError, expect

Decode = Callable[[Sequence[int]], str]

COLOURS = {"root": "#5d6d7e", "locked": "#f5b041", "leaf": "#a9dfbf", "inner": "#aed6f1"}


@dataclass(frozen=True)
class NodeSnapshot:
    """One node as it was when the snapshot was taken (plain data, no links to live objects)."""

    id: int
    parent: int | None
    depth: int            # edges from the root
    start: int            # token offset where this node's edge starts
    key: tuple[int, ...]
    value: tuple[int, ...]
    lock_ref: int
    last_access: float
    leaf: bool

    @property
    def end(self) -> int:
        return self.start + len(self.key)


@dataclass(frozen=True)
class Step:
    """One recorded operation: what was done, what it returned (as text), and the tree after it."""

    label: str
    result: str
    nodes: tuple[NodeSnapshot, ...]
    touched: frozenset[int]   # ids of nodes that are new or changed since the step before
    dropped: tuple[str, ...]  # short descriptions of nodes that disappeared (evicted)


def snapshot(cache: Any, after: str | None = None) -> tuple[NodeSnapshot, ...]:
    """Every node of ``cache`` (root first, then depth first, siblings in key order).

    ``after`` is the TODO whose operation just ran: a tree that reaches a node twice (a cycle, or a
    node filed under two parents) or a node whose tokens and slots differ in number stops with a
    :class:`~workbook.contract.ResultError` naming it, instead of a walk that never ends.

    [zh]
    ``cache`` 的每个节点（先根节点，再深度优先，兄弟节点按 key 排序）。

    ``after`` 是刚刚执行了操作的那个 TODO：如果树会两次到达同一个节点（有环，或者一个节点挂在两个父节点下），
    或者某个节点的 token 数和槽位数不同，就以一个指明这个 TODO 的 :class:`~workbook.contract.ResultError`
    停下，而不是陷入永远走不完的遍历。
    """
    out: list[NodeSnapshot] = []
    seen: set[int] = set()
    stack = [(cache.root, None, 0, 0)]
    while stack:
        node, parent, depth, start = stack.pop()
        if id(node) in seen or len(node.key) != len(node.value):
            problem = ("a tree in which a node is reached twice (a cycle, or a node under two parents)",
                       "一棵有节点被走到两次的树（有环，或者一个节点挂在两个父节点下）") if id(node) in seen else \
                (f"a node with {len(node.key)} tokens but {len(node.value)} slots",
                 f"一个有 {len(node.key)} 个 token、却有 {len(node.value)} 个槽位的节点")
            if after is None:
                raise ValueError(tr(*problem))
            raise ResultError(after, *problem)
        seen.add(id(node))
        out.append(NodeSnapshot(node.id, parent, depth, start, tuple(node.key), tuple(node.value),
                                node.lock_ref, node.last_access, not node.children))
        children = sorted(node.children.values(), key=lambda c: tuple(c.key), reverse=True)
        stack.extend((c, node.id, depth + 1, start + len(node.key)) for c in children)
    return tuple(out)


def cached_length(nodes: Sequence[NodeSnapshot], tokens: Sequence[int], page_size: int = 1) -> int:
    """How many leading ``tokens`` the snapshot's tree holds (whole pages), read from the snapshot alone."""
    children: dict[int | None, list[NodeSnapshot]] = {}
    for n in nodes:
        children.setdefault(n.parent, []).append(n)
    node, pos = nodes[0] if nodes else None, 0
    while node is not None and pos < len(tokens):
        step = None
        for child in children.get(node.id, []):
            common = 0
            while common < len(child.key) and pos + common < len(tokens) and child.key[common] == tokens[pos + common]:
                common += 1
            common -= common % page_size
            if common:
                step = (child, common)
                break
        if step is None:
            break
        child, common = step
        pos += common
        node = child if common == len(child.key) else None
    return pos


def token_text(tokens: Sequence[int], decode: Decode | None = None, limit: int = 14) -> str:
    """A short label for a run of tokens: decoded text if ``decode`` is given, else the ids."""
    if decode is not None:
        text = decode(tokens).replace("\n", "⏎")
        return repr(text if len(text) <= limit else text[: limit - 1] + "…")
    shown = " ".join(map(str, tokens[:4]))
    return f"[{shown}{' …' if len(tokens) > 4 else ''}]"


def _layout(nodes: Sequence[NodeSnapshot]) -> dict[int, tuple[float, float]]:
    """Leaves side by side left to right; a parent centred over its children; one row per depth."""
    children: dict[int, list[int]] = {}
    for n in nodes:
        if n.parent is not None:
            children.setdefault(n.parent, []).append(n.id)
    pos: dict[int, tuple[float, float]] = {}
    depth = {n.id: n.depth for n in nodes}
    next_x = itertools.count()

    def place(node_id: int) -> float:
        kids = children.get(node_id, [])
        x = float(next(next_x)) if not kids else sum(place(k) for k in kids) / len(kids)
        pos[node_id] = (x, -float(depth[node_id]))
        return x

    if nodes:
        place(nodes[0].id)
    return pos


def draw_tree(nodes: Sequence[NodeSnapshot], *, decode: Decode | None = None, title: str = "",
              touched: frozenset[int] = frozenset(), ax: Any = None) -> Any:
    """Draw a snapshot with matplotlib; return the figure (a new one unless ``ax`` is given).

    [zh]
    用 matplotlib 画出一个快照；返回这张图（给了 ``ax`` 时画在它上面，否则新建一张）。
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    pos = _layout(nodes)
    width = max(1, sum(1 for n in nodes if n.leaf))
    height = max(1, max((n.depth for n in nodes), default=0) + 1)
    if ax is None:
        fig, ax = plt.subplots(figsize=(min(18, max(6.5, 1.0 + 2.2 * width)), 0.9 + 1.25 * height))
    else:
        fig = ax.figure
    by_id = {n.id: n for n in nodes}
    for n in nodes:
        if n.parent is not None:
            (x0, y0), (x1, y1) = pos[n.parent], pos[n.id]
            ax.plot([x0, x1], [y0, y1], color="#7f8c8d", lw=1, zorder=1)
    for n in nodes:
        x, y = pos[n.id]
        if n.parent is None:
            label, colour = tr("root", "根"), COLOURS["root"]
        else:
            label = (f"#{n.id}  {tr('tokens', 'token')} [{n.start}, {n.end})\n{token_text(n.key, decode)}\n"
                     f"{tr('lock', '锁')} {n.lock_ref} · t={n.last_access:g}")
            colour = COLOURS["locked"] if n.lock_ref > 0 else COLOURS["leaf"] if n.leaf else COLOURS["inner"]
        hot = n.id in touched
        ax.text(x, y, label, ha="center", va="center", fontsize=8, zorder=3,
                color="white" if n.parent is None else "black",
                bbox=dict(boxstyle="round,pad=0.35", fc=colour, ec="#c0392b" if hot else "#34495e",
                          lw=2.4 if hot else 0.8))
    pad = max(0.7, (6.5 / 2.2 - width) / 2)  # keep small trees centred in the wider figure
    ax.set_xlim(-pad, width - 1 + pad)
    ax.set_ylim(-height + 0.45, 0.45)
    ax.axis("off")
    total = sum(len(n.key) for n in nodes)
    locked = sum(len(n.key) for n in nodes if n.lock_ref > 0)
    head = f"{title}\n" if title else ""
    count = len(by_id) - 1
    summary = tr(f"{count} node{'' if count == 1 else 's'}, {total} tokens ({locked} protected by locks, "
                 f"{total - locked} evictable)",
                 f"{count} 个节点，{total} 个 token（{locked} 个受锁保护，{total - locked} 个可淘汰）")
    ax.set_title(f"{head}{summary}", fontsize=9)
    ax.legend(handles=[Patch(fc=COLOURS["locked"], label=tr("locked", "已加锁")),
                       Patch(fc=COLOURS["leaf"], label=tr("evictable leaf", "可淘汰的叶子")),
                       Patch(fc=COLOURS["inner"], label=tr("inner node", "内部节点")),
                       Patch(fc="white", ec="#c0392b", lw=2, label=tr("touched by this step", "本步改动过"))],
              loc="lower left", fontsize=7, frameon=False, ncol=4, bbox_to_anchor=(0, -0.08))
    fig.tight_layout()
    return fig


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def show_tree(cache: Any, *, decode: Decode | None = None, title: str = "") -> Any:
    """Static picture of the cache as it is now (works everywhere matplotlib does)."""
    return draw_tree(snapshot(cache), decode=decode, title=title)


class RadixView:
    """Runs operations on a cache and shows the tree after each of them.

    Invariants: ``steps[0]`` is the tree as the view found it; ``steps[i]`` is the tree after the
    ``i``-th operation sent through the view; the widget (once built) shows ``steps[slider.value]``
    and jumps to the newest step after every operation.

    [zh]
    在缓存上执行操作，并在每次操作之后显示这棵树。

    不变量：``steps[0]`` 是视图接手时的树；``steps[i]`` 是经由视图发出的第 ``i`` 个操作之后的树；控件（建好
    之后）显示 ``steps[slider.value]``，每次操作之后跳到最新的一步。
    """

    def __init__(self, cache: Any, *, decode: Decode | None = None, title: str = "radix tree",
                 first_slot: int = 0) -> None:
        self.cache = cache
        self.decode = decode
        self.title = title
        self._slots = itertools.count(first_slot)  # fresh slot ids for insert() without slots
        self.steps: list[Step] = [Step(tr("start", "开始"), "", snapshot(cache), frozenset(), ())]
        self._widget: Any = None

    # -- operations ------------------------------------------------------------------------------
    def insert(self, tokens: Sequence[int], slots: Sequence[int] | None = None) -> int:
        """``cache.insert``; without ``slots``, fresh slot ids are made up for the picture.

        [zh]
        调用 ``cache.insert``；没有给 ``slots`` 时，为画图临时编出新的槽位 id。
        """
        tokens = list(tokens)
        slots = [next(self._slots) for _ in tokens] if slots is None else list(slots)
        cached = cached_length(self.steps[-1].nodes, tokens, getattr(self.cache, "page_size", 1))
        already = self.cache.insert(tokens, slots)
        expect(isinstance(already, int) and not isinstance(already, bool) and already == cached,
               "s05.insert", f"{already!r} for {len(tokens)} tokens of which {cached} were cached before "
               "(it returns how many were cached already)",
               f"{already!r}，而这 {len(tokens)} 个 token 里插入前已缓存的是 {cached} 个（它应返回插入前已缓存的个数）")
        self._record("s05.insert", f"{tr('insert', '插入')} {self._text(tokens)}",
                     tr(f"{already} tokens were cached already", f"其中 {already} 个 token 原本已缓存"))
        return already

    def match(self, tokens: Sequence[int]) -> Any:
        """``cache.match_prefix``; returns its match (pass it to :meth:`lock`).

        [zh]
        调用 ``cache.match_prefix``；返回它的匹配结果（把它传给 :meth:`lock`）。
        """
        match = self.cache.match_prefix(list(tokens))
        slots = getattr(match, "slots", None)
        n = len(slots) if isinstance(slots, list) else "?"
        expect(isinstance(slots, list) and len(slots) <= len(tokens) and hasattr(match, "last_node"),
               "s05.match_prefix", f"a match of {n} slots for {len(tokens)} tokens",
               f"一个有 {n} 个槽位的匹配，而提示词只有 {len(tokens)} 个 token")
        self._record("s05.match_prefix", f"{tr('match', '匹配')} {self._text(tokens)}",
                     tr(f"hit {match.length} tokens, slots {match.slots}", f"命中 {match.length} 个 token，槽位 {match.slots}"))
        return match

    def lock(self, node_or_match: Any) -> int:
        node = getattr(node_or_match, "last_node", node_or_match)
        moved = self.cache.inc_lock_ref(node)
        self._record("s05.inc_lock_ref", f"{tr('lock', '加锁')} #{node.id}", tr(f"{moved} tokens became protected", f"{moved} 个 token 变为受保护"))
        return moved

    def unlock(self, node_or_match: Any) -> int:
        node = getattr(node_or_match, "last_node", node_or_match)
        moved = self.cache.dec_lock_ref(node)
        self._record("s05.dec_lock_ref", f"{tr('unlock', '解锁')} #{node.id}", tr(f"{moved} tokens became evictable", f"{moved} 个 token 变为可淘汰"))
        return moved

    def evict(self, num_tokens: int) -> list[int]:
        freed = self.cache.evict(num_tokens)
        held = sum(len(n.value) for n in self.steps[-1].nodes)
        n = len(freed) if isinstance(freed, list) else repr(freed)
        expect(isinstance(freed, list) and len(freed) <= held, "s05.evict",
               f"{n} slots from a tree that held {held}", f"{n} 个槽位，而树里一共只有 {held} 个")
        self._record("s05.evict", f"{tr('evict', '淘汰')} {num_tokens}", tr(f"freed {len(freed)} slots {freed}", f"释放了 {len(freed)} 个槽位 {freed}"))
        return freed

    def _text(self, tokens: Sequence[int]) -> str:
        return token_text(list(tokens), self.decode, limit=40)

    def _record(self, todo: str, label: str, result: str) -> None:
        before = {n.id: n for n in self.steps[-1].nodes}
        nodes = snapshot(self.cache, after=todo)
        now = {n.id for n in nodes}

        def state(n: NodeSnapshot | None) -> tuple | None:  # moving down a level is not a change
            return None if n is None else (n.key, n.value, n.lock_ref, n.last_access)

        touched = frozenset(n.id for n in nodes if n.parent is not None and state(before.get(n.id)) != state(n))
        dropped = tuple(f"#{i} {token_text(before[i].key, self.decode)}" for i in before if i not in now)
        self.steps.append(Step(label, result, nodes, touched, dropped))
        if self._widget is not None:
            slider = self._widget.children[0].children[1]
            slider.max = len(self.steps) - 1
            if slider.value == slider.max:
                self._show(slider.max)
            slider.value = slider.max

    # -- pictures ----------------------------------------------------------------------------------
    def picture(self, step: int = -1) -> Any:
        """A matplotlib figure of one recorded step (the newest by default).

        [zh]
        记录下来的某一步的 matplotlib 图（默认是最新的一步）。
        """
        s = self.steps[step]
        index = step % len(self.steps)
        return draw_tree(s.nodes, decode=self.decode, touched=s.touched,
                         title=f"{self.title} · " + tr(f"step {index}: {s.label}", f"第 {index} 步：{s.label}"))

    def caption(self, step: int = -1) -> str:
        s = self.steps[step]
        lines = [tr(f"step {step % len(self.steps)}: {s.label}", f"第 {step % len(self.steps)} 步：{s.label}")]
        if s.result:
            lines.append(f"→ {s.result}")
        if s.dropped:
            lines.append(tr("evicted: ", "已淘汰：") + ", ".join(s.dropped))
        return "\n".join(lines)

    @property
    def widget(self) -> Any:
        """The live view: picture, caption and a slider (with play button) over the history.

        [zh]
        实时视图：图、说明文字，以及一个可以在历史中拖动的滑块（带播放按钮）。
        """
        if self._widget is None:
            import ipywidgets as widgets

            last = len(self.steps) - 1
            slider = widgets.IntSlider(value=last, min=0, max=last, description=tr("step", "步骤"),
                                       continuous_update=False, layout=widgets.Layout(width="60%"))
            play = widgets.Play(value=last, min=0, max=last, interval=900, description=tr("replay", "回放"))
            widgets.jslink((play, "value"), (slider, "value"))
            slider.observe(lambda change: self._show(change["new"]), names="value")
            slider.observe(lambda change: setattr(play, "max", change["new"]), names="max")
            image = widgets.Image(format="png")
            caption = widgets.HTML()
            self._widget = widgets.VBox([widgets.HBox([play, slider]), caption, image])
            self._show(last)
        return self._widget

    def _show(self, step: int) -> None:
        import html

        _, caption, image = self._widget.children
        image.value = _png(self.picture(step))
        caption.value = f"<pre style='margin:0'>{html.escape(self.caption(step))}</pre>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        """The widget, plus a PNG of the newest step for places where widgets do not run."""
        png = _png(self.picture())
        try:
            bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude)
        except Exception:  # no ipywidgets, or no kernel to talk to: the picture alone
            bundle = {"text/plain": self.caption()}
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle["image/png"] = base64.b64encode(png).decode("ascii")
        return bundle
