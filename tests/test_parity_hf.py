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


# --- Positions as 2026's models use them: partial rotation, longer contexts, NoPE ---------------
#
# - ``RotaryMultiHeadAttention(qk_norm=True, gate=True, rope_dim=R)``: ``Qwen3NextAttention``
#   with ``partial_rotary_factor`` R / Dh (and with YaRN on top);
# - ``mha.rope_scaling.rope_frequencies``: ``ROPE_INIT_FUNCTIONS["yarn" | "llama3" | "linear"]``
#   on the configurations of released models, and ``RotaryMultiHeadAttention(scaling=yarn)``:
#   ``Qwen3Attention`` with YaRN ``rope_parameters``, at positions past the original context;
# - ``RotaryMultiHeadAttention(rope_dim=0, temperature_tuning=...)``: a NoPE layer of Llama 4
#   (``Llama4TextAttention``, ``attn_temperature_tuning``), and its RoPE layer
#   (``interleaved=True``, ``qk_norm``, ``scaling=llama3``);
# - Gemma 3's two bases (``rope_local_base_freq`` for sliding layers, ``rope_theta`` with linear
#   scaling for global ones): one ``RotaryMultiHeadAttention(base=...)`` per layer type against
#   ``Gemma3RotaryEmbedding``'s cos and sin.


def copy_projections(layer, hf, names=("q", "k", "v", "o")):
    for name in names:
        copy_linear(getattr(layer, f"W_{name}"), getattr(hf, f"{name}_proj"))


def decode_one_by_one(layer, x):
    """mha's layer, one token at a time with a KVCache: (B, L, D)."""
    cache, outs = mha.KVCache(), []
    with torch.no_grad():
        for t in range(x.size(1)):
            outs.append(layer(x[:, t:t + 1], is_causal=True, cache=cache)[0])
    return torch.cat(outs, dim=1)


QWEN3_NEXT_YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4}


@pytest.mark.parametrize("partial", [0.25, 0.5])
@pytest.mark.parametrize("scaling", [None, QWEN3_NEXT_YARN])
def test_partial_rotation_matches_qwen3_next(partial, scaling):
    # What differs between Qwen3NextAttention and mha's layer, all in how the weights are laid
    # out, none in the function: (1) q_proj packs each head's query and gate rows together,
    # (H, [query | gate], Dh) rows, where mha has W_q and W_g; (2) its RMSNorm gains are
    # zero-centred, the norm scales by (1 + weight), nn.RMSNorm by weight; (3) with
    # partial_rotary_factor = R / Dh it rotates the first R features of each head, rotate-half
    # pairs (j, j + R/2) within them, frequencies base ** (-2j / R) (its rotary embedding uses
    # dim = int(head_dim * partial_rotary_factor)), and passes the other Dh - R through:
    # mha's rope_dim=R. With YaRN, cos and sin (R/2 frequencies, duplicated) carry the
    # attention factor, so only the rotated features are scaled by it, never the others.
    rope_dim = int(DH * partial)
    params = {**ROPE, "partial_rotary_factor": partial, **(scaling or {})}
    config = Qwen3NextConfig(**COMMON, num_key_value_heads=HKV, head_dim=DH,
                             rope_parameters=params, layer_types=["full_attention"],
                             max_position_embeddings=16)  # 4 x the original 4 with YaRN
    hf = randomize(Qwen3NextAttention(config, layer_idx=0))
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, qk_norm=True, gate=True,
                                         rope_dim=rope_dim, scaling=scaling).eval()
    rows = hf.q_proj.weight.view(H, 2, DH, D)  # (H, query|gate, Dh, D)
    copy_(layer.W_q.weight, rows[:, 0].reshape(H * DH, D))
    copy_(layer.W_g.weight, rows[:, 1].reshape(H * DH, D))
    copy_projections(layer, hf, ("k", "v", "o"))
    copy_(layer.q_norm.weight, 1 + hf.q_norm.weight)
    copy_(layer.k_norm.weight, 1 + hf.k_norm.weight)
    cos, _ = Qwen3NextRotaryEmbedding(config)(*inputs())
    assert cos.size(-1) == rope_dim  # HF rotates rope_dim features too
    x, positions = inputs()
    want, want_weights = hf_run(hf, Qwen3NextRotaryEmbedding, config, x, positions)
    check_both_paths(layer, x, want, want_weights)
    torch.testing.assert_close(decode_one_by_one(layer, x), want, **TOL)


