"""The attention explorer of chapter 07: knobs -> real multi-head attention -> one heatmap per head.

Two layers, so the maths can be tested without a browser:

* ``explore_once(...) -> ExplorerResult`` is a *pure* recompute: it builds a seeded
  ``mha.MultiHeadAttention`` (grouped-query when ``num_kv_heads < num_heads``), embeds an example
  sentence, runs attention and returns the per-head weights (H, L, L), the token labels and the
  parameter and FLOP counts, or a friendly ``message`` (never an exception) for an impossible
  combination of knobs.
* ``explorer(...)`` builds the ipywidgets UI around it: every change of a control calls
  ``explore_once`` again and redraws the heatmaps (``mha.viz.plot_heads``) and the counts table.

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

import base64
import html
import io
import math
import re
import zlib
from dataclasses import dataclass, field

import torch

__all__ = [
    "EXAMPLE_SENTENCES",
    "MASK_KINDS",
    "Explorer",
    "ExplorerResult",
    "count_flops",
    "count_parameters",
    "embed_tokens",
    "explore_once",
    "explorer",
    "measure_latency",
    "render",
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
DEFAULTS = {"d_model": 64, "num_heads": 8, "num_kv_heads": 8, "seq_len": 12, "temperature": 1.0,
            "mask_kind": "none", "seed": 0, "sentence": "bank by the river"}


@dataclass
class ExplorerResult:
    """What one recompute produced: weights and counts, or a message saying why not."""

    config: dict
    tokens: list = field(default_factory=list)  # L labels (sentence trimmed/padded to seq_len)
    weights: torch.Tensor = None  # (H, L, L), cpu float32; None when ``message`` is set
    output: torch.Tensor = None  # (L, D): the layer's output for the sentence
    params: dict = None  # parameters per projection and "total"
    flops: dict = None  # FLOPs per step and "total"
    message: str = None  # why this combination is impossible (then weights is None)

    @property
    def ok(self):
        return self.message is None

    def counts_html(self):
        """The counts panel: an HTML table of parameters and FLOPs (or the message)."""
        if not self.ok:
            return (f'<div style="color:#a40000;max-width:34em"><b>Cannot compute this '
                    f'one.</b><br>{html.escape(self.message)}</div>')
        c = self.config
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


# ----------------------------------------------------------------------------- counts

def count_parameters(d_model, num_heads, num_kv_heads=None, *, bias=False):
    """Parameters of ``mha.MultiHeadAttention(d_model, num_heads, num_kv_heads=...)``.

    W_q, W_o: D x D. W_k, W_v: D x (Hkv * Dh), which is D x D without GQA (Hkv = H).
    With ``bias=True`` each projection adds its number of outputs.
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    d_kv = num_kv_heads * (d_model // num_heads)  # Hkv * Dh
    b = 1 if bias else 0
    params = {"W_q": d_model * d_model + b * d_model, "W_k": d_model * d_kv + b * d_kv,
              "W_v": d_model * d_kv + b * d_kv, "W_o": d_model * d_model + b * d_model}
    params["total"] = sum(params.values())
    return params


def count_flops(seq_len, d_model, num_heads, num_kv_heads=None):
    """FLOPs of one self-attention forward pass over ``seq_len`` tokens (batch of 1).

    A multiply-add counts as 2 FLOPs (an (m x k) @ (k x n) product costs 2*m*k*n).
    Projections: Q and output 2*L*D*D each; K and V 2*L*D*(Hkv*Dh) each.
    Scores Q K^T: H heads of (L x Dh) @ (Dh x L) = 2*H*L*L*Dh = 2*L*L*D, whatever H is.
    Weights x V: the same, 2*L*L*D. The softmax and scaling (a few FLOPs per score, H*L*L,
    no factor D) are left out.
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    L, D, H = seq_len, d_model, num_heads
    d_head = D // H
    d_kv = num_kv_heads * d_head
    flops = {"Q projection": 2 * L * D * D, "K projection": 2 * L * D * d_kv,
             "V projection": 2 * L * D * d_kv, "scores QK^T": 2 * H * L * L * d_head,
             "weights x V": 2 * H * L * L * d_head, "output projection": 2 * L * D * D}
    flops["total"] = sum(flops.values())
    return flops


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
        ok = [h for h in _divisors(d_model) if h <= 64]
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


def _attend(layer, x, mask, temperature, attention_fn):
    """Project, run ``attention_fn`` per head, merge and project back. Returns (output, weights)."""
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
                 mask_kind="none", seed=0, sentence="bank by the river", attention_fn=None):
    """Recompute the explorer for one setting of the knobs; never raises for bad knobs.

    Returns an ``ExplorerResult`` with ``weights`` (H, L, L), ``tokens`` (L labels), ``output``
    (L, D), ``params`` and ``flops`` (see ``count_parameters`` / ``count_flops``), or with
    ``message`` set (and ``weights`` None) when the combination is impossible or ``attention_fn``
    fails. ``attention_fn``: see the module docstring; None uses
    ``mha.scaled_dot_product_attention``.
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    config = {"d_model": d_model, "num_heads": num_heads, "num_kv_heads": num_kv_heads,
              "seq_len": seq_len, "temperature": temperature, "mask_kind": mask_kind,
              "seed": seed, "sentence": sentence}
    message = validate(**config)
    if message:
        return ExplorerResult(config, message=message)
    with _one_thread():
        return _explore(config, attention_fn)


def _explore(config, attention_fn):
    d_model, num_heads, num_kv_heads, seq_len = (
        config[k] for k in ("d_model", "num_heads", "num_kv_heads", "seq_len"))
    tokens, valid_len = _fit(tokenize(config["sentence"]), seq_len)
    layer = build_layer(d_model, num_heads, num_kv_heads, config["seed"])
    x = embed_tokens(tokens, d_model)  # (1, L, D)
    mask = _mask(config["mask_kind"], seq_len, valid_len)
    temperature = float(config["temperature"])
    with torch.no_grad():
        try:
            out, weights = _attend(layer, x, mask, temperature, attention_fn)
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
    kv = "" if c["num_kv_heads"] == c["num_heads"] else f", {c['num_kv_heads']} key/value heads"
    return (f"{c['num_heads']} heads{kv}, d_model = {c['d_model']}, T = {c['temperature']:.3g}, "
            f"mask: {c['mask_kind']}, seed {c['seed']}")


def render(result):
    """The figure of one ``ExplorerResult``: one heatmap per head (``mha.viz.plot_heads``), on
    one colour scale from 0 to 1, tokens on both axes."""
    from .viz import plot_heads

    return plot_heads(result.weights, result.tokens, result.tokens, title=_title(result.config),
                      vmax=1.0)


class _Frame:
    """A drawn explorer figure whose heatmaps and title are refilled in place.

    Drawing text (a hundred tick labels) is most of the cost of a figure, and it does not change
    when only the weights do (temperature, seed, mask, d_model). So the figure is drawn once
    without the heatmaps and kept as a background; a redraw pastes the background, draws the
    heatmaps and the title on it (matplotlib's "blitting") and encodes a PNG.
    """

    def __init__(self, result, dpi=72):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.fig = render(result)
        self.fig.set_dpi(dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        self.shape, self.tokens = tuple(result.weights.shape), list(result.tokens)  # (H, L, L)
        self.axes = self.fig.axes[: self.shape[0]]  # one per head
        self.meshes = [ax.collections[0] for ax in self.axes]
        self.title = self.fig.suptitle(_title(result.config))
        self.canvas.draw()  # the layout engine places everything once ...
        self.fig.set_layout_engine("none")  # ... and the places are kept from now on
        self._draw_background()

    def _draw_background(self):
        for artist in (*self.meshes, self.title):
            artist.set_visible(False)
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(self.fig.bbox)
        for artist in (*self.meshes, self.title):
            artist.set_visible(True)

    def fits(self, result):
        """Same heads and length: the frame can show ``result`` (relabelled if need be)."""
        return tuple(result.weights.shape) == self.shape

    def relabel(self, tokens):
        """New tick labels (same number of tokens): one redraw of the background."""
        if list(tokens) != self.tokens:
            for ax in self.axes:
                ax.set_xticklabels(tokens)
                ax.set_yticklabels(tokens)
            self.tokens = list(tokens)
            self._draw_background()

    def png(self, result):
        """PNG bytes of the frame filled with ``result``'s tokens, weights and title."""
        import numpy as np
        from PIL import Image

        self.relabel(result.tokens)
        self.canvas.restore_region(self.background)
        for mesh, weights in zip(self.meshes, result.weights.numpy()):
            mesh.set_array(weights)  # (L, L)
            self.fig.draw_artist(mesh)
        self.title.set_text(_title(result.config))
        self.fig.draw_artist(self.title)
        buf = io.BytesIO()
        Image.fromarray(np.asarray(self.canvas.buffer_rgba())).save(buf, "PNG", compress_level=1)
        return buf.getvalue()


class Explorer:
    """The UI: ``controls`` (name -> widget), ``view`` (the heatmaps), ``counts`` (HTML table).

    Every change of a control calls ``update()``, which recomputes with ``explore_once`` and
    redraws; ``result`` is the latest ``ExplorerResult`` and ``redraws`` counts the updates.
    Displaying the object displays its widget (``.widget``).
    """

    def __init__(self, attention_fn=None, **initial):
        import ipywidgets as w

        unknown = set(initial) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"explorer() got unknown knobs {sorted(unknown)}; "
                            f"expected some of {sorted(DEFAULTS)}")
        v = {**DEFAULTS, **initial}
        cont = {"continuous_update": False, "style": {"description_width": "7.5em"},
                "layout": w.Layout(width="20em")}  # wide enough for the label, bar and readout
        self.controls = {
            "d_model": w.IntSlider(v["d_model"], min=4, max=256, step=2, description="d_model",
                                   **cont),
            "num_heads": w.IntSlider(v["num_heads"], min=1, max=16, description="num_heads",
                                     **cont),
            "num_kv_heads": w.IntSlider(v["num_kv_heads"], min=1, max=16,
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
        self.result, self.redraws, self._frame = None, 0, None
        for control in self.controls.values():
            control.observe(self.update, names="value")
        names = list(self.controls)
        top = w.HBox([w.VBox([self.controls[n] for n in names[:4]]),
                      w.VBox([self.controls[n] for n in names[4:]])])
        self.widget = w.VBox([top, self.counts, self.view])  # controls, counts, heatmaps
        self.update()

    def config(self):
        return {name: control.value for name, control in self.controls.items()}

    def update(self, change=None):
        """Recompute and redraw (the observer of every control)."""
        self.result = explore_once(**self.config(), attention_fn=self.attention_fn)
        self.redraws += 1
        self.counts.value = self.result.counts_html()
        if not self.result.ok:
            data = {"text/html": self.result.counts_html(), "text/plain": self.result.message}
        else:
            if self._frame is None or not self._frame.fits(self.result):
                self._frame = _Frame(self.result)  # a new grid: other heads or length
            png = base64.b64encode(self._frame.png(self.result)).decode("ascii")
            data = {"image/png": png, "text/plain": "<attention heatmaps, one per head>"}
        self.view.outputs = ({"output_type": "display_data", "metadata": {}, "data": data},)

    def _ipython_display_(self):
        # display the widget object itself: ipywidgets 7 widgets have no _repr_mimebundle_
        from IPython.display import display

        display(self.widget)


def explorer(attention_fn=None, **initial):
    """Build the attention explorer; ``initial`` sets starting knobs (see ``DEFAULTS``).

    ``attention_fn(query, key, value, mask) -> (output, weights)``, if given, replaces
    ``mha.scaled_dot_product_attention`` (see the module docstring for shapes).
    """
    return Explorer(attention_fn=attention_fn, **initial)


def measure_latency(repeats=20, *, change="seed"):
    """Median seconds of one redraw of the explorer (recompute + heatmaps + PNG, matplotlib Agg)
    over ``repeats`` changes of one control, starting from 8 heads over 12 tokens.

    ``change="seed"`` (or any knob that keeps the grid: temperature, mask, d_model): the
    heatmaps are refilled in place. ``"sentence"`` alternates two 12-token sentences: new tick
    labels, so the frame's text is drawn again. ``"num_heads"`` alternates 8 and 4 heads: every
    redraw builds a new figure with ``mha.viz.plot_heads``.
    """
    import statistics
    import time

    values = {"seed": list(range(1, 20)) + [0], "sentence": ["animal and street", "counting"],
              "num_heads": [4, 8]}
    if change not in values:
        raise ValueError(f"change must be one of {sorted(values)}; got {change!r}")
    ex = Explorer(sentence="counting", num_kv_heads=4)
    times = []
    for i in range(repeats):
        value = values[change][i % len(values[change])]
        start = time.perf_counter()
        ex.controls[change].value = value
        times.append(time.perf_counter() - start)
    if ex.redraws != repeats + 1 or not ex.result.ok:
        raise RuntimeError("the explorer did not redraw once per change")
    return statistics.median(times)
