"""The configurations of chapters 14 and 15 (mha/configs.py): interleaved local/global layers,
the latent cache and the hybrid models (a linear-attention state of fixed size plus the full
layers' cache), against hand counts from the published numbers and, for the hybrids, against
the configurations and caches of ``transformers`` (skipped where it is not installed)."""

import pytest
import torch

import mha
from mha.configs import (
    DEEPSEEK_V3,
    HYBRIDS,
    INTERLEAVED,
    MODELS,
    HybridConfig,
    kv_cache_bytes,
    latent_cache_bytes,
    linear_state_bytes,
)


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


# ----------------------------------------------------------------------------- hybrid models
# (chapter 15: linear-attention layers with a fixed state, one layer in four full attention)

KIMI_FULL = [4, 8, 12, 16, 20, 24, 27]  # the checkpoint's linear_attn_config, counted from 1
#: per model, the transformers class and what the checkpoint's config.json sets that differs from
#: the class's defaults (mha.configs.HYBRIDS's ``where`` says which numbers come from where)
CHECKPOINTS = {
    "Qwen3-Next-80B-A3B": ("Qwen3NextConfig", {"max_position_embeddings": 262144}),
    "Qwen3.5-27B": ("Qwen3_5TextConfig", {"hidden_size": 5120, "num_hidden_layers": 64,
                                          "num_attention_heads": 24,
                                          "linear_num_value_heads": 48,
                                          "max_position_embeddings": 262144}),
    "Kimi-Linear-48B-A3B": ("KimiLinearConfig", {"linear_attn_config": {
        "full_attn_layers": KIMI_FULL,
        "kda_layers": [i for i in range(1, 28) if i not in KIMI_FULL]}}),
    "OLMo-Hybrid-7B": ("OlmoHybridConfig", {}),
}


def _shape_of(hf, kimi):
    """The fields of a HybridConfig that a transformers configuration gives."""
    shape = {"layer_types": tuple("full" if t == "full_attention" else "linear"
                                  for t in hf.layer_types),
             "num_heads": hf.num_attention_heads, "context": hf.max_position_embeddings,
             "conv_size": hf.linear_conv_kernel_dim}
    if kimi:  # KDA: as many key as value heads, one head size; MLA full layers
        shape.update(linear_num_key_heads=hf.linear_num_heads,
                     linear_num_value_heads=hf.linear_num_heads,
                     linear_d_head_k=hf.linear_head_dim, linear_d_head_v=hf.linear_head_dim,
                     kv_rank=hf.kv_lora_rank, qk_rope_dim=hf.qk_rope_head_dim)
    else:  # the full layers' head size as the models' attention modules read it
        d_head = getattr(hf, "head_dim", None) or hf.hidden_size // hf.num_attention_heads
        shape.update(linear_num_key_heads=hf.linear_num_key_heads,
                     linear_num_value_heads=hf.linear_num_value_heads,
                     linear_d_head_k=hf.linear_key_head_dim,
                     linear_d_head_v=hf.linear_value_head_dim,
                     num_kv_heads=hf.num_key_value_heads, d_head=d_head)
    return shape


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_hybrids_are_the_transformers_configurations(name):
    transformers = pytest.importorskip(
        "transformers", reason="transformers (requirements-parity.txt) is the reference")
    cls, checkpoint = CHECKPOINTS[name]
    hf = getattr(transformers, cls)(**checkpoint)
    c = HYBRIDS[name]
    want = _shape_of(hf, kimi=cls == "KimiLinearConfig")
    assert {k: getattr(c, k) for k in want} == want
    assert c.num_layers == hf.num_hidden_layers


