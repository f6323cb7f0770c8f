"""The chapter 12 exercise check (mha_book/exercises/apply_rope.py) passes correct rotary embeddings
and fails, with a message that helps, on the usual mistakes."""

import torch

import mha
from mha_book.exercises import available, check


def my_rope(x, positions, interleaved=False):
    Dh = x.size(-1)
    theta = 10000.0 ** (-2 * torch.arange(Dh // 2, dtype=torch.float32) / Dh)
    angle = positions.float()[:, None] * theta  # (L, Dh/2)
    if interleaved:
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], Dh // 2, 2).contiguous())
        return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).flatten(-2)
    a, b = x[..., : Dh // 2], x[..., Dh // 2:]
    cos, sin = angle.cos(), angle.sin()
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def run(fn):
    result = check("apply_rope", fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "apply_rope" in available()


def test_passes_a_correct_function_and_the_package_itself():
    assert check("apply_rope", my_rope, verbose=False).passed
    assert check("apply_rope", lambda x, p, interleaved=False: mha.apply_rope(
        x, p, interleaved=interleaved), verbose=False).passed


def test_fails_when_the_convention_is_ignored_and_says_so():
    result, text = run(lambda x, p, interleaved=False: my_rope(x, p, interleaved=False))
    assert not result.passed
    assert "case 'interleaved: batch 2, 5 tokens, d_head 8'" in text
    assert "OTHER pair convention" in text


def test_fails_with_the_wrong_frequencies():
    def wrong(x, positions, interleaved=False):  # theta_j = 10000 ** (-j / Dh): a common slip
        Dh = x.size(-1)
        theta = 10000.0 ** (-torch.arange(Dh // 2) / Dh)
        angle = positions.float()[:, None] * theta
        a, b = x[..., : Dh // 2], x[..., Dh // 2:]
        return torch.cat([a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()],
                         -1)

    result, text = run(wrong)
    assert not result.passed
    assert "values differ" in text and "Hint: theta_j = 10000 ** (-2j / Dh)" in text


def test_reports_a_crash_and_unwritten_code():
    result, text = run(lambda x, p, interleaved=False: x.view(-1, 3))
    assert not result.passed and "raised RuntimeError" in text
    def unwritten(x, positions, interleaved=False):
        raise NotImplementedError

    result, text = run(unwritten)
    assert not result.passed and "not written yet" in text
