"""Trained heads for the explorer: any attention layer of chapter 08's tiny models and of chapter
10's Shakespeare model, on its own inputs.

A *source* names one layer of a shipped model (``mha_book/weights/*.pt``, see ``mha_book.tiny``):

* ``"letters model: layer 0"`` / ``"layer 1"``: the encoder trained on the three letter jobs
  (previous, first, induction; ``mha_book.tasks.SequenceTasks``), 16 letters;
* ``"translator encoder: layer N"``, ``"translator decoder: layer N"`` (causal self-attention)
  and ``"translator cross-attention: layer N"`` (target words over source words): the toy
  English -> French model;
* ``"Shakespeare model: layer N"`` (one per layer of ``mha_book.language_model.load_language_model()``,
  causal): the character-level language model on the held-out passages
  ``mha_book.language_model.PASSAGES``; sample ``seed`` is passage ``seed % len(PASSAGES)``, its
  characters labelled as the Shakespeare figure labels them (``GLYPHS``: a space '␣', a newline
  '↵').

``trained_view(source, seed)`` runs the model on sample ``seed`` of its task and returns the
layer's projected queries and keys (what its heads compare), the token labels and whether the
layer is causal; ``head_table(source)`` scores every head on the patterns of chapter 08, on the
chapter's own inputs (``SCORE_SAMPLES``: the letters model on 256 samples, the translator on 200
sentences, seed 1), so the letters model's scores and the cross-attention scores are the
numbers of the chapter's tables, and names a head by its best pattern when that score is above
``NAME_MIN`` and at least ``NAME_MARGIN`` ahead of its second best (else "mixed"). The
Shakespeare model's heads are scored and named as chapter 10 scores and names them
(``mha_book.lm_heads``: the previous-token score on held-out text, the induction score on
repeated random letters, and its rule), with the patterns of ``TEXT_PATTERNS`` on its passages
beside them. Weights are softmax(q . k / (sqrt(Dh) T)) as the layer computes them (T = 1).

Shapes: H heads, Lq / Lk query / key length, Dh = d_head.
"""

import functools
from dataclasses import dataclass

import torch

from mha_book.language_model import GLYPHS, SHIPPED_LAYERS

__all__ = ["GLYPHS", "LM_SCORES", "TEXT_PATTERNS", "TRAINED_SOURCES", "TrainedView",
           "head_table", "passages_said", "rows_said", "text_labels", "trained_view",
           "trained_views"]


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
    **{f"Shakespeare model: layer {n}": ("shakespeare", f"encoder.layers.{n}.self_attn", "text")
       for n in range(SHIPPED_LAYERS)},
}
#: chapter 08's names for heads whose weight sits on one pattern
ROLE = {"previous": "previous-token head", "first": "first-token head",
        "induction": "induction head", "self": "self head", "next": "next-token head",
        "same token": "same-token head", "prefix match": "induction head"}
#: the inputs chapter 08 scores each model on: (number of samples, seed) of its task
SCORE_SAMPLES = {"multitask": (256, 1), "translation": (200, 1)}
#: the Shakespeare model's table: first chapter 10's two scores (``mha_book.lm_heads``), which
#: name its heads, then patterns on its passages: the prefix matching with n = ``PREFIX_N``
#: (``mha.head_scores.prefix_match_targets``: keys whose n preceding characters are the n ending
#: at the query, the induction pattern on text) and chapter 08's first and self
#: (``mha_book.tasks.pattern_masks``)
LM_SCORES = ("previous token", "induction")
TEXT_PATTERNS, PREFIX_N = ("prefix match", "first", "self"), 2
#: the explorer shows the first TEXT_CHARS characters of each passage
TEXT_CHARS = 48
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
    name: str = None  # the passage's name (the Shakespeare model), else None


def _check_source(source):
    if source not in TRAINED_SOURCES:
        raise ValueError(f"source must be one of {sorted(TRAINED_SOURCES)}; got {source!r}")