def test_what_the_checkpoints_change_in_the_transformers_defaults():
    """The class defaults are the checkpoints' shapes but for: Qwen3-Next's context (32,768 by
    default), Qwen3.5's size (its defaults, despite the docstring's Qwen/Qwen3.5-27B, are a
    32-layer, 16-head model) and Kimi Linear's layer pattern (6 full layers by default, the
    checkpoint 7: its last layer too)."""
    transformers = pytest.importorskip(
        "transformers", reason="transformers (requirements-parity.txt) is the reference")
    assert transformers.Qwen3NextConfig().max_position_embeddings == 32768
    qwen35 = transformers.Qwen3_5TextConfig()
    assert (qwen35.num_hidden_layers, qwen35.num_attention_heads,
            qwen35.linear_num_value_heads) == (32, 16, 32)
    kimi = transformers.KimiLinearConfig()
    assert [i for i, t in enumerate(kimi.layer_types) if t == "full_attention"] == [
        4, 8, 12, 16, 20, 24]
    assert [i + 1 for i, t in enumerate(HYBRIDS["Kimi-Linear-48B-A3B"].layer_types)
            if t == "full"] == KIMI_FULL


def test_the_state_and_cache_are_what_a_transformers_model_keeps():
    """A small Qwen3-Next (3 Gated DeltaNet layers, 1 full) run in bfloat16 on 7 tokens with a
    cache: its recurrent states are (B, Hv, Dk, Dv) in float32 (``torch_chunk_gated_delta_rule``
    returns them so and ``LinearAttentionLayer`` keeps them so), its convolution states
    (B, 2 Hk Dk + Hv Dv, taps) and its full layer's keys and values (B, Hkv, L, Dh) in bfloat16:
    HybridConfig's bytes, at its defaults (4 bytes a state number, 2 for the rest), are their
    ``nbytes``. But for one tap: transformers keeps the last 4 inputs of a convolution of 4
    taps, of which the next token needs 3 (the 4th is pushed out before it is used); the book
    counts 3, as serving engines keep conv_size - 1."""
    transformers = pytest.importorskip(
        "transformers", reason="transformers (requirements-parity.txt) is the reference")
    hf = transformers.Qwen3NextConfig(
        vocab_size=32, hidden_size=32, intermediate_size=16, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=6,
        moe_intermediate_size=8, shared_expert_intermediate_size=8, num_experts=2,
        num_experts_per_tok=1)
    torch.manual_seed(0)
    model = transformers.Qwen3NextModel(hf).eval().to(torch.bfloat16)
    with torch.no_grad():
        cache = model(torch.randint(0, 32, (1, 7)), use_cache=True).past_key_values
    c = HybridConfig("tiny", **_shape_of(hf, kimi=False), linear_kind="Gated DeltaNet",
                     source="", where="")
    recurrent = conv = kept = full = 0
    for layer, kind in zip(cache.layers, c.layer_types):
        if kind == "linear":
            S, x = layer.recurrent_states[0], layer.conv_states[0]
            assert S.shape == (1, 4, 8, 6) and x.shape == (1, c.conv_channels, 4)
            assert (S.dtype, x.dtype) == (torch.float32, torch.bfloat16)
            recurrent += S.nbytes
            conv += x[..., 1:].nbytes  # the last conv_size - 1 inputs
            kept += x.nbytes  # what transformers holds: 4 taps
        else:
            assert layer.keys.dtype == layer.values.dtype == torch.bfloat16
            full += layer.keys.nbytes + layer.values.nbytes
    assert c.state_bytes() == recurrent + conv
    assert c.full_cache_bytes(7) == full
    assert c.cache_bytes(7) == recurrent + conv + full
    assert kept == conv * 4 // 3  # transformers' 4th tap: a third more convolution


def test_the_state_is_constant_in_the_context_and_the_cache_grows():
    for c in HYBRIDS.values():
        state = c.state_bytes()
        assert state > 0 and c.cache_bytes(0) == state
        for n in (1, 4096, 100_000, 1 << 20):
            assert c.cache_bytes(n) - c.full_cache_bytes(n) == state
            assert c.full_cache_bytes(2 * n) == 2 * c.full_cache_bytes(n) > 0
            assert c.all_full_bytes(n) * c.num_full == c.full_cache_bytes(n) * c.num_layers
        assert c.num_linear + c.num_full == c.num_layers
        # the cache and the convolution at 4 bytes, the state's matrices at 8: twice as much
        assert c.cache_bytes(10, batch_size=3, bytes_per_value=4,
                             state_bytes_per_value=8) == 6 * c.cache_bytes(10)
        # the state's matrices are float32 by default, the cache and convolution bfloat16
        assert c.state_bytes(state_bytes_per_value=2) < state < c.state_bytes(bytes_per_value=4)
        assert c.full_cache_bytes(10, state_bytes_per_value=2) == c.full_cache_bytes(10)
        assert c.all_full_bytes(10, state_bytes_per_value=2) == c.all_full_bytes(10)


