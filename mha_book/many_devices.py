"""Chapter 16's runs on several processes.

Each ``*_run`` function runs on every rank under ``mha.distributed.launch``
(it must live in a module, not in the notebook, so that the spawned
processes can import it). Every rank builds the same seeded layer or tensors,
computes the one-device answer itself, then the distributed one, and returns
what the chapter prints: the largest difference, what the rank holds and
what it sent. Tensors stay on the rank; only numbers and lists come back.
"""

import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import mha
from mha import distributed
from mha.distributed import layout

__all__ = ["heads_run", "sequence_run", "balance_run"]


def _device():
    """The rank's device: its own GPU under NCCL, else the CPU."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _communication_counts(run):
    """``run()``'s output and the collectives it issued, {name: count}, as
    DTensor's ``CommDebugMode`` counts them."""
    try:
        from torch.distributed.tensor.debug import CommDebugMode
    except ImportError:  # torch 2.4 keeps it under its private name
        from torch.distributed._tensor.debug import CommDebugMode

    with CommDebugMode() as comm:
        out = run()
    counts = comm.get_comm_counts()  # {the collective's op: how many}
    return out, {str(op).split(".")[-1]: n for op, n in counts.items()}


def heads_run(rank, world, num_heads, num_kv_heads, *, d_model=64, seq_len=12,
              seed=0):
    """Tensor parallelism: one layer's heads split over the ranks."""
    from torch.distributed.device_mesh import init_device_mesh

    device = _device()
    torch.manual_seed(seed)  # the same layer and input on every rank
    layer = mha.MultiHeadAttention(d_model, num_heads,
                                   num_kv_heads=num_kv_heads).to(device)
    x = torch.randn(2, seq_len, d_model, device=device)  # (B, L, D)
    with torch.no_grad():
        one_device = layer(x, is_causal=True)[0]  # (B, L, D)
        mesh = init_device_mesh(device.type, (world,))
        distributed.tensor_parallel(layer, mesh)
        out, calls = _communication_counts(
            lambda: layer(x, is_causal=True)[0])
    local = {name: tuple(_local(getattr(layer, name).weight).shape)
             for name in ("W_q", "W_k", "W_v", "W_o")}
    return {"error": (out - one_device).abs().max().item(),
            "query_heads": layer.num_heads, "kv_heads": layer.num_kv_heads,
            "weights": local, "calls": calls,
            "output_bytes": out.numel() * out.element_size()}


def _local(tensor):
    """A DTensor's shard on this rank (a plain tensor is its own)."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def _rows(x, positions):
    """x (B, H, L, Dh) at the rank's positions: (B, H, len(positions), Dh)."""
    return x[:, :, positions]


def sequence_run(rank, world, num_heads, num_kv_heads, *, seq_len=32,
                 d_head=8, seed=0, dtype=torch.float32):
    """Ring attention (contiguous and zigzag blocks) and Ulysses attention."""
    device = _device()
    g = torch.Generator().manual_seed(seed)  # the same tensors on every rank
    q = torch.randn(2, num_heads, seq_len, d_head, generator=g)
    k, v = (torch.randn(2, num_kv_heads, seq_len, d_head, generator=g)
            for _ in range(2))
    q, k, v = (t.to(device, dtype) for t in (q, k, v))
    group = num_heads // num_kv_heads  # query heads per key/value head
    k_all, v_all = (t.repeat_interleave(group, dim=1) for t in (k, v))
    results = {}
    for name, fn, layout_name in (
            ("ring", distributed.ring_attention, "contiguous"),
            ("zigzag", distributed.ring_attention, "zigzag"),
            ("ulysses", distributed.ulysses_attention, "contiguous")):
        mine = layout.positions_of_rank(rank, world, seq_len, layout_name)
        for causal in (False, True):
            full = F.scaled_dot_product_attention(
                q, k_all, v_all, is_causal=causal)[:, :, mine]  # (B, H, Lr, Dh)
            blocks = [_rows(t, mine) for t in (q, k, v)]
            kwargs = {"layout": layout_name} if name == "zigzag" else {}
            with distributed.traffic() as sent:
                out = fn(*blocks, is_causal=causal, **kwargs)
            results[name, causal] = {
                "error": (out.float() - full.float()).abs().max().item(),
                "sent_bytes": sent.sent_bytes,
                "blocks": (sent.blocks_computed, sent.blocks_skipped)}
    return results


def balance_run(rank, world, *, seq_len=8192, num_heads=4, d_head=64, seed=0,
                repeats=5):
    """Causal ring attention's work on this rank, with contiguous and with
    zigzag blocks: the blocks it computed and the CPU seconds its attention
    took (CPU time, not wall time: a rank waiting for a neighbour uses none;
    the least of ``repeats`` runs, after one to warm up)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, num_heads, seq_len, d_head, generator=g)
               for _ in range(3))
    work = {}
    for name in ("contiguous", "zigzag"):
        mine = layout.positions_of_rank(rank, world, seq_len, name)
        blocks = [_rows(t, mine).contiguous() for t in (q, k, v)]
        seconds = []
        for _ in range(repeats + 1):
            dist.barrier()
            start = time.thread_time()
            with distributed.traffic() as sent:
                distributed.ring_attention(*blocks, is_causal=True,
                                           layout=name)
            seconds.append(time.thread_time() - start)
        work[name] = {"cpu_seconds": min(seconds[1:]),
                      "blocks": sent.blocks_computed}
    return work
