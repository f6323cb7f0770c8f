"""Chapter 02's live figures: the scale 1/sqrt(d_k), and a mask builder.

* ``dk_softmax()``: one query against 16 keys, entries drawn once from N(0, 1); the slider picks
  how many of their features are used (d_k), the toggle divides the scores by sqrt(d_k) or not.
  The bars are the query's weights (``mha.scaled_dot_product_attention``, ``scale=1`` when the
  scale is off), the line plot their entropy at every d_k (``mha_book.tasks.attention_entropy``),
  with and without the scale, and the uniform weights' log 16 for reference; the ring marks the
  current d_k on the curve the box selects.
* ``mask_builder()``: two sequences of five tokens, a valid length for each, a causal toggle, a
  toggle that lets padded queries attend nothing, and how blocked scores are filled: -inf,
  -1e9 in float32, -1e9 in float16 (which float16 cannot hold: it becomes -inf), or the
  package's way (-inf, and a row with no allowed key set to 0). The heatmaps are the weights; a
  query with no allowed key turns into a row of NaN (crossed cells) under -inf. The readout says
  which rows have no key and what they become, and whether the causal mask is on.

Each ``*_state`` function is the figure's data for one setting of the controls (pure torch); the
figure lists it for every setting (``mha.live.figure``).
"""

import math
from functools import lru_cache

import torch

from mha.functional import scaled_dot_product_attention
from mha.live.figure import Figure, View, bars, heatmap, plot, select, slider, toggle
from mha_book.tasks import attention_entropy

from ._registry import live_figure

__all__ = ["CURVES", "DIMS", "dk_softmax", "dk_state", "mask_builder", "mask_state",
           "mask_weights"]

DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
N_KEYS = 16
#: how blocked scores are filled, as the select names them (what each does, not who does it)
FILLS = ("-inf", "-1e9 (float32)", "-1e9 (float16)", "-inf, 0 for a row with no key (mha)")
SENTENCES = (("the", "cat", "sat", "down", "."), ("a", "dog", "ran", "home", "fast"))


def _query_and_keys():
    """One query (1, 1024) and 16 keys (16, 1024), entries N(0, 1), always the same draw."""
    gen = torch.Generator().manual_seed(2)
    return torch.randn(1, DIMS[-1], generator=gen), torch.randn(N_KEYS, DIMS[-1], generator=gen)


def dk_weights(d_k, scaled):
    """The query's weights (16,) over the keys using their first ``d_k`` features."""
    q, k = _query_and_keys()
    q, k = q[:, :d_k], k[:, :d_k]  # (1, d_k), (16, d_k)
    v = torch.zeros(N_KEYS, 1)
    _, w = scaled_dot_product_attention(q, k, v, scale=None if scaled else 1.0)
    return w[0]  # (1, 16) -> (16,)


def _entropy(w):
    return float(attention_entropy(w.reshape(1, 1, 1, -1))[0])


#: the entropy plot's lines: both curves (the box selects one), then the uniform weights'
CURVES = ("scaled by 1/sqrt(d_k)", "unscaled", "uniform (log 16)")


@lru_cache(maxsize=1)
def _curves():
    curves = {label: tuple(_entropy(dk_weights(d, s)) for d in DIMS)
              for label, s in zip(CURVES, (True, False))}
    curves[CURVES[2]] = (math.log(N_KEYS),) * len(DIMS)  # the most an entropy can be
    return curves


