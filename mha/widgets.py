"""The attention explorer of chapter 07: knobs -> real multi-head attention -> one heatmap per head.

Two layers, so the maths can be tested without a browser:

* ``explore_once(...) -> ExplorerResult`` is a *pure* recompute: it builds a seeded
  ``mha.MultiHeadAttention`` (grouped-query when ``num_kv_heads < num_heads``), embeds an example
  sentence, runs attention and returns the per-head weights (H, L, L), the token labels and the
  parameter and FLOP counts, or a friendly ``message`` (never an exception) for an impossible
  combination of knobs.
* ``explorer(...)`` builds the ipywidgets UI around it: every change of a control calls
  ``explore_once`` again and sends the weights to the front end (``mha/static/explorer.js``),
  which draws them on a canvas: one heatmap per head, token labels, one colour scale, a colour
  bar. Displayed, the explorer is that widget in Jupyter (and Colab), and in the built book a
  self-contained HTML version (``mha.webview``) whose controls recompute the weights in the
  page from queries and keys exported here, with no kernel.
* ``source``: ``"random layer"`` (the seeded layer below) or a layer of chapter 08's trained
  tiny models on its own inputs (``mha.sources``): then ``seed`` picks the input sample and only
  the temperature applies (switching from the random layer to a trained one resets it to 1, the
  model as trained); the heads' names and pattern scores are shown beside them.

Coupled knobs stay valid in the UI: num_heads offers only the divisors of d_model (up to 16),
num_kv_heads only the divisors of num_heads. ``explore_once`` still explains an impossible
combination given to it directly.

How the input is made. The sentence is split into words and punctuation; ``seq_len`` trims it or
pads it with ``<pad>``. Each word gets a fixed random embedding (a normal vector seeded by the
word itself, so "the" is the same vector wherever it occurs and whatever ``seed`` is; ``<pad>`` is
the zero vector) plus the sinusoidal position encoding of Vaswani et al. ``seed`` picks the
layer's random weights: W_q, W_k, W_v, W_o are drawn from N(0, 1/d_model), which gives queries
and keys about unit spread (PyTorch's default uniform init gives a third of it and almost flat
weights, which would make every head look the same).

Temperature T divides the scores: weights = softmax(q.k / (T * sqrt(d_head))). It is applied by
dividing the queries by T before the attention function is called, so a reader's function sees
tempered scores without knowing about T. T < 1 sharpens every row, T > 1 flattens it.

Masks (bool, True = may attend): ``"none"``; ``"causal"`` (query i sees keys 0..i);
``"padding"`` (no query may look at a ``<pad>`` key, d2l's ``valid_lens``).

Your own attention function: ``attention_fn(query, key, value, mask) -> (output, weights)`` with
the semantics of ``mha.scaled_dot_product_attention``: query (1, H, L, Dh), key and value
(1, H, L, Dh) (with GQA the key/value heads are already repeated to H), mask None or bool
(1, 1, L, L) with True = may attend; it must return output (1, H, L, Dh) and weights (1, H, L, L).

Shapes: H heads, Hkv key/value heads, L = seq_len, D = d_model, Dh = d_head.
"""

import math
import re
import zlib
from dataclasses import dataclass, field

import torch

# count_parameters / count_flops live in mha.counts; re-exported here for older imports
from .counts import count_flops, count_parameters

__all__ = [
    "EXAMPLE_SENTENCES",
    "MASK_KINDS",
    "Explorer",
    "ExplorerResult",
    "SOURCES",
    "TemperatureBars",
    "count_flops",
    "count_parameters",
    "embed_tokens",
    "explore_once",
    "explorer",
    "measure_latency",
    "render",
    "temperature_bars",
    "tokenize",
    "validate",
]

