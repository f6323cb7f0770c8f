"""``mha.distributed.tensor_parallel`` with 2 and 4 gloo processes: on every rank the split layer
gives the one-device layer's output (float32, 1e-5) for MHA, GQA (also with fewer key/value
heads than devices: copies), cross-attention, a mask, and the rotary layer with every option;
each rank holds the heads ``layout`` says, as the rows/columns of the full weights; a forward
pass sends one all-reduce of B*L*d_model numbers; the gradients are the matching slices of the
one-device gradients; a cache and need_weights work on the rank's heads; bad layouts raise a
ValueError on every rank. The unsharded layer still projects with one packed matmul.

The rank functions are at the top level of this module: the spawned processes import them
from it. Each launch costs seconds, so one launch a world size, shared with the other
distributed test files (``distributed_shared``), runs every check.
"""

import copy
import functools
import multiprocessing
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from distributed_shared import shared_launch
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.overrides import TorchFunctionMode

import mha
import mha.distributed as md
from mha.distributed import layout

B, L, D = 2, 6, 32  # batch, length, d_model (d_head 4 with 8 heads)
ATOL = 1e-5

# name -> (layer class, constructor arguments, forward arguments)
CASES = {
    "mha, bias, causal": (mha.MultiHeadAttention, {"num_heads": 8, "bias": True},
                          {"is_causal": True}),
    "gqa 8/2, causal": (mha.MultiHeadAttention, {"num_heads": 8, "num_kv_heads": 2},
                        {"is_causal": True}),
    "gqa 8/2, mask": (mha.MultiHeadAttention, {"num_heads": 8, "num_kv_heads": 2},
                      {"mask": "mask"}),
    "gqa 8/4, cross-attention": (mha.MultiHeadAttention,
                                 {"num_heads": 8, "num_kv_heads": 4, "kdim": 12, "vdim": 20},
                                 {"key": "memory", "value": "values", "mask": "mask"}),
    "rotary, every option": (mha.RotaryMultiHeadAttention,
                             {"num_heads": 8, "num_kv_heads": 2, "bias": True, "gate": True,
                              "qk_norm": True, "sinks": True, "window": 4},
                             {}),
    "relative, gqa 8/2, causal": (mha.RelativeMultiHeadAttention,
                                  {"num_heads": 8, "num_kv_heads": 2,
                                   "max_relative_position": 3}, {"is_causal": True}),
}
# parameters every rank holds whole: each rank's gradient is its heads' part of the sum
WHOLE = ("q_norm.weight", "k_norm.weight", "relative_key.weight", "relative_value.weight")


def comm_recorder():
    """A ``CommDebugMode`` (which counts the collectives) that also records the number of
    elements of every tensor an all-reduce sends (``.sizes``)."""
    return _comm_recorder_class()()


@functools.cache
def _comm_recorder_class():
    """Made when first needed: the debug module takes most of a second to import, and every
    process that runs a rank of these tests, or collects them, imports this module."""
    try:
        from torch.distributed.tensor.debug import CommDebugMode
    except ImportError:  # torch < 2.5
        from torch.distributed._tensor.debug import CommDebugMode

    class CommRecorder(CommDebugMode):
        def __init__(self):
            super().__init__()
            self.sizes = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            plain = not any(t.__name__ == "DTensor" for t in types)
            if (plain and "all_reduce" in str(func) and args
                    and isinstance(args[0], torch.Tensor)):
                self.sizes.append(args[0].numel())
            return super().__torch_dispatch__(func, types, args, kwargs)

    return CommRecorder


def rows(heads, d_head):
    """The feature rows of the given heads: head h owns h*Dh .. (h+1)*Dh - 1."""
    return torch.cat([torch.arange(h * d_head, (h + 1) * d_head) for h in heads])


def local(tensor):
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def inputs(device):
    torch.manual_seed(1)
    mask = torch.rand(B, 1, L, L, device=device) > 0.3
    mask |= torch.eye(L, dtype=torch.bool, device=device)  # every query sees a key
    return {"x": torch.randn(B, L, D, device=device), "mask": mask,
            "memory": torch.randn(B, L, 12, device=device),
            "values": torch.randn(B, L, 20, device=device),
            "target": torch.randn(B, L, D, device=device)}


