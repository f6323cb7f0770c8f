import pytest
import torch
from torch import nn

import mha


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = mha.MultiHeadAttention(16, 2)
        self.second = mha.RelativeMultiHeadAttention(16, 4, max_relative_position=2)

    def forward(self, x, need_weights=False):
        x = x + self.first(x, is_causal=True, need_weights=need_weights)[0]
        return x + self.second(x, need_weights=need_weights)[0]


def _hooks(model):
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_records_every_layer_by_name_on_the_fused_path():
    model = TwoLayers().eval()
    x = torch.randn(2, 5, 16)
    plain = model(x)
    with mha.record_attention(model) as weights:
        recorded = model(x)  # the layers are called with need_weights=False
    torch.testing.assert_close(recorded, plain)
    assert set(weights) == {"first", "second"}
    assert weights["first"].shape == (2, 2, 5, 5) and weights["second"].shape == (2, 4, 5, 5)
    _, expected = model.first(x, is_causal=True, need_weights=True)
    torch.testing.assert_close(weights["first"], expected)
    assert not weights["first"].requires_grad
    assert _hooks(model) == 0


def test_caller_gets_what_it_asked_for():
    layer = mha.MultiHeadAttention(16, 2)
    x = torch.randn(1, 4, 16)
    with mha.record_attention(layer) as weights:
        _, none = layer(x)
        _, w = layer(x, need_weights=True)
    assert none is None and w.shape == (1, 2, 4, 4)
    assert isinstance(weights["MultiHeadAttention"], list)  # called twice: a list, in order
    assert len(weights["MultiHeadAttention"]) == 2
    torch.testing.assert_close(weights["MultiHeadAttention"][1], w)


def test_state_restored_after_an_exception():
    model = TwoLayers()
    with pytest.raises(RuntimeError, match="boom"), mha.record_attention(model):
        model(torch.randn(1, 3, 16))
        raise RuntimeError("boom")
    assert _hooks(model) == 0
    assert not any("_mha_asked_weights" in vars(m) for m in model.modules())
    _, w = model.first(torch.randn(1, 3, 16))
    assert w is None


# ----------------------------------------------------------------------------- LatentAttention

class WithLatent(nn.Module):
    """A LatentAttention (DeepSeek's MLA, not a MultiHeadAttention) behind a projection."""

    def __init__(self, absorb):
        super().__init__()
        self.absorb = absorb
        self.proj = nn.Linear(16, 16)
        self.mla = mha.LatentAttention(16, 4, kv_rank=6, qk_nope_dim=4, qk_rope_dim=2,
                                       v_head_dim=3, q_rank=8)

    def forward(self, x):
        return self.mla(self.proj(x), is_causal=True, absorb=self.absorb)[0]


@pytest.mark.parametrize("absorb", [False, True])
def test_records_latent_attention(absorb):
    """Its weights (B, H, Lq, Lk) are what need_weights=True returns, with absorb or not, and
    the model's output is unchanged."""
    torch.manual_seed(0)
    model = WithLatent(absorb).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        plain = model(x)
        with mha.record_attention(model) as weights:
            recorded = model(x)  # the layer is called with need_weights=False
        _, expected = model.mla(model.proj(x), is_causal=True, need_weights=True, absorb=absorb)
        _, other = model.mla(model.proj(x), is_causal=True, need_weights=True,
                             absorb=not absorb)
    torch.testing.assert_close(recorded, plain)
    assert set(weights) == {"mla"} and weights["mla"].shape == (2, 4, 5, 5)
    torch.testing.assert_close(weights["mla"], expected)
    torch.testing.assert_close(weights["mla"], other)  # absorbing changes no weight
    assert weights["mla"].triu(1).abs().max() == 0  # causal
    torch.testing.assert_close(weights["mla"].sum(-1), torch.ones(2, 4, 5))
    assert _hooks(model) == 0 and not any("_mha_asked_weights" in vars(m)
                                          for m in model.modules())


def test_records_latent_and_multi_head_layers_together_and_gives_what_was_asked():
    model = nn.ModuleDict({"mha": mha.MultiHeadAttention(16, 2), "mla": WithLatent(True).mla})
    x = torch.randn(1, 4, 16)
    with torch.no_grad(), mha.record_attention(model) as weights:
        model["mha"](x)
        _, none = model["mla"](x)
        _, w = model["mla"](x, need_weights=True)
    assert set(weights) == {"mha", "mla"} and none is None and w.shape == (1, 4, 4, 4)
    assert len(weights["mla"]) == 2  # called twice: a list, in order
    torch.testing.assert_close(weights["mla"][1], w)
    torch.testing.assert_close(weights["mla"][0], w)


def test_a_model_without_attention_layers_names_both_kinds():
    with pytest.raises(ValueError, match=r"contains no attention layer \(mha.MultiHeadAttention "
                                         r"or mha.LatentAttention\)"):
        with mha.record_attention(nn.Sequential(nn.Linear(2, 2))):
            pass
