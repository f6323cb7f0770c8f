"""Chapter 15's live figures: attention with a fixed-size memory.

* ``delta_state()``: ten writes "key -> value" into one state S of 4 x 4 numbers, as a
  linear-attention layer makes them, one token at a time. The keys are six unit vectors in
  Dk = 4 dimensions (``keys()``): a, b, c, d nearly orthogonal (seeded), e a mixture of a and b,
  f one of c and d, so that they interfere; a, b and c are written twice, with a new value.
  The values are one-hot in Dv = 4 (value j is the j-th unit vector: a 1 in feature v_j, the
  views' columns v1..v4). The rule is linear attention (``mha.linear_attention``:
  ``S <- S + k v^T``), the delta rule or the gated delta rule (``mha.delta_rule_step`` with beta 1: ``S <- S + k (v - S^T k)^T``, after
  ``S <- g S`` for a gate g = exp(decay) of 0.9 or 0.7); the step control walks through the
  writes. The views: the state S (rows key features, columns value features), what it returns
  for each key written so far, ``S^T k`` (outlined: the key's latest value), and how far that
  is from the value; a key "returns its value" when that distance is under ``RIGHT`` (0.5: a
  one-hot value is 1 away from nothing and 1.41 from any other value), and its bar is the main
  colour, else the accent. One colour scale for every rule and step. The views draw a number
  under ``SHOWN_ZERO`` (5e-4) in size as 0 (``shown``: round-off such as 4e-9, which the page
  would write as it is); the readout and the tests use the numbers computed. The state's 16
  numbers are counted in float32 (64 bytes), as ``mha.configs.linear_state_bytes`` counts them.
* ``hybrid_memory()``: a hybrid model of ``mha.configs.HYBRIDS`` (linear-attention layers with a
  fixed state, one layer in four full attention) and a context from 4K tokens up to the model's
  own (each state caps the slider there: ``limits``; a new model keeps the reader's context,
  brought down to the model's own where it is past it). The plot is one sequence's memory in GiB
  against the context, both axes on a log scale (the front end's log-log plot), for the model
  as built (``HybridConfig.cache_bytes``: the full layers' cache plus the linear layers'
  state), the same model with every layer full attention (``HybridConfig.all_full_bytes``) and,
  for comparison, the shapes of Llama 3 8B (GQA, ``MODELS["Llama 3 8B"]``) and DeepSeek-V3 (MLA,
  ``latent_cache_bytes``) at the same contexts (Llama 3 8B was trained for 8,192 tokens; past
  that the line is its shape's arithmetic, the shape of Llama 3.1 8B). The caches and the
  convolutions' inputs at 2 bytes a number (bfloat16), as in chapters 11 and 14; the linear
  layers' recurrent state at 4 (float32, as transformers keeps it: ``linear_state_bytes``).
  The front end draws the two comparison lines in two greys, both dashed (its plot has no
  per-series style), so their labels and the caption say which is above. The readout gives
  the as-built memory as a percentage of the all-full one, and says when the model's line lies
  on Llama 3 8B's (``SAME_LINE``: OLMo Hybrid's 8 MHA layers, 61,440 numbers a token, against
  Llama 3 8B's 65,536). The bars are the four at the chosen context (in MiB below 1 GiB, else
  GiB), the table the chosen model's layers. The model as built is the accent colour in both
  views (its bar; its line, second, dashed and ringed).

Each ``*_state`` function is the figure's data for one setting of the controls (pure torch); the
figure lists it for every setting (``mha.live.figure``).
"""

import math
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

import torch

from mha import delta_rule_step, linear_attention
from mha.configs import DEEPSEEK_V3, HYBRIDS, MODELS, latent_cache_bytes
from mha.live.figure import Figure, View, bars, heatmap, plot, select, slider, steps, table

from ._registry import live_figure

__all__ = ["CONTEXTS", "D", "KEYS", "RIGHT", "RULES", "SHOWN_ZERO", "WRITES", "delta_state",
           "hybrid_memory", "hybrid_state", "keys", "memory_bytes", "run", "shown", "size_text",
           "state_scale", "write_state"]

# ----------------------------------------------------------------------------- the state

D = 4  # Dk = Dv = 4
KEYS = ("a", "b", "c", "d", "e", "f")
#: the writes "key -> value" (values 1..4: one-hot), in order
WRITES = (("a", 1), ("b", 2), ("c", 3), ("d", 4), ("a", 3), ("e", 2), ("c", 1), ("f", 4),
          ("b", 3), ("a", 2))
