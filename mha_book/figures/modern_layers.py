"""Chapter 14's live figures: the cache of today's attention, and a window and a sink on a head.

* ``kv_bytes()``: DeepSeek-V3's attention shape (``mha.configs.DEEPSEEK_V3``: 61 layers, d_head
  128, a shared rotary key of qk_rope_dim 64, 2 bytes a number) with the reader's number of
  query heads, of key/value heads for GQA (at most the query heads: each state's ``limits``
  stops that select at num_heads, so an impossible choice snaps back, never an error) and the
  latent rank kv_rank of MLA. The bars are the cache per token in KiB: MHA (a key/value head
  per query head), GQA, MQA (one) with ``mha.configs.kv_cache_bytes``, MLA (kv_rank +
  qk_rope_dim numbers a layer, whatever the heads) with ``mha.configs.latent_cache_bytes``;
  the accent marks the two the reader sets. The plot is one sequence's cache in MiB (exact
  numbers) against the context, both axes on a log scale (a cache in proportion to the
  context is a line of slope 1), its ticks in binary units chosen per tick (``y_unit``
  "MiB": "64 MiB", "4 GiB", "2 TiB", never "2,097,152"), and with a window on, GQA with every
  layer windowed: a rolling cache that stops growing at the window.
* ``window_sink()``: the Shakespeare model (``mha_book.language_model``) on a held-out line. A head
  of layer 1 is recomputed from its own queries and keys (the layer's input, recorded, through
  W_q, W_k and ``mha.rotary.apply_rope``) with a causal sliding window of w positions
  (``mha.modern.window_mask``) and a sink logit b (``mha.modern.sink_attention``: the softmax
  of [scores | b] without the sink's column, so a row sums to less than 1; "off" is b = -inf;
  b as in the chapter, where s are the scores). The sink takes sigma(b - LSE) of a row, LSE the
  log-sum-exp of its scores, which runs from about 0.5 to 20 on this line (medians 5.6 to 12.5
  by head); so the slider starts at b = 6, where the sink takes a visible share of every head's
  rows (at b = 0 it took 0.03% of the induction head's weight: no visible change), and the
  readout gives the head's log-sum-exps to compare b with.
  With the full window and no sink the weights are the model's own (``mha.record_attention``).
  The heatmap is the weights; the plot each query's weight on the line breaks and on the sink.

Each ``*_state`` function is the figure's data for one setting of the controls (pure torch); the
figure lists it for every setting (``mha.live.figure``).
"""

import math
from functools import lru_cache

import torch

from mha._threads import one_thread
from mha.configs import DEEPSEEK_V3, kv_cache_bytes, latent_cache_bytes
from mha.live.figure import Figure, View, bars, heatmap, plot, select, slider
from mha.modern import sink_attention, window_mask
from mha.record import record_attention
from mha.rotary import apply_rope
from mha_book.language_model import PASSAGES, load_language_model, token_labels

from ._registry import live_figure

__all__ = ["CONTEXTS", "HEADS", "HEAD_LABELS", "KV_HEADS", "KV_RANKS", "NUM_HEADS", "SINKS",
           "TEXT", "WINDOWS", "WINDOW_SIZES", "bytes_state", "head_problem", "kv_bytes",
           "per_token", "row_lse", "sink_weights", "window_sink", "window_sink_state"]

# ----------------------------------------------------------------------------- cache per token

# 61 layers; d_head 128 (DeepSeek-V3's qk_nope_dim and v_head_dim); a rotary key of 64
LAYERS, D_HEAD, ROPE = DEEPSEEK_V3.num_layers, DEEPSEEK_V3.v_head_dim, DEEPSEEK_V3.qk_rope_dim
NUM_HEADS = (8, 16, 32, 64, 128)
KV_HEADS = (1, 2, 4, 8, 16, 32, 64, 128)  # powers of 2: each up to num_heads divides it
KV_RANKS = (64, 128, 256, 512, 1024)
WINDOWS = ("off", 128, 1024, 4096)
CONTEXTS = (1024, 4096, 16384, 65536, 131072)


def per_token(num_heads, kv_heads, kv_rank):
    """Bytes per token, all layers: {"MHA", "GQA", "MQA", "MLA": bytes}."""
    return {"MHA": kv_cache_bytes(LAYERS, num_heads, D_HEAD),
            "GQA": kv_cache_bytes(LAYERS, kv_heads, D_HEAD),
            "MQA": kv_cache_bytes(LAYERS, 1, D_HEAD),
            "MLA": latent_cache_bytes(LAYERS, kv_rank, ROPE)}


def _kib(n):
    return f"{n / 2**10:,.0f} KiB" if n % 2**10 == 0 else f"{n / 2**10:,.1f} KiB"


