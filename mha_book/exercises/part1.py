"""Checks for the coding exercises of Part I (chapters 01-03): one head.

===================== ======== ===============================================================
check                 chapter  the reader writes
===================== ======== ===============================================================
``attention_weights`` 01       ``fn(query, keys, temperature=1.0)``: query (d,), keys (n, d)
                               -> the n weights softmax(query @ keys.T / temperature)
``masked_softmax``    02       ``fn(scores, valid_lens)``: scores (B, Lq, Lk), valid_lens None,
                               (B,) or (B, Lq) -> weights (B, Lq, Lk); keys at index >= the
                               valid length get 0 and a valid length of 0 gives a zero row
``causal_mask``       02       ``fn(num_queries, num_keys)`` -> bool (Lq, Lk), True = may attend
``attention_head``    03       ``fn(x, W_q, W_k=None, W_v=None)``: x (B, L, D), W_q and W_k
                               (D, Dh), W_v (D, Dv) in the equations' layout (``x @ W``);
                               ``W_k=None`` shares W_q (attempt 1), ``W_v=None`` leaves the
                               values unprojected -> (output, weights)
===================== ======== ===============================================================

Shapes: B batch, Lq/Lk query/key lengths, L length, D d_model, Dh d_head, Dv value features.
"""

import torch

from mha.functional import masked_softmax, scaled_dot_product_attention
from mha.masks import causal_mask
from mha_book.exercises import Case, register


def _as_tensor_message(actual, expected):
    """A failure message when ``actual`` is not a tensor of the expected shape, else None."""
    if not isinstance(actual, torch.Tensor):
        return (f"expected a tensor of shape {tuple(expected.shape)}, "
                f"got {type(actual).__name__}")
    if actual.shape != expected.shape:
        return (f"expected shape {tuple(expected.shape)}, got shape {tuple(actual.shape)}")
    return None


def _first_difference(expected, actual, atol, rtol, what="weight"):
    """None if close, else a message naming how many values differ and the first of them."""
    e, a = expected.detach().cpu().double(), actual.detach().cpu().double()
    close = torch.isclose(a, e, atol=atol, rtol=rtol)
    if bool(close.all()):
        return None
    index = tuple(int(i) for i in (~close).nonzero()[0])
    return (f"{int((~close).sum())} of {close.numel()} {what}s differ; first at index {index}: "
            f"expected {e[index].item():.6g}, got {a[index].item():.6g}")


# --- chapter 01: the weights of one query ------------------------------------------------------


def _attention_weights(query, keys, temperature=1.0):
    """The package's answer: one query (d,) over keys (n, d), with the scores divided by T."""
    _, weights = scaled_dot_product_attention(query[None], keys, keys, scale=1.0 / temperature)
    return weights[0]  # (1, n) -> (n,)


def _weights_cases():
    embeddings = torch.tensor([[1.0, 0.2, 0.0, 0.0], [1.0, 0.3, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0],
                               [1.0, 1.0, 0.0, 0.0], [0.6, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0],
                               [0.0, 0.0, 0.0, 1.0], [0.0, 0.3, 0.5, 0.0], [0.4, 0.8, 0.2, 0.0]])
    return [
        Case('the chapter\'s sentence, query "Michael"', args=(embeddings[3], embeddings)),
        Case("random query and 6 keys with 5 features", args=(torch.randn(5), torch.randn(6, 5))),
        Case("temperature 0.25 (sharper)", args=(embeddings[3], embeddings),
             kwargs={"temperature": 0.25}),
        Case("temperature 10 (blurrier)", args=(torch.randn(5), torch.randn(6, 5)),
             kwargs={"temperature": 10.0}),
        Case("a zero query gives uniform weights", args=(torch.zeros(3), torch.randn(4, 3))),
        Case("a single key gets weight 1", args=(torch.randn(4), torch.randn(1, 4))),
        Case("very large scores (around 1000: exp overflows unless you subtract the max)",
             args=(torch.tensor([30.0, 31.0]), torch.tensor([[20.0, 15.0], [15.0, 20.0],
                                                               [0.0, 0.0]]))),
    ]


def _compare_weights(expected, actual):
    message = _as_tensor_message(actual, expected)
    if message:
        return message
    if bool(torch.isnan(actual).any()) or bool(torch.isinf(actual).any()):
        return ("the weights contain NaN or inf: exp() of a large score overflows; subtract the "
                "largest score before exp() (softmax does not change when every score moves by "
                "the same amount)")
    total = actual.detach().double().sum().item()
    if abs(total - 1.0) > 1e-4:
        return f"the weights must sum to 1; yours sum to {total:.6g} (divide by their sum)"
    return _first_difference(expected, actual, atol=1e-5, rtol=1e-4)