#: the rules: (label, the gate g = exp(decay), None for linear attention; 1.0: no decay)
RULES = {"linear attention": None, "delta rule": 1.0, "gated delta rule, gate 0.9": 0.9,
         "gated delta rule, gate 0.7": 0.7}
#: a key returns its value when what the state returns is within this distance of it
RIGHT = 0.5
#: the state's numbers in float32, as transformers keeps a linear layer's state
#: (``mha.configs.linear_state_bytes``)
STATE_BYTES_PER_NUMBER = 4
#: what the views show: a number under this in size is drawn as 0 (4e-9, round-off of a value
#: that is 0, written "4e-9" by the page otherwise); the computation keeps it
SHOWN_ZERO = 5e-4


@lru_cache(maxsize=1)
def keys():
    """The six keys (6, 4), unit vectors: a..d the rows of the identity nudged by a seeded
    N(0, 0.12^2) draw (nearly orthogonal: |cos| <= 0.27), e = a + b and f = c - d, normalised."""
    gen = torch.Generator().manual_seed(15)
    abcd = torch.eye(D) + 0.12 * torch.randn(D, D, generator=gen)
    a, b, c, d = abcd / abcd.norm(dim=1, keepdim=True)
    k = torch.stack([a, b, c, d, a + b, c - d])
    return k / k.norm(dim=1, keepdim=True)


def _value(j):
    return torch.eye(D)[j - 1]  # value j: one-hot, (4,)


@lru_cache(maxsize=None)
def run(rule):
    """The rule's states after each write: a list of (S (4, 4), out (4,)), ``out`` what the
    layer outputs at that token, S^T k for its own key (the query is the key, scale 1)."""
    gate = RULES[rule]
    K = keys()
    S = torch.zeros(1, 1, D, D)  # (B, Hv, Dk, Dv)
    after = []
    for name, j in WRITES:
        k = K[KEYS.index(name)].view(1, 1, D)  # (B, Hv, Dk)
        v = _value(j).view(1, 1, D)  # (B, Hv, Dv)
        if gate is None:  # one token: (B, H, L, D) with L = 1
            out, S = linear_attention(k[:, :, None], k[:, :, None], v[:, :, None], state=S,
                                      scale=1.0)
            out = out[:, :, 0]
        else:
            decay = None if gate == 1.0 else torch.full((1, 1), math.log(gate))
            out, S = delta_rule_step(S, k, k, v, torch.ones(1, 1), decay, scale=1.0)
        after.append((S[0, 0].clone(), out[0, 0].clone()))
    return after


def _latest(step):
    """Each key written by step ``step`` (0-indexed) -> its latest value."""
    latest = {}
    for name, j in WRITES[:step + 1]:
        latest[name] = j
    return latest


def _returned(S, step):
    """(6, 4) S^T k for every key (NaN rows: not written yet) and (6,) the distances from each
    key's latest value (NaN likewise)."""
    latest = _latest(step)
    back = keys() @ S  # (6, 4): row i is S^T k_i
    dist = torch.full((len(KEYS),), math.nan)
    for i, name in enumerate(KEYS):
        if name in latest:
            dist[i] = (back[i] - _value(latest[name])).norm()
        else:
            back[i] = math.nan
    return back, dist


@lru_cache(maxsize=1)
def state_scale():
    """The colour scale's half range, shared by every rule and step: the largest |number| of
    any state or read-out, rounded up to a quarter."""
    top = 0.0
    for rule in RULES:
        for step, (S, _) in enumerate(run(rule)):
            back, _ = _returned(S, step)
            top = max(top, float(S.abs().max()), float(back.nan_to_num(0).abs().max()))
    return math.ceil(top * 4) / 4


@lru_cache(maxsize=1)
def _error_max():
    top = max(float(_returned(S, t)[1].nan_to_num(0).max())
              for rule in RULES for t, (S, _) in enumerate(run(rule)))
    return math.ceil(top * 4) / 4


def shown(x):
    """``x`` as the views draw it: numbers under ``SHOWN_ZERO`` in size as 0 (NaN kept)."""
    return x.masked_fill(x.abs() < SHOWN_ZERO, 0.0)


def _vector(x):
    return "(" + ", ".join(f"{round(float(v), 2) + 0.0:.2f}" for v in x) + ")"  # no -0.00


def _names(names):
    if not names:
        return "none"
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def _tally(right, wrong):
    """How many keys written so far the state returns right, in words."""
    n = len(right) + len(wrong)
    if n == 1:
        return (f"returns the right value for {right[0]}, the one key written" if right else
                f"returns a wrong value for {wrong[0]}, the one key written")
    if not right:
        return f"returns the right value for none of the {n} keys written"
    return (f"returns the right value for {len(right)} of the {n} keys written: "
            f"{_names(right)}" + (f"; wrong for {_names(wrong)}" if wrong else ""))


