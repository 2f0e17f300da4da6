"""Correct answers to each stage-6 code TODO written another way than the reference: each must earn
full marks (graded by ``tests/course/test_mutants.py``). Same format as ``solutions/07_serving/alternatives.py``: each
edit replaces the whole solution region of its TODO (read from the reference, so it stays exact).
Attention written by hand instead of with SDPA differs from it by float rounding only, well inside
the checks' tolerances."""
from __future__ import annotations

import textwrap

from autograder.core import layout
from autograder.core.pysource import solution_region

_TEXT = layout.stage_files("s06").reference.read_text(encoding="utf-8")


def region(target: str, code: str) -> list[tuple[str, str]]:
    """One edit: the reference's solution region of ``target`` becomes ``code`` (indented like the region)."""
    lines = _TEXT.splitlines(keepends=True)
    begin, end = solution_region(_TEXT, target)
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    return [("".join(lines[begin:end + 1]),
             lines[begin] + textwrap.indent(textwrap.dedent(code).strip("\n") + "\n", indent) + lines[end])]


# what every attention alternative starts with: the slots of positions 0 .. offset + T - 1 through the table
# (indented like the code it is joined to)
GATHER = """
            n = offset + t
            table = torch.as_tensor(block_table, dtype=torch.long, device=q.device)
            key_pos = torch.arange(n, device=q.device)
            slots = table[key_pos // pool.block_size] * pool.block_size + key_pos % pool.block_size
"""

