"""The chapter 15 exercise check (mha_book/exercises/delta_rule_step.py) passes correct steps of
the delta rule, written in several styles, and fails, with a message that helps, on the usual
mistakes."""

import math

import torch

import mha
from mha_book.exercises import available, check


def einsum_step(state, query, key, value, beta, decay):
    if decay is not None:
        state = state * torch.exp(decay)[..., None, None]
    predicted = torch.einsum("bhkv,bhk->bhv", state, key)
    state = state + torch.einsum("bh,bhk,bhv->bhkv", beta, key, value - predicted)
    return torch.einsum("bhkv,bhk->bhv", state, query) / math.sqrt(query.size(-1)), state


def matmul_step(state, query, key, value, beta, decay):
    alpha = 1.0 if decay is None else decay.exp()[..., None, None]
    state = alpha * state
    error = value - (key[..., None, :] @ state).squeeze(-2)  # (B, H, Dv)
    state = state + beta[..., None, None] * (key[..., :, None] @ error[..., None, :])
    scale = query.size(-1) ** -0.5
    return (scale * query[..., None, :] @ state).squeeze(-2), state


def run(fn):
    result = check("delta_rule_step", fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "delta_rule_step" in available()


def test_passes_correct_steps_and_the_package_itself():
    assert check("delta_rule_step", einsum_step, verbose=False).passed
    assert check("delta_rule_step", matmul_step, verbose=False).passed
    assert check("delta_rule_step", lambda s, q, k, v, b, d: mha.delta_rule_step(
        s, q, k, v, b, d), verbose=False).passed


def test_fails_when_the_write_ignores_what_is_stored():
    def linear(state, query, key, value, beta, decay):  # S += beta k v^T: no delta
        if decay is not None:
            state = state * decay.exp()[..., None, None]
        state = state + beta[..., None, None] * key[..., :, None] * value[..., None, :]
        return (state * query[..., :, None]).sum(-2) / math.sqrt(query.size(-1)), state

    result, text = run(linear)
    assert not result.passed and "differ" in text
    assert "Hint:" in text and "v - S^T k" in text


def test_fails_when_reading_before_the_write_or_swapping_axes():
    def read_first(state, query, key, value, beta, decay):
        out, new = einsum_step(state, query, key, value, beta, decay)
        if decay is not None:
            state = state * decay.exp()[..., None, None]
        return (state * query[..., :, None]).sum(-2) / math.sqrt(query.size(-1)), new

    assert not run(read_first)[0].passed

    def transposed(state, query, key, value, beta, decay):
        return einsum_step(state.transpose(-1, -2), query, key, value, beta, decay)

    result, text = run(transposed)
    assert not result.passed and ("raised" in text or "shape" in text)


def test_reports_unwritten_code():
    def unwritten(*args):
        raise NotImplementedError

    result, text = run(unwritten)
    assert not result.passed and "not written yet" in text
