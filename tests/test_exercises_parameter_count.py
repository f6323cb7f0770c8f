"""The check of chapter 04's parameter count (mha_book/exercises/parameter_count.py) passes
the package's own answer and fails, with a message that helps, on the mistakes readers make."""

from mha_book.exercises import available, check


def run(name, fn):
    result = check(name, fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered():
    assert "parameter_count" in available()


def test_parameter_count_passes_formula():
    def formula(d_model, num_heads, bias=False):
        return 4 * d_model * d_model + (4 * d_model if bias else 0)

    assert check("parameter_count", formula, verbose=False).passed


def test_parameter_count_reference_values():
    from mha_book.exercises.parameter_count import _parameter_count

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
