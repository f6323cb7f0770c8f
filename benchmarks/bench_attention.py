"""Time mha's attention layer against torch.nn.MultiheadAttention, in one run, interleaved.

Shape legend: B batch, T sequence length (self-attention, Lq = Lk = T), D d_model, H heads,
Dh d_head = D / H.

    python benchmarks/bench_attention.py                         # B=4 T=512 D=256 H=8, float32
    python benchmarks/bench_attention.py --device cuda --dtype bfloat16 --seq 2048
    python benchmarks/bench_attention.py --memory                # peak memory, T=8192, CPU
    python benchmarks/bench_attention.py --gpu-flops             # TFLOP/s, bf16, T=4096, CUDA

Every implementation holds the same weights. Each repeat runs all of them once, in an order that
rotates from repeat to repeat, so drifts in the machine's speed hit all alike; the medians are
reported, with ratios against their torch.nn.MultiheadAttention counterpart.
"""

import argparse
import platform
import resource
import statistics
import threading
import time

import torch
import torch.nn.functional as F
from torch import nn

import mha

# bf16 dense peak (TFLOP/s, no sparsity) of the cards we know, matched on the device's name
PEAK_BF16_TFLOPS = [("H100 PCIe", 756), ("H100 NVL", 835), ("H100", 989), ("H200", 989), ("A100", 312)]


class BareSDPA(nn.Module):
    """The least a layer can do: one packed QKV matmul, F.scaled_dot_product_attention, W_o."""

    def __init__(self, layer):
        super().__init__()
        self.num_heads = layer.num_heads
        self.qkv = nn.Linear(layer.d_model, 3 * layer.d_model, bias=layer.W_q.bias is not None)
        self.out = layer.W_o
        with torch.no_grad():
            self.qkv.weight.copy_(torch.cat([layer.W_q.weight, layer.W_k.weight, layer.W_v.weight]))
            if layer.W_q.bias is not None:
                self.qkv.bias.copy_(torch.cat([layer.W_q.bias, layer.W_k.bias, layer.W_v.bias]))
        self.qkv.to(layer.W_q.weight)

    def forward(self, x):
        B, T, D = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.num_heads, D // self.num_heads)  # (B, T, 3, H, Dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (B, T, 3, H, Dh) -> 3 x (B, H, T, Dh)
        y = F.scaled_dot_product_attention(q, k, v)  # (B, H, T, Dh)
        return self.out(y.transpose(1, 2).reshape(B, T, D))  # (B, H, T, Dh) -> (B, T, D)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        model = platform.processor() or "unknown CPU"
    return f"{model}, {torch.get_num_threads()} threads"


def sdpa_backend(layer, x):
    """The SDPA kernel that the layer's call runs (``mha.sdpa_backend``, without autograd)."""
    with torch.no_grad():
        return mha.sdpa_backend(layer, x)


def implementations(args, device, dtype):
    """name -> (module, call(module, x) -> output); all hold the same weights."""
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(args.d_model, args.heads, batch_first=True, bias=True,
                                device=device, dtype=dtype)
    layer = mha.MultiHeadAttention.from_torch(ref)
    loop = mha.MultiHeadAttentionLoop(args.d_model, args.heads).to(device, dtype)
    return {
        "mha fused (need_weights=False)": (layer, lambda m, x: m(x)[0]),
        "mha weights (need_weights=True)": (layer, lambda m, x: m(x, need_weights=True)[0]),
        "torch fused (need_weights=False)": (ref, lambda m, x: m(x, x, x, need_weights=False)[0]),
        "torch weights (per head)": (ref, lambda m, x: m(x, x, x, need_weights=True,
                                                        average_attn_weights=False)[0]),
        "mha loop": (loop, lambda m, x: m(x)[0]),
        "bare SDPA layer": (BareSDPA(layer), lambda m, x: m(x)),
    }


