"""Any model's heads as one live figure: ``mha.head_view(weights, tokens)``.

In the manner of bertviz's head view: the attention weights of a model's
layers (ours, from ``mha.record_attention`` or ``LanguageModel.attention``, or
any model that returns (B, H, L, S) per layer, such as a Hugging Face model
called with ``output_attentions=True``), drawn by the book's front end
(``mha.live``'s front end): every head of a layer as a heatmap on one colour scale
from 0 to 1, or one head as lines from its query tokens to its key tokens.
The figure is a ``mha.live.figure.Figure``: one self-contained HTML output
that works in Jupyter, Colab, VS Code and the built book without a kernel;
``save_html`` writes it as a page that opens offline.

Shape legend: B batch, H heads, L query length, S key length (S = L for
self-attention).
"""

from pathlib import Path

import torch

from . import _checks

__all__ = ["MAX_WEIGHTS", "head_view", "save_html"]

#: the most weights one figure draws (the layers shown, one sequence): each
#: travels twice in the page (heatmap and lines), about 7 bytes a copy
MAX_WEIGHTS = 500_000
#: how far past 1 a row may sum (rounding), by dtype; further is not softmax
ROW_TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 1e-2}
ROW_TOLERANCE_DEFAULT = 1e-3
#: decimals of the weights in the page (the tests compare it with Python
#: to 1e-3)
DIGITS = 4
#: the most weight a cell the mask blocks may hold (a masked softmax gives 0; an
#: additive mask of -1e4, as older Hugging Face models add, about e^-10000)
MASKED_TOLERANCE = 1e-4
#: a long input (more tokens than chapter 07's explorer draws) is drawn as
#: the Shakespeare figure draws a text: small cells, each grid one image, the
#: lines view's tokens in a box this many rows tall that scrolls
LONG_MAX_ROWS = 14

NO_WEIGHTS = ("a Hugging Face model loaded with attn_implementation=\"sdpa\" "
              "(the default) or \"flash_attention_2\" returns none: load it "
              "with attn_implementation=\"eager\" and call it with "
              "output_attentions=True")


def _kind(value):
    kind = type(value)
    return (kind.__name__ if kind.__module__ == "builtins"
            else f"{kind.__module__}.{kind.__name__}")


def _as_tensor(where, x):
    """``x`` (a tensor, array or nested list) as a detached tensor (on its
    device: only the sequence drawn is copied to the CPU, by ``_prepare``)."""
    if x is None:
        raise ValueError(f"{where} is None: the model returned no attention "
                         f"weights ({NO_WEIGHTS})")
    if isinstance(x, torch.Tensor):
        return x.detach()
    try:
        return torch.as_tensor(x)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{where} must be a tensor or an array of attention "
                        f"weights; got {_kind(x)}") from None


def _layers(weights):
    """[(layer name, tensor, where)] for the layers in ``weights``, and how
    they came: "dict", "list", "tuple", "stack" or "tensor"."""
    if isinstance(weights, dict):
        if "attentions" in weights or "last_hidden_state" in weights:
            raise TypeError(f"weights looks like a model's whole output (its "
                            f"keys: {', '.join(list(weights)[:4])}); pass its "
                            f"attention weights, e.g. outputs.attentions")
        named = [(str(k), v, f"weights[{k!r}]") for k, v in weights.items()]
        what = "dict"
    elif isinstance(weights, (list, tuple)):
        named = [(f"layer {n}", v, f"weights[{n}]")
                 for n, v in enumerate(weights)]
        what = type(weights).__name__
    else:
        t = _as_tensor("weights", weights)
        if t.ndim == 5:  # (layers, B, H, L, S): per-layer weights stacked
            return [(f"layer {n}", t[n], f"weights[{n}]")
                    for n in range(len(t))], "stack"
        return [(None, t, "weights")], "tensor"
    if not named:
        raise ValueError(f"weights is an empty {what}: expected one (B, H, L, "
                         f"S) tensor per layer ({NO_WEIGHTS})")
    out = []
    for name, v, where in named:
        if isinstance(v, (list, tuple)) and v and all(
                isinstance(x, torch.Tensor) for x in v):
            raise ValueError(f"{where} is a list of {len(v)} tensors: the "
                             f"layer ran {len(v)} times in the "
                             f"record_attention block; pass one call's "
                             f"weights, e.g. {{name: calls[0]}}")
        out.append((name, _as_tensor(where, v), where))
    return out, what


