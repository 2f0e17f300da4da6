"""Unit and property tests of stage 3's reference module (block pool and block tables).

The property test drives the pool with random admit/commit/release sequences next to a brute-force
model that knows nothing of hashes: it names a block's content by the whole token prefix up to the
end of that block (plus the request's extra keys), and keeps the free list as a plain Python list.
After every step the pool must agree with the model and satisfy its own invariants; and every hit
must point at a block whose *written* KV is exactly the prefix the request asked for.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from solutions.s02_block_hash import chain_keys, normalize_extra_keys
from solutions.s03_block_pool import (
    Admission,
    Block,
    BlockPool,
    FreeQueue,
    PoolFullError,
    SimpleFreeQueue,
)

ROOT = Path(__file__).resolve().parents[2]


def snapshot(pool: BlockPool) -> tuple:
    """Everything observable about a pool's state, for 'nothing changed' assertions."""
    return (
        [(b.block_id, b.ref_count, b.key) for b in pool.blocks],
        [b.block_id for b in pool.free_queue],
        {k: b.block_id for k, b in pool.cached.items()},
        {rid: ([b.block_id for b in s.blocks], s.hit_blocks, s.committed) for rid, s in pool.requests.items()},
    )


# -- Block, queue -----------------------------------------------------------------------------------
def test_s03_block_defaults_and_identity():
    a, b = Block(0), Block(0)
    assert (a.ref_count, a.key, a.prev_free, a.next_free) == (0, None, None, None)
    assert a != b and len({a, b}) == 2


def test_s03_simple_free_queue_is_fifo_and_o1_remove():
    q = SimpleFreeQueue()
    blocks = [Block(i) for i in range(4)]
    for b in blocks:
        q.append(b)
    q.remove(blocks[1])
    assert isinstance(q, FreeQueue) and len(q) == 3 and blocks[1] not in q
    assert [q.popleft().block_id for _ in range(3)] == [0, 2, 3]
    with pytest.raises(IndexError):
        q.popleft()


def test_s03_simple_free_queue_refuses_double_free_and_unknown_remove():
    q = SimpleFreeQueue()
    b = Block(5)
    q.append(b)
    with pytest.raises(ValueError):
        q.append(b)
    with pytest.raises(ValueError):
        q.remove(Block(6))
    assert len(q) == 1


# -- BlockPool: construction and admission ----------------------------------------------------------
@pytest.mark.parametrize("args", [(0, 4), (4, 0), (4, -1), (2.0, 4), (True, 4)])
def test_s03_pool_rejects_bad_sizes(args):
    with pytest.raises(ValueError):
        BlockPool(*args)


def test_s03_pool_rejects_a_bad_root_seed():
    with pytest.raises(ValueError):
        BlockPool(4, 2, root_seed=b"")
    other = BlockPool(4, 2, root_seed=b"deployment-B")
    assert other.keys_of([1, 2]) != BlockPool(4, 2).keys_of([1, 2])


def test_s03_pool_refuses_a_non_empty_free_queue():
    q = SimpleFreeQueue()
    q.append(Block(0))
    with pytest.raises(ValueError):
        BlockPool(4, 2, free_queue=q)


def test_s03_admit_fresh_pool_allocates_in_order():
    pool = BlockPool(8, 4)
    adm = pool.admit("a", list(range(10)))
    assert adm == Admission("a", [0, 1, 2], 0, 0)
    assert pool.block_table("a") == [0, 1, 2]
    assert [b.ref_count for b in pool.blocks] == [1, 1, 1, 0, 0, 0, 0, 0]
    assert pool.num_free == 5 and pool.num_in_use == 3
    pool.check_invariants()


def test_s03_lookup_caps_hits_so_one_token_is_computed():
    pool = BlockPool(8, 4)
    prompt = list(range(8))
    pool.admit("a", prompt)
    pool.commit("a")
    keys = chain_keys(prompt, 4)
    assert len(pool.lookup(keys, 8)) == 1  # block-aligned and fully cached: recompute the last block
    assert len(pool.lookup(keys, 9)) == 2
    assert pool.lookup(keys, 1) == []


