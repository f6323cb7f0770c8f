"""Trained heads for the explorer: any attention layer of chapter 08's tiny models, on its own inputs.

A *source* names one layer of a shipped model (``mha/weights/*.pt``, see ``mha.tiny``):

* ``"letters model: layer 0"`` / ``"layer 1"``: the encoder trained on the three letter jobs
  (previous, first, induction; ``mha.tasks.SequenceTasks``), 16 letters;
* ``"translator encoder: layer N"``, ``"translator decoder: layer N"`` (causal self-attention)
  and ``"translator cross-attention: layer N"`` (target words over source words): the toy
  English -> French model.

``trained_view(source, seed)`` runs the model on sample ``seed`` of its task and returns the
layer's projected queries and keys (what its heads compare), the token labels and whether the
layer is causal; ``head_table(source)`` scores every head on the patterns of chapter 08, on the
chapter's own inputs (``SCORE_SAMPLES``: the letters model on 256 samples, the translator on 200
sentences, seed 1), so the letters model's scores and the cross-attention scores are the numbers
of the chapter's tables, and names a head by its best pattern when that score is above
``NAME_MIN`` and at least ``NAME_MARGIN`` ahead of its second best (else "mixed"). Weights are softmax(q . k / (sqrt(Dh) T)) as the layer computes them (T = 1).

Shapes: H heads, Lq / Lk query / key length, Dh = d_head.
"""

import functools
from dataclasses import dataclass

import torch

__all__ = ["TRAINED_SOURCES", "TrainedView", "head_table", "trained_view", "trained_views",
           "trained_weights"]

#: source name -> (shipped model, layer name in ``model.named_modules()``, kind of layer)
TRAINED_SOURCES = {
    "letters model: layer 0": ("multitask", "encoder.layers.0.self_attn", "encoder"),
    "letters model: layer 1": ("multitask", "encoder.layers.1.self_attn", "encoder"),
    "translator encoder: layer 0": ("translation", "encoder.layers.0.self_attn", "encoder"),
    "translator encoder: layer 1": ("translation", "encoder.layers.1.self_attn", "encoder"),
    "translator decoder: layer 0": ("translation", "decoder.layers.0.self_attn", "decoder"),
    "translator decoder: layer 1": ("translation", "decoder.layers.1.self_attn", "decoder"),
    "translator cross-attention: layer 0": ("translation", "decoder.layers.0.cross_attn", "cross"),
    "translator cross-attention: layer 1": ("translation", "decoder.layers.1.cross_attn", "cross"),
}
#: chapter 08's names for heads whose weight sits on one pattern
ROLE = {"previous": "previous-token head", "first": "first-token head",
        "induction": "induction head", "self": "self head", "next": "next-token head",
        "same token": "same-token head"}
#: the inputs chapter 08 scores each model on: (number of samples, seed) of its task
SCORE_SAMPLES = {"multitask": (256, 1), "translation": (200, 1)}
#: a head is named by its best pattern only when that score is above NAME_MIN and at least
#: NAME_MARGIN above its second best; otherwise it is "mixed"
NAME_MIN, NAME_MARGIN = 0.8, 0.1


@dataclass
class TrainedView:
    """One layer on one input: q (Lq, H*Dh), k (Lk, H*Dh) float32, labels, causal or not."""

    q: torch.Tensor
    k: torch.Tensor
    tokens_q: list
    tokens_k: list
    num_heads: int
    d_head: int
    causal: bool


def _check_source(source):
    if source not in TRAINED_SOURCES:
        raise ValueError(f"source must be one of {sorted(TRAINED_SOURCES)}; got {source!r}")


@functools.lru_cache(maxsize=None)
def _model(name):
    from .tiny import load_pretrained

    return load_pretrained(name)


@functools.lru_cache(maxsize=None)
def _task(name):
    from .tasks import make_task

    return make_task(name)


def _inputs(model_name, batches):
    """(the model's arguments, the batch): the samples ``batches`` of the model's task, stacked
    (each a ``task.sample(...)`` call's arguments, e.g. ``(1, seed)``)."""
    task = _task(model_name)
    parts = [task.sample(n, seed=seed) for n, seed in batches]
    batch = type(parts[0])(*(torch.cat([getattr(p, f) for p in parts])
                             if getattr(parts[0], f) is not None else None
                             for f in ("inputs", "targets", "decoder_inputs")))
    if model_name == "multitask":
        return (batch.inputs,), batch
    return (batch.inputs, batch.decoder_inputs), batch


def _capture(model, args):
    """Run ``model(*args)``; return {layer name: (q, k)}: every attention layer's projected
    queries (B, Lq, H*Dh) and keys (B, Lk, H*Dh), from the inputs it received."""
    from .layer import MultiHeadAttention

    seen, handles = {}, []

    def hook(name):
        def before(module, hook_args, kwargs):
            query = hook_args[0]
            key = hook_args[1] if len(hook_args) > 1 and hook_args[1] is not None else query
            seen[name] = (module, query, key)
        return before

    for name, module in model.named_modules():
        if isinstance(module, MultiHeadAttention):
            handles.append(module.register_forward_pre_hook(hook(name), with_kwargs=True))
    try:
        with torch.no_grad():
            model(*args)
            return {name: (m.W_q(q).float(), m.W_k(k).float()) for name, (m, q, k) in seen.items()}
    finally:
        for handle in handles:
            handle.remove()


@functools.lru_cache(maxsize=16)
def _views(model_name, seeds):
    """Every layer of ``model_name`` on the samples ``seeds`` (one sample each), one pass."""
    args, batch = _inputs(model_name, [(1, s) for s in seeds])
    return _capture(_model(model_name), args), batch


