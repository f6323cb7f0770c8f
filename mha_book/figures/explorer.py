"""Chapter 07's explorer as a live figure: what the page draws, live (a kernel) or static.

* ``explorer_figure(knobs)``: the explorer for a page with no kernel (the built book): the
  controls of ``mha_book.widgets.Explorer`` as page controls, the data exported here
  (``explorer_data``) and the book's in-page compute ``explorer`` (mha_book/static/src/explorer.js),
  which recomputes the weights from that data at every change of a control (too many settings to
  list them all); its captions come from the templates here (``CAPTIONS``).
* ``view_figure(result)``: one picture Python computed (``mha_book.explore.explore_once``), for the
  view of the widget in Jupyter; the front end only draws it.
* ``frozen_figure(...)``: a picture the page cannot recompute (a reader's attention function).

What is exported for the random layer (d_model fixed at ``STATIC_D_MODEL``): for every seed in
``STATIC_SEEDS`` and every example sentence, the layer's queries q = W_q x (L_max, D) and keys
k = W_k x (L_max, Hkv*Dh) at the longest length L_max, for every key width Hkv*Dh the heads can
make. Queries and keys of token i do not depend on the other tokens, so the first seq_len rows
are exactly what a shorter sentence gives; the page splits them into heads, applies the mask,
window and temperature and takes the softmax (and the sink: ``mha_book.explore``). For a trained
source, the layer's queries and keys on each input sample (``mha_book.sources``; for the Shakespeare
model each passage, with its name). Numbers travel as base64 of little-endian float32.
"""

import base64
import html
import math

import torch

from mha import counts
from mha._threads import one_thread
from mha.live.figure import Figure, View, heatmap, select, slider, table
from mha.live.views import MAX_LEN, TEXT_CELL_MIN, VIEWS, fill
from mha_book import explore

from ._registry import live_figure

__all__ = ["explorer_data", "explorer_figure", "frozen_figure", "message_html", "payload",
           "render", "view_figure"]

STATIC_D_MODEL = 64
STATIC_HEADS = (1, 2, 4, 8, 16)
STATIC_SEEDS = tuple(range(5))
#: the tabs of the bar of controls on a phone (four controls each)
CONTROL_GROUPS = {"text": ("source", "seq_len", "seed", "sentence"),
                  "heads": ("d_model", "num_heads", "num_kv_heads", "view"),
                  "softmax": ("temperature", "mask", "window", "sink")}
#: temperatures the slider holds exactly: the ends, and those the chapters name
T_ANCHORS = (0.05, 0.1, 0.5, 1.0, 10.0, 20.0)
T_PER_DECADE = 10  # steps per factor of 10, about 1.26 each


def temperature_grid(value=1.0, anchors=T_ANCHORS, per_decade=T_PER_DECADE):
    """The temperature slider's stops: ``anchors`` (and ``value``) exactly, and between two
    neighbouring anchors the whole number of equal steps nearest ``per_decade`` per decade, so
    the stops are even on a log scale (every step multiplies T by 1.26, give or take 0.2%).
    A ``value`` outside the anchors' range widens it."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"temperature (where the slider starts) must be a positive number; "
                         f"got {value!r}")
    marks = sorted({float(a) for a in anchors} | {float(value)})
    grid = [marks[0]]
    for lo, hi in zip(marks, marks[1:]):
        n = max(1, round(per_decade * math.log10(hi / lo)))  # whole steps from lo to hi
        grid += [lo * (hi / lo) ** (i / n) for i in range(1, n)] + [hi]
    return grid


def temperature_labels(grid):
    """The stops as the page's titles write T: two decimals (0.05, 0.10, 0.13, ..., 10.00)."""
    return [f"{t:.2f}" for t in grid]


#: The explorer's captions and head titles, one template each, for Python (``_title``,
#: ``_head_labels``: the widget's picture, print) and the page (explorer.js, which gets them in
#: the exported data) alike, filled by ``mha.live.views.fill`` and format.js's ``fill``: the
#: same words and the same numbers (T with two decimals, as the slider writes it) on both.
CAPTIONS = {
    "random": "{heads}{kv}, L = {L}, d_model = {d_model}, T = {T:.2f}, mask: {mask}{window}, "
              "seed {seed}{sink}",
    "trained": "{source} (trained), {sample}, {lengths}, T = {T:.2f}{window}{sink}",
    "heads": "{n} head{s}",
    "kv": ", {n} key/value head{s}",
    "window": ", causal window {w}",
    "window_mask": "causal window {w}",  # the mask's place when the mask is "none"
    "sink": explore.SINK_SAID,
    "passage": "passage \"{name}\" (seed {seed})",
    "sample": "input sample {seed}",
    "length": "L = {L}",
    "lengths": "Lq = {Lq}, Lk = {Lk}",
    "head": "head {h}",
    "head_kv": "head {h} (kv {g})",
}


