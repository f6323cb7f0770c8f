"""Chapter 13's benchmarks: the book's implementations timed against sequence length, and the peak
memory of the explicit, fused and blockwise attention paths.

Shape legend: B batch, L sequence length (self-attention, Lq = Lk = L), D d_model, H heads,
Dh d_head = D / H.

    python benchmarks/bench_fast_attention.py                      # forward time, best device
    python benchmarks/bench_fast_attention.py --device cuda --dtype bfloat16 --seq 1024 4096
    python benchmarks/bench_fast_attention.py --memory             # peak memory against L

Every implementation holds the same weights and is checked against the package's explicit path
before it is timed. Each repeat runs all of them once, in an order that rotates from repeat to
repeat; the medians are reported with TFLOP/s, the ratio against nn.MultiheadAttention and the
SDPA kernel each row ran (``mha.sdpa_backend``).
"""

import argparse
import math

import torch
from bench_attention import device_name, time_interleaved
from torch import nn

import mha


def folded_forward(layer, x):
    """Chapter 05's batched code: heads folded into the batch axis, (B * H, L, Dh)."""
    B, L, D = x.shape
    H, Dh = layer.num_heads, layer.d_head

    def fold(t):  # (B, L, D) -> (B, L, H, Dh) -> (B, H, L, Dh) -> (B * H, L, Dh)
        return t.view(B, L, H, Dh).transpose(1, 2).reshape(B * H, L, Dh)

    q, k, v = fold(layer.W_q(x)), fold(layer.W_k(x)), fold(layer.W_v(x))
    weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(Dh), dim=-1)  # (B * H, L, L)
    out = (weights @ v).view(B, H, L, Dh)  # (B * H, L, Dh) -> (B, H, L, Dh)
    return layer.W_o(out.transpose(1, 2).reshape(B, L, D))  # -> (B, L, D)


def einsum_forward(layer, x):
    """Chapter 05's einsum version: b batch, h head, q/k positions, d d_model, e d_head."""
    H, Dh, D = layer.num_heads, layer.d_head, layer.d_model
    W_q, W_k, W_v = (w.weight.view(H, Dh, D) for w in (layer.W_q, layer.W_k, layer.W_v))
    q = torch.einsum("bqd,hed->bhqe", x, W_q)  # (B, L, D) -> (B, H, L, Dh)
    k = torch.einsum("bkd,hed->bhke", x, W_k)
    v = torch.einsum("bkd,hed->bhke", x, W_v)
    scores = torch.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(Dh)  # (B, H, L, L)
    heads = torch.einsum("bhqk,bhke->bhqe", scores.softmax(dim=-1), v)  # (B, H, L, Dh)
    return torch.einsum("bhqe,ohe->bqo", heads, layer.W_o.weight.view(D, H, Dh))  # (B, L, D)


def blockwise_forward(layer, x, block_size=64):
    """The package's projections around mha.blockwise_attention."""
    q, k, v = (mha.split_heads(w(x), layer.num_heads)  # (B, L, D) -> (B, H, L, Dh)
               for w in (layer.W_q, layer.W_k, layer.W_v))
    out = mha.blockwise_attention(q, k, v, block_size=block_size)  # (B, H, L, Dh)
    return layer.W_o(mha.merge_heads(out))  # (B, H, L, Dh) -> (B, L, D)


def implementations(d_model, num_heads, device, dtype):
    """name -> (module, call(module, x) -> output), all holding the same weights."""
    torch.manual_seed(0)
    loop = mha.MultiHeadAttentionLoop(d_model, num_heads).to(device, dtype).eval()
    layer = loop.to_batched().eval()
    ref = nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True,
                                device=device, dtype=dtype).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([layer.W_q.weight, layer.W_k.weight,
                                            layer.W_v.weight]))
        ref.out_proj.weight.copy_(layer.W_o.weight)
    return {
        "loop (04)": (loop, lambda m, x: m(x)[0]),
        "folded batch (05)": (layer, folded_forward),
        "einsum (05)": (layer, einsum_forward),
        "mha need_weights=True": (layer, lambda m, x: m(x, need_weights=True)[0]),
        "mha fused": (layer, lambda m, x: m(x)[0]),
        "nn.MultiheadAttention": (ref, lambda m, x: m(x, x, x, need_weights=False)[0]),
        "blockwise_attention": (layer, blockwise_forward),
    }


def layer_flops(B, L, D):
    """Forward FLOPs of one self-attention layer: projections 4 * 2*B*L*D*D, Q K^T and
    weights @ V 2 * 2*B*L*L*D (a multiply-add = 2 FLOPs)."""
    return 8 * B * L * D * D + 4 * B * L * L * D


