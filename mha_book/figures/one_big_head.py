"""Chapter 06's live figure: one head against h heads holding the same projections.

``one_vs_many()``: a slider over the number of heads h (1, 2, 4, 8, 16, divisors of 512) and a
select for the query token. For every h the package's ``mha.MultiHeadAttention(512, h)`` is
loaded with the **same** four matrices as the 1-head layer (the chapter's ``eight`` and ``one``
share one ``state_dict``), and run on the chapter's sentence with ``need_weights=True``. The
figure shows the query's one distribution of the 1-head layer (scores divided by
sqrt(d_model) = sqrt(512)) beside the h distributions of the h-head layer (each divided by
sqrt(d_head) = sqrt(512 / h)), with two rows computed from the h heads: their mean (not the
one head) and the normalised product of their weights raised to 1 / sqrt(h) (exactly the one
head).
"""

import math

import torch

from mha.layer import MultiHeadAttention
from mha.live.figure import Figure, View, heatmap, select, slider, table

from ._registry import live_figure

__all__ = ["D_MODEL", "HEADS", "TOKENS", "many_heads_state", "one_vs_many", "weights_per_h"]

D_MODEL = 512
HEADS = (1, 2, 4, 8, 16)  # 32 rows of 9 keys no longer fit the column
TOKENS = ("Anthony", "Hopkins", "admired", "Michael", "Bay", "as", "a", "great",
          "director.")


def _default_layer_and_input():
    """A 1-head layer and the sentence (1, 9, 512) times 3, drawn after torch.manual_seed(0)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layer = MultiHeadAttention(D_MODEL, 1)
        x = 3 * torch.randn(1, len(TOKENS), D_MODEL)
    return layer, x


def weights_per_h(layer=None, x=None):
    """{h: weights (h, 9, 9)} of ``MultiHeadAttention(512, h)`` holding ``layer``'s matrices
    (any ``MultiHeadAttention`` with d_model 512, no biases required), on ``x`` (1, 9, 512)."""
    if layer is None or x is None:
        default_layer, default_x = _default_layer_and_input()
        layer = default_layer if layer is None else layer
        x = default_x if x is None else x
    state = {k: v.detach().to("cpu", torch.float32) for k, v in layer.state_dict().items()}
    x = x.detach().to("cpu", torch.float32)
    out = {}
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        for h in HEADS:
            many = MultiHeadAttention(D_MODEL, h, bias=layer.W_q.bias is not None)
            many.load_state_dict(state)  # the same W_q, W_k, W_v, W_o for every h
            out[h] = many(x, need_weights=True)[1][0]  # (1, h, 9, 9) -> (h, 9, 9)
    return out


def product_of_heads(p_heads):
    """The normalised product of the heads' weights (h, Lk), each raised to 1 / sqrt(h):
    softmax(sum_i log p_i / sqrt(h)), which equals the one head's weights."""
    h = p_heads.size(0)
    return (p_heads.log().sum(0) / math.sqrt(h)).softmax(-1)


