"""Correct answers to each stage-2 code TODO written another way than the reference: each must earn
full marks (``tests/course/test_mutants.py`` grades them with the wrong answers). ``ALTERNATIVES`` maps a TODO
id to ``{name: edits}``, the edits being text replacements of the reference module inside that
TODO's function, as in ``mutants.py`` beside this file (whose ``EQUIVALENT`` holds a few more)."""
from __future__ import annotations

from tests.mutants_s02 import CHAIN_BODY, DATA, DIGEST, RUN_LOOP, SPLIT, TAG

HASH_BODY = "    " + DATA + """
    for kind, value in tags:
        # Tagging each value with its kind keeps a salt "X" and an adapter "X" apart.
        # zh: 每个 value 都带上它的 kind，盐值 "X" 和适配器 "X" 才不会混在一起。
        """ + TAG + "\n" + DIGEST

ALTERNATIVES = {
    "s02.split_blocks": {
        "slices_with_a_step": [(SPLIT, "blocks = [tuple(tokens[i : i + block_size]) "
                                       "for i in range(0, num_full * block_size, block_size)]")],
        "islice_over_one_iterator": [(SPLIT, """import itertools
    it = iter(tokens)
    blocks = [tuple(itertools.islice(it, block_size)) for _ in range(num_full)]""")],
        "while_loop": [(SPLIT, """blocks = []
    start = 0
    while start + block_size <= len(tokens):
        blocks.append(tuple(tokens[start : start + block_size]))
        start += block_size""")],
        "numpy_reshape": [(SPLIT, """import numpy as np
    rows = np.asarray(list(tokens[: num_full * block_size]), dtype=np.int64).reshape(num_full, block_size)
    blocks = [tuple(int(t) for t in row) for row in rows]""")],
    },
    "s02.hash_block": {
        "join_a_list_of_frames": [(HASH_BODY, """    parts = [frame(parent if parent is not None else root_seed), frame(encode_tokens(block_tokens))]
    parts += [frame(field.encode("utf-8")) for pair in tags for field in pair]
    key = hashlib.sha256(b"".join(parts)).digest()
""")],
        "struct_length_prefix_and_hashlib_new": [(HASH_BODY, """    def framed(b: bytes) -> bytes:
        return struct.pack("<I", len(b)) + b

    h = hashlib.new("sha256")
    h.update(framed(root_seed if parent is None else parent))
    h.update(framed(encode_tokens(block_tokens)))
    for kind, value in tags:
        h.update(framed(bytes(kind, "utf-8")))
        h.update(framed(bytes(value, "utf-8")))
    key = h.digest()
""")],
        "bytearray": [(HASH_BODY, """    buf = bytearray(frame(root_seed) if parent is None else frame(parent))
    buf += frame(encode_tokens(block_tokens))
    for kind, value in tags:
        buf.extend(frame(kind.encode()))
        buf.extend(frame(value.encode()))
    key = hashlib.sha256(bytes(buf)).digest()
""")],
    },
    "s02.chain_keys": {
        "itertools_accumulate": [(CHAIN_BODY, """    import itertools
    # the first item (no parent) passes through as it is; each block is then hashed on the key before it
    chain = itertools.accumulate([None, *split_blocks(tokens, block_size)],
                                 lambda parent, block: hash_block(parent, block, extra_keys, root_seed=root_seed))
    keys.extend(list(chain)[1:])
""")],
        "while_over_offsets": [(CHAIN_BODY, """    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size <= 0:
        raise ValueError("block_size must be a positive int")
    start, parent = 0, None
    while start + block_size <= len(tokens):
        parent = hash_block(parent, tokens[start : start + block_size], extra_keys, root_seed=root_seed)
        keys.append(parent)
        start += block_size
""")],
        "own_bytes_per_block": [(CHAIN_BODY, """    tags = normalize_extra_keys(extra_keys)
    previous = root_seed
    for block in split_blocks(tokens, block_size):
        data = frame(previous) + frame(encode_tokens(block))
        data += b"".join(frame(kind.encode()) + frame(value.encode()) for kind, value in tags)
        previous = hashlib.sha256(data).digest()
        keys.append(previous)
""")],
        "functools_reduce": [(CHAIN_BODY, """    from functools import reduce

    def step(chain, block):
        return chain + [hash_block(chain[-1] if chain else None, block, extra_keys, root_seed=root_seed)]

    keys += reduce(step, split_blocks(tokens, block_size), [])
""")],
    },
    "s02.longest_cached_run": {
        "while_with_an_index": [(RUN_LOOP, "    while hits < len(keys) and keys[hits] in table:\n        hits += 1\n")],
        "next_first_miss": [(RUN_LOOP, "    hits = next((i for i, key in enumerate(keys) if key not in table), len(keys))\n")],
        "takewhile_over_contains": [(RUN_LOOP, """    from itertools import takewhile
    hits = len(list(takewhile(table.__contains__, keys)))
""")],
        # numpy's index of the first miss is a numpy.int64, a number all the same
        "numpy_first_miss": [(RUN_LOOP, """    import numpy as np
    found = np.fromiter((key in table for key in keys), dtype=bool, count=len(keys))
    hits = np.append(found, False).argmin()
""")],
    },
}