def _gib(n):
    return f"{n / 2**30:,.3g} GiB"


def _than(a, b):
    """``a`` against ``b`` in words, to 3 digits as the chapter writes them: "3.56x less
    than", "2.25x more than" (one decimal made the chapter's 2.25 read 2.2)."""
    return f"{b / a:.3g}x less than" if a < b else f"{a / b:.3g}x more than"


def bytes_state(num_heads, kv_heads, kv_rank, window):
    kv = min(kv_heads, num_heads)  # past num_heads: the select stops there (limits)
    b = per_token(num_heads, kv, kv_rank)
    kib = [b[k] / 2**10 for k in ("MHA", "GQA", "MQA", "MLA")]
    sizes = bars(kib, [f"MHA {num_heads}", f"GQA {kv}", "MQA 1", f"MLA {kv_rank}+{ROPE}"],
                 highlight=[1, 3], y_max=round(max(kib) * 1.15, 1), y_label="KiB per token",
                 x_label="kind (kv heads; latent + rotary key)", decimals=1,
                 caption=f"Cache per token, {LAYERS} layers (accent: your GQA and MLA)")
    curves = {f"MHA {num_heads}": [kv_cache_bytes(LAYERS, num_heads, D_HEAD, n) / 2**20
                                   for n in CONTEXTS],
              f"GQA {kv}": [kv_cache_bytes(LAYERS, kv, D_HEAD, n) / 2**20 for n in CONTEXTS],
              f"MLA {kv_rank}": [latent_cache_bytes(LAYERS, kv_rank, ROPE, n) / 2**20
                                 for n in CONTEXTS]}
    if window != "off":  # a rolling cache: at most `window` positions in every layer
        curves[f"GQA {kv}, window {window:,}"] = [
            kv_cache_bytes(LAYERS, kv, D_HEAD, min(n, window)) / 2**20 for n in CONTEXTS]
    growth = plot(CONTEXTS, curves, x_log=True, x_label="context (tokens), log scale",
                  y_label="cache, log scale", caption="One sequence's cache against the context")
    growth["y_log"] = True  # both axes log2-spaced: the front end's log-log plot
    growth["y_unit"] = "MiB"  # y in MiB; the ticks in KiB to TiB, as each reads best
    limits = {"kv_heads": {"max": KV_HEADS.index(num_heads)}}
    if kv_heads > num_heads:  # never drawn: the page snaps the select back to num_heads first
        readout = (f"{num_heads} query heads cannot share {kv_heads} key/value heads; GQA "
                   f"has at most {num_heads}: shown with {kv}.")
    else:
        which = " (as many as the query heads: MHA)" if kv == num_heads else (
            " (one: MQA)" if kv == 1 else "")
        own = ", DeepSeek-V3's shape" if (num_heads, kv_rank) == (
            DEEPSEEK_V3.num_heads, DEEPSEEK_V3.kv_rank) else ""
        n = CONTEXTS[-1]
        readout = (f"GQA: 2 x {LAYERS} layers x {kv} kv head{'s' if kv > 1 else ''} x "
                   f"{D_HEAD} x 2 bytes = "
                   f"{b['GQA']:,} bytes ({_kib(b['GQA'])}) per token{which}; MLA: {LAYERS} x "
                   f"({kv_rank} + {ROPE}) x 2 bytes = {b['MLA']:,} bytes ({_kib(b['MLA'])}), "
                   f"{_than(b['MLA'], b['GQA'])} GQA; MHA ({num_heads} kv heads): "
                   f"{b['MHA']:,} bytes, {b['MHA'] / b['MLA']:.1f}x the latent cache{own}. "
                   f"At {n // 1024}K tokens: MHA {_gib(b['MHA'] * n)}, GQA "
                   f"{_gib(b['GQA'] * n)}, MLA {_gib(b['MLA'] * n)}.")
        if window != "off":
            readout += (f" A window of {window:,} on every layer stops GQA at "
                        f"{kv_cache_bytes(LAYERS, kv, D_HEAD, window) / 2**20:,g} MiB.")
    # no "state": the page's data-state is then the controls' values (kv_heads clamped), and
    # 800 states stay light
    return {"views": {"sizes": sizes, "growth": growth}, "readout": readout, "limits": limits}