def _pick(layers, layer, what):
    """The layers ``layer`` names: None (all), an index (negative: from the
    end), a name (a dict's key) or a list of them; at most MAX_STATES / 2 (a
    figure lists two states per layer)."""
    from .live.figure import MAX_STATES

    n = len(layers)
    picked = list(range(n))
    if layer is not None:
        names = [x[0] for x in layers]
        wanted = list(layer) if isinstance(layer, (list, tuple)) else [layer]
        if not wanted:
            raise ValueError("layer is an empty list: name at least one "
                             "layer (or None for all)")
        picked = [_index(x, names, what) for x in wanted]
        if len(set(picked)) != len(picked):
            raise ValueError(f"layer names a layer twice; got {layer!r}")
    if len(picked) > MAX_STATES // 2:
        raise ValueError(f"weights has {len(picked)} layers to draw; "
                         f"head_view draws at most {MAX_STATES // 2}: pick "
                         f"some with layer= (e.g. layer=0 or layer=[0, -1])")
    return [layers[k] for k in picked]


def _index(x, names, what):
    n = len(names)
    if isinstance(x, str) and x in names:
        return names.index(x)
    if isinstance(x, int) and not isinstance(x, bool) and -n <= x < n:
        return x % n
    known = ""
    if what == "dict":
        known = f"a name ({', '.join(names[:4])}{', ...' if n > 4 else ''}) or "
    raise ValueError(f"layer must be {known}an index in {-n}..{n - 1} (the "
                     f"weights have {n} layer{'s' if n > 1 else ''}), or a "
                     f"list of them; got {x!r}")


def _tokens(name, tokens, n, side, said):
    """``tokens`` as n labels (str), one per query or key (``side``)."""
    wanted = f"{name} must be a list of str, one per {side}"
    if isinstance(tokens, str):
        raise TypeError(f"{wanted}; got a str (for one token per character, "
                        f"pass list(text))")
    if isinstance(tokens, torch.Tensor) or hasattr(tokens, "__array__"):
        raise TypeError(f"{wanted}; got {_kind(tokens)} (token ids? turn them "
                        f"into strings, e.g. with "
                        f"tokenizer.convert_ids_to_tokens(ids))")
    if not isinstance(tokens, (list, tuple)):
        raise TypeError(f"{wanted}; got {_kind(tokens)}")
    if len(tokens) != n:
        sides = {"query": "queries", "key": "keys"}[side]
        raise ValueError(f"{name} has {len(tokens)} tokens but the weights "
                         f"have {n} {sides} ({said})")
    return [str(t) for t in tokens]


def _check_values(where, w, dtype):
    """w (H, L, S) float64: finite, >= 0, every row summing to at most 1."""
    bad = ~torch.isfinite(w)
    if bad.any():
        h, i, j = bad.nonzero()[0].tolist()
        raise ValueError(f"{where} holds {int(bad.sum())} NaN or infinite "
                         f"values (the first at head {h}, query {i}, key "
                         f"{j}); attention weights are finite")
    low = float(w.min())
    if low < 0:
        h, i, j = (w == low).nonzero()[0].tolist()
        raise ValueError(f"{where} has negative values (the smallest "
                         f"{low:.4g}, at head {h}, query {i}, key {j}); "
                         f"attention weights are >= 0: pass the weights "
                         f"after the softmax, not the scores")
    sums = w.sum(-1)  # (H, L)
    top = float(sums.max())
    if top > 1 + ROW_TOLERANCE.get(dtype, ROW_TOLERANCE_DEFAULT):
        h, i = (sums == top).nonzero()[0].tolist()
        raise ValueError(f"{where} has rows summing to more than 1 (the "
                         f"largest {top:.4g}, at head {h}, query {i}); a "
                         f"row of attention weights sums to 1 (less with "
                         f"padding or a sink): pass the weights after the "
                         f"softmax, not the scores")


