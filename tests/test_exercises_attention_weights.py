"""The check of chapter 01's exercise (mha_book/exercises/attention_weights.py) accepts the
package's answers and rejects plausible wrong ones with a message that says what is wrong."""

import torch

import mha
from mha_book.exercises import available, check


def failures_of(name, fn):
    result = check(name, fn, verbose=False)
    assert not result.passed, f"check {name!r} accepted a wrong implementation"
    assert result.failures, "a failed check must say which cases failed"
    return "\n".join(result.failures)


def test_registered():
    assert "attention_weights" in available()


def good_weights(query, keys, temperature=1.0):
    return torch.softmax(keys @ query / temperature, dim=-1)


def test_attention_weights_accepts_correct_answers():
    assert check("attention_weights", good_weights, verbose=False).passed
    reference = lambda q, k, temperature=1.0: mha.scaled_dot_product_attention(
        q[None], k, k, scale=1 / temperature)[1][0]
    assert check("attention_weights", reference, verbose=False).passed


def test_attention_weights_rejects_a_naive_exp_that_overflows():
    def naive(query, keys, temperature=1.0):
        exps = torch.exp(keys @ query / temperature)
        return exps / exps.sum()

    result = check("attention_weights", naive, verbose=False)
    assert not result.passed
    assert len(result.failures) == 1, result.failures  # only the overflow case fails
    assert "very large scores" in result.failures[0]
    assert "subtract the largest score" in result.failures[0]


def test_attention_weights_rejects_ignoring_the_temperature_and_unnormalised_weights():
    message = failures_of("attention_weights", lambda q, k, temperature=1.0: good_weights(q, k))
    assert "temperature 0.25" in message and "differ" in message
    message = failures_of("attention_weights", lambda q, k, temperature=1.0: (k @ q).exp())
    assert "must sum to 1" in message


def test_attention_weights_reports_a_wrong_shape():
    message = failures_of("attention_weights",
                          lambda q, k, temperature=1.0: good_weights(q, k, temperature)[None])
    assert "expected shape (9,), got shape (1, 9)" in message
