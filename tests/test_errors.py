"""Every bad input fails at once with a message naming the argument, the value and what was
expected: never a bare shape error from deep inside a matmul."""

import re

import numpy as np
import pytest
import torch
from torch import nn

import mha
import mha_book

x = torch.randn(2, 5, 32)
layer = mha.MultiHeadAttention(32, 4)
cross = mha.MultiHeadAttention(32, 4, kdim=10)
gqa = mha.MultiHeadAttention(32, 4, num_kv_heads=2)

CASES = {
    # construction
    "d_model not divisible": (lambda: mha.MultiHeadAttention(30, 4), ValueError,
                              "d_model (30) must be divisible by num_heads (4)"),
    "num_kv_heads": (lambda: mha.MultiHeadAttention(32, 8, num_kv_heads=3), ValueError,
                     "num_heads (8) must be a multiple of num_kv_heads (3)"),
    "d_model float": (lambda: mha.MultiHeadAttention(32.0, 4), TypeError,
                      "d_model must be an int; got 32.0"),
    "num_heads zero": (lambda: mha.MultiHeadAttention(32, 0), ValueError,
                       "num_heads must be a positive int; got 0"),
    "kdim negative": (lambda: mha.MultiHeadAttention(32, 4, kdim=-1), ValueError,
                      "kdim must be a positive int; got -1"),
    "dropout": (lambda: mha.MultiHeadAttention(32, 4, dropout=1.5), ValueError,
                "dropout must be a probability in [0, 1); got 1.5"),
    "variant": (lambda: mha.AttentionHead(32, 8, variant="kv"), ValueError,
                "variant must be one of ('shared', 'qk', 'qkv'); got 'kv'"),
    "loop heads": (lambda: mha.MultiHeadAttentionLoop(30, 4), ValueError,
                   "d_model (30) must be divisible by num_heads (4)"),
    "relative K": (lambda: mha.RelativeMultiHeadAttention(32, 4, max_relative_position=-1),
                   ValueError, "max_relative_position must be >= 0; got -1"),
    # forward inputs
    "unbatched": (lambda: layer(torch.randn(5, 32)), ValueError,
                  ("query must be batched, of shape (B, L, features); got a 2-D tensor of shape "
                  "(5, 32); add a batch dimension with query.unsqueeze(0)")),
    "features": (lambda: layer(torch.randn(2, 5, 31)), ValueError,
                 "query has 31 features but the layer expects d_model = 32"),
    "key kdim": (lambda: cross(x, torch.randn(2, 7, 8)), ValueError,
                 "key has 8 features but the layer expects kdim = 10"),
    "value vdim": (lambda: layer(x, x, torch.randn(2, 5, 16)), ValueError,
                   "value has 16 features but the layer expects vdim = 32"),
    "not a tensor": (lambda: layer([[1.0]]), TypeError,
                     "query must be a torch.Tensor; got list"),
    "dtype": (lambda: layer(x.double()), TypeError,
              "query has dtype torch.float64 but the layer's weights are torch.float32"),
    "batch": (lambda: layer(x, torch.randn(3, 5, 32)), ValueError,
              "query, key and value must have the same batch size B; got 2, 3 and 3"),
    "key value length": (lambda: layer(x, torch.randn(2, 7, 32), torch.randn(2, 6, 32)),
                         ValueError, "key and value must have the same length Lk; got 7 and 6"),
    "mask dtype": (lambda: layer(x, mask=torch.ones(5, 5)), TypeError,
                   "mask must be a bool tensor (True = may attend); got dtype torch.float32"),
    "mask shape": (lambda: layer(x, torch.randn(2, 7, 32), mask=torch.ones(3, 5).bool()),
                   ValueError, ("mask of shape (3, 5) cannot broadcast to (B, H, Lq, Lk) = "
                   "(2, 4, 5, 7)")),
    "mask too many dims": (lambda: layer(x, mask=torch.ones(1, 1, 1, 5, 5).bool()), ValueError,
                           "mask of shape (1, 1, 1, 5, 5) cannot broadcast to (B, H, Lq, Lk)"),
    "valid_lens dtype": (lambda: layer(x, valid_lens=torch.tensor([2.0, 3.0])), TypeError,
                         ("valid_lens must be an integer tensor (e.g. torch.long); got dtype "
                         "torch.float32")),
    "valid_lens shape": (lambda: layer(x, valid_lens=torch.tensor([2, 3, 4])), ValueError,
                         ("valid_lens must have shape (B,) = (2,) or (B, Lq) = (2, 5); got shape "
                         "(3,)")),
    "valid_lens 2d": (lambda: layer(x, valid_lens=torch.ones(2, 4, dtype=torch.long)),
                      ValueError, ("valid_lens must have shape (B,) = (2,) or (B, Lq) = (2, 5); "
                      "got shape (2, 4)")),
    "valid_lens negative": (lambda: layer(x, valid_lens=torch.tensor([2, -1])), ValueError,
                            "valid_lens must be >= 0; got a value -1"),
    "is_causal": (lambda: layer(x, is_causal=1), TypeError, "is_causal must be a bool; got 1"),
    "head_mask": (lambda: layer(x, head_mask=torch.ones(3)), ValueError,
                  "head_mask must have shape (H,) = (4,) or (B, H) = (2, 4); got shape (3,)"),
    "head input": (lambda: mha.AttentionHead(32, 8)(torch.randn(2, 5, 16)), ValueError,
                   "x has 16 features but the layer expects d_model = 32"),
    "loop unbatched": (lambda: mha.MultiHeadAttentionLoop(32, 4)(torch.randn(5, 32)), ValueError,
                       "x must be batched, of shape (B, L, features); got a 2-D tensor"),
    # pruning
    "prune range": (lambda: mha.MultiHeadAttention(32, 4).prune_heads([4]), ValueError,
                    "heads must be indices in 0..3 (num_heads = 4); got [4]"),
    "prune all": (lambda: mha.MultiHeadAttention(32, 4).prune_heads(range(4)), ValueError,
                  "cannot prune all 4 heads (got heads = [0, 1, 2, 3]); keep at least one"),
    "prune part of group": (lambda: gqa.prune_heads([0]), ValueError,
                            ("with num_kv_heads = 2, query heads share key/value heads in groups "
                            "of 2; heads must remove whole groups (e.g. [0, 1]); got heads = [0]")),
    # from_torch
    "from_torch type": (lambda: mha.MultiHeadAttention.from_torch(nn.Linear(2, 2)), TypeError,
                        "module must be a torch.nn.MultiheadAttention; got Linear"),
    "from_torch batch_first": (lambda: mha.MultiHeadAttention.from_torch(
        nn.MultiheadAttention(32, 4)), ValueError, "module has batch_first=False"),
    "from_torch bias_kv": (lambda: mha.MultiHeadAttention.from_torch(
        nn.MultiheadAttention(32, 4, add_bias_kv=True, batch_first=True)), ValueError,
        ("module has add_bias_kv=True, add_zero_attn=False; from_torch supports only "
        "add_bias_kv=False, add_zero_attn=False")),
    "from_torch zero_attn": (lambda: mha.MultiHeadAttention.from_torch(
        nn.MultiheadAttention(32, 4, add_zero_attn=True, batch_first=True)), ValueError,
        "add_zero_attn=True"),
    # functions
    "sdpa features": (lambda: mha.scaled_dot_product_attention(
        torch.randn(3, 4), torch.randn(5, 6), torch.randn(5, 2)), ValueError,
        "query has 4 features but key has 6"),
    "sdpa lengths": (lambda: mha.scaled_dot_product_attention(
        torch.randn(3, 4), torch.randn(5, 4), torch.randn(6, 2)), ValueError,
        "key has 5 positions but value has 6"),
    "sdpa mask shape": (lambda: mha.scaled_dot_product_attention(
        torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2), torch.ones(5, 3).bool()),
        ValueError, "mask of shape (5, 3) cannot broadcast to (..., Lq, Lk) = (3, 5)"),
    "sdpa mask dtype": (lambda: mha.scaled_dot_product_attention(
        torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2), torch.ones(3, 5)), TypeError,
        "mask must be a bool tensor"),
    "split_heads": (lambda: mha.split_heads(torch.randn(2, 5, 30), 4), ValueError,
                    "the last dimension of x (30) must be divisible by num_heads (4)"),
    "split_heads dims": (lambda: mha.split_heads(torch.randn(5, 32), 4), ValueError,
                         "split_heads expects x of shape (B, L, D); got shape (5, 32)"),
    "merge_heads": (lambda: mha.merge_heads(torch.randn(5, 32)), ValueError,
                    "merge_heads expects x of shape (B, H, L, Dh); got (5, 32)"),
    "masked_softmax lens": (lambda: mha.masked_softmax(torch.randn(2, 3, 4), torch.tensor([1])),
                            ValueError, "valid_lens must have shape (B,) = (2,)"),
    "causal_mask": (lambda: mha.causal_mask(0), ValueError,
                    "num_queries must be a positive int; got 0"),
    "convert source": (lambda: mha.convert_mask(torch.ones(2).bool(), source="bool",
                                                target="sdpa"), ValueError,
                       ("source must be one of ('sdpa', 'nn_mha', 'zero_blocked', 'valid_lens'); "
                       "got 'bool'")),
    "convert num_keys": (lambda: mha.convert_mask(torch.tensor([1]), source="valid_lens",
                                                  target="sdpa"), ValueError,
                         "num_keys is required to convert from source='valid_lens'"),
    "convert float valid_lens": (lambda: mha.convert_mask(torch.tensor([2.0, 3.0]),
                                                          source="valid_lens", target="sdpa",
                                                          num_keys=4), TypeError,
                                 ("mask (the valid_lens, since source='valid_lens') must be an "
                                  "integer tensor (e.g. torch.long); got dtype torch.float32")),
    "convert nn_mha float": (lambda: mha.convert_mask(torch.ones(2), source="nn_mha",
                                                      target="sdpa"), TypeError,
                             "a mask with source='nn_mha' must be bool; got dtype torch.float32"),
    "convert to valid_lens shape": (lambda: mha.convert_mask(
        torch.ones(2, 3, 4, 5).bool(), source="sdpa", target="valid_lens"), ValueError,
        ("the mask must have shape (B, Lk), (B, 1, Lk), (B, Lq, Lk) or (B, 1, Lq, Lk); "
        "got shape (2, 3, 4, 5)")),
    # the examples of issue 16: each was a torch error from deep inside or a silent result
    "sdpa dtype mixture": (lambda: mha.scaled_dot_product_attention(
        torch.randn(3, 4), torch.randn(5, 4).double(), torch.randn(5, 2)), TypeError,
        "key has dtype torch.float64 but query has torch.float32"),
    "sdpa batch broadcast": (lambda: mha.scaled_dot_product_attention(
        torch.randn(2, 3, 4), torch.randn(3, 5, 4), torch.randn(3, 5, 2)), ValueError,
        "the batch dimensions (all but the last two) must broadcast; got query (2,), key (3,)"),
    "head float64": (lambda: mha.AttentionHead(32, 8)(x.double()), TypeError,
                     "x has dtype torch.float64 but the layer's weights are torch.float32"),
    "loop float64": (lambda: mha.MultiHeadAttentionLoop(32, 4)(x.double()), TypeError,
                     "x has dtype torch.float64 but the layer's weights are torch.float32"),
    "masked_softmax numpy": (lambda: mha.masked_softmax(np.zeros((2, 3))), TypeError,
                             "scores must be a torch.Tensor; got ndarray; convert it with "
                             "torch.from_numpy(scores)"),
    "mask on meta": (lambda: layer(x, mask=torch.ones(5, 5, dtype=torch.bool, device="meta")),
                     ValueError, "mask is on device meta but the inputs are on cpu"),
    "sdpa mask on meta": (lambda: mha.scaled_dot_product_attention(
        x, x, x, torch.ones(5, 5, dtype=torch.bool, device="meta")), ValueError,
        "mask is on device meta but the inputs are on cpu"),
    "dropout_p negative": (lambda: mha.scaled_dot_product_attention(x, x, x, dropout_p=-0.1),
                           ValueError, "dropout_p must be a probability in [0, 1); got -0.1"),
    "need_weights str": (lambda: layer(x, need_weights="no"), TypeError,
                         "need_weights must be a bool; got 'no' (str)"),
    "bias str": (lambda: mha.MultiHeadAttention(32, 4, bias="no"), TypeError,
                 "bias must be a bool; got 'no' (str)"),
    "prune str": (lambda: mha.MultiHeadAttention(32, 4).prune_heads("01"), TypeError,
                  "heads must be a list of int head indices, e.g. [0, 1]; got '01' (str)"),
    "num_keys float": (lambda: mha.valid_lens_to_mask(torch.tensor([1, 2]), 3, 2.5), TypeError,
                       "num_keys must be an int; got 2.5 (float)"),
    "record no layer": (lambda: mha.record_attention(nn.Linear(2, 2)).__enter__(), ValueError,
                        "model (Linear) contains no attention layer (mha.MultiHeadAttention "
                        "or mha.LatentAttention)"),
    "3-D mask": (lambda: mha.MultiHeadAttention(32, 2)(x, mask=torch.ones(2, 5, 5).bool()),
                 ValueError, "mask of shape (2, 5, 5) is 3-D, which is ambiguous in a layer: "
                 "write mask[:, None] for (B, 1, Lq, Lk) (one mask per sequence, shared by the "
                 "heads) or mask[None] for (1, H, Lq, Lk) (one mask per head)"),
    "scale str": (lambda: mha.scaled_dot_product_attention(x, x, x, scale="1"), TypeError,
                  "scale must be a number; got '1' (str)"),
    "integer query": (lambda: mha.scaled_dot_product_attention(
        torch.ones(3, 4, dtype=torch.long), torch.randn(5, 4), torch.randn(5, 2)), TypeError,
        "query must be a floating-point tensor (e.g. torch.float32); got dtype torch.int64"),
    "layer on another device": (lambda: layer(x.to("meta")), ValueError,
                                "query is on device meta but the layer's weights are on cpu"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_message(name):
    fn, error, message = CASES[name]
    with pytest.raises(error, match=re.escape(message)):
        fn()


#: every public function or constructor that takes a device, called with that device
DEVICE_TAKERS = {
    "causal_mask": lambda device: mha.causal_mask(3, device=device),
    "MultiHeadAttention": lambda device: mha.MultiHeadAttention(32, 4, device=device),
    "RotaryMultiHeadAttention": lambda device: mha.RotaryMultiHeadAttention(32, 4,
                                                                            device=device),
    "RelativeMultiHeadAttention": lambda device: mha.RelativeMultiHeadAttention(
        32, 4, device=device),
    "relative_positions": lambda device: mha.relative.relative_positions(3, 3, 2,
                                                                      device=device),
    "sinusoidal_positions": lambda device: mha.sinusoidal_positions(4, 8, device=device),
    "load_pretrained": lambda device: mha_book.tiny.load_pretrained("multitask", device=device),
    "load_models": lambda device: mha_book.copy_back.load_models(device=device),
}


@pytest.fixture
def no_accelerator(monkeypatch):
    """This machine as one without CUDA or MPS, whatever it really has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.mark.parametrize("name", list(DEVICE_TAKERS))
@pytest.mark.parametrize("device, what", [("cuda", "a CUDA GPU"), ("cuda:1", "a CUDA GPU"),
                                          ("mps", "Apple's MPS")])
def test_missing_device_is_a_clear_error(no_accelerator, name, device, what):
    """Not torch's bare AssertionError ('Torch not compiled with CUDA enabled'): the argument,
    the device asked for and what this machine has."""
    message = (f"device={device!r} asks for {what}, which this machine does not have "
               "(available: cpu); pass device=mha.device() to use the best device this "
               "machine has")
    with pytest.raises(ValueError, match=re.escape(message)):
        DEVICE_TAKERS[name](device)
    with pytest.raises(ValueError, match=re.escape(message.replace(repr(device), repr(
            torch.device(device))))):
        DEVICE_TAKERS[name](torch.device(device))


@pytest.mark.parametrize("name", list(DEVICE_TAKERS))
def test_cpu_device_is_accepted(name):
    assert DEVICE_TAKERS[name]("cpu") is not None


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_device_past_the_last_is_a_clear_error():
    count = torch.cuda.device_count()
    with pytest.raises(ValueError, match=re.escape(f"device='cuda:{count}' asks for a CUDA GPU")):
        mha.causal_mask(3, device=f"cuda:{count}")


def test_a_mask_that_is_not_bool_points_to_the_converter():
    """Ch 02: the attention function refuses a non-bool mask and names mha.convert_mask."""
    q = torch.randn(1, 3, 4)
    with pytest.raises(TypeError, match=r"mask must be a bool tensor.*mha\.convert_mask"):
        mha.scaled_dot_product_attention(q, q, q, mask=torch.ones(3, 3))
