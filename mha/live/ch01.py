"""Chapter 01's live figure: a temperature slider over the weights of one query.

``temperature_bars(scores, tokens)`` shows softmax(scores / T) as bars for a temperature T on a
log slider (six steps per doubling, 0.01 to 100 and the starting value, labelled with
two significant figures); every position of the slider is computed here with ``torch.softmax`` and looked up by the page (``mha.live.figure``).
"""

import math

import torch

from .figure import Figure, View, bars, slider

__all__ = ["temperature_bars", "temperatures"]


def temperatures(value=1.0, lo=-2.0, hi=2.0):
    """T = 2 ** (k / 6) within [10 ** lo, 10 ** hi], and ``value`` in place of its nearest."""
    step = math.log10(2) / 6
    ks = range(math.ceil(lo / step), math.floor(hi / step) + 1)
    grid = [10 ** (k * step) for k in ks]
    grid = [t for t in grid if abs(math.log10(t / value)) > step / 4]  # no near-twin of value
    return sorted({round(t, 10) for t in grid} | {float(value)})


def temperature_bars(scores, tokens, *, highlight=None, value=1.0,
                     caption="Weights of the query at temperature T = {T}"):
    """A temperature slider over the weights softmax(scores / T) of one query, drawn as bars;
    ``caption`` may hold ``{T}``; ``highlight`` names a token drawn in the accent colour."""
    scores = torch.as_tensor(scores, dtype=torch.float32).detach().cpu().flatten()
    tokens = [str(t) for t in tokens]
    if len(tokens) != len(scores):
        raise ValueError(f"tokens has {len(tokens)} labels but scores has {len(scores)} "
                         f"entries; expected one label per score")
    if not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
        raise ValueError(f"value (the starting temperature) must be a positive number; got "
                         f"{value!r}")
    marked = [j for j, t in enumerate(tokens) if t == highlight]

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
        return {"views": {"weights": bars(w, tokens, highlight=marked, x_label="key token",
                                          caption=caption.replace("{T}", f"{T:.2g}"))},
                "readout": f"T = {T:.2g}: the largest weight is {float(w[top]):.2f} "
                           f"({tokens[top]}), {rest}; entropy {entropy:.2f} nats "
                           f"(uniform: log {n} = {math.log(n):.2f}).",
                "state": {"temperature": T, "largest": float(w[top]), "smallest": smallest,
                          "entropy": entropy}}

    grid = temperatures(value)
    return Figure(name="temperature-bars", title="Temperature and one query's weights",
                  controls=[slider("temperature", "temperature T", grid, float(value),
                                   labels=[f"{t:.2g}" for t in grid])],
                  views=[View("weights", "bars")], state_fn=state,
                  note="<b>Live in this page:</b> the slider shows the softmax of the scores "
                       "above at each temperature, no kernel needed.",
                  alt="Bars: the attention weights of one query over its keys at the chosen "
                      "temperature.")