def test_qwen3_next_by_hand():
    c = HYBRIDS["Qwen3-Next-80B-A3B"]
    assert (c.num_linear, c.num_full, c.full_attention) == (36, 12, "GQA")
    assert c.layer_types[:4] == ("linear", "linear", "linear", "full")
    conv = 2 * 16 * 128 + 32 * 128  # the queries', keys' and values' features
    assert c.conv_channels == conv == 8192
    # 32 value heads of 128 x 128 in float32, 3 conv inputs in bfloat16
    per_layer = 32 * 128 * 128 * 4 + conv * 3 * 2
    assert per_layer == 2_097_152 + 49_152
    assert c.state_bytes() == 36 * per_layer == 77_266_944  # 73.69 MiB
    assert c.state_bytes() / 2**20 == 73.6875
    # in bfloat16 throughout (a serving engine's setting): half the matrices
    assert c.state_bytes(state_bytes_per_value=2) == 36 * (32 * 128 * 128 + conv * 3) * 2
    assert c.full_cache_bytes(1) == 2 * 12 * 2 * 256 * 2 == 24 * 1024  # 24 KiB a token
    assert c.cache_bytes(262144) == 6 * 2**30 + 77_266_944
    assert c.all_full_bytes(262144) == 24 * 2**30  # four times the full layers
    assert c.state_bytes() == 3144 * c.full_cache_bytes(1)  # the cache outgrows it there


def test_qwen3_5_by_hand():
    c = HYBRIDS["Qwen3.5-27B"]
    assert (c.num_linear, c.num_full, c.full_attention) == (48, 16, "GQA")
    conv = 2 * 16 * 128 + 48 * 128
    assert c.conv_channels == conv == 10_240
    per_layer = 48 * 128 * 128 * 4 + conv * 3 * 2  # 3_145_728 + 61_440
    assert c.state_bytes() == 48 * per_layer == 153_944_064
    assert c.state_bytes() / 2**20 == 146.8125
    assert c.full_cache_bytes(1) == 2 * 16 * 4 * 256 * 2 == 64 * 1024  # 64 KiB a token


def test_kimi_linear_by_hand():
    """MLA full layers: one latent of 512 and one rotary key of 64 per token and layer."""
    c = HYBRIDS["Kimi-Linear-48B-A3B"]
    assert (c.num_linear, c.num_full, c.full_attention) == (20, 7, "MLA")
    assert c.full_cache_bytes(1) == latent_cache_bytes(7, 512, 64) == 7 * 576 * 2
    assert c.conv_channels == 3 * 32 * 128
    assert c.state_bytes() == 20 * (32 * 128 * 128 * 4 + 3 * 32 * 128 * 3 * 2)
    assert c.all_full_bytes(1000) == latent_cache_bytes(27, 512, 64, 1000)


def test_olmo_hybrids_full_layers_are_multi_head():
    c = HYBRIDS["OLMo-Hybrid-7B"]
    assert (c.full_attention, c.num_kv_heads, c.d_head) == ("MHA", 30, 128)
    assert (c.linear_d_head_k, c.linear_d_head_v) == (96, 192)
    assert c.full_cache_bytes(5) == kv_cache_bytes(8, 30, 128, 5)