def time_interleaved(impls, x, backward, repeats, warmup, device, inner=1):
    """Median seconds per call of each implementation, alternating them on every repeat.

    Each sample times ``inner`` calls back to back: on CUDA with CUDA events, so that the GPU's
    time is measured and Python's launch overhead overlaps with the kernels as in real use.
    """
    grad = torch.randn_like(x)
    names = list(impls)
    times = {name: [] for name in names}

    def once(module, call):
        if backward:
            module.zero_grad(set_to_none=True)
            call(module, x).backward(grad)
        else:
            with torch.no_grad():
                call(module, x)

    def run(name):
        module, call = impls[name]
        module.train(backward)
        sync(device)
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                once(module, call)
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1e3 / inner
        start = time.perf_counter()
        for _ in range(inner):
            once(module, call)
        return (time.perf_counter() - start) / inner

    for _ in range(warmup):
        for name in names:
            run(name)
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]  # rotate the order
        for name in order:
            times[name].append(run(name))
    return {name: statistics.median(ts) for name, ts in times.items()}


def benchmark(args):
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    impls = implementations(args, device, dtype)
    x = torch.randn(args.batch, args.seq, args.d_model, device=device, dtype=dtype)
    print(f"device: {device_name(device)} | dtype: {args.dtype} | torch {torch.__version__} | "
          f"SDPA backend (fused path): {sdpa_backend(impls['mha fused (need_weights=False)'][0], x)}")
    print(f"B={args.batch} T={args.seq} d_model={args.d_model} heads={args.heads} | "
          f"median of {args.repeats} interleaved repeats of {args.inner} call(s) after "
          f"{args.warmup} warm-up rounds")
    results = {}
    for mode, backward in (("forward (no grad, eval)", False), ("forward+backward", True)):
        results[mode] = time_interleaved(impls, x, backward, args.repeats, args.warmup, device,
                                         inner=args.inner)
    baseline = {"mha fused (need_weights=False)": "torch fused (need_weights=False)",
                "mha weights (need_weights=True)": "torch weights (per head)",
                "mha loop": "torch fused (need_weights=False)",
                "bare SDPA layer": "torch fused (need_weights=False)"}
    modes = list(results)
    print(f"\n{'implementation':34s}" + "".join(f"{m:>26s}" for m in modes))
    for name in impls:
        cells = []
        for mode in modes:
            t = results[mode][name]
            ratio = f" ({t / results[mode][baseline[name]]:.2f}x)" if name in baseline else ""
            cells.append(f"{t * 1e3:9.2f} ms{ratio:>9s}")
        print(f"{name:34s}" + "".join(f"{c:>26s}" for c in cells))
    print("\nratios: against torch.nn.MultiheadAttention with the same need_weights "
          "(loop and bare SDPA: against torch fused)")
    return results


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def peak_rss_during(fn):
    """(result, peak resident memory above the level at the start, in bytes), sampled every
    0.2 ms in a thread (torch's kernels release the GIL)."""
    start = _rss_bytes()
    peak, done = [start], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss_bytes())
            time.sleep(0.0002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = fn()
    finally:
        done.set()
        sampler.join()
    return result, max(peak[0], _rss_bytes()) - start


def memory(args):
    """Peak memory of the fused path at T=8192: far below one (Lq, Lk) matrix per head."""
    T, D, H, B = 8192, 512, 8, 1
    torch.manual_seed(0)
    layer = mha.MultiHeadAttention(D, H)
    x = torch.randn(B, T, D)
    dense = B * H * T * T * 4
    print(f"device: {device_name(torch.device('cpu'))} | torch {torch.__version__} | "
          f"SDPA backend: {sdpa_backend(layer, x[:, :256])}")
    print(f"B={B} T={T} d_model={D} heads={H}, float32. The (Lq, Lk) weights of all heads "
          f"would take B*H*T*T*4 = {dense / 2**30:.2f} GiB")
    inputs = x.numel() * 4
    with torch.no_grad():
        layer(x[:, :64])  # load the kernels before measuring
        t0 = time.perf_counter()
        out, peak = peak_rss_during(lambda: layer(x))
        t_fwd = time.perf_counter() - t0
    print(f"forward (no grad):  peak +{peak / 2**20:8.1f} MiB above the start "
          f"({peak / dense:.2%} of the dense weights; the output alone is {inputs / 2**20:.0f} MiB)"
          f", {t_fwd:.1f} s")
    del out

    def fwd_bwd():
        layer(x.requires_grad_())[0].sum().backward()

    t0 = time.perf_counter()
    _, peak = peak_rss_during(fwd_bwd)
    print(f"forward+backward:   peak +{peak / 2**20:8.1f} MiB above the start "
          f"({peak / dense:.2%} of the dense weights), {time.perf_counter() - t0:.1f} s")
    print(f"process peak RSS (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f}"
          " MiB in all")


def layer_flops(B, T, D):
    """Forward FLOPs of one self-attention layer (a multiply-add = 2 FLOPs), full (non-causal):
    4 projections 4 * 2*B*T*D*D, scores Q K^T 2*B*T*T*D, weights @ V 2*B*T*T*D.
    The backward pass is counted as 2x the forward (flash attention's recomputation not counted)."""
    return 8 * B * T * D * D + 4 * B * T * T * D


def cuda_ms(fn, repeats, inner=10):
    """Median GPU milliseconds per call of fn, timed with CUDA events over ``inner`` calls."""
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / inner)
    return statistics.median(samples)