def write_state(rule, step):
    S, out = run(rule)[step]
    name, j = WRITES[step]
    back, dist = _returned(S, step)
    latest = _latest(step)
    written = [n for n in KEYS if n in latest]
    right = [n for n in written if float(dist[KEYS.index(n)]) < RIGHT]
    wrong = [n for n in written if n not in right]
    before = [w for w in WRITES[:step] if w[0] == name]
    again = f" (written before with {before[-1][1]}: an overwrite)" if before else ""
    M = state_scale()
    gate = RULES[rule]
    how = {None: "linear attention adds k v^T",
           1.0: "the delta rule writes k (v - S^T k)^T"}.get(
        gate, f"the gated delta rule multiplies S by {gate} and writes k (v - S^T k)^T")
    i = KEYS.index(name)
    readout = (f"Step {step + 1} of {len(WRITES)} wrote {name} \u2192 {j}{again}; {how}. "
               f"The state {_tally(right, wrong)}. {name} returns {_vector(out)} against its "
               f"value {j} {_vector(_value(j))}: {float(dist[i]):.2f} away.")
    cols = [f"v{c}" for c in range(1, D + 1)]  # value j: the one-hot vector with a 1 in v_j
    marks = [(0, KEYS.index(n), latest[n] - 1) for n in written]
    numbers = D * D
    return {
        "views": {
            "state": heatmap(shown(S)[None], [f"k{r}" for r in range(1, D + 1)], cols,
                             vmin=-M, vmax=M, scale="diverging", label="value", numbers=True,
                             digits=3, axes="rows: key features k1..k4; columns: value "
                                            "features v1..v4",
                             caption=f"The state S after step {step + 1}: {D} x {D} = "
                                     f"{numbers} numbers, {numbers * STATE_BYTES_PER_NUMBER} "
                                     f"bytes in float32 at every step"),
            "returned": heatmap(shown(back)[None], list(KEYS), cols, vmin=-M, vmax=M,
                                scale="diverging", label="value", numbers=True, digits=3,
                                marks=marks,
                                axes="rows: keys; columns: value features v1..v4 (value j is "
                                     "a 1 in v_j); outlined: the key's value",
                                caption="What the state returns for each key, S^T k"),
            "error": bars(shown(dist), list(KEYS), highlight=[KEYS.index(n) for n in wrong],
                          y_max=_error_max(), decimals=2, y_label="distance", x_label="key",
                          null_label="not yet",
                          caption=f"Distance from the key's value: under {RIGHT} right, "
                                  f"{RIGHT} or more wrong (accent)")},
        "readout": readout,
        "state": {"rule": rule, "step": step, "right": right, "wrong": wrong},
    }


@live_figure
def delta_state(rule="delta rule", step=0):
    """Chapter 15: ten writes into one 4 x 4 state, by linear attention, the delta rule and the
    gated delta rule."""
    return Figure(
        name="delta-state", title="What a fixed-size state holds",
        controls=[select("rule", "rule", list(RULES), rule),
                  steps("step", "write", len(WRITES), step,
                        labels=[f"{i + 1}: {n} \u2192 {j}" for i, (n, j) in enumerate(WRITES)])],
        views=[View("state", "heatmap"), View("returned", "heatmap"), View("error", "bars")],
        state_fn=write_state,
        alt="Three pictures of one state of 4 x 4 numbers after each of ten writes 'key -> "
            "value' (six keys a to f in 4 dimensions, four one-hot values): a heatmap of the "
            "state, rows key features and columns value features; a heatmap of what the state "
            "returns for each key written so far, its latest value outlined; bars of how far "
            "that is from the value, a key returned wrong (0.5 or more away) in the accent "
            "colour. Linear attention adds every write, so an overwritten key "
            "returns the sum of its old and new values and mixed keys blur one another; the "
            "delta rule writes only the correction, so the key just written always returns its "
            "value; the gated delta rule also fades the whole state a step, so older keys "
            "fade. Six keys in four dimensions never all fit.")


# ----------------------------------------------------------------------------- the memory

