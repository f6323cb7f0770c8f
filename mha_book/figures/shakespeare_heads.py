"""The Shakespeare model's live figure: every head of the Shakespeare model on a passage or the reader's text.

The model (``mha_book.language_model.load_language_model()``, the character-level language
model) runs in the page: Python exports the parameters the attention weights need, as base64 of
their float16 bits (the values of the shipped file exactly), and the front end (lm.js) runs the
forward pass in plain JavaScript at every key the reader types: embeddings, then per layer
LayerNorm, Q/K/V (queries and keys rotated by position when the model's ``positions`` is
"rotary"), causal softmax, W_o, residuals and the GELU feed-forward; the last layer needs
only its LayerNorm, Q and K. What the page exports: every layer's attention and feed-forward
parameters except the last layer's value, output and feed-forward parameters, the final
LayerNorm and the readout, which no weight depends on.

The figure: a passage (a select) or the reader's own text (a text box of at most
``context_length`` characters in ``mha_book.language_model.VOCAB``); every head of every layer as a
heatmap (one colour scale, the characters as labels, a space drawn as '␣' and a newline as
'↵'), one head (layer and head selects) as lines, and a table of each head's scores on the text
as `mha.head_scores` computes them: the previous-token score and the prefix-matching score
with n = 2. `text_state` computes the same with the package (the tests compare the two).
"""

import base64
from functools import lru_cache

import torch

from mha import head_scores
from mha._threads import one_thread
from mha.live.figure import Figure, View, select, textbox
from mha.rotary import RotaryMultiHeadAttention
from mha_book.language_model import GLYPHS, PASSAGES, VOCAB, load_language_model, token_labels

from ._registry import live_figure

__all__ = ["GLYPHS", "N_PREFIX", "PASSAGES", "model_data", "needed_parameters", "text_heads",
           "text_problem", "text_state", "token_labels"]

#: the prefix-matching score's n (`mha.head_scores.prefix_match_score`)
N_PREFIX = 2
OWN = ""  # the passage select's value for the reader's own text
OWN_LABEL = "your own text"
ALLOWED = "letters, space, newline and " + " ".join(VOCAB[2:15])


@lru_cache(maxsize=1)
def _model():
    return load_language_model()


def needed_parameters(lm):
    """The names (``lm.state_dict()`` keys) of the parameters the weights depend on: the
    embeddings, every layer but the last whole, and the last one's LayerNorm, W_q and W_k."""
    last = lm.num_layers - 1
    names = []
    for name in lm.state_dict():
        if name.startswith("encoder.embed."):
            names.append(name)
        elif name.startswith("encoder.layers."):
            n, rest = name[len("encoder.layers."):].split(".", 1)
            if int(n) < last or rest.startswith(("res_attn.norm.", "self_attn.W_q.",
                                                 "self_attn.W_k.")):
                names.append(name)
    return names


def _half_b64(t):
    """A tensor as base64 of its little-endian float16 bits (row-major)."""
    import numpy as np

    array = t.detach().to("cpu", torch.float16).contiguous().numpy().astype("<f2")
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def model_data(lm=None):
    """What the page's forward pass reads: ``{"config", "shapes", "weights"}``, the weights
    ``{state_dict name: base64 of float16}`` for `needed_parameters` (the shipped file stores
    float16, so these are its values exactly). The config holds ``positions`` ("learned",
    "sinusoidal": a table added to the embeddings; "rotary": queries and keys rotated, with
    ``rope_base`` and ``rope_interleaved``)."""
    lm = _model() if lm is None else lm
    state = lm.state_dict()
    attn = lm.encoder.layers[0].self_attn
    norm = lm.encoder.layers[0].res_attn.norm
    config = {**lm.config, "positions": lm.config.get("positions", "learned"),
              "num_kv_heads": attn.num_kv_heads, "d_head": attn.d_head, "eps": norm.eps}
    if isinstance(attn, RotaryMultiHeadAttention):  # the page rotates queries and keys too
        config.update(rope_base=attn.base, rope_interleaved=attn.interleaved)
    names = needed_parameters(lm)
    return {"config": config, "shapes": {n: list(state[n].shape) for n in names},
            "weights": {n: _half_b64(state[n]) for n in names}}


def text_problem(text, context_length):
    """Why the model cannot read ``text`` (a sentence), or None: empty, longer than
    ``context_length``, or characters outside ``VOCAB`` (the page says the same)."""
    if not isinstance(text, str):
        return f"the text must be a str; got {type(text).__name__}"
    if not text:
        return "the text is empty: type at least one character"
    if len(text) > context_length:
        return (f"the text has {len(text)} characters; the model reads at most "
                f"{context_length}")
    bad = sorted(set(text) - set(VOCAB))
    if bad:
        return (f"the text has characters outside the model's vocabulary: "
                f"{', '.join(repr(ch) for ch in bad)}; it reads {ALLOWED}")
    return None


