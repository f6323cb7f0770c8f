"""Property-based bad input: hypothesis generates wrong calls across the whole public API and
every one must raise ``ValueError`` or ``TypeError`` whose message names the argument, at once
(never a bare error from inside torch, never a silent result).

Each family below draws wrong values for one argument (or one way of combining arguments) of
one function or class; ``test_wrong_call_names_the_argument`` runs every family for the
up to 40 examples (fewer where a family has fewer distinct wrong calls; ``WRONG_CALLS``
counts them in a run). Shapes: B batch, H heads, L length, D d_model.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import mha
import mha_book

WRONG_CALLS = [0]

# --- wrong values ------------------------------------------------------------------------------

NOT_AN_INT = st.one_of(
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.just([2]),
    st.just(torch.tensor(2.0)),
)
NOT_POSITIVE = st.integers(max_value=0)
BAD_POSITIVE_INT = st.one_of(NOT_AN_INT, NOT_POSITIVE)
NOT_A_BOOL = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
                       st.just(None), st.just(torch.tensor(True)), st.just(np.bool_(True)))
BAD_PROBABILITY = st.one_of(
    st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=True),
    st.floats(min_value=1.0, allow_nan=False, allow_infinity=True),
    st.booleans(), st.text(max_size=3), st.just(None),
)
BAD_SCALE = st.one_of(st.booleans(), st.text(max_size=3), st.just(float("nan")),
                      st.just(float("inf")), st.just([1.0]), st.just(torch.ones(2)))


def not_a_tensor(shape=(2, 5, 8)):
    """Wrong types where a tensor is meant: a list, a numpy array, a number, a str, None."""
    return st.sampled_from(["list", "numpy", "float", "str", "none"]).map(
        lambda kind: {"list": torch.zeros(shape).tolist(), "numpy": np.zeros(shape),
                      "float": 1.0, "str": "x", "none": None}[kind])


INT_DTYPES = st.sampled_from([torch.int64, torch.int32, torch.bool, torch.uint8])
OTHER_FLOAT = st.sampled_from([torch.float64, torch.float16, torch.bfloat16])
META = torch.device("meta")


def t(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(shape, device=device).to(dtype) if dtype.is_floating_point else \
        torch.ones(shape, dtype=dtype, device=device)


def layer(**kwargs):
    return mha.MultiHeadAttention(8, 2, **kwargs)


sdpa = mha.scaled_dot_product_attention


def family(strategy):
    """A strategy of (call, argument name) pairs."""
    return strategy


FAMILIES = {}


def register(name):
    def wrap(builder):
        FAMILIES[name] = builder()
        return builder

    return wrap


# --- scaled_dot_product_attention -----------------------------------------------------------


@register("sdpa: q/k/v not a tensor")
def _():
    return st.tuples(st.sampled_from(["query", "key", "value"]), not_a_tensor((3, 4))).map(
        lambda a: (lambda: sdpa(**{"query": t(3, 4), "key": t(5, 4), "value": t(5, 2),
                                   a[0]: a[1]}), a[0]))


@register("sdpa: q/k/v integer dtype")
def _():
    return st.tuples(st.sampled_from(["query", "key", "value"]), INT_DTYPES).map(
        lambda a: (lambda: sdpa(**{"query": t(3, 4), "key": t(5, 4), "value": t(5, 2),
                                   a[0]: t(3 if a[0] == "query" else 5, 4, dtype=a[1])}), a[0]))


@register("sdpa: dtype mixture")
def _():
    return st.tuples(st.sampled_from(["key", "value"]), OTHER_FLOAT).map(
        lambda a: (lambda: sdpa(**{"query": t(3, 4), "key": t(5, 4), "value": t(5, 4),
                                   a[0]: t(5, 4, dtype=a[1])}), a[0]))


@register("sdpa: q/k/v on another device")
def _():
    return st.sampled_from(["key", "value"]).map(
        lambda n: (lambda: sdpa(**{"query": t(3, 4), "key": t(5, 4), "value": t(5, 4),
                                   n: t(5, 4, device=META)}), n))


@register("sdpa: fewer than 2 dims")
def _():
    return st.tuples(st.sampled_from(["query", "key", "value"]), st.integers(0, 1)).map(
        lambda a: (lambda: sdpa(**{"query": t(3, 4), "key": t(5, 4), "value": t(5, 4),
                                   a[0]: t(*[4] * a[1])}), a[0]))


@register("sdpa: feature / length mismatch")
def _():
    return st.tuples(st.integers(1, 6), st.integers(1, 6), st.booleans()).filter(
        lambda a: a[0] != a[1]).map(
        lambda a: ((lambda: sdpa(t(3, a[0]), t(5, a[1]), t(5, 2))), "key") if a[2] else
        ((lambda: sdpa(t(3, 4), t(a[0], 4), t(a[1], 2))), "value"))


@register("sdpa: batch dims that cannot broadcast")
def _():
    return st.tuples(st.integers(2, 4), st.integers(2, 4)).filter(lambda a: a[0] != a[1]).map(
        lambda a: (lambda: sdpa(t(a[0], 3, 4), t(a[1], 5, 4), t(a[1], 5, 2)), "key"))


@register("sdpa: mask wrong dtype")
def _():
    return st.sampled_from([torch.float32, torch.int64, torch.uint8]).map(
        lambda d: (lambda: sdpa(t(3, 4), t(5, 4), t(5, 2), t(3, 5, dtype=d)), "mask"))


@register("sdpa: mask wrong shape or device")
def _():
    return st.one_of(
        st.tuples(st.integers(2, 6), st.integers(2, 6)).filter(lambda a: a != (3, 5)).map(
            lambda a: (lambda: sdpa(t(3, 4), t(5, 4), t(5, 2), t(*a, dtype=torch.bool)), "mask")),
        st.just((lambda: sdpa(t(3, 4), t(5, 4), t(5, 2), t(3, 5, dtype=torch.bool, device=META)),
                 "mask")),
        not_a_tensor((3, 5)).filter(lambda m: m is not None).map(
            lambda m: (lambda: sdpa(t(3, 4), t(5, 4), t(5, 2), m), "mask")),
    )


@register("sdpa: dropout_p")
def _():
    return BAD_PROBABILITY.map(
        lambda p: (lambda: sdpa(t(3, 4), t(5, 4), t(5, 2), dropout_p=p), "dropout_p"))


@register("sdpa: scale")
def _():
    return BAD_SCALE.map(lambda s: (lambda: sdpa(t(3, 4), t(5, 4), t(5, 2), scale=s), "scale"))


# --- masked_softmax, masks --------------------------------------------------------------------


@register("masked_softmax: scores")
def _():
    return st.one_of(not_a_tensor((2, 3, 4)).map(lambda s: (s, None)),
                     INT_DTYPES.map(lambda d: (t(2, 3, 4, dtype=d), None)),
                     st.integers(1, 2).map(lambda n: (t(*[4] * n), torch.tensor([1, 2])))).map(
        lambda a: (lambda: mha.masked_softmax(*a), "scores"))


@register("masked_softmax: valid_lens")
def _():
    bad = st.one_of(
        not_a_tensor((2,)).filter(lambda v: v is not None),
        st.sampled_from([torch.float32, torch.bool]).map(lambda d: t(2, dtype=d)),
        st.integers(1, 5).filter(lambda n: n != 2).map(lambda n: torch.ones(n, dtype=torch.long)),
        st.integers(-5, -1).map(lambda n: torch.tensor([2, n])),
        st.just(torch.ones(2, dtype=torch.long, device=META)),
        st.integers(1, 5).filter(lambda n: n != 3).map(
            lambda n: torch.ones(2, n, dtype=torch.long)),
    )
    return bad.map(lambda v: (lambda: mha.masked_softmax(t(2, 3, 4), v), "valid_lens"))


@register("causal_mask: num_queries / num_keys")
def _():
    return st.tuples(st.sampled_from(["num_queries", "num_keys"]), BAD_POSITIVE_INT).map(
        lambda a: (lambda: mha.causal_mask(**{"num_queries": 3, "num_keys": 4, a[0]: a[1]}),
                   a[0]))


@register("causal_mask: device")
def _():
    return st.sampled_from(["nowhere", 3.5, [0], object()]).map(
        lambda d: (lambda: mha.causal_mask(3, device=d), "device"))


@register("valid_lens_to_mask: ints")
def _():
    return st.tuples(st.sampled_from(["num_queries", "num_keys"]), BAD_POSITIVE_INT).map(
        lambda a: (lambda: mha.valid_lens_to_mask(
            torch.tensor([1, 2]), **{"num_queries": 3, "num_keys": 4, a[0]: a[1]}), a[0]))


@register("valid_lens_to_mask: batch_size and lengths")
def _():
    return st.one_of(
        NOT_AN_INT.map(lambda b: ((lambda: mha.valid_lens_to_mask(
            torch.tensor([1, 2]), 3, 4, batch_size=b)), "batch_size")),
        st.integers(0, 5).filter(lambda b: b != 2).map(lambda b: ((
            lambda: mha.valid_lens_to_mask(torch.tensor([1, 2]), 3, 4, batch_size=b)),
            "valid_lens")),
        st.sampled_from([torch.float32, torch.bool]).map(lambda d: ((
            lambda: mha.valid_lens_to_mask(t(2, dtype=d), 3, 4)), "valid_lens")),
    )


@register("convert_mask: source / target")
def _():
    bad = st.one_of(st.text(max_size=6).filter(lambda s: s not in mha.masks.CONVENTIONS),
                    st.just(None), st.just(["sdpa"]), st.integers())
    return st.tuples(st.sampled_from(["source", "target"]), bad).map(
        lambda a: (lambda: mha.convert_mask(torch.ones(2, 3, dtype=torch.bool),
                                            **{"source": "sdpa", "target": "nn_mha",
                                               a[0]: a[1]}), a[0]))


@register("convert_mask: mask and num_keys")
def _():
    return st.one_of(
        not_a_tensor((2, 3)).map(lambda m: ((lambda: mha.convert_mask(
            m, source="sdpa", target="nn_mha")), "mask")),
        st.sampled_from(["sdpa", "nn_mha"]).map(lambda s: ((lambda: mha.convert_mask(
            t(2, 3), source=s, target="zero_blocked")), "mask")),
        BAD_POSITIVE_INT.map(lambda n: ((lambda: mha.convert_mask(
            torch.tensor([1, 2]), source="valid_lens", target="sdpa", num_keys=n)), "num_keys")),
        st.just(((lambda: mha.convert_mask(t(2), source="valid_lens", target="sdpa",
                                           num_keys=3)), "mask")),
    )


# --- split / merge ---------------------------------------------------------------------------


@register("split_heads")
def _():
    return st.one_of(
        not_a_tensor().map(lambda x: ((lambda: mha.split_heads(x, 2)), "x")),
        st.integers(0, 5).filter(lambda n: n != 3).map(lambda n: ((
            lambda: mha.split_heads(t(*[8] * n), 2)), "x")),
        BAD_POSITIVE_INT.map(lambda h: ((lambda: mha.split_heads(t(2, 5, 8), h)), "num_heads")),
        st.integers(3, 7).filter(lambda h: 8 % h).map(lambda h: ((
            lambda: mha.split_heads(t(2, 5, 8), h)), "num_heads")),
    )


@register("merge_heads")
def _():
    return st.one_of(
        not_a_tensor((2, 2, 5, 4)).map(lambda x: ((lambda: mha.merge_heads(x)), "x")),
        st.integers(0, 6).filter(lambda n: n != 4).map(lambda n: ((
            lambda: mha.merge_heads(t(*[2] * n))), "x")),
    )


# --- AttentionHead, MultiHeadAttentionLoop ----------------------------------------------------


@register("AttentionHead: constructor")
def _():
    return st.one_of(
        st.tuples(st.sampled_from(["d_model", "d_head"]), BAD_POSITIVE_INT).map(
            lambda a: ((lambda: mha.AttentionHead(**{"d_model": 8, "d_head": 4, a[0]: a[1]})),
                       a[0])),
        st.one_of(st.text(max_size=4).filter(lambda v: v not in ("shared", "qk", "qkv")),
                  st.just(None), st.integers()).map(lambda v: ((
                      lambda: mha.AttentionHead(8, 4, variant=v)), "variant")),
    )


@register("AttentionHead: forward")
def _():
    head = mha.AttentionHead(8, 4)
    return st.one_of(
        not_a_tensor().map(lambda x: ((lambda: head(x)), "x")),
        OTHER_FLOAT.map(lambda d: ((lambda: head(t(2, 5, 8, dtype=d))), "x")),
        st.integers(1, 12).filter(lambda f: f != 8).map(lambda f: ((lambda: head(t(2, 5, f))),
                                                                   "x")),
        st.just(((lambda: head(t(5, 8))), "x")),
        st.just(((lambda: head(t(2, 5, 8, device=META))), "x")),
        st.sampled_from([(3, 5, 5), (5, 4), (2, 1, 5, 5)]).map(lambda s: ((
            lambda: head(t(2, 5, 8), mask=t(*s, dtype=torch.bool))), "mask")),
        st.just(((lambda: head(t(2, 5, 8), mask=t(5, 5))), "mask")),
    )


@register("MultiHeadAttentionLoop")
def _():
    loop = mha.MultiHeadAttentionLoop(8, 2)
    return st.one_of(
        st.tuples(st.sampled_from(["d_model", "num_heads"]), BAD_POSITIVE_INT).map(
            lambda a: ((lambda: mha.MultiHeadAttentionLoop(**{"d_model": 8, "num_heads": 2,
                                                              a[0]: a[1]})), a[0])),
        OTHER_FLOAT.map(lambda d: ((lambda: loop(t(2, 5, 8, dtype=d))), "x")),
        NOT_A_BOOL.map(lambda c: ((lambda: loop(t(2, 5, 8), is_causal=c)), "is_causal")),
        st.sampled_from([(3, 5, 5), (5, 4)]).map(lambda s: ((
            lambda: loop(t(2, 5, 8), mask=t(*s, dtype=torch.bool))), "mask")),
        st.just(((lambda: loop(t(2, 5, 8), mask=t(5, 5, dtype=torch.bool, device=META))),
                 "mask")),
    )


# --- MultiHeadAttention -----------------------------------------------------------------------


@register("MultiHeadAttention: int arguments")
def _():
    names = st.sampled_from(["d_model", "num_heads", "num_kv_heads", "kdim", "vdim"])
    return st.tuples(names, BAD_POSITIVE_INT).filter(
        lambda a: not (a[0] in ("kdim", "vdim", "num_kv_heads") and a[1] is None)).map(
        lambda a: ((lambda: mha.MultiHeadAttention(**{"d_model": 8, "num_heads": 2, a[0]: a[1]})),
                   a[0]))


@register("MultiHeadAttention: divisibility")
def _():
    return st.one_of(
        st.integers(3, 7).filter(lambda h: 8 % h).map(lambda h: ((
            lambda: mha.MultiHeadAttention(8, h)), "num_heads")),
        st.integers(3, 7).filter(lambda g: 8 % g).map(lambda g: ((
            lambda: mha.MultiHeadAttention(16, 8, num_kv_heads=g)), "num_kv_heads")),
    )


@register("MultiHeadAttention: dropout, bias, device, dtype")
def _():
    return st.one_of(
        BAD_PROBABILITY.map(lambda p: ((lambda: layer(dropout=p)), "dropout")),
        NOT_A_BOOL.map(lambda b: ((lambda: layer(bias=b)), "bias")),
        st.sampled_from(["nowhere", 2.5, [0]]).map(lambda d: ((lambda: layer(device=d)),
                                                                "device")),
        st.sampled_from(["float32", torch.int64, torch.bool, float]).map(
            lambda d: ((lambda: layer(dtype=d)), "dtype")),
    )


@register("forward: query/key/value")
def _():
    m = layer()
    names = st.sampled_from(["query", "key", "value"])
    bad = st.one_of(
        not_a_tensor().filter(lambda x: x is not None),
        OTHER_FLOAT.map(lambda d: t(2, 5, 8, dtype=d)),
        INT_DTYPES.map(lambda d: t(2, 5, 8, dtype=d)),
        st.integers(1, 12).filter(lambda f: f != 8).map(lambda f: t(2, 5, f)),
        st.integers(0, 5).filter(lambda n: n != 3).map(lambda n: t(*[8] * n)),
        st.just(t(2, 5, 8, device=META)),
    )
    return st.tuples(names, bad).map(lambda a: ((lambda: m(**{"query": t(2, 5, 8), a[0]: a[1]})),
                                                a[0]))


@register("forward: batch and length mismatches")
def _():
    m = layer()
    return st.one_of(
        st.integers(1, 4).filter(lambda b: b != 2).map(lambda b: ((
            lambda: m(t(2, 5, 8), t(b, 5, 8))), "batch size")),
        st.integers(1, 7).filter(lambda n: n != 6).map(lambda n: ((
            lambda: m(t(2, 5, 8), t(2, 6, 8), t(2, n, 8))), "value")),
    )


@register("forward: mask")
def _():
    m = layer()  # num_heads = 2 = B: a 3-D (B, Lq, Lk) mask would broadcast as per-head
    return st.one_of(
        st.sampled_from([torch.float32, torch.int64]).map(lambda d: t(5, 5, dtype=d)),
        st.sampled_from([(3, 5), (5, 4), (3, 1, 5, 5), (1, 1, 1, 5, 5), (2, 3, 5, 5)]).map(
            lambda s: t(*s, dtype=torch.bool)),
        st.sampled_from([(2, 5, 5), (2, 1, 5), (2, 5, 1)]).map(lambda s: t(*s, dtype=torch.bool)),
        st.just(t(5, 5, dtype=torch.bool, device=META)),
        not_a_tensor((5, 5)).filter(lambda x: x is not None),
    ).map(lambda mask: ((lambda: m(t(2, 5, 8), mask=mask)), "mask"))


@register("forward: valid_lens")
def _():
    m = layer()
    return st.one_of(
        st.sampled_from([torch.float32, torch.bool]).map(lambda d: t(2, dtype=d)),
        st.sampled_from([(3,), (1,), (2, 4), (2, 5, 1)]).map(
            lambda s: torch.ones(s, dtype=torch.long)),
        st.integers(-9, -1).map(lambda n: torch.tensor([1, n])),
        st.just(torch.ones(2, dtype=torch.long, device=META)),
        not_a_tensor((2,)).filter(lambda x: x is not None),
    ).map(lambda v: ((lambda: m(t(2, 5, 8), valid_lens=v)), "valid_lens"))


@register("forward: flags")
def _():
    m = layer()
    return st.tuples(st.sampled_from(["is_causal", "need_weights"]), NOT_A_BOOL).map(
        lambda a: ((lambda: m(t(2, 5, 8), **{a[0]: a[1]})), a[0]))


@register("forward: head_mask")
def _():
    m = layer()
    return st.one_of(
        st.sampled_from([(3,), (1,), (2, 3), (3, 2), (2, 2, 1)]).map(lambda s: t(*s)),
        st.just(t(2, device=META)),
        st.just(torch.ones(2, dtype=torch.complex64)),
        not_a_tensor((2,)).filter(lambda x: x is not None),
    ).map(lambda h: ((lambda: m(t(2, 5, 8), head_mask=h)), "head_mask"))


@register("prune_heads")
def _():
    return st.one_of(
        st.sampled_from(["01", "0", b"1"]),
        st.lists(st.one_of(st.floats(), st.booleans(), st.text(max_size=2)), min_size=1,
                 max_size=3),
        st.lists(st.integers().filter(lambda h: not 0 <= h < 4), min_size=1, max_size=3),
        st.sampled_from([3, 2.0, None, torch.tensor([0.0])]),
    ).map(lambda h: ((lambda: mha.MultiHeadAttention(8, 4).prune_heads(h)), "heads"))


@register("from_torch")
def _():
    return st.one_of(
        st.sampled_from([nn.Linear(2, 2), None, "mha", mha.MultiHeadAttention(8, 2)]).map(
            lambda m: ((lambda: mha.MultiHeadAttention.from_torch(m)), "module")),
        st.just(((lambda: mha.MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))),
                 "module")),
        st.sampled_from([nn.Linear(2, 2), None]).map(
            lambda m: ((lambda: mha.RelativeMultiHeadAttention.from_torch(m)), "module")),
    )


@register("RelativeMultiHeadAttention")
def _():
    bad = st.one_of(NOT_AN_INT, st.integers(max_value=-1))
    return st.one_of(
        bad.map(lambda k: ((lambda: mha.RelativeMultiHeadAttention(
            8, 2, max_relative_position=k)), "max_relative_position")),
        NOT_A_BOOL.map(lambda c: ((lambda: mha.RelativeMultiHeadAttention(8, 2)(
            t(2, 5, 8), is_causal=c)), "is_causal")),
        st.just(((lambda: mha.RelativeMultiHeadAttention(8, 2)(
            t(2, 5, 8), mask=t(2, 5, 5, dtype=torch.bool))), "mask")),
    )


@register("record_attention")
def _():
    def enter(model):
        with mha.record_attention(model):
            pass

    return st.sampled_from([nn.Linear(2, 2), nn.Sequential(nn.MultiheadAttention(8, 2)), None,
                            "model", nn.Sequential()]).map(
        lambda m: ((lambda: enter(m)), "model"))


@register("record_attention: need_weights")
def _():
    m = layer()

    def run(flag):
        with mha.record_attention(m):
            m(t(2, 5, 8), need_weights=flag)

    return NOT_A_BOOL.map(lambda f: ((lambda: run(f)), "need_weights"))


@register("exercises.check")
def _():
    from mha_book.exercises import check

    def fn(x):
        return x

    return st.one_of(
        st.one_of(st.text(max_size=5), st.integers(), st.just(None)).filter(
            lambda n: n not in mha_book.exercises.available()).map(
            lambda n: ((lambda: check(n, fn, verbose=False)), "name")),
        st.sampled_from([None, 3, "fn", torch.ones(2)]).map(
            lambda f: ((lambda: check("softmax", f, verbose=False)), "fn")),
        NOT_A_BOOL.map(lambda v: ((lambda: check("softmax", fn, verbose=v)), "verbose")),
        st.one_of(st.floats(max_value=0), st.just("1"), st.booleans()).map(
            lambda s: ((lambda: check("softmax", fn, verbose=False, time_limit=s)),
                       "time_limit")),
    )


@register("sdpa/layer: 3-D mask on a layer whose num_heads == B")
def _():
    return st.integers(2, 4).map(lambda b: ((lambda: mha.MultiHeadAttention(12, b)(
        t(b, 5, 12), mask=t(b, 5, 5, dtype=torch.bool))), "mask"))


@register("KVCache")
def _():
    def append_twice(first, second):
        cache = mha.KVCache()
        cache.append(first, first)
        cache.append(second, second)

    def decode(cache, key=None):
        x = t(2, 5, 8)
        layer()(x, x if key is None else key, cache=cache)

    return st.one_of(
        not_a_tensor((2, 2, 5, 4)).map(
            lambda k: ((lambda: mha.KVCache().append(k, t(2, 2, 5, 4))), "k")),
        st.sampled_from([(2, 5, 4), (2, 2, 2, 5, 4)]).map(
            lambda shape: ((lambda: mha.KVCache().append(t(*shape), t(*shape))), "k")),
        st.sampled_from([(3, 2, 1, 4), (2, 1, 1, 4), (2, 2, 1, 6)]).map(
            lambda shape: ((lambda: append_twice(t(2, 2, 5, 4), t(*shape))), "cache")),
        OTHER_FLOAT.map(lambda d: ((lambda: append_twice(
            t(2, 2, 5, 4), t(2, 2, 1, 4, dtype=d))), "cache")),
        st.sampled_from(["cache", 3, {}]).map(lambda c: ((lambda: decode(c)), "cache")),
        st.just(((lambda: decode(mha.KVCache(), key=t(2, 5, 8))), "key")),
    )


@register("attention_layers / head_gates / head_importance / prune_heads")
def _():
    def gates(model):
        with mha.head_gates(model):
            pass

    def model():
        return nn.Sequential(layer())

    def loss(m, batch):
        return m[0](batch)[0].sum()

    not_a_module = st.sampled_from([None, "model", 3, torch.ones(2)])
    return st.one_of(
        not_a_module.map(lambda m: ((lambda: mha.attention_layers(m)), "model")),
        st.one_of(not_a_module, st.just(nn.Linear(2, 2))).map(
            lambda m: ((lambda: gates(m)), "model")),
        st.sampled_from([None, 3, "loss"]).map(lambda f: ((lambda: mha.head_importance(
            model(), [t(2, 5, 8)], f)), "loss_fn")),
        st.sampled_from([lambda m, b: m[0](b)[0], lambda m, b: 1.0]).map(
            lambda f: ((lambda: mha.head_importance(model(), [t(2, 5, 8)], f)), "loss_fn")),
        st.just(((lambda: mha.head_importance(model(), [], loss)), "batches")),
        st.sampled_from([[(0,)], ["0"], [0]]).map(
            lambda h: ((lambda: mha.prune_heads(model(), h)), "heads")),
        st.sampled_from([[(0, 2)], [(0, -1)], [(0, "1")]]).map(
            lambda h: ((lambda: mha.prune_heads(model(), h)), "head")),
        st.sampled_from([[(3, 0)], [("nope", 0)]]).map(
            lambda h: ((lambda: mha.prune_heads(model(), h)), "layer")),
    )


@register("apply_rope / RotaryMultiHeadAttention")
def _():
    return st.one_of(
        not_a_tensor((2, 5, 8)).map(lambda x: ((lambda: mha.apply_rope(x)), "x")),
        INT_DTYPES.map(lambda d: ((lambda: mha.apply_rope(t(2, 5, 8, dtype=d))), "x")),
        st.sampled_from([3, 5, 7]).map(lambda dh: ((lambda: mha.apply_rope(t(2, 5, dh))), "d_head")),
        st.sampled_from([torch.arange(4), torch.ones(5), "01234"]).map(
            lambda p: ((lambda: mha.apply_rope(t(2, 5, 8), p)), "positions")),
        st.sampled_from([0.5, -1.0, float("nan"), "10000"]).map(
            lambda b: ((lambda: mha.apply_rope(t(2, 5, 8), base=b)), "base")),
        st.sampled_from([(12, 4), (6, 2)]).map(lambda a: (
            (lambda: mha.RotaryMultiHeadAttention(*a)), "d_head")),
        st.just(((lambda: mha.RotaryMultiHeadAttention(8, 2)(t(2, 5, 8), t(2, 5, 8))), "key")),
    )


@register("sinusoidal_positions")
def _():
    return st.one_of(
        st.sampled_from([-1, 2.5, "8", None]).map(
            lambda n: ((lambda: mha.sinusoidal_positions(n, 8)), "length")),
        st.sampled_from([0, -2, 3, 7, 4.0, "8"]).map(
            lambda d: ((lambda: mha.sinusoidal_positions(5, d)), "d_model")),
        st.sampled_from([3, "no-such-device"]).map(
            lambda d: ((lambda: mha.sinusoidal_positions(5, 8, device=d)), "device")),
    )


@register("LatentAttention / RotaryMultiHeadAttention(window, sinks, qk_norm, gate)")
def _():
    mla = {"kv_rank": 4, "qk_nope_dim": 4, "qk_rope_dim": 2, "v_head_dim": 4}

    def latent(**bad):
        return mha.LatentAttention(8, 2, **{**mla, **bad})

    return st.one_of(
        BAD_POSITIVE_INT.map(lambda w: (
            (lambda: mha.RotaryMultiHeadAttention(8, 2, window=w)), "window")),
        st.sampled_from(["sinks", "qk_norm", "gate"]).flatmap(lambda name: NOT_A_BOOL.map(
            lambda v: ((lambda: mha.RotaryMultiHeadAttention(8, 2, **{name: v})), name))),
        st.sampled_from(["kv_rank", "qk_nope_dim", "qk_rope_dim", "v_head_dim", "q_rank"]).flatmap(
            lambda name: BAD_POSITIVE_INT.map(lambda v: ((lambda: latent(**{name: v})), name))),
        st.sampled_from([1, 3, 5]).map(lambda d: ((lambda: latent(qk_rope_dim=d)), "qk_rope_dim")),
        not_a_tensor((2, 5, 8)).map(lambda x: ((lambda: latent()(x)), "x")),
        NOT_A_BOOL.map(lambda a: ((lambda: latent()(t(2, 5, 8), absorb=a)), "absorb")),
        st.sampled_from([1, 2]).map(lambda w: (
            (lambda: latent()(t(2, 5, 8), cache=mha.KVCache(window=w))), "cache")),
    )


@register("rope_frequencies / apply_rope / RotaryMultiHeadAttention: rope_dim, scaling, temperature")
def _():
    from mha.rope_scaling import rope_frequencies

    bad_rope_dim = st.one_of(st.sampled_from([1, 3, 5, 10, 12, -2, -4]), NOT_AN_INT)
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
    bad_scaling = st.sampled_from([
        "yarn", 4.0, ["yarn"], {"factor": 4.0}, {"type": "yarn", "factor": 4.0},
        {"rope_type": "dynamic", "factor": 4.0}, {"rope_type": "longrope"}, {"rope_type": 3},
        {"rope_type": "linear"}, {"rope_type": "yarn", "factor": 4.0},
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0},
        {"rope_type": "linear", "factor": 2.0, "beta_fast": 32},
        {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6},
        {"rope_type": "linear", "factor": 0.5}, {"rope_type": "linear", "factor": "8"},
        {"rope_type": "linear", "factor": float("nan")},
        {**yarn, "original_max_position_embeddings": 0},
        {**yarn, "beta_fast": 1.0, "beta_slow": 2.0}, {**yarn, "mscale": 1.0},
        {**yarn, "attention_factor": -1.0}, {**yarn, "truncate": 1},
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
         "original_max_position_embeddings": 8192},
    ])
    bad_temperature = st.sampled_from([4, "ab", (4,), (4, 0.1, 2), [None, 0.1], (0, 0.1),
                                       (-8192, 0.1), (4, float("nan")), (4, "0.1"),
                                       {"floor_scale": 4, "attn_scale": 0.1}])
    return st.one_of(
        bad_rope_dim.map(lambda r: ((lambda: mha.apply_rope(t(2, 5, 8), rope_dim=r)),
                                    "rope_dim")),
        bad_rope_dim.filter(lambda r: r not in (10, 12)).map(
            lambda r: ((lambda: rope_frequencies(r)), "rope_dim")),
        st.sampled_from([0.5, -1.0, float("inf"), "10000"]).map(
            lambda b: ((lambda: rope_frequencies(8, base=b)), "base")),
        bad_scaling.map(lambda c: ((lambda: rope_frequencies(8, scaling=c)), "scaling")),
        bad_scaling.map(lambda c: ((lambda: mha.apply_rope(t(2, 5, 8), scaling=c)), "scaling")),
        st.one_of(bad_rope_dim.filter(lambda r: r != 0), st.just(6)).map(lambda r: (
            (lambda: mha.RotaryMultiHeadAttention(8, 2, rope_dim=r)), "rope_dim")),
        bad_scaling.map(lambda c: (
            (lambda: mha.RotaryMultiHeadAttention(8, 2, scaling=c)), "scaling")),
        st.just(((lambda: mha.RotaryMultiHeadAttention(8, 2, rope_dim=0, scaling=yarn)),
                 "scaling")),
        bad_temperature.map(lambda c: (
            (lambda: mha.RotaryMultiHeadAttention(8, 2, temperature_tuning=c)),
            "temperature_tuning")),
    )


@register("load_language_model / LanguageModel")
def _():
    lm = mha_book.load_language_model()
    n = lm.context_length
    return st.one_of(
        st.text(alphabet="0123456789@#$%^*~<>", min_size=1, max_size=5).map(
            lambda s: ((lambda: lm.encode("To be" + s)), "text")),
        st.sampled_from([torch.float32, torch.int32, torch.bool]).map(
            lambda d: ((lambda: lm(torch.zeros(1, 4, dtype=d))), "ids")),
        st.integers(n + 1, n + 40).map(
            lambda k: ((lambda: lm(torch.zeros(1, k, dtype=torch.long))), "ids")),
        st.sampled_from([-1, len(mha_book.language_model.VOCAB)]).map(
            lambda v: ((lambda: lm(torch.full((1, 3), v))), "ids")),
        st.sampled_from(["nope.pt", "no/such/dir.pt"]).map(
            lambda path: ((lambda: mha_book.load_language_model(path)), "path")),
    )


@register("blockwise_attention / online_softmax_step")
def _():
    q = t(2, 5, 8)

    def step(**bad):
        state = {"running_max": torch.full((2, 5), float("-inf")),
                 "running_sum": torch.zeros(2, 5), "acc": torch.zeros(2, 5, 8),
                 "scores": t(2, 5, 3), "value": t(2, 3, 8)}
        return mha.online_softmax_step(**{**state, **bad})

    return st.one_of(
        not_a_tensor((2, 5, 8)).map(lambda x: ((lambda: mha.blockwise_attention(x, q, q)),
                                               "query")),
        OTHER_FLOAT.map(lambda d: ((lambda: mha.blockwise_attention(
            q, t(2, 5, 8, dtype=d), q)), "key")),
        BAD_POSITIVE_INT.map(lambda b: ((lambda: mha.blockwise_attention(
            q, q, q, block_size=b)), "block_size")),
        NOT_A_BOOL.map(lambda c: ((lambda: mha.blockwise_attention(
            q, q, q, is_causal=c)), "is_causal")),
        BAD_SCALE.map(lambda s: ((lambda: mha.blockwise_attention(q, q, q, scale=s)), "scale")),
        st.sampled_from(["running_max", "running_sum", "acc", "scores", "value"]).flatmap(
            lambda name: not_a_tensor((2, 5)).map(
                lambda x: ((lambda: step(**{name: x})), name))),
        st.sampled_from([("running_max", (2, 4)), ("running_sum", (3,)),
                         ("acc", (2, 5, 7)), ("value", (2, 4, 8))]).map(
            lambda case: ((lambda: step(**{case[0]: t(*case[1])})), case[0])),
    )


@register("sdpa_backend / peak_memory")
def _():
    bad = st.sampled_from([None, 3, "sdpa", torch.ones(2)])
    return st.one_of(
        bad.map(lambda f: ((lambda: mha.sdpa_backend(f, t(2, 5, 8))), "fn")),
        bad.map(lambda f: ((lambda: mha.peak_memory(f, t(2, 5, 8))), "fn")),
        st.just(((lambda: mha.peak_memory(torch.relu, torch.ones(2, device=META))), "meta")),
    )


@register("head_view / save_html")
def _():
    w = torch.softmax(t(2, 3, 4, 4), -1)  # (B, H, L, S)
    tokens = list("abcd")
    scores = t(2, 3, 4, 4)
    bad_weights = st.sampled_from([
        scores, scores.abs() + 1, w[0, 0], w[None, None], w.long(), w > 0.1,
        w.masked_fill(w > 0.3, float("nan")), [], {}, (), [None], "weights",
        None, [w, w[..., :3]], {"a": [w, w]}])
    bad_tokens = st.one_of(
        st.sampled_from(["abcd", None, 4, torch.arange(4), np.arange(4)]),
        st.integers(0, 8).filter(lambda n: n != 4).map(lambda n: ["t"] * n))
    fig = mha.head_view(w, tokens)
    return st.one_of(
        bad_weights.map(lambda x: ((lambda: mha.head_view(x, tokens)),
                                   "weights")),
        bad_tokens.map(lambda x: ((lambda: mha.head_view(w, x)), "tokens")),
        st.one_of(st.integers(0, 6).filter(lambda n: n != 3).map(
            lambda n: ["k"] * n), st.just("abc")).map(
            lambda x: ((lambda: mha.head_view(w[..., :3], tokens,
                                              key_tokens=x)), "key_tokens")),
        st.one_of(NOT_AN_INT, st.integers(max_value=-1),
                  st.integers(min_value=2)).map(
            lambda b: ((lambda: mha.head_view(w, tokens, batch=b)), "batch")),
        st.one_of(st.integers(min_value=2), st.integers(max_value=-3),
                  st.sampled_from(["enc", [], [0, 0], 0.5, True])
                  ).map(lambda k: ((lambda: mha.head_view([w, w], tokens,
                                                          layer=k)), "layer")),
        st.sampled_from([3, ["t"], b"t"]).map(
            lambda x: ((lambda: mha.head_view(w, tokens, title=x)), "title")),
        st.sampled_from([None, "figure", 3, w]).map(
            lambda f: ((lambda: mha.save_html(f, "x.html")), "figure")),
        st.sampled_from([None, 3, "/no/such/dir/x.html"]).map(
            lambda p: ((lambda: mha.save_html(fig, p)), "path")),
    )

@register("linear_attention / delta_rule / delta_rule_step / gated_delta_rule")
def _():
    q, v = t(2, 2, 5, 4), t(2, 4, 5, 3)
    decay, beta = -torch.rand(2, 4, 5), torch.rand(2, 4, 5)

    def rule(fn=None, **bad):
        args = {"query": q, "key": q, "value": v, "decay": decay, "beta": beta, **bad}
        return mha.gated_delta_rule(**args)

    return st.one_of(
        st.sampled_from(["query", "key", "value", "decay", "beta"]).flatmap(
            lambda name: not_a_tensor((2, 2, 5, 4)).map(
                lambda x: ((lambda: rule(**{name: x})), name))),
        st.sampled_from([("query", (2, 5, 4)), ("key", (2, 2, 5, 3)), ("value", (2, 3, 5, 3)),
                         ("decay", (2, 4, 6)), ("beta", (2, 4, 5, 1)),
                         ("state", (2, 4, 4, 2))]).map(
            lambda case: ((lambda: rule(**{case[0]: t(*case[1])})), case[0])),
        st.just(((lambda: rule(decay=decay.abs())), "decay")),
        st.just(((lambda: rule(beta=beta + 1.5)), "beta")),
        BAD_POSITIVE_INT.map(lambda c: ((lambda: rule(chunk_size=c)), "chunk_size")),
        BAD_SCALE.map(lambda s: ((lambda: rule(scale=s)), "scale")),
        not_a_tensor((2, 2, 5, 4)).map(lambda x: ((lambda: mha.linear_attention(x, q, v)),
                                                  "query")),
        BAD_POSITIVE_INT.map(lambda c: ((lambda: mha.linear_attention(q, q, v, chunk_size=c)),
                                        "chunk_size")),
        st.just(((lambda: mha.delta_rule(q, q, v, beta[:, :1])), "beta")),
        st.just(((lambda: mha.delta_rule_step(t(2, 4, 4, 3), t(2, 4, 4), t(2, 4, 3),
                                              t(2, 4, 3), torch.rand(2, 4))), "key")),
    )


@register("GatedDeltaNet / KimiDeltaAttention / RecurrentState")
def _():
    gdn = mha.GatedDeltaNet(8, 2, d_head_k=4, d_head_v=4)
    kda = mha.KimiDeltaAttention(8, 2, 4)
    layers = st.sampled_from([gdn, kda])
    return st.one_of(
        layers.flatmap(lambda m: not_a_tensor((2, 5, 8)).map(lambda x: ((lambda: m(x)), "x"))),
        layers.map(lambda m: ((lambda: m(t(2, 5, 7))), "x")),
        layers.flatmap(lambda m: BAD_POSITIVE_INT.map(
            lambda c: ((lambda: m(t(2, 5, 8), chunk_size=c)), "chunk_size"))),
        layers.map(lambda m: ((lambda: m(t(2, 5, 8), state=(t(2, 3), t(2, 3)))), "state")),
        layers.map(lambda m: ((lambda: m(t(1, 5, 8), state=mha.RecurrentState(
            t(2, 3 * 8, 3), t(2, 2, 4, 4)))), "state.conv")),
        BAD_POSITIVE_INT.map(lambda h: ((lambda: mha.GatedDeltaNet(8, 2, d_head_k=h,
                                                                   d_head_v=4)), "d_head_k")),
        BAD_POSITIVE_INT.map(lambda h: ((lambda: mha.KimiDeltaAttention(8, 2, 4, conv_size=h)),
                                        "conv_size")),
    )


@register("flex_attention / flex_available")
def _():
    from mha import flex

    q, kv = t(2, 4, 5, 8), t(2, 2, 5, 8)

    def attend(**bad):
        args = {"q": q, "k": kv, "v": kv, **bad}
        return flex.flex_attention(args.pop("q"), args.pop("k"), args.pop("v"), **args)

    return st.one_of(
        st.sampled_from(["q", "k", "v"]).flatmap(lambda name: not_a_tensor((2, 4, 5, 8)).map(
            lambda x: ((lambda: attend(**{name: x})), name))),
        st.sampled_from(["q", "k", "v"]).flatmap(lambda name: INT_DTYPES.map(
            lambda d: ((lambda: attend(**{name: t(2, 2, 5, 8, dtype=d)})), name))),
        st.sampled_from([("q", (4, 5, 8)), ("k", (2, 3, 5, 8)), ("k", (2, 2, 5, 6)),
                         ("k", (1, 2, 5, 8)), ("v", (2, 2, 4, 8))]).map(
            lambda case: ((lambda: attend(**{case[0]: t(*case[1])})), case[0])),
        OTHER_FLOAT.map(lambda d: ((lambda: attend(k=t(2, 2, 5, 8, dtype=d))), "k")),
        st.sampled_from(["mask_mod", "score_mod"]).flatmap(lambda name: st.sampled_from(
            [3, "causal", torch.ones(2)]).map(lambda m: ((lambda: attend(**{name: m})), name))),
        st.sampled_from([t(3), t(4, 1), t(4, dtype=torch.long), [0.0] * 4]).map(
            lambda x: ((lambda: attend(sinks=x)), "sinks")),
        BAD_SCALE.map(lambda x: ((lambda: attend(scale=x)), "scale")),
        BAD_POSITIVE_INT.map(lambda b: ((lambda: attend(block_size=b)), "block_size")),
        NOT_A_BOOL.map(lambda c: ((lambda: attend(compile=c)), "compile")),
        st.just(((lambda: attend(sinks=t(4), compile=True)), "sinks")),
        st.just(((lambda: attend(mask_mod=flex.document_mask(
            torch.zeros(5, dtype=torch.long, device=META)))), "document_ids")),
    )


@register("flex masks: causal / sliding_window / document_mask / and_masks / dense_mask")
def _():
    from mha import flex

    return st.one_of(
        st.one_of(NOT_AN_INT, st.integers(max_value=-1)).map(
            lambda o: ((lambda: flex.causal(offset=o)), "offset")),
        BAD_POSITIVE_INT.map(lambda w: ((lambda: flex.sliding_window(w)), "window")),
        st.sampled_from([t(5), t(5, dtype=torch.bool), t(2, 2, 5, dtype=torch.long),
                         torch.zeros(0, dtype=torch.long), "0011"]).map(
            lambda ids: ((lambda: flex.document_mask(ids)), "document_ids")),
        NOT_A_BOOL.map(lambda c: ((lambda: flex.document_mask(
            torch.zeros(5, dtype=torch.long), causal=c)), "causal")),
        st.sampled_from([(), (flex.causal(), 3), ("causal",)]).map(
            lambda mods: ((lambda: flex.and_masks(*mods)), "mask_mods")),
        st.sampled_from(["num_queries", "num_keys", "batch_size", "num_heads"]).flatmap(
            lambda name: BAD_POSITIVE_INT.map(lambda n: ((lambda: flex.dense_mask(
                flex.causal(), **{"num_queries": 4, "num_keys": 4, name: n})), name))),
        st.just(((lambda: flex.dense_mask(None, 4, 4)), "mask_mod")),
    )


@register("flex scores: soft_cap / alibi / alibi_slopes")
def _():
    from mha import flex

    return st.one_of(
        st.one_of(st.sampled_from([0, -1.5, float("nan"), float("inf"), "50", None])).map(
            lambda c: ((lambda: flex.soft_cap(c)), "cap")),
        BAD_POSITIVE_INT.map(lambda h: ((lambda: flex.alibi(h)), "num_heads")),
        BAD_POSITIVE_INT.map(lambda h: ((lambda: flex.alibi_slopes(h)), "num_heads")),
        st.sampled_from([3, "no-such-device"]).map(
            lambda d: ((lambda: flex.alibi(4, device=d)), "device")),
    )


@register("paged: PagedKVCache / PagedSequence / paged_attention")
def _():
    from mha.paged import PagedKVCache, paged_attention

    def pool(**bad):
        args = {"num_blocks": 4, "block_size": 2, "num_kv_heads": 2, "d_head": 4, **bad}
        return PagedKVCache(args.pop("num_blocks"), args.pop("block_size"),
                            args.pop("num_kv_heads"), args.pop("d_head"), **args)

    def filled():
        cache = pool()
        cache.append("a", t(2, 3, 4), t(2, 3, 4))
        return cache

    def append(seq_id="a", **bad):
        args = {"k": t(2, 1, 4), "v": t(2, 1, 4), **bad}
        return pool().append(seq_id, args["k"], args["v"])

    def attend(**bad):
        args = {"q": t(1, 4, 1, 4), "cache": filled(), "seq_ids": ["a"], **bad}
        return paged_attention(args.pop("q"), args.pop("cache"), args.pop("seq_ids"), **args)

    return st.one_of(
        st.sampled_from(["num_blocks", "block_size", "num_kv_heads", "d_head"]).flatmap(
            lambda name: BAD_POSITIVE_INT.map(lambda n: ((lambda: pool(**{name: n})), name))),
        st.sampled_from([torch.int64, torch.bool, "float32", 3]).map(
            lambda d: ((lambda: pool(dtype=d)), "dtype")),
        st.sampled_from([3, "no-such-device"]).map(lambda d: ((lambda: pool(device=d)),
                                                               "device")),
        st.sampled_from([1.5, None, True, torch.tensor(0), ("a",)]).map(
            lambda s: ((lambda: append(seq_id=s)), "seq_id")),
        st.sampled_from(["k", "v"]).flatmap(lambda name: st.one_of(
            not_a_tensor((2, 1, 4)).map(lambda x: ((lambda: append(**{name: x})), name)),
            st.sampled_from([(1, 2, 1, 4), (3, 1, 4), (2, 1, 5), (2, 4)]).map(
                lambda shape: ((lambda: append(**{name: t(*shape)})), name)),
            OTHER_FLOAT.map(lambda d: ((lambda: append(**{name: t(2, 1, 4, dtype=d)})), name)),
            st.just(((lambda: append(**{name: t(2, 1, 4, device=META)})), name)),
            st.just(((lambda: append(**{name: t(2, 1, 4).requires_grad_()})), name)))),
        st.just(((lambda: append(v=t(2, 2, 4))), "v")),
        st.sampled_from(["b", 0]).flatmap(lambda s: st.sampled_from(["free", "gather"]).map(
            lambda m: ((lambda: getattr(filled(), m)(s)), "seq_id"))),
        st.sampled_from([(2, 2, 1, 4), (1, 2, 4, 1, 4)]).map(lambda shape: (
            (lambda: filled().sequence("a").append(t(*shape), t(*shape))), "k")),
        st.sampled_from([None, "cache", mha.KVCache()]).map(
            lambda c: ((lambda: attend(cache=c)), "cache")),
        st.one_of(not_a_tensor((1, 4, 1, 4)), st.sampled_from(
            [t(4, 1, 4), t(1, 3, 1, 4), t(1, 4, 1, 5), t(1, 4, 1, 4, dtype=torch.float64),
             t(1, 4, 1, 4, device=META), t(1, 4, 1, 4, dtype=torch.long)])).map(
            lambda q: ((lambda: attend(q=q)), "q")),
        st.sampled_from(["a", 0, None, ["a", "a"], []]).map(
            lambda ids: ((lambda: attend(seq_ids=ids)), "seq_ids")),
        st.just(((lambda: attend(seq_ids=["b"])), "seq_id")),
        st.just(((lambda: attend(q=t(1, 4, 4, 4))), "seq_ids")),
        BAD_SCALE.map(lambda x: ((lambda: attend(scale=x)), "scale")),
    )


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_wrong_call_names_the_argument(name):
    @settings(max_examples=40)
    @given(FAMILIES[name])
    def run(case):
        call, argument = case
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        assert argument in str(info.value), (name, str(info.value))
        WRONG_CALLS[0] += 1

    run()


def test_the_suite_covers_the_public_api():
    """Every public function and class appears in some family (by name)."""
    covered = " ".join(FAMILIES)
    names = {"sdpa": "scaled_dot_product_attention"}
    for public in mha.__all__:
        if public in ("__version__", "device"):
            continue
        short = {v: k for k, v in names.items()}.get(public, public)
        assert short in covered, f"no wrong calls for {public}"
    assert len(FAMILIES) >= 40


def teardown_module():
    print(f"\ntest_bad_input: {WRONG_CALLS[0]} wrong calls generated in this process, "
          f"{len(FAMILIES)} families")
