"""The check of chapter 06's per-head scores (mha_book/exercises/head_scores.py) passes the
package's answer and fails, with a message that helps, on the mistakes readers make."""

import math

from mha_book.exercises import available, check


def run(name, fn):
    result = check(name, fn, verbose=False)
    return result, "\n".join(result.failures)


def my_split(x, num_heads):
    B, L, D = x.shape
    x = x.reshape(B, L, num_heads, D // num_heads)  # (B, L, D) -> (B, L, H, Dh)
    return x.transpose(1, 2)  # (B, L, H, Dh) -> (B, H, L, Dh)


def test_registered():
    assert "head_scores" in available()


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
