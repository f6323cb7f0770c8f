"""Parity with Hugging Face ``transformers``: the layers of Part V against the attention modules
of the models they come from, weights copied, float32, 1e-5.

- ``LatentAttention`` (``q_rank`` None and set, both rope layouts, both ``absorb``):
  ``DeepseekV3Attention`` (no YaRN);
- ``RotaryMultiHeadAttention(window=w, sinks=True)``: ``GptOssAttention`` (a sliding layer);
- ``RotaryMultiHeadAttention(qk_norm=True)``: ``Qwen3Attention``;
- ``RotaryMultiHeadAttention(window=w)``: ``MistralAttention`` (``sliding_window=w``);
- ``RotaryMultiHeadAttention(qk_norm=True, gate=True)``: ``Qwen3NextAttention`` (a full layer);
- ``gated_delta_rule`` (token by token and chunked): ``torch_recurrent_gated_delta_rule`` and
  ``torch_chunk_gated_delta_rule`` of Qwen3.5, and with one decay per key feature
  ``recurrent_kimi_delta_attention`` and ``chunk_kimi_delta_attention`` of Kimi Linear;
- ``GatedDeltaNet``: ``Qwen3_5GatedDeltaNet``; ``KimiDeltaAttention``: ``KimiLinearDeltaAttention``
  (one call, and one token at a time with the returned state against HF's cached decoding).

The Hugging Face modules run as the models run them: ``attn_implementation="eager"``, their own
rotary embedding classes for ``position_embeddings``, and their model-level masks
(``create_causal_mask`` / ``create_sliding_window_causal_mask``), padding included.

transformers is a test-only dependency (``requirements-parity.txt``; ``make unit`` installs it):
never imported by ``mha`` nor by the book. These tests run wherever the unit tests run.

Shape legend: B batch, L length, D d_model (hidden_size), H heads, Hkv key/value heads, Dh d_head.
"""

import pytest
import torch
from torch import nn
from transformers import (
    DeepseekV3Config,
    DynamicCache,
    GptOssConfig,
    KimiLinearConfig,
    MistralConfig,
    Qwen3_5TextConfig,
    Qwen3Config,
    Qwen3NextConfig,
)
from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    DeepseekV3Attention,
    DeepseekV3RotaryEmbedding,
)
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention, GptOssRotaryEmbedding
from transformers.models.kimi_linear.modeling_kimi_linear import (
    KimiLinearDeltaAttention,
    chunk_kimi_delta_attention,
    recurrent_kimi_delta_attention,
)
from transformers.models.mistral.modeling_mistral import MistralAttention, MistralRotaryEmbedding
from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention, Qwen3RotaryEmbedding
from transformers.models.qwen3_5.modeling_qwen3_5 import (
    Qwen3_5GatedDeltaNet,
    torch_chunk_gated_delta_rule,
    torch_recurrent_gated_delta_rule,
)
from transformers.models.qwen3_next.modeling_qwen3_next import (
    Qwen3NextAttention,
    Qwen3NextRotaryEmbedding,
)

import mha

TOL = {"atol": 1e-5, "rtol": 1e-5}
D, H, HKV, DH = 64, 4, 2, 16
ROPE = {"rope_type": "default", "rope_theta": 10000.0}  # plain RoPE: no YaRN, no scaling
COMMON = {"hidden_size": D, "num_attention_heads": H, "num_hidden_layers": 1,
          "attn_implementation": "eager", "rms_norm_eps": 1e-6}


