"""The checks of chapter 05 (mha_book/exercises/split_heads.py, merge_heads.py) pass the
package's own functions and fail, with a message that helps, on the mistakes readers make."""

import mha
from mha_book.exercises import available, check


def run(name, fn):
    result = check(name, fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "split_heads" in available()
    assert "merge_heads" in available()


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
