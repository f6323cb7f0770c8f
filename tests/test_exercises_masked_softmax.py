"""The check of chapter 02's masked softmax (mha_book/exercises/masked_softmax.py) accepts the
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
    assert "masked_softmax" in available()


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
