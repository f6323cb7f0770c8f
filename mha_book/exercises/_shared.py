"""Helpers that several exercise files share: a course case, messages about tensors, random
attention weights, the chapter 05 sentence and the attention functions (a softmax exercise's
forbidden calls).

Shapes: B batch, H heads, L/Lq/Lk lengths, D d_model, Dh d_head.
"""

import torch

from mha import blockwise, functional, layer, modern
from mha_book.exercises import Case
from mha_book.figures.one_big_head import product_of_heads


def variant(name, args, kwargs=None):
    """One of the course's graded cases (the name says it is the course's)."""
    return Case(f"course case: {name}", args=args, kwargs=kwargs or {})


def as_tensor_message(actual, expected):
    """A failure message when ``actual`` is not a tensor of the expected shape, else None."""
    if not isinstance(actual, torch.Tensor):
        return (f"expected a tensor of shape {tuple(expected.shape)}, "
                f"got {type(actual).__name__}")
    if actual.shape != expected.shape:
        return (f"expected shape {tuple(expected.shape)}, got shape {tuple(actual.shape)}")
    return None


def first_difference(expected, actual, atol, rtol, what="weight"):
    """None if close, else a message naming how many values differ and the first of them."""
    e, a = expected.detach().cpu().double(), actual.detach().cpu().double()
    close = torch.isclose(a, e, atol=atol, rtol=rtol)
    if bool(close.all()):
        return None
    index = tuple(int(i) for i in (~close).nonzero()[0])
    return (f"{int((~close).sum())} of {close.numel()} {what}s differ; "
            f"first at index {index}: "
            f"expected {e[index].item():.6g}, got {a[index].item():.6g}")


def seeded_rows(shape, *, seed, sharpness=1.0, allowed=None):
    """Random attention weights of ``shape`` (B, H, Lq, Lk); ``allowed`` zeroes blocked keys
    and gives all-zero rows where a query may attend to nothing."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(shape, generator=g) * sharpness
    if allowed is None:
        return scores.softmax(-1)
    any_key = allowed.any(-1, keepdim=True)
    weights = scores.masked_fill(~(allowed | ~any_key), float("-inf")).softmax(-1)
    return weights.masked_fill(~allowed, 0.0)


def course_weights(rng, causal=False):
    """Random attention weights (B, H, L, L) for the course: sizes from ``rng``."""
    B, H, L = rng.randint(1, 3), rng.randint(1, 5), rng.randint(2, 9)
    scores = torch.randn(B, H, L, L) * rng.randint(1, 4)
    if causal:
        blocked = torch.ones(L, L, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(blocked, float("-inf"))
    return scores.softmax(-1)


def arange_sentence():
    """Chapter 05's sentence: 1 x 9 x 512 sequential numbers."""
    return torch.arange(1, 9 * 512 + 1, dtype=torch.float32).reshape(1, 9, 512)


# attention computes a softmax: given scores as queries and the identity as
# keys and values (a second lecturer's review), it is a softmax exercise's
# answer
ATTENTION = ["torch.nn.functional.scaled_dot_product_attention",
             "torch.nn.functional.multi_head_attention_forward",
             "torch.nn.MultiheadAttention",
             functional.scaled_dot_product_attention,
             functional._attention, layer.MultiHeadAttention,
             blockwise.blockwise_attention, modern.sink_attention,
             modern.sink_fused_attention,
             modern.window_attention, product_of_heads,
             functional.masked_softmax]
