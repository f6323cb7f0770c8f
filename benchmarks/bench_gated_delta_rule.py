"""Time mha.gated_delta_rule against Hugging Face's torch_chunk_gated_delta_rule, in one run.

Shape legend: B batch, Hk query/key heads, Hv value heads, L length, Dk/Dv features, C chunk.

    python benchmarks/bench_gated_delta_rule.py               # B=2 Hv=8 L=2048 Dk=Dv=64 C=64, CPU
    taskset -c 1 python benchmarks/bench_gated_delta_rule.py --threads 1   # one core

(a) The chunked form (``chunk_size=C``) against ``torch_chunk_gated_delta_rule`` of
``transformers.models.qwen3_5.modeling_qwen3_5`` (the fallback Qwen3.5 runs without the
flash-linear-attention kernels), on the same numbers: each gets its own layout, (B, H, L, D) for
mha and (B, L, H, D) for HF, made before timing. Forward only (no autograd), interleaved: every
repeat runs both once, in an order that alternates; the minimum of each is kept (a shared machine
only ever adds time). The goal is at most 1.0x HF's time.

(b) The recurrence (``chunk_size=None``, ``delta_rule_step`` token by token) against the chunked
form, across lengths: what the chunks buy.

(c) With ``--kimi``: one decay per key feature (Kimi Delta Attention), the chunked form against
``chunk_kimi_delta_attention`` of ``transformers.models.kimi_linear`` and against the scalar
decay (no goal: Kimi's reference inverts each chunk's triangle row by row in Python).
"""

import argparse
import time

import torch
import torch.nn.functional as F
from bench_attention import device_name

import mha

GOAL = 1.0


def make_inputs(B, Hk, Hv, L, Dk, Dv, dtype, seed=0):
    """Unit-norm q, k (as the layers make them), v, decay <= 0, beta in (0, 1)."""
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, Hk, L, Dk, generator=g), dim=-1).to(dtype)
    k = F.normalize(torch.randn(B, Hk, L, Dk, generator=g), dim=-1).to(dtype)
    v = torch.randn(B, Hv, L, Dv, generator=g).to(dtype)
    decay = -F.softplus(torch.randn(B, Hv, L, generator=g)) * 0.1
    beta = torch.rand(B, Hv, L, generator=g)
    return q, k, v, decay, beta


def time_min(calls, repeats, warmup):
    """Minimum seconds per call of each of ``calls`` (name -> function), interleaved."""
    names = list(calls)
    times = {name: [] for name in names}
    with torch.inference_mode():
        for _ in range(warmup):
            for name in names:
                calls[name]()
        for r in range(repeats):
            for name in (names if r % 2 == 0 else names[::-1]):
                start = time.perf_counter()
                calls[name]()
                times[name].append(time.perf_counter() - start)
    return {name: min(t) for name, t in times.items()}


def against_hf(args, dtype):
    from transformers.models.qwen3_5.modeling_qwen3_5 import torch_chunk_gated_delta_rule

    B, Hk, Hv, L, D, C = args.batch, args.key_heads, args.heads, args.seq, args.d_head, args.chunk
    q, k, v, decay, beta = make_inputs(B, Hk, Hv, L, D, D, dtype)
    hf_args = [x.transpose(1, 2).contiguous() for x in (q, k, v, decay, beta)]  # (B, L, H, ...)
    calls = {
        "mha.gated_delta_rule (chunked)":
            lambda: mha.gated_delta_rule(q, k, v, decay, beta, chunk_size=C),
        "HF torch_chunk_gated_delta_rule":
            lambda: torch_chunk_gated_delta_rule(*hf_args, chunk_size=C,
                                                 output_final_state=True),
    }
    with torch.inference_mode():  # the same numbers first
        ours, S = calls["mha.gated_delta_rule (chunked)"]()
        theirs, S_hf = calls["HF torch_chunk_gated_delta_rule"]()
    diff = max(float((ours - theirs.transpose(1, 2)).abs().max()), float((S - S_hf).abs().max()))
    times = time_min(calls, args.repeats, args.warmup)
    print(f"\n(a) B={B} Hk={Hk} Hv={Hv} L={L} Dk=Dv={D} chunk={C} | min of {args.repeats} "
          f"interleaved repeats after {args.warmup} warm-up rounds | max |difference| {diff:.1e}")
    base = times["HF torch_chunk_gated_delta_rule"]
    for name, t in times.items():
        print(f"{name:34s}{t * 1e3:10.2f} ms  ({t / base:.2f}x)")
    ratio = times["mha.gated_delta_rule (chunked)"] / base
    print(f"ratio: mha / HF in the same run = {ratio:.2f}x. Goal <= {GOAL:.1f}x: "
          f"{'met' if ratio <= GOAL else 'NOT met'}")
    return ratio