def randomize(module, seed=0):
    """Random weights in every parameter (norm weights around 1), so that nothing is left at an
    initial value that could hide a mistake (a zero bias, a norm weight of 1)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.2 * noise if "norm" in name else 0.1 * noise)
    return module.eval()


def copy_(dst, src):
    with torch.no_grad():
        dst.copy_(src)


def copy_linear(dst, src):
    copy_(dst.weight, src.weight)
    assert (dst.bias is None) == (src.bias is None)
    if dst.bias is not None:
        copy_(dst.bias, src.bias)


def inputs(seed=1, batch=2, length=9):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, D, generator=g)
    positions = torch.arange(length)[None].expand(batch, -1)  # (B, L)
    return x, positions


def hf_run(module, rotary_cls, config, x, positions, *, window=None, lens=None):
    """The HF module's (output, weights), with the masks its model would build: causal (or
    sliding-window causal), and padding keys masked when ``lens`` (B,) is given."""
    padding = None if lens is None else (torch.arange(x.size(1))[None] < lens[:, None]).long()
    make_mask = create_causal_mask if window is None else create_sliding_window_causal_mask
    mask = make_mask(config, x, padding, None, position_ids=positions,
                     allow_is_causal_skip=False)  # (B, 1, L, L) additive, 0 = may attend
    embeddings = rotary_cls(config)(x, positions)  # (cos, sin)
    with torch.no_grad():
        return module(x, embeddings, mask)


def check_both_paths(layer, x, want, want_weights, **kwargs):
    """mha's fused path and weights path against the HF output and weights."""
    with torch.no_grad():
        fused, _ = layer(x, is_causal=True, **kwargs)
        out, weights = layer(x, is_causal=True, need_weights=True, **kwargs)
    torch.testing.assert_close(fused, want, **TOL)
    torch.testing.assert_close(out, want, **TOL)
    torch.testing.assert_close(weights, want_weights, **TOL)


# --- DeepSeek-V3: Multi-head Latent Attention -------------------------------------------------

@pytest.mark.parametrize("q_rank", [None, 24])
@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("bias", [False, True])
def test_latent_attention_matches_deepseek_v3(q_rank, interleaved, bias):
    # rope_interleave=True (DeepSeek's checkpoints) pairs features (2j, 2j + 1) and returns them
    # de-interleaved, [evens | odds]: a permutation applied alike to the query and the key, so the
    # scores equal those of mha.apply_rope(interleaved=True), which keeps the pairs in place
    config = DeepseekV3Config(**COMMON, num_key_value_heads=H, q_lora_rank=q_rank, kv_lora_rank=16,
                              qk_nope_head_dim=8, qk_rope_head_dim=6, v_head_dim=12,
                              rope_parameters=ROPE, rope_interleave=interleaved,
                              attention_bias=bias)
    hf = randomize(DeepseekV3Attention(config, layer_idx=0))
    layer = mha.LatentAttention(D, H, kv_rank=16, qk_nope_dim=8, qk_rope_dim=6, v_head_dim=12,
                                q_rank=q_rank, interleaved=interleaved, bias=bias).eval()
    if q_rank is None:
        copy_linear(layer.W_q, hf.q_proj)
    else:
        copy_linear(layer.W_dq, hf.q_a_proj)
        copy_(layer.q_norm.weight, hf.q_a_layernorm.weight)
        copy_linear(layer.W_uq, hf.q_b_proj)
    copy_linear(layer.W_dkv, hf.kv_a_proj_with_mqa)
    copy_(layer.kv_norm.weight, hf.kv_a_layernorm.weight)
    copy_linear(layer.W_ukv, hf.kv_b_proj)
    copy_linear(layer.W_o, hf.o_proj)
    assert {n for n, _ in layer.named_parameters()} >= {"W_dkv.weight", "W_ukv.weight"}
    x, positions = inputs()
    want, want_weights = hf_run(hf, DeepseekV3RotaryEmbedding, config, x, positions)
    for absorb in (False, True):
        check_both_paths(layer, x, want, want_weights, absorb=absorb)


# --- gpt-oss: attention sinks and a sliding window --------------------------------------------

@pytest.mark.parametrize("window", [1, 3, 20])
def test_sinks_and_window_match_gpt_oss(window):
    # Window convention: Hugging Face's sliding window of w (masking_utils'
    # sliding_window_overlay, kv_idx > q_idx - w, with causal kv_idx <= q_idx) lets query i see
    # i - w < j <= i, w keys counting itself: mha's window=w. openai/gpt-oss's reference code
    # blocks j <= i - w, the same; so do Mistral's (below) and Gemma 3's HF layers. (Earlier
    # transformers releases disagreed between backends, eager w keys and FlashAttention-2 w + 1:
    # huggingface/transformers#29623.) The HF mask is built here by HF itself.
    config = GptOssConfig(**COMMON, num_key_value_heads=HKV, head_dim=DH, sliding_window=window,
                          layer_types=["sliding_attention"], attention_bias=True,
                          rope_parameters={"rope_type": "default", "rope_theta": 150000.0},
                          num_local_experts=2)
    hf = randomize(GptOssAttention(config, layer_idx=0))
    assert hf.sliding_window == window
    with torch.no_grad():
        hf.sinks.mul_(20)  # logits of a few units, so the sinks take a visible share
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, bias=True, base=150000.0,
                                         window=window, sinks=True).eval()
    for name in ("q", "k", "v", "o"):
        copy_linear(getattr(layer, f"W_{name}"), getattr(hf, f"{name}_proj"))
    copy_(layer.sinks, hf.sinks)
    x, positions = inputs()
    lens = torch.tensor([6, 9])  # the first sequence padded after 6 tokens
    want, want_weights = hf_run(hf, GptOssRotaryEmbedding, config, x, positions, window=window,
                                lens=lens)
    check_both_paths(layer, x, want, want_weights, valid_lens=lens)
    assert (want_weights.sum(-1) < 1).all()  # the sinks took some of every row