def _shaped(layers):
    """[(name, (B, H, L, S) tensor, where, shape as given)], checked."""
    out = []
    for name, t, where in layers:
        shape = tuple(t.shape)
        if t.ndim not in (3, 4):
            raise ValueError(f"{where} must have shape (B, H, L, S) or (H, L, "
                             f"S) (a list of them, one per layer, or a "
                             f"dict); got shape {shape}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{where} must hold floating-point weights; got "
                            f"dtype {t.dtype}")
        if 0 in shape:
            raise ValueError(f"{where} is empty: shape {shape}")
        t = t[None] if t.ndim == 3 else t  # (H, L, S) -> (1, H, L, S)
        out.append((name, t, where, shape))
    sizes = {(t.shape[0], t.shape[2], t.shape[3]) for _, t, _, _ in out}
    if len(sizes) > 1:
        said = ", ".join(f"{where} {shape}" for _, _, where, shape in out[:6])
        raise ValueError(f"every layer must have the same batch, query and "
                         f"key lengths (B, L, S); got {said}: pick layers "
                         f"of one shape with layer=")
    return out


def _mask_for(mask, shaped, batch):
    """``mask`` (True = may attend) checked against every layer drawn: per
    layer, the (H, L, S) bool cells it blocks (True = blocked) of sequence
    ``batch``, or None for no mask."""
    if mask is None:
        return [None] * len(shaped)
    if isinstance(mask, torch.Tensor):
        m = mask.detach()
    else:
        try:
            m = torch.as_tensor(mask)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"mask must be a bool tensor (True = may attend); got "
                            f"{_kind(mask)}") from None
    if m.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = may attend); got dtype "
                        f"{m.dtype} (a 0/1 mask: pass mask.bool(); an additive "
                        f"mask of 0 and -inf: pass mask == 0)")
    out = []
    for _, t, where, shape in shaped:
        B, H, L, S = t.shape
        if not 2 <= m.ndim <= 4:
            raise ValueError(f"mask must have shape (L, S) = ({L}, {S}) or "
                             f"broadcast to (B, H, L, S) = {(B, H, L, S)}; got "
                             f"shape {tuple(m.shape)}")
        try:
            full = torch.broadcast_shapes(m.shape, (B, H, L, S))
        except RuntimeError:
            full = None
        if full != (B, H, L, S):
            raise ValueError(f"mask has shape {tuple(m.shape)}, which does not "
                             f"broadcast to (B, H, L, S) = {(B, H, L, S)} of "
                             f"{where} (shape {shape}); it must be (L, S) = "
                             f"({L}, {S}) or broadcast to (B, H, L, S), e.g. "
                             f"(B, 1, L, S) or (B, 1, 1, S) for padding")
        blocked = ~m.expand(B, H, L, S)[batch].cpu()  # (H, L, S), True = blocked
        held = t[batch].detach().cpu().float().abs() * blocked
        if float(held.max()) > MASKED_TOLERANCE:
            h, i, j = (held == held.max()).nonzero()[0].tolist()
            raise ValueError(
                f"mask blocks keys that {where} gives weight: {float(held.max()):.4g} "
                f"at head {h}, query {i}, key {j}; a mask is True where a query "
                f"may attend and must block only keys of weight 0 (a mask whose "
                f"True means blocked: pass ~mask)")
        out.append(blocked)
    return out


