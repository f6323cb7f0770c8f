"""The book's masks and score changes as FlexAttention ``mask_mod`` and ``score_mod`` functions.

Shape legend: B batch, H query heads, Hkv key/value heads, Lq/Lk query/key lengths, Dh d_head
(see ``mha.functional``).

FlexAttention (``torch.nn.attention.flex_attention``, torch >= 2.5; Dong et al. 2024) runs
softmax(score_mod(q k^T * scale)) v over only the pairs a ``mask_mod`` allows, from two small
functions of indices rather than from an (Lq, Lk) tensor:

- ``mask_mod(b, h, q_idx, kv_idx) -> bool``: True = query ``q_idx`` may attend key ``kv_idx``
  (the package's convention, as SDPA's bool masks). ``create_block_mask`` turns it into a
  ``BlockMask``: which ``block_size`` x ``block_size`` tiles of the score matrix hold any
  allowed pair, so a compiled kernel skips the empty tiles (the upper triangle of a causal
  mask, everything outside a sliding window or a document).
- ``score_mod(score, b, h, q_idx, kv_idx) -> score``: changes one score; the score it receives
  is already scaled (q . k * scale). Soft-capping and ALiBi are score changes.

Here: ``causal``, ``sliding_window``, ``document_mask`` and ``and_masks`` build mask_mods;
``soft_cap`` and ``alibi`` build score_mods; ``dense_mask`` evaluates a mask_mod into the bool
(B, H, Lq, Lk) tensor that ``mha.scaled_dot_product_attention`` takes (what the pictures of
the book show); ``flex_attention`` runs them, with GQA and gpt-oss's attention sinks.

The builders and ``dense_mask`` are plain tensor code and work on any torch; only
``flex_attention`` needs torch >= 2.5 (``flex_available()`` tells), and it imports
``torch.nn.attention.flex_attention`` on first use, so ``import mha.flex`` works on torch 2.4.

Without ``torch.compile`` (``compile=False``, the default) torch runs FlexAttention as an
unfused reference that materialises the (B, H, Lq, Lk) scores, like the package's explicit
path: right for CPU notebooks and tests, slow and memory-hungry for long sequences.
``compile=True`` runs ``torch.compile(flex_attention)``: the fused kernel (Triton on a GPU).
"""

import math
import re
import warnings

import torch

from . import _checks

__all__ = ["FLEX_MIN_TORCH", "alibi", "alibi_slopes", "and_masks", "causal", "dense_mask",
           "document_mask", "flex_attention", "flex_available", "sliding_window", "soft_cap"]

#: the first torch with ``torch.nn.attention.flex_attention``
FLEX_MIN_TORCH = (2, 5)

# the torch version flex_available() reads (a module attribute, so tests can pretend an older one)
_TORCH_VERSION = str(torch.__version__)

# the start of the UserWarning torch gives the first time flex_attention runs uncompiled
_EAGER_WARNING = "flex_attention called without torch.compile"