def test_s03_admit_hits_after_commit_share_physical_blocks():
    pool = BlockPool(8, 4)
    pool.admit("a", list(range(10)))
    pool.commit("a")
    adm = pool.admit("b", list(range(8)) + [42, 43])
    assert adm.hit_blocks == 2 and adm.hit_tokens == 8
    assert adm.block_table[:2] == [0, 1] and adm.block_table[2] not in (0, 1, 2)
    assert [pool.blocks[i].ref_count for i in (0, 1, 2)] == [2, 2, 1]
    pool.check_invariants()


def test_s03_admit_fully_cached_aligned_prompt_recomputes_last_block():
    pool = BlockPool(8, 4)
    pool.admit("a", list(range(8)))
    pool.commit("a")
    adm = pool.admit("b", list(range(8)))
    assert adm.hit_blocks == 1 and adm.hit_tokens == 4 and len(adm.block_table) == 2
    pool.commit("b")  # the recomputed duplicate does not replace the cached block
    assert pool.cached[chain_keys(range(8), 4)[1]].block_id == 1
    assert pool.blocks[adm.block_table[1]].key is None
    pool.check_invariants()


def test_s03_admit_no_hit_before_commit():
    pool = BlockPool(8, 4)
    pool.admit("a", list(range(9)))
    adm = pool.admit("b", list(range(9)))  # a's KV is not written yet: it must not be a hit
    assert adm.hit_blocks == 0
    assert pool.cached == {}


def test_s03_admit_pool_full_changes_nothing():
    pool = BlockPool(4, 4)
    pool.admit("a", list(range(9)))
    before = snapshot(pool)
    with pytest.raises(PoolFullError):
        pool.admit("b", list(range(100, 109)))
    assert snapshot(pool) == before


def test_s03_admit_capacity_counts_revived_free_hits():
    # 4 blocks; "a" commits 3 blocks and leaves; all 4 are free, 3 of them cached.
    pool = BlockPool(4, 4)
    prompt = list(range(12))
    pool.admit("a", prompt + [99])
    pool.commit("a")
    pool.release("a")
    assert pool.num_free == 4
    # "b" hits 3 free cached blocks and needs 2 fresh ones: 4 free - 3 revived = 1 < 2.
    before = snapshot(pool)
    with pytest.raises(PoolFullError):
        pool.admit("b", prompt + list(range(50, 55)))
    assert snapshot(pool) == before
    # needing exactly 1 fresh block fits
    adm = pool.admit("c", prompt + [7])
    assert adm.hit_blocks == 3 and pool.num_free == 0
    pool.check_invariants()


def test_s03_admit_validates_before_changing_anything():
    pool = BlockPool(4, 2)
    pool.admit("a", [1, 2, 3])
    before = snapshot(pool)
    for rid, tokens, exc in [("a", [1], ValueError), ("b", [], ValueError), ("b", [1, 2, -3], ValueError),
                             ("b", [1, "x"], TypeError), (7, [1], TypeError)]:
        with pytest.raises(exc):
            pool.admit(rid, tokens)  # type: ignore[arg-type]
        assert snapshot(pool) == before


def test_s03_admit_takes_the_keys_a_lookup_computed():
    tokens = list(range(11))
    plain, given_keys = BlockPool(8, 4), BlockPool(8, 4)
    for pool in (plain, given_keys):
        pool.admit("a", tokens)
        pool.commit("a")
    keys = given_keys.keys_of(tokens)
    assert len(given_keys.lookup(keys, len(tokens))) == 2  # a scheduler looks the prompt up first...
    adm = given_keys.admit("b", tokens, keys=keys)  # ... and admits it without hashing it again
    assert adm == plain.admit("b", tokens)
    keys.clear()  # the pool keeps its own copy: commit registers the right keys
    for pool in (plain, given_keys):
        pool.commit("b")
        pool.check_invariants()
    assert snapshot(given_keys) == snapshot(plain)
    assert given_keys.requests["b"].keys == chain_keys(tokens, 4)