def speed(args):
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    impls = implementations(args.d_model, args.heads, device, dtype)
    print(f"device: {device_name(device)} | dtype: {args.dtype} | torch {torch.__version__}")
    print(f"B={args.batch} d_model={args.d_model} heads={args.heads} | forward, no grad, eval | "
          f"median of {args.repeats} interleaved repeats of {args.inner} call(s)")
    tol = 1e-4 if dtype == torch.float32 else 5e-2
    print(f"\n{'implementation':24s} {'L':>6s} {'ms':>10s} {'TFLOP/s':>9s} "
          f"{'vs torch':>9s}  SDPA kernel")
    for L in args.seq:
        x = torch.randn(args.batch, L, args.d_model, device=device, dtype=dtype)
        with torch.no_grad():
            reference = impls["mha need_weights=True"][1](impls["mha need_weights=True"][0], x)
            backends = {}
            for name, (module, call) in impls.items():
                out = call(module, x)
                if not torch.allclose(out.float(), reference.float(), atol=tol, rtol=tol):
                    raise SystemExit(f"{name} disagrees with the explicit path at L={L}")
                backends[name] = mha.sdpa_backend(call, module, x)
        times = time_interleaved(impls, x, False, args.repeats, args.warmup, device,
                                 inner=args.inner)
        flops = layer_flops(args.batch, L, args.d_model)
        for name, t in times.items():
            print(f"{name:24s} {L:6d} {t * 1e3:10.3f} {flops / t / 1e12:9.3g} "
                  f"{t / times['nn.MultiheadAttention']:8.2f}x  {backends[name]}")
        print()
    print("FLOPs per layer forward: 8*B*L*D^2 (projections) + 4*B*L^2*D (attention), the same "
          "for every row; 'vs torch' = time / nn.MultiheadAttention's time in the same run")


def memory(args):
    """Peak memory of one attention call (B, H, L, Dh) against L: explicit, fused, blockwise."""
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    B, H, Dh, block = 1, args.heads, args.d_model // args.heads, args.block_size
    size = torch.finfo(dtype).bits // 8
    lengths = args.seq
    paths = {"explicit": mha.scaled_dot_product_attention,
             "fused (SDPA)": torch.nn.functional.scaled_dot_product_attention,
             "blockwise": lambda q, k, v: mha.blockwise_attention(q, k, v, block_size=block)}
    print(f"device: {device_name(device)} | dtype: {args.dtype} | torch {torch.__version__}")
    print(f"B={B} H={H} Dh={Dh} block_size={block} | forward, no grad | mha.peak_memory "
          f"({'torch.cuda.max_memory_allocated' if device.type == 'cuda' else 'profiler'})")
    print(f"\n{'L':>6s} {'path':>13s} {'peak MiB':>10s} {'/ (H*L*L)':>10s} "
          f"{'/ (H*L*block)':>14s}  SDPA kernel")
    for L in lengths:
        q, k, v = (torch.randn(B, H, L, Dh, device=device, dtype=dtype) for _ in range(3))
        for name, fn in paths.items():
            with torch.no_grad():
                _, peak = mha.peak_memory(fn, q, k, v)
                kernel = mha.sdpa_backend(fn, q, k, v)
            print(f"{L:6d} {name:>13s} {peak / 2**20:10.2f} {peak / (H * L * L * size):10.3f} "
                  f"{peak / (H * L * block * size):14.2f}  {kernel}")
        del q, k, v
    print("\n/ (H*L*L): peak over one (H, L, L) matrix of scores in this dtype; "
          "/ (H*L*block): over one block of scores. A path whose peak is O(L * block) keeps the "
          "last column flat as L grows.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default=str(mha.device()))
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--batch", type=int, default=None,
                        help="default: 1 on CPU, 4 on CUDA")
    parser.add_argument("--d-model", type=int, default=None, help="default: 256 CPU, 1024 CUDA")
    parser.add_argument("--heads", type=int, default=None, help="default: 4 CPU, 16 CUDA")
    parser.add_argument("--seq", type=int, nargs="+", default=None,
                        help="sequence lengths (default: 128..1024 CPU, 512..8192 CUDA)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--inner", type=int, default=None, help="calls per sample (1 CPU, 5 CUDA)")
    parser.add_argument("--block-size", type=int, default=64, help="blockwise block (--memory)")
    parser.add_argument("--memory", action="store_true", help="peak memory against L")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for torch (default: torch's own choice)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    cuda = args.device.startswith("cuda")
    defaults = {"batch": (1, 4), "d_model": (256, 1024), "heads": (4, 16), "inner": (1, 5)}
    for name, (cpu_value, cuda_value) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, cuda_value if cuda else cpu_value)
    if args.seq is None:
        if args.memory:
            args.seq = [1024, 2048, 4096, 8192, 16384] if cuda else [512, 1024, 2048, 4096]
        else:
            args.seq = [512, 1024, 2048, 4096, 8192] if cuda else [128, 256, 512, 1024]
    memory(args) if args.memory else speed(args)


if __name__ == "__main__":
    main()