def check_case(rank, world, name, device):
    """One case on this rank: the split layer against the one-device layer."""
    cls, args, forward = CASES[name]
    data = inputs(device)
    kw = {k: data[v] if isinstance(v, str) else v for k, v in forward.items()}
    torch.manual_seed(0)
    full = cls(D, **args).to(device)
    if full.sinks is not None:
        with torch.no_grad():
            full.sinks.normal_()  # zeros by default: make them matter
    split = copy.deepcopy(full)
    x_full, x = (data["x"].clone().requires_grad_() for _ in range(2))
    out_full, _ = full(x_full, **kw)
    (out_full * data["target"]).sum().backward()

    mesh = init_device_mesh(device.type, (world,))
    assert md.tensor_parallel(split, mesh) is split
    with comm_recorder() as comm:
        out, _ = split(x, **kw)
    counts = {str(k): v for k, v in comm.get_comm_counts().items()}
    with comm_recorder() as backward_comm, warnings.catch_warnings():
        # the recorder's module hooks, when the input needs no gradient
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        (out * data["target"]).sum().backward()

    H, Hkv, Dh = full.num_heads, full.num_kv_heads, full.d_head
    heads = layout.heads_of_rank(rank, world, H)
    kv = layout.kv_heads_of_rank(rank, world, H, Hkv)
    q_rows, kv_rows = rows(heads, Dh).to(device), rows(kv, Dh).to(device)
    sinks = torch.tensor(heads, device=device)

    def out_rows(t):  # the rows of the rank's query heads (output features)
        return t[q_rows]

    def kv_out_rows(t):
        return t[kv_rows]

    def in_columns(t):  # W_o's columns that read the rank's heads
        return t[:, q_rows]

    # (name, the split layer's parameter, the one-device one, the rank's part of it)
    pairs = [("W_q", split.W_q.weight, full.W_q.weight, out_rows),
             ("W_k", split.W_k.weight, full.W_k.weight, kv_out_rows),
             ("W_v", split.W_v.weight, full.W_v.weight, kv_out_rows),
             ("W_o", split.W_o.weight, full.W_o.weight, in_columns)]
    if full.W_q.bias is not None:
        pairs += [("W_q bias", split.W_q.bias, full.W_q.bias, out_rows),
                  ("W_k bias", split.W_k.bias, full.W_k.bias, kv_out_rows),
                  ("W_o bias", split.W_o.bias, full.W_o.bias, lambda t: t)]
    if full.gate:
        pairs.append(("W_g", split.W_g.weight, full.W_g.weight, out_rows))
    if full.sinks is not None:
        pairs.append(("sinks", split.sinks, full.sinks, lambda t: t[sinks]))
    weight_errors, grad_errors = {}, {}
    for what, mine, theirs, part in pairs:
        mine_local, want = local(mine), part(theirs)
        assert mine_local.shape == want.shape, (what, mine_local.shape, want.shape)
        weight_errors[what] = (mine_local - want).abs().max().item()
        grad = local(mine.grad)
        if what.startswith(("W_k", "W_v")):  # copies of a key/value head: gradients add up
            grad = sum_over_copies(grad, rank, world, H, Hkv)
        grad_errors[what] = (grad - part(theirs.grad)).abs().max().item()
    full_params, split_params = dict(full.named_parameters()), dict(split.named_parameters())
    for what in WHOLE:
        if what in full_params:
            grad = split_params[what].grad.clone()
            dist.all_reduce(grad)
            grad_errors[f"{what} (summed)"] = (grad - full_params[what].grad).abs().max().item()
    grad_errors["input"] = (x.grad - x_full.grad).abs().max().item()
    return {"error": (out - out_full).abs().max().item(), "counts": counts,
            "backward counts": {str(k): v for k, v in backward_comm.get_comm_counts().items()},
            "sizes": comm.sizes, "local heads": (split.num_heads, split.num_kv_heads),
            "expected heads": (len(heads), len(kv)),
            "globals": (split.tp_world, split.tp_rank, split.tp_num_heads,
                        split.tp_num_kv_heads),
            "weight errors": weight_errors, "grad errors": grad_errors}


