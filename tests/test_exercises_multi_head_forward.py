"""The check of chapter 04's forward pass (mha_book/exercises/multi_head_forward.py) passes
the package's own layer and fails, with a message that helps, on the mistakes readers make."""

import math

import pytest
import torch

import mha
from mha_book.exercises import available, check


def run(name, fn):
    result = check(name, fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "multi_head_forward" in available()


def reader_forward(query, key, value, W_q, W_k, W_v, W_o, num_heads, *, scale_by_d_model=False,
                   transpose=True, use_w_o=True):
    B, Lq, D = query.shape
    Dh = D // num_heads

    def split(x):
        if not transpose:  # the classic mistake
            return x.reshape(B, num_heads, x.size(1), Dh)
        return x.view(B, x.size(1), num_heads, Dh).transpose(1, 2)  # (B, L, D) -> (B, H, L, Dh)

    q, k, v = split(query @ W_q.T), split(key @ W_k.T), split(value @ W_v.T)
    scale = math.sqrt(D if scale_by_d_model else Dh)
    weights = (q @ k.transpose(-2, -1) / scale).softmax(dim=-1)  # (B, H, Lq, Lk)
    heads = (weights @ v).transpose(1, 2).reshape(B, Lq, D)  # (B, H, Lq, Dh) -> (B, Lq, D)
    return heads @ W_o.T if use_w_o else heads


def test_multi_head_forward_passes_correct_reader_code():
    assert check("multi_head_forward", reader_forward, verbose=False).passed


def test_multi_head_forward_passes_the_loop_module():
    def with_loop(query, key, value, W_q, W_k, W_v, W_o, num_heads):
        layer = mha.MultiHeadAttention(W_q.size(1), num_heads)
        with torch.no_grad():
            for name, w in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
                getattr(layer, name).weight.copy_(w)
            return layer(query, key, value, need_weights=True)[0]

    assert check("multi_head_forward", with_loop, verbose=False).passed


@pytest.mark.parametrize("mistake", [{"scale_by_d_model": True}, {"transpose": False},
                                     {"use_w_o": False}])
def test_multi_head_forward_fails_on_mistakes(mistake):
    result, text = run("multi_head_forward",
                       lambda *args: reader_forward(*args, **mistake))
    assert not result.passed
    assert "values differ" in text
    assert "1/sqrt(d_head)" in text  # the hint


def test_multi_head_forward_reports_crashes():
    result, text = run("multi_head_forward", lambda *a: a[0].view(-1, 3, 7))
    assert not result.passed and "raised RuntimeError" in text