#: the example sentences (short name -> text); the first two are the two senses of "bank"
EXAMPLE_SENTENCES = {
    "bank by the river": "The bank by the river was flooded after the storm .",
    "deposit at the bank": "I will deposit my pay at the bank on Monday .",
    "cat on the mat": "The cat sat on the mat because it was tired .",
    "animal and street": "The animal did not cross the street because it was tired .",
    "counting": "one two three four five six seven eight nine ten eleven twelve",
}
MASK_KINDS = ("none", "causal", "padding")
PAD = "<pad>"

#: the explorer's starting knobs (8 heads over 12 tokens: the setting the latency is measured on)
DEFAULTS = {"source": "random layer", "d_model": 64, "num_heads": 8, "num_kv_heads": 8,
            "seq_len": 12, "temperature": 1.0, "mask_kind": "none", "seed": 0,
            "sentence": "bank by the river"}
#: the heads the explorer can show: the random layer, or a trained layer (``mha.sources``)
SOURCES = ("random layer", "letters model: layer 0", "letters model: layer 1",
           "translator encoder: layer 0", "translator encoder: layer 1",
           "translator decoder: layer 0", "translator decoder: layer 1",
           "translator cross-attention: layer 0", "translator cross-attention: layer 1")
MAX_HEADS = 16


