"""The explorer's HTML: what the front end (``mha/static/explorer.js``) draws, live or static.

* ``live_html(payload)``: one picture Python computed (weights, labels, titles), for the
  ``Output`` view of the widget in Jupyter; the front end only draws it.
* ``explorer_html(...)`` / ``bars_html(...)``: a self-contained page fragment for the built book
  (no kernel): native controls with labels, the data exported here (``explorer_data``), and the
  script, which recomputes the weights from that data at every change of a control.

What is exported for the random layer (d_model fixed at ``STATIC_D_MODEL``): for every seed in
``STATIC_SEEDS`` and every example sentence, the layer's queries q = W_q x (L_max, D) and keys
k = W_k x (L_max, Hkv*Dh) at the longest length L_max, for every key width Hkv*Dh the heads can
make. Queries and keys of token i do not depend on the other tokens, so the first seq_len rows
are exactly what a shorter sentence gives; the page splits them into heads, applies the mask and
the temperature and takes the softmax. For a trained source, the layer's queries and keys on
each input sample (``mha.sources``). Numbers travel as base64 of little-endian float32.
"""

import base64
import html
import json
from functools import lru_cache
from pathlib import Path

import torch

__all__ = ["bars_html", "explorer_data", "explorer_html", "live_html"]

STATIC_D_MODEL = 64
STATIC_HEADS = (1, 2, 4, 8, 16)
STATIC_SEEDS = tuple(range(5))
MAX_LEN = 24
JS = Path(__file__).resolve().parent / "static" / "explorer.js"

CSS = """<style>
.mha-view{font-family:sans-serif;font-size:13px;margin:.5em 0}
.mha-view .mha-note{background:#f3f6fa;border-left:4px solid #3b6ea5;padding:.4em .7em;margin:.3em 0 .6em}
.mha-view .mha-controls{display:grid;grid-template-columns:repeat(auto-fill,minmax(17em,1fr));gap:.3em 1.2em}
.mha-view label{display:flex;align-items:center;gap:.5em}
.mha-view label>span{min-width:7.5em}
.mha-view select,.mha-view input{max-width:11em}
.mha-view :disabled{opacity:.45;cursor:not-allowed}
.mha-view .mha-counts{margin:.5em 0;color:#333}
.mha-view canvas{max-width:100%;height:auto}
.mha-view table{border-collapse:collapse;font-size:12px;margin:.4em 0}
.mha-view td,.mha-view th{padding:0 .6em;text-align:right}
.mha-view caption{text-align:left;color:#555}
.mha-view .mha-message,.mha-view .mha-error{color:#a40000}
</style>"""


@lru_cache(maxsize=1)
def _script():
    return f"<script>{JS.read_text(encoding='utf-8')}</script>"


def _b64(x):
    """float32 tensor -> base64 of its little-endian bytes."""
    import numpy as np

    array = x.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4")
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def _data_script(data):
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" class="mha-data">{text}</script>'


# ----------------------------------------------------------------------------- live

def live_html(payload, message=None):
    """A picture for Jupyter: ``payload`` holds ``weights`` and labels (see ``mha.widgets``)."""
    if message is not None:
        return (f'<div class="mha-view"><div class="mha-message" role="alert"><b>Cannot compute '
                f'this one.</b> {html.escape(message)}</div></div>')
    return (f'{CSS}<div class="mha-view mha-live"><canvas role="img" aria-label="Attention weights (drawn by the page script)"></canvas>'
            f'<div class="mha-table"></div><div class="mha-error"></div>'
            f'{_data_script(payload)}{_script()}</div>')


# ----------------------------------------------------------------------------- export

