"""Attention split over processes started by ``torchrun``, checked against one device.

Every rank builds the same seeded inputs, runs each scheme of ``mha.distributed`` on its share
and compares its share of the output with the one-device result: causal ring attention
(contiguous and zigzag blocks) and DeepSpeed-Ulysses against ``F.scaled_dot_product_attention``
on the whole sequence, tensor parallelism (``tensor_parallel``) of a seeded
``mha.MultiHeadAttention`` against the same layer unsplit. Rank 0 prints one line per scheme:
the largest error over every rank, the bytes each rank sent (measured by
``mha.distributed.traffic()``, with ``layout.sent_bytes``'s formula beside it; "not counted"
when the scheme's communication does not go through ``traffic()``'s wrappers, as the
all-reduce inside ``tensor_parallel``'s DTensors) and the slowest rank's time. The exit status
is 1 when a scheme's error exceeds --atol, or its counted bytes differ from the formula, on any
rank; 0 otherwise.

One machine, two processes (CPU: gloo; one GPU a process: NCCL):

    torchrun --nproc-per-node 2 scripts/torchrun_attention.py

Two machines, one process each (HOST is the address of the first machine, reachable from the
second; run the first line on it, the second on the other machine):

    torchrun --nnodes 2 --nproc-per-node 1 --node-rank 0 --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29500 scripts/torchrun_attention.py
    torchrun --nnodes 2 --nproc-per-node 1 --node-rank 1 --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29500 scripts/torchrun_attention.py

(``--nproc-per-node N`` on each machine gives 2N ranks.) torchrun sets ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``, which this script reads.
Options: ``--seq-len`` (a multiple of 2 x the ranks), ``--heads`` and ``--kv-heads`` (the
ranks divide the query heads, and divide or are a multiple of the key/value heads),
``--d-head``, ``--batch``, ``--atol``; ``python scripts/torchrun_attention.py --help``.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import mha  # noqa: E402
import mha.distributed as md  # noqa: E402
from mha.distributed import layout  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=int, default=256, help="whole sequence L")
    parser.add_argument("--heads", type=int, default=8, help="query heads H")
    parser.add_argument("--kv-heads", type=int, default=2, help="key/value heads Hkv")
    parser.add_argument("--d-head", type=int, default=16, help="features of a head")
    parser.add_argument("--batch", type=int, default=2, help="batch size B")
    parser.add_argument("--atol", type=float, default=None,
                        help="largest error allowed (default 1e-5 on CPU, 2e-5 on GPU)")
    return parser.parse_args(argv)


def init():
    """The process group from torchrun's environment: (rank, world, device)."""
    missing = [name for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                 "MASTER_PORT") if name not in os.environ]
    if missing:
        sys.exit(f"{', '.join(missing)} not set: start this script with torchrun, e.g. "
                 f"torchrun --nproc-per-node 2 {sys.argv[0]}")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available() and local_rank < torch.cuda.device_count():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size(), device


def inputs(args, device):
    """The whole sequence, the same on every rank: q (B, H, L, Dh), k, v (B, Hkv, L, Dh)."""
    g = torch.Generator().manual_seed(0)
    shapes = [(args.batch, h, args.seq_len, args.d_head)
              for h in (args.heads, args.kv_heads, args.kv_heads)]
    return [torch.randn(s, generator=g).to(device) for s in shapes]


def one_device(q, k, v):
    """Causal attention on the whole sequence: (B, H, L, Dh)."""
    G = q.size(1) // k.size(1)
    return F.scaled_dot_product_attention(q, k.repeat_interleave(G, 1),
                                          v.repeat_interleave(G, 1), is_causal=True)


def sequence_schemes(args, rank, world, device):
    """Ring (contiguous, zigzag) and Ulysses: (name, scheme, run, this rank's expected rows)."""
    q, k, v = inputs(args, device)
    reference = one_device(q, k, v)  # (B, H, L, Dh)
    calls = [("ring", "ring", "contiguous",
              lambda *x: md.ring_attention(*x, is_causal=True)),
             ("ring zigzag", "zigzag", "zigzag",
              lambda *x: md.ring_attention(*x, is_causal=True, layout="zigzag")),
             ("ulysses", "ulysses", "contiguous",
              lambda *x: md.ulysses_attention(*x, is_causal=True))]
    for name, scheme, order, fn in calls:
        rows = layout.positions_of_rank(rank, world, args.seq_len, order)
        mine = [x[:, :, rows] for x in (q, k, v)]  # (B, heads, Lr, Dh)
        yield name, scheme, (lambda fn=fn, mine=mine: fn(*mine)), reference[:, :, rows]


def tensor_scheme(args, world, device):
    """Tensor parallelism of a seeded mha.MultiHeadAttention: the same
    (name, scheme, run, expected); every rank gets the whole output (B, L, D)."""
    torch.manual_seed(0)  # the same layer on every rank
    d_model = args.heads * args.d_head
    layer = mha.MultiHeadAttention(d_model, args.heads, num_kv_heads=args.kv_heads).to(device)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(args.batch, args.seq_len, d_model, generator=g).to(device)
    with torch.no_grad():
        reference = layer(x, is_causal=True)[0]  # one device, before the split
        md.tensor_parallel(layer, init_device_mesh(device.type, (world,)))

    def run():
        with torch.no_grad():
            return layer(x, is_causal=True)[0]

    yield "tensor", "tensor", run, reference


def measure(run, expected, device):
    """(largest error over the ranks, bytes this rank sent or None when nothing was
    counted, slowest rank's time in s)."""
    dist.barrier()
    start = time.perf_counter()
    with md.traffic() as t:
        out = run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - start
    error = (out - expected).abs().max().item()
    worst = torch.tensor([error, elapsed], device=device, dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return worst[0].item(), (t.sent_bytes if t.calls else None), worst[1].item()


def main(argv=None):
    args = parse_args(argv)
    rank, world, device = init()
    atol = args.atol if args.atol is not None else 1e-5 if device.type == "cpu" else 2e-5
    size = {"seq_len": args.seq_len, "d_model": args.heads * args.d_head,
            "num_heads": args.heads, "num_kv_heads": args.kv_heads, "batch": args.batch,
            "dtype_bytes": 4}
    failed = False
    schemes = [*sequence_schemes(args, rank, world, device),
               *tensor_scheme(args, world, device)]
    for name, scheme, run, expected in schemes:
        error, sent, seconds = measure(run, expected, device)
        formula = layout.sent_bytes(scheme, world=world, **size)
        # the same verdict on every rank; bytes not counted (None) are not compared
        ok = error <= atol and sent in (None, formula)
        failed |= not ok
        counted = "not counted by traffic()" if sent is None else f"{sent} bytes/rank"
        if rank == 0:
            print(f"{name:<12} {'ok' if ok else 'MISMATCH':<8} max error {error:.1e} "
                  f"(atol {atol:.0e})  sent {counted} (formula {formula})  "
                  f"{seconds * 1e3:.1f} ms  [{world} ranks, {device.type}]", flush=True)
    dist.barrier()  # rank 0 has printed before any rank exits (torchrun then stops all)
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
