"""The attention explorer's computation (chapter 07): knobs -> real multi-head attention.

``explore_once(...) -> ExplorerResult`` is a *pure* recompute: it builds a seeded
``mha.MultiHeadAttention`` (grouped-query when ``num_kv_heads < num_heads``), embeds an example
sentence, runs attention and returns the per-head weights (H, L, L), the token labels and the
parameter and FLOP counts, or a friendly ``message`` (never an exception) for an impossible
combination of knobs. The explorer's controls are ``mha.widgets`` (Jupyter) and ``mha.live``
(the page); both draw with ``mha/static/live/``.

* ``source``: ``"random layer"`` (the seeded layer below) or a layer of chapter 08's trained
  tiny models or of the Shakespeare model on its own inputs (``mha.sources``): then
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

from ._threads import one_thread
from .counts import count_flops, count_parameters
from .sources import TRAINED_SOURCES, passages_said

__all__ = ["DEFAULTS", "EXAMPLE_SENTENCES", "MASK_KINDS", "SOURCES", "ExplorerResult",
           "build_layer", "embed_tokens", "explore_once", "tokenize", "validate"]

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
            text = c.get("passage") is not None
            which = ("the Shakespeare model (causal, held-out passages)" if text
                     else "chapter 08")
            seed = (f"<b>seed</b> picks the passage ({html.escape(passages_said())})" if text
                    else "<b>seed</b> picks the input sample")
            return (f"<div style='font-size:0.85em;max-width:40em'>A trained layer of {which}: "
                    f"{c['num_heads']} heads, d_head = {c['d_model'] // c['num_heads']}, its own "
                    f"inputs and mask. {seed} and <b>temperature</b> "
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
    with one_thread():
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
    with one_thread():
        weights = trained_weights(source, seed, float(temperature))  # (H, Lq, Lk)
    table = head_table(source)
    config = {**config, "d_model": view.num_heads * view.d_head, "num_heads": view.num_heads,
              "num_kv_heads": view.num_heads, "seq_len": len(view.tokens_q),
              "mask_kind": "causal" if view.causal else "none", "sentence": None}
    if view.name is not None:  # the Shakespeare model: the passage seed picks
        config["passage"] = view.name
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


