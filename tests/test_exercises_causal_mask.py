"""The check of chapter 02's causal mask (mha_book/exercises/causal_mask.py) accepts the
package's answers and rejects plausible wrong ones with a message that says what is wrong."""

import pytest
import torch

import mha
from mha_book.exercises import available, check


def failures_of(name, fn):
    result = check(name, fn, verbose=False)
    assert not result.passed, f"check {name!r} accepted a wrong implementation"
    assert result.failures, "a failed check must say which cases failed"
    return "\n".join(result.failures)


def test_registered():
    assert "causal_mask" in available()


def test_causal_mask_accepts_the_package_and_a_comparison():
    assert check("causal_mask", mha.causal_mask, verbose=False).passed
    by_comparison = lambda lq, lk: torch.arange(lk)[None, :] <= torch.arange(lq)[:, None]
    assert check("causal_mask", by_comparison, verbose=False).passed


@pytest.mark.parametrize("wrong, expected_text", [
    (lambda lq, lk: torch.ones(lq, lk, dtype=torch.bool).triu(), "see the future"),
    (lambda lq, lk: ~torch.ones(lq, lk, dtype=torch.bool).tril(), "exact opposite"),
    (lambda lq, lk: torch.ones(lq, lk).tril(), "expected a bool tensor"),
    (lambda lq, lk: torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq), "query 0, key"),
], ids=["upper-triangle", "inverted-convention", "float", "bottom-right-aligned"])
def test_causal_mask_rejects_wrong_masks(wrong, expected_text):
    assert expected_text in failures_of("causal_mask", wrong)
