"""Chapter 01's live figure: a temperature slider over the weights of one query.

``temperature_bars(scores, tokens)`` shows softmax(scores / T) as bars for a temperature T on a
log slider: evenly spaced on a log scale (about six steps per doubling) from about 0.01 to about
100, with the starting value and T = 1 both exactly on it (``temperatures``), each step labelled
with two significant figures. Every position of the slider is computed here with
``torch.softmax`` and looked up by the page (``mha.live.figure``).
"""

import math

import torch

from mha.live.figure import Figure, View, bars, slider

from ._registry import live_figure

__all__ = ["temperature_bars", "temperature_label", "temperatures"]


def temperatures(value=1.0, lo=-2.0, hi=2.0):
    """Temperatures evenly spaced on a log scale within [10 ** lo, 10 ** hi] (widened to hold
    ``value``): T = r ** k for whole k, so each step multiplies T by the same ratio r. The
    ratio is the one nearest 2 ** (1 / 6) that puts a whole number of steps between 1 and
    ``value``, so both are exactly on the grid (``value`` = 1 or 0.5: r = 2 ** (1 / 6))."""
    octaves = math.log2(value)  # 1 -> value, in doublings
    n = max(1, round(abs(octaves) * 6))  # whole steps between 1 and value
    step = abs(octaves) / n if octaves else 1 / 6  # log2 of the ratio r
    low = min(lo * math.log2(10), octaves) - 1e-9
    high = max(hi * math.log2(10), octaves) + 1e-9
    at = {0: 1.0, round(octaves / step): float(value)}  # exactly, not 2 ** (k * step)
    return [at.get(k, 2 ** (k * step))
            for k in range(math.ceil(low / step), math.floor(high / step) + 1)]


def temperature_label(T):
    """T with two significant figures, trailing zeros kept: 0.010, 0.30, 1.0, 3.0, 11, 97."""
    return f"{T:.0f}" if T >= 9.95 else f"{T:#.2g}"


@live_figure(
    # chapter 01's query "Michael" and its scores
    scores=[2.1, 0.3, -1.2, 5.0, 0.8, -0.5, 1.9, -2.2, 0.1],
    tokens=["Anthony", "Hopkins", "admired", "Michael", "Bay", "as", "a", "great", "director."],
    highlight="Michael", value=0.3)
def temperature_bars(scores, tokens, *, highlight=None, value=1.0,
                     caption="Weights of the query at temperature T = {T}", orange=None):
    """A temperature slider over the weights softmax(scores / T) of one query, drawn as bars;
    ``caption`` may hold ``{T}``; ``highlight`` names a token drawn in the accent colour, and
    the axis label says what that colour means: ``orange`` (default: the token's name)."""
    scores = torch.as_tensor(scores, dtype=torch.float32).detach().cpu().flatten()
    tokens = [str(t) for t in tokens]
    if len(tokens) != len(scores):
        raise ValueError(f"tokens has {len(tokens)} labels but scores has {len(scores)} "
                         f"entries; expected one label per score")
    if not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
        raise ValueError(f"value (the starting temperature) must be a positive number; got "
                         f"{value!r}")
    marked = [j for j, t in enumerate(tokens) if t == highlight]
    x_label = "key token"
    if marked:  # say what the accent colour means (chapter 02 uses it for the largest)
        x_label += " (orange: " + (orange or f'"{highlight}"') + ")"

    def state(temperature):
        T = temperature
        w = torch.softmax(scores / T, dim=-1)  # (n,)
        top, n = int(w.argmax()), len(tokens)
        entropy = float(-(w * w.clamp_min(1e-30).log()).sum())
        smallest = float(w.min())
        if smallest == 0.0:  # e^(-big) is below float32's smallest number
            rest = "the smallest underflows to 0 in float32 (mathematically it is above 0)"
        elif float((w - 1 / n).abs().max()) < 0.005:
            rest = f"all weights close to 1/{n} = {1 / n:.2f} (uniform)"
        else:
            rest = f"the smallest {smallest:.2g} (above 0: softmax never gives exactly 0)"
        return {"views": {"weights": bars(w, tokens, highlight=marked, x_label=x_label,
                                          caption=caption.replace("{T}", temperature_label(T)))},
                "readout": f"T = {temperature_label(T)}: the largest weight is {float(w[top]):.2f} "
                           f"({tokens[top]}), {rest}; entropy {entropy:.2f} nats "
                           f"(uniform: log {n} = {math.log(n):.2f}).",
                "state": {"temperature": T, "largest": float(w[top]), "smallest": smallest,
                          "entropy": entropy}}

    grid = temperatures(value)
    return Figure(name="temperature-bars", title="Temperature and one query's weights",
                  controls=[slider("temperature", "temperature T", grid, float(value),
                                   labels=[temperature_label(t) for t in grid])],
                  views=[View("weights", "bars")], state_fn=state,
                  note="<b>Live in this page:</b> the slider shows the softmax of the scores "
                       "above at each temperature, no kernel needed.",
                  alt="Bars: the attention weights of one query over its keys at the chosen "
                      "temperature.")
