"""The attention explorer's computation (chapter 07): knobs -> real multi-head attention.

``explore_once(...) -> ExplorerResult`` is a *pure* recompute: it builds a seeded
``mha.MultiHeadAttention`` (grouped-query when ``num_kv_heads < num_heads``), embeds an example
sentence, runs attention and returns the per-head weights (H, L, L), the token labels and the
parameter and FLOP counts, or a friendly ``message`` (never an exception) for an impossible
combination of knobs. The explorer's controls are ``mha_book.widgets`` (Jupyter) and ``mha.live``
(the page); both draw with ``mha.live``'s front end.

* ``source``: ``"random layer"`` (the seeded layer below) or a layer of chapter 08's trained
  tiny models or of the Shakespeare model on its own inputs (``mha_book.sources``): then
  ``seed`` picks the input sample (the Shakespeare model: the passage) and only the temperature
  applies; the heads' names and pattern scores come with it.
* The input: the sentence is split into words and punctuation; ``seq_len`` trims it or pads it
  with ``<pad>``. Each word gets a fixed random embedding (a normal vector seeded by the word
  itself; ``<pad>`` is the zero vector) plus the sinusoidal position encoding of Vaswani et al.
  ``seed`` picks the layer's weights: W_q, W_k, W_v, W_o drawn from N(0, 1/d_model), which gives
  queries and keys about unit spread (PyTorch's default init gives almost flat weights).
* Temperature T divides the scores: weights = softmax(q.k / (T * sqrt(d_head))), applied by
  dividing the queries by T before the attention function is called.
* Masks (bool, True = may attend): ``"none"``; ``"causal"`` (query i sees keys 0..i);
  ``"padding"`` (no query may look at a ``<pad>`` key, d2l's ``valid_lens``).
* ``window`` (None = off, or w >= 1; ``WINDOWS`` are the controls' choices): a causal sliding
  window, query i sees keys j with i - w < j <= i (``mha.modern.window_mask``; Mistral, the
  local layers of Gemma 3 and gpt-oss), and-ed with the mask: a window implies causal, also on a
  trained layer that had no mask; a cross-attention source has no window (a message).
* ``sink`` (None = off, or a logit s; ``SINKS``): gpt-oss's learned sink, one logit s for every
  head (``mha.modern.sink_attention``): each row's softmax runs over its scores and s, and s's
  share is dropped, so a row sums to less than 1. s is compared with the scores as the softmax
  sees them, after the 1/sqrt(d_head) and the temperature: softmax([q.k / (T sqrt(d_head)) | s]),
  T does not divide s (the package's ``sink_attention(q / T, ...)``; the page does the same).
  A row with no allowed key puts everything on the sink (weights all 0). Not with a reader's
  ``attention_fn``, whose signature has no sink (a message).
* Your own attention function: ``attention_fn(query, key, value, mask) -> (output, weights)``
  with the semantics of ``mha.scaled_dot_product_attention``: query, key and value
  (1, H, L, Dh) (with GQA the key/value heads are already repeated to H), mask None or bool
  (1, 1, L, L); it returns output (1, H, L, Dh) and weights (1, H, L, L).

Shapes: H heads, Hkv key/value heads, L = seq_len, D = d_model, Dh = d_head.
"""

import html
import math
import re
import zlib
from dataclasses import dataclass, field

import torch

from mha._threads import one_thread
from mha.counts import count_flops, count_parameters
from mha.live.views import fill
from mha_book.sources import TRAINED_SOURCES, passages_said, rows_said

__all__ = ["DEFAULTS", "EXAMPLE_SENTENCES", "MASK_KINDS", "SINKS", "SOURCES", "WINDOWS",
           "ExplorerResult", "build_layer", "embed_tokens", "explore_once", "knob_labels",
           "knob_options", "sink_said", "tokenize", "validate"]