def dk_state(d_k, scaled):
    w = dk_weights(d_k, scaled)
    q, k = _query_and_keys()
    scores = (k[:, :d_k] @ q[0, :d_k]) / (math.sqrt(d_k) if scaled else 1.0)  # (16,)
    spread = float(scores.std())
    best, second = scores.topk(2).values.tolist()  # how far the best score stands out
    curves = {label: list(y) for label, y in _curves().items()}
    how = "scaled" if scaled else "unscaled"
    top = int(w.argmax())
    entropy = _entropy(w)
    same = " (sqrt(1) = 1: the box changes nothing here)" if d_k == 1 else ""
    return {
        "views": {
            "weights": bars(w, [f"k{j}" for j in range(N_KEYS)], highlight=[top],
                            caption=f"One query's weights over 16 keys, d_k = {d_k}, {how}",
                            x_label="key (orange: the largest weight)"),
            "entropy": plot(DIMS, curves, x_log=True, marker=DIMS.index(d_k),
                            marker_series=[0 if scaled else 1],  # the curve the box picks
                            y_min=0.0, y_max=3.2,
                            caption=f"Entropy of the query's weights; grey dashes: uniform "
                                    f"weights, log 16 = {math.log(N_KEYS):.2f}",
                            x_label="d_k (log scale)", y_label="entropy (nats)")},
        "readout": (f"d_k = {d_k}, {how}{same}: the scores spread {spread:.2f} (standard "
                    f"deviation), the largest weight is {float(w[top]):.2f} (key k{top}) and "
                    f"the entropy is {entropy:.2f} nats (uniform weights: log 16 = "
                    f"{math.log(N_KEYS):.2f})."),
        "state": {"d_k": d_k, "scaled": scaled, "spread": spread, "largest": float(w[top]),
                  "entropy": entropy, "lead": best - second},
    }


@live_figure
def dk_softmax(d_k=1, scaled=False):
    """Chapter 02: d_k and the scale against one query's softmax and its entropy; it starts
    where the chapter's instructions start, unscaled at d_k = 1."""
    return Figure(
        name="dk-softmax", title="d_k and the scale: one query's softmax",
        controls=[slider("d_k", "d_k", DIMS, d_k),
                  toggle("scaled", "divide by sqrt(d_k)", scaled)],
        views=[View("weights", "bars"), View("entropy", "plot")],
        state_fn=dk_state,
        alt="Bars: one query's attention weights over 16 keys, the largest in orange; a line "
            "plot of their entropy against d_k with and without the scale, and a dashed line "
            "at the uniform weights' entropy, log 16.")


# ----------------------------------------------------------------------------- masks

def _scores():
    """Fixed scores (2, 5, 5) of the two sequences: q . k / sqrt(8) of seeded vectors."""
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 5, 8, generator=gen), torch.randn(2, 5, 8, generator=gen)
    return q, k


def mask_allowed(len0, len1, causal, pad_queries):
    """bool (2, 5, 5), True = may attend: key j < valid_len, j <= i when causal, and no key at
    all for a padded query (i >= valid_len) when ``pad_queries``."""
    lens = torch.tensor([len0, len1])[:, None, None]  # (2, 1, 1)
    i = torch.arange(5)[None, :, None]  # (1, Lq, 1)
    j = torch.arange(5)[None, None, :]  # (1, 1, Lk)
    allowed = (j < lens).expand(2, 5, 5)
    if causal:
        allowed = allowed & (j <= i)
    if pad_queries:
        allowed = allowed & (i < lens)
    return allowed


def mask_weights(len0, len1, causal, pad_queries, fill):
    """The weights (2, 5, 5) with blocked scores filled by ``fill`` (one of ``FILLS``)."""
    q, k = _scores()
    allowed = mask_allowed(len0, len1, causal, pad_queries)
    if fill == FILLS[3]:
        return scaled_dot_product_attention(q, k, torch.zeros(2, 5, 1), allowed)[1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)  # (2, 5, 8) @ (2, 8, 5) -> (2, 5, 5)
    if fill == FILLS[0]:
        return scores.masked_fill(~allowed, float("-inf")).softmax(-1)
    if fill == FILLS[1]:
        return scores.masked_fill(~allowed, -1e9).softmax(-1)
    if fill == FILLS[2]:  # masked_fill(~allowed, -1e9) on float16 scores raises RuntimeError
        # (overflow); converted to float16 first, as an additive mask is, -1e9 is -inf
        fill16 = torch.tensor(-1e9).to(torch.float16)
        return scores.half().masked_fill(~allowed, fill16).float().softmax(-1)
    raise ValueError(f"fill must be one of {FILLS}; got {fill!r}")


