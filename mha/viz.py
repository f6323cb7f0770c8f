"""Figures of attention weights: a grid of per-head heatmaps (one layer, or layers x heads).

Shape legend: H heads, Lq queries (rows), Lk keys (columns) (see ``mha.functional``).

Every heatmap of a figure shares one colour scale (0 to the largest weight, one colour bar),
queries run down and keys across, labelled with their tokens. The figure is returned and
closed in pyplot, so ending a notebook cell with it shows it exactly once (``plt.show()`` after
it shows nothing; use ``display(fig)`` or ``fig.savefig(...)`` elsewhere).
"""

import contextlib
import math

import numpy as np
import torch

__all__ = ["plot_heads", "plot_layers"]


def _as_heads(weights, name="weights"):
    """Tensor or array of shape (Lq, Lk), (H, Lq, Lk) or (1, H, Lq, Lk) -> numpy (H, Lq, Lk)."""
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().to("cpu", torch.float32).numpy()
    weights = np.asarray(weights, dtype=np.float32)
    if weights.ndim == 4 and weights.shape[0] == 1:
        weights = weights[0]  # (1, H, Lq, Lk) -> (H, Lq, Lk)
    if weights.ndim == 2:
        weights = weights[None]  # (Lq, Lk) -> (1, Lq, Lk)
    if weights.ndim != 3:
        raise ValueError(
            f"{name} must have shape (Lq, Lk), (H, Lq, Lk) or (1, H, Lq, Lk); got shape "
            f"{weights.shape} (pick one sequence of the batch, e.g. weights[0])"
        )
    return weights


def _tokens(tokens, n, name):
    if tokens is None:
        return [str(i) for i in range(n)]
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{name} has {len(tokens)} tokens but the weights have {n}")
    return tokens


@contextlib.contextmanager
def _no_redraw_per_panel(sns):
    """seaborn's heatmap draws the whole figure after every panel, only to check whether tick
    labels overlap; we set the rotations ourselves, so skip it: an 8-head grid then takes about a
    tenth of the time (one draw instead of eight growing ones)."""
    matrix = getattr(sns, "matrix", None)
    original = getattr(matrix, "_draw_figure", None)
    if original is None:  # another seaborn version: nothing to skip
        yield
        return
    matrix._draw_figure = lambda fig: None
    try:
        yield
    finally:
        matrix._draw_figure = original


def _grid(panels, query_tokens, key_tokens, ncols, cmap, vmax, annot, title):
    """panels: list of (title, (Lq, Lk) array). Draws them on one shared scale; returns figure."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    Lq, Lk = panels[0][1].shape
    ys, xs = _tokens(query_tokens, Lq, "query_tokens"), _tokens(key_tokens, Lk, "key_tokens")
    vmax = float(max(p.max() for _, p in panels)) if vmax is None else float(vmax)
    vmax = vmax if vmax > 0 else 1.0
    ncols = min(ncols, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    cell = max(2.4, 0.28 * max(Lq, Lk))
    fig, axes = plt.subplots(nrows, ncols, figsize=(cell * ncols + 1.0, cell * nrows + 0.4),
                             squeeze=False)
    with _no_redraw_per_panel(sns):
        for ax, (label, panel) in zip(axes.flat, panels):
            sns.heatmap(panel, ax=ax, vmin=0.0, vmax=vmax, cmap=cmap, cbar=False, square=True,
                        annot=annot, fmt=".2f", xticklabels=xs, yticklabels=ys)
            ax.set(title=label, xlabel="key", ylabel="query")
            ax.tick_params(axis="x", labelrotation=90)
            ax.tick_params(axis="y", labelrotation=0)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.set_layout_engine("constrained")  # laid out once, after all panels exist
    fig.colorbar(axes.flat[0].collections[0], ax=axes, shrink=0.8, label="attention weight")
    if title:
        fig.suptitle(title)
    plt.close(fig)  # returned, not left in pyplot: a notebook shows it once, as the cell's value
    return fig


def plot_heads(weights, query_tokens=None, key_tokens=None, *, title=None, head_labels=None,
               ncols=4, cmap="viridis", vmax=None, annot=False):
    """One heatmap per head of ``weights`` (H, Lq, Lk) or (Lq, Lk), titled "head i" (or
    ``head_labels``), on one colour scale from 0 to ``vmax`` (default: the largest weight).
    Returns the matplotlib Figure."""
    heads = _as_heads(weights)
    labels = [f"head {h}" for h in range(len(heads))] if head_labels is None else head_labels
    if len(labels) != len(heads):
        raise ValueError(f"head_labels has {len(labels)} labels but weights have {len(heads)} heads")
    panels = list(zip(labels, heads))
    return _grid(panels, query_tokens, key_tokens, ncols, cmap, vmax, annot, title)


def plot_layers(weights_by_layer, query_tokens=None, key_tokens=None, *, title=None,
                cmap="viridis", vmax=None, annot=False):
    """A grid with one row per layer and one column per head; ``weights_by_layer`` maps a layer
    name to weights (H, Lq, Lk) (e.g. what ``mha.record_attention`` returns, for one sequence).
    Panels are titled "layer, head i"; one colour scale for all. Returns the matplotlib Figure."""
    if not isinstance(weights_by_layer, dict) or not weights_by_layer:
        raise TypeError("weights_by_layer must be a non-empty dict: layer name -> (H, Lq, Lk)")
    layers = {name: _as_heads(w, f"weights_by_layer[{name!r}]")
              for name, w in weights_by_layer.items()}
    shapes = {w.shape for w in layers.values()}
    if len(shapes) != 1:
        raise ValueError(f"all layers must have weights of the same shape; got {sorted(shapes)}")
    num_heads = next(iter(shapes))[0]
    panels = [(f"{name}, head {h}", w[h]) for name, w in layers.items() for h in range(num_heads)]
    return _grid(panels, query_tokens, key_tokens, num_heads, cmap, vmax, annot, title)
