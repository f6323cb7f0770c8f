"""The check of chapter 03's head (mha_book/exercises/attention_head.py) accepts the package's
answers and rejects plausible wrong ones with a message that says what is wrong."""

import math

import torch

import mha
from mha_book.exercises import available, check


def failures_of(name, fn):
    result = check(name, fn, verbose=False)
    assert not result.passed, f"check {name!r} accepted a wrong implementation"
    assert result.failures, "a failed check must say which cases failed"
    return "\n".join(result.failures)


def test_registered():
    assert "attention_head" in available()


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