def test_linear_state_bytes_is_a_states_nbytes():
    """(B, Hv, Dk, Dv) in float32, per layer, plus the convolution's inputs in bfloat16."""
    S = torch.zeros(3, 4, 8, 6, dtype=torch.float32)
    assert linear_state_bytes(1, 4, 8, 6, batch_size=3) == S.nbytes
    x = torch.zeros(3, 56, 3, dtype=torch.bfloat16)  # 56 channels, the last 3 inputs
    assert linear_state_bytes(1, 4, 8, 6, conv_channels=56, batch_size=3) == S.nbytes + x.nbytes
    assert linear_state_bytes(1, 4, 8, 6, batch_size=3, state_bytes_per_value=2) == (
        S.bfloat16().nbytes)
    assert linear_state_bytes(5, 4, 8, 6, conv_channels=56, conv_size=4, batch_size=3,
                              bytes_per_value=4) == 5 * 3 * (4 * 8 * 6 + 56 * 3) * 4
    assert linear_state_bytes(5, 4, 8, 6, conv_channels=56, batch_size=3, bytes_per_value=1,
                              state_bytes_per_value=2) == 5 * 3 * (4 * 8 * 6 * 2 + 56 * 3)
    assert linear_state_bytes(1, 1, 1, 1, conv_channels=9, conv_size=1) == 4  # no inputs kept


@pytest.mark.parametrize("name, value", [("num_layers", 0), ("num_value_heads", -1),
                                         ("d_head_k", 1.5), ("d_head_v", True),
                                         ("conv_channels", -2), ("conv_size", 0),
                                         ("batch_size", 0), ("bytes_per_value", "2"),
                                         ("state_bytes_per_value", 0),
                                         ("state_bytes_per_value", 4.0)])
def test_linear_state_bytes_bad_arguments_name_themselves(name, value):
    args = {"num_layers": 2, "num_value_heads": 4, "d_head_k": 8, "d_head_v": 8}
    kwargs = {"conv_channels": 12, "conv_size": 4, "batch_size": 1, "bytes_per_value": 2,
              "state_bytes_per_value": 4}
    (args if name in args else kwargs)[name] = value
    with pytest.raises((ValueError, TypeError), match=name):
        linear_state_bytes(*args.values(), **kwargs)


@pytest.mark.parametrize("method", ["state_bytes", "full_cache_bytes", "cache_bytes",
                                    "all_full_bytes"])
def test_hybrid_state_bytes_per_value_is_checked(method):
    f = getattr(HYBRIDS["Qwen3-Next-80B-A3B"], method)
    args = () if method == "state_bytes" else (10,)
    with pytest.raises((ValueError, TypeError), match="state_bytes_per_value"):
        f(*args, state_bytes_per_value=0)


def _hybrid(**changes):
    fields = dict(name="test", layer_types=("linear", "full"), num_heads=4,
                  linear_kind="Gated DeltaNet", linear_num_key_heads=2,
                  linear_num_value_heads=4, linear_d_head_k=8, linear_d_head_v=8, context=64,
                  source="", where="", num_kv_heads=2, d_head=8)
    fields.update(changes)
    return HybridConfig(**fields)


@pytest.mark.parametrize("changes, match", [
    ({"layer_types": ("linear", "global")}, "layer_types"),
    ({"layer_types": ()}, "layer_types"),
    ({"kv_rank": 16, "qk_rope_dim": 4}, "num_kv_heads and d_head.*or kv_rank"),
    ({"num_kv_heads": None, "d_head": None}, "num_kv_heads and d_head.*or kv_rank"),
    ({"d_head": None}, "num_kv_heads and d_head"),
    ({"num_kv_heads": 0}, "num_kv_heads"),
    ({"linear_d_head_v": 0}, "linear_d_head_v"),
    ({"conv_size": 0}, "conv_size"),
])
def test_hybrid_config_bad_arguments_name_themselves(changes, match):
    with pytest.raises(ValueError, match=match):
        _hybrid(**changes)


def test_hybrid_cache_bytes_bad_seq_len():
    with pytest.raises(ValueError, match="seq_len"):
        _hybrid().cache_bytes(-1)
    with pytest.raises(ValueError, match="seq_len"):
        _hybrid(kv_rank=8, qk_rope_dim=4, num_kv_heads=None, d_head=None).cache_bytes(-1)