#: the example sentences (short name -> text); the first two are the two senses of "bank"
EXAMPLE_SENTENCES = {
    "bank by the river": "The bank by the river was flooded after the storm .",
    "deposit at the bank": "I will deposit my pay at the bank on Monday .",
    "cat on the mat": "The cat sat on the mat because it was tired .",
    "animal and street": "The animal did not cross the street because it was tired .",
    "counting": "one two three four five six seven eight nine ten eleven twelve",
}
MASK_KINDS = ("none", "causal", "padding")
#: the window and sink controls' choices (None = off): positions a query sees; sink logits
WINDOWS = (None, 2, 4, 8)
SINKS = (None, -2.0, 0.0, 2.0, 4.0)
PAD = "<pad>"

#: the explorer's starting knobs (8 heads over 12 tokens: the setting the latency is measured on)
DEFAULTS = {"source": "random layer", "d_model": 64, "num_heads": 8, "num_kv_heads": 8,
            "seq_len": 12, "temperature": 1.0, "mask_kind": "none", "window": None,
            "sink": None, "seed": 0, "sentence": "bank by the river"}
#: the heads the explorer can show: the random layer, or a trained layer (``mha_book.sources``)
SOURCES = ("random layer", *TRAINED_SOURCES)
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
    table: dict = None  # a trained source's pattern scores (``mha_book.sources.head_table``)
    mask: torch.Tensor = None  # (Lq, Lk) bool, True = may attend; None: every key allowed

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
            text = c.get("passage") is not None
            which = ("the Shakespeare model (causal, held-out passages)" if text
                     else "chapter 08")
            seed = (f"<b>seed</b> picks the passage ({html.escape(passages_said())})" if text
                    else "<b>seed</b> picks the input sample")
            return (f"<div style='font-size:0.85em;max-width:40em'>A trained layer of {which}: "
                    f"{c['num_heads']} heads, d_head = {c['d_model'] // c['num_heads']}, its own "
                    f"inputs and mask. {seed} and <b>temperature</b> "
                    f"divides its scores (1 = as trained; choosing a trained source from the random "
                    f"layer resets it to 1); <b>window</b> and <b>sink</b> apply too; the other "
                    f"knobs are the model's. {html.escape(rows_said(c['source']))}</div>")
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


def _check_window(window):
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or window < 1):
        return (f"window must be None (off) or a whole number >= 1 (the positions a query sees, "
                f"itself included); got {window!r}.")
    return None


def _check_sink(sink):
    if sink is not None and (isinstance(sink, bool) or not isinstance(sink, (int, float))
                             or not math.isfinite(sink)):
        return f"sink must be None (off) or a finite number (a logit); got {sink!r}."
    return None


def knob_options(name, value=None):
    """The choices of the ``"window"`` or ``"sink"`` control (``WINDOWS``, ``SINKS``), with
    ``value`` among them; a ValueError naming the knob for a value it cannot take."""
    if name not in ("window", "sink"):
        raise ValueError(f"name must be 'window' or 'sink'; got {name!r}")
    message = _check_window(value) if name == "window" else _check_sink(value)
    if message:
        raise ValueError(message)
    values = WINDOWS if name == "window" else SINKS
    if value in values:
        return list(values)
    value = value if name == "window" else float(value)
    return [None, *sorted({*values[1:], value})]


def knob_labels(name, values):
    """What the controls show: "off", "4 positions"; "off", "s = -2"."""
    return ["off" if v is None else f"{v} positions" if name == "window" else f"s = {v:g}"
            for v in values]


#: the captions' words for the sink: the page fills the same template (attention.js's sinkSaid)
SINK_SAID = ", sink s = {s:g}: rows sum to {kept:.2f} on average ({lost:.2f} to the sink)"


def sink_said(config, weights):
    """The captions' words for the sink (page and Python alike, ``SINK_SAID``): its logit and the
    share of the weight it took, 1 - a row's sum on average over every head and query; "" when
    off."""
    if config.get("sink") is None or weights is None:
        return ""
    kept = float(weights.sum(-1).mean())
    return fill(SINK_SAID, s=float(config["sink"]), kept=kept, lost=1 - kept)