def _version(text):
    """'2.4.1+cu121' -> (2, 4): major and minor, whatever follows (dev builds too)."""
    match = re.match(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def flex_available():
    """Whether this torch has FlexAttention (torch >= 2.5, ``torch.nn.attention.flex_attention``
    importable)."""
    if _version(_TORCH_VERSION) < FLEX_MIN_TORCH:
        return False
    try:
        import torch.nn.attention.flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def _flex():
    """The module ``torch.nn.attention.flex_attention``, or a RuntimeError naming the version."""
    if not flex_available():
        need = ".".join(map(str, FLEX_MIN_TORCH))
        found = (f"this is torch {_TORCH_VERSION}" if _version(_TORCH_VERSION) < FLEX_MIN_TORCH
                 else f"this torch {_TORCH_VERSION} cannot import it")
        raise RuntimeError(
            f"mha.flex.flex_attention needs FlexAttention (torch.nn.attention.flex_attention), "
            f"which arrived in torch {need}; {found}: upgrade with "
            f"pip install 'torch>={need}'. The mask and score builders of mha.flex (causal, "
            f"sliding_window, document_mask, soft_cap, alibi) and dense_mask work on any torch: "
            f"run dense_mask's masks through mha.scaled_dot_product_attention instead"
        )
    import torch.nn.attention.flex_attention as flex

    return flex


# --- mask_mods --------------------------------------------------------------------------------


def _with_tensors(fn, **tensors):
    """Mark ``fn`` with the tensors it reads (``fn.tensors``: name -> tensor), so that
    ``flex_attention`` can check they are on the queries' device."""
    fn.tensors = tensors
    return fn


def _offset(offset):
    return _checks.check_int("offset", offset, minimum=0)


def causal(*, offset=0):
    """mask_mod: query i sees keys j <= i + offset.

    ``offset`` (int >= 0): the position of query 0 among the keys; 0 is SDPA's ``is_causal``
    (aligned at the top left); Lk - Lq aligns it at the bottom right, as a decoding step whose
    Lq new queries come after Lk - Lq cached positions."""
    offset = _offset(offset)

    def causal_mask(b, h, q_idx, kv_idx):
        return kv_idx <= q_idx + offset

    return causal_mask


def sliding_window(window, *, offset=0):
    """mask_mod: a causal window of ``window`` keys: the query at position i = q_idx + offset
    sees keys j with i - window < j <= i, itself included (the package's convention,
    ``mha.modern.window_mask``; Hugging Face's ``sliding_window=window``)."""
    window = _checks.check_positive_int("window", window)
    offset = _offset(offset)

    def sliding_window_mask(b, h, q_idx, kv_idx):
        i = q_idx + offset
        return (kv_idx <= i) & (kv_idx > i - window)

    return sliding_window_mask


def document_mask(document_ids, *, causal=False):
    """mask_mod for a packed batch: several sequences ("documents") laid end to end in one row,
    each token attending only within its own document (and only to earlier tokens with
    ``causal``), so no padding is needed and no document sees another.

    ``document_ids``: an integer tensor (L,) (the same packing for every row of the batch) or
    (B, L) (one per row), the document of each position, e.g.
    ``torch.repeat_interleave(torch.arange(3), torch.tensor([3, 5, 2]))`` for documents of 3, 5
    and 2 tokens. It is for self-attention over those L positions (Lq = Lk = L), on the queries'
    device.
    """
    _checks.check_integer_tensor("document_ids", document_ids)
    if document_ids.dim() not in (1, 2) or document_ids.size(-1) == 0:
        raise ValueError(
            f"document_ids must have shape (L,) or (B, L) with L >= 1, the document of each "
            f"position; got shape {_checks._shape(document_ids)}"
        )
    _checks.check_bool("causal", causal)
    ids = document_ids

    if ids.dim() == 1:
        def same(b, q_idx, kv_idx):
            return ids[q_idx] == ids[kv_idx]
    else:
        def same(b, q_idx, kv_idx):
            return ids[b, q_idx] == ids[b, kv_idx]

    def document(b, h, q_idx, kv_idx):
        allowed = same(b, q_idx, kv_idx)
        return allowed & (kv_idx <= q_idx) if causal else allowed

    return _with_tensors(document, document_ids=ids)


def and_masks(*mask_mods):
    """mask_mod: the pairs that every one of ``mask_mods`` allows (e.g.
    ``and_masks(sliding_window(4), document_mask(ids))``)."""
    if not mask_mods:
        raise ValueError("and_masks needs at least one mask_mod; got none")
    for i, mod in enumerate(mask_mods):
        if not callable(mod):
            raise TypeError(f"mask_mods[{i}] must be a mask_mod function; got {_checks._kind(mod)}")
    tensors = {}
    for mod in mask_mods:
        tensors.update(getattr(mod, "tensors", {}))

    def all_of(b, h, q_idx, kv_idx):
        allowed = mask_mods[0](b, h, q_idx, kv_idx)
        for mod in mask_mods[1:]:
            allowed = allowed & mod(b, h, q_idx, kv_idx)
        return allowed

    return _with_tensors(all_of, **tensors)


def dense_mask(mask_mod, num_queries, num_keys, *, batch_size=1, num_heads=1, device=None):
    """The bool (B, H, Lq, Lk) mask of a mask_mod, True = may attend: what
    ``mha.scaled_dot_product_attention`` takes, and what FlexAttention never builds.

    The mask_mod is called once, on index tensors broadcast against each other (b (B, 1, 1, 1),
    h (1, H, 1, 1), q_idx (1, 1, Lq, 1), kv_idx (1, 1, 1, Lk)), so it works on any torch for
    mask_mods written with tensor operations (every one of this module; torch's
    ``create_mask`` is the same with vmap)."""
    if not callable(mask_mod):
        raise TypeError(f"mask_mod must be a mask_mod function; got {_checks._kind(mask_mod)}")
    Lq = _checks.check_positive_int("num_queries", num_queries)
    Lk = _checks.check_positive_int("num_keys", num_keys)
    B = _checks.check_positive_int("batch_size", batch_size)
    H = _checks.check_positive_int("num_heads", num_heads)
    device = _checks.check_device_arg("device", device)

    def index(n, axis):
        shape = [1, 1, 1, 1]
        shape[axis] = n
        return torch.arange(n, device=device).view(shape)

    allowed = mask_mod(index(B, 0), index(H, 1), index(Lq, 2), index(Lk, 3))
    return torch.as_tensor(allowed, device=device).to(torch.bool).expand(B, H, Lq, Lk)


# --- score_mods -------------------------------------------------------------------------------


def soft_cap(cap):
    """score_mod: cap * tanh(score / cap), Gemma 2's and Grok's logit soft-capping: scores stay
    in (-cap, cap), almost unchanged while ``|score| << cap``. FlexAttention hands score_mod the
    scaled score q . k * scale, which is what those models cap (Gemma 2: cap = 50)."""
    cap = _checks.check_real("cap", cap)
    if cap <= 0:
        raise ValueError(f"cap must be > 0; got {cap}")

    def soft_capped(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)

    return soft_capped


def _slopes_power_of_two(n):
    """ALiBi's slopes for n (a power of two) heads: 2^(-8/n), 2^(-16/n), ..., 2^(-8)."""
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def alibi_slopes(num_heads, *, device=None):
    """ALiBi's per-head slopes m_h, float32 (H,) (Press et al. 2022, "Train Short, Test Long").

    For H a power of two, the geometric sequence 2^(-8h/H), h = 1 .. H (8 heads: 1/2, 1/4, ...,
    1/256). Otherwise the paper's rule: the slopes of the largest power of two n < H, then the
    odd-numbered slopes of 2n heads (2^(-4/n), 2^(-12/n), ...) for the H - n others."""
    H = _checks.check_positive_int("num_heads", num_heads)
    device = _checks.check_device_arg("device", device)
    n = 2 ** int(math.floor(math.log2(H)))
    slopes = _slopes_power_of_two(n) + _slopes_power_of_two(2 * n)[0::2][:H - n]
    return torch.tensor(slopes, dtype=torch.float32, device=device)


def alibi(num_heads, *, offset=0, device=None):
    """score_mod: ALiBi, score + m_h * (j - i): a penalty growing linearly with the distance
    i - j from the query at position i = q_idx + offset back to key j, one slope m_h per query
    head (``alibi_slopes``), and no position embedding at all. For causal attention, where
    j <= i; ``device``: the queries' device (the slopes live there)."""
    slopes = alibi_slopes(num_heads, device=device)
    offset = _offset(offset)

    def alibi_bias(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx - offset)

    return _with_tensors(alibi_bias, slopes=slopes)


# --- running them -----------------------------------------------------------------------------


def _check_flex_args(q, k, v, mask_mod, score_mod, sinks, scale, block_size):
    for name, x in (("q", q), ("k", k), ("v", v)):
        _checks.check_float_tensor(name, x)
        if x.dim() != 4:
            what = "(B, H, Lq, Dh)" if name == "q" else f"(B, Hkv, Lk, Dh) for {name}"
            raise ValueError(f"{name} must have shape {what}; got shape {_checks._shape(x)}")
    _checks.check_same_dtype("q", q, ("k", k), ("v", v))
    _checks.check_same_device("q", q, "k", k)
    _checks.check_same_device("q", q, "v", v)
    (B, H, Lq, Dh), (Hkv, Lk) = q.shape, k.shape[1:3]
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(f"k and v must have the same (B, Hkv, Lk); got k {tuple(k.shape)} and "
                         f"v {tuple(v.shape)}")
    if k.size(0) != B:
        raise ValueError(f"q and k must have the same batch size B; got {B} and {k.size(0)}")
    if k.size(-1) != Dh:
        raise ValueError(f"q has {Dh} features but k has {k.size(-1)}; their dot products need "
                         f"the same size")
    if H % Hkv:
        raise ValueError(f"the number of query heads H = {H} (q) must be a multiple of the key/"
                         f"value heads Hkv = {Hkv} (k)")
    if Lq == 0 or Lk == 0:
        raise ValueError(f"q and k need at least one position each; got Lq = {Lq} (q), "
                         f"Lk = {Lk} (k)")
    for name, mod in (("mask_mod", mask_mod), ("score_mod", score_mod)):
        if mod is not None and not callable(mod):
            raise TypeError(f"{name} must be None or a function; got {_checks._kind(mod)}")
        for tensor_name, x in getattr(mod, "tensors", {}).items():
            if not _checks._same_device(x.device, q.device):
                raise ValueError(
                    f"{name} reads {tensor_name} on device {x.device} but q is on {q.device}: "
                    f"build it from {tensor_name}.to(q.device) (or with device=q.device)")
            if tensor_name == "document_ids" and not (
                    x.size(-1) == Lq == Lk and (x.dim() == 1 or x.size(0) == B)):
                raise ValueError(
                    f"document_mask's document_ids has shape {tuple(x.shape)} but q and k have "
                    f"B = {B}, Lq = {Lq}, Lk = {Lk}: it is for self-attention over its L "
                    f"positions, so it needs L = Lq = Lk (and B rows when it is 2-D)")
    if sinks is not None:
        _checks.check_float_tensor("sinks", sinks)
        if tuple(sinks.shape) != (H,):
            raise ValueError(f"sinks must have shape (H,) = ({H},), one logit per query head; "
                             f"got shape {_checks._shape(sinks)}")
        _checks.check_same_device("q", q, "sinks", sinks)
    scale = None if scale is None else _checks.check_real("scale", scale)
    block_size = _checks.check_positive_int("block_size", block_size)
    return scale, block_size


_COMPILED = {}


def _kernel(flex, compile):
    """torch's flex_attention, or (compile=True) its torch.compile'd fused kernel, built once."""
    if not compile:
        return flex.flex_attention
    if "flex" not in _COMPILED:
        _COMPILED["flex"] = torch.compile(flex.flex_attention)
    return _COMPILED["flex"]


def flex_attention(q, k, v, *, mask_mod=None, score_mod=None, sinks=None, scale=None,
                   block_size=128, compile=False):
    """softmax(score_mod(q k^T * scale)) v over the pairs ``mask_mod`` allows, by PyTorch's
    FlexAttention (torch >= 2.5; a RuntimeError naming the version on older torch).

    q (B, H, Lq, Dh), k and v (B, Hkv, Lk, Dh) with Hkv dividing H (grouped-query attention:
    ``enable_gqa``, no copies); ``mask_mod``/``score_mod`` as built by this module (or any with
    FlexAttention's signatures), None for none; ``scale`` None means 1 / sqrt(Dh);
    ``block_size``: the tile of the BlockMask (built by ``create_block_mask`` on q's device,
    for all B and H, since a mask_mod may depend on b and h). A query with no allowed key gives
    zeros. Returns (B, H, Lq, Dh). On a CPU, torch's FlexAttention has no backward: inputs
    that require grad are refused (NotImplementedError; run under ``torch.no_grad()``).

    ``sinks`` (H,) or None: gpt-oss's attention sinks, one learned logit s_h per head that joins
    every softmax and is then dropped (``mha.modern.sink_attention``). FlexAttention has no
    extra column for it, but it returns each row's log-sum-exp lse = log Z, Z = sum_j exp(s_j),
    the s_j being the scores after score_mod and the mask, and that is enough: with the sink,
    a weight is

        exp(s_j) / (Z + exp(s_h)) = softmax_j * Z / (Z + exp(s_h))
                                  = softmax_j / (1 + exp(s_h - lse)) = softmax_j * sigmoid(lse - s_h),

    one factor per row, so out_sink = out * sigmoid(lse - s_h), exact, and differentiable in
    the sink and in q, k, v (FlexAttention differentiates through its lse; on a GPU). A row
    with no allowed key has lse = -inf: factor 0, output 0, as ``sink_attention`` gives. The
    lse is in natural-log units (torch's kernels work in base 2 and convert back before
    returning it).

    ``compile=False`` runs torch's unfused reference (it materialises the (B, H, Lq, Lk)
    scores); torch warns about that the first time ("flex_attention called without
    torch.compile"), and this wrapper silences exactly that warning, since choosing the
    reference path is deliberate here (other warnings pass through). ``compile=True`` runs
    ``torch.compile(flex_attention)``, the fused kernel (on a GPU; on a CPU it needs a C++
    compiler, runs forward only and returns no lse, so ``sinks`` are refused there). Each
    new mask_mod or score_mod (closure values included), dtype or shape compiles once more;
    past dynamo's ``recompile_limit`` (8) torch runs that call unfused.
    """
    scale, block_size = _check_flex_args(q, k, v, mask_mod, score_mod, sinks, scale, block_size)
    _checks.check_bool("compile", compile)
    if compile and sinks is not None and q.device.type == "cpu":
        raise ValueError(
            "sinks with compile=True need a GPU: torch's compiled FlexAttention on CPU returns "
            "no log-sum-exp, which the sinks are computed from; use compile=False on a CPU")
    flex = _flex()
    (B, H, Lq, _), (Hkv, Lk) = q.shape, k.shape[1:3]
    block_mask = None
    if mask_mod is not None:
        block_mask = flex.create_block_mask(mask_mod, B, H, Lq, Lk, device=q.device,
                                            BLOCK_SIZE=block_size)
    kwargs = {"score_mod": score_mod, "block_mask": block_mask, "scale": scale}
    if Hkv != H:
        kwargs["enable_gqa"] = True
    if sinks is not None:  # ask for the log-sum-exp: AuxRequest on new torch, return_lse before
        if hasattr(flex, "AuxRequest"):
            kwargs["return_aux"] = flex.AuxRequest(lse=True)
        else:
            kwargs["return_lse"] = True
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_EAGER_WARNING, category=UserWarning)
        result = _kernel(flex, compile)(q, k, v, **kwargs)
    if sinks is None:
        return result  # (B, H, Lq, Dh)
    out, aux = result
    lse = aux if isinstance(aux, torch.Tensor) else aux.lse  # (B, H, Lq), natural log
    keep = torch.sigmoid(lse.float() - sinks.float().view(1, H, 1))  # (B, H, Lq)
    return (out.float() * keep.unsqueeze(-1)).to(out.dtype)  # (B, H, Lq, Dh)
