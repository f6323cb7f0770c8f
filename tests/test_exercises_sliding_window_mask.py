"""The chapter 14 exercise check (mha_book/exercises/sliding_window_mask.py) passes a correct function and
fails, naming the mistake, on the slips readers make with a sliding window's mask."""

import torch

from mha_book.exercises import available, check


def solution(num_queries, num_keys, window):
    i = torch.arange(num_keys - num_queries, num_keys)[:, None]  # (Lq, 1)
    j = torch.arange(num_keys)[None, :]  # (1, Lk)
    return (j <= i) & (j > i - window)


def run(fn):
    result = check("sliding_window_mask", fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered_and_solution_passes():
    assert "sliding_window_mask" in available()
    assert run(solution)[0].passed


def test_one_key_too_many_is_named():
    def wide(num_queries, num_keys, window):
        return solution(num_queries, num_keys, window + 1)

    result, text = run(wide)
    assert not result.passed and "window + 1 keys per row" in text


def test_forgetting_itself_is_named():
    def narrow(num_queries, num_keys, window):
        i = torch.arange(num_keys - num_queries, num_keys)[:, None]
        j = torch.arange(num_keys)[None, :]
        return (j <= i) & (j > i - window + 1)

    result, text = run(narrow)
    assert not result.passed and "counts itself" in text


def test_a_band_both_ways_is_named():
    def both_ways(num_queries, num_keys, window):
        i = torch.arange(num_keys - num_queries, num_keys)[:, None]
        j = torch.arange(num_keys)[None, :]
        return (j - i).abs() < window

    result, text = run(both_ways)
    assert not result.passed and "reaches into the future" in text


def test_queries_at_the_top_are_named_only_where_it_matters():
    def top(num_queries, num_keys, window):
        i = torch.arange(num_queries)[:, None]
        j = torch.arange(num_keys)[None, :]
        return (j <= i) & (j > i - window)

    result, text = run(top)
    assert not result.passed and "they are the last ones" in text
    assert len(result.failures) == 2  # only the two cases with num_queries < num_keys


def test_a_float_mask_is_refused_with_the_fix():
    result, text = run(lambda *a: solution(*a).float())
    assert not result.passed and "torch.bool" in text and ".bool()" in text


def test_stub_gets_one_line():
    def stub(num_queries, num_keys, window):
        raise NotImplementedError("your code here")

    assert not run(stub)[0].passed