def against_kimi(args, dtype):
    from transformers.models.kimi_linear.modeling_kimi_linear import chunk_kimi_delta_attention

    B, H, L, D, C = args.batch, args.heads, args.seq, args.d_head, args.chunk
    q, k, v, decay, beta = make_inputs(B, H, H, L, D, D, dtype)
    channel = decay[..., None] * torch.rand(D, generator=torch.Generator().manual_seed(1)) * 2
    hf_args = [x.transpose(1, 2).contiguous() for x in (q, k, v, channel, beta)]
    times = time_min({
        "mha, one decay per key feature": lambda: mha.gated_delta_rule(q, k, v, channel, beta,
                                                                         chunk_size=C),
        "mha, one decay per position": lambda: mha.gated_delta_rule(q, k, v, decay, beta,
                                                                      chunk_size=C),
        "HF chunk_kimi_delta_attention": lambda: chunk_kimi_delta_attention(
            *hf_args, chunk_size=C, output_final_state=True),
    }, args.short_repeats, 1)
    print(f"\n(c) B={B} H={H} L={L} Dk=Dv={D} chunk={C} | min of {args.short_repeats} "
          f"interleaved repeats")
    base = times["HF chunk_kimi_delta_attention"]
    for name, t in times.items():
        print(f"{name:34s}{t * 1e3:10.2f} ms  ({t / base:.2f}x)")


def recurrent_vs_chunked(args, dtype):
    B, Hk, Hv, D, C = args.batch, args.key_heads, args.heads, args.d_head, args.chunk
    print(f"\n(b) B={B} Hk={Hk} Hv={Hv} Dk=Dv={D}: the recurrence (token by token) against the "
          f"chunked form (chunk {C}), min of {args.short_repeats} interleaved repeats")
    print(f"{'L':>6s}{'recurrent':>14s}{'chunked':>14s}{'recurrent/chunked':>20s}")
    for L in args.lengths:
        inputs = make_inputs(B, Hk, Hv, L, D, D, dtype)
        times = time_min({
            "recurrent": lambda x=inputs: mha.gated_delta_rule(*x),
            "chunked": lambda x=inputs: mha.gated_delta_rule(*x, chunk_size=C),
        }, args.short_repeats, 1)
        print(f"{L:6d}{times['recurrent'] * 1e3:11.2f} ms{times['chunked'] * 1e3:11.2f} ms"
              f"{times['recurrent'] / times['chunked']:19.1f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=8, help="value heads Hv")
    parser.add_argument("--key-heads", type=int, default=8, help="query/key heads Hk")
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--d-head", type=int, default=64, help="Dk = Dv")
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's own choice)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--lengths", type=int, nargs="*", default=[64, 256, 1024, 2048])
    parser.add_argument("--short-repeats", type=int, default=5, help="repeats of part (b)")
    parser.add_argument("--skip-hf", action="store_true", help="only part (b)")
    parser.add_argument("--kimi", action="store_true", help="part (c) too")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    print(f"device: {device_name(torch.device('cpu'))} | dtype: {args.dtype} | "
          f"torch {torch.__version__}")
    if not args.skip_hf:
        against_hf(args, dtype)
    if args.lengths:
        recurrent_vs_chunked(args, dtype)
    if args.kimi:
        against_kimi(args, dtype)


if __name__ == "__main__":
    main()
