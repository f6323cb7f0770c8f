"""The induction-score exercise check (mha_book/exercises/induction_score.py): it passes the package's
induction score and a loop written by hand, and fails, with a useful message, on the slips
readers make (the wrong diagonal, counting the first copy)."""

import torch

from mha.head_scores import induction_score
from mha_book.exercises import available, check


def run(fn):
    result = check("induction_score", fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered_and_reference_passes():
    assert "induction_score" in available()
    assert run(induction_score)[0].passed


def test_a_loop_by_hand_passes():
    def by_hand(weights, length):
        B, H = weights.shape[:2]
        total = torch.zeros(H)
        for i in range(length, 2 * length):
            total += weights[:, :, i, i - length + 1].sum(0)
        return total / (B * length)

    assert run(by_hand)[0].passed


def test_the_token_itself_instead_of_the_next_fails():
    def same_token(weights, length):  # w[i, i - T]: the earlier copy of the token itself
        return weights.diagonal(offset=-length, dim1=-2, dim2=-1).mean((0, 2))

    result, text = run(same_token)
    assert not result.passed and "perfect induction head" in text


def test_counting_the_first_copy_fails():
    def whole_diagonal(weights, length):
        return weights.diagonal(offset=-(length - 1), dim1=-2, dim2=-1).mean((0, 2))

    result, text = run(whole_diagonal)
    assert not result.passed and "expected" in text