def sum_over_copies(grad, rank, world, H, Hkv):
    """The gradient of this rank's key/value rows summed over the ranks that hold the same
    key/value head (one rank each unless there are fewer key/value heads than devices)."""
    every = [torch.empty_like(grad) for _ in range(world)]
    dist.all_gather(every, grad.contiguous())
    mine = layout.kv_heads_of_rank(rank, world, H, Hkv)
    return sum(g for r, g in enumerate(every) if layout.kv_heads_of_rank(r, world, H, Hkv) == mine)


def check_cache_and_weights(rank, world, device):
    """Decoding with a KVCache (4 tokens, then 2) and need_weights, on the rank's heads."""
    data = inputs(device)
    x = data["x"]
    torch.manual_seed(0)
    full = mha.RotaryMultiHeadAttention(D, 8, num_kv_heads=2).to(device)
    split = md.tensor_parallel(copy.deepcopy(full), init_device_mesh(device.type, (world,)))
    errors = {}
    caches = (mha.KVCache(), mha.KVCache())
    for part in (slice(0, 4), slice(4, 6)):
        want, _ = full(x[:, part], is_causal=True, cache=caches[0])
        got, _ = split(x[:, part], is_causal=True, cache=caches[1])
        errors[f"cache {part.start}:{part.stop}"] = (got - want).abs().max().item()
    kv = layout.kv_heads_of_rank(rank, world, 8, 2)
    assert caches[1].keys.shape == (B, len(kv), L, full.d_head), caches[1].keys.shape
    out_full, want = full(x, is_causal=True, need_weights=True)
    out, got = split(x, is_causal=True, need_weights=True)
    heads = torch.tensor(layout.heads_of_rank(rank, world, 8), device=device)
    errors["need_weights"] = (got - want[:, heads]).abs().max().item()
    errors["need_weights output"] = (out - out_full).abs().max().item()
    return errors


def check_refusals(rank, world):
    """Bad layouts (every rank gives the same ValueError, the layer untouched), a second split,
    prune_heads on a split layer, a layer on another device than the mesh."""
    mesh = init_device_mesh("cpu", (world,))
    messages = {}
    bad = {"heads": (60, world + 1, None), "kv heads": (24, 12, 3)}
    for what, (d_model, heads, kv_heads) in bad.items():
        layer = mha.MultiHeadAttention(d_model, heads, num_kv_heads=kv_heads)
        try:
            md.tensor_parallel(layer, mesh)
        except ValueError as error:
            messages[what] = str(error)
        assert layer.tp_world is None and layer.num_heads == heads  # nothing changed
        assert type(layer.W_q.weight) is nn.Parameter
    layer = md.tensor_parallel(mha.MultiHeadAttention(D, 8), mesh)
    for what, call in (("twice", lambda: md.tensor_parallel(layer, mesh)),
                       ("prune", lambda: layer.prune_heads([0]))):
        try:
            call()
        except ValueError as error:
            messages[what] = str(error)
    return messages


def check_many(rank, world, device="cpu"):
    device = torch.device(device, rank) if device == "cuda" else torch.device(device)
    results = {name: check_case(rank, world, name, device) for name in CASES}
    results["cache and weights"] = check_cache_and_weights(rank, world, device)
    if device.type == "cpu":
        results["refusals"] = check_refusals(rank, world)
    return results


def split_badly(rank, world):
    """An uncaught ValueError on every rank: 12 query heads, 3 key/value heads."""
    md.tensor_parallel(mha.MultiHeadAttention(24, 12, num_kv_heads=3),
                       init_device_mesh("cpu", (world,)))


# --- the tests -------------------------------------------------------------------------------


