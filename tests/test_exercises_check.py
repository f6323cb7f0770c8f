import math

import torch

import mha_book
from mha_book.exercises import Case, check, register


def good_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    return weights @ value, weights


def test_registered_core_checks():
    assert {"softmax", "scaled_dot_product_attention"} <= set(mha_book.exercises.available())


def test_correct_function_passes(capsys):
    result = check("scaled_dot_product_attention", good_attention)
    assert result.passed and bool(result) and result.failures == []
    assert "All 7 cases passed." in capsys.readouterr().out
    assert check("softmax", lambda x: (x - x.amax(-1, keepdim=True)).exp()
                 / (x - x.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True))


def test_wrong_function_fails_naming_case_expected_actual_and_hint(capsys):
    def unscaled(query, key, value, mask=None):  # forgets the 1/sqrt(Dk)
        w = (query @ key.transpose(-2, -1)).softmax(-1)
        return w @ value, w

    result = check("scaled_dot_product_attention", unscaled)
    out = capsys.readouterr().out
    assert not result.passed and not bool(result)
    assert "FAIL self-attention, batch (2, 5, 8)" in out
    assert "expected" in out and "got" in out and "Hint: scores = query @ key" in out
    assert "first at index" in result.failures[0] and "Hint:" in result.failures[0]


def test_wrong_shape_is_reported():
    result = check("scaled_dot_product_attention", lambda q, k, v, mask=None: (q, None),
                   verbose=False)
    assert "expected shape (1, 2), got shape (1, 4)" in result.failures[0]


def test_crashing_and_unwritten_functions_are_reported_not_raised(capsys):
    def crashes(x):
        raise IndexError("oops")

    def unwritten(x):
        raise NotImplementedError("your code here")

    assert not check("softmax", crashes)
    assert "raised IndexError: oops" in capsys.readouterr().out
    result = check("softmax", unwritten)
    assert "NotImplementedError: not written yet" in result.failures[0]


def test_register_with_custom_compare_and_tolerance():
    register("double", reference=lambda x: 2 * x,
             cases=lambda: [Case("ones", args=(torch.ones(3),))], atol=0.2, rtol=0)
    assert check("double", lambda x: 2.1 * x, verbose=False)
    assert not check("double", lambda x: 2.5 * x, verbose=False)
    register("is_sorted", reference=sorted, cases=lambda: [Case("three", args=([3, 1, 2],))],
             compare=lambda e, a: None if list(a) == e else f"expected {e}, got {a}")
    result = check("is_sorted", lambda xs: xs, verbose=False)
    assert result.failures == ["case 'three': expected [1, 2, 3], got [3, 1, 2]."]


def test_inputs_are_copied_so_inplace_edits_do_not_leak():
    def inplace(x):
        return x.mul_(0).add_(torch.softmax(x, -1))

    assert not check("softmax", inplace, verbose=False)  # wrong, but the reference still ran
    result = check("softmax", lambda x: torch.softmax(x.clone(), -1), verbose=False)
    assert result.passed
