"""Stage 2 reference: chained block hashing.

A prompt is cut into full blocks of ``block_size`` tokens. Block ``i`` gets a key that digests
its parent's key (block ``i - 1``; a configurable root seed for block 0), its own tokens and the
request's *extra keys* (a tenant's cache salt, a LoRA adapter, ...). Because every key covers its
parent, two blocks share a key only when the whole prefix up to and including them is the same.

Invariants of every key this module returns:
- it is ``hashlib.sha256`` over a canonical, unambiguous byte encoding, so it is the same in every
  process, on every machine and across restarts (Python's ``hash()`` is none of these);
- the partial tail of a prompt never gets a key (its KV block is not full, so it cannot be shared);
- extra keys are tagged by kind: ``("salt", "X")`` and ``("lora", "X")`` give different keys;
  an extra key whose value is empty is the same as no extra key at all; their order does not matter.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence

from autograder.i18n import tr

#: Stands in for the parent of block 0. Change it (e.g. per model or per deployment) to keep caches
#: that must never share a block apart.
# zh: 代替第 0 个块的父 key。换一个根种子（比如按模型或按部署区分），就能让绝不能共享块的两个缓存彼此隔开。
ROOT_SEED: bytes = b"prefix-cache-workbook/root-seed/v1"

#: Token ids are encoded as unsigned 32-bit little-endian integers.
# zh: token id 编码成 32 位无符号小端整数。
MAX_TOKEN_ID: int = 2**32 - 1

# struct.Struct objects for token blocks, by length: building the format once per length keeps
# encoding cheap when thousands of blocks are hashed per second.
# zh: 按长度缓存 token 块的 struct.Struct：每种长度只构造一次格式，每秒哈希成千上万个块时编码依然便宜。
_TOKEN_STRUCTS: dict[int, struct.Struct] = {}


def frame(data: bytes) -> bytes:
    """Length-prefix ``data`` (4-byte little-endian length, then the bytes).

    Framing every field makes the encoding unambiguous: without it, (b"ab", b"c") and
    (b"a", b"bc") would concatenate to the same bytes and so get the same digest.

    [zh]
    给 ``data`` 加上长度前缀（4 字节小端长度，后面跟数据本身）。

    每个字段都加上长度前缀，编码才没有歧义：否则 (b"ab", b"c") 和 (b"a", b"bc") 拼接后是同样的字节，
    摘要（digest）也就一样。
    """
    return len(data).to_bytes(4, "little") + data


def encode_tokens(tokens: Sequence[int]) -> bytes:
    """Token ids as compact bytes: 4 bytes each, little-endian (never ``str(tokens)``).

    Raises ``ValueError`` for a token id outside ``0 .. MAX_TOKEN_ID`` and ``TypeError`` for a
    token that is not an integer.

    [zh]
    把 token id 编码成紧凑的字节：每个 4 字节，小端序（绝不用 ``str(tokens)``）。

    token id 超出 ``0 .. MAX_TOKEN_ID`` 时抛出 ``ValueError``，token 不是整数时抛出 ``TypeError``。
    """
    try:
        packer = _TOKEN_STRUCTS[len(tokens)]
    except KeyError:
        packer = _TOKEN_STRUCTS.setdefault(len(tokens), struct.Struct(f"<{len(tokens)}I"))
    try:
        return packer.pack(*tokens)
    except struct.error as exc:
        # struct reports both "not an int" and "out of range" as struct.error; tell them apart.
        # zh: struct 把“不是整数”和“超出范围”都报成 struct.error，这里把两者区分开。
        for t in tokens:
            if not isinstance(t, int) or isinstance(t, bool):
                raise TypeError(tr(f"token ids must be int, got {type(t).__name__}",
                                   f"token id 必须是 int，实际是 {type(t).__name__}")) from exc
        raise ValueError(tr(f"token ids must lie in 0..{MAX_TOKEN_ID}", f"token id 必须在 0..{MAX_TOKEN_ID} 之间")) from exc


def normalize_extra_keys(
    extra_keys: Sequence[tuple[str, str]] | None,
) -> tuple[tuple[str, str], ...]:
    """Validate extra keys and put them in canonical form.

    Returns the ``(kind, value)`` pairs sorted, without those whose value is empty (an empty salt
    means "no salt"). Raises ``TypeError``/``ValueError`` for anything that is not a pair of
    strings with a non-empty kind.

    [zh]
    校验附加 key（extra keys），并把它们整理成规范形式。

    返回排好序的 ``(kind, value)`` 对，并去掉 value 为空的那些（空盐值就等于没有盐值）。
    凡是不是“两个字符串组成、kind 非空”的对，都抛出 ``TypeError`` 或 ``ValueError``。
    """
    if not extra_keys:
        return ()
    if isinstance(extra_keys, (str, bytes)):
        raise TypeError(tr("extra_keys must be a sequence of (kind, value) pairs, not a string",
                           "extra_keys 必须是 (kind, value) 对组成的序列，不能是字符串"))
    pairs = []
    for pair in extra_keys:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(tr(f"each extra key must be a (kind, value) tuple, got {pair!r}",
                               f"每个附加 key 都必须是 (kind, value) 元组，实际是 {pair!r}"))
        kind, value = pair
        if not isinstance(kind, str) or not isinstance(value, str):
            raise TypeError(tr(f"kind and value must be str, got {pair!r}", f"kind 和 value 都必须是 str，实际是 {pair!r}"))
        if not kind:
            raise ValueError(tr("the kind of an extra key must not be empty", "附加 key 的 kind 不能为空"))
        if value:
            pairs.append((kind, value))
    return tuple(sorted(pairs))


def split_blocks(tokens: Sequence[int], block_size: int) -> list[tuple[int, ...]]:
    """Cut ``tokens`` into full blocks of ``block_size`` tokens, in order, as tuples.

    The partial tail (the last ``len(tokens) % block_size`` tokens) is dropped: its KV block is
    still being filled, so it must never be shared through the cache.

    [zh]
    把 ``tokens`` 按顺序切成若干个满块，每块 ``block_size`` 个 token，每块是一个 tuple。

    未满的尾块（最后 ``len(tokens) % block_size`` 个 token）丢掉：它的 KV 块还在被填写，绝不能通过缓存共享。
    """
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size <= 0:
        raise ValueError(tr(f"block_size must be a positive int, got {block_size!r}",
                            f"block_size 必须是正整数，实际是 {block_size!r}"))
    # TODO 1 (s02.split_blocks)
    ### BEGIN SOLUTION
    num_full = len(tokens) // block_size
    # zip() over block_size references to one iterator takes consecutive runs of block_size tokens
    # as tuples, and stops before a short run: the same as slicing block i, about twice as fast.
    # zh: 对同一个迭代器的 block_size 个引用做 zip()，会依次取出连续的 block_size 个 token 组成 tuple，
    # zh: 遇到不足一块的部分就停下：结果和逐块切片一样，速度约快一倍。
    blocks = list(zip(*[iter(tokens[: num_full * block_size])] * block_size))
    ### END SOLUTION
    return blocks


def hash_block(
    parent: bytes | None,
    block_tokens: Sequence[int],
    extra_keys: Sequence[tuple[str, str]] | None = None,
    *,
    root_seed: bytes = ROOT_SEED,
) -> bytes:
    """The 32-byte key of one block: sha256 over (parent or root seed, tokens, extra keys).

    ``parent`` is the key of the previous block, or ``None`` for block 0 (then ``root_seed``
    takes its place). The digested bytes are ``frame(parent)``, ``frame(encode_tokens(tokens))``
    and, for each canonical extra key, ``frame(kind)`` and ``frame(value)`` (UTF-8).

    [zh]
    一个块的 32 字节 key：对（父 key 或根种子、token、附加 key）做 sha256。

    ``parent`` 是前一个块的 key；第 0 个块传 ``None``，由 ``root_seed`` 代替。参与摘要的字节依次是
    ``frame(parent)``、``frame(encode_tokens(tokens))``，以及每个规范化后的附加 key 的
    ``frame(kind)`` 和 ``frame(value)``（UTF-8 编码）。
    """
    if parent is None:
        if not isinstance(root_seed, bytes) or not root_seed:
            raise ValueError(tr("root_seed must be non-empty bytes", "root_seed 必须是非空的 bytes"))
    elif not isinstance(parent, bytes):
        raise TypeError(tr(f"parent must be bytes or None, got {type(parent).__name__}",
                           f"parent 必须是 bytes 或 None，实际是 {type(parent).__name__}"))
    tags = normalize_extra_keys(extra_keys) if extra_keys else ()
    # TODO 2 (s02.hash_block)
    ### BEGIN SOLUTION
    data = frame(root_seed if parent is None else parent) + frame(encode_tokens(block_tokens))
    for kind, value in tags:
        # Tagging each value with its kind keeps a salt "X" and an adapter "X" apart.
        # zh: 每个 value 都带上它的 kind，盐值 "X" 和适配器 "X" 才不会混在一起。
        data += frame(kind.encode()) + frame(value.encode())
    key = hashlib.sha256(data).digest()
    ### END SOLUTION
    return key


def chain_keys(
    tokens: Sequence[int],
    block_size: int,
    extra_keys: Sequence[tuple[str, str]] | None = None,
    *,
    root_seed: bytes = ROOT_SEED,
) -> list[bytes]:
    """One key per full block of ``tokens``; key ``i`` is ``hash_block(key i-1, block i, ...)``.

    Block 0 has no parent (``None``: the root seed stands in). Every block gets the same
    ``extra_keys`` and ``root_seed``. The partial tail gets no key.

    [zh]
    ``tokens`` 的每个满块对应一个 key；第 i 个 key 是 ``hash_block(第 i-1 个 key, 第 i 个块, ...)``。

    第 0 个块没有父 key（传 ``None``，由根种子代替）。每个块都用同样的 ``extra_keys`` 和 ``root_seed``。
    未满的尾块没有 key。
    """
    keys: list[bytes] = []
    # TODO 3 (s02.chain_keys)
    ### BEGIN SOLUTION
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size <= 0:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    # The bytes hash_block(parent, block, extra_keys, root_seed=root_seed) digests, block after
    # block, built without its per-call work: the full blocks are encoded in one call and the frames
    # every block shares are built once, so each block costs one concatenation and one sha256
    # (bit-identical keys, about 1.7x faster than calling hash_block per block). A plain loop that
    # calls hash_block per block, each on the previous key, is just as correct. The partial tail
    # gets no key.
    # zh: 逐块构造 hash_block(parent, block, extra_keys, root_seed=root_seed) 要摘要的字节，但省掉每次调用的
    # zh: 开销：所有满块一次编码完，各块共用的帧只构造一次，于是每块只需一次拼接和一次 sha256
    # zh: （key 逐位相同，比逐块调用 hash_block 快约 1.7 倍）。直接循环调用 hash_block 同样是正确答案。
    # zh: 未满的尾块没有 key。
    end = len(tokens) - len(tokens) % block_size
    if end:
        if not isinstance(root_seed, bytes) or not root_seed:
            raise ValueError("root_seed must be non-empty bytes")
        tags = b"".join(frame(kind.encode()) + frame(value.encode())
                         for kind, value in normalize_extra_keys(extra_keys))
        try:
            encoded = struct.pack(f"<{end}I", *tokens[:end])
        except struct.error:
            # raise what hash_block raises for the first bad block
            # zh: 抛出 hash_block 在第一个坏块上会抛出的异常
            for start in range(0, end, block_size):
                encode_tokens(tokens[start : start + block_size])
            raise
        width = 4 * block_size
        # frame() of one block's encoded tokens starts with block_head, frame() of a parent key with key_head
        # zh: 一个块的编码 token 经 frame() 后以 block_head 开头，父 key 经 frame() 后以 key_head 开头
        block_head = width.to_bytes(4, "little")
        key_head = hashlib.sha256().digest_size.to_bytes(4, "little")
        prefix = frame(root_seed) + block_head
        for start in range(0, 4 * end, width):
            parent = hashlib.sha256(prefix + encoded[start : start + width] + tags).digest()
            keys.append(parent)
            prefix = key_head + parent + block_head
    ### END SOLUTION
    return keys


def longest_cached_run(keys: Sequence[bytes], table: Mapping[bytes, object]) -> int:
    """How many *leading* keys are in ``table``: stop at the first key that is missing.

    A block after a miss is not used even if its key is present (a cache may have given up block
    ``i`` and kept block ``i + 1``): prefill computes one contiguous run of tokens, from the first
    uncached one to the end of the prompt, and a cached block after a miss sits inside that run.

    [zh]
    ``keys`` 开头有多少个连续出现在 ``table`` 里：遇到第一个缺失的 key 就停。

    未命中之后的块即使 key 还在表里也不用（缓存可能丢掉了第 ``i`` 块却留着第 ``i + 1`` 块）：prefill 计算的是
    一段连续的 token，从第一个未缓存的 token 一直到提示词末尾，未命中之后的已缓存块正落在这段里。
    """
    hits = 0
    # TODO 4 (s02.longest_cached_run)
    ### BEGIN SOLUTION
    for key in keys:
        if key not in table:
            break
        hits += 1
    ### END SOLUTION
    return hits


def lookup(
    tokens: Sequence[int],
    block_size: int,
    table: Mapping[bytes, object],
    extra_keys: Sequence[tuple[str, str]] | None = None,
    *,
    root_seed: bytes = ROOT_SEED,
) -> tuple[int, int]:
    """``(hit_blocks, hit_tokens)``: the cached leading blocks of a prompt and the tokens they hold.

    [zh]
    返回（命中块数, 命中 token 数）：提示词开头已缓存的块，以及它们装着的 token 数。
    """
    keys = chain_keys(tokens, block_size, extra_keys, root_seed=root_seed)
    hit_blocks = longest_cached_run(keys, table)
    return hit_blocks, hit_blocks * block_size


def quiz() -> dict:
    """Your answers to the concept quiz.

    [zh]
    你对概念小测的回答。
    """
    # TODO 5 (s02.quiz)
    ### BEGIN SOLUTION
    return {"q1": 62, "q2": "B", "q3": "A", "q4": "C", "q5": 32}
    ### END SOLUTION