def text_labels(text):
    """One label per character of ``text``: the character, '␣' for a space, '↵' for a newline
    (``mha_book.language_model.token_labels``)."""
    from mha_book.language_model import token_labels

    return token_labels(text)


@functools.lru_cache(maxsize=None)
def _model(name):
    if name == "shakespeare":
        from mha_book.language_model import load_language_model

        return load_language_model()
    from mha_book.tiny import load_pretrained

    return load_pretrained(name)


def _passage(seed):
    """(index, name, text) of the passage sample ``seed`` picks: ``seed % len(PASSAGES)``, its
    first ``TEXT_CHARS`` characters (the model is causal: they are weighted exactly as in the
    whole passage), so that a head's heatmap keeps cells a reader can see."""
    from mha_book.language_model import PASSAGES

    i = seed % len(PASSAGES)
    name, text = list(PASSAGES.items())[i]
    return i, name, text[:TEXT_CHARS]


def rows_said(source):
    """What the rows of a translator source's heatmaps are, for a note (the two kinds of
    decoder layer label their rows differently); "" for the other sources."""
    kind = TRAINED_SOURCES.get(source, (None, None, None))[2]
    if source.startswith("translator decoder"):
        return ("Rows and columns are the decoder's input tokens: row t is the token fed in at "
                "position t (<s>, then the words written so far), whose output predicts the "
                "next word.")
    if kind == "cross":
        return ("Rows are the words being written: row t is the decoder position that writes "
                "word t (its input is the word before it); columns are the source words.")
    return ""


def passages_said(seeds=None):
    """The passages by the seed that picks them, for a note: "0 Julius Caesar: Antony; 1 ...";
    ``seeds``: the seeds a control offers (default: any, when the note says that a seed past
    the last passage starts again at the first)."""
    from mha_book.language_model import PASSAGES

    n = len(PASSAGES)
    said = "; ".join(f"{seed} {_passage(seed)[1]}" for seed in (range(n) if seeds is None
                                                                  else seeds))
    return said + (f"; seed {n} and up start again at passage 0 (seed % {n})" if seeds is None
                   else "")


@functools.lru_cache(maxsize=None)
def _text_capture(i):
    """Every layer's (q, k), each (L, H*Dh), of the Shakespeare model on passage ``i``."""
    _, _, text = _passage(i)
    lm = _model("shakespeare")
    captured = _capture(lm, (lm.encode(text)[None],))
    return {name: (q[0], k[0]) for name, (q, k) in captured.items()}