def test_s03_admit_checks_given_keys_before_changing_anything():
    pool = BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    before = snapshot(pool)
    keys = pool.keys_of([1, 2, 3, 4, 5])
    for bad, exc in [(keys[:1], ValueError), (keys + keys[:1], ValueError), ([keys[0], "k"], TypeError),
                     ([keys[0], None], TypeError), (b"".join(keys), TypeError)]:
        with pytest.raises(exc):
            pool.admit("b", [1, 2, 3, 4, 5], keys=bad)
        assert snapshot(pool) == before
    with pytest.raises(ValueError):  # the tail is validated even when the keys are given
        pool.admit("b", [1, 2, 3, 4, -5], keys=keys)
    assert snapshot(pool) == before


def test_s03_admit_extra_keys_separate_tenants():
    pool = BlockPool(8, 2)
    pool.admit("a", [1, 2, 3, 4, 5], [("salt", "t1")])
    pool.commit("a")
    assert pool.admit("b", [1, 2, 3, 4, 5], [("salt", "t2")]).hit_blocks == 0
    assert pool.admit("c", [1, 2, 3, 4, 5], [("salt", "t1")]).hit_blocks == 2


# -- commit / release -----------------------------------------------------------------------------
def test_s03_commit_registers_full_blocks_only_once():
    pool = BlockPool(8, 4)
    pool.admit("a", list(range(10)))
    pool.commit("a")
    assert len(pool.cached) == 2 and pool.blocks[2].key is None  # the partial tail stays unkeyed
    with pytest.raises(ValueError):
        pool.commit("a")
    with pytest.raises(KeyError):
        pool.commit("nope")


def test_s03_commit_first_writer_wins_for_duplicate_content():
    pool = BlockPool(8, 2)
    pool.admit("a", [1, 2, 3])
    pool.admit("b", [1, 2, 3])
    pool.commit("b")
    pool.commit("a")
    key = chain_keys([1, 2], 2)[0]
    assert pool.cached[key].block_id == pool.block_table("b")[0]
    assert pool.blocks[pool.block_table("a")[0]].key is None
    pool.check_invariants()


def test_s03_release_keeps_blocks_cached_until_reused():
    pool = BlockPool(3, 2)
    pool.admit("a", [1, 2, 3, 4, 5])
    pool.commit("a")
    pool.release("a")
    assert pool.num_free == 3 and len(pool.cached) == 2
    assert pool.admit("b", [1, 2, 3, 4, 9]).hit_blocks == 2
    pool.release("b")
    # "c" needs all 3 blocks: every cached block is reused, and none of the old keys hits any more
    pool.admit("c", [7, 7, 7, 7, 7])
    assert pool.cached == {} and all(b.key is None for b in pool.blocks)
    pool.release("c")
    assert pool.admit("d", [1, 2, 3, 4, 5]).hit_blocks == 0
    pool.check_invariants()


def test_s03_revive_path_hits_again_after_the_reviver_leaves():
    """A committed and released; B revives A's blocks, commits, is released; C still hits them all.
    The pool is large enough that no freed block is reused: this is the revive path on its own."""
    pool = BlockPool(16, 4)
    system = list(range(8))
    pool.admit("A", system + [1, 2, 3])
    pool.commit("A")
    pool.release("A")
    assert pool.admit("B", system + [4, 5, 6]).hit_blocks == 2
    assert pool.num_free == 16 - 3
    pool.commit("B")
    pool.release("B")
    c = pool.admit("C", system + [7, 8])
    assert c.hit_blocks == 2 and c.block_table[:2] == [0, 1]
    assert [pool.blocks[i].ref_count for i in (0, 1)] == [1, 1]
    pool.check_invariants()