def many_heads_state(h, query, weights):
    """The figure's data for ``h`` heads and the query token index ``query``; ``weights`` is
    ``weights_per_h(...)``."""
    p_one = weights[1][0, query]  # (9,): the one head's distribution
    p_heads = weights[h][:, query]  # (h, 9): the h heads' distributions
    mean, product = p_heads.mean(0), product_of_heads(p_heads)
    gap = float((mean - p_one).abs().max())
    d_head = D_MODEL // h
    word, top = TOKENS[query], int(p_one.argmax())
    agree = int((p_heads.argmax(-1) == top).sum())
    heads = "head" if h == 1 else "heads"
    # short row labels: on a phone they share the column with the grid
    rows = ["1-head layer", f"product ^ 1/sqrt({h})", "mean"]
    # short cells: on a phone three columns share 358 px ("sqrt(512) = 22.63" wrapped)
    biggest = int(p_heads.max(-1).values.argmax())  # the head holding the largest weight
    many = "h = 1 (same layer)" if h == 1 else f"{h}-head layer"
    scale = table(["quantity", "1-head layer", many],
                  [["d_k (per head)", D_MODEL, d_head],
                   ["scores divided by sqrt(d_k)", f"{math.sqrt(D_MODEL):.2f}",
                    f"{math.sqrt(d_head):.2f}"],
                   ["distributions per query", 1, h],
                   [f'largest weight for "{word}"', float(p_one.max()),
                    float(p_heads.max()) if h == 1 else
                    f"{float(p_heads.max()):.2f} (head {biggest})"]],
                  caption=("The scale: sqrt(d_model) = sqrt(512) for the 1-head layer; with "
                           "h = 1, d_head = d_model" if h == 1 else
                           f"The scale: sqrt(d_model) for the 1-head layer, sqrt(d_head) = "
                           f"sqrt(512 / {h}) for each of the {h} heads; the largest weight is "
                           f"the largest of any head"))
    if agree == 0:
        agreeing = f"none of the {h} heads prefers it"
    elif agree == h:
        agreeing = "both heads prefer it" if h == 2 else f"all {h} heads prefer it"
    else:
        agreeing = f"{agree} of the {h} heads prefer{'s' if agree == 1 else ''} it"
    verdict = (f"{agreeing}; the mean of the heads is up to {gap:.2f} away from the one head, "
               f"their normalised product equals it.")
    return {
        "views": {
            "one": heatmap(torch.stack([p_one, product, mean]), rows, TOKENS, numbers=True,
                           caption=(f'Query "{word}": with h = 1, all three rows are the '
                                    f'1-head layer' if h == 1 else
                                    f'Query "{word}": the 1-head layer, and the {h} heads '
                                    f'combined: normalised product, mean'),
                           axes="rows: one distribution each, columns: keys"),
            "heads": heatmap(p_heads, [f"head {i}" for i in range(h)], TOKENS, numbers=True,
                             caption=f'Query "{word}": {h} {heads} of d_head = {d_head}, '
                                     f'the same matrices', axes="rows: heads, columns: keys"),
            "scale": scale},
        "readout": (f'1 head of width 512, scores divided by sqrt(512) = 22.63: with h = 1 '
                    f'the layer is the 1-head layer itself, which puts '
                    f'{float(p_one[top]):.2f} on "{TOKENS[top]}".' if h == 1 else
                    f'{h} heads of width {d_head}, scores divided by sqrt({d_head}) = '
                    f'{math.sqrt(d_head):.2f} (one head: sqrt(512) = 22.63): the 1-head layer '
                    f'puts {float(p_one[top]):.2f} on "{TOKENS[top]}"; {verdict}'),
        "state": {"h": h, "query": query, "gap": gap, "agree": agree},
    }


@live_figure
def one_vs_many(h=8, query="Michael", layer=None, x=None):
    """Chapter 06: the 1-head layer's distribution for one query beside the h distributions of
    the h-head layer with the same matrices. ``layer``: a ``MultiHeadAttention(512, ...)`` whose
    matrices every h uses (default: seeded); ``x`` (1, 9, 512) the sentence."""
    if h not in HEADS:
        raise ValueError(f"h must be one of {HEADS}; got {h!r}")
    if query not in TOKENS:
        raise ValueError(f"query must be one of the tokens {TOKENS}; got {query!r}")
    if x is not None and tuple(x.shape) != (1, len(TOKENS), D_MODEL):
        raise ValueError(f"x must have shape (1, 9, 512); got {tuple(x.shape)}")
    if layer is not None and getattr(layer, "d_model", None) != D_MODEL:
        raise ValueError(f"layer must be a MultiHeadAttention with d_model 512; got {layer!r}")
    weights = weights_per_h(layer, x)
    return Figure(
        name="one-vs-many", title="One head or h heads with the same four matrices",
        controls=[slider("h", "number of heads h", HEADS, h),
                  select("query", "query token", list(range(len(TOKENS))),
                         TOKENS.index(query), labels=TOKENS)],
        views=[View("one", "heatmap"), View("heads", "heatmap"), View("scale", "table")],
        state_fn=lambda h, query: many_heads_state(h, query, weights),
        alt="Two heatmaps for one query over the 9 keys: above, the 1-head layer's weights "
            "with the mean and the normalised product of the h heads' weights; below, the h "
            "heads' weights, one row each, all from the same projection matrices; a table "
            "of the scale each uses.")
