"""Chapter 13's live figure: the online softmax, one block of keys at a time.

``online_softmax()``: one query and 12 keys (d_k = 16) with one-number values (seeded N(0, 1)
draws), scores q . k / sqrt(16). The keys are folded in blocks of ``block_size`` with
``mha.online_softmax_step``, exactly as ``mha.blockwise_attention`` does; the step control walks
through the blocks. The bars are the weights exp(s_j - m) / ℓ of the keys seen so far (the
current block highlighted; a key not yet folded in has no bar and reads "not yet", not 0), the
plots the running maximum m and running sum ℓ after each block, and the running output acc / ℓ
against the full softmax's output: after the last block they are equal, for every block size.
The running lines stop at the current block (None beyond it), as the bars do; the plots' axes
span the whole path, so they stay put from block to block.

Each ``*_state`` function is the figure's data for one setting of the controls (pure torch); the
figure lists it for every setting (``mha.live.figure``).
"""

import math
from functools import lru_cache

import torch

from mha.blockwise import blockwise_attention, online_softmax_step
from mha.live.figure import Figure, View, bars, plot, slider, steps, table

from ._registry import live_figure

__all__ = ["BLOCK_SIZES", "N_KEYS", "fold", "online_softmax", "online_state", "problem"]

N_KEYS, D_K = 12, 16
#: the rescale's entry on the first block: there is no old maximum to rescale from (the readout
#: says why: m_old = -inf); short, so that the table keeps its width from block to block
FIRST_RESCALE = "\u2014"
BLOCK_SIZES = (1, 2, 3, 4, 6, 12)


@lru_cache(maxsize=1)
def problem():
    """q (1, 16), k (12, 16), v (12, 1), always the same draw; and the scaled scores (1, 12)."""
    gen = torch.Generator().manual_seed(104)
    q = torch.randn(1, D_K, generator=gen) * 1.5
    k = torch.randn(N_KEYS, D_K, generator=gen)
    v = torch.randn(N_KEYS, 1, generator=gen)
    return q, k, v, q @ k.T / math.sqrt(D_K)  # (1, 16) @ (16, 12) -> (1, 12)


@lru_cache(maxsize=None)
def fold(block_size):
    """The online-softmax state after each block: a list of (running_max (1,), running_sum (1,),
    acc (1, 1)), one per block, with ``mha.online_softmax_step``."""
    _, _, v, s = problem()
    state = (torch.full((1,), -math.inf), torch.zeros(1), torch.zeros(1, 1))
    after = []
    for start in range(0, N_KEYS, block_size):
        state = online_softmax_step(*state, s[:, start:start + block_size],
                                    v[start:start + block_size])
        after.append(state)
    return after


def _keys(current):
    """The keys of a block in words: "key 4" or "keys 3..5"."""
    if len(current) == 1:
        return f"key {current[0]}"
    return f"keys {current[0]}..{current[-1]}"