def hf_frequencies(rope_type, head_dim, base, params, *, partial=1.0, max_positions=131072):
    """HF's (inv_freq, attention_factor) for these rope_parameters."""
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    rope = {"rope_type": rope_type, "rope_theta": base, **params}
    if partial != 1.0:
        rope["partial_rotary_factor"] = partial
    config = LlamaConfig(hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim,
                         num_hidden_layers=1, max_position_embeddings=max_positions,
                         rope_parameters=rope)
    return ROPE_INIT_FUNCTIONS[rope_type](config)


FREQUENCY_CASES = {  # name: (rope_type, head_dim, base, params, partial_rotary_factor)
    "gpt-oss yarn": ("yarn", 64, 150000.0, {"factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                            "original_max_position_embeddings": 4096,
                                            "truncate": False}, 1.0),
    "DeepSeek-V3 yarn (mscale 1/1)": ("yarn", 64, 10000.0, {
        "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32,
        "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),
    "mscale 0.707/1": ("yarn", 64, 10000.0, {"factor": 40.0, "mscale": 0.707,
                                             "mscale_all_dim": 1.0,
                                             "original_max_position_embeddings": 4096}, 1.0),
    "Qwen3 yarn": ("yarn", 128, 1e6, {"factor": 4.0,
                                      "original_max_position_embeddings": 32768}, 1.0),
    "explicit attention_factor": ("yarn", 64, 10000.0, {
        "factor": 8.0, "attention_factor": 1.5, "original_max_position_embeddings": 4096}, 1.0),
    "narrow betas": ("yarn", 32, 500.0, {"factor": 16.0, "beta_fast": 4.0, "beta_slow": 2.0,
                                         "original_max_position_embeddings": 256}, 1.0),
    "Qwen3-Next yarn, 64 of 256 rotated": ("yarn", 256, 1e7, {
        "factor": 4.0, "original_max_position_embeddings": 262144}, 0.25),
    "Llama 3.1": ("llama3", 128, 500000.0, {"factor": 8.0, "low_freq_factor": 1.0,
                                            "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 8192}, 1.0),
    "Llama 3.2 1B": ("llama3", 64, 500000.0, {"factor": 32.0, "low_freq_factor": 1.0,
                                              "high_freq_factor": 4.0,
                                              "original_max_position_embeddings": 8192}, 1.0),
    "Llama 4 Scout": ("llama3", 128, 500000.0, {"factor": 16.0, "low_freq_factor": 1.0,
                                                "high_freq_factor": 1.0,  # a step
                                                "original_max_position_embeddings": 8192}, 1.0),
    "llama3, half rotated": ("llama3", 64, 10000.0, {"factor": 8.0, "low_freq_factor": 2.0,
                                                     "high_freq_factor": 8.0,
                                                     "original_max_position_embeddings": 512},
                             0.5),
    "Gemma 3 global linear": ("linear", 256, 1e6, {"factor": 8.0}, 1.0),
}


@pytest.mark.parametrize("case", sorted(FREQUENCY_CASES))
def test_rope_frequencies_match_hf_rope_init_functions(case):
    from mha.rope_scaling import rope_frequencies

    rope_type, head_dim, base, params, partial = FREQUENCY_CASES[case]
    longer = int(params["factor"] * params.get("original_max_position_embeddings", 8192))
    want, want_factor = hf_frequencies(rope_type, head_dim, base, params, partial=partial,
                                       max_positions=longer)
    got, factor = rope_frequencies(int(head_dim * partial), base=base,
                                   scaling={"rope_type": rope_type, **params})
    assert got.dtype == want.dtype == torch.float32 and got.shape == want.shape
    torch.testing.assert_close(got, want, atol=0, rtol=1e-6)
    assert factor == pytest.approx(want_factor, rel=1e-12, abs=1e-12)
    if rope_type != "linear":  # the scaled frequencies are not those of plain RoPE
        plain, _ = rope_frequencies(int(head_dim * partial), base=base)
        assert (got < plain * (1 - 1e-3)).any() and (got == plain).any()


YARN_LAYER_CASES = {  # name: (base, scaling); the test runs 40 positions, 16 trained
    "default betas": (10000.0, {"rope_type": "yarn", "factor": 4.0,
                                "original_max_position_embeddings": 16}),
    "a ramp over pairs 0 to 4": (100.0, {"rope_type": "yarn", "factor": 4.0, "beta_fast": 2.0,
                                         "beta_slow": 0.25, "truncate": False,
                                         "original_max_position_embeddings": 16}),
}


@pytest.mark.parametrize("case", sorted(YARN_LAYER_CASES))
def test_yarn_layer_matches_qwen3_past_the_original_context(case):
    base, scaling = YARN_LAYER_CASES[case]
    config = Qwen3Config(**COMMON, num_key_value_heads=HKV, head_dim=DH,
                         max_position_embeddings=64,
                         rope_parameters={"rope_theta": base, **scaling})
    hf = randomize(Qwen3Attention(config, layer_idx=0))
    assert Qwen3RotaryEmbedding(config).attention_scaling > 1.1  # 0.1 ln 4 + 1
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, qk_norm=True, base=base,
                                         scaling=scaling).eval()
    copy_projections(layer, hf)
    copy_(layer.q_norm.weight, hf.q_norm.weight)
    copy_(layer.k_norm.weight, hf.k_norm.weight)
    x, positions = inputs(length=40)  # positions 16 .. 39 lie past the original 16
    want, want_weights = hf_run(hf, Qwen3RotaryEmbedding, config, x, positions)
    check_both_paths(layer, x, want, want_weights)
    torch.testing.assert_close(decode_one_by_one(layer, x), want, **TOL)
    plain = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, qk_norm=True, base=base).eval()
    plain.load_state_dict(layer.state_dict())
    with torch.no_grad():
        assert not torch.allclose(plain(x, is_causal=True)[0], want, atol=1e-3)


def llama4_config(no_rope, **kwargs):
    from transformers import Llama4TextConfig

    return Llama4TextConfig(**COMMON, num_key_value_heads=HKV, head_dim=DH,
                            no_rope_layers=[no_rope], **kwargs)


@pytest.mark.parametrize("floor_scale,attn_scale", [(4, 0.1), (3, 0.5)])
def test_nope_layer_with_temperature_tuning_matches_llama4(floor_scale, attn_scale):
    # no_rope_layers[layer_idx] == 0: a NoPE layer, no rotation and no qk-norm, and with
    # attn_temperature_tuning its queries at absolute position p times
    # 1 + attn_scale * log1p(floor((p + 1) / floor_scale)) (floor_scale 8192 in the released
    # models; 3 or 4 here, so that the factor changes within the test's 21 positions)
    from transformers.models.llama4.modeling_llama4 import (
        Llama4TextAttention,
        Llama4TextRotaryEmbedding,
    )

    config = llama4_config(0, attn_temperature_tuning=True, floor_scale=floor_scale,
                           attn_scale=attn_scale, rope_parameters=ROPE)
    hf = randomize(Llama4TextAttention(config, layer_idx=0))
    assert not hf.use_rope and not hasattr(hf, "qk_norm")
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, rope_dim=0,
                                         temperature_tuning=(floor_scale, attn_scale)).eval()
    copy_projections(layer, hf)
    x, positions = inputs(length=21)
    want, want_weights = hf_run(hf, Llama4TextRotaryEmbedding, config, x, positions)
    check_both_paths(layer, x, want, want_weights)
    torch.testing.assert_close(decode_one_by_one(layer, x), want, **TOL)
    # HF's own cached decoding continues the temperature from the cache length, as mha's
    cache, steps = DynamicCache(config=config), []
    mask = torch.zeros(2, 1, 1, 1)  # one new query sees every cached key
    with torch.no_grad():
        for t in range(x.size(1)):
            steps.append(hf(x[:, t:t + 1], None, mask, cache=cache)[0])
    torch.testing.assert_close(torch.cat(steps, dim=1), want, **TOL)
    plain = mha.MultiHeadAttention(D, H, num_kv_heads=HKV).eval()
    plain.load_state_dict(layer.state_dict())
    with torch.no_grad():
        assert not torch.allclose(plain(x, is_causal=True)[0], want, atol=1e-3)


def test_rope_layer_matches_llama4():
    # Llama 4's RoPE layers: interleaved pairs (2j, 2j + 1) as complex numbers
    # (torch.view_as_complex, kept in place: mha's interleaved=True), llama3 frequency scaling
    # (attention factor 1), and a qk-norm with no gain *after* the rotation (Llama4TextL2Norm,
    # in fact an RMSNorm: x / sqrt(mean(x^2) + eps)). A rotation keeps every pair's norm, so
    # the RMS of the Dh features too: normalising after the rotation is normalising before it,
    # which is mha's qk_norm with gains of 1 (left at nn.RMSNorm's initial 1). The released
    # models run these layers in chunks of 8192 tokens (attention_chunk_size): one chunk here.
    from transformers.models.llama4.modeling_llama4 import (
        Llama4TextAttention,
        Llama4TextRotaryEmbedding,
    )

    scaling = {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64}
    config = llama4_config(1, use_qk_norm=True, max_position_embeddings=1024,
                           rope_parameters={"rope_theta": 500000.0, **scaling})
    hf = randomize(Llama4TextAttention(config, layer_idx=0))
    assert hf.use_rope and hf.qk_norm.eps == 1e-6
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, base=500000.0,
                                         interleaved=True, qk_norm=True,
                                         scaling=scaling).eval()
    copy_projections(layer, hf)
    assert torch.equal(layer.q_norm.weight, torch.ones(DH))
    x, positions = inputs(length=21)
    want, want_weights = hf_run(hf, Llama4TextRotaryEmbedding, config, x, positions)
    check_both_paths(layer, x, want, want_weights)