#: the slider's contexts: 4K to 1M tokens; each model is offered those up to its own context
CONTEXTS = tuple(2 ** n for n in range(12, 21))
GQA = MODELS["Llama 3 8B"]
#: the plot's lines, in ``memory_bytes``'s order of ``PLOTTED``: the model with every layer full
#: attention first (the main colour), the model as built second (the accent colour, as its bar,
#: ringed at the chosen context), then the comparisons
#: attention, then the comparisons, both grey and dashed in the front end (its plot draws the
#: third and fourth series in two greys, every series after the first dashed, and has no
#: per-series style), so their labels say which is which: Llama 3 8B's line is always above
#: DeepSeek-V3's (128 KiB a token against 68.6 KiB)
LINES = ("every layer full", "as built", "Llama 3 8B (GQA), upper grey",
         "DeepSeek-V3 (MLA), lower grey")
PLOTTED = (1, 0, 2, 3)
#: the readout says the model's line lies on Llama 3 8B's when the two are this close
SAME_LINE = 0.10


def memory_bytes(model, context):
    """One sequence's memory in bytes: the model as built (the cache and the convolution's
    inputs at 2 bytes a number, the recurrent state at 4: float32, as transformers keeps it),
    with every layer full attention, and Llama 3 8B's and DeepSeek-V3's shapes at the same
    context (2 bytes a number)."""
    c = HYBRIDS[model]
    return [c.cache_bytes(context), c.all_full_bytes(context), GQA.cache_bytes(context),
            latent_cache_bytes(DEEPSEEK_V3.num_layers, DEEPSEEK_V3.kv_rank,
                               DEEPSEEK_V3.qk_rope_dim, context)]


def size_text(n):
    """Bytes as the table and readout write them: MiB (one decimal) below 1 GiB, else GiB (two),
    halves rounded up as the page's bars round them (68.625 GiB is 68.63 in both)."""
    unit, digits = ("MiB", "0.1") if n < 2 ** 30 else ("GiB", "0.01")
    x = Decimal(n) / (2 ** 20 if unit == "MiB" else 2 ** 30)
    return f"{x.quantize(Decimal(digits), ROUND_HALF_UP):,} {unit}"


def _kib(n):
    return f"{n / 2 ** 10:,.2f}".rstrip("0").rstrip(".") + " KiB"


def _tokens(n):
    return f"{n // 2 ** 20}M" if n >= 2 ** 20 else f"{n // 1024}K"


def _percent(x):
    """A ratio as a whole percentage, halves rounded up: 0.2529 is "25 %"."""
    return f"{Decimal(x * 100).quantize(Decimal('1'), ROUND_HALF_UP)} %"


def _per_token(c):
    """The full layers' numbers a token, as a product: (text, value)."""
    if c.full_attention == "MLA":
        return (f"{c.num_full} x ({c.kv_rank} + {c.qk_rope_dim})",
                c.num_full * (c.kv_rank + c.qk_rope_dim))
    return (f"{c.num_full} x 2 x {c.num_kv_heads} x {c.d_head}",
            c.num_full * 2 * c.num_kv_heads * c.d_head)


def _on_llamas_line(c, sizes):
    """A sentence when the model as built is within ``SAME_LINE`` of Llama 3 8B's shape (OLMo
    Hybrid: 8 MHA layers of 30 key/value heads cache 61,440 numbers a token, Llama 3 8B's 32
    GQA layers 65,536), else ""."""
    if abs(sizes[0] / sizes[2] - 1) > SAME_LINE:
        return ""
    text, n = _per_token(c)
    kinds = {"MHA": "multi-head attention", "MLA": "latent attention"}
    what = kinds.get(c.full_attention, c.full_attention)
    heads = "" if c.full_attention == "MLA" else f" with {c.num_kv_heads} key/value heads"
    return (f" Its line lies on Llama 3 8B's (within {_percent(abs(sizes[0] / sizes[2] - 1))}"
            f" of it): its "
            f"{c.num_full} full layers are {what}{heads}, {text} = {n:,} numbers a token, "
            f"against Llama 3 8B's {GQA.num_layers} x 2 x {GQA.num_kv_heads} x {GQA.d_head} = "
            f"{2 * GQA.num_layers * GQA.num_kv_heads * GQA.d_head:,}.")


def _full_text(c):
    if c.full_attention == "MLA":
        return f"MLA, latent {c.kv_rank} + rotary key {c.qk_rope_dim}"
    return f"{c.full_attention}, {c.num_kv_heads} kv heads of {c.d_head}"