def validate(d_model, num_heads, num_kv_heads, seq_len, temperature, mask_kind, seed, sentence,
             window=None, sink=None):
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
    message = _check_window(window) or _check_sink(sink)
    if message:
        return message
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
    from mha.layer import MultiHeadAttention

    with torch.random.fork_rng(devices=[]):  # nn.Linear's default init draws from it
        layer = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for proj in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):
            proj.weight.normal_(0.0, d_model ** -0.5, generator=gen)
    return layer.eval()


def _mask(mask_kind, seq_len, valid_len, window=None):
    """None or bool (1, 1, L, L), True = may attend; a ``window`` is and-ed with the mask."""
    from mha.modern import window_mask

    if mask_kind == "none":
        allowed = None
    elif mask_kind == "causal":
        allowed = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()  # key j <= query i
    else:
        allowed = (torch.arange(seq_len) < valid_len).expand(seq_len, seq_len)  # key j valid
    if window is not None:
        band = window_mask(seq_len, seq_len, window)  # (L, L): i - w < j <= i
        allowed = band if allowed is None else allowed & band
    return None if allowed is None else allowed.reshape(1, 1, seq_len, seq_len)  # (1, 1, L, L)


def _sink_attention(sink):
    """An attention function with the sink logit ``sink`` in every head (the module docstring):
    ``mha.modern.sink_attention`` on the (already tempered) queries, scale 1/sqrt(d_head)."""
    from mha.modern import sink_attention

    def attend(query, key, value, mask):
        sinks = query.new_full((query.size(1),), float(sink))  # (H,): one logit for every head
        return sink_attention(query, key, value, sinks, mask, scale=query.size(-1) ** -0.5)

    return attend


def _explorer_attend(layer, x, mask, temperature, attention_fn):
    """Project to per-head queries, keys and values, temper the queries, run ``attention_fn``.

    Returns the per-head (output, weights), (1, H, L, Dh) and (1, H, L, L): the heads are not
    merged and W_o is not applied here (the caller does both).
    """
    from mha.functional import scaled_dot_product_attention, split_heads

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


def explore_once(d_model=64, num_heads=8, num_kv_heads=None, seq_len=12, temperature=1.0,
                 mask_kind="none", seed=0, sentence="bank by the river", attention_fn=None,
                 source="random layer", window=None, sink=None):
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

    ``window`` (None = off, or w >= 1: query i sees keys i - w < j <= i, and-ed with the mask,
    so causal) and ``sink`` (None = off, or a logit s joining every row's softmax and then
    dropped: softmax([q.k / (T sqrt(d_head)) | s]), rows sum to less than 1) are the knobs of
    today's models (module docstring; ``mha.modern``); they apply to trained sources too, but a
    cross-attention source takes no window and a reader's ``attention_fn`` no sink.
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    config = {"source": source, "d_model": d_model, "num_heads": num_heads,
              "num_kv_heads": num_kv_heads, "seq_len": seq_len, "temperature": temperature,
              "mask_kind": mask_kind, "window": window, "sink": sink, "seed": seed,
              "sentence": sentence}
    if source not in SOURCES:
        return ExplorerResult(config, message=(
            f"source must be one of {', '.join(SOURCES)}; got {source!r}."))
    if source != "random layer":
        return _explore_trained(config)
    message = validate(**{k: v for k, v in config.items() if k != "source"})
    if message:
        return ExplorerResult(config, message=message)
    if attention_fn is not None and sink is not None:
        return ExplorerResult(config, message=(
            "sink needs the package's sink attention (mha.modern.sink_attention), and an "
            "attention_fn(query, key, value, mask) takes no sink logit: set sink to None (off) "
            "or drop attention_fn."))
    if attention_fn is not None:  # named in the title: e.g. "attention_fn = hard_attention"
        config["attention_fn"] = getattr(attention_fn, "__name__", type(attention_fn).__name__)
    with one_thread():
        return _explore(config, attention_fn)