def gpu_flops(args):
    """TFLOP/s of the whole layer in bf16 at T=4096, d_model=1024, H=16, on CUDA."""
    if not torch.cuda.is_available():
        raise SystemExit("--gpu-flops needs a CUDA GPU (torch.cuda.is_available() is False)")
    device, dtype = torch.device("cuda"), torch.bfloat16
    B, T, D, H = args.batch, 4096, 1024, 16
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D, H, batch_first=True, bias=True, device=device, dtype=dtype)
    layer = mha.MultiHeadAttention.from_torch(ref)
    x = torch.randn(B, T, D, device=device, dtype=dtype)
    name = torch.cuda.get_device_name(device)
    peak = next((p for key, p in PEAK_BF16_TFLOPS if key in name), None)
    print(f"device: {name} | bf16 | torch {torch.__version__} | "
          f"SDPA backend (fused path): {sdpa_backend(layer, x)}")
    flops = layer_flops(B, T, D)
    print(f"B={B} T={T} d_model={D} heads={H}: forward {flops / 1e9:.0f} GFLOP "
          f"(projections {8 * B * T * D * D / 1e9:.0f}, attention {4 * B * T * T * D / 1e9:.0f}),"
          f" forward+backward {3 * flops / 1e9:.0f} GFLOP")
    impls = {"mha fused": (layer, lambda m, x: m(x)[0]),
             "torch fused": (ref, lambda m, x: m(x, x, x, need_weights=False)[0])}
    for mode, backward, factor in (("forward", False, 1), ("forward+backward", True, 3)):
        times = time_interleaved(impls, x, backward, args.repeats, args.warmup, device,
                                 inner=args.inner)
        for impl, t in times.items():
            tflops = factor * flops / t / 1e12
            share = f"{tflops / peak:.0%} of {peak}" if peak else "n/a"
            print(f"{impl:12s} {mode:17s} {t * 1e3:8.3f} ms  {tflops:6.1f} TFLOP/s  "
                  f"({share} peak bf16 dense)")
    # the ceiling: the attention kernel alone, on (B, H, T, Dh) tensors, without projections
    q, k, v = (torch.randn(B, H, T, D // H, device=device, dtype=dtype, requires_grad=True)
               for _ in range(3))
    g = torch.randn_like(q)
    attention = 4 * B * T * T * D
    for mode, fn, factor in (
        ("forward", lambda: F.scaled_dot_product_attention(q.detach(), k.detach(), v.detach()), 1),
        ("forward+backward", lambda: F.scaled_dot_product_attention(q, k, v).backward(g), 3),
    ):
        ms = cuda_ms(fn, args.repeats, args.inner)
        print(f"{'SDPA alone':12s} {mode:17s} {ms:8.3f} ms  {factor * attention / ms / 1e9:6.1f} "
              f"TFLOP/s  (attention FLOPs only: the kernel's own ceiling at d_head = {D // H})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--device", default=str(mha.device()))
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--inner", type=int, default=None,
                        help="calls per timed sample (default: 1 on CPU, 10 on CUDA)")
    parser.add_argument("--memory", action="store_true",
                        help="peak memory of the fused path at T=8192, d_model=512, H=8 (CPU)")
    parser.add_argument("--gpu-flops", action="store_true",
                        help="TFLOP/s in bf16 at T=4096, d_model=1024, H=16 (CUDA)")
    args = parser.parse_args()
    if args.inner is None:
        args.inner = 10 if (args.gpu_flops or args.device.startswith("cuda")) else 1
    if args.memory:
        memory(args)
    elif args.gpu_flops:
        gpu_flops(args)
    else:
        benchmark(args)


if __name__ == "__main__":
    main()
