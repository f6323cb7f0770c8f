"""The Part I exercise checks (chapters 01-03) accept the package's answers and reject plausible
wrong ones with a message that says what is wrong."""

import math

import pytest
import torch

import mha
import mha_book
from mha_book.exercises import check

PART1_CHECKS = ["attention_weights", "masked_softmax", "causal_mask", "attention_head"]


def failures_of(name, fn):
    result = check(name, fn, verbose=False)
    assert not result.passed, f"check {name!r} accepted a wrong implementation"
    assert result.failures, "a failed check must say which cases failed"
    return "\n".join(result.failures)


def test_part1_checks_are_registered():
    missing = set(PART1_CHECKS) - set(mha_book.exercises.available())
    assert not missing, f"checks not registered: {sorted(missing)}"


# --- chapter 01 -------------------------------------------------------------------------------


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


# --- chapter 02 -------------------------------------------------------------------------------


def _mask_from_lens(scores, valid_lens):
    B, Lq, Lk = scores.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Lq)
    return torch.arange(Lk) < valid_lens[..., None]  # (B, Lq, Lk)


def d2l_masked_softmax(scores, valid_lens):
    """d2l's version: fill with -1e6, so a row of valid length 0 becomes uniform."""
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    return torch.softmax(scores.masked_fill(~_mask_from_lens(scores, valid_lens), -1e6), dim=-1)


def inf_masked_softmax(scores, valid_lens):
    """fill with -inf: a row of valid length 0 becomes NaN."""
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    allowed = _mask_from_lens(scores, valid_lens)
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)


def test_masked_softmax_accepts_the_package_and_a_careful_version():
    assert check("masked_softmax", mha.masked_softmax, verbose=False).passed

    def careful(scores, valid_lens):
        weights = inf_masked_softmax(scores, valid_lens)
        return torch.nan_to_num(weights, nan=0.0)

    assert check("masked_softmax", careful, verbose=False).passed


def test_masked_softmax_rejects_d2l_fill_value_with_a_useful_message():
    message = failures_of("masked_softmax", d2l_masked_softmax)
    assert "valid length of 0" in message
    assert "attends uniformly to the padding" in message


def test_masked_softmax_rejects_nan_rows():
    message = failures_of("masked_softmax", inf_masked_softmax)
    assert "NaN" in message and "valid length of 0" in message


def test_masked_softmax_rejects_repeat_instead_of_per_query_lengths():
    def flattened_wrongly(scores, valid_lens):
        # treats (B, Lq) lengths as if they were (B,): uses only each sequence's first length
        if valid_lens is not None and valid_lens.dim() == 2:
            valid_lens = valid_lens[:, 0]
        return mha.masked_softmax(scores, valid_lens)

    message = failures_of("masked_softmax", flattened_wrongly)
    assert "one length per query" in message


def test_masked_softmax_reports_weight_on_masked_keys():
    def off_by_one(scores, valid_lens):
        if valid_lens is None:
            return torch.softmax(scores, dim=-1)
        return mha.masked_softmax(scores, (valid_lens + 1).clamp(max=scores.size(-1)))

    message = failures_of("masked_softmax", off_by_one)
    assert "index >= its valid length got a nonzero weight" in message


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


# --- chapter 03 -------------------------------------------------------------------------------


def _project(x, W_q, W_k, W_v):
    query = x @ W_q
    key = query if W_k is None else x @ W_k
    value = x if W_v is None else x @ W_v
    return query, key, value


def test_attention_head_accepts_the_package_head():
    def via_package(x, W_q, W_k=None, W_v=None):
        variant = "shared" if W_k is None else ("qk" if W_v is None else "qkv")
        head = mha.AttentionHead(x.size(-1), W_q.size(1), variant=variant)
        with torch.no_grad():
            if variant == "shared":
                head.W.weight.copy_(W_q.T)
            else:
                head.W_q.weight.copy_(W_q.T)
                head.W_k.weight.copy_(W_k.T)
            if variant == "qkv":
                if W_v.size(1) != W_q.size(1):  # the package's head has Dv = Dh
                    q, k, v = _project(x, W_q, W_k, W_v)
                    return mha.scaled_dot_product_attention(q, k, v)
                head.W_v.weight.copy_(W_v.T)
            return head(x)

    assert check("attention_head", via_package, verbose=False).passed


def test_attention_head_rejects_a_missing_scale():
    def unscaled(x, W_q, W_k=None, W_v=None):
        q, k, v = _project(x, W_q, W_k, W_v)
        weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return weights @ v, weights

    message = failures_of("attention_head", unscaled)
    assert "a wide head (Dh = 64)" in message
    assert "your scores are 8 times the expected ones" in message


def test_attention_head_rejects_scaling_by_d_model():
    def by_d_model(x, W_q, W_k=None, W_v=None):
        q, k, v = _project(x, W_q, W_k, W_v)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(x.size(-1)), dim=-1)
        return weights @ v, weights

    assert "check the scale" in failures_of("attention_head", by_d_model)


def test_attention_head_rejects_softmax_over_the_wrong_axis():
    def wrong_axis(x, W_q, W_k=None, W_v=None):
        q, k, v = _project(x, W_q, W_k, W_v)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-2)
        return weights @ v, weights

    assert "take the softmax over the last axis" in failures_of("attention_head", wrong_axis)


def test_attention_head_rejects_ignoring_the_shared_case_and_a_missing_pair():
    def always_separate(x, W_q, W_k=None, W_v=None):
        W_k = torch.zeros_like(W_q) if W_k is None else W_k  # forgets that W_k=None shares W_q
        q, k, v = _project(x, W_q, W_k, W_v)
        return mha.scaled_dot_product_attention(q, k, v)

    message = failures_of("attention_head", always_separate)
    assert "attempt 1: one shared W" in message and "weights:" in message
    message = failures_of("attention_head", lambda x, W_q, W_k=None, W_v=None: x @ W_q)
    assert "expected a pair (output, weights)" in message


def test_a_crashing_function_is_reported_not_raised():
    result = check("attention_head", lambda *args: 1 / 0, verbose=False)
    assert not result.passed and "ZeroDivisionError" in result.failures[0]
