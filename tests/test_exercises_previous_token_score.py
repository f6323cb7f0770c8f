"""The check of chapter 08's previous-token score (mha_book/exercises/previous_token_score.py)
passes a reader's solution."""

import torch

from mha_book.exercises import available, check


def run(name, fn):
    result = check(name, fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "previous_token_score" in available()


def test_previous_token_score_check():
    def solution(weights):
        return torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1).mean((0, 2))  # (B, H, L-1)

    assert check("previous_token_score", solution, verbose=False).passed
    # a plausible mistake: the diagonal above (next token) instead of below
    result, text = run("previous_token_score",
                       lambda w: torch.diagonal(w, offset=1, dim1=-2, dim2=-1).mean((0, 2)))
    assert not result.passed
    assert "perfect previous-token head" in text