@live_figure
def kv_bytes(num_heads=128, kv_heads=8, kv_rank=512, window="off"):
    """Chapter 14: the cache per token of MHA, GQA, MQA and MLA at DeepSeek-V3's shape."""
    return Figure(
        name="kv-bytes", title="KV cache per token: MHA, GQA, MQA and latent attention",
        controls=[select("num_heads", "query heads", NUM_HEADS, num_heads),
                  select("kv_heads", "kv heads (GQA)", KV_HEADS, kv_heads),
                  slider("kv_rank", "latent rank (MLA)", KV_RANKS, kv_rank),
                  select("window", "sliding window", WINDOWS, window,
                         labels=["off"] + [f"{w:,}" for w in WINDOWS[1:]])],
        views=[View("sizes", "bars"), View("growth", "plot")],
        state_fn=bytes_state,
        alt=f"Bars: the key/value cache per token in KiB, all {LAYERS} layers of DeepSeek-V3's "
            "shape, for multi-head attention (one key/value head per query head), grouped-query "
            "attention with the chosen key/value heads, multi-query attention (one) and "
            "multi-head latent attention (one latent of the chosen rank and one shared rotary "
            "key per token and layer). A line plot of one sequence's cache against the context, "
            "1K to 128K tokens, both axes on a log scale: every line has slope 1, except GQA "
            "with a sliding window, which is flat from the window on.")


# ----------------------------------------------------------------------------- window and sink

#: a held-out line of Julius Caesar: a speaker's name, a line break (at an even position, so
#: labelled when the heatmap labels every other character), a line
TEXT = PASSAGES["Julius Caesar: Cinna and Cassius"][:32]
LAYER = 1
HEADS = (0, 3, 1)  # chapter 10: heads 0 and 3 of layer 1 are induction heads
HEAD_LABELS = ("L1 H0 (induction)", "L1 H3 (induction)", "L1 H1 (looks back)")
WINDOW_SIZES = ("full", 16, 8, 4)
# "off" (b = -inf), then logits the rows' log-sum-exps make visible: b = 0 took 0.03% of the
# induction head's weight (its rows' LSE: median 10.6), a slider step that changed nothing
SINKS = ("off", 6, 8, 10, 12, 14)


@lru_cache(maxsize=1)
def head_problem():
    """Layer 1 of the Shakespeare model on ``TEXT``: q (1, H, L, Dh), k and v (1, Hkv, L, Dh)
    rotated as the layer rotates them, the recorded weights (H, L, L) and the scale."""
    lm = load_language_model()
    attn = lm.encoder.layers[LAYER].self_attn
    seen = {}
    hook = attn.register_forward_pre_hook(lambda m, args: seen.update(x=args[0]))
    try:
        with torch.no_grad(), one_thread(), record_attention(lm.encoder) as rec:
            lm(lm.encode(TEXT)[None])
    finally:
        hook.remove()
    x = seen["x"]  # (1, L, D): the layer's input, after its LayerNorm
    H, Hkv, Dh = attn.num_heads, attn.num_kv_heads, attn.d_head
    with torch.no_grad():
        # (1, L, H*Dh) -> (1, L, H, Dh) -> (1, H, L, Dh); keys and values with Hkv heads
        q = attn.W_q(x).unflatten(-1, (H, Dh)).transpose(1, 2)
        k = attn.W_k(x).unflatten(-1, (Hkv, Dh)).transpose(1, 2)
        v = attn.W_v(x).unflatten(-1, (Hkv, Dh)).transpose(1, 2)
        rope = {"base": attn.base, "interleaved": attn.interleaved}
        q, k = apply_rope(q, **rope), apply_rope(k, **rope)
    return q, k, v, rec[f"layers.{LAYER}.self_attn"][0], 1 / math.sqrt(Dh)


@lru_cache(maxsize=None)
def sink_weights(head, window, sink):
    """The weights (L, L) of ``head`` with a causal ``window`` ("full": causal) and a sink
    logit ``sink`` ("off": none), by ``mha.modern.sink_attention``; and the sink's (L,)."""
    q, k, v, _, scale = head_problem()
    L, g = q.size(-2), head // (q.size(1) // k.size(1))  # g: the head's key/value head
    window = L if window == "full" else window
    allowed = window_mask(L, L, window)  # (L, L): i - w < j <= i
    b = torch.tensor([-math.inf if sink == "off" else float(sink)])  # -inf: exp(-inf) = 0
    with torch.no_grad(), one_thread():
        _, w = sink_attention(q[:, head:head + 1], k[:, g:g + 1], v[:, g:g + 1], b, allowed,
                              scale)  # (1, 1, L, L)
    w = w[0, 0]  # (1, 1, L, L) -> (L, L)
    return w, torch.zeros(L) if sink == "off" else (1 - w.sum(-1)).clamp(min=0)  # (L,)


