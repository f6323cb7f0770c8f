"""Check for the coding exercise of chapter 14 (attention in today's models): the mask of a
causal sliding window.

========================  ======== =========================================================
check                     chapter  the reader writes
========================  ======== =========================================================
``sliding_window_mask``   14       ``fn(num_queries, num_keys, window)`` -> bool
                                   (num_queries, num_keys), True = may attend: the queries
                                   are the last ``num_queries`` of ``num_keys`` positions and
                                   the query at position i sees the keys j with
                                   i - window < j <= i
========================  ======== =========================================================

With num_queries == num_keys this is the mask of a whole sequence; with num_queries == 1 the
mask of one new token decoded after num_keys - 1 cached ones (``mha.modern.window_mask``).
"""

import torch

from mha.modern import window_mask
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _reference(num_queries, num_keys, window):
    return window_mask(num_queries, num_keys, window)


def _band(num_queries, num_keys, window, *, causal=True, bottom=True, width=None):
    """Variants of the mask, to name the reader's mistake: a band of ``width`` (default
    ``window``) positions, causal or both ways, queries aligned at the bottom or the top."""
    first = num_keys - num_queries if bottom else 0
    i = torch.arange(first, first + num_queries)[:, None]  # (Lq, 1)
    j = torch.arange(num_keys)[None, :]  # (1, Lk)
    w = window if width is None else width
    if causal:
        return (j <= i) & (j > i - w)
    return (j - i).abs() < w


_MISTAKES = (
    ({"width_delta": 1}, "your mask keeps window + 1 keys per row: the query at i sees "
                         "i - window < j <= i, so row i keeps at most `window` keys, "
                         "itself included"),
    ({"width_delta": -1}, "your mask keeps window - 1 keys per row: the query counts itself "
                          "among its `window` positions (j = i is allowed)"),
    ({"causal": False}, "your band reaches into the future: a sliding window is causal, "
                        "j <= i as well as j > i - window"),
    ({"bottom": False}, "your queries are the first num_queries positions; they are the last "
                        "ones (query r is at position num_keys - num_queries + r), as when one "
                        "new token is decoded after the cached ones"),
)


def _compare(expected, actual):
    if not isinstance(actual, torch.Tensor):
        return f"expected a torch.Tensor of dtype torch.bool; got {type(actual).__name__}"
    if actual.dtype != torch.bool:
        return (f"expected dtype torch.bool (True = may attend); got {actual.dtype}: "
                f"compare with <= and >, which give bools, or call .bool()")
    if actual.shape != expected.shape:
        return (f"expected shape {tuple(expected.shape)} = (num_queries, num_keys); got "
                f"{tuple(actual.shape)}")
    if torch.equal(actual, expected):
        return None
    wrong = (actual != expected).nonzero()[0].tolist()
    message = (f"{int((actual != expected).sum())} entries differ; the first at (query row "
               f"{wrong[0]}, key {wrong[1]}): expected {bool(expected[tuple(wrong)])}")
    Lq, Lk = expected.shape
    window = int(expected[-1].sum())  # the last row keeps min(window, its position + 1)
    for change, why in _MISTAKES:
        kw = {k: v for k, v in change.items() if k != "width_delta"}
        width = window + change.get("width_delta", 0)
        if width >= 1 and torch.equal(actual, _band(Lq, Lk, window, width=width, **kw)):
            return f"{message}. It looks as if {why}"
    return message


def _cases():
    return [
        Case("a whole sequence: num_queries = num_keys = 6, window 3", args=(6, 6, 3)),
        Case("window 1: each query sees only itself", args=(5, 5, 1)),
        Case("a window as long as the sequence: the causal mask", args=(5, 5, 5)),
        Case("a window longer than the sequence: still the causal mask", args=(4, 4, 9)),
        Case("decoding: 1 new query after 9 cached keys, window 4", args=(1, 10, 4)),
        Case("3 new queries after 5 cached keys (8 keys), window 4", args=(3, 8, 4)),
        Case("one position, window 2", args=(1, 1, 2)),
    ]


def _variants(rng):
    out = []
    for _ in range(3):
        keys = rng.randint(1, 12)
        queries, window = rng.randint(1, keys), rng.randint(1, 8)
        out.append(variant(f"{queries} queries, {keys} keys, window "
                           f"{window}", (queries, keys, window)))
    return out


register(
    "sliding_window_mask",
    reference=_reference,
    cases=_cases,
    compare=_compare,
    hint=(
        "Give every query and key its absolute position: keys j = 0 .. num_keys - 1, queries "
        "i = num_keys - num_queries .. num_keys - 1 (the last ones). Then the mask is "
        "(j <= i) & (j > i - window), with i as a column (Lq, 1) and j as a row (1, Lk) so "
        "that the comparison broadcasts to (Lq, Lk)."
    ),
    variants=_variants,
    forbidden=[window_mask],
)
