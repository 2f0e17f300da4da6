"""Per-tenant cache isolation through stage 2's extra keys, and what it costs (given code, stage 8).

A tenant's salt goes into every block key it computes, so equal prompts of two tenants get
different keys and never share a block, while a tenant still hits its own blocks. Which extra keys
a tenant gets is stage 8's TODO; this module takes that function as ``extra_keys_for`` (``None``:
no isolation, one cache shared by everyone) and provides:

- :class:`TenantPool` -- stage 3's pool whose ``admit`` adds the extra keys of the tenant on whose
  behalf it is called (:meth:`TenantPool.acting_for`), so stage 6's engine, which admits prompts
  without extra keys, can serve tenants unchanged;
- :func:`make_tenant_workload` and :func:`replay` -- a seeded multi-tenant workload (prompts shared
  by every tenant, prompts private to one) and its hit rate and memory through a pool.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from autograder.i18n import tr
from workbook.block_pool import Admission, BlockPool, PoolFullError
from workbook.contract import ResultError

ExtraKeys = Sequence[tuple[str, str]] | None
#: ``extra_keys_for(tenant, request_extra_keys) -> extra keys``: stage 8's salting TODO.
ExtraKeysFor = Callable[[str, ExtraKeys], list[tuple[str, str]]]


class TenantPool(BlockPool):
    """A :class:`BlockPool` that salts every admission with the current tenant's extra keys.

    Invariants: stage 3's; every request admitted while ``tenant`` is set was keyed with
    ``extra_keys_for(tenant, its extra keys)``; with ``extra_keys_for=None`` it is stage 3's pool.
    ``tenant`` is set only inside :meth:`acting_for` (the engine's authenticated caller, never
    something a request chooses). With ``remember_keys`` the chained keys of each distinct (full
    blocks, extra keys) pair are computed once and handed out as copies: they are a pure function of
    those two, so a replay that sends the same prompts thousands of times hashes each one once.
    """

    def __init__(self, num_blocks: int, block_size: int, *, extra_keys_for: ExtraKeysFor | None = None,
                 remember_keys: bool = False, **kwargs) -> None:
        super().__init__(num_blocks, block_size, **kwargs)
        self.extra_keys_for = extra_keys_for
        self.tenant: str | None = None
        self._known_keys: dict[tuple, list[bytes]] | None = {} if remember_keys else None

    def keys_of(self, tokens: Sequence[int], extra_keys: ExtraKeys = None) -> list[bytes]:
        known = self._known_keys
        if known is None:
            return super().keys_of(tokens, extra_keys)
        full = len(tokens) // self.block_size * self.block_size  # the tail is not hashed
        memo = (tuple(tokens[:full]), tuple(extra_keys) if extra_keys else None)
        keys = known.get(memo)
        if keys is None:
            keys = known[memo] = super().keys_of(tokens, extra_keys)
        return list(keys)

    @contextmanager
    def acting_for(self, tenant: str) -> Iterator[None]:
        """Admissions inside the ``with`` block are on behalf of ``tenant``."""
        if not isinstance(tenant, str):
            raise TypeError(tr("tenant must be a str", "tenant 必须是 str"))
        previous, self.tenant = self.tenant, tenant
        try:
            yield
        finally:
            self.tenant = previous

    def admit(self, request_id: str, tokens: Sequence[int], extra_keys: ExtraKeys = None) -> Admission:
        if self.extra_keys_for is not None:
            if self.tenant is None:
                raise RuntimeError(tr("a salted pool admits only inside acting_for(tenant)",
                                      "加盐的块池只在 acting_for(tenant) 内接纳请求"))
            extra_keys = self.extra_keys_for(self.tenant, extra_keys)
            _check_extra_keys(extra_keys)
        return super().admit(request_id, tokens, extra_keys)


def _check_extra_keys(keys: object) -> None:
    """What ``extra_keys_for`` returned, checked before it keys a block: ``(kind, value)`` string pairs
    (anything else would fail deep inside stage 2's hashing, far from the TODO that made it)."""
    pairs = isinstance(keys, (list, tuple)) and all(
        isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in keys)
    if not pairs:
        raise ResultError("s08.tenant_extra_keys", f"{keys!r:.80}, not a list of (kind, value) string pairs",
                          f"{keys!r:.80}，而不是由 (kind, value) 字符串对组成的列表")


# -- a multi-tenant workload -----------------------------------------------------------------------
@dataclass(frozen=True)
class TenantRequest:
    tenant: str
    tokens: list[int]
    shared: bool  # its prompt is one that every tenant may send


def make_tenant_workload(seed: int = 0, *, num_tenants: int = 8, shared_prompts: int = 4,
                         private_prompts: int = 4, num_requests: int = 2000, prompt_len: int = 512,
                         fresh_tokens: int = 8, shared_fraction: float = 0.5,
                         vocab: int = 512) -> list[TenantRequest]:
    """Seeded requests of ``num_tenants`` tenants, uniformly at random.

    With probability ``shared_fraction`` a request sends one of ``shared_prompts`` prompts common
    to all tenants (a public system prompt, a tool schema, a popular document), otherwise one of its
    own tenant's ``private_prompts``; then ``fresh_tokens`` tokens of its own (by default fewer
    than a block: a short question, which is never cached, so only prompts compete for memory).

    [zh]
    ``num_tenants`` 个租户的请求（固定种子），租户均匀随机。

    一个请求以 ``shared_fraction`` 的概率发送所有租户共用的 ``shared_prompts`` 个提示词之一（公开的 system
    prompt、工具描述、热门文档），否则发送它自己租户的 ``private_prompts`` 之一；然后再接 ``fresh_tokens``
    个自己的 token（默认不满一块：一个短问题，永远不会被缓存，所以只有提示词在争抢显存）。
    """
    if num_tenants < 1 or shared_prompts < 0 or private_prompts < 0 or num_requests < 0:
        raise ValueError(tr("counts must be non-negative (and at least one tenant)", "数量不能为负（且至少要有一个租户）"))
    if not 0.0 <= shared_fraction <= 1.0 or (shared_prompts == 0 and shared_fraction > 0) or \
            (private_prompts == 0 and shared_fraction < 1):
        raise ValueError(tr("shared_fraction must lie in [0, 1] and have prompts to pick from",
                            "shared_fraction 必须在 [0, 1] 之间，并且要有可选的提示词"))
    rng = random.Random(f"tenants/{seed}")

    def prompt() -> list[int]:
        return [rng.randrange(vocab) for _ in range(prompt_len)]

    shared = [prompt() for _ in range(shared_prompts)]
    private = {f"tenant-{t}": [prompt() for _ in range(private_prompts)] for t in range(num_tenants)}
    requests = []
    for _ in range(num_requests):
        tenant = f"tenant-{rng.randrange(num_tenants)}"
        is_shared = rng.random() < shared_fraction
        base = rng.choice(shared) if is_shared else rng.choice(private[tenant])
        requests.append(TenantRequest(tenant, base + [rng.randrange(vocab) for _ in range(fresh_tokens)], is_shared))
    return requests


@dataclass(frozen=True)
class ReplayResult:
    """Hit rate (tokens served from the cache / prompt tokens) overall and on shared / private
    prompts, and ``distinct_blocks``: how many different block keys were committed, i.e. the blocks
    a pool needs to keep everything cached (isolation stores a shared prompt once per tenant)."""

    hit_rate: float
    shared_hit_rate: float
    private_hit_rate: float
    distinct_blocks: int


def replay(workload: Sequence[TenantRequest], *, extra_keys_for: ExtraKeysFor | None,
           num_blocks: int = 4096, block_size: int = 16) -> ReplayResult:
    """Run ``workload`` through a :class:`TenantPool` (admit, commit, release; no model) and measure.

    A small ``num_blocks`` makes the pool evict (stage 3's FIFO free queue): isolation then also
    costs hits through the duplicate copies it keeps of shared prompts.

    [zh]
    让 ``workload`` 经过一个 :class:`TenantPool`（admit、commit、release；不用模型）并测量。

    ``num_blocks`` 较小时块池会淘汰（第 3 阶段的 FIFO 空闲队列）：这时隔离还会因为给共享提示词保留多份副本而
    损失命中。
    """
    # a workload sends a few dozen prompts thousands of times: each is hashed once per tenant salt
    pool = TenantPool(num_blocks, block_size, extra_keys_for=extra_keys_for, remember_keys=True)
    hit = {True: 0, False: 0}
    total = {True: 0, False: 0}
    keys: set[bytes] = set()
    for i, req in enumerate(workload):
        rid = f"r{i}"
        with pool.acting_for(req.tenant):
            try:
                admission = pool.admit(rid, req.tokens)
            except PoolFullError as exc:
                raise ValueError(tr(f"num_blocks={num_blocks} cannot hold one request",
                                    f"num_blocks={num_blocks} 连一个请求都装不下")) from exc
        keys.update(pool.requests[rid].keys)
        pool.commit(rid)
        pool.release(rid)
        hit[req.shared] += admission.hit_tokens
        total[req.shared] += len(req.tokens)

    def rate(h: int, t: int) -> float:
        return h / t if t else 0.0

    return ReplayResult(rate(hit[True] + hit[False], total[True] + total[False]), rate(hit[True], total[True]),
                        rate(hit[False], total[False]), len(keys))