def assert_all_match(results, world):
    assert len(results) == world
    for rank, result in enumerate(results):
        for name in CASES:
            r = result[name]
            where = f"rank {rank} of {world}, {name}"
            assert r["error"] < ATOL, f"{where}: output differs by {r['error']}"
            assert r["local heads"] == r["expected heads"], where
            H, Hkv = CASES[name][1]["num_heads"], CASES[name][1].get("num_kv_heads", 8)
            assert r["globals"] == (world, rank, H, Hkv), where
            for what, error in r["weight errors"].items():
                assert error == 0, f"{where}: {what} is not the full weight's slice"
            for what, error in r["grad errors"].items():
                assert error < ATOL, f"{where}: gradient of {what} differs by {error}"
            # exactly one collective in the forward pass: the all-reduce of (B, L, D)
            assert sum(r["counts"].values()) == 1, f"{where}: {r['counts']}"
            assert "all_reduce" in next(iter(r["counts"])), f"{where}: {r['counts']}"
            assert r["sizes"] == [B * L * D], f"{where}: all-reduced {r['sizes']}"
            # backward: the input's gradient, all-reduced once for each projection that
            # reads the input x (W_q, W_k, W_v and W_g; W_q alone in cross-attention)
            readers = 1 if "key" in CASES[name][2] else 3 + CASES[name][1].get("gate", False)
            backward = r["backward counts"]
            assert sum(backward.values()) == readers, f"{where}: {backward}"
            assert all("all_reduce" in k for k in backward), f"{where}: {backward}"
        for what, error in result["cache and weights"].items():
            assert error < ATOL, f"rank {rank}: {what} differs by {error}"


@pytest.mark.parametrize("world", [2, 4])
def test_split_layer_equals_one_device(world, tmp_path_factory):
    # the shared launch's ranks ran check_many(rank, world) (and the other files' checks)
    results = [r["tensor"] for r in shared_launch(world, tmp_path_factory)["results"]]
    assert_all_match(results, world)
    refusals = [r["refusals"] for r in results]
    assert all(m == refusals[0] for m in refusals), refusals  # every rank says the same
    messages = refusals[0]
    assert messages["heads"] == (f"num_heads ({world + 1}) must be divisible by the number of "
                                 f"devices ({world})")
    assert messages["kv heads"].startswith(f"num_kv_heads (3) must be divisible by the number "
                                           f"of devices ({world}), or divide it")
    assert "already split over" in messages["twice"]
    assert "prune_heads cannot change a layer" in messages["prune"]


def test_fewer_kv_heads_than_devices_are_copied():
    """8 query heads, 2 key/value heads, 4 devices: ranks 0, 1 hold head 0, ranks 2, 3 head 1."""
    assert [layout.kv_heads_of_rank(r, 4, 8, 2) for r in range(4)] == [[0], [0], [1], [1]]
    # the rewrite alone (before any sharding) computes the same function
    from mha.distributed.tensor import _copy_kv_heads
    layer = mha.MultiHeadAttention(D, 8, num_kv_heads=2)
    x = torch.randn(B, L, D)
    want, _ = layer(x, is_causal=True)
    _copy_kv_heads(layer, 4)
    assert layer.num_kv_heads == 4 and layer.W_k.weight.shape == (4 * 4, D)
    got, _ = layer(x, is_causal=True)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=0)


def test_an_uncaught_bad_layout_is_a_value_error_in_the_caller():
    with pytest.raises(ValueError, match=r"rank 0 of 2 raised ValueError: num_kv_heads \(3\) "
                                         r"must be divisible by the number of devices \(2\)"):
        md.launch(split_badly, 2, backend="gloo")
    assert not multiprocessing.active_children()


def test_refuses_what_it_cannot_split():
    with pytest.raises(TypeError, match="layer must be a mha.MultiHeadAttention"):
        md.tensor_parallel(nn.Linear(4, 4), None)
    with pytest.raises(TypeError, match="mesh must be a 1-D DeviceMesh"):
        md.tensor_parallel(mha.MultiHeadAttention(D, 8), None)

    class OwnProjection(mha.MultiHeadAttention):
        def _project(self, query, key, value):
            return super()._project(query, key, value)

    with pytest.raises(TypeError, match="projects in its own way"):
        md.tensor_parallel(OwnProjection(D, 8), None)


class CountLinear(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += func is F.linear
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("options", [{}, {"gate": True, "qk_norm": True}])
def test_the_unsplit_layer_still_projects_in_one_packed_matmul(options):
    layer = mha.RotaryMultiHeadAttention(D, 8, num_kv_heads=2, **options)
    assert layer.tp_world is None
    with CountLinear() as count:
        layer(torch.randn(B, L, D))
    assert count.calls == 2  # q, k, v (and the gate) together; then W_o


GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 2, reason=f"needs 2 CUDA GPUs (NCCL); found {GPUS}")
def test_split_layer_equals_one_device_with_nccl():
    results = md.launch(check_many, 2, "cuda", backend="nccl")
    assert_all_match(results, 2)
