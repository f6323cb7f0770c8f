"""The check of chapter 08's entropy (mha_book/exercises/attention_entropy.py) passes the
package's own function and fails, with a message that helps, on the mistakes readers make."""

import math

import torch

import mha_book
from mha_book.exercises import available, check


def run(name, fn):
    result = check(name, fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "attention_entropy" in available()


def test_reference_entropy_values():
    uniform = torch.full((2, 3, 4, 9), 1 / 9)
    assert torch.allclose(mha_book.tasks.attention_entropy(uniform), torch.full((3,), math.log(9)))
    one_hot = torch.eye(5)[None, None]  # (1, 1, 5, 5)
    assert mha_book.tasks.attention_entropy(one_hot).item() == 0.0
    padded = torch.zeros(1, 1, 3, 4)
    padded[0, 0, 0] = 0.25  # one uniform row, two all-zero rows (left out)
    assert math.isclose(mha_book.tasks.attention_entropy(padded).item(), math.log(4), rel_tol=1e-6)


def test_entropy_check_passes_reference_and_xlogy_solution():
    assert check("attention_entropy", mha_book.tasks.attention_entropy, verbose=False).passed

    def solution(weights):
        entropy = -torch.special.xlogy(weights, weights).sum(-1)  # (B, H, Lq)
        live = weights.sum(-1) > 0  # (B, H, Lq)
        return (entropy * live).sum((0, 2)) / live.sum((0, 2))

    assert check("attention_entropy", solution, verbose=False).passed


def test_entropy_check_fails_naive_log_with_nan_message():
    result, text = run("attention_entropy",
                       lambda w: -(w * w.log()).sum(-1).mean((0, 2)))  # 0 * log 0 = NaN
    assert not result.passed
    assert "one-hot" in text  # names the case
    assert "xlogy" in text  # the hint


def test_entropy_check_fails_when_zero_rows_are_averaged_in():
    result, text = run("attention_entropy",
                       lambda w: -torch.special.xlogy(w, w).sum(-1).mean((0, 2)))
    assert not result.passed
    assert len(result.failures) == 1 and "padding" in text


def test_entropy_check_fails_on_wrong_axis():
    result, _text = run("attention_entropy",  # averaged over the heads instead of the queries
                       lambda w: -torch.special.xlogy(w, w).sum(-1).mean((0, 1)))
    assert not result.passed
