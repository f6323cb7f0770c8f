"""Attention on several devices, with ``torch.distributed`` (gloo on CPU, NCCL with one GPU a
rank): heads split across devices (tensor parallelism), sequences split across them (ring
attention, DeepSpeed-Ulysses), and ``launch``, which runs a function in several local processes
from a script or a notebook cell. Every function equals the one-device computation (float32,
1e-5) on every rank. ``mha.distributed.layout``: who holds what and what each rank sends, as
pure functions.
"""

from ._launch import launch
from ._traffic import traffic
from .layout import (
    SCHEMES,
    causal_blocks,
    heads_of_rank,
    kv_heads_of_rank,
    positions_of_rank,
    rank_holds,
    sent_bytes,
)
from .ring import ring_attention
from .tensor import tensor_parallel
from .ulysses import ulysses_attention

__all__ = [
    "SCHEMES",
    "causal_blocks",
    "heads_of_rank",
    "kv_heads_of_rank",
    "launch",
    "positions_of_rank",
    "rank_holds",
    "ring_attention",
    "sent_bytes",
    "tensor_parallel",
    "traffic",
    "ulysses_attention",
]
