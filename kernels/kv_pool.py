"""A paged K/V pool: the memory a prefix cache shares between requests.

Per layer, one K tensor and one V tensor of shape ``[num_blocks, block_size, n_kv_heads, head_dim]``.
Block ``b`` row ``r`` is the *slot* ``b * block_size + r``; a request's block table maps its token
position ``p`` to block ``table[p // block_size]``, row ``p % block_size``. Which block belongs to
whom (reference counts, hashes, eviction) is the block manager's business, not the pool's: the pool
only stores numbers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from autograder.i18n import tr
from kernels.model import ModelConfig


class KVPool:
    """Storage for the K/V of ``num_blocks`` blocks in every layer.

    Invariants: ``len(k) == len(v) == num_layers``; every ``k[i]`` and ``v[i]`` is a contiguous tensor
    of shape ``(num_blocks, block_size, n_kv_heads, head_dim)`` with the pool's dtype and device, so
    :meth:`flat_k` / :meth:`flat_v` are views (writing through them writes the pool).

    [zh]
    KV 池：每一层存放 ``num_blocks`` 个块的 K/V。

    不变量：``len(k) == len(v) == num_layers``；每个 ``k[i]``、``v[i]`` 都是形状为
    ``(num_blocks, block_size, n_kv_heads, head_dim)`` 的连续张量，dtype 和设备与 KV 池相同，因此
    :meth:`flat_k` / :meth:`flat_v` 返回的是视图（通过它们写入就是写进 KV 池）。
    """

    def __init__(self, num_layers: int, num_blocks: int, block_size: int, n_kv_heads: int, head_dim: int,
                 *, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> None:
        for name, value in (("num_layers", num_layers), ("num_blocks", num_blocks), ("block_size", block_size),
                            ("n_kv_heads", n_kv_heads), ("head_dim", head_dim)):
            if value < 1:
                raise ValueError(tr(f"{name} must be >= 1, got {value}", f"{name} 必须 >= 1，实际是 {value}"))
        self.num_layers, self.num_blocks, self.block_size = num_layers, num_blocks, block_size
        self.n_kv_heads, self.head_dim = n_kv_heads, head_dim
        shape = (num_blocks, block_size, n_kv_heads, head_dim)
        # Zeros, not empty: an unwritten slot read by mistake gives a wrong answer, never NaN noise.
        self.k: list[Tensor] = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.v: list[Tensor] = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]

    @classmethod
    def for_model(cls, config: ModelConfig, num_blocks: int, block_size: int, *,
                  dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu") -> KVPool:
        return cls(config.num_hidden_layers, num_blocks, block_size, config.num_key_value_heads,
                   config.head_dim, dtype=dtype, device=device)

    @property
    def num_slots(self) -> int:
        return self.num_blocks * self.block_size

    @property
    def dtype(self) -> torch.dtype:
        return self.k[0].dtype

    @property
    def device(self) -> torch.device:
        return self.k[0].device

    @property
    def nbytes(self) -> int:
        return 2 * self.num_layers * self.k[0].numel() * self.k[0].element_size()

    def flat_k(self, layer: int) -> Tensor:
        """Layer ``layer``'s K as ``[num_slots, n_kv_heads, head_dim]`` (a view: slot-indexed).

        [zh]
        第 ``layer`` 层的 K，形状 ``[num_slots, n_kv_heads, head_dim]``（视图，按槽位索引）。
        """
        return self.k[layer].view(self.num_slots, self.n_kv_heads, self.head_dim)

    def flat_v(self, layer: int) -> Tensor:
        """Layer ``layer``'s V as ``[num_slots, n_kv_heads, head_dim]`` (a view: slot-indexed).

        [zh]
        第 ``layer`` 层的 V，形状 ``[num_slots, n_kv_heads, head_dim]``（视图，按槽位索引）。
        """
        return self.v[layer].view(self.num_slots, self.n_kv_heads, self.head_dim)
