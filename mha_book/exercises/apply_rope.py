"""Check for the coding exercise of chapter 12 (positions): the reader's own rotary embedding.

============== ======== ==========================================================================
check          chapter  the reader writes
============== ======== ==========================================================================
``apply_rope`` 12       ``fn(x, positions, interleaved=False)``: x (..., L, Dh), positions (L,)
                        integers -> x with feature pair j of the token at position m rotated by
                        m * 10000 ** (-2j / Dh); pairs (j, j + Dh/2), or (2j, 2j + 1) when
                        ``interleaved``
============== ======== ==========================================================================

Shapes: B batch, H heads, L length, Dh d_head (even).
"""

import torch

from mha.rotary import apply_rope
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _reference(x, positions, interleaved=False):
    return apply_rope(x, positions, interleaved=interleaved)


def _compare_rope(expected, actual):
    """Default comparison, plus a diagnosis of the classic mistake: the other pair convention."""
    message = _differences(expected, actual)
    if message is None or not isinstance(actual, torch.Tensor):
        return message
    if actual.shape == expected.shape and _other_convention(expected, actual):
        message += (". Your output is what the OTHER pair convention gives: rotate-half pairs "
                    "feature j with feature j + Dh/2, interleaved pairs 2j with 2j + 1")
    return message


def _differences(expected, actual, atol=1e-5, rtol=1e-4):
    """None when ``actual`` matches ``expected``, else a message saying how they differ."""
    if not isinstance(actual, torch.Tensor):
        return f"expected a tensor of shape {tuple(expected.shape)}, got {type(actual).__name__}"
    if actual.shape != expected.shape:
        return (f"expected shape {tuple(expected.shape)}, got shape {tuple(actual.shape)} "
                f"(the output has the shape of x)")
    e, a = expected.detach().cpu().double(), actual.detach().cpu().double()
    close = torch.isclose(a, e, atol=atol, rtol=rtol)
    if bool(close.all()):
        return None
    index = tuple(int(i) for i in (~close).nonzero()[0])
    return (f"{int((~close).sum())} of {close.numel()} values differ; first at index {index}: "
            f"expected {e[index].item():.6g}, got {a[index].item():.6g}")


_LAST = {}  # the inputs of the case being compared (set by the cases' builder below)


def _other_convention(expected, actual):
    x, positions, interleaved = _LAST.get(id(expected), (None, None, None))
    if x is None:
        return False
    other = apply_rope(x, positions, interleaved=not interleaved)
    return torch.allclose(actual.detach().cpu().double(), other.cpu().double(), atol=1e-5)


def _case(name, shape, positions, interleaved=False):
    x = torch.randn(*shape)
    return Case(name, args=(x, positions), kwargs={"interleaved": interleaved})


def _cases():
    return [
        _case("rotate half: batch 2, 5 tokens, d_head 8", (2, 5, 8), torch.arange(5)),
        _case("interleaved: batch 2, 5 tokens, d_head 8", (2, 5, 8), torch.arange(5), True),
        _case("heads: (B, H, L, Dh) = (2, 3, 4, 6), positions 7..10", (2, 3, 4, 6),
              torch.arange(7, 11)),
        _case("interleaved heads, (1, 2, 4, 6), positions 7..10", (1, 2, 4, 6),
              torch.arange(7, 11), True),
        _case("one pair (d_head 2), unbatched (L, Dh) = (3, 2)", (3, 2), torch.tensor([0, 1, 5])),
        _case("one token at position 1000, d_head 64", (1, 1, 64), torch.tensor([1000])),
        _case("positions out of order: 4, 0, 2", (1, 3, 4), torch.tensor([4, 0, 2]), True),
    ]


def _reference_recording(x, positions, interleaved=False):
    out = _reference(x, positions, interleaved)
    _LAST.clear()
    _LAST[id(out)] = (x, positions, interleaved)
    return out


def _variants(rng):
    out = []
    for interleaved in (False, True):
        L, Dh = rng.randint(1, 6), 2 * rng.randint(1, 6)
        start = rng.randint(0, 500)
        positions = torch.randperm(L) + start
        x = torch.randn(rng.randint(1, 2), rng.randint(1, 3), L, Dh)
        out.append(variant(f"x {tuple(x.shape)}, positions "
                           f"{positions.tolist()}, interleaved="
                           f"{interleaved}", (x, positions),
                           {"interleaved": interleaved}))
    return out


register(
    "apply_rope",
    reference=_reference_recording,
    cases=_cases,
    hint=(
        "theta_j = 10000 ** (-2j / Dh) for j = 0 .. Dh/2 - 1, the angle is positions[:, None] * "
        "theta (shape (L, Dh/2)); with a = first feature of each pair and b = second, the result "
        "is (a cos - b sin, a sin + b cos), put back in the same feature order. Rotate-half pairs "
        "x[..., :Dh//2] with x[..., Dh//2:]; interleaved pairs x[..., 0::2] with x[..., 1::2]."
    ),
    compare=_compare_rope,
    variants=_variants,
    forbidden=[apply_rope, _reference],
)
