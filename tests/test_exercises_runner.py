"""The exercise runner: every way a reader's function can misbehave ends in a short message with
the case, the expected and actual values, the reader's failing line and a hint, never a traceback
from the package; an unsolved stub prints one line; the reader's random state is kept."""

import random
import re
import signal
import sys

import numpy as np
import pytest
import torch

import mha
import mha_book
from mha_book.exercises import Case, check, register


def flat(out):
    """The printed report with its line wrapping (at 78 columns) undone."""
    return " ".join(out.split())


def run(name, fn, capsys, **kwargs):
    result = check(name, fn, **kwargs)
    return result, capsys.readouterr().out


def test_a_stub_that_raises_not_implemented_prints_one_line(capsys):
    def my_softmax(scores):
        raise NotImplementedError("your code here")

    result, out = run("softmax", my_softmax, capsys)
    assert not result.passed and len(out.strip().splitlines()) == 1
    assert "my_softmax raised NotImplementedError: not written yet" in flat(out)
    assert "write it and rerun" in flat(out)
    assert "FAIL" not in flat(out) and "Traceback" not in flat(out)


@pytest.mark.parametrize("body", ["...", "pass", "return ..."])
def test_a_stub_that_returns_nothing_prints_one_line(capsys, body):
    namespace = {}
    exec(f"def my_softmax(scores):\n    {body}\n", namespace)
    result, out = run("softmax", namespace["my_softmax"], capsys)
    assert not result.passed and len(out.strip().splitlines()) == 1
    assert "my_softmax is not solved yet" in flat(out) and "write its body" in flat(out)


def test_an_error_shows_the_readers_line_expected_value_and_hint(capsys):
    def my_split(x, num_heads):
        B, L, D = x.shape
        return x.view(B, num_heads, L, 7)  # the reader's bug

    result, out = run("split_heads", my_split, capsys)
    assert not result.passed
    assert "raised RuntimeError" in flat(out)
    assert re.search(r"at line \d+ of my_split: return x.view\(B, num_heads, L, 7\) # the "
                     r"reader's bug\)", flat(out))
    assert "Hint: Reshape (B, L, D)" in flat(out)
    assert "Traceback" not in flat(out) and "mha/" not in flat(out)


def test_an_error_inside_a_package_call_points_at_the_readers_line(capsys):
    def my_scores(query, key, num_heads):
        q = mha.split_heads(query, num_heads + 1)  # wrong number of heads
        return q

    result, out = run("head_scores", my_scores, capsys)
    assert "raised ValueError: the last dimension of x" in flat(out)
    assert re.search(r"line \d+ of my_scores: q = mha.split_heads\(query, num_heads \+ 1\)", flat(out))
    assert "functional.py" not in flat(out)


@pytest.mark.parametrize("returned, message", [
    (lambda x: x.softmax(-1).numpy(), "got a numpy array of shape (3,); return a torch.Tensor"),
    (lambda x: (x.softmax(-1), 1), "got a tuple of 2 items"),
    (lambda x: x.softmax(-1)[..., :1], "expected shape (3,), got shape (1,)"),
    (lambda x: x.softmax(-1) * float("nan"), "values are NaN"),
    (lambda x: x.softmax(0), "values differ"),
])
def test_wrong_return_values_are_described(capsys, returned, message):
    result, out = run("softmax", returned, capsys)
    assert not result.passed and message in flat(out), out
    assert "expected" in result.failures[0]
    assert "Hint:" in result.failures[0]


def test_an_input_changed_in_place_fails_even_with_a_right_answer(capsys):
    def shifts_in_place(scores):
        scores -= scores.amax(-1, keepdim=True)  # right maths, but edits the caller's tensor
        return scores.exp() / scores.exp().sum(-1, keepdim=True)

    result, out = run("softmax", shifts_in_place, capsys)
    assert not result.passed
    assert "changed its input `scores` in place" in flat(out)


def test_sys_exit_is_reported_not_obeyed(capsys):
    def leaves(scores):
        sys.exit("bye")

    result, out = run("softmax", leaves, capsys)
    assert not result.passed and "called sys.exit()" in flat(out)
    assert re.search(r"line \d+ of leaves: sys.exit\(\"bye\"\)", flat(out))


def test_a_slow_function_shows_signs_of_life_and_is_stopped(capsys, monkeypatch):
    monkeypatch.setattr(mha_book.exercises, "_TICK", 0.5)

    def forever(scores):
        while True:
            scores = scores + 0

    handler = signal.getsignal(signal.SIGALRM)
    result, out = run("softmax", forever, capsys, time_limit=1.2)
    assert not result.passed
    assert "still running" in flat(out)
    assert re.search(r"took longer than 1.2 s and was stopped \(at line \d+ of forever: ", flat(out))
    assert "more case(s) not run after the time limit" in flat(out)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == handler


def test_the_readers_random_state_is_kept():
    def uses_randomness(scores):
        torch.manual_seed(123)
        random.seed(123)
        np.random.seed(123)
        torch.rand(3), random.random(), np.random.rand()
        return scores.softmax(-1)

    torch.manual_seed(7)
    random.seed(7)
    np.random.seed(7)
    expected = (torch.rand(2), random.random(), np.random.rand())
    torch.manual_seed(7)
    random.seed(7)
    np.random.seed(7)
    assert check("softmax", uses_randomness, verbose=False)
    got = (torch.rand(2), random.random(), np.random.rand())
    assert torch.equal(got[0], expected[0]) and got[1:] == expected[1:]


def test_numpy_integers_are_right_answers_and_a_tensor_of_parts_is_explained(capsys):
    def count(d_model, num_heads, bias=False):
        return np.int64(4 * d_model * d_model + (4 * d_model if bias else 0))

    assert check("parameter_count", count, verbose=False)

    def parts(seq_len, d_model, num_heads, num_kv_heads):
        return torch.tensor([2 * seq_len * d_model * d_model, 4 * seq_len * seq_len * d_model])

    result, out = run("flop_count", parts, capsys)
    assert not result.passed and "return a single number" in flat(out)
    assert "Traceback" not in flat(out)


def test_a_custom_compare_that_cannot_read_the_value_is_reported():
    register("pair_check", reference=lambda x: (x, x),
             cases=lambda: [Case("two", args=(torch.ones(2),))],
             compare=lambda e, a: None if torch.equal(a[0], e[0]) else "different")
    result = check("pair_check", lambda x: 3, verbose=False)
    assert not result.passed and "not what the exercise asks for" in result.failures[0]


def test_bad_arguments_to_check_raise_clear_errors():
    with pytest.raises(ValueError, match="name must be the name of a check; got 'sofmax'"):
        check("sofmax", lambda x: x)
    with pytest.raises(TypeError, match="fn must be your function itself"):
        check("softmax", torch.ones(2))