@dataclass
class ExplorerResult:
    """What one recompute produced: weights and counts, or a message saying why not."""

    config: dict
    tokens: list = field(default_factory=list)  # L labels (sentence trimmed/padded to seq_len)
    weights: torch.Tensor = None  # (H, Lq, Lk), cpu float32; None when ``message`` is set
    output: torch.Tensor = None  # (L, D): the layer's output for the sentence (random layer)
    params: dict = None  # parameters per projection and "total" (random layer)
    flops: dict = None  # FLOPs per step and "total" (random layer)
    message: str = None  # why this combination is impossible (then weights is None)
    key_tokens: list = None  # Lk labels when they differ from ``tokens`` (cross-attention)
    head_labels: list = None  # one title per head
    table: dict = None  # a trained source's pattern scores (``mha.sources.head_table``)

    @property
    def ok(self):
        return self.message is None

    def counts_html(self):
        """The counts panel: an HTML table of parameters and FLOPs; empty when there is a
        ``message`` (the view shows it, once); a note for a trained source."""
        if not self.ok:
            return ""
        c = self.config
        if c.get("source", "random layer") != "random layer":
            return (f"<div style='font-size:0.85em;max-width:40em'>A trained layer of chapter 08: "
                    f"{c['num_heads']} heads, d_head = {c['d_model'] // c['num_heads']}, its own "
                    f"inputs and mask. <b>seed</b> picks the input sample and <b>temperature</b> "
                    f"divides its scores (1 = as trained; choosing a trained source from the random "
                    f"layer resets it to 1); the other knobs are the model's.</div>")
        d_head = c["d_model"] // c["num_heads"]
        rows = [("d_head = d_model / num_heads", d_head),
                ("query heads per key/value head", c["num_heads"] // c["num_kv_heads"])]
        rows += [(f"parameters: {k}", v) for k, v in self.params.items()]
        rows += [(f"FLOPs: {k}", v) for k, v in self.flops.items()]
        rows.append(("KV cache values (per layer, L tokens)",
                     2 * c["seq_len"] * c["num_kv_heads"] * d_head))
        cell = "padding:0 0.6em;line-height:1.3"

        def table(part):
            body = "".join(f"<tr><td style='text-align:left;{cell}'>{k}</td>"
                           f"<td style='text-align:right;{cell}'>{v:,}</td></tr>" for k, v in part)
            return f"<table style='font-size:0.85em;border-collapse:collapse'>{body}</table>"

        split = 2 + len(self.params)  # shapes and parameters | FLOPs and the KV cache
        return (f"<div style='display:flex;gap:2em;flex-wrap:wrap'>{table(rows[:split])}"
                f"{table(rows[split:])}</div>")


# ----------------------------------------------------------------------------- input

def tokenize(sentence):
    """Words and punctuation marks: ``"the bank."`` -> ``["the", "bank", "."]``."""
    return re.findall(r"[\w']+|[^\w\s]", EXAMPLE_SENTENCES.get(sentence, sentence))


def _positions(seq_len, d_model):
    """Sinusoidal position encoding (L, D) of Vaswani et al. (2017)."""
    pos = torch.arange(seq_len, dtype=torch.float32)[:, None]  # (L, 1)
    freq = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)  # (D/2,)
    pe = torch.zeros(seq_len, d_model)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)[:, : d_model // 2]
    return pe


def embed_tokens(tokens, d_model):
    """(1, L, D): a fixed random vector per word (seeded by the word; zeros for <pad>) + positions."""
    rows = []
    for tok in tokens:
        if tok == PAD:
            rows.append(torch.zeros(d_model))
            continue
        gen = torch.Generator().manual_seed(zlib.crc32(tok.lower().encode()))
        rows.append(torch.randn(d_model, generator=gen))
    x = torch.stack(rows) + _positions(len(tokens), d_model)  # (L, D)
    return x.unsqueeze(0)  # (L, D) -> (1, L, D)


def _fit(tokens, seq_len):
    """Trim or pad to ``seq_len``; returns the tokens and the number of real (valid) ones."""
    tokens = tokens[:seq_len]
    return tokens + [PAD] * (seq_len - len(tokens)), len(tokens)


# ----------------------------------------------------------------------------- recompute

def _divisors(n):
    return [k for k in range(1, n + 1) if n % k == 0]


def validate(d_model, num_heads, num_kv_heads, seq_len, temperature, mask_kind, seed, sentence):
    """None if the knobs make a layer, else a friendly sentence saying what to change."""
    for name, value in (("d_model", d_model), ("num_heads", num_heads),
                        ("num_kv_heads", num_kv_heads), ("seq_len", seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name} must be a positive whole number; got {value!r}."
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return f"seed must be a whole number >= 0; got {seed!r}."
    if not isinstance(temperature, (int, float)) or not temperature > 0 or math.isinf(temperature):
        return f"temperature must be a positive number; got {temperature!r}."
    if mask_kind not in MASK_KINDS:
        return f"mask_kind must be one of {', '.join(MASK_KINDS)}; got {mask_kind!r}."
    if not isinstance(sentence, str) or not tokenize(sentence):
        return f"sentence must be one of the examples or a non-empty text; got {sentence!r}."
    if d_model % num_heads:
        ok = [h for h in _divisors(d_model) if h <= MAX_HEADS]
        return (f"d_model ({d_model}) must be divisible by num_heads ({num_heads}): every head "
                f"gets d_model / num_heads features. With d_model = {d_model}, num_heads can be "
                f"{', '.join(map(str, ok))}.")
    if num_heads % num_kv_heads:
        return (f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads}): "
                f"each key/value head serves the same number of query heads. With num_heads = "
                f"{num_heads}, num_kv_heads can be {', '.join(map(str, _divisors(num_heads)))}.")
    return None


def build_layer(d_model, num_heads, num_kv_heads, seed):
    """The seeded layer, weights drawn from N(0, 1/d_model) (see the module docstring).

    Uses its own generator: the global random state is left as it was.
    """
    from .layer import MultiHeadAttention

    with torch.random.fork_rng(devices=[]):  # nn.Linear's default init draws from it
        layer = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for proj in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):
            proj.weight.normal_(0.0, d_model ** -0.5, generator=gen)
    return layer.eval()


def _mask(mask_kind, seq_len, valid_len):
    """None or bool (1, 1, L, L), True = may attend."""
    if mask_kind == "none":
        return None
    if mask_kind == "causal":
        allowed = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()  # key j <= query i
    else:
        allowed = (torch.arange(seq_len) < valid_len).expand(seq_len, seq_len)  # key j valid
    return allowed.reshape(1, 1, seq_len, seq_len)  # (L, L) -> (1, 1, L, L)


