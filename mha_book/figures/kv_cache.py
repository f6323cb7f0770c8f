"""Chapter 11's live figures: decoding with a key/value cache, and the cache's size.

* ``decode_steps()``: the chapter's trained translator (``mha_book.tiny.load_pretrained
  ("translation")``) writes the chapter's sentence (``task.sample(1, seed=7)``) one token at a
  time with one ``mha.KVCache`` per decoder layer (``mha_book.decode.decoder_logits`` with
  ``caches=``, as ``mha_book.decode.generate`` does). The step control is "next token": at step t the
  new query (position t) reads the t + 1 cached keys of the chosen decoder layer's
  self-attention; the heatmap is its weights, one row per head (``mha.record_attention``), and
  the table the cache's shape and bytes (``KVCache.nbytes``).
* ``kv_cache_size()``: a configuration of ``mha.configs.MODELS`` (the chapter's table), a kind of
  attention (MHA: every head has its own keys and values; GQA: 8 key/value heads; MQA: one) and a
  context length, from 512 tokens up to the model's own context (each state caps the slider
  there: ``limits``); the bars are the cache of one sequence in MiB for the three kinds, every
  position kept (``mha.configs.kv_cache_bytes``, 2 bytes a number, as in the chapter; MiB, so
  that every number is exact), and the plot its growth with the context, both axes on a log
  scale (``y_log``: drawn by the front end's log-log plot, charts.js), so growth in proportion
  to the context is a straight line of slope 1. The chosen kind is the accent colour in both
  views (its bar, and its line, second, dashed and ringed); the model as built is the first
  line: its own key/value heads, and for a sliding-window model (Mistral 7B v0.1,
  ``ModelConfig.window``) a rolling cache that stops growing at the window.

Each ``*_state`` function is the figure's data for one setting of the controls (pure torch); the
figure lists it for every setting (``mha.live.figure``).
"""

from functools import lru_cache

import torch

from mha._threads import one_thread
from mha.configs import MODELS, kv_cache_bytes
from mha.live.figure import Figure, View, bars, heatmap, plot, select, slider, steps, table
from mha.record import record_attention
from mha_book.decode import decoder_logits, new_caches

from ._registry import live_figure

__all__ = ["CONTEXTS", "KINDS", "decode_run", "decode_state", "decode_steps", "kv_cache_size",
           "kv_heads", "size_state"]

SEED = 7  # the chapter's sentence: task.sample(1, seed=7)
LAYERS = (0, 1)


@lru_cache(maxsize=1)
def decode_run():
    """Greedy decoding with a cache, step by step. Returns a dict: ``src`` (source words),
    ``written`` (the 12 words written), ``weights[layer]`` a list over steps t of (H, t + 1)
    (the new query's weights over the cached keys, decoder self-attention), ``nbytes[layer]`` and
    ``shape[layer]`` the cache after each step, ``logits`` (12, C) the step's logits, ``ids``
    (1, 13) <s> and the written ids."""
    from mha_book import tasks, tiny

    model = tiny.load_pretrained("translation")
    task = tasks.make_task("translation")
    sentence = task.sample(1, seed=SEED)
    caches = new_caches(model)
    names = [f"decoder.layers.{n}.self_attn" for n in LAYERS]
    weights = {n: [] for n in LAYERS}
    nbytes = {n: [] for n in LAYERS}
    shape = {n: [] for n in LAYERS}
    ids = torch.full((1, 1), task.bos)  # (B, 1): <s>
    logits = []
    with torch.no_grad(), one_thread():  # tiny matrices: one thread is fastest
        memory = model.encoder(sentence.inputs)  # (1, Ls, D), read once
        for t in range(task.tgt_len):
            with record_attention(model) as rec:
                out = decoder_logits(model, ids[:, -1:], memory, caches=caches, start=t)
            logits.append(out[0, -1])  # (C,)
            ids = torch.cat([ids, out[:, -1:].argmax(-1)], dim=1)  # (B, t + 2)
            for n, name in zip(LAYERS, names):
                weights[n].append(rec[name][0, :, 0])  # (B, H, 1, t + 1) -> (H, t + 1)
                nbytes[n].append(caches[n].nbytes)
                shape[n].append(tuple(caches[n].keys.shape))
    return {"src": task.decode_src(sentence.inputs[0]), "written": task.decode_tgt(ids[0, 1:]),
            "targets": task.decode_tgt(sentence.targets[0]), "weights": weights,
            "nbytes": nbytes, "shape": shape, "logits": torch.stack(logits), "ids": ids,
            "num_heads": model.config["num_heads"]}


