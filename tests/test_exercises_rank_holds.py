"""The chapter 16 exercise check (mha_book/exercises/rank_holds.py) passes correct answers written
in several styles and fails, with a message that helps, on the usual mistakes."""

import random

import pytest

from mha.distributed import layout
from mha_book.exercises import _REGISTRY, available, check


def loops(rank, world, scheme, num_heads, num_kv_heads, seq_len):
    heads, kv, positions = list(range(num_heads)), list(range(num_kv_heads)), list(
        range(seq_len))
    if scheme in ("tensor", "ulysses"):
        per = num_heads // world
        heads = [h for h in range(num_heads) if h // per == rank]
        group = num_heads // num_kv_heads
        kv = sorted({h // group for h in heads}) if num_kv_heads < world else [
            g for g in range(num_kv_heads) if g // (num_kv_heads // world) == rank]
    elif scheme == "ring":
        per = seq_len // world
        positions = [p for p in positions if p // per == rank]
    else:
        chunk = seq_len // (2 * world)
        positions = [p for p in positions if p // chunk in (rank, 2 * world - 1 - rank)]
    return {"query_heads": heads, "kv_heads": kv, "positions": positions}


def ranges(rank, world, scheme, num_heads, num_kv_heads, seq_len):
    out = {"query_heads": range(num_heads), "kv_heads": range(num_kv_heads),
           "positions": range(seq_len)}
    if scheme in ("tensor", "ulysses"):
        h = num_heads // world
        out["query_heads"] = range(rank * h, rank * h + h)
        if num_kv_heads >= world:
            k = num_kv_heads // world
            out["kv_heads"] = range(rank * k, rank * k + k)
        else:
            first = rank * h // (num_heads // num_kv_heads)
            out["kv_heads"] = range(first, first + 1)
    elif scheme == "ring":
        n = seq_len // world
        out["positions"] = range(rank * n, rank * n + n)
    else:
        c = seq_len // (2 * world)
        out["positions"] = [*range(rank * c, rank * c + c),
                            *range((2 * world - 1 - rank) * c, (2 * world - rank) * c)]
    return out


def contiguous_ring(rank, world, scheme, num_heads, num_kv_heads, seq_len):
    answer = loops(rank, world, scheme, num_heads, num_kv_heads, seq_len)
    if scheme == "zigzag":  # the mistake: zigzag treated as the plain ring
        answer["positions"] = loops(rank, world, "ring", num_heads, num_kv_heads,
                                    seq_len)["positions"]
    return answer


def every_kv_head(rank, world, scheme, num_heads, num_kv_heads, seq_len):
    answer = loops(rank, world, scheme, num_heads, num_kv_heads, seq_len)
    if scheme in ("tensor", "ulysses") and num_kv_heads < world:
        answer["kv_heads"] = []  # the mistake: no key/value head at all past the limit
    return answer


def run(fn):
    result = check("rank_holds", fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "rank_holds" in available()


@pytest.mark.parametrize("fn", [loops, ranges])
def test_passes_correct_answers_in_several_styles(fn):
    result, failures = run(fn)
    assert result.passed, failures


@pytest.mark.parametrize("seed", range(40))
def test_correct_answers_pass_the_course_variants(seed):
    spec = _REGISTRY["rank_holds"]
    for case in spec.variants(random.Random(seed)):
        expected = spec.reference(*case.args)
        for fn in (loops, ranges):
            assert spec.compare(expected, fn(*case.args)) is None, (case.name, fn.__name__)


def test_zigzag_as_a_plain_ring_fails_and_says_which_positions():
    result, failures = run(contiguous_ring)
    assert not result.passed
    assert "positions: expected [2, 3, 12, 13]" in failures


def test_no_copy_past_the_kv_limit_fails_and_says_what_is_missing():
    result, failures = run(every_kv_head)
    assert not result.passed
    assert "kv_heads: expected [1], got [] (missing: [1])" in failures


def test_wrong_kinds_get_a_message():
    _, failures = run(lambda *a: [1, 2])
    assert "expected a dict with the keys query_heads, kv_heads, positions" in failures
    _, failures = run(lambda *a: {"query_heads": [0]})
    assert "the dict has no 'kv_heads', 'positions'" in failures
    _, failures = run(lambda *a: {**layout.rank_holds(*a[:3], num_heads=a[3],
                                                      num_kv_heads=a[4], seq_len=a[5]),
                                  "positions": "all"})
    assert "positions: expected a list of ints, got str" in failures
    _, failures = run(lambda *a: {**layout.rank_holds(*a[:3], num_heads=a[3],
                                                      num_kv_heads=a[4], seq_len=a[5]),
                                  "positions": sorted(layout.rank_holds(
                                      *a[:3], num_heads=a[3], num_kv_heads=a[4],
                                      seq_len=a[5])["positions"], reverse=True)})
    assert "in the wrong order" in failures


def with_numpy(rank, world, scheme, num_heads, num_kv_heads, seq_len):
    import numpy as np

    answer = loops(rank, world, scheme, num_heads, num_kv_heads, seq_len)
    return {key: np.array(value, dtype=np.int64) for key, value in answer.items()}


def test_numpy_arrays_and_numpy_ints_pass():
    result, failures = run(with_numpy)
    assert result.passed, failures
    result, failures = run(lambda *a: {k: [__import__("numpy").int64(x) for x in v]
                                       for k, v in loops(*a).items()})
    assert result.passed, failures