def test_hf_sliding_window_mask_is_mhas_window():
    """The convention itself: HF's model-level sliding mask == mha.modern.window_mask."""
    from mha.modern import window_mask

    for window in (1, 2, 5, 12):
        config = MistralConfig(**COMMON, num_key_value_heads=HKV, head_dim=DH,
                               sliding_window=window, rope_parameters=ROPE)
        x, positions = inputs(length=12)
        hf = create_sliding_window_causal_mask(config, x, None, None, position_ids=positions,
                                               allow_is_causal_skip=False)  # (B, 1, L, L)
        assert torch.equal(hf[0, 0] == 0, window_mask(12, 12, window)), window
        assert int((hf[0, 0, -1] == 0).sum()) == window  # the last query sees w keys


# --- Qwen 3: QK-norm ----------------------------------------------------------------------------

def test_qk_norm_matches_qwen3():
    config = Qwen3Config(**COMMON, num_key_value_heads=HKV, head_dim=DH, rope_parameters=ROPE)
    hf = randomize(Qwen3Attention(config, layer_idx=0))
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, qk_norm=True).eval()
    for name in ("q", "k", "v", "o"):
        copy_linear(getattr(layer, f"W_{name}"), getattr(hf, f"{name}_proj"))
    copy_(layer.q_norm.weight, hf.q_norm.weight)
    copy_(layer.k_norm.weight, hf.k_norm.weight)
    assert layer.q_norm.eps == hf.q_norm.variance_epsilon == 1e-6
    x, positions = inputs()
    want, want_weights = hf_run(hf, Qwen3RotaryEmbedding, config, x, positions)
    check_both_paths(layer, x, want, want_weights)


# --- Mistral: the sliding window ----------------------------------------------------------------

@pytest.mark.parametrize("window", [2, 4])
def test_window_matches_mistral(window):
    config = MistralConfig(**COMMON, num_key_value_heads=HKV, head_dim=DH, sliding_window=window,
                           rope_parameters=ROPE)
    hf = randomize(MistralAttention(config, layer_idx=0))
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, window=window).eval()
    for name in ("q", "k", "v", "o"):
        copy_linear(getattr(layer, f"W_{name}"), getattr(hf, f"{name}_proj"))
    x, positions = inputs()
    want, want_weights = hf_run(hf, MistralRotaryEmbedding, config, x, positions, window=window)
    check_both_paths(layer, x, want, want_weights)
    # and decoding one token at a time with a cache of the last `window` positions
    cache, outs = mha.KVCache(window=window), []
    with torch.no_grad():
        for t in range(x.size(1)):
            outs.append(layer(x[:, t:t + 1], cache=cache)[0])
    torch.testing.assert_close(torch.cat(outs, dim=1), want, **TOL)
    assert cache.keys.size(-2) == window and cache.seq_len == x.size(1)


# --- Qwen3-Next: the output gate (with QK-norm) ---------------------------------------------------

