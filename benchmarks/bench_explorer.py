"""Redraw latency of the attention explorer (chapter 07): 8 heads, 12 tokens, matplotlib Agg.

    python benchmarks/bench_explorer.py [--repeats 20]

Prints the median time of one redraw (recompute with the package + heatmaps + PNG, as the widget
does it) over ``repeats`` changes of a control, for three kinds of change:

* seed (likewise temperature, mask, d_model, num_kv_heads): the grid keeps its shape, so the
  heatmaps are refilled in place on a figure drawn once (the common case, target <= 150 ms);
* sentence (same length): new tick labels, so the figure's text is drawn again;
* num_heads (8 <-> 4, likewise seq_len): a new grid, built with ``mha.viz.plot_heads``.
"""

import argparse
import os

os.environ.setdefault("MPLBACKEND", "Agg")

from mha.widgets import measure_latency


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"explorer redraw, 8 heads x 12 tokens, median of {args.repeats} changes:")
    for change, what in (("seed", "refill in place"), ("sentence", "new tick labels"),
                         ("num_heads", "new figure (plot_heads)")):
        repeats = args.repeats if change == "seed" else max(3, args.repeats // 4)
        seconds = measure_latency(repeats, change=change)
        print(f"  change {change:<9} ({what:<24}, {repeats:2d} redraws): {seconds * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
