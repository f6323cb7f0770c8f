"""The Part II exercise checks (mha_book/exercises/part2.py) pass the package's own functions and
fail, with a message that helps, on the mistakes readers really make."""

import math

import pytest
import torch

import mha
from mha_book.exercises import available, check


def run(name, fn):
    result = check(name, fn, verbose=False)
    return result, "\n".join(result.failures)


def test_part2_checks_are_registered():
    for name in ("parameter_count", "multi_head_forward", "split_heads", "merge_heads",
                 "head_scores"):
        assert name in available()


# --- parameter_count ------------------------------------------------------------------------


def test_parameter_count_passes_formula():
    def formula(d_model, num_heads, bias=False):
        return 4 * d_model * d_model + (4 * d_model if bias else 0)

    assert check("parameter_count", formula, verbose=False).passed


def test_parameter_count_reference_values():
    from mha_book.exercises.part2 import _parameter_count

    assert _parameter_count(768, 12) == 2_359_296
    assert _parameter_count(12288, 96) == 603_979_776


def test_parameter_count_fails_when_w_o_forgotten():
    result, text = run("parameter_count", lambda d_model, num_heads, bias=False: 3 * d_model**2)
    assert not result.passed
    assert "expected 1,048,576 parameters, got 786,432" in text
    assert "W_o is" in text  # the hint


def test_parameter_count_fails_when_divided_by_heads():
    result, text = run("parameter_count",
                       lambda d_model, num_heads, bias=False: 4 * d_model**2 // num_heads)
    assert not result.passed
    assert "expected 2,359,296 parameters, got 196,608" in text


def test_parameter_count_fails_when_bias_ignored():
    result, text = run("parameter_count", lambda d_model, num_heads, bias=False: 4 * d_model**2)
    assert not result.passed and len(result.failures) == 1
    assert "with biases" in text and "expected 2,362,368 parameters, got 2,359,296" in text


def test_parameter_count_rejects_non_numbers():
    result, text = run("parameter_count", lambda d_model, num_heads, bias=False: "a lot")
    assert not result.passed and "expected a number" in text


# --- multi_head_forward ---------------------------------------------------------------------


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


# --- split_heads / merge_heads --------------------------------------------------------------


def my_split(x, num_heads):
    B, L, D = x.shape
    x = x.reshape(B, L, num_heads, D // num_heads)  # (B, L, D) -> (B, L, H, Dh)
    return x.transpose(1, 2)  # (B, L, H, Dh) -> (B, H, L, Dh)


def my_merge(x):
    B, H, L, Dh = x.shape
    return x.transpose(1, 2).reshape(B, L, H * Dh)  # (B, H, L, Dh) -> (B, L, H, Dh) -> (B, L, D)


def test_split_and_merge_pass_reference():
    assert check("split_heads", mha.split_heads, verbose=False).passed
    assert check("split_heads", my_split, verbose=False).passed
    assert check("merge_heads", mha.merge_heads, verbose=False).passed
    assert check("merge_heads", my_merge, verbose=False).passed


def test_split_without_transpose_fails_with_diagnosis():
    def no_transpose(x, num_heads):
        B, L, D = x.shape
        return x.reshape(B, num_heads, L, D // num_heads)  # wrong: no transpose

    result, text = run("split_heads", no_transpose)
    assert not result.passed
    assert "1 x 9 x 512 sequential numbers" in text
    assert "values differ" in text
    assert "reshaping (B, L, D) straight to (B, H, L, Dh)" in text
    assert "then transpose the L and H axes" in text  # the hint


def test_split_with_wrong_order_fails():
    def heads_last(x, num_heads):
        B, L, D = x.shape
        # wrong: (B, L, Dh, H), i.e. head h gets every H-th column
        return x.reshape(B, L, D // num_heads, num_heads).permute(0, 3, 1, 2)

    result, text = run("split_heads", heads_last)
    assert not result.passed and "values differ" in text


def test_split_wrong_shape_reported():
    result, text = run("split_heads", lambda x, num_heads: x.reshape(x.size(0), x.size(1),
                                                                     num_heads, -1))
    assert not result.passed and "expected shape (1, 8, 9, 64), got shape (1, 9, 8, 64)" in text


def test_merge_without_transpose_fails_with_diagnosis():
    def no_transpose(x):
        B, H, L, Dh = x.shape
        return x.reshape(B, L, H * Dh)

    result, text = run("merge_heads", no_transpose)
    assert not result.passed
    assert "glues the rows of one head together" in text


def test_merge_with_view_fails_on_non_contiguous_input():
    def with_view(x):
        B, H, L, Dh = x.shape
        return x.transpose(1, 2).view(B, L, H * Dh)

    result, text = run("merge_heads", with_view)
    assert not result.passed
    assert "raised RuntimeError" in text and "use .reshape" in text


# --- head_scores ----------------------------------------------------------------------------


def test_head_scores_passes_reference():
    def scores(query, key, num_heads):
        q, k = my_split(query, num_heads), my_split(key, num_heads)
        return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))

    assert check("head_scores", scores, verbose=False).passed


def test_head_scores_fails_on_d_model_scale_with_diagnosis():
    def scores(query, key, num_heads):
        q, k = my_split(query, num_heads), my_split(key, num_heads)
        return q @ k.transpose(-2, -1) / math.sqrt(query.size(-1))

    result, text = run("head_scores", scores)
    assert not result.passed
    assert "divided by sqrt(8) = sqrt(num_heads)" in text
    # the one-head case is the one where both scales agree
    assert all("one head" not in failure for failure in result.failures)


def test_head_scores_fails_on_full_dot_product():
    def one_big_head(query, key, num_heads):
        scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (B, Lq, Lk)
        return scores.unsqueeze(1).expand(-1, num_heads, -1, -1)

    result, text = run("head_scores", one_big_head)
    assert not result.passed and "values differ" in text