def _prepare(weights, tokens, key_tokens, batch, layer, mask=None):
    """(layers [(name or None, (H, L, S) float32, (H, L, S) bool blocked or
    None)], query labels, key labels, B), every argument checked."""
    layers, what = _layers(weights)
    shaped = _shaped(_pick(layers, layer, what))
    B, L, S = (shaped[0][1].shape[k] for k in (0, 2, 3))
    batch = _checks.check_int("batch", batch)
    if not 0 <= batch < B:
        raise ValueError(f"batch ({batch}) must be in 0..{B - 1}: the weights "
                         f"hold B = {B} sequence{'s' if B > 1 else ''}")
    heads = sum(t.shape[1] for _, t, _, _ in shaped)
    if heads * L * S > MAX_WEIGHTS:
        n = len(shaped)
        raise ValueError(f"weights: too many to draw, {n} layer"
                         f"{'s' if n > 1 else ''}, {heads} heads in all, "
                         f"{L} x {S} each = "
                         f"{heads * L * S:,} weights; head_view draws at "
                         f"most {MAX_WEIGHTS:,} (a page of a few MB): narrow "
                         f"it with layer= (e.g. layer=0 or layer=[0, -1]) or "
                         f"pass a shorter input")
    said = f"{shaped[0][2]} has shape {shaped[0][3]}"
    rows = _tokens("tokens", tokens, L, "query", said)
    if key_tokens is None and L != S:
        raise ValueError(f"key_tokens is None, so tokens would label the keys "
                         f"too, but the weights have {L} queries and {S} keys "
                         f"({said}; cross-attention?): pass key_tokens, the "
                         f"{S} key tokens")
    cols = rows
    if key_tokens is not None:
        cols = _tokens("key_tokens", key_tokens, S, "key", said)
    out = []
    for name, t, where, _ in shaped:
        # (B, H, L, S) -> (H, L, S), on the CPU (float64: MPS has none)
        w = t[batch].cpu().to(torch.float64)
        _check_values(where if B == 1 else f"{where}[{batch}]", w, t.dtype)
        out.append((name, w.to(torch.float32)))
    blocked = _mask_for(mask, shaped, batch)
    return ([(n, w, b) for (n, w), b in zip(out, blocked)], rows, cols, B)


def _state_fn(layers, rows, cols, batch, B):
    """The figure's ``state_fn(layer, view)``: one layer's heatmaps, or its
    heads as lines (the lines view picks the head)."""
    from .live.figure import heatmap, lines
    from .live.views import MAX_LEN, TEXT_CELL_MIN

    long = max(len(rows), len(cols)) > MAX_LEN
    seq = f", sequence {batch} of {B}" if B > 1 else ""
    size = f"{len(rows)} queries x {len(cols)} keys{seq}"

    def state(layer=0, view="heatmaps"):
        name, w, blocked = layers[layer]  # (H, L, S), and (H, L, S) or None
        H = len(w)
        where = name or "the weights"
        titles = [f"head {h}" for h in range(H)]
        if blocked is not None and bool((blocked == blocked[:1]).all()):
            blocked = blocked[0]  # every head alike: one (L, S) for all
        heads = heatmap(w, rows, cols, titles=titles, caption=where + seq,
                        digits=DIGITS, masked=blocked)
        said = " Blank cells: masked." if "masked" in heads else ""
        if long:  # small cells, each grid drawn as one image
            heads.update(cell_min=TEXT_CELL_MIN, raster=True)
        state = {"layer": name, "view": view, "batch": batch}
        if view == "heatmaps":
            readout = (f"{where}: {H} head{'s' if H > 1 else ''}, {size}; one "
                       f"colour scale from 0 to 1.{said}")
            return {"views": {"heads": heads, "lines": None},
                    "readout": readout, "state": state}
        drawn = lines(heads["grids"], rows, cols, titles=titles,
                      caption=where + seq, masked=blocked)
        if long:
            drawn["max_rows"] = LONG_MAX_ROWS
        pick = "pick the head above the lines; " if H > 1 else ""
        which = f"one head of {H}" if H > 1 else "its head"
        readout = (f"{where}: {which} as lines from each query (left) to "
                   f"each key (right), {size}; {pick}focus, hover or tap a "
                   f"token to see only its lines.{said and ' No line to masked cells.'}")
        return {"views": {"heads": None, "lines": drawn}, "readout": readout,
                "state": state}

    return state