def hybrid_state(model, context):
    c = HYBRIDS[model]
    contexts = [n for n in CONTEXTS if n <= c.context]
    context = min(context, contexts[-1])  # past the model's context: the slider stops there
    sizes = memory_bytes(model, context)
    state, full = c.state_bytes(), c.full_cache_bytes(context)
    unit, div = ("GiB", 2 ** 30) if max(sizes) >= 2 ** 30 else ("MiB", 2 ** 20)
    shown = [s / div for s in sizes]
    curves = {label: [memory_bytes(model, n)[i] / 2 ** 30 for n in contexts]
              for i, label in zip(PLOTTED, LINES)}
    growth = plot(contexts, curves, x_log=True, marker=contexts.index(context),
                  marker_series=[1], x_label="context (tokens), log scale",
                  y_label="GiB, log scale",
                  caption=f"{model}: one sequence's memory against the context (dashed "
                          f"grey: Llama 3 8B above, DeepSeek-V3 below)")
    growth["y_log"] = True  # both axes log2-spaced: the front end's log-log plot
    ratio = sizes[0] / sizes[1]
    per_layer = c.linear_num_value_heads * c.linear_d_head_k * c.linear_d_head_v
    rows = [["linear layers", f"{c.num_linear} ({c.linear_kind})"],
            ["full layers", f"{c.num_full} ({_full_text(c)})"],
            ["state of the linear layers", size_text(state)],
            ["state, a linear layer", f"{c.linear_num_value_heads} value heads x "
                                      f"{c.linear_d_head_k} x {c.linear_d_head_v} = "
                                      f"{per_layer:,} numbers, and the convolution's last "
                                      f"{c.conv_size - 1} inputs"],
            ["cache of the full layers", size_text(full)],
            ["total, as built", size_text(sizes[0])],
            ["every layer full", size_text(sizes[1])],
            ["as built / every layer full", _percent(ratio)]]
    own = ("its full context" if context == c.context
           else f"its context is {c.context:,}")
    # short (on a phone a readout of 19 lines pushed every view off the screen): the per-layer
    # arithmetic is the table's, Llama 3 8B's and DeepSeek-V3's bytes are the bars'
    readout = (f"{model} at {context:,} tokens ({own}): its {c.num_linear} linear-attention "
               f"layers ({c.linear_kind}) hold a state of {size_text(state)} whatever the "
               f"context; its {c.num_full} full-attention layers ({_full_text(c)}) cache "
               f"{size_text(full)} ({_kib(c.full_cache_bytes(1))} a token). Together "
               f"{size_text(sizes[0])}, {_percent(ratio)} of the {size_text(sizes[1])} of "
               f"every layer full attention.{_on_llamas_line(c, sizes)}")
    return {
        "views": {
            "sizes": bars(shown, ["as built", "all full", "Llama 3 8B", "DeepSeek-V3"],
                          highlight=[0], y_max=round(max(shown) * 1.15, 4), y_label=unit,
                          x_label="model", decimals=1 if unit == "MiB" else 2,
                          caption=f"Memory at {context:,} tokens, {unit} (accent: as built)"),
            "growth": growth,
            "layers": table([model, f"at {context:,} tokens"], rows,
                            caption="The state in float32 (4 bytes a number, as transformers "
                                    "keeps it); the cache and the convolution's inputs at 2 "
                                    "bytes (bfloat16)")},
        "readout": readout,
        # the context slider stops at this model's context (a context past it moves back
        # there; choosing a model keeps the reader's context otherwise): a limit the front
        # end applies
        "limits": {"context": {"max": CONTEXTS.index(contexts[-1])}},
        "state": {"model": model, "context": context, "unit": unit, "bytes": sizes,
                  "state_bytes": state, "full_bytes": full},
    }


@live_figure
def hybrid_memory(model="Qwen3-Next-80B-A3B", context=262144):
    """Chapter 15: the memory of a hybrid model against the context, against the same model
    with every layer full attention, GQA and MLA."""
    if context > HYBRIDS[model].context:
        raise ValueError(f"context must be at most {model}'s {HYBRIDS[model].context:,}; "
                         f"got {context!r}")
    return Figure(
        name="hybrid-memory", title="Memory against context: hybrid models",
        controls=[select("model", "model", list(HYBRIDS), model),
                  slider("context", "context (tokens)", CONTEXTS, context,
                         labels=[_tokens(n) for n in CONTEXTS])],
        views=[View("growth", "plot"), View("sizes", "bars"), View("layers", "table")],
        state_fn=hybrid_state,
        alt="A line plot of one sequence's memory in GiB against the context, from 4K tokens "
            "to the chosen hybrid model's own context, both axes on a log scale, for the model "
            "as built (its linear-attention layers' fixed state plus its full-attention "
            "layers' cache), the same model with every layer full attention, and the shapes "
            "of Llama 3 8B (grouped-query attention) and DeepSeek-V3 (latent attention): "
            "every cache grows in proportion to the context, the hybrid's about four times "
            "less than its all-full twin, its state flat. Bars: the four at the chosen "
            "context. A table of the model's layers and bytes.")
