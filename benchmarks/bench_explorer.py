"""Redraw latency of the attention explorer (chapter 07) in Jupyter: 8 heads, 12 tokens.

    python benchmarks/bench_explorer.py [--repeats 20]

Prints, for every control, the median time of one redraw over ``repeats`` changes of it, Python
side: the change reaches the widget, the coupled knobs are kept valid, ``explore_once``
recomputes with the package and the view receives what the canvas front end draws
(``mha.live``'s front end: a few milliseconds more in the browser). Aim: <= 150 ms for every
control on a 2-core CPU. Prints the device, the torch version and the threads used.
"""

import argparse
import os
import platform

import torch

from mha_book.widgets import measure_latency

CONTROLS = ("num_heads", "num_kv_heads", "seq_len", "sentence", "d_model", "seed",
            "temperature", "mask_kind", "source")


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"device: {cpu_name()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")
    print(f"explorer redraw, 8 heads x 12 tokens (d_model 64), median of {args.repeats} changes:")
    worst = 0.0
    for change in CONTROLS:
        seconds = measure_latency(args.repeats, change=change)
        worst = max(worst, seconds)
        print(f"  {change:<13} {seconds * 1000:8.1f} ms")
    print(f"slowest control: {worst * 1000:.1f} ms ({'within' if worst <= 0.15 else 'OVER'} "
          f"the 150 ms aim)")


if __name__ == "__main__":
    main()