def test_gate_matches_qwen3_next():
    # Qwen3-Next packs each head's query and gate rows together in q_proj: (H, [query | gate], Dh)
    # rows; its RMSNorm scales by (1 + weight), mha's (nn.RMSNorm) by weight.
    config = Qwen3NextConfig(**COMMON, num_key_value_heads=HKV, head_dim=DH,
                             rope_parameters={**ROPE, "partial_rotary_factor": 1.0},
                             layer_types=["full_attention"])
    hf = randomize(Qwen3NextAttention(config, layer_idx=0))
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, qk_norm=True, gate=True).eval()
    rows = hf.q_proj.weight.view(H, 2, DH, D)  # (H, query|gate, Dh, D)
    copy_(layer.W_q.weight, rows[:, 0].reshape(H * DH, D))
    copy_(layer.W_g.weight, rows[:, 1].reshape(H * DH, D))
    for name in ("k", "v", "o"):
        copy_linear(getattr(layer, f"W_{name}"), getattr(hf, f"{name}_proj"))
    copy_(layer.q_norm.weight, 1 + hf.q_norm.weight)
    copy_(layer.k_norm.weight, 1 + hf.k_norm.weight)
    x, positions = inputs()
    want, want_weights = hf_run(hf, Qwen3NextRotaryEmbedding, config, x, positions)
    check_both_paths(layer, x, want, want_weights)


# --- Qwen3.5 and Kimi Linear: the gated delta rule and its layers ----------------------------

def delta_inputs(*, Hk=2, Hv=4, L=37, Dk=16, Dv=8, channel=False, seed=3):
    """query, key (B, Hk, L, Dk) of unit norm (as the layers make them), value (B, Hv, L, Dv),
    decay <= 0 (B, Hv, L) or (B, Hv, L, Dk), beta in [0, 1] (B, Hv, L), a state (B, Hv, Dk, Dv).
    """
    g = torch.Generator().manual_seed(seed)
    q, k = (nn.functional.normalize(torch.randn(2, Hk, L, Dk, generator=g), dim=-1)
            for _ in range(2))
    v = torch.randn(2, Hv, L, Dv, generator=g)
    decay = -torch.rand((2, Hv, L, Dk) if channel else (2, Hv, L), generator=g)
    beta = torch.rand(2, Hv, L, generator=g)
    state = torch.randn(2, Hv, Dk, Dv, generator=g)
    return q, k, v, decay, beta, state


def hf_layout(*tensors):
    """(B, H, L, ...) -> (B, L, H, ...), the layout of the HF functions."""
    return [x.transpose(1, 2) for x in tensors]


@pytest.mark.parametrize("chunk_size", [None, 8, 64])
def test_gated_delta_rule_matches_qwen3_5(chunk_size):
    q, k, v, decay, beta, state = delta_inputs()
    out, S = mha.gated_delta_rule(q, k, v, decay, beta, state=state, chunk_size=chunk_size)
    args = hf_layout(q, k, v, decay, beta)
    for want, want_S in (
            torch_recurrent_gated_delta_rule(*args, initial_state=state,
                                             output_final_state=True),
            torch_chunk_gated_delta_rule(*args, chunk_size=16, initial_state=state,
                                         output_final_state=True)):
        torch.testing.assert_close(out, want.transpose(1, 2), **TOL)
        torch.testing.assert_close(S, want_S, **TOL)


@pytest.mark.parametrize("chunk_size", [None, 8, 64])
def test_channel_wise_decay_matches_kimi_delta_attention(chunk_size):
    # Kimi's functions take as many query/key heads as value heads
    q, k, v, decay, beta, state = delta_inputs(Hk=4, channel=True)
    out, S = mha.gated_delta_rule(q, k, v, decay, beta, state=state, chunk_size=chunk_size)
    args = hf_layout(q, k, v, decay, beta)
    for want, want_S in (
            recurrent_kimi_delta_attention(*args, initial_state=state, output_final_state=True),
            chunk_kimi_delta_attention(*args, chunk_size=16, initial_state=state,
                                       output_final_state=True)):
        torch.testing.assert_close(out, want.transpose(1, 2), **TOL)
        torch.testing.assert_close(S, want_S, **TOL)


def decode_matches(layer, hf, config, x):
    """mha's layer against the HF module: one call, and a prefix of 5 tokens then one token at
    a time (mha's state fed back; HF's cache), both against HF's one call."""
    with torch.no_grad():
        want = hf(x)
        out, _ = layer(x)
        torch.testing.assert_close(out, want, **TOL)
        cache = DynamicCache(config=config)
        hf_steps = [hf(x[:, :5], cache=cache)]
        out, state = layer(x[:, :5])
        steps = [out]
        for t in range(5, x.size(1)):
            hf_steps.append(hf(x[:, t:t + 1], cache=cache))
            out, state = layer(x[:, t:t + 1], state=state)
            steps.append(out)
    torch.testing.assert_close(torch.cat(steps, dim=1), want, **TOL)
    torch.testing.assert_close(torch.cat(steps, dim=1), torch.cat(hf_steps, dim=1), **TOL)
    return state


