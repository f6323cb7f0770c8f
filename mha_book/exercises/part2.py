"""Checks for the coding exercises of Part II (chapters 04-06): many heads.

====================== ======== =============================================================
check                  chapter  the reader writes
====================== ======== =============================================================
``parameter_count``    04       ``fn(d_model, num_heads, bias=False) -> int``
``multi_head_forward`` 04       ``fn(query, key, value, W_q, W_k, W_v, W_o, num_heads)``, the
                                weights in ``nn.Linear`` layout (out_features, in_features)
``split_heads``        05       ``fn(x, num_heads)``: (B, L, D) -> (B, H, L, Dh)
``merge_heads``        05       ``fn(x)``: (B, H, L, Dh) -> (B, L, D)
``head_scores``        06       ``fn(query, key, num_heads)``: projected (B, Lq, D) and
                                (B, Lk, D) -> scaled per-head scores (B, H, Lq, Lk)
====================== ======== =============================================================

Shapes: B batch, H heads, Lq/Lk query/key lengths, L length, D d_model, Dh d_head = D / H.
"""

import math

import torch

from mha import functional as F
from mha_book.exercises import Case, register

# --- chapter 04 ---------------------------------------------------------------------------


def _parameter_count(d_model, num_heads, bias=False):
    """The package's answer: count the parameters of a real layer (on the meta device)."""
    from mha.layer import MultiHeadAttention

    layer = MultiHeadAttention(d_model, num_heads, bias=bias, device="meta")
    return sum(p.numel() for p in layer.parameters())


def _compare_counts(expected, actual):
    if isinstance(actual, torch.Tensor) and actual.numel() == 1:
        actual = actual.item()
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        return f"expected a number ({expected:,}), got {type(actual).__name__} {actual!r}"
    if actual != expected:
        return f"expected {expected:,} parameters, got {actual:,}"
    return None


register(
    "parameter_count",
    reference=_parameter_count,
    cases=lambda: [
        Case("d_model = 512, 8 heads", args=(512, 8)),
        Case("d_model = 768, 12 heads (GPT-3 Small, BERT-base)", args=(768, 12)),
        Case("d_model = 12288, 96 heads (GPT-3 175B)", args=(12288, 96)),
        Case("d_model = 64, one head", args=(64, 1)),
        Case("d_model = 768, 12 heads, with biases", args=(768, 12), kwargs={"bias": True}),
    ],
    hint=(
        "Each of W_q, W_k, W_v holds num_heads blocks of d_head x d_model, and W_o is "
        "d_model x (num_heads * d_head); with bias=True each of the four also has d_model biases. "
        "The number of heads should not appear in the final formula."
    ),
    compare=_compare_counts,
)


def _multi_head_forward(query, key, value, W_q, W_k, W_v, W_o, num_heads):
    """The package's layer, holding the given weights (nn.Linear layout: (out, in))."""
    from mha.layer import MultiHeadAttention

    layer = MultiHeadAttention(W_q.size(1), num_heads, kdim=W_k.size(1), vdim=W_v.size(1))
    layer = layer.to(dtype=query.dtype, device=query.device)
    with torch.no_grad():
        for name, weight in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
            getattr(layer, name).weight.copy_(weight)
        output, _ = layer(query, key, value)
    return output


def _forward_case(name, batch, num_queries, num_keys, d_model, num_heads, self_attention=False):
    query = torch.randn(batch, num_queries, d_model)
    key = query if self_attention else torch.randn(batch, num_keys, d_model)
    weights = [torch.randn(d_model, d_model) / math.sqrt(d_model) for _ in range(4)]
    return Case(name, args=(query, key, key, *weights, num_heads))


register(
    "multi_head_forward",
    reference=_multi_head_forward,
    cases=lambda: [
        _forward_case("self-attention, batch 2, 5 tokens, d_model 12, 3 heads", 2, 5, 5, 12, 3,
                      self_attention=True),
        _forward_case("cross-attention, 4 queries over 6 keys, d_model 16, 4 heads", 1, 4, 6,
                      16, 4),
        _forward_case("one head (d_head = d_model = 8)", 2, 3, 3, 8, 1),
        _forward_case("d_head = 1: 4 heads of one feature", 1, 3, 5, 4, 4),
        _forward_case("9 tokens x 512, 8 heads (the book's sentence)", 1, 9, 9, 512, 8,
                      self_attention=True),
    ],
    hint=(
        "Project with x @ W.T (nn.Linear layout), split the features into heads "
        "((B, L, D) -> (B, L, H, Dh) -> (B, H, L, Dh)), scale each head's scores by "
        "1/sqrt(d_head) (not 1/sqrt(d_model)), softmax over the keys, merge the heads back "
        "((B, H, Lq, Dh) -> (B, Lq, D)) and finish with W_o."
    ),
    atol=1e-4,
    rtol=1e-4,
)


# --- chapter 05 ---------------------------------------------------------------------------


