"""Chapter 04's live figure: the number of heads at a fixed d_model = 512.

``heads_at_fixed_width()``: a slider over num_heads (the divisors 1, 2, ..., 32 of 512) and a
select for the query token. For each num_heads the figure builds the package's layer,
``mha.MultiHeadAttention(512, num_heads)`` (made after ``torch.manual_seed(0)``), runs it on the
chapter's 9-token sentence (random embeddings scaled by 3, as in the chapter's heatmap) with
``need_weights=True``, and shows the chosen query's row of every head's weights: one
distribution per head, on one colour scale. A table gives the widths d_head = 512 / num_heads
and the parameters, counted from the package's modules (one head of
``mha.MultiHeadAttentionLoop``, the whole ``mha.MultiHeadAttention``): the total stays
4 * 512**2 = 1,048,576 whatever num_heads is.
"""

from functools import lru_cache

import torch

from mha.layer import MultiHeadAttention
from mha.live.figure import Figure, View, heatmap, select, slider, table
from mha.loop import MultiHeadAttentionLoop

from ._registry import live_figure

__all__ = ["D_MODEL", "HEADS", "TOKENS", "head_weights", "heads_at_fixed_width",
           "parameter_counts", "width_state"]

D_MODEL = 512
HEADS = (1, 2, 4, 8, 16)  # 32 rows of 9 keys no longer fit the column
TOKENS = ("Anthony", "Hopkins", "admired", "Michael", "Bay", "as", "a", "great",
          "director.")


def _count(module):
    return sum(p.numel() for p in module.parameters())


@lru_cache(maxsize=None)
def parameter_counts(num_heads):
    """What the package's modules store at d_model = 512: a dict of counts (no biases)."""
    with torch.device("meta"):  # shapes only: nothing is allocated or drawn
        loop = MultiHeadAttentionLoop(D_MODEL, num_heads)
        layer = MultiHeadAttention(D_MODEL, num_heads)
    one_head = _count(loop.heads[0])  # its W^Q_i, W^K_i, W^V_i
    return {"d_head": layer.d_head, "one_head": one_head,
            "all_heads": one_head * num_heads, "W_o": _count(loop.W_o),
            "loop": _count(loop), "layer": _count(layer)}


def _sentence(x):
    if x is None:
        gen = torch.Generator().manual_seed(0)
        x = 3 * torch.randn(1, len(TOKENS), D_MODEL, generator=gen)  # (1, 9, 512)
    return x.detach().to("cpu", torch.float32)


def head_weights(num_heads, x=None):
    """Every head's weights (H, 9, 9) of ``MultiHeadAttention(512, num_heads)`` made after
    ``torch.manual_seed(0)``, on ``x`` (1, 9, 512) (default: seeded embeddings times 3)."""
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        layer = MultiHeadAttention(D_MODEL, num_heads)
        _, weights = layer(_sentence(x), need_weights=True)  # (1, H, 9, 9)
    return weights[0]


def _table(num_heads):
    c = parameter_counts(num_heads)
    h, dh = num_heads, c["d_head"]
    rows = [[f"one head: its query, key and value matrices (3 x 512 x {dh})", c["one_head"]],
            [f"all {h} heads ({h} x {c['one_head']:,})" if h > 1 else
             f"the 1 head (1 x {c['one_head']:,})", c["all_heads"]],
            ["the output matrix (512 x 512)", c["W_o"]],
            ["whole layer, counted: mha.MultiHeadAttention", c["layer"]],
            ["whole layer, counted: mha.MultiHeadAttentionLoop", c["loop"]],
            ["4 x d_model x d_model = 4 x 512 x 512", 4 * D_MODEL ** 2]]
    return table(["num_heads = " + str(h), "parameters"], rows,
                 caption=f"Parameters at d_model = 512: {h} head{'s' if h > 1 else ''} "
                         f"of d_head = 512 / {h} = {dh}")


def width_state(num_heads, query, x=None, weights=None):
    """The figure's data for one setting: ``query`` is a token index (0..8)."""
    w = (head_weights(num_heads, x) if weights is None else weights)[:, query]  # (H, 9)
    c = parameter_counts(num_heads)
    top = [int(j) for j in w.argmax(-1)]  # each head's largest weight: its key
    quoted = [f'"{t}"' for t in TOKENS]  # a token in quotes: "a" is a word, not an article
    if num_heads == 1:
        tops = f"its largest weight on {quoted[top[0]]}"
    elif num_heads <= 4:
        tops = (f"largest weights on {', '.join(quoted[j] for j in top)} "
                f"(heads {'0 and 1' if num_heads == 2 else f'0 to {num_heads - 1}'})")
    else:
        keys = sorted(set(top))
        tops = ("their largest weights on " +
                ("all 9 keys" if len(keys) == len(TOKENS) else f"{len(keys)} of the 9 keys"))
    word = TOKENS[query]
    heads = "head" if num_heads == 1 else "heads"
    return {
        "views": {
            "weights": heatmap(w, [f"head {i}" for i in range(num_heads)], TOKENS,
                               numbers=True,
                               caption=f'Query "{word}": {num_heads} {heads} of d_head = '
                                       f'{c["d_head"]}, ' + ("one row each" if num_heads > 1
                                                             else "one row"),
                               axes="rows: heads, columns: keys"),
            "counts": _table(num_heads)},
        "readout": (f'{num_heads} {heads} of width 512 / {num_heads} = {c["d_head"]}: '
                    f'{num_heads} distribution{"s" if num_heads > 1 else ""} for "{word}", '
                    f'{tops}. The weights are random (untrained): count the rows, not their '
                    f'patterns. Parameters: {"still " if num_heads > 1 else ""}'
                    f'{c["layer"]:,}.'),
        "state": {"num_heads": num_heads, "query": query, "d_head": c["d_head"],
                  "parameters": c["layer"]},
    }


@live_figure
def heads_at_fixed_width(num_heads=8, query="Michael", x=None):
    """Chapter 04: num_heads at d_model = 512, each head's weights for one query, and the
    parameters (the same for every num_heads). ``x`` (1, 9, 512): the sentence's embeddings
    (default: seeded, times 3)."""
    if num_heads not in HEADS:
        raise ValueError(f"num_heads must be one of {HEADS}; got {num_heads!r}")
    if query not in TOKENS:
        raise ValueError(f"query must be one of the tokens {TOKENS}; got {query!r}")
    if x is not None and tuple(x.shape) != (1, len(TOKENS), D_MODEL):
        raise ValueError(f"x must have shape (1, 9, 512); got {tuple(x.shape)}")
    weights = {h: head_weights(h, x) for h in HEADS}
    return Figure(
        name="heads-at-fixed-width", title="More heads at d_model = 512: narrower heads, "
                                           "more distributions, the same parameters",
        controls=[slider("num_heads", "num_heads", HEADS, num_heads),
                  select("query", "query token", list(range(len(TOKENS))),
                         TOKENS.index(query), labels=TOKENS)],
        views=[View("weights", "heatmap"), View("counts", "table")],
        state_fn=lambda num_heads, query: width_state(num_heads, query,
                                                      weights=weights[num_heads]),
        alt="A heatmap with one row per head: the chosen query's attention weights over the "
            "9 keys in each head of an untrained mha.MultiHeadAttention with d_model = 512; "
            "a table of the head width and the parameter counts, which stay 1,048,576.")
