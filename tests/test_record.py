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