def _rows(flags):
    rows = [str(i) for i, f in enumerate(flags) if f]
    if len(rows) == len(flags) > 1:
        return "every row"
    return ("row " if len(rows) == 1 else "rows ") + ", ".join(rows) if rows else "no row"


def _blocked(b, flags, nan, fill):
    """What sequence ``b``'s rows with no allowed key (``flags``) become, in one clause."""
    # one short clause (the readout keeps the height of the longest, so that the heatmaps
    # below it stay put: every clause is kept short)
    rows = _rows(flags)  # "row 4", "rows 2, 3, 4" or "every row"
    one = int(flags.sum()) == 1 or bool(flags.all())
    its, has = ("its", "has") if one else ("their", "have")
    what = ("NaN" if nan else "uniform over the 5 keys, all blocked" if fill == FILLS[1]
            else "all zero")
    return f"Sequence {b}: {rows} {has} no key, so {its} weights are {what}"


@lru_cache(maxsize=None)
def _sequence_view(b, n, causal, pad_queries, fill):
    """Sequence ``b``'s heatmap at valid_len ``n`` (the sequences do not affect each other)."""
    lens = (n, 5) if b == 0 else (5, n)
    w = mask_weights(*lens, causal, pad_queries, fill)[b]  # (5, 5)
    tokens = [t if j < n else "<pad>" for j, t in enumerate(SENTENCES[b])]
    view = heatmap(w, tokens, tokens, numbers=True,
                   caption=f"Sequence {b}, valid_len {n}" + (", causal" if causal else ""),
                   axes="rows: queries, columns: keys"
                   + ("; crossed cells: NaN" if w.isnan().any() else ""))
    # cells of 26 px, not 38: on a phone the two heatmaps stack, and sequence 1's must start
    # on the screen below the controls and the readout (its len1 slider changes only it)
    view["cell_max"] = 26
    return view


def mask_state(len0, len1, causal, pad_queries, fill):
    w = mask_weights(len0, len1, causal, pad_queries, fill)
    allowed = mask_allowed(len0, len1, causal, pad_queries)
    empty = ~allowed.any(-1)  # (2, 5): queries with no allowed key
    nan = w.isnan().any(-1)  # (2, 5)
    parts = [_blocked(b, empty[b], bool(nan[b].any()), fill) for b in range(2)
             if empty[b].any()]
    # short: on a phone the readout sits between the controls and the heatmaps
    note = {FILLS[2]: " In float16 -1e9 is -inf."}
    causal_note = "; causal (query i sees keys j <= i)" if causal else "; no causal mask"
    readout = (f"Fill {fill}{causal_note}.{note.get(fill, '')} " +
               ("; ".join(parts) + "." if parts
                else "Every query may attend to at least one key.")
               + (" A loss over a NaN row is NaN, even times 0." if nan.any() else ""))
    return {"views": {f"seq{b}": _sequence_view(b, n, causal, pad_queries, fill)
                      for b, n in enumerate((len0, len1))},
            "readout": readout}


@live_figure
def mask_builder(len0=3, len1=5, causal=False, pad_queries=False, fill="-inf"):
    """Chapter 02: build a mask, choose the fill value, see the weights and the NaN rows."""
    lengths = list(range(6))
    return Figure(
        name="mask-builder", title="A mask builder: the weights and which rows turn NaN",
        controls=[slider("len0", "valid_len of sequence 0", lengths, len0),
                  slider("len1", "valid_len of sequence 1", lengths, len1),
                  toggle("causal", "causal", causal),
                  toggle("pad_queries", "padded queries attend nothing", pad_queries),
                  select("fill", "fill of blocked scores", FILLS, fill)],
        views=[View("seq0", "heatmap"), View("seq1", "heatmap")],
        state_fn=mask_state,
        alt="Two 5 by 5 heatmaps of attention weights, one per sequence, with the numbers in "
            "the cells; rows of NaN are crossed out.")