def _explore_trained(config):
    """A trained layer on its own input sample ``seed`` (see ``mha_book.sources``)."""
    from mha.functional import scaled_dot_product_attention, split_heads
    from mha_book.sources import head_table, trained_view

    seed, temperature = config["seed"], config["temperature"]
    window, sink, source = config["window"], config["sink"], config["source"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        return ExplorerResult(config, message=f"seed must be a whole number >= 0; got {seed!r}.")
    if not isinstance(temperature, (int, float)) or not temperature > 0 or math.isinf(temperature):
        return ExplorerResult(config, message=(
            f"temperature must be a positive number; got {temperature!r}."))
    message = _check_window(window) or _check_sink(sink)
    if message:
        return ExplorerResult(config, message=message)
    if window is not None and TRAINED_SOURCES[source][2] == "cross":
        return ExplorerResult(config, message=(
            f"{source} is cross-attention (target words over source words): a query has no "
            f"position among the keys, so there is no window of its last positions. Set window "
            f"to None (off), or pick a self-attention source."))
    view = trained_view(source, seed)
    q = split_heads(view.q[None], view.num_heads)  # (1, Lq, H*Dh) -> (1, H, Lq, Dh)
    k = split_heads(view.k[None], view.num_heads)  # (1, Lk, H*Dh) -> (1, H, Lk, Dh)
    Lq = q.size(-2)  # a self-attention layer's mask is (Lq, Lq); a cross one has none
    mask = _mask("causal" if view.causal else "none", Lq, Lq, window)
    attend = scaled_dot_product_attention if sink is None else _sink_attention(sink)
    with one_thread(), torch.no_grad():
        weights = attend(q / float(temperature), k, k, mask)[1][0]  # (1, H, Lq, Lk) -> (H, ...)
    table = head_table(source)
    config = {**config, "d_model": view.num_heads * view.d_head, "num_heads": view.num_heads,
              "num_kv_heads": view.num_heads, "seq_len": len(view.tokens_q),
              "mask_kind": "causal" if view.causal else "none", "sentence": None}
    if view.name is not None:  # the Shakespeare model: the passage seed picks
        config["passage"] = view.name
    return ExplorerResult(config, view.tokens_q, weights=weights.float(),
                          key_tokens=view.tokens_k, table=table, mask=_square(mask),
                          head_labels=[f"head {h}: {n}" for h, n in enumerate(table["names"])])


def _explore(config, attention_fn):
    """The random layer (knobs already validated)."""
    d_model, num_heads, num_kv_heads, seq_len = (
        config[k] for k in ("d_model", "num_heads", "num_kv_heads", "seq_len"))
    tokens, valid_len = _fit(tokenize(config["sentence"]), seq_len)
    layer = build_layer(d_model, num_heads, num_kv_heads, config["seed"])
    x = embed_tokens(tokens, d_model)  # (1, L, D)
    mask = _mask(config["mask_kind"], seq_len, valid_len, config["window"])
    temperature = float(config["temperature"])
    if config["sink"] is not None:  # validated: no attention_fn with a sink
        attention_fn = _sink_attention(config["sink"])
    with torch.no_grad():
        try:
            out, weights = _explorer_attend(layer, x, mask, temperature, attention_fn)
        except Exception as err:  # noqa: BLE001 - a reader's bug: shown in the widget, not raised
            return ExplorerResult(config, tokens, message=(
                f"your attention_fn raised {type(err).__name__}: {err}"))
        problem = _check_returned(out, weights, num_heads, seq_len, d_model // num_heads)
        if problem:
            return ExplorerResult(config, tokens, message=problem)
        from mha.functional import merge_heads

        output = layer.W_o(merge_heads(out))[0]  # (1, H, L, Dh) -> (1, L, D) -> (L, D)
    return ExplorerResult(
        config, tokens, weights=weights[0].float().cpu(), output=output,
        params=count_parameters(d_model, num_heads, num_kv_heads),
        flops=count_flops(seq_len, d_model, num_heads, num_kv_heads), mask=_square(mask))


def _square(mask):
    """``_mask``'s (1, 1, L, L) as (L, L), or None."""
    return None if mask is None else mask[0, 0].clone()