ALTERNATIVES = {
    "s06.suffix_positions": {
        "shifted_arange": region("suffix_positions", """
            positions = torch.arange(num_tokens - hit_tokens, device=device) + hit_tokens
        """),
        "from_a_python_range": region("suffix_positions", """
            positions = torch.tensor(list(range(hit_tokens, num_tokens)), dtype=torch.int64, device=device)
        """),
        "cumsum_of_ones": region("suffix_positions", """
            ones = torch.ones(num_tokens - hit_tokens, dtype=torch.long, device=device)
            positions = ones.cumsum(0) + (hit_tokens - 1)
        """),
    },
    "s06.slot_mapping": {
        "div_remainder_index_select": region("slot_mapping", """
            blocks = torch.div(positions, block_size, rounding_mode="floor")
            slots = table.index_select(0, blocks) * block_size + torch.remainder(positions, block_size)
        """),
        "every_slot_of_the_table_then_index": region("slot_mapping", """
            rows = torch.arange(block_size, device=positions.device)
            every_slot = (table[:, None] * block_size + rows[None, :]).reshape(-1)
            slots = every_slot[positions]
        """),
        "gather": region("slot_mapping", """
            blocks = positions // block_size
            rows = positions - blocks * block_size
            slots = torch.gather(table, 0, blocks) * block_size + rows
        """),
    },
    "s06.write_kv": {
        "index_copy": region("write_kv", """
            pool.flat_k(layer).index_copy_(0, slots, k)
            pool.flat_v(layer).index_copy_(0, slots, v)
        """),
        "index_put": region("write_kv", """
            flat_k, flat_v = pool.flat_k(layer), pool.flat_v(layer)
            flat_k.index_put_((slots,), k)
            flat_v.index_put_((slots,), v)
        """),
        "row_by_row": region("write_kv", """
            for i, slot in enumerate(slots.tolist()):
                pool.flat_k(layer)[slot] = k[i]
                pool.flat_v(layer)[slot] = v[i]
        """),
    },
    "s06.paged_attention": {
        "softmax_by_hand_with_einsum": region("paged_attention", GATHER + """
            k = pool.flat_k(layer)[slots].repeat_interleave(group, dim=1)
            v = pool.flat_v(layer)[slots].repeat_interleave(group, dim=1)
            mask = key_pos[None, :] <= torch.arange(offset, n, device=q.device)[:, None]
            scores = torch.einsum("thd,shd->hts", q, k) / q.shape[-1] ** 0.5
            scores = scores.masked_fill(~mask, float("-inf"))
            out = torch.einsum("hts,shd->thd", scores.softmax(dim=-1), v)
        """),
        "matmul_with_an_additive_mask_and_head_index": region("paged_attention", GATHER + """
            heads = torch.arange(hq, device=q.device) // group
            k = pool.flat_k(layer)[slots][:, heads].transpose(0, 1)
            v = pool.flat_v(layer)[slots][:, heads].transpose(0, 1)
            visible = key_pos[None, :] <= (key_pos[offset:])[:, None]
            bias = torch.where(visible, 0.0, float("-inf"))
            scores = q.transpose(0, 1) @ k.transpose(1, 2) * q.shape[-1] ** -0.5 + bias
            out = (scores.softmax(dim=-1) @ v).transpose(0, 1)
        """),
        "sdpa_with_expand_and_tril": region("paged_attention", GATHER + """
            hkv, d = pool.n_kv_heads, q.shape[-1]
            k = pool.flat_k(layer)[slots][:, :, None].expand(n, hkv, group, d).reshape(n, hq, d)
            v = pool.flat_v(layer)[slots][:, :, None].expand(n, hkv, group, d).reshape(n, hq, d)
            mask = torch.ones(t, n, dtype=torch.bool, device=q.device).tril(diagonal=offset)
            out = F.scaled_dot_product_attention(q.permute(1, 0, 2)[None], k.permute(1, 0, 2)[None],
                                                 v.permute(1, 0, 2)[None], attn_mask=mask)[0].permute(1, 0, 2)
        """),
    },
    "s06.prefill": {
        "explicit_cap_and_own_positions": region("PagedPrefiller.prefill", """
            admission = self.blocks.admit(request_id, tokens)
            hit = admission.hit_tokens
            if hit >= len(tokens):
                hit = len(tokens) - 1
            token_ids = torch.tensor(list(tokens)[hit:], dtype=torch.long, device=self.device)
            positions = torch.arange(hit, len(tokens), device=self.device)
            table = torch.as_tensor(admission.block_table, dtype=torch.long, device=self.device)
            slots = slot_mapping(table, positions, self.block_size)

            def attend(layer, q, k, v):
                write_kv(self.pool, layer, slots, k, v)
                return self.attention(q, self.pool, layer, table, hit)

            logits = self.model(token_ids, positions, attend)
            self.blocks.commit(request_id)
            ledger = dict(hit_tokens=hit, computed_tokens=int(positions.numel()))
        """),
        "partial_callback": region("PagedPrefiller.prefill", """
            import functools

            def attend(layer, q, k, v, *, slots, table, offset):
                write_kv(self.pool, layer, slots, k, v)
                return self.attention(q, self.pool, layer, table, offset)

            admission = self.blocks.admit(request_id, tokens)
            hit = min(admission.hit_tokens, max(len(tokens) - 1, 0))
            computed = len(tokens) - hit
            positions = suffix_positions(hit, len(tokens), device=self.device)
            table = torch.tensor(list(admission.block_table), dtype=torch.int64, device=self.device)
            callback = functools.partial(attend, slots=slot_mapping(table, positions, self.block_size), table=table,
                                         offset=hit)
            logits = self.model(torch.tensor(tokens[-computed:], device=self.device), positions, callback)
            self.blocks.commit(request_id)
            ledger = {"computed_tokens": computed, "hit_tokens": hit}
        """),
        "lambda_and_tuple_result": region("PagedPrefiller.prefill", """
            admission = self.blocks.admit(request_id, tokens)
            hit = sorted([admission.hit_tokens, len(tokens) - 1])[0]
            positions = suffix_positions(hit, len(tokens), device=self.device)
            table = torch.tensor(admission.block_table, device=self.device).long()
            slots = slot_mapping(table, positions, self.block_size)
            logits = self.model(
                torch.tensor(tokens[hit:], device=self.device), positions,
                lambda layer, q, k, v: (write_kv(self.pool, layer, slots, k, v),
                                        self.attention(q, self.pool, layer, table, hit))[1])
            self.blocks.commit(request_id)
            ledger = {"hit_tokens": hit, "computed_tokens": len(tokens[hit:])}
        """),
    },
}