def _compare_split(expected, actual):
    """Default comparison, plus a diagnosis of the classic mistake (no transpose)."""
    from mha_book.exercises import _compare

    message = _compare(expected, actual, 0.0, 0.0)
    if message and isinstance(actual, torch.Tensor) and actual.shape == expected.shape:
        B, H, L, Dh = expected.shape
        no_transpose = F.merge_heads(expected).reshape(B, H, L, Dh)  # what a bare reshape gives
        if torch.equal(actual.detach().cpu(), no_transpose.cpu()) and H > 1:
            message += (
                ". This is what reshaping (B, L, D) straight to (B, H, L, Dh) gives: head 0 then "
                "holds whole tokens one after the other, instead of columns 0..Dh-1 of every "
                "token. Reshape to (B, L, H, Dh) and then swap the L and H axes"
            )
    return message


def _arange_sentence():
    return torch.arange(1, 9 * 512 + 1, dtype=torch.float32).reshape(1, 9, 512)


register(
    "split_heads",
    reference=F.split_heads,
    cases=lambda: [
        Case("1 x 9 x 512 sequential numbers, 8 heads", args=(_arange_sentence(), 8)),
        Case("batch of 2, 5 tokens, d_model 12, 3 heads", args=(torch.randn(2, 5, 12), 3)),
        Case("one head: only a new axis", args=(torch.randn(2, 4, 6), 1)),
        Case("d_head = 1: one feature per head", args=(torch.randn(3, 2, 6), 6)),
        Case("a single token", args=(torch.randn(2, 1, 8), 4)),
    ],
    hint="Reshape (B, L, D) to (B, L, H, Dh) first, then transpose the L and H axes.",
    compare=_compare_split,
)


def _compare_merge(expected, actual):
    from mha_book.exercises import _compare

    message = _compare(expected, actual, 0.0, 0.0)
    if message and isinstance(actual, torch.Tensor) and actual.shape == expected.shape:
        B, L, D = expected.shape
        for H in range(2, D + 1):
            if D % H == 0:
                no_transpose = F.split_heads(expected, H).reshape(B, L, D)
                if torch.equal(actual.detach().cpu(), no_transpose.cpu()):
                    message += (
                        ". This is what reshaping (B, H, L, Dh) straight to (B, L, D) gives: it "
                        "glues the rows of one head together instead of the heads of one token. "
                        "Transpose H and L back first, then reshape"
                    )
                    break
    return message


register(
    "merge_heads",
    reference=F.merge_heads,
    cases=lambda: [
        Case("8 heads x 9 tokens x 64 (the split sentence)",
             args=(F.split_heads(_arange_sentence(), 8),)),
        Case("batch of 2, 3 heads, 5 tokens, d_head 4", args=(torch.randn(2, 3, 5, 4),)),
        Case("one head", args=(torch.randn(1, 1, 3, 7),)),
        Case("non-contiguous input (a transposed tensor)",
             args=(torch.randn(2, 6, 4, 3).transpose(1, 2),)),
    ],
    hint=(
        "Transpose (B, H, L, Dh) to (B, L, H, Dh), then reshape to (B, L, H * Dh); use .reshape "
        "(or .contiguous().view), because the transposed tensor is not contiguous."
    ),
    compare=_compare_merge,
)


# --- chapter 06 ---------------------------------------------------------------------------


def _head_scores(query, key, num_heads):
    """Scaled per-head scores: split_heads(q) @ split_heads(k)^T / sqrt(d_head)."""
    # (B, L, D) -> (B, H, L, Dh)
    q, k = F.split_heads(query, num_heads), F.split_heads(key, num_heads)
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, Lq, Dh) @ (B, H, Dh, Lk)


def _compare_scores(expected, actual):
    from mha_book.exercises import _compare

    message = _compare(expected, actual, 1e-5, 1e-4)
    if message and isinstance(actual, torch.Tensor) and actual.shape == expected.shape:
        H = expected.size(1)
        if H > 1 and torch.allclose(actual.detach().cpu() * math.sqrt(H), expected.cpu(),
                                    atol=1e-5, rtol=1e-4):
            message += (
                f". Your scores are the expected ones divided by sqrt({H}) = sqrt(num_heads): "
                "you scaled by 1/sqrt(d_model), but each head's dot product has only d_head terms"
            )
    return message


def _scores_case(name, batch, num_queries, num_keys, d_model, num_heads):
    return Case(name, args=(torch.randn(batch, num_queries, d_model),
                            torch.randn(batch, num_keys, d_model), num_heads))


register(
    "head_scores",
    reference=_head_scores,
    cases=lambda: [
        _scores_case("9 tokens x 512, 8 heads", 1, 9, 9, 512, 8),
        _scores_case("cross-attention: 12 queries over 9 keys, d_model 32, 4 heads", 2, 12, 9,
                     32, 4),
        _scores_case("one head (the big single head)", 1, 5, 5, 16, 1),
        _scores_case("d_head = 1", 2, 3, 4, 6, 6),
    ],
    hint=(
        "Split both into heads ((B, L, D) -> (B, H, L, Dh)), multiply query by the transposed "
        "key within each head, and divide by sqrt(d_head)."
    ),
    compare=_compare_scores,
)