@lru_cache(maxsize=None)
def row_lse(head, window):
    """Each row's log-sum-exp of the scores ``head`` may see through ``window``: (L,). The sink
    b takes sigma(b - LSE) of a row, so these are what a sink logit is to be compared with."""
    q, k, _, _, scale = head_problem()
    L, g = q.size(-2), head // (q.size(1) // k.size(1))
    allowed = window_mask(L, L, L if window == "full" else window)  # (L, L)
    with torch.no_grad():
        scores = q[0, head] @ k[0, g].transpose(-2, -1) * scale  # (L, Dh) @ (Dh, L)
        return scores.masked_fill(~allowed, -math.inf).logsumexp(-1)  # (L,)


def _breaks(w):
    """Each row's weight on the line breaks of ``TEXT``: (L, L) -> (L,)."""
    return w[:, [i for i, ch in enumerate(TEXT) if ch == "\n"]].sum(-1)


def _pct(x):
    return f"{100 * float(x):.1f}%"


def window_sink_state(head, window, sink):
    w, on_sink = sink_weights(head, window, sink)
    breaks, trained = _breaks(w), _breaks(sink_weights(head, "full", "off")[0])
    bare = _breaks(sink_weights(head, window, "off")[0])  # this window, no sink
    name = HEAD_LABELS[HEADS.index(head)]
    win = "full window" if window == "full" else f"window {window}"
    sunk = "no sink" if sink == "off" else f"sink {sink}"  # the heatmap's caption
    labels = token_labels(TEXT)
    trained_text = f"; the head as trained (full window) puts {_pct(trained.mean())} there"
    lse = row_lse(head, window)
    rows = (f"with LSE the log-sum-exp of the row's scores: {float(lse.min()):.1f} to "
            f"{float(lse.max()):.1f} on this head's rows (median {float(lse.median()):.1f})")
    if sink == "off":
        readout = (f"{name}, {win}, no sink: a query puts on average {_pct(breaks.mean())} of "
                   f"its weight on the line break (\u21b5), and every row sums to 1"
                   + (" (the head as trained)" if window == "full" else trained_text)
                   + f". A sink logit b would take \u03c3(b \u2212 LSE) of a row, {rows}.")
    else:
        readout = (f"{name}, {win}, sink {sink}: a query puts on average "
                   f"{_pct(breaks.mean())} of its weight on the line break (\u21b5) and "
                   f"{_pct(on_sink.mean())} on the sink, so a row sums to "
                   f"{float(1 - on_sink.mean()):.3f} on average. With no sink the same head "
                   f"and window put {_pct(bare.mean())} on the line break; with sink {sink}, "
                   f"{_pct(on_sink.mean())} goes to the sink"
                   + ("" if window == "full" else f"{trained_text} with no sink")
                   + f". The sink takes \u03c3(b \u2212 LSE) of a row, {rows}.")
    positions = list(range(len(TEXT)))
    curves = {"on the line break": breaks, "on the sink": on_sink}  # zeros with no sink
    if (window, sink) != ("full", "off"):  # as trained it would lie on the first line
        curves["line break, as trained"] = trained
    shares = plot(positions, curves,
                  y_min=0.0, y_max=1.0, x_label="query (character position)",
                  y_label="share of the row's weight",
                  caption=f"{name}: each query's weight on \u21b5 and on the sink")
    weights = heatmap(w, labels, labels, digits=3, caption=f"{name}, {win}, {sunk}")
    # a blocked key's exact 0 as the int 0 ("0", not "0.0"): the page's data lighter
    weights["grids"] = [[[0 if v == 0 else v for v in row] for row in g] for g in weights["grids"]]
    return {
        "views": {"weights": weights, "shares": shares},
        "readout": readout,
        "state": {"head": head, "window": window, "sink": sink,
                  "line_breaks": float(breaks.mean()), "sink_share": float(on_sink.mean()),
                  "no_sink_line_breaks": float(bare.mean()),
                  "trained_line_breaks": float(trained.mean()),
                  "lse_median": float(lse.median())},
    }


@live_figure
def window_sink(window="full", sink="off", head=0):
    """Chapter 14: a sliding window and an attention sink on a trained head of layer 1."""
    return Figure(
        name="window-sink", title="A window and a sink on a trained head",
        controls=[select("head", "head", HEADS, head, labels=HEAD_LABELS),
                  slider("window", "window (positions)", WINDOW_SIZES, window),
                  slider("sink", "sink logit b", SINKS, sink)],
        views=[View("weights", "heatmap"), View("shares", "plot")],
        state_fn=window_sink_state,
        alt="A heatmap of one head's attention weights on a line of Julius Caesar, queries "
            "(characters) down and keys across: a causal sliding window blanks the keys more "
            "than w positions back, and a sink logit joins every row's softmax and is dropped, "
            "so a row sums to less than 1. A line plot of each query's weight on the line "
            "break and on the sink, beside the line break's weight in the head as trained.")