def _random_data(sentences):
    """Queries and keys of the random layer for every seed and sentence (see module docstring)."""
    from . import widgets

    D = STATIC_D_MODEL
    widths = {}  # key width Hkv*Dh -> a (H, Hkv) that makes it (W_k depends only on its shape)
    for H in STATIC_HEADS:
        for Hkv in (h for h in range(1, H + 1) if H % h == 0):
            widths.setdefault(Hkv * (D // H), (H, Hkv))
    q, k = {}, {}
    with torch.no_grad():
        for seed in STATIC_SEEDS:
            layers = {w: widgets.build_layer(D, H, Hkv, seed) for w, (H, Hkv) in widths.items()}
            for name in sentences:
                tokens, _ = widgets._fit(widgets.tokenize(name), MAX_LEN)
                x = widgets.embed_tokens(tokens, D)[0]  # (L_max, D)
                q[f"{seed}|{name}"] = _b64(layers[D].W_q(x))  # (L_max, D): same for every H
                for w, layer in layers.items():
                    k[f"{seed}|{name}|{w}"] = _b64(layer.W_k(x))  # (L_max, Hkv*Dh)
    return {"kind": "random", "q": q, "k": k}


def _trained_data(source):
    from .sources import head_table, trained_views

    views = {}
    for seed, v in zip(STATIC_SEEDS, trained_views(source, STATIC_SEEDS)):
        views[str(seed)] = {"q": _b64(v.q), "k": _b64(v.k), "tokens_q": v.tokens_q,
                            "tokens_k": v.tokens_k}
    table = head_table(source)
    return {"kind": "trained", "views": views, "H": v.num_heads, "Dh": v.d_head,
            "causal": v.causal, "table": table,
            "titles": [f"head {h}: {n}" for h, n in enumerate(table["names"])],
            "note": (f"A trained layer: {v.num_heads} heads, d_head = {v.d_head}"
                     f"{', causal' if v.causal else ''}. Its size, mask and inputs are the "
                     f"model's own: seed picks the input sample, temperature divides its "
                     f"scores (1 = as trained; choosing a trained source from the random "
                     f"layer resets it to 1).")}


def explorer_data(sources=None):
    """Everything the static explorer needs (a JSON-able dict; see the module docstring)."""
    from . import widgets
    from .sources import TRAINED_SOURCES

    names = list(widgets.EXAMPLE_SENTENCES)
    sources = ["random layer", *TRAINED_SOURCES] if sources is None else list(sources)
    with widgets._one_thread():  # tiny matrix products: one thread beats two busy ones
        return _explorer_data(names, sources)


def _explorer_data(names, sources):
    from . import counts, widgets

    data = {"kind": "explorer", "d_model": STATIC_D_MODEL, "max_len": MAX_LEN,
            "tokens": {n: widgets._fit(widgets.tokenize(n), MAX_LEN)[0] for n in names},
            "lengths": {n: len(widgets.tokenize(n)) for n in names}, "sources": {}, "counts": {}}
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


# ----------------------------------------------------------------------------- static page

def _control(knob, label, inner, aria, disabled=False, readout=None):
    """A labelled control: ``inner`` is its element with ``{attrs}`` where the attributes go."""
    attrs = f'data-knob="{knob}" aria-label="{html.escape(aria)}"' + (" disabled" if disabled else "")
    out = (f'<output data-for="{knob}">{html.escape(str(readout))}</output>'
           if readout is not None else "")
    return f'<label><span>{label}</span>{inner.replace("{attrs}", attrs)}{out}</label>'


def _select(options, value):
    return "<select {attrs}>" + "".join(
        f'<option value="{html.escape(str(o))}"{" selected" if str(o) == str(value) else ""}>'
        f"{html.escape(str(o))}</option>" for o in options) + "</select>"


def _log_range(lo, hi, step, value):
    """A range over log10 of a value whose grid passes through ``value`` exactly (a range input
    snaps to min + n * step), so the page starts at the very temperature Python used."""
    import math

    exponent = math.log10(value)
    lo = exponent - step * round((exponent - lo) / step)
    n = math.floor((hi - lo) / step + 1e-9)
    return _range(f"{lo:.10g}", f"{lo + n * step:.10g}", step, f"{exponent:.10g}")


def _range(lo, hi, step, value):
    return f'<input type="range" min="{lo}" max="{hi}" step="{step}" value="{value}" {{attrs}}>'


def explorer_html(knobs, data=None):
    """The static explorer for the built book, starting at ``knobs`` (a dict of the widget's
    knobs); ``data`` defaults to ``explorer_data()``."""

    from . import widgets
    from .sources import TRAINED_SOURCES

    data = explorer_data() if data is None else data
    k = dict(knobs)
    H = k["num_heads"] if k["num_heads"] in STATIC_HEADS else 8
    Hkv = k["num_kv_heads"] if H % k["num_kv_heads"] == 0 else H
    seed = min(k["seed"], STATIC_SEEDS[-1])
    source = k.get("source", "random layer")
    controls = [
        _control("source", "source", _select(list(data["sources"]), source),
                 "source of the heads: the random layer or a layer of a trained model"),
        _control("d_model", "d_model", _range(4, 256, 2, STATIC_D_MODEL),
                 "d_model (fixed at 64 in the page; change it in a live kernel)", True,
                 STATIC_D_MODEL),
        _control("num_heads", "num_heads", _select(STATIC_HEADS, H),
                 "number of heads (divisors of d_model)"),
        _control("num_kv_heads", "num_kv_heads", _select([d for d in range(1, H + 1) if H % d == 0], Hkv),
                 "number of key/value heads (divisors of num_heads)"),
        _control("seq_len", "seq_len", _range(2, MAX_LEN, 1, min(k["seq_len"], MAX_LEN)),
                 "sequence length in tokens", readout=k["seq_len"]),
        _control("temperature", "temperature", _log_range(-1.3, 1.3, 0.05, k["temperature"]),
                 "temperature (log scale)", readout=f"{k['temperature']:.2f}"),
        _control("mask", "mask", _select(widgets.MASK_KINDS, k["mask_kind"]), "mask"),
        _control("seed", "seed", _range(0, STATIC_SEEDS[-1], 1, seed),
                 "seed of the random weights (trained source: the input sample)", readout=seed),
        _control("sentence", "sentence", _select(list(widgets.EXAMPLE_SENTENCES), k["sentence"]),
                 "example sentence"),
    ]
    note = ("<b>Live in this page, no kernel needed:</b> source, num_heads, num_kv_heads, "
            "seq_len, temperature, mask, seed (0 to "
            f"{STATIC_SEEDS[-1]}) and sentence redraw the heatmaps from queries and keys the "
            "package computed when the book was built. <b>Greyed out here:</b> d_model (fixed "
            "at 64), which needs Python, as do seeds above "
            f"{STATIC_SEEDS[-1]} and your own attention function: open this chapter in Colab "
            "or Binder (the rocket button at the top) or run it in Jupyter to turn every knob. "
            "num_kv_heads offers only divisors of num_heads; a trained source fixes its own "
            f"size, mask and inputs ({len(TRAINED_SOURCES)} trained layers from chapter 08).")
    return (f'{CSS}<div class="mha-view mha-static" data-mha="explorer">'
            f'<p class="mha-note">{note}</p><div class="mha-controls" role="group" '
            f'aria-label="explorer controls">{"".join(controls)}</div>'
            f'<div class="mha-counts" aria-live="polite"></div><canvas role="img" aria-label="Attention weights (drawn by the page script)"></canvas>'
            f'<div class="mha-table"></div><div class="mha-error"></div>'
            f'{_data_script(data)}{_script()}</div>')


def frozen_html(knobs, payload, reason):
    """A picture that cannot be recomputed in the page (e.g. it runs a reader's attention
    function): the knobs as text, not as controls, and the picture Python drew."""
    shown = ", ".join(f"{k} = {v}" for k, v in knobs.items() if k != "source")
    return (f'{CSS}<div class="mha-view"><p class="mha-note"><b>Needs a live kernel:</b> '
            f'{html.escape(reason)} The page shows the picture for {html.escape(shown)}; '
            f'open the chapter in Colab or Binder (rocket button at the top) or Jupyter to turn '
            f'the knobs.</p></div>{live_html(payload)}')


def bars_html(scores, tokens, *, temperature, highlight=None, caption):
    """Chapter 01's slider for the built book: the page applies softmax(scores / T) to the
    ``scores`` Python computed. ``caption`` may hold ``{T}``, replaced by the temperature."""

    data = {"kind": "bars", "scores": [float(s) for s in scores], "tokens": list(tokens),
            "highlight": highlight, "caption": caption}
    slider = _control("temperature", "temperature T",
                      _log_range(-2, 2, 0.05, temperature),
                      "temperature T (log scale)", readout=f"{temperature:.2f}")
    return (f'{CSS}<div class="mha-view mha-static" data-mha="bars"><p class="mha-note">'
            f'<b>Live in this page:</b> the slider recomputes the softmax of the scores above '
            f'at the new temperature, no kernel needed.</p><div class="mha-controls">{slider}'
            f'</div><canvas role="img" aria-label="Attention weights (drawn by the page script)"></canvas><div class="mha-error"></div>'
            f'{_data_script(data)}{_script()}</div>')
