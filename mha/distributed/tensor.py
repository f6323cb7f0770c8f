"""``tensor_parallel``: the heads of one attention layer split across devices.

Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) applied to attention:
the heads do not interact until ``W_o``, so rank r of ``world`` computes only
its H / world heads, from the whole input. It holds the rows of ``W_q``,
``W_k`` and ``W_v`` that make them (a split of each projection's output
features: ``ColwiseParallel``) and the columns of ``W_o`` that read them
(``RowwiseParallel``). Each rank's ``W_o`` product is then one term of the
output's sum over heads: one all-reduce adds the terms, and every rank has
the whole output. That all-reduce is all a forward pass sends. The backward
pass all-reduces the input's gradient instead, once for each projection that
reads the input (three, four with the gate; Megatron-LM packs them into one
matmul, which sends it once).

Grouped-query attention splits its key/value heads the same way, Hkv / world
a rank. With fewer key/value heads than devices (8 query heads, 2 key/value
heads, 4 devices) each rank holds a copy of the one key/value head its query
heads read (``layout.kv_heads_of_rank``): the layer's ``W_k`` and ``W_v``
are first rewritten to ``world`` key/value heads, head g copied
world / Hkv times, which computes exactly what the layer computed.
"""

import torch
from torch import nn

from ..layer import MultiHeadAttention, _keep_rows
from . import layout

__all__ = ["tensor_parallel"]


def tensor_parallel(layer, mesh):
    """Split ``layer`` (a ``mha.MultiHeadAttention``, GQA included, or a
    subclass such as ``RotaryMultiHeadAttention``, with its ``window``,
    ``sinks``, ``qk_norm`` and ``gate``, or ``RelativeMultiHeadAttention``)
    by heads across the 1-D
    ``DeviceMesh`` ``mesh``, in place; returns ``layer``.

    Call it on every rank, with the same layer on each (same seed or same
    weights) on the mesh's device type, e.g.
    ``mesh = init_device_mesh("cpu", (world,))``. Afterwards rank r holds
    ``layout.heads_of_rank(r, world, H)`` and ``layout.kv_heads_of_rank``;
    ``layer.num_heads`` and ``layer.num_kv_heads`` are the rank's own
    counts, and ``layer.tp_world``, ``layer.tp_rank``,
    ``layer.tp_num_heads``, ``layer.tp_num_kv_heads`` the number of
    devices, the rank, and the layer's counts before the split. ``W_q``,
    ``W_k``, ``W_v``, ``W_g``, ``W_o`` hold DTensors (``.to_local()``: the
    rank's part); ``sinks`` becomes the rank's heads' entries.

    ``forward`` takes the same whole input on every rank and returns the
    whole output on every rank (one all-reduce). What is per head is the
    rank's: ``need_weights`` returns its heads' weights, ``head_mask`` and
    a per-head ``mask`` index its heads, and a ``KVCache`` holds its
    key/value heads (one cache a rank). Training: the parameters every rank
    holds whole (``q_norm``, ``k_norm``, the tables of a
    ``RelativeMultiHeadAttention``) and a copied key/value head get, on each
    rank, only the gradient through that rank's heads: sum their ``.grad``
    over the ranks that hold them (``dist.all_reduce``) before a step.

    A ValueError when the devices do not divide the query heads, or
    neither divide nor are divided by the key/value heads.
    """
    # DTensor's machinery takes a while to import: only when used
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    world, rank = _check(layer, mesh)
    H, Hkv = layer.num_heads, layer.num_kv_heads
    heads = layout.heads_of_rank(rank, world, H)  # ValueErrors come here
    kv_heads = layout.kv_heads_of_rank(rank, world, H, Hkv)
    if Hkv < world:  # each key/value head copied world / Hkv times
        _copy_kv_heads(layer, world)
    names = ["W_q", "W_k", "W_v"] + (["W_g"] if layer.gate else [])
    plan = {name: ColwiseParallel() for name in names}  # rows: features out
    plan["W_o"] = RowwiseParallel()  # columns: features in; all-reduce
    parallelize_module(layer, mesh, plan)
    if layer.sinks is not None:  # (H,) -> (H / world,)
        layer.sinks = nn.Parameter(layer.sinks.detach()[heads].clone())
    layer.tp_world, layer.tp_rank = world, rank
    layer.tp_num_heads, layer.tp_num_kv_heads = H, Hkv
    layer.num_heads, layer.num_kv_heads = len(heads), len(kv_heads)
    return layer


def _copy_kv_heads(layer, world):
    """Rewrite ``W_k``, ``W_v`` from Hkv to ``world`` key/value heads: new
    head j is old head j // (world / Hkv), so query head h still reads its
    own (h // (H / world) // (world / Hkv) = h // (H / Hkv))."""
    Dh, copies = layer.d_head, world // layer.num_kv_heads
    old = torch.arange(world) // copies  # (world,): the old head of each
    rows = (old[:, None] * Dh + torch.arange(Dh)).flatten()  # (world * Dh,)
    rows = rows.to(layer.W_k.weight.device)
    layer.W_k = _keep_rows(layer.W_k, rows, 0)  # (world * Dh, kdim)
    layer.W_v = _keep_rows(layer.W_v, rows, 0)  # (world * Dh, vdim)
    layer.num_kv_heads = world


def _check(layer, mesh):
    """The layer and the mesh ``tensor_parallel`` can split it over:
    returns (world, rank)."""
    if not isinstance(layer, MultiHeadAttention):
        raise TypeError(f"layer must be a mha.MultiHeadAttention; got "
                        f"{type(layer).__name__}")
    if type(layer)._project is not MultiHeadAttention._project:
        raise TypeError(f"tensor_parallel splits the projections of "
                        f"MultiHeadAttention; {type(layer).__name__} "
                        f"projects in its own way (_project)")
    if layer.tp_world is not None:
        raise ValueError(f"layer is already split over {layer.tp_world} "
                         f"devices by tensor_parallel")
    from torch.distributed.device_mesh import DeviceMesh

    if not isinstance(mesh, DeviceMesh) or mesh.ndim != 1:
        raise TypeError(f"mesh must be a 1-D DeviceMesh, e.g. "
                        f"torch.distributed.device_mesh.init_device_mesh("
                        f"'cpu', (world,)); got {type(mesh).__name__}")
    device = layer.W_q.weight.device
    if device.type != mesh.device_type:
        raise ValueError(f"layer is on {device} but mesh on "
                         f"{mesh.device_type}: move it with "
                         f"layer.to({mesh.device_type!r}) first")
    return mesh.size(), mesh.get_coordinate()[0]  # (rank within the mesh)
