"""Decoding throughput with and without the key/value cache, at two lengths, in one run.

Shape legend: B batch, T tokens generated, D d_model, H heads, Hkv key/value heads.

    python benchmarks/bench_decode.py                           # T = 64 and 256, B=1, cpu
    python benchmarks/bench_decode.py --device cuda --lengths 256 1024 --batch 8
    python benchmarks/bench_decode.py --kv-heads 2              # grouped-query layers

The model is ``mha_book.tiny.TinyEncoderDecoder`` with random weights (speed does not depend on them):
``mha_book.decode.generate(model, src, T, use_cache=...)`` writes T tokens greedily, either feeding
one token per step through a ``KVCache`` per layer, or re-running the decoder over the whole
prefix at every step. Each repeat runs both, in alternating order, so drifts in a shared
machine's speed hit both alike; medians are reported, with the speed-up of the cache.
"""

import argparse
import statistics
import time

import torch
from bench_attention import device_name, sync

import mha
import mha_book
from mha_book.decode import generate


def build(args, device, max_len):
    torch.manual_seed(0)
    model = mha_book.tiny.TinyEncoderDecoder(32, 64, 16, max_len, d_model=args.d_model,
                                        num_heads=args.heads, num_layers=args.layers,
                                        d_ff=4 * args.d_model)
    if args.kv_heads != args.heads:  # grouped-query: every attention layer with Hkv heads
        for parent in list(model.modules()):
            for name, child in parent.named_children():
                if isinstance(child, mha.MultiHeadAttention):
                    setattr(parent, name, mha.MultiHeadAttention(
                        args.d_model, args.heads, num_kv_heads=args.kv_heads))
    return model.to(device).eval()


def time_generate(model, src, length, use_cache, device):
    sync(device)
    start = time.perf_counter()
    tokens, _ = generate(model, src, length, use_cache=use_cache)
    sync(device)
    return time.perf_counter() - start, tokens


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default=str(mha.device()))
    p.add_argument("--lengths", type=int, nargs="+", default=[64, 256])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=None)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    args = p.parse_args(argv)
    args.kv_heads = args.kv_heads or args.heads
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    model = build(args, device, max(args.lengths))
    src = torch.randint(32, (args.batch, 16), device=device)

    print(f"device: {device_name(device)} | torch {torch.__version__} | float32")
    print(f"TinyEncoderDecoder: d_model={args.d_model} heads={args.heads} "
          f"kv_heads={args.kv_heads} layers={args.layers} | B={args.batch} | "
          f"median of {args.repeats} interleaved repeats after 1 warm-up")
    print(f"{'tokens':>6}  {'with cache':>22}  {'without (recompute)':>22}  {'speed-up':>8}")
    for length in args.lengths:
        time_generate(model, src, length, True, device)  # warm-up
        time_generate(model, src, length, False, device)
        times = {True: [], False: []}
        for r in range(args.repeats):
            order = (True, False) if r % 2 == 0 else (False, True)
            results = {}
            for use_cache in order:
                seconds, results[use_cache] = time_generate(model, src, length, use_cache,
                                                            device)
                times[use_cache].append(seconds)
            assert torch.equal(results[True], results[False]), "cache changed the tokens"
        cached, full = (statistics.median(times[k]) for k in (True, False))
        rate = args.batch * length
        print(f"{length:>6}  {cached * 1e3:>9.1f} ms {rate / cached:>7.0f} tok/s  "
              f"{full * 1e3:>9.1f} ms {rate / full:>7.0f} tok/s  {full / cached:>7.1f}x",
              flush=True)


if __name__ == "__main__":
    main()
