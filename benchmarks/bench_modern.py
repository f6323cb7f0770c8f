"""Time what Part V adds to RotaryMultiHeadAttention against today's layer, in one run, interleaved.

Shape legend: B batch, T sequence length (self-attention, causal, Lq = Lk = T), D d_model,
H heads, Dh d_head = D / H, w the sliding window.

    python benchmarks/bench_modern.py                          # B=4 T=512 D=256 H=8 w=128, CPU
    taskset -c 1 python benchmarks/bench_modern.py --threads 1   # one core of a busy machine

Every row is the fused path (need_weights=False) of a ``RotaryMultiHeadAttention`` holding the
same W_q, W_k, W_v, W_o, called with ``is_causal=True``: today's layer (no option), a second copy
of it (its ratio shows how far two identical layers drift apart in one run: the noise), then
``window=w``, ``qk_norm``, ``gate``, ``sinks`` and all four. Each repeat runs every row once, in an
order that rotates from repeat to repeat; the medians and their ratios to today's layer are
reported, next to the ratio of useful FLOPs (the gate's extra matmul is work no implementation
can skip; the window skips keys). The goal is at most 1.10x for ``window``, ``qk_norm`` and
``gate``.
"""

import argparse

import torch
from bench_attention import device_name, time_interleaved

import mha

GOAL = 1.10
WITH_GOAL = ("window", "qk_norm", "gate")


def layers(args, device, dtype):
    """name -> (module, call); all share today's layer's projections."""
    torch.manual_seed(0)
    kw = {"num_kv_heads": args.kv_heads, "device": device, "dtype": dtype}
    today = mha.RotaryMultiHeadAttention(args.d_model, args.heads, **kw)
    variants = {"today (no option)": {}, "today, a second copy": {},
                "window": {"window": args.window}, "qk_norm": {"qk_norm": True},
                "gate": {"gate": True}, "sinks": {"sinks": True},
                "all four": {"window": args.window, "sinks": True, "qk_norm": True,
                             "gate": True}}
    out = {}
    for name, options in variants.items():
        layer = mha.RotaryMultiHeadAttention(args.d_model, args.heads, **kw, **options)
        layer.load_state_dict(today.state_dict(), strict=False)  # the new parameters: their own
        out[name] = (layer, lambda m, x: m(x, is_causal=True)[0])
    return out, variants


def forward_flops(args, options):
    """Useful forward FLOPs of one call (a multiply-add = 2): the projections (the gate's
    included) and the scores and weighted sums over the keys each query sees (causal, or the
    window). RMSNorm, the rotation, the sigmoid and the sinks are left out (O(T D) each)."""
    B, T, D, H = args.batch, args.seq, args.d_model, args.heads
    Dh, Hkv = D // H, args.kv_heads or H
    gate = options.get("gate", False)
    projections = 2 * B * T * D * (H * Dh * (2 + gate) + 2 * Hkv * Dh)  # W_q, W_o, W_g; W_k, W_v
    window = options.get("window") or T
    keys_seen = sum(min(i + 1, window) for i in range(T))
    return projections + 4 * B * H * Dh * keys_seen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=None)
    parser.add_argument("--window", type=int, default=128)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's own choice)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--inner", type=int, default=1, help="calls per timed sample")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    impls, variants = layers(args, device, dtype)
    x = torch.randn(args.batch, args.seq, args.d_model, device=device, dtype=dtype)
    with torch.no_grad():
        backend = mha.sdpa_backend(lambda y: impls["window"][0](y, is_causal=True), x)
    print(f"device: {device_name(device)} | dtype: {args.dtype} | torch {torch.__version__} | "
          f"SDPA backend (window row): {backend}")
    print(f"B={args.batch} T={args.seq} d_model={args.d_model} heads={args.heads} "
          f"kv_heads={args.kv_heads or args.heads} window={args.window} | causal, fused path | "
          f"median of {args.repeats} interleaved repeats of {args.inner} call(s) after "
          f"{args.warmup} warm-up rounds")
    results = {}
    for mode, backward in (("forward (no grad, eval)", False), ("forward+backward", True)):
        results[mode] = time_interleaved(impls, x, backward, args.repeats, args.warmup, device,
                                         inner=args.inner)
    base = "today (no option)"
    print(f"\n{'RotaryMultiHeadAttention':26s}{'FLOPs':>7s}" + "".join(f"{m:>26s}"
                                                                   for m in results))
    worst = {}
    base_flops = forward_flops(args, {})
    for name in impls:
        cells = [f"{forward_flops(args, variants[name]) / base_flops:6.2f}x"]
        for times in results.values():
            ratio = times[name] / times[base]
            if name in WITH_GOAL:
                worst[name] = max(worst.get(name, 0.0), ratio)
            cells.append(f"{times[name] * 1e3:9.2f} ms ({ratio:.2f}x)")
        print(f"{name:26s}{cells[0]:>7s}" + "".join(f"{c:>26s}" for c in cells[1:]))
    verdict = ", ".join(f"{name} {r:.2f}x" for name, r in worst.items())
    ok = all(r <= GOAL for r in worst.values())
    print("\nFLOPs: the useful forward FLOPs (projections, and attention over the keys each query "
          "sees) against today's layer's")
    print(f"ratios: against today's layer in the same run. Goal <= {GOAL:.2f}x for "
          f"{', '.join(WITH_GOAL)} (worst of the two columns: {verdict}): "
          f"{'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