@pytest.mark.parametrize("layer_type", ["sliding_attention", "full_attention"])
def test_per_layer_bases_match_gemma3(layer_type):
    # Gemma 3 rotates its sliding layers with rope_local_base_freq (10 000) and its global
    # layers with rope_theta (1 000 000, and linear scaling by 8 in the 4B, 12B and 27B
    # models): one mha layer per type, each with its own base
    from transformers import Gemma3TextConfig
    from transformers.models.gemma3.modeling_gemma3 import (
        Gemma3RotaryEmbedding,
        apply_rotary_pos_emb,
    )

    rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}
    config = Gemma3TextConfig(**{**COMMON, "num_hidden_layers": 2}, num_key_value_heads=HKV,
                              head_dim=DH, layer_types=["sliding_attention", "full_attention"],
                              rope_parameters=rope)
    params = dict(rope[layer_type])
    base = params.pop("rope_theta")
    scaling = None if params["rope_type"] == "default" else params
    layer = mha.RotaryMultiHeadAttention(D, H, num_kv_heads=HKV, base=base, scaling=scaling)
    x, _ = inputs(length=64)
    positions = torch.arange(64)[None].expand(2, -1)
    cos, sin = Gemma3RotaryEmbedding(config)(x, positions, layer_type)  # (B, L, Dh)
    angles = mha.rotary.rope_angles(torch.arange(64), DH, base=base, scaling=scaling)
    torch.testing.assert_close(torch.cat([angles.cos()] * 2, -1).expand_as(cos), cos, **TOL)
    torch.testing.assert_close(torch.cat([angles.sin()] * 2, -1).expand_as(sin), sin, **TOL)
    q, k = torch.randn(2, H, 64, DH), torch.randn(2, HKV, 64, DH)
    want_q, want_k = apply_rotary_pos_emb(q, k, cos, sin)
    got_q, got_k = layer._position(q, k, 0)
    torch.testing.assert_close(got_q, want_q, **TOL)
    torch.testing.assert_close(got_k, want_k, **TOL)