def head_view(weights, tokens, *, key_tokens=None, batch=0, layer=None,
              title=None, mask=None):
    """Every head of a model's layers, in the manner of bertviz's head view.

    ``weights``: the attention weights, in any of these forms:

    - one layer's: a tensor or array (B, H, L, S) or (H, L, S);
    - one per layer, in a list or tuple: what a Hugging Face model returns
      as ``outputs.attentions`` when called with ``output_attentions=True``
      (load it with ``attn_implementation="eager"``: SDPA and FlashAttention
      return no weights), or ``LanguageModel.attention(ids)``; or the same
      stacked, (layers, B, H, L, S);
    - a dict ``{layer name: (B, H, L, S)}``, what ``mha.record_attention``
      records.

    Any device and floating dtype (the weights are detached and copied to the
    CPU). Rows must be softmax weights: >= 0, summing to at most 1 (less with
    padding or a sink). Layers may differ in their number of heads (pruned
    heads), not in B, L or S.

    ``tokens``: the L query tokens (str); ``key_tokens``: the S key tokens
    (default ``tokens``; needed for cross-attention). ``batch``: the
    sequence of the batch to draw. ``layer``: the layers to draw, an index
    (negative from the end), a name (a dict's key) or a list of them
    (default: all). ``title``: the figure's title. ``mask``: the keys each
    query may attend to, bool, **True = may attend** (the book's convention),
    of shape (L, S) or broadcastable to each layer's (B, H, L, S) (e.g.
    ``mha.causal_mask(L)`` for a causal model, (B, 1, 1, S) for padding): the
    cells it blocks are drawn blank in the heatmaps (not the colour of a
    weight of 0) and get no line in the lines view. The weights must be 0
    there (up to ``MASKED_TOLERANCE``).

    Returns a ``mha.live.figure.Figure``; ending a notebook cell with it shows
    it (one HTML output, no kernel needed to use it), and
    ``mha.save_html(figure, "heads.html")`` writes a page that opens offline.
    Its controls: the layer (when there are several) and the view, every head
    of the layer as a heatmap (queries down, keys across, one colour scale
    from 0 to 1) or one head as lines from each query (left) to each key
    (right), width and opacity the weight, with a head picker; focusing,
    hovering or tapping a token shows only its lines.

    Bad input is a ``ValueError`` or ``TypeError`` naming the argument: a
    wrong number of dimensions, weights that are not softmax weights
    (negative, rows over 1, NaN), a token count other than L (or S), layers
    of different lengths, ``batch`` out of range, no weights, more than
    ``MAX_WEIGHTS`` weights to draw (narrow it with ``layer=``), or a ``mask``
    that is not bool, does not broadcast to the weights, or blocks a key
    that has weight.
    """
    from .live.figure import Figure, View, select
    from .live.views import VIEWS

    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None; got {_kind(title)}")
    layers, rows, cols, B = _prepare(weights, tokens, key_tokens, batch,
                                     layer, mask)
    n = len(layers)
    controls = [select("view", "view", list(VIEWS), "heatmaps",
                       labels=list(VIEWS.values()))]
    if n > 1:
        controls.insert(0, select("layer", "layer", list(range(n)), 0,
                                  labels=[name for name, _, _ in layers]))
    heads = sorted({len(w) for _, w, _ in layers})
    H = str(heads[0]) if len(heads) == 1 else f"{heads[0]} to {heads[-1]}"
    H += " head" if H == "1" else " heads"
    said = f"{n} layers of {H}" if n > 1 else f"one layer of {H}"
    keys = "" if cols is rows else f" and {len(cols)} key tokens"
    alt = (f"Attention weights of {said} on {len(rows)} tokens{keys}: one "
           f"heatmap per head (queries down, keys across, one colour scale "
           f"from 0 to 1), or one head as lines from each query token (left) "
           f"to each key token (right), their width and opacity the weight.")
    if any(b is not None and bool(b.any()) for _, _, b in layers):
        alt += (" Cells a mask blocks are blank, and have no line.")
    return Figure(name="head-view",
                  title=title or "Attention weights, every head",
                  controls=controls,
                  views=[View("heads", "heatmap"), View("lines", "lines")],
                  state_fn=_state_fn(layers, rows, cols, batch, B), alt=alt)


def save_html(figure, path):
    """Write ``figure`` (a live figure, ``mha.live.figure.Figure``, such as
    ``mha.head_view``'s) to ``path`` as a whole HTML page with its front end
    inlined, which opens offline in a browser. Returns the ``pathlib.Path``.
    """
    page = getattr(figure, "page", None)
    if not callable(page):
        raise TypeError(f"figure must be a live figure "
                        f"(mha.live.figure.Figure, e.g. what mha.head_view "
                        f"returns); got {_kind(figure)}")
    if not isinstance(path, (str, Path)) and not hasattr(path, "__fspath__"):
        raise TypeError(f"path must be a str or a path; got {_kind(path)}")
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"path {str(path)!r}: its folder "
                         f"{str(path.parent)!r} does not exist")
    path.write_text(page(), encoding="utf-8")
    return path