def test_s03_allocate_drops_only_its_own_key():
    pool = BlockPool(2, 2)
    pool.admit("a", [1, 2])
    pool.admit("b", [3, 4])
    for rid in ("a", "b"):
        pool.commit(rid)
        pool.release(rid)
    block = pool.allocate_block()
    assert block.block_id == 0 and block.key is None and block.ref_count == 1
    assert pool.lookup(pool.keys_of([1, 2, 9]), 3) == []  # the overwritten block no longer hits
    assert [b.block_id for b in pool.lookup(pool.keys_of([3, 4, 9]), 3)] == [1]  # the other one still does
    assert list(pool.cached.values()) == [pool.blocks[1]]


def test_s03_quiz_answers_follow_from_the_pool():
    """The quiz's numbers are what this pool does, not numbers written down by hand."""
    from solutions.s03_block_pool import quiz

    answers = quiz()
    pool = BlockPool(200, 16)
    prompt = list(range(1000))
    pool.admit("a", prompt[:512] + [7])
    pool.commit("a")
    adm = pool.admit("q1", prompt)
    assert len(adm.block_table) - adm.hit_blocks == answers["q1"]
    pool = BlockPool(200, 16)
    pool.admit("a", list(range(1024)) + [7])
    pool.commit("a")
    assert pool.admit("q2", list(range(1024))).hit_blocks == answers["q2"]
    pool = BlockPool(100, 1)
    cached = list(range(30))
    pool.admit("a", cached + [7])
    pool.commit("a")
    pool.release("a")  # 100 free blocks, 30 of them cached under `cached`
    with pytest.raises(PoolFullError):
        pool.admit("too_many", cached + list(range(1000, 1000 + answers["q4"] + 1)))
    assert pool.admit("fits", cached + list(range(1000, 1000 + answers["q4"]))).hit_blocks == 30
    pool = BlockPool(100, 2)
    system = [1, 2, 3, 4]
    pool.admit("A", system + [9])
    pool.commit("A")
    for i in range(20):
        pool.admit(f"r{i}", system + [i])
    for i in range(7):
        pool.release(f"r{i}")
    pool.release("A")
    assert pool.blocks[pool.block_table("r7")[0]].ref_count == answers["q6"]


def test_s03_release_shared_block_stays_in_use():
    pool = BlockPool(6, 2)
    pool.admit("a", [1, 2, 3])
    pool.commit("a")
    pool.admit("b", [1, 2, 4])
    pool.release("a")
    assert pool.blocks[0].ref_count == 1 and pool.blocks[0] not in pool.free_queue
    pool.admit("c", [9, 9, 9, 9, 9, 9, 9])  # 4 blocks: never block 0, which "b" still holds
    assert 0 not in pool.block_table("c")
    pool.check_invariants()


def test_s03_release_unknown_or_twice_raises_without_change():
    pool = BlockPool(4, 2)
    pool.admit("a", [1, 2, 3])
    pool.release("a")
    before = snapshot(pool)
    with pytest.raises(KeyError):
        pool.release("a")
    assert snapshot(pool) == before


def test_s03_release_before_commit_frees_unkeyed_blocks():
    pool = BlockPool(4, 2)
    pool.admit("a", [1, 2, 3])
    pool.release("a")
    assert pool.cached == {} and pool.num_free == 4
    assert pool.admit("b", [1, 2, 3]).hit_blocks == 0


def test_s03_violations_reports_broken_state():
    pool = BlockPool(4, 2)
    pool.admit("a", [1, 2, 3])
    pool.blocks[0].ref_count = -1
    problems = pool.violations()
    assert any("negative" in p for p in problems) and any("free (" in p for p in problems)
    with pytest.raises(AssertionError):
        pool.check_invariants()


# -- the pool with another free queue (how stage 4 plugs in) -----------------------------------------
class LifoQueue:
    """A different policy through the FreeQueue protocol only (not iterable, on purpose)."""

    def __init__(self) -> None:
        self.stack: list[Block] = []

    def append(self, block: Block) -> None:
        self.stack.append(block)

    def popleft(self) -> Block:
        return self.stack.pop()

    def remove(self, block: Block) -> None:
        self.stack.remove(block)

    def __len__(self) -> int:
        return len(self.stack)