@functools.lru_cache(maxsize=None)
def _task(name):
    from mha_book.tasks import make_task

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
    queries (B, Lq, H*Dh) and keys (B, Lk, H*Dh), from the inputs it received. A
    ``RotaryMultiHeadAttention``'s are the ones its heads compare: rotated by position
    (``_rotated``), so softmax(q . k / sqrt(Dh)) is still its weights."""
    from mha.layer import MultiHeadAttention

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
            return {name: _rotated(m, m.W_q(q), m.W_k(k)) for name, (m, q, k) in seen.items()}
    finally:
        for handle in handles:
            handle.remove()


def _rotated(module, q, k):
    """(q, k) float32, as ``module`` compares them: for a ``RotaryMultiHeadAttention``, split
    into heads, normalised (``qk_norm``), rotated at positions 0 .. L-1 (``mha.apply_rope``
    with the layer's base and pairing) and merged back; for another layer, as they are."""
    from mha.functional import _merge_heads, split_heads
    from mha.rotary import RotaryMultiHeadAttention, apply_rope

    if isinstance(module, RotaryMultiHeadAttention):
        kw = {"base": module.base, "interleaved": module.interleaved}
        q = split_heads(q, module.num_heads)  # (B, L, H*Dh) -> (B, H, L, Dh)
        k = split_heads(k, module.num_kv_heads)  # (B, L, Hkv*Dh) -> (B, Hkv, L, Dh)
        if module.qk_norm:
            q, k = module.q_norm(q), module.k_norm(k)
        q, k = _merge_heads(apply_rope(q, **kw)), _merge_heads(apply_rope(k, **kw))
    return q.float(), k.float()


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
    layer = dict(_model(model_name).named_modules())[layer_name]
    if kind == "text":  # one pass per passage: their lengths differ
        views = []
        for seed in seeds:
            i, name, text = _passage(seed)
            q, k = _text_capture(i)[layer_name]
            labels = text_labels(text)
            views.append(TrainedView(q, k, labels, list(labels), layer.num_heads, layer.d_head,
                                     True, name))
        return views
    captured, batch = _views(model_name, seeds)
    q, k = captured[layer_name]
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
    """The layer ``source`` on sample ``seed`` of its task (``task.sample(1, seed=seed)``; for
    the Shakespeare model, passage ``seed % len(PASSAGES)``): a ``TrainedView``."""
    return trained_views(source, (seed,))[0]


@functools.lru_cache(maxsize=None)
def _recorded(model_name):
    """Every layer's weights (B, H, Lq, Lk) on chapter 08's inputs (``SCORE_SAMPLES``), one pass."""
    from mha.record import record_attention

    args, batch = _inputs(model_name, [SCORE_SAMPLES[model_name]])
    with torch.no_grad(), record_attention(_model(model_name)) as recorded:
        _model(model_name)(*args)
    return recorded, batch


@functools.lru_cache(maxsize=None)
def _text_scores(layer_name):
    """The Shakespeare model's ``TEXT_PATTERNS`` scores of layer ``layer_name``: {pattern: (H,)},
    each the weight on the pattern's keys averaged over every query of every passage that has
    such a key (pooled: a passage counts by its number of such queries), so that for one
    passage "prefix match" is ``mha.head_scores.prefix_match_score`` with n = ``PREFIX_N``."""
    from mha.head_scores import prefix_match_targets
    from mha.record import record_attention
    from mha_book.language_model import PASSAGES
    from mha_book.tasks import pattern_masks

    lm = _model("shakespeare")
    on, rows = {}, {}
    for text in PASSAGES.values():
        ids = lm.encode(text)
        with torch.no_grad(), record_attention(lm) as recorded:
            lm(ids[None])
        weights = recorded[layer_name][0]  # (1, H, L, L) -> (H, L, L)
        masks = {**pattern_masks(ids[None]), "prefix match": prefix_match_targets(ids, PREFIX_N)}
        for pattern in TEXT_PATTERNS:
            mask = masks[pattern].reshape(ids.numel(), ids.numel())  # (L, L)
            has = mask.any(-1)  # (L,): the queries the pattern names a key for
            on[pattern] = on.get(pattern, 0) + (weights * mask).sum(-1)[:, has].sum(-1)
            rows[pattern] = rows.get(pattern, 0) + int(has.sum())
    return {p: on[p] / rows[p] for p in TEXT_PATTERNS if rows[p]}


@functools.lru_cache(maxsize=None)
def _lm_head_scores():
    """Chapter 10's scores and names of every head of the Shakespeare model
    (``mha_book.lm_heads``): ``(previous, induction, names)``, (layers, H) each."""
    from mha_book import lm_heads

    previous, induction = lm_heads.shipped_scores(_model("shakespeare"))
    return previous, induction, lm_heads.head_names(previous, induction)


@functools.lru_cache(maxsize=None)
def head_table(source):
    """Chapter 08's scores of every head of ``source``: ``{"columns": [pattern, ...], "rows":
    [[label, score, ...], ...], "names": [role per head], "caption": text}``, on chapter 08's
    inputs (``SCORE_SAMPLES``); for the Shakespeare model, the ``TEXT_PATTERNS`` on its passages
    (``_text_scores``)."""
    from mha_book.tasks import pattern_masks, pattern_score

    _check_source(source)
    model_name, layer_name, kind = TRAINED_SOURCES[source]
    if kind == "text":  # chapter 10's scores, then the patterns on the passages
        layer = int(layer_name.split(".")[2])  # encoder.layers.N.self_attn
        previous, induction, lm_names = _lm_head_scores()
        scores = {LM_SCORES[0]: previous[layer], LM_SCORES[1]: induction[layer],
                  **_text_scores(layer_name)}
        H = dict(_model(model_name).named_modules())[layer_name].num_heads
    else:
        recorded, batch = _recorded(model_name)
        weights = recorded[layer_name]  # (B, H, Lq, Lk)
        H = weights.size(1)
    if kind == "cross":  # chapter 08: weight on the aligned source word, per kind of word
        task = _task(model_name)
        aligned = task.alignment_mask(len(batch.inputs))  # (B, Lt, Ls)
        on_aligned = (weights * aligned[:, None]).sum(-1).mean(0)  # (B, H, Lt) -> (H, Lt)
        roles = list(task.target_roles)
        scores = {role: on_aligned[:, [j for j, r in enumerate(roles) if r == role]].mean(-1)
                  for role in dict.fromkeys(roles)}
    elif kind != "text":
        ids = batch.decoder_inputs if kind == "decoder" else batch.inputs
        masks = pattern_masks(ids)
        scores = {name: pattern_score(weights, mask) for name, mask in masks.items()
                  if mask.any()}
    columns = list(scores)
    rows, names = [], []
    for h in range(H):
        values = [round(float(scores[c][h]), 4) for c in columns]
        order = sorted(range(len(columns)), key=lambda i: values[i], reverse=True)
        best, second = values[order[0]], (values[order[1]] if len(order) > 1 else 0.0)
        pattern = columns[order[0]]
        role = ROLE.get(pattern, f"{pattern} aligner" if kind == "cross" else pattern)
        if kind == "text":  # named as chapter 10 names it
            names.append(lm_names[layer][h])
        else:
            names.append(role if best > NAME_MIN and best - second >= NAME_MARGIN else "mixed")
        rows.append([f"head {h}", *values])
    n, _ = SCORE_SAMPLES.get(model_name, (None, None))
    if kind == "text":
        from mha_book import lm_heads
        from mha_book.language_model import PASSAGES

        what = (f"Pattern scores of the Shakespeare model. First chapter 10's: the "
                f"previous-token score on {lm_heads.HELD_OUT_WINDOWS} windows of held-out text "
                f"and the induction score on {lm_heads.REPEATS} blocks of random letters, each "
                f"repeated. Then on its {len(PASSAGES)} held-out passages, the fraction of each "
                f"head's weight on the keys a pattern names, over every query that has such a "
                f"key (prefix match: the keys whose {PREFIX_N} preceding characters are the "
                f"{PREFIX_N} ending at the query, the induction pattern on text)")
    elif kind == "cross":
        what = (f"Alignment scores of chapter 08's table (weight on the aligned source word, per "
                f"kind of target word, mean over the chapter's {n} sentences)")
    elif model_name == "multitask":
        what = (f"Pattern scores of chapter 08's table (fraction of each head's weight on the "
                f"keys a pattern names, mean over the chapter's {n} inputs)")
    else:
        what = (f"Pattern scores computed as chapter 08 scores the letters model (fraction of "
                f"each head's weight on the keys a pattern names, mean over {n} sentences; the "
                f"chapter shows no table for this layer)")
    if kind == "text":
        rule = (f"A head is named as chapter 10 names it: an induction head has an induction "
                f"score above {lm_heads.INDUCTION_MIN}; a previous-token head a previous-token "
                f"score above {lm_heads.PREVIOUS_MIN} and more than "
                f"{lm_heads.PREVIOUS_RATIO:g} times that of every other head of its layer; "
                f"any other head is mixed.")
    else:
        rule = (f"A head is named by its best score when that is above {NAME_MIN} and at "
                f"least {NAME_MARGIN} ahead of its second best; otherwise it is mixed.")
    return {"columns": columns, "rows": rows, "names": names, "caption": f"{what}. {rule}"}
