"""The chapter 11 exercise check (mha_book/exercises/kv_cache_bytes.py) passes a correct function and
fails, naming the case and with a hint, on the mistakes readers make."""

from mha_book.exercises import available, check


def solution(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch_size, bytes_per_value):
    d_head = d_model // num_heads
    return 2 * num_layers * num_kv_heads * d_head * seq_len * batch_size * bytes_per_value


def run(fn):
    result = check("kv_cache_bytes", fn, verbose=False)
    return result, "\n".join(result.failures)


def test_registered_and_solution_passes():
    assert "kv_cache_bytes" in available()
    assert run(solution)[0].passed


def test_query_heads_instead_of_kv_heads_fails_on_gqa_and_mqa():
    def wrong(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch_size, bpv):
        return solution(num_layers, num_heads, num_heads, d_model, seq_len, batch_size, bpv)

    result, text = run(wrong)
    assert not result.passed
    assert "Llama 2 70B" in text and "Falcon-7B" in text and "num_kv_heads" in text
    assert "Llama 2 7B (MHA)" not in text  # right where the two are equal


def test_forgetting_the_values_fails():
    def keys_only(*args):
        return solution(*args) // 2

    result, text = run(keys_only)
    assert not result.passed and "factor 2" in text


def test_ignoring_the_batch_fails_only_on_the_batch_case():
    def no_batch(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch_size, bpv):
        return solution(num_layers, num_heads, num_kv_heads, d_model, seq_len, 1, bpv)

    result, text = run(no_batch)
    assert not result.passed and len(result.failures) == 2  # batch of 8; 8-bit case has B = 2
    assert "a batch of 8" in text