register(
    "attention_weights",
    reference=_attention_weights,
    cases=_weights_cases,
    hint="scores = query @ keys.T / temperature (s = q K^T: one score per key), then softmax "
    "over the keys: exp(scores - scores.max()) / its sum.",
    compare=_compare_weights,
)


# --- chapter 02: the masked softmax and the causal mask ---------------------------------------


def _masked_softmax_cases():
    return [
        Case("no valid_lens: a plain softmax over the keys", args=(torch.randn(2, 3, 4), None)),
        Case("valid_lens (B,) = [2, 3]: one length per sequence",
             args=(torch.randn(2, 2, 4), torch.tensor([2, 3]))),
        Case("valid_lens (B, Lq) = [[1, 3], [2, 4]]: one length per query",
             args=(torch.randn(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))),
        Case("a valid length of 0 (a fully masked row) gives all-zero weights",
             args=(torch.randn(2, 3, 5), torch.tensor([0, 2]))),
        Case("a valid length of 0 for one query only",
             args=(torch.randn(1, 3, 4), torch.tensor([[2, 0, 4]]))),
        Case("valid lengths equal to Lk mask nothing",
             args=(torch.randn(3, 2, 6), torch.tensor([6, 6, 6]))),
        Case("large scores (around 100) stay finite",
             args=(100 * torch.randn(2, 3, 4), torch.tensor([3, 1]))),
    ]


def _compare_masked(expected, actual):
    message = _as_tensor_message(actual, expected)
    if message:
        return message
    actual = actual.detach().cpu().double()
    expected = expected.detach().cpu().double()
    if bool(torch.isnan(actual).any()):
        return ("your weights contain NaN: a row whose keys are all masked gives NaN when you fill "
                "with -inf (exp(-inf) / 0); such a row must come out as zeros")
    zero_rows = expected.sum(dim=-1) == 0  # rows with a valid length of 0
    if bool(zero_rows.any()):
        rows = actual[zero_rows]
        if bool(torch.allclose(rows, torch.full_like(rows, 1.0 / rows.size(-1)))):
            return ("a row with valid length 0 must be all zeros, but yours gives every key the "
                    f"weight 1/{rows.size(-1)}: filling the masked scores with a large negative "
                    "number (like -1e6) and taking the softmax attends uniformly to the padding")
    masked = expected == 0
    if bool((actual[masked].abs() > 1e-6).any()):
        return ("a key at index >= its valid length got a nonzero weight; mask every key j with "
                "j >= valid_len (compare torch.arange(Lk) with valid_lens)")
    return _first_difference(expected, actual, atol=1e-5, rtol=1e-4)


register(
    "masked_softmax",
    reference=masked_softmax,
    cases=_masked_softmax_cases,
    hint="Build a bool mask 'key index < valid length' of shape (B, Lq, Lk) (expand lengths of "
    "shape (B,) to (B, Lq) first), take the softmax over the allowed keys only, and set the "
    "blocked weights, and rows with no allowed key, to 0.",
    compare=_compare_masked,
)


def _compare_causal(expected, actual):
    message = _as_tensor_message(actual, expected)
    if message:
        return message
    if actual.dtype != torch.bool:
        return (f"expected a bool tensor (True = may attend), got dtype {actual.dtype}; "
                "compare with a comparison (e.g. j <= i) or call .bool()")
    actual = actual.cpu()
    if torch.equal(actual, expected):
        return None
    if torch.equal(actual, ~expected):
        return ("your mask is the exact opposite: True must mean 'may attend' (the convention "
                "of F.scaled_dot_product_attention), not 'blocked' (nn.MultiheadAttention's)")
    if torch.equal(actual, expected.T.contiguous()) or torch.equal(
            actual, torch.ones_like(actual).triu()):
        return ("your mask lets queries see the future: query i may attend keys 0..i only, so the "
                "True entries are on and below the diagonal (tril), not above it")
    i, j = (int(k) for k in (actual != expected).nonzero()[0])
    return (f"query {i}, key {j}: expected {bool(expected[i, j])}, got {bool(actual[i, j])} "
            f"(query i may attend key j exactly when j <= i)")