def _explorer_attend(layer, x, mask, temperature, attention_fn):
    """Project to per-head queries, keys and values, temper the queries, run ``attention_fn``.

    Returns the per-head (output, weights), (1, H, L, Dh) and (1, H, L, L): the heads are not
    merged and W_o is not applied here (the caller does both).
    """
    from .functional import scaled_dot_product_attention, split_heads

    attention_fn = scaled_dot_product_attention if attention_fn is None else attention_fn
    H, Hkv = layer.num_heads, layer.num_kv_heads
    q = split_heads(layer.W_q(x), H)  # (1, L, D) -> (1, H, L, Dh)
    k = split_heads(layer.W_k(x), Hkv)  # (1, L, Hkv*Dh) -> (1, Hkv, L, Dh)
    v = split_heads(layer.W_v(x), Hkv)  # (1, L, Hkv*Dh) -> (1, Hkv, L, Dh)
    k = k.repeat_interleave(H // Hkv, dim=1)  # (1, Hkv, L, Dh) -> (1, H, L, Dh)
    v = v.repeat_interleave(H // Hkv, dim=1)  # (1, Hkv, L, Dh) -> (1, H, L, Dh)
    out, weights = attention_fn(q / temperature, k, v, mask)  # (1, H, L, Dh), (1, H, L, L)
    return out, weights


def _check_returned(out, weights, H, L, Dh):
    for name, x, shape in (("output", out, (1, H, L, Dh)), ("weights", weights, (1, H, L, L))):
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            return f"your attention_fn returned {name} of shape {got}; expected {shape}."
    return None


class _one_thread:
    """Run tiny tensor ops on one CPU thread: a 12 x 64 matmul is slower on two busy threads."""

    def __enter__(self):
        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        torch.set_num_threads(self.threads)


def explore_once(d_model=64, num_heads=8, num_kv_heads=None, seq_len=12, temperature=1.0,
                 mask_kind="none", seed=0, sentence="bank by the river", attention_fn=None,
                 source="random layer"):
    """Recompute the explorer for one setting of the knobs; never raises for bad knobs.

    Returns an ``ExplorerResult`` with ``weights`` (H, L, L), ``tokens`` (L labels), ``output``
    (L, D), ``params`` and ``flops`` (see ``count_parameters`` / ``count_flops``), or with
    ``message`` set (and ``weights`` None) when the combination is impossible or ``attention_fn``
    fails. ``attention_fn``: see the module docstring; None uses
    ``mha.scaled_dot_product_attention``.

    ``source``: ``"random layer"``, or one of ``SOURCES``' trained layers: then the weights
    (H, Lq, Lk) are that layer's on sample ``seed`` of its task, with its scores divided by
    ``temperature``; d_model, num_heads, num_kv_heads, seq_len, mask_kind and sentence are the
    model's own and the given ones are ignored (``config`` records the model's).
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    config = {"source": source, "d_model": d_model, "num_heads": num_heads,
              "num_kv_heads": num_kv_heads, "seq_len": seq_len, "temperature": temperature,
              "mask_kind": mask_kind, "seed": seed, "sentence": sentence}
    if source not in SOURCES:
        return ExplorerResult(config, message=(
            f"source must be one of {', '.join(SOURCES)}; got {source!r}."))
    if source != "random layer":
        return _explore_trained(config)
    message = validate(**{k: v for k, v in config.items() if k != "source"})
    if message:
        return ExplorerResult(config, message=message)
    if attention_fn is not None:  # named in the title: e.g. "attention_fn = hard_attention"
        config["attention_fn"] = getattr(attention_fn, "__name__", type(attention_fn).__name__)
    with _one_thread():
        return _explore(config, attention_fn)


def _explore_trained(config):
    """A trained layer on its own input sample ``seed`` (see ``mha.sources``)."""
    from .sources import head_table, trained_view, trained_weights

    seed, temperature = config["seed"], config["temperature"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return ExplorerResult(config, message=f"seed must be a whole number >= 0; got {seed!r}.")
    if not isinstance(temperature, (int, float)) or not temperature > 0 or math.isinf(temperature):
        return ExplorerResult(config, message=(
            f"temperature must be a positive number; got {temperature!r}."))
    source = config["source"]
    view = trained_view(source, seed)
    with _one_thread():
        weights = trained_weights(source, seed, float(temperature))  # (H, Lq, Lk)
    table = head_table(source)
    config = {**config, "d_model": view.num_heads * view.d_head, "num_heads": view.num_heads,
              "num_kv_heads": view.num_heads, "seq_len": len(view.tokens_q),
              "mask_kind": "causal" if view.causal else "none", "sentence": None}
    return ExplorerResult(config, view.tokens_q, weights=weights.float(),
                          key_tokens=view.tokens_k, table=table,
                          head_labels=[f"head {h}: {n}" for h, n in enumerate(table["names"])])


def _explore(config, attention_fn):
    """The random layer (knobs already validated)."""
    d_model, num_heads, num_kv_heads, seq_len = (
        config[k] for k in ("d_model", "num_heads", "num_kv_heads", "seq_len"))
    tokens, valid_len = _fit(tokenize(config["sentence"]), seq_len)
    layer = build_layer(d_model, num_heads, num_kv_heads, config["seed"])
    x = embed_tokens(tokens, d_model)  # (1, L, D)
    mask = _mask(config["mask_kind"], seq_len, valid_len)
    temperature = float(config["temperature"])
    with torch.no_grad():
        try:
            out, weights = _explorer_attend(layer, x, mask, temperature, attention_fn)
        except Exception as err:  # noqa: BLE001 - a reader's bug: shown in the widget, not raised
            return ExplorerResult(config, tokens, message=(
                f"your attention_fn raised {type(err).__name__}: {err}"))
        problem = _check_returned(out, weights, num_heads, seq_len, d_model // num_heads)
        if problem:
            return ExplorerResult(config, tokens, message=problem)
        from .functional import merge_heads

        output = layer.W_o(merge_heads(out))[0]  # (1, H, L, Dh) -> (1, L, D) -> (L, D)
    return ExplorerResult(
        config, tokens, weights=weights[0].float().cpu(), output=output,
        params=count_parameters(d_model, num_heads, num_kv_heads),
        flops=count_flops(seq_len, d_model, num_heads, num_kv_heads))


# ----------------------------------------------------------------------------- drawing

def _title(config):
    c = config
    if c.get("source", "random layer") != "random layer":
        return (f"{c['source']} (trained), input sample {c['seed']}, "
                f"T = {c['temperature']:.3g}")
    kv = "" if c["num_kv_heads"] == c["num_heads"] else f", {c['num_kv_heads']} key/value heads"
    fn = f"attention_fn = {c['attention_fn']}: " if c.get("attention_fn") else ""
    return (f"{fn}{c['num_heads']} heads{kv}, d_model = {c['d_model']}, T = {c['temperature']:.3g}, "
            f"mask: {c['mask_kind']}, seed {c['seed']}")


def _head_labels(result):
    if result.head_labels is not None:
        return list(result.head_labels)
    H, Hkv = result.config["num_heads"], result.config["num_kv_heads"]
    group = H // Hkv
    return [f"head {h}" + (f" (kv {h // group})" if Hkv < H else "") for h in range(H)]


def render(result):
    """A matplotlib figure of one ``ExplorerResult`` (for print, not for the widget): one
    heatmap per head (``mha.viz.plot_heads``), one colour scale from 0 to 1, tokens on the axes."""
    from .viz import plot_heads

    keys = result.tokens if result.key_tokens is None else result.key_tokens
    return plot_heads(result.weights, result.tokens, keys, title=_title(result.config),
                      head_labels=_head_labels(result), vmax=1.0)


def payload(result):
    """What the front end draws for one ``ExplorerResult`` (JSON-able): weights (H, Lq, Lk)
    rounded to 1e-6, token labels, head titles, the caption and a trained source's table."""
    keys = result.tokens if result.key_tokens is None else result.key_tokens
    weights = (result.weights.double() * 1e6).round().div(1e6).tolist()
    return {"kind": "heads", "weights": weights, "tokens_q": list(result.tokens),
            "tokens_k": list(keys), "titles": _head_labels(result),
            "caption": _title(result.config), "table": result.table}


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _display(widget, static_html, text):
    """Show ``widget`` in a live front end and ``static_html`` where no kernel runs.

    One output with both: Jupyter, JupyterLab, Colab and VS Code render the widget view first;
    the book (``nb_mime_priority_overrides`` in _config.yml) renders the HTML, which works
    without a kernel. Published by hand: ipywidgets 7 widgets have no ``_repr_mimebundle_``.
    """
    from IPython.display import display

    view = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    display({"text/plain": text, "text/html": static_html, WIDGET_VIEW: view}, raw=True)


def _output(view, html_text, text):
    """Replace the outputs of the ``Output`` widget ``view`` with one HTML output."""
    view.outputs = ({"output_type": "display_data", "metadata": {},
                     "data": {"text/html": html_text, "text/plain": text}},)


class Explorer:
    """The UI: ``controls`` (name -> widget), ``view`` (the heatmaps, an ``Output``), ``counts``
    (HTML table), ``note`` (what the coupled knobs do).

    Every change of a control keeps the coupled knobs valid, calls ``update()``, which recomputes
    with ``explore_once`` and sends the weights to the front end; ``result`` is the latest
    ``ExplorerResult`` and ``redraws`` counts the updates. Displaying the object shows its widget
    (``.widget``) in Jupyter and a self-contained HTML explorer in the built book.
    """

    def __init__(self, attention_fn=None, **initial):
        import ipywidgets as w

        unknown = set(initial) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"explorer() got unknown knobs {sorted(unknown)}; "
                            f"expected some of {sorted(DEFAULTS)}")
        v = {**DEFAULTS, **initial}
        if v["num_kv_heads"] == DEFAULTS["num_kv_heads"] and "num_kv_heads" not in initial:
            v["num_kv_heads"] = v["num_heads"]
        d_model = v["d_model"]
        heads = self._head_options(d_model)
        v["num_heads"] = _nearest(heads, v["num_heads"])
        v["num_kv_heads"] = _nearest(_divisors(v["num_heads"]), v["num_kv_heads"])
        cont = {"continuous_update": False, "style": {"description_width": "7.5em"},
                "layout": w.Layout(width="20em")}  # wide enough for the label, bar and readout
        self.controls = {
            "source": w.Dropdown(options=SOURCES, value=v["source"], description="source",
                                 style=cont["style"], layout=cont["layout"]),
            "d_model": w.IntSlider(d_model, min=4, max=256, step=2, description="d_model",
                                   **cont),
            "num_heads": w.SelectionSlider(options=heads, value=v["num_heads"],
                                           description="num_heads", **cont),
            "num_kv_heads": w.SelectionSlider(options=_divisors(v["num_heads"]),
                                              value=v["num_kv_heads"],
                                              description="num_kv_heads", **cont),
            "seq_len": w.IntSlider(v["seq_len"], min=2, max=24, description="seq_len", **cont),
            "temperature": w.FloatLogSlider(v["temperature"], base=10, min=-1.3, max=1.3,
                                            step=0.05, description="temperature", **cont),
            "mask_kind": w.Dropdown(options=MASK_KINDS, value=v["mask_kind"],
                                    description="mask", style=cont["style"],
                                    layout=cont["layout"]),
            "seed": w.IntSlider(v["seed"], min=0, max=20, description="seed", **cont),
            "sentence": w.Dropdown(options=list(EXAMPLE_SENTENCES), value=v["sentence"],
                                   description="sentence", style=cont["style"],
                                   layout=cont["layout"]),
        }
        self.attention_fn = attention_fn
        self.view = w.Output()
        self.counts = w.HTML()
        self.note = w.HTML(
            "<div style='font-size:0.85em;color:#444;max-width:44em'>The knobs keep each other "
            "valid: <b>num_heads</b> offers only the divisors of d_model (up to 16) and "
            "<b>num_kv_heads</b> only the divisors of num_heads. With a trained <b>source</b> "
            "only temperature and seed (the input sample) apply.</div>")
        self.result, self.redraws, self._syncing = None, 0, False
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        names = list(self.controls)
        top = w.HBox([w.VBox([self.controls[n] for n in names[:5]]),
                      w.VBox([self.controls[n] for n in names[5:]])])
        self.widget = w.VBox([top, self.note, self.counts, self.view])
        self._enable()
        self.update()

    @staticmethod
    def _head_options(d_model):
        return [h for h in _divisors(d_model) if h <= MAX_HEADS]

    def config(self):
        return {name: control.value for name, control in self.controls.items()}

    def _enable(self):
        trained = self.controls["source"].value != "random layer"
        for name in ("d_model", "num_heads", "num_kv_heads", "seq_len", "mask_kind", "sentence"):
            self.controls[name].disabled = trained

    def _sync(self, name, old):
        """Keep the coupled knobs valid after ``name`` changed from ``old`` (no redraw while
        doing it). Without grouping (num_kv_heads = num_heads) the two move together."""
        c = self.controls
        self._syncing = True
        try:
            old_heads = old if name == "num_heads" else c["num_heads"].value
            if name == "d_model":
                heads = self._head_options(c["d_model"].value)
                value = _nearest(heads, c["num_heads"].value)
                c["num_heads"].options = heads
                c["num_heads"].value = value
            if name in ("d_model", "num_heads"):
                kv = _divisors(c["num_heads"].value)
                ungrouped = c["num_kv_heads"].value == old_heads
                value = (c["num_heads"].value if ungrouped
                         else _nearest(kv, c["num_kv_heads"].value))
                c["num_kv_heads"].options = kv
                c["num_kv_heads"].value = value
            if name == "source":
                self._enable()
                if old == "random layer" and c["source"].value != "random layer":
                    c["temperature"].value = 1.0  # trained heads first as trained: T = 1
        finally:
            self._syncing = False

    def _changed(self, change):
        if self._syncing:
            return
        owner = next(n for n, c in self.controls.items() if c is change["owner"])
        self._sync(owner, change["old"])
        self.update()

    def update(self, change=None):
        """Recompute and redraw (the observer of every control)."""
        self.result = explore_once(**self.config(), attention_fn=self.attention_fn)
        self.redraws += 1
        self.counts.value = self.result.counts_html()
        if not self.result.ok:
            _output(self.view, _webview().live_html(None, self.result.message), self.result.message)
        else:
            _output(self.view, _webview().live_html(payload(self.result)),
                    "<attention heatmaps, one per head>")

    def static_html(self):
        """The explorer for a page with no kernel (the built book): see ``mha.webview``."""
        web = _webview()
        if self.attention_fn is not None:
            if not self.result.ok:
                return web.live_html(None, self.result.message)
            return web.frozen_html(
                {k: v for k, v in self.config().items() if k != "source"}, payload(self.result),
                "this explorer runs an attention function written in Python, which the page "
                "cannot run.")
        return web.explorer_html({**DEFAULTS, **self.config()})

    def _ipython_display_(self):
        _display(self.widget, self.static_html(), "<the attention explorer>")


def _nearest(options, value):
    """``value`` if it is one of ``options``, else the closest of them (the smaller on a tie)."""
    return value if value in options else min(options, key=lambda o: (abs(o - value), o))


def _webview():
    from . import webview

    return webview


def explorer(attention_fn=None, **initial):
    """Build the attention explorer; ``initial`` sets starting knobs (see ``DEFAULTS``).

    ``attention_fn(query, key, value, mask) -> (output, weights)``, if given, replaces
    ``mha.scaled_dot_product_attention`` (see the module docstring for shapes).
    """
    return Explorer(attention_fn=attention_fn, **initial)


class TemperatureBars:
    """Chapter 01's slider: the weights softmax(scores / T) of one query as bars, for a
    temperature T on a log slider. ``scores`` (n,) and ``tokens`` (n labels) are fixed;
    ``weights()`` is what is drawn. Live in Jupyter (Python computes the weights) and in the
    built book (the page applies the softmax to the exported scores)."""

    def __init__(self, scores, tokens, *, highlight=None, value=1.0, min=-2.0, max=2.0,
                 caption="Weights of the query at temperature T = {T}"):
        import ipywidgets as w

        self.scores = torch.as_tensor(scores, dtype=torch.float32).detach().cpu().flatten()
        self.tokens = [str(t) for t in tokens]
        if len(self.tokens) != len(self.scores):
            raise ValueError(f"tokens has {len(self.tokens)} labels but scores has "
                             f"{len(self.scores)} entries; expected one label per score")
        self.highlight, self.caption = highlight, caption
        self.slider = w.FloatLogSlider(value, base=10, min=min, max=max, step=0.05,
                                       description="T", continuous_update=False)
        self.view = w.Output()
        self.widget = w.VBox([self.slider, self.view])
        self.redraws = 0
        self.slider.observe(self.update, names="value")
        self.update()

    def weights(self):
        return torch.softmax(self.scores / self.slider.value, dim=-1)  # (n,)

    def update(self, change=None):
        T = self.slider.value
        data = {"kind": "bars", "weights": [round(float(x), 6) for x in self.weights()],
                "tokens": self.tokens, "highlight": self.highlight,
                "caption": self.caption.replace("{T}", f"{T:.2f}")}
        _output(self.view, _webview().live_html(data), f"<weights at T = {T:.2f}>")
        self.redraws += 1

    def _ipython_display_(self):
        html_text = _webview().bars_html(self.scores.tolist(), self.tokens,
                                         temperature=self.slider.value,
                                         highlight=self.highlight, caption=self.caption)
        _display(self.widget, html_text, "<temperature slider>")


def temperature_bars(scores, tokens, *, highlight=None, value=1.0,
                     caption="Weights of the query at temperature T = {T}"):
    """A temperature slider over the weights softmax(scores / T) of one query, drawn as bars
    (``TemperatureBars``); ``caption`` may hold ``{T}``."""
    return TemperatureBars(scores, tokens, highlight=highlight, value=value, caption=caption)


def measure_latency(repeats=20, *, change="seed"):
    """Median seconds of one redraw of the explorer in Jupyter, Python side (recompute with the
    package and build what the front end draws), over ``repeats`` changes of one control,
    starting from 8 heads over 12 tokens (d_model 64).

    ``change``: any control: ``"num_heads"`` alternates 8 and 4 heads, ``"seq_len"`` 12 and 8
    tokens, ``"sentence"`` two sentences, ``"source"`` the random layer and a trained layer,
    ``"d_model"`` 64 and 32, and the others step through their values.
    """
    import statistics
    import time

    values = {"seed": list(range(1, 20)) + [0], "temperature": [0.5, 2.0],
              "mask_kind": ["causal", "padding", "none"], "d_model": [32, 64],
              "num_heads": [4, 8], "num_kv_heads": [2, 8], "seq_len": [8, 12],
              "sentence": ["animal and street", "counting"],
              "source": ["letters model: layer 1", "random layer"]}
    if change not in values:
        raise ValueError(f"change must be one of {sorted(values)}; got {change!r}")
    ex = Explorer(sentence="counting")
    times = []
    for i in range(repeats):
        value = values[change][i % len(values[change])]
        start = time.perf_counter()
        ex.controls[change].value = value
        times.append(time.perf_counter() - start)
    if ex.redraws != repeats + 1 or not ex.result.ok:
        raise RuntimeError("the explorer did not redraw once per change")
    return statistics.median(times)