def test_gated_deltanet_matches_qwen3_5():
    config = Qwen3_5TextConfig(hidden_size=D, num_hidden_layers=1, rms_norm_eps=1e-6,
                               linear_num_key_heads=2, linear_num_value_heads=4,
                               linear_key_head_dim=16, linear_value_head_dim=16,
                               linear_conv_kernel_dim=4, layer_types=["linear_attention"])
    hf = randomize(Qwen3_5GatedDeltaNet(config, layer_idx=0))
    layer = mha.GatedDeltaNet(D, 2, d_head_k=16, d_head_v=16, num_value_heads=4,
                              conv_size=4, eps=1e-6).eval()
    for ours, theirs in (("W_qkv", "in_proj_qkv"), ("W_z", "in_proj_z"), ("W_b", "in_proj_b"),
                         ("W_a", "in_proj_a"), ("W_o", "out_proj"), ("conv", "conv1d")):
        copy_(getattr(layer, ours).weight, getattr(hf, theirs).weight)
    copy_(layer.A_log, hf.A_log)
    copy_(layer.dt_bias, hf.dt_bias)
    copy_(layer.norm_weight, hf.norm.weight)
    x, _ = inputs(length=21)
    state = decode_matches(layer, hf, config, x)
    assert state.matrix.shape == (2, 4, 16, 16) and state.conv.shape == (2, 128, 3)


def test_kimi_delta_attention_matches_kimi_linear():
    config = KimiLinearConfig(hidden_size=D, num_hidden_layers=1, rms_norm_eps=1e-5,
                              linear_attn_config={"head_dim": 16, "num_heads": 4,
                                                  "short_conv_kernel_size": 4},
                              layer_types=["linear_attention"])
    hf = randomize(KimiLinearDeltaAttention(config, layer_idx=0))
    layer = mha.KimiDeltaAttention(D, 4, 16, conv_size=4, eps=1e-5).eval()
    gate = hf.forget_gate
    for ours, theirs in (("W_q", hf.q_proj), ("W_k", hf.k_proj), ("W_v", hf.v_proj),
                         ("W_f_down", gate.f_a_proj), ("W_f_up", gate.f_b_proj),
                         ("W_b", hf.b_proj), ("W_g_down", hf.g_a_proj),
                         ("W_g_up", hf.g_b_proj), ("W_o", hf.o_proj), ("conv", hf.conv1d)):
        copy_(getattr(layer, ours).weight, theirs.weight)
    copy_(layer.A_log, gate.A_log.view(-1))  # HF's (1, 1, H, 1)
    copy_(layer.dt_bias, gate.dt_bias)
    copy_(layer.norm_weight, hf.o_norm.weight)
    x, _ = inputs(length=21)
    state = decode_matches(layer, hf, config, x)
    assert state.matrix.shape == (2, 4, 16, 16) and state.conv.shape == (2, 192, 3)


def test_parity_modules_are_not_in_mha():
    """transformers stays a test-only dependency: importing mha (this very package) does not
    import it, and the layers' norms are torch's own nn.RMSNorm, not a transformers class."""
    import subprocess
    import sys

    code = ("import sys, mha, mha.latent, mha.modern, mha.gated_deltanet; "
            "print('transformers' in sys.modules, mha.__file__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    imported, path = result.stdout.split()
    assert imported == "False" and path == mha.__file__
    rotary = mha.RotaryMultiHeadAttention(8, 2, qk_norm=True)
    latent = mha.LatentAttention(8, 2, kv_rank=4, qk_nope_dim=2, qk_rope_dim=2, v_head_dim=2,
                                 q_rank=4)
    for norm in (rotary.q_norm, rotary.k_norm, latent.q_norm, latent.kv_norm):
        assert type(norm) is nn.RMSNorm, type(norm)
        assert type(norm).__module__.startswith("torch."), type(norm).__module__