def decode_state(step, layer):
    run = decode_run()
    w = run["weights"][layer][step]  # (H, step + 1)
    H = w.size(0)
    fed = ["<s>"] + run["written"][:step]  # the token fed in at each position 0..step
    cols = [f"{j}:{tok}" for j, tok in enumerate(fed)]
    top = [int(w[h].argmax()) for h in range(H)]
    B, Hkv, L, Dh = run["shape"][layer][step]
    nbytes = run["nbytes"][layer][step]
    caption = f"Step {step}: the query of '{fed[-1]}' over {L} cached key{'s' if L > 1 else ''}"
    rows = [["cached positions L", L], ["keys shape (B, Hkv, L, Dh)", f"({B}, {Hkv}, {L}, {Dh})"],
            ["bytes (keys, values; float32)", nbytes],
            ["added this step", f"{nbytes // L} bytes"]]
    wrote = run["written"][step]
    sentence = " ".join(run["written"][:step + 1])  # tokens, one space apart ("." is one)
    return {
        "views": {
            "weights": heatmap(w[None], [f"head {h}" for h in range(H)], cols, numbers=True,
                               caption=caption, marks=[(0, h, top[h]) for h in range(H)],
                               axes="rows: heads; columns: cached keys; outlined: largest"),
            "cache": table(["decoder layer " + str(layer) + " cache", "after this step"], rows)},
        "readout": (f"Step {step}: the query of '{fed[-1]}' (position {step}) read {L} cached "
                    f"key{'s' if L > 1 else ''} and the model wrote the token '{wrote}'; head 0 "
                    f"put {float(w[0, top[0]]):.2f} on position {top[0]} ('{fed[top[0]]}'); the "
                    f"cache now holds {nbytes:,} bytes in this layer. Written so far, "
                    f"{step + 1} token{'s' if step else ''} (spaces between tokens): "
                    f"\u201c{sentence}\u201d"),
        "state": {"step": step, "layer": layer},
    }


@live_figure
def decode_steps(step=0, layer=0):
    """Chapter 11: write a sentence one token at a time; the new query reads the cache."""
    n = len(decode_run()["written"])
    return Figure(
        name="decode-steps", title="Decoding with a KV cache, one token at a time",
        controls=[steps("step", "next token (step)", n, step),
                  select("layer", "decoder layer", list(LAYERS), layer,
                         labels=[f"layer {n}" for n in LAYERS])],
        views=[View("weights", "heatmap"), View("cache", "table")],
        state_fn=decode_state,
        alt="A heatmap with one row per head and one column per cached position: the weights "
            "of the newest token's query over the keys in the cache, which grows by one column "
            "a step (the cached keys are not recomputed; each new query weighs them afresh); "
            "a table of the cache's shape and bytes.")


# ----------------------------------------------------------------------------- cache size

KINDS = ("MHA", "GQA", "MQA")
GQA_KV_HEADS = 8  # Llama 2 70B, Mistral 7B and Llama 3 8B use 8 key/value heads
#: the slider's contexts; each model is offered those up to its own context (2048 to 8192)
CONTEXTS = (512, 1024, 2048, 4096, 8192)


def kv_heads(config, kind):
    """The number of key/value heads of ``kind`` for this model's query heads (None: GQA with
    8 groups does not divide Falcon-7B's 71 heads)."""
    if kind == "MHA":
        return config.num_heads
    if kind == "MQA":
        return 1
    if kind == "GQA":
        return GQA_KV_HEADS if config.num_heads % GQA_KV_HEADS == 0 else None
    raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")


def _mib(config, kv, positions):
    """The cache of ``positions`` cached positions with ``kv`` key/value heads, in MiB (NaN,
    drawn as no bar, when ``kv`` is None)."""
    if kv is None:
        return float("nan")
    return kv_cache_bytes(config.num_layers, kv, config.d_head, positions) / 2**20


def built_mib(config, context):
    """The model as built: its own key/value heads, and at most ``window`` positions cached."""
    return _mib(config, config.num_kv_heads, config.cached_positions(context))


def mib_text(x):
    """MiB as the readout writes them, exact (whole numbers here) with thousands separators,
    and in GiB too (the chapter's table) when that is 1 or more and exact in three decimals."""
    text = f"{x:,.0f} MiB" if x == int(x) else f"{x:,.3f} MiB"
    if x >= 1024 and x % 128 == 0:
        text += " (" + f"{x / 1024:,.3f}".rstrip("0").rstrip(".") + " GiB)"
    return text


def _heads(n):
    return f"{n} key/value head{'s' if n != 1 else ''}"