def _count(template, n):
    return fill(CAPTIONS[template], n=n, s="" if n == 1 else "s")


def _title(config, weights=None):
    """The caption (``CAPTIONS``): the knobs, and with a sink the weight it took (needs
    ``weights``, whose shape also gives a trained source's query and key lengths)."""
    c, P = config, CAPTIONS
    window = fill(P["window"], w=c["window"]) if c.get("window") is not None else ""
    sink = explore.sink_said(c, weights)
    if c.get("source", "random layer") != "random layer":
        sample = (fill(P["passage"], name=c["passage"], seed=c["seed"]) if c.get("passage")
                  else fill(P["sample"], seed=c["seed"]))
        Lq, Lk = (c["seq_len"],) * 2 if weights is None else tuple(weights.shape[-2:])
        lengths = fill(P["length"], L=Lq) if Lq == Lk else fill(P["lengths"], Lq=Lq, Lk=Lk)
        return fill(P["trained"], source=c["source"], sample=sample, lengths=lengths,
                    T=float(c["temperature"]), window=window, sink=sink)
    H, Hkv = c["num_heads"], c["num_kv_heads"]
    fn = f"attention_fn = {c['attention_fn']}: " if c.get("attention_fn") else ""
    mask = c["mask_kind"]
    if window and mask == "none":  # "mask: none, causal window 2" read as a contradiction
        mask, window = fill(P["window_mask"], w=c["window"]), ""
    return fn + fill(P["random"], heads=_count("heads", H),
                     kv="" if Hkv == H else _count("kv", Hkv), L=c["seq_len"],
                     d_model=c["d_model"], T=float(c["temperature"]), mask=mask,
                     window=window, seed=c["seed"], sink=sink)