def test_s03_pool_takes_any_free_queue():
    pool = BlockPool(4, 2, free_queue=LifoQueue())
    assert pool.admit("a", [1, 2, 3]).block_table == [3, 2]
    pool.commit("a")
    pool.release("a")
    assert pool.admit("b", [1, 2, 5]).hit_blocks == 1
    pool.check_invariants()


# -- property: random admit/commit/release against a brute-force model -------------------------------
@dataclass
class ModelRequest:
    table: list[int]
    contents: list[tuple]  # the content name of each full block
    fresh_from: int  # blocks before this index were hits
    committed: bool = False


@dataclass
class Model:
    """The pool, brute force: content names instead of hashes, a list for the FIFO free queue."""

    num_blocks: int
    block_size: int
    ref: list[int] = field(init=False)
    name: list[tuple | None] = field(init=False)  # what a block is cached as
    written: list[tuple | None] = field(init=False)  # whose KV the block physically holds
    free: list[int] = field(init=False)
    requests: dict[str, ModelRequest] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ref = [0] * self.num_blocks
        self.name = [None] * self.num_blocks
        self.written = [None] * self.num_blocks
        self.free = list(range(self.num_blocks))

    def contents(self, tokens: list[int], extra) -> list[tuple]:
        tags = normalize_extra_keys(extra)
        n = len(tokens) // self.block_size
        return [(tags, tuple(tokens[: (i + 1) * self.block_size])) for i in range(n)]

    def admit(self, rid: str, tokens: list[int], extra) -> tuple[list[int], int] | None:
        contents = self.contents(tokens, extra)
        hits = []
        for c in contents[: (len(tokens) - 1) // self.block_size]:
            owners = [b for b in range(self.num_blocks) if self.name[b] == c]
            if not owners:
                break
            hits.append(owners[0])
        need = -(-len(tokens) // self.block_size) - len(hits)
        revived = sum(1 for b in hits if self.ref[b] == 0)
        if need > len(self.free) - revived:
            return None
        for b in hits:
            if self.ref[b] == 0:
                self.free.remove(b)
            self.ref[b] += 1
        fresh = []
        for _ in range(need):
            b = self.free.pop(0)
            self.name[b] = None
            self.written[b] = None  # about to be overwritten by this request's prefill
            self.ref[b] = 1
            fresh.append(b)
        table = hits + fresh
        self.requests[rid] = ModelRequest(table, contents, len(hits))
        return table, len(hits)

    def commit(self, rid: str) -> None:
        req = self.requests[rid]
        for i in range(req.fresh_from, len(req.contents)):
            b = req.table[i]
            self.written[b] = req.contents[i]
            if req.contents[i] not in self.name:
                self.name[b] = req.contents[i]
        req.committed = True

    def release(self, rid: str) -> None:
        req = self.requests.pop(rid)
        for b in req.table:
            self.ref[b] -= 1
            if self.ref[b] == 0:
                self.free.append(b)


PROMPT_HEADS = [[], [1, 2, 3, 4], [1, 2, 3, 5], [2, 2, 2, 2, 2, 2]]


class PoolMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.pool: BlockPool | None = None
        self.model: Model | None = None
        self.counter = 0

    @precondition(lambda self: self.pool is None)
    @rule(num_blocks=st.integers(1, 10), block_size=st.integers(1, 3))
    def create(self, num_blocks, block_size):
        self.pool = BlockPool(num_blocks, block_size)
        self.model = Model(num_blocks, block_size)

    @precondition(lambda self: self.pool is not None)
    @rule(head=st.sampled_from(PROMPT_HEADS), tail=st.lists(st.integers(0, 2), max_size=6),
          extra=st.sampled_from([None, [("salt", "")], [("salt", "t")], [("lora", "t")]]),
          looked_up=st.booleans())
    def admit(self, head, tail, extra, looked_up):
        tokens = head + tail
        if not tokens:
            tokens = [0]
        rid = f"r{self.counter}"
        self.counter += 1
        expected = self.model.admit(rid, tokens, extra)
        if expected is None:
            before = snapshot(self.pool)
            with pytest.raises(PoolFullError):
                self.pool.admit(rid, tokens, extra)
            assert snapshot(self.pool) == before
            return
        # a scheduler that looked the prompt up first hands its keys over; the pool must not care
        keys = self.pool.keys_of(tokens, extra) if looked_up else None
        adm = self.pool.admit(rid, tokens, extra, keys=keys)
        table, hits = expected
        assert (adm.block_table, adm.hit_blocks, adm.hit_tokens) == (table, hits, hits * self.pool.block_size)
        assert len(tokens) - adm.hit_tokens >= 1
        contents = self.model.requests[rid].contents
        for i in range(hits):  # safety: a hit reads KV that was written for exactly this prefix
            assert self.model.written[table[i]] == contents[i]

    @precondition(lambda self: self.pool is not None and any(not r.committed for r in self.model.requests.values()))
    @rule(data=st.data())
    def commit(self, data):
        rid = data.draw(st.sampled_from(sorted(r for r, q in self.model.requests.items() if not q.committed)))
        self.model.commit(rid)
        self.pool.commit(rid)

    @precondition(lambda self: self.pool is not None and self.model.requests)
    @rule(data=st.data())
    def release(self, data):
        rid = data.draw(st.sampled_from(sorted(self.model.requests)))
        self.model.release(rid)
        self.pool.release(rid)

    @invariant()
    def agrees_with_model_and_invariants_hold(self):
        if self.pool is None:
            return
        self.pool.check_invariants()
        assert [b.ref_count for b in self.pool.blocks] == self.model.ref
        assert [b.block_id for b in self.pool.free_queue] == self.model.free
        assert all(r >= 0 for r in self.model.ref)
        assert self.pool.num_free + self.pool.num_in_use == self.pool.num_blocks
        assert sorted(self.pool.requests) == sorted(self.model.requests)
        for rid, req in self.model.requests.items():
            assert self.pool.block_table(rid) == req.table
        # a key is cached iff the model names that block; the model's names are content prefixes
        assert sorted(b.block_id for b in self.pool.cached.values()) == \
            sorted(b for b in range(self.model.num_blocks) if self.model.name[b] is not None)
        live = {b for req in self.model.requests.values() for b in req.table}
        assert not live & set(self.model.free)  # a block in a live table is never free


TestPoolMachine = PoolMachine.TestCase
TestPoolMachine.settings = settings(max_examples=120, stateful_step_count=30, deadline=None)
pytest.mark.slow(TestPoolMachine)  # random operations against a model, many examples: the slow lane


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["admit", "commit", "release"]), st.integers(0, 3),
                          st.lists(st.integers(0, 1), min_size=1, max_size=7)), max_size=40))