def online_state(block_size, block):
    q, k, v, s = problem()
    after = fold(block_size)
    n = len(after)
    b = min(block, n - 1)  # past the last block: the final state
    m, ell, acc = (float(x.reshape(-1)[0]) for x in after[b])
    seen = (b + 1) * block_size
    full = float(torch.softmax(s, -1) @ v)
    blockwise = float(blockwise_attention(q, k, v, block_size=block_size))
    # a key the online softmax has not reached has no weight yet (NaN, drawn "not yet"), not 0
    weights = [math.exp(float(s[0, j]) - m) / ell if j < seen else math.nan
               for j in range(N_KEYS)]
    current = list(range(b * block_size, seen))
    m_old = float(after[b - 1][0]) if b else -math.inf
    rescale = math.exp(m_old - m)
    steps_x = list(range(1, n + 1))

    def room(*series):  # headroom above the lines for the legend
        lo = min(min(x) for x in series)
        hi = max(max(x) for x in series)
        return {"y_min": round(lo - 0.05 * (hi - lo + 1e-9), 3),
                "y_max": round(hi + 0.3 * (hi - lo + 1e-9), 3)}

    maxes = [float(a[0]) for a in after]
    sums = [float(a[1]) for a in after]
    outs = [float(a[2].reshape(-1)[0] / a[1]) for a in after]

    def so_far(series):  # a running quantity exists only up to this block (NaN: not drawn)
        return [x if i <= b else math.nan for i, x in enumerate(series)]
    keys = _keys(current)
    # numbers as text with four decimals, as the readout writes the rescale and the output (a
    # number would be shown with two)
    rows = [["keys in this block", keys.split(" ", 1)[1]],
            ["their largest score", f"{float(s[0, current].max()):.4f}"],
            ["running max m", f"{m:.4f}"],
            ["rescale exp(m_old \u2212 m)", f"{rescale:.4f}" if b else FIRST_RESCALE],
            ["running sum \u2113", f"{ell:.4f}"], ["acc", f"{acc:.4f}"],
            ["output acc / \u2113", f"{acc / ell:.4f}"],
            ["full softmax output", f"{full:.4f}"]]
    done = b == n - 1
    folded = {1: "The one block is", 2: "Both blocks are"}.get(n, f"All {n} blocks are")
    left = N_KEYS - seen
    tail = (f" {folded} folded in: acc / \u2113 = {acc / ell:.4f} equals the full "
            f"softmax's {full:.4f}." if done else
            f" Still to come: {left} key{'s' if left > 1 else ''}; the full softmax gives "
            f"{full:.4f}.")
    past = ("" if block < n else f" (block size {block_size} has one block)" if n == 1
            else f" (block size {block_size} has {n} blocks; showing the last)")
    raised = ("the maximum rose, so the old sums were multiplied by "
              f"{rescale:.4f}" if 0 < rescale < 1 else
              "the first block sets the maximum (m_old = \u2212\u221e: nothing to rescale)"
              if b == 0 else
              "the maximum did not change (rescale 1)")
    return {
        "views": {
            "weights": bars(weights, [f"k{j}" for j in range(N_KEYS)], highlight=current,
                            null_label="not yet",
                            caption=f"Block {b + 1} of {n}: exp(s \u2212 m) / \u2113 over the "
                                    + (f"{seen} keys seen" if seen > 1 else "1 key seen")),
            # the axes span the whole path (they stay put from block to block); the lines stop
            # at this block, as the bars do
            "running": plot(steps_x, {"running max m": so_far(maxes),
                                      "running sum \u2113": so_far(sums)},
                            marker=b, x_label="blocks folded in", **room(maxes, sums),
                            y_label="value", caption="Running max and running sum"),
            "output": plot(steps_x, {"output acc / \u2113": so_far(outs),
                                     "full softmax": [full] * n},
                           marker=b, marker_series=[0],  # the full softmax: a target
                           x_label="blocks folded in", y_label="output", **room(outs, [full]),
                           caption="Running output against the full softmax"),
            "numbers": table(["after block " + str(b + 1), "value"], rows)},
        "readout": (f"Block size {block_size}, block {b + 1} of {n}{past}: {keys}; {raised}; "
                    f"m = {m:.3f}, \u2113 = {ell:.3f}, "
                    f"output {acc / ell:.4f}.{tail}"),
        # the block slider runs to this block size's last block; a new block size starts at 0
        "limits": {"block": {"max": n - 1, "reset": "block_size"}},
        "state": {"block_size": block_size, "block": b, "output": acc / ell, "full": full,
                  "blockwise": blockwise, "done": done},
    }


@live_figure
def online_softmax(block_size=3, block=0):
    """Chapter 13: fold the keys into the online softmax block by block."""
    return Figure(
        name="online-softmax", title="The online softmax, one block of keys at a time",
        controls=[slider("block_size", "block size (keys)", BLOCK_SIZES, block_size),
                  steps("block", "block", N_KEYS, block,
                        labels=[str(i + 1) for i in range(N_KEYS)])],
        views=[View("weights", "bars"), View("running", "plot"), View("output", "plot"),
               View("numbers", "table")],
        state_fn=online_state,
        alt="Bars: the weights of the keys seen so far, the current block highlighted; line "
            "plots of the running maximum and running sum after each block, and of the running "
            "output against the full softmax's output, which it reaches at the last block.")
