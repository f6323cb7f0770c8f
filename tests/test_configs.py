"""The configurations of chapter 14 (mha/configs.py): interleaved local/global layers and the
latent cache, against hand counts from the published numbers."""

import pytest
import torch

import mha
from mha.configs import DEEPSEEK_V3, INTERLEAVED, MODELS, kv_cache_bytes, latent_cache_bytes


def test_gemma_3_has_a_global_layer_after_every_five_local_ones():
    windows = INTERLEAVED["Gemma 3 27B"].layer_windows()
    assert len(windows) == 62
    assert [i for i, w in enumerate(windows) if w is None] == [5, 11, 17, 23, 29, 35, 41, 47,
                                                               53, 59]
    assert set(w for w in windows if w is not None) == {1024}


def test_gpt_oss_alternates_starting_local():
    windows = INTERLEAVED["gpt-oss-120b"].layer_windows()
    assert windows[:4] == [128, None, 128, None] and len(windows) == 36


def test_cache_bytes_counts_local_layers_up_to_their_window():
    m = INTERLEAVED["gpt-oss-120b"]
    # 18 global layers keep every position, 18 local ones at most 128
    for n in (1, 128, 129, 5000):
        assert m.cache_bytes(n) == (kv_cache_bytes(18, 8, 64, n)
                                    + kv_cache_bytes(18, 8, 64, min(n, 128)))
    assert m.cache_bytes(0) == 0


def test_models_without_global_every_are_unchanged():
    mistral = MODELS["Mistral 7B"]
    assert mistral.layer_windows() == [4096] * 32
    assert mistral.cache_bytes(10_000) == kv_cache_bytes(32, 8, 128, 4096)
    llama = MODELS["Llama 2 7B"]
    assert llama.cache_bytes(4096) == kv_cache_bytes(32, 32, 128, 4096)


def test_latent_cache_of_deepseek_v3():
    c = DEEPSEEK_V3
    assert latent_cache_bytes(c.num_layers, c.kv_rank, c.qk_rope_dim) == 61 * 576 * 2
    assert latent_cache_bytes(61, 512, 64, 10, batch_size=3, bytes_per_value=4) == (
        61 * 576 * 10 * 3 * 4)


def test_latent_cache_bytes_equals_the_layers_cache():
    layer = mha.LatentAttention(32, 4, kv_rank=12, qk_nope_dim=8, qk_rope_dim=4,
                                v_head_dim=8).eval()
    cache = mha.KVCache()
    with torch.no_grad():
        layer(torch.randn(2, 7, 32), cache=cache)
    assert cache.nbytes == latent_cache_bytes(1, 12, 4, 7, batch_size=2, bytes_per_value=4)


@pytest.mark.parametrize("name, value", [("kv_rank", 0), ("qk_rope_dim", -1),
                                         ("num_layers", 1.5), ("batch_size", True)])
def test_latent_cache_bytes_bad_arguments_name_themselves(name, value):
    args = {"num_layers": 2, "kv_rank": 8, "qk_rope_dim": 4, "batch_size": 1}
    args[name] = value
    with pytest.raises((ValueError, TypeError), match=name):
        latent_cache_bytes(args.pop("num_layers"), args.pop("kv_rank"),
                           args.pop("qk_rope_dim"), 3, **args)


def test_latent_cache_bytes_bad_seq_len():
    with pytest.raises(ValueError, match="seq_len"):
        latent_cache_bytes(1, 8, 4, -1)