register(
    "causal_mask",
    reference=causal_mask,
    cases=lambda: [
        Case("4 queries, 4 keys", args=(4, 4)),
        Case("one query, one key", args=(1, 1)),
        Case("3 queries, 5 keys (aligned at the top left, like is_causal=True)", args=(3, 5)),
        Case("5 queries, 3 keys", args=(5, 3)),
    ],
    hint="torch.ones(num_queries, num_keys, dtype=torch.bool).tril(), or compare "
    "torch.arange(num_keys) with torch.arange(num_queries)[:, None].",
    compare=_compare_causal,
)


# --- chapter 03: one head, in three attempts --------------------------------------------------


def _attention_head(x, W_q, W_k=None, W_v=None):
    """The package's answer: project x, then scaled dot-product attention (scale 1/sqrt(Dh))."""
    query = x @ W_q  # (B, L, D) @ (D, Dh) -> (B, L, Dh)
    key = query if W_k is None else x @ W_k  # (B, L, D) @ (D, Dh) -> (B, L, Dh)
    value = x if W_v is None else x @ W_v  # (B, L, D) @ (D, Dv) -> (B, L, Dv)
    return scaled_dot_product_attention(query, key, value)


def _head_cases():
    x, D, Dh = torch.randn(2, 5, 8), 8, 4
    W_q, W_k, W_v = torch.randn(D, Dh), torch.randn(D, Dh), torch.randn(D, 3)
    return [
        Case("attempt 3: W_q, W_k, W_v (B, L, D) = (2, 5, 8), Dh = 4, Dv = 3",
             args=(x, W_q, W_k, W_v)),
        Case("attempt 2: W_q and W_k, values unprojected", args=(x, W_q, W_k)),
        Case("attempt 1: one shared W (W_k=None, W_v=None)", args=(x, W_q)),
        Case("one token (L = 1): its weight is 1", args=(torch.randn(3, 1, 8), W_q, W_k, W_v)),
        Case("a wide head (Dh = 64): the scale 1/sqrt(Dh) matters",
             args=(torch.randn(1, 6, 16), torch.randn(16, 64) / 4, torch.randn(16, 64) / 4,
                   torch.randn(16, 2))),
    ]


def _compare_head(expected, actual):
    if not isinstance(actual, (tuple, list)) or len(actual) != 2:
        return f"expected a pair (output, weights), got {type(actual).__name__}"
    out_e, w_e = expected
    out_a, w_a = actual
    for name, e, a in (("weights", w_e, w_a), ("output", out_e, out_a)):
        message = _as_tensor_message(a, e)
        if message:
            return f"{name}: {message}"
    w_a = w_a.detach().cpu().double()
    if not torch.allclose(w_a.sum(dim=-1), torch.ones_like(w_a.sum(dim=-1)), atol=1e-4):
        if torch.allclose(w_a.sum(dim=-2), torch.ones_like(w_a.sum(dim=-2)), atol=1e-4):
            return ("weights: the columns sum to 1 but the rows must (each query's weights over "
                    "the keys): take the softmax over the last axis, dim=-1")
        return "weights: each row (one query's weights over the keys) must sum to 1"
    message = _first_difference(w_e, w_a, atol=1e-5, rtol=1e-4)
    if message:
        return "weights: " + message + _scale_diagnosis(w_e.detach().cpu().double(), w_a)
    message = _first_difference(out_e, out_a, atol=1e-4, rtol=1e-4, what="output value")
    return "output: " + message if message else None


def _scale_diagnosis(w_e, w_a):
    """If the reader's log-weights are the expected ones times a constant, say which constant."""
    if bool((w_e <= 0).any()) or bool((w_a <= 0).any()):
        return ""
    le = w_e.log() - w_e.log().mean(dim=-1, keepdim=True)  # scores up to a shift per row
    la = w_a.log() - w_a.log().mean(dim=-1, keepdim=True)
    if float((le * le).sum()) < 1e-12:
        return ""
    factor = float((le * la).sum() / (le * le).sum())  # least squares: la ~ factor * le
    if abs(factor - 1) > 0.05 and torch.allclose(la, factor * le, atol=1e-3, rtol=1e-3):
        return (f"; your scores are {factor:.3g} times the expected ones: check the scale, "
                f"1/sqrt(Dh) with Dh = W_q.shape[1] (the features of one query)")
    return ""


register(
    "attention_head",
    reference=_attention_head,
    cases=_head_cases,
    hint="query = x @ W_q; key = x @ W_k (or the query itself when W_k is None); value = "
    "x @ W_v (or x itself when W_v is None); weights = softmax(query @ key.transpose(-2, -1) / "
    "sqrt(Dh), dim=-1) where Dh = W_q.shape[1]; return (weights @ value, weights).",
    compare=_compare_head,
)