def text_state(text, lm=None):
    """The package's numbers for ``text``: ``weights`` (num_layers, H, L, L) from
    ``lm.attention``, ``previous`` and ``prefix`` (num_layers, H) from `mha.head_scores`
    (previous None for a single character; prefix NaN where no query has an earlier match)
    and ``matches``, the number of queries with one."""
    lm = _model() if lm is None else lm
    problem = text_problem(text, lm.context_length)
    if problem:
        raise ValueError(problem)
    ids = lm.encode(text)
    with one_thread():
        weights = torch.cat(lm.attention(ids[None]))  # (num_layers, H, L, L)
    previous = (None if len(text) < 2 else
                torch.stack([head_scores.previous_token_score(w[None]) for w in weights]))
    prefix = torch.stack([head_scores.prefix_match_score(w, ids, N_PREFIX) for w in weights])
    matches = int(head_scores.prefix_match_targets(ids, N_PREFIX).any(-1).sum())
    return {"weights": weights, "previous": previous, "prefix": prefix, "matches": matches}


def _check_passages(passages, context_length):
    if passages is None:
        passages = PASSAGES
    if not isinstance(passages, dict) or not passages:
        raise TypeError(f"passages must be a non-empty dict {{name: text}}; got "
                        f"{type(passages).__name__}")
    for name, text in passages.items():
        if not isinstance(name, str) or not name or name == OWN_LABEL:
            raise ValueError(f"passage names must be non-empty strs other than "
                             f"{OWN_LABEL!r}; got {name!r}")
        problem = text_problem(text, context_length)
        if problem:
            raise ValueError(f"passage {name!r}: {problem}")
    return dict(passages)


@live_figure
def text_heads(passages=None, text=None):
    """Every head of the Shakespeare model on a passage or the reader's own text,
    computed in the page as the reader types (see the module docstring). ``passages``:
    ``{name: text}`` (default `PASSAGES`); ``text``: the text to start with (default: the
    first passage)."""
    lm = _model()
    C = lm.context_length
    passages = _check_passages(passages, C)
    if text is None:
        text = next(iter(passages.values()))
    problem = text_problem(text, C)
    if problem:
        raise ValueError(f"text: {problem}")
    start = next((name for name, p in passages.items() if p == text), OWN)
    layers, heads = lm.num_layers, lm.num_heads
    # the lines view starts at the head that matches prefixes most on the starting text
    prefix = text_state(text, lm)["prefix"].nan_to_num(-1.0)
    best = int(prefix.flatten().argmax()) if (prefix >= 0).any() else layers * heads - heads
    controls = [
        select("passage", "passage", [*passages, OWN], start, labels=[*passages, OWN_LABEL]),
        textbox("text", "text the model reads", text, C),
        select("layer", "lines: layer", list(range(layers)), best // heads),
        select("head", "lines: head", list(range(heads)), best % heads),
    ]
    data = {"model": model_data(lm), "passages": passages, "names": list(passages), "own": OWN,
            "vocab": VOCAB, "allowed": ALLOWED, "glyphs": GLYPHS, "n": N_PREFIX}
    note = (f"<b>The model runs in this page</b> (no kernel): pick a passage or type your own "
            f"text, up to {C} characters of {ALLOWED} (curly quotes become straight ones). "
            f"Every key recomputes every head: "
            f"{layers} layers of {heads} heads, d_model = {lm.config['d_model']}. Look for a "
            f"previous-token head (a line just below the diagonal) and, on text that repeats "
            f"itself, a head that looks at what followed the last {N_PREFIX} characters the "
            f"last time they occurred (prefix matching, the induction pattern).")
    alt = (f"Heatmaps of the attention weights of all {layers * heads} heads ({layers} layers "
           f"of {heads}) of the character-level Shakespeare model on a passage or on "
           f"the reader's own text: each character is a row (a query) and a column (a key it "
           f"may look at, itself and the characters before it); one chosen head's weights as "
           f"lines from each character to the characters it reads; and a table of each head's "
           f"previous-token and prefix-matching scores on the text.")
    return Figure(name="text-heads", title="Every head of the Shakespeare model on a text",
                  controls=controls,
                  views=[View("heads", "heatmap"), View("lines", "lines"),
                         View("scores", "table")],
                  compute="text-heads", data=data, note=note, alt=alt)