def trained_views(source, seeds):
    """``trained_view(source, seed)`` for every seed of ``seeds``, from one forward pass."""
    _check_source(source)
    model_name, layer_name, kind = TRAINED_SOURCES[source]
    seeds = tuple(seeds)
    captured, batch = _views(model_name, seeds)
    q, k = captured[layer_name]
    layer = dict(_model(model_name).named_modules())[layer_name]
    task = _task(model_name)
    views = []
    for b in range(len(seeds)):
        if model_name == "multitask":
            tokens_q = tokens_k = task.decode(batch.inputs[b])
        elif kind == "encoder":
            tokens_q = tokens_k = task.decode_src(batch.inputs[b])
        elif kind == "decoder":
            tokens_q = tokens_k = task.decode_tgt(batch.decoder_inputs[b])
        else:  # cross-attention: rows are the target words being written, columns source words
            tokens_q, tokens_k = task.decode_tgt(batch.targets[b]), task.decode_src(batch.inputs[b])
        views.append(TrainedView(q[b], k[b], list(tokens_q), list(tokens_k), layer.num_heads,
                                 layer.d_head, kind == "decoder"))
    return views


def trained_view(source, seed):
    """The layer ``source`` on sample ``seed`` of its task (``task.sample(1, seed=seed)``): a
    ``TrainedView``."""
    return trained_views(source, (seed,))[0]


def trained_weights(source, seed, temperature=1.0):
    """(H, Lq, Lk) weights of ``source`` on sample ``seed``, scores divided by ``temperature``."""
    from .functional import scaled_dot_product_attention, split_heads
    from .masks import causal_mask

    view = trained_view(source, seed)
    q = split_heads(view.q[None], view.num_heads)  # (1, Lq, H*Dh) -> (1, H, Lq, Dh)
    k = split_heads(view.k[None], view.num_heads)  # (1, Lk, H*Dh) -> (1, H, Lk, Dh)
    mask = causal_mask(q.size(-2)) if view.causal else None  # (Lq, Lk), True = may attend
    with torch.no_grad():
        _, weights = scaled_dot_product_attention(q / temperature, k, k, mask)  # (1, H, Lq, Lk)
    return weights[0]


@functools.lru_cache(maxsize=None)
def _recorded(model_name):
    """Every layer's weights (B, H, Lq, Lk) on chapter 08's inputs (``SCORE_SAMPLES``), one pass."""
    from .record import record_attention

    args, batch = _inputs(model_name, [SCORE_SAMPLES[model_name]])
    with torch.no_grad(), record_attention(_model(model_name)) as recorded:
        _model(model_name)(*args)
    return recorded, batch


@functools.lru_cache(maxsize=None)
def head_table(source):
    """Chapter 08's scores of every head of ``source``: ``{"columns": [pattern, ...], "rows":
    [[label, score, ...], ...], "names": [role per head], "caption": text}``, on chapter 08's
    inputs (``SCORE_SAMPLES``)."""
    from .tasks import pattern_masks, pattern_score

    _check_source(source)
    model_name, layer_name, kind = TRAINED_SOURCES[source]
    recorded, batch = _recorded(model_name)
    weights = recorded[layer_name]  # (B, H, Lq, Lk)
    if kind == "cross":  # chapter 08: weight on the aligned source word, per kind of word
        task = _task(model_name)
        aligned = task.alignment_mask(len(batch.inputs))  # (B, Lt, Ls)
        on_aligned = (weights * aligned[:, None]).sum(-1).mean(0)  # (B, H, Lt) -> (H, Lt)
        roles = list(task.target_roles)
        scores = {role: on_aligned[:, [j for j, r in enumerate(roles) if r == role]].mean(-1)
                  for role in dict.fromkeys(roles)}
    else:
        ids = batch.decoder_inputs if kind == "decoder" else batch.inputs
        masks = pattern_masks(ids)
        scores = {name: pattern_score(weights, mask) for name, mask in masks.items()
                  if mask.any()}
    columns = list(scores)
    H = weights.size(1)
    rows, names = [], []
    for h in range(H):
        values = [round(float(scores[c][h]), 4) for c in columns]
        order = sorted(range(len(columns)), key=lambda i: values[i], reverse=True)
        best, second = values[order[0]], (values[order[1]] if len(order) > 1 else 0.0)
        pattern = columns[order[0]]
        role = ROLE.get(pattern, f"{pattern} aligner" if kind == "cross" else pattern)
        names.append(role if best > NAME_MIN and best - second >= NAME_MARGIN else "mixed")
        rows.append([f"head {h}", *values])
    n, _ = SCORE_SAMPLES[model_name]
    if kind == "cross":
        what = (f"Alignment scores of chapter 08's table (weight on the aligned source word, per "
                f"kind of target word, mean over the chapter's {n} sentences)")
    elif model_name == "multitask":
        what = (f"Pattern scores of chapter 08's table (fraction of each head's weight on the "
                f"keys a pattern names, mean over the chapter's {n} inputs)")
    else:
        what = (f"Pattern scores computed as chapter 08 scores the letters model (fraction of "
                f"each head's weight on the keys a pattern names, mean over {n} sentences; the "
                f"chapter shows no table for this layer)")
    return {"columns": columns, "rows": rows, "names": names,
            "caption": f"{what}. A head is named by its best score when that is above "
                       f"{NAME_MIN} and at least {NAME_MARGIN} ahead of its second best; "
                       f"otherwise it is mixed."}