def test_s03_property_any_free_queue_keeps_invariants(ops):
    """The same random sequences with a LIFO queue: the pool's invariants do not depend on the policy."""
    pool = BlockPool(5, 2, free_queue=LifoQueue())
    for op, slot, tokens in ops:
        rid = f"r{slot}"
        try:
            if op == "admit":
                pool.admit(rid, tokens)
            elif op == "commit":
                pool.commit(rid)
            else:
                pool.release(rid)
        except (PoolFullError, KeyError, ValueError):
            pass
        pool.check_invariants()


# -- the benchmark runs -----------------------------------------------------------------------------
def test_s03_benchmark_quick_smoke(capsys):
    from benchmarks.bench_block_pool import main

    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "hit tokens" in out and "full cycle" in out and "hash-only baseline" in out
    assert "full cycle now is faster than before (lookup + admit) by       min " in out and "median " in out


def test_s03_workload_is_seeded_and_shaped():
    from workbook.workload import make_workload

    a = make_workload(seed=3, num_prompts=4, prompt_len=32, num_requests=20, fresh_tokens=5, vocab=50)
    assert a == make_workload(seed=3, num_prompts=4, prompt_len=32, num_requests=20, fresh_tokens=5, vocab=50)
    assert len(a) == 20 and all(len(r) == 37 and all(0 <= t < 50 for t in r) for r in a)
    assert len({tuple(r[:32]) for r in a}) <= 4