def size_state(model, kind, context):
    c = MODELS[model]
    contexts = [n for n in CONTEXTS if n <= c.context]
    context = min(context, contexts[-1])  # past the model's context: the slider stops there
    kv = kv_heads(c, kind)
    sizes = [_mib(c, kv_heads(c, k), context) for k in KINDS]
    top = max(s for s in sizes if s == s)  # NaN != NaN
    labels = [f"{k} {kv_heads(c, k) or '-'}" for k in KINDS]
    built = f"as built: {c.attention} {c.num_kv_heads}" + (
        f", window {c.window:,}" if c.window else "")
    # the model as built first (solid, the main colour), the chosen kind second (dashed, the
    # accent colour of its bar, ringed at the chosen context); where the chosen kind is the
    # model as built the two lines lie on each other. Each line is its cache as a multiple of
    # its own cache at the first context: the bars compare the sizes, the plot how each
    # grows (GPT-3's MHA and MQA, 96 times apart on one MiB axis, took 9 doublings of y
    # against 2 of x and looked flat)
    first = contexts[0]
    curves = {built: [built_mib(c, n) / built_mib(c, first) for n in contexts]}
    if kv is not None:
        curves[f"chosen: {kind} {kv}" + (", all kept" if c.window else "")] = [
            _mib(c, kv, n) / _mib(c, kv, first) for n in contexts]
    growth = plot(contexts, curves, x_log=True, marker=contexts.index(context),
                  marker_series=[1] if kv is not None else [],
                  x_label="context (tokens), log scale",
                  y_label=f"x cache at {first:,}, log scale",
                  caption=f"{model}: how the cache grows with the context (every position "
                          "kept: twice the context, twice the cache)")
    # both axes log2-spaced (the front end's log-log plot), a doubling as long on each
    growth.update(y_log=True, square=True)
    own = "its full context" if context == c.context else f"its context is {c.context:,}"
    as_built = built_mib(c, context)
    if c.window and context > c.window:
        built_text = (f"As built ({c.attention}, {_heads(c.num_kv_heads)}), its sliding "
                      f"window of {c.window:,} positions caps the cache at {c.window:,} "
                      f"positions: {mib_text(as_built)}.")
    elif c.window:
        built_text = (f"As built ({c.attention}, {_heads(c.num_kv_heads)}; its sliding window "
                      f"of {c.window:,} positions holds all {context:,}): {mib_text(as_built)}.")
    else:
        built_text = (f"As built ({c.attention}, {_heads(c.num_kv_heads)}): "
                      f"{mib_text(as_built)}.")
    if kv is None:
        readout = (f"{model} has {c.num_heads} query heads, which 8 key/value heads cannot "
                   f"share equally: no GQA bar. {built_text}")
    else:
        per_token = kv_cache_bytes(c.num_layers, kv, c.d_head)
        readout = (f"{model} with {kind} ({_heads(kv)} of {c.num_heads}): "
                   f"2 x {c.num_layers} layers x {kv} x d_head {c.d_head} x 2 bytes = "
                   f"{per_token / 2**10:,.0f} KiB per token; {context:,} tokens ({own}) x "
                   f"{per_token / 2**10:,.0f} KiB = {mib_text(sizes[KINDS.index(kind)])} "
                   f"for one sequence, every position kept. {built_text}")
    return {
        "views": {
            "sizes": bars(sizes, labels, highlight=[KINDS.index(kind)],
                          y_max=round(top * 1.15, 4), y_label="MiB", x_label="kv heads",
                          null_label="n/a",
                          caption=f"Cache of {context:,} tokens, all kept (accent: chosen)"),
            "growth": growth},
        "readout": readout,
        # the context slider stops at this model's context, and choosing a model moves it
        # there (the table's number for that model): limits the front end applies
        "limits": {"context": {"max": CONTEXTS.index(contexts[-1]), "reset": "model",
                               "to": "max"}},
        "state": {"model": model, "kind": kind, "context": context,
                  "mib": None if kv is None else sizes[KINDS.index(kind)],
                  "built_mib": as_built},
    }


@live_figure
def kv_cache_size(model="Llama 2 70B", kind="GQA", context=4096):
    """Chapter 11: a real model's KV cache for MHA, GQA and MQA at a chosen context, up to the
    model's own."""
    if context > MODELS[model].context:
        raise ValueError(f"context must be at most {model}'s {MODELS[model].context:,}; "
                         f"got {context!r}")
    return Figure(
        name="kv-cache-size", title="The KV cache of a real model: MHA, GQA, MQA",
        controls=[select("model", "model", list(MODELS), model),
                  select("kind", "attention", list(KINDS), kind,
                         labels=["MHA", "GQA (8 kv heads)", "MQA (1 kv head)"]),
                  slider("context", "context (tokens)", CONTEXTS, context,
                         labels=[f"{n:,}" for n in CONTEXTS])],
        views=[View("sizes", "bars"), View("growth", "plot")],
        state_fn=size_state,
        alt="Bars: the key/value cache of one sequence in MiB for the chosen model with "
            "multi-head, grouped-query (8) and multi-query attention, every position kept; a "
            "line plot of the cache against the context length, up to the model's own, with "
            "both axes on a log scale, where a cache that grows in proportion to the context "
            "is a straight line of slope 1, and the model as built when it differs (Mistral "
            "7B's sliding window stops its cache growing at 4,096 positions).")