def _head_labels(result):
    if result.head_labels is not None:
        return list(result.head_labels)
    H, Hkv = result.config["num_heads"], result.config["num_kv_heads"]
    group = H // Hkv
    return [fill(CAPTIONS["head_kv"], h=h, g=h // group) if Hkv < H
            else fill(CAPTIONS["head"], h=h) for h in range(H)]


def render(result):
    """A matplotlib figure of one ``ExplorerResult`` (for print): one heatmap per head
    (``mha.viz.plot_heads``), one colour scale from 0 to 1, tokens on the axes."""
    from mha.viz import plot_heads

    keys = result.tokens if result.key_tokens is None else result.key_tokens
    return plot_heads(result.weights, result.tokens, keys,
                      title=_title(result.config, result.weights),
                      head_labels=_head_labels(result), vmax=1.0)


#: said under every pattern-score table: the patterns are not a partition of the keys
OVERLAP = ("The patterns overlap (for query 0, \"self\" and \"first\" name the same key), "
           "so a head's row need not sum to 1.")


def _table(t):
    """A trained source's pattern scores (``mha_book.sources.head_table``) as a table view (its
    caption says the patterns overlap); alignment scores (cross attention) as they are."""
    if t is None:
        return None
    caption = t.get("caption", "")
    if caption.startswith("Pattern scores"):
        caption = f"{caption} {OVERLAP}"
    return table(["head", *t["columns"]], t["rows"], caption)



def payload(result, view="heatmaps"):
    """The views of one ``ExplorerResult``: the heatmaps (weights to 1e-6), or with ``view`` =
    "lines" the same weights as one head's lines (the head picked in the page), and a trained
    source's table."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {list(VIEWS)}; got {view!r}")
    keys = result.tokens if result.key_tokens is None else result.key_tokens
    heads = heatmap(result.weights, result.tokens, keys, titles=_head_labels(result),
                    caption=_title(result.config, result.weights), digits=6, fit=True,
                    masked=None if result.mask is None else ~result.mask)
    if result.config.get("passage"):  # a passage: up to context_length characters
        heads["cell_min"] = TEXT_CELL_MIN
    lines = None
    if view == "lines":
        lines = {k: heads[k] for k in ("grids", "rows", "cols", "titles", "caption", "label")}
        lines.update(head=0, focus=None)
        heads = None
    return {"heads": heads, "lines": lines, "table": _table(result.table)}


def view_figure(result, view="heatmaps"):
    """One picture, no controls (the widget's view in a kernel): every head's heatmap, or one
    head as lines (``view="lines"``)."""
    views = payload(result, view)
    return Figure(name="explorer-view", title=f"attention weights: {VIEWS[view]}", controls=[],
                  views=[View("heads", "heatmap"), View("lines", "lines"),
                         View("table", "table")],
                  state_fn=lambda: {"views": views,
                                    "readout": _title(result.config, result.weights)})


def message_html(message):
    return (f'<div class="mha-live-message" role="alert" style="color:inherit"><b>Cannot '
            f'compute this one.</b> {html.escape(message)}</div>')


def frozen_figure(knobs, result, reason):
    """A picture that cannot be recomputed in the page: the knobs as text, no controls."""
    fig = view_figure(result)
    shown = ", ".join(f"{k} = {v}" for k, v in knobs.items() if k != "source" and v is not None)
    fig.note = (f"<b>Needs a live kernel:</b> {html.escape(reason)} The page shows the picture "
                f"for {html.escape(shown)}; open the chapter in Colab or Binder (rocket button "
                f"at the top) or Jupyter to turn the knobs.")
    return fig


# ----------------------------------------------------------------------------- export

def _b64(x):
    """float32 tensor -> base64 of its little-endian bytes."""
    import numpy as np

    array = x.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4")
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def _random_data(sentences):
    """Queries and keys of the random layer for every seed and sentence (see module docstring)."""
    D = STATIC_D_MODEL
    widths = {}  # key width Hkv*Dh -> a (H, Hkv) that makes it (W_k depends only on its shape)
    for H in STATIC_HEADS:
        for Hkv in (h for h in range(1, H + 1) if H % h == 0):
            widths.setdefault(Hkv * (D // H), (H, Hkv))
    q, k = {}, {}
    with torch.no_grad():
        for seed in STATIC_SEEDS:
            layers = {w: explore.build_layer(D, H, Hkv, seed) for w, (H, Hkv) in widths.items()}
            for name in sentences:
                tokens, _ = explore._fit(explore.tokenize(name), MAX_LEN)
                x = explore.embed_tokens(tokens, D)[0]  # (L_max, D)
                q[f"{seed}|{name}"] = _b64(layers[D].W_q(x))  # (L_max, D): same for every H
                for w, layer in layers.items():
                    k[f"{seed}|{name}|{w}"] = _b64(layer.W_k(x))  # (L_max, Hkv*Dh)
    return {"kind": "random", "q": q, "k": k}


def _trained_data(source):
    from mha_book.sources import (
        TRAINED_SOURCES,
        head_table,
        passages_said,
        rows_said,
        trained_views,
    )

    views = {}
    for seed, v in zip(STATIC_SEEDS, trained_views(source, STATIC_SEEDS)):
        views[str(seed)] = {"q": _b64(v.q), "k": _b64(v.k), "tokens_q": v.tokens_q,
                            "tokens_k": v.tokens_k}
        if v.name is not None:  # a passage of the Shakespeare model: the caption names it
            views[str(seed)]["name"] = v.name
    t = head_table(source)
    picks = (f"seed picks the passage ({passages_said(STATIC_SEEDS)})" if v.name is not None
             else "seed picks the input sample")
    text = {"cell_min": TEXT_CELL_MIN} if v.name is not None else {}
    return {"kind": "trained", "views": views, "H": v.num_heads, "Dh": v.d_head, **text,
            "causal": v.causal, "cross": TRAINED_SOURCES[source][2] == "cross",
            "table": _table(t),
            "titles": [f"head {h}: {n}" for h, n in enumerate(t["names"])],
            "note": (f"A trained layer: {v.num_heads} heads, d_head = {v.d_head}"
                     f"{', causal' if v.causal else ''}. Its size, mask and inputs are the "
                     f"model's own: {picks}, temperature divides its "
                     f"scores (1 = as trained; choosing a trained source from the random "
                     f"layer resets it to 1). {rows_said(source)}").strip()}


def explorer_data(sources=None):
    """Everything the static explorer needs (a JSON-able dict; see the module docstring)."""
    from mha_book.sources import TRAINED_SOURCES

    names = list(explore.EXAMPLE_SENTENCES)
    sources = ["random layer", *TRAINED_SOURCES] if sources is None else list(sources)
    with one_thread():  # tiny matrix products: one thread beats two busy ones
        data = {"kind": "explorer", "d_model": STATIC_D_MODEL, "max_len": MAX_LEN,
                "captions": CAPTIONS,
                "tokens": {n: explore._fit(explore.tokenize(n), MAX_LEN)[0] for n in names},
                "lengths": {n: len(explore.tokenize(n)) for n in names}, "sources": {},
                "counts": {}}
        for source in sources:
            data["sources"][source] = (_random_data(names) if source == "random layer"
                                       else _trained_data(source))
    D = STATIC_D_MODEL
    for H in STATIC_HEADS:
        for Hkv in (h for h in range(1, H + 1) if H % h == 0):
            params = counts.count_parameters(D, H, Hkv)["total"]
            for L in range(2, MAX_LEN + 1):
                flops = counts.count_flops(L, D, H, Hkv)["total"]
                data["counts"][f"{H},{Hkv},{L}"] = [params, flops, 2 * L * Hkv * (D // H)]
    return data


def _trained_said(trained):
    """"8 trained layers from chapter 08 and 2 from the Shakespeare model"."""
    text = sum(kind == "text" for _, _, kind in trained.values())
    said = f"{len(trained) - text} trained layers from chapter 08"
    return said + (f" and {text} from the Shakespeare model" if text else "")


@live_figure(knobs={})
def explorer_figure(knobs, data=None):
    """The explorer for the built book, starting at ``knobs`` (the widget's knobs); ``data``
    defaults to ``explorer_data()``."""
    from mha_book.sources import TRAINED_SOURCES

    data = explorer_data() if data is None else data
    k = {**explore.DEFAULTS, **knobs}
    H = k["num_heads"] if k["num_heads"] in STATIC_HEADS else 8
    Hkv = k["num_kv_heads"] if H % k["num_kv_heads"] == 0 else H
    source = k.get("source", "random layer")
    sources = list(data["sources"])
    window, sink = (explore.knob_options(n, k[n]) for n in ("window", "sink"))
    controls = [
        select("source", "source", sources, source if source in sources else sources[0]),
        slider("d_model", "d_model", list(range(4, 257, 2)), STATIC_D_MODEL),
        select("num_heads", "num_heads", list(STATIC_HEADS), H),
        select("num_kv_heads", "num_kv_heads", list(STATIC_HEADS), Hkv),
        slider("seq_len", "seq_len", list(range(2, MAX_LEN + 1)), min(k["seq_len"], MAX_LEN)),
        slider("temperature", "temperature", temperature_grid(value=k["temperature"]),
               float(k["temperature"]), labels=None),
        select("mask", "mask", list(explore.MASK_KINDS), k["mask_kind"]),
        select("window", "window", window, k["window"], explore.knob_labels("window", window)),
        select("sink", "sink", sink, k["sink"], explore.knob_labels("sink", sink)),
        slider("seed", "seed", list(STATIC_SEEDS), min(k["seed"], STATIC_SEEDS[-1])),
        select("sentence", "sentence", list(explore.EXAMPLE_SENTENCES), k["sentence"]),
        select("view", "view", list(VIEWS), "heatmaps", labels=list(VIEWS.values())),
    ]
    controls[1].disabled = True  # d_model: fixed in the page
    for c in controls:  # a phone shows one group at a time, behind tabs
        c.group = next(g for g, names in CONTROL_GROUPS.items() if c.name in names)
    controls[5].labels = temperature_labels(controls[5].values)
    note = ("<b>Live in this page, no kernel needed:</b> source, num_heads, num_kv_heads, "
            "seq_len, temperature, mask, window, sink, seed (0 to "
            f"{STATIC_SEEDS[-1]}) and sentence redraw the heatmaps from queries and keys the "
            "package computed when the book was built. <b>Greyed out here:</b> d_model (fixed "
            "at 64), which needs Python, as do seeds above "
            f"{STATIC_SEEDS[-1]} and your own attention function: open this chapter in Colab "
            "or Binder (the rocket button at the top) or run it in Jupyter to turn every knob. "
            "num_kv_heads offers only divisors of num_heads; a trained source fixes its own "
            f"size, mask and inputs ({_trained_said(TRAINED_SOURCES)}). "
            "<b>window</b>: a query sees its last w positions (causal). <b>sink</b>: a logit s "
            "joins each row's softmax and is dropped, so rows sum to less than 1. "
            "<b>view</b> switches between every head's heatmap and one head as lines (pick the "
            "head; focus, hover or tap a token to see only its lines).")
    return Figure(name="explorer", title="The attention explorer", controls=controls,
                  views=[View("counts", "text"), View("heads", "heatmap"),
                         View("lines", "lines"), View("table", "table")],
                  compute="explorer", data=data, note=note)
