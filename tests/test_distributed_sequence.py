"""Sequence parallelism on 2 and 4 gloo processes: ring attention (contiguous and zigzag) and
DeepSpeed-Ulysses equal the one-device attention on every rank's rows, ``traffic()`` measures
exactly the bytes of ``layout.sent_bytes`` and the causal work of ``layout.causal_blocks``, and
bad input raises on every rank (none waits for another). One ``launch`` per world size, shared
with the other distributed test files (``distributed_shared``), runs many checks: each launch
costs seconds.

The workers are top-level functions of this module, which the spawned processes import (pytest
puts tests/ on sys.path, and the children inherit it).
"""

import multiprocessing

import pytest
import torch
import torch.distributed as dist
from distributed_shared import shared_launch

import mha
import mha.distributed as md
from mha.distributed import layout

B, PER_RANK, D_HEAD = 2, 4, 8  # batch, positions a rank holds, head size
SCHEME = {"contiguous": "ring", "zigzag": "zigzag"}


def _cases(world):
    """(scheme, layout, is_causal, H, Hkv, dtype) for one world size."""
    cases = []
    for lay in ("contiguous", "zigzag"):
        for causal in (False, True):
            for heads in ((4, 4), (4, 2), (4, 1)):  # MHA, GQA, MQA
                cases.append((SCHEME[lay], lay, causal, *heads, torch.float32))
        cases.append((SCHEME[lay], lay, True, 4, 2, torch.bfloat16))
    for causal in (False, True):  # Hkv < world: kv heads copied (Hkv 1 with 2 ranks, 2 and 1 with 4)
        for heads in ((4, 4), (4, 2), (4, 1), (8, 8)):
            cases.append(("ulysses", "contiguous", causal, *heads, torch.float32))
    cases.append(("ulysses", "contiguous", True, 8, 2, torch.bfloat16))
    return cases


def _inputs(world, H, Hkv, dtype, seed=0):
    """The whole sequence, the same on every rank (seeded): q (B, H, L, Dh), k, v (B, Hkv, L, Dh)."""
    g = torch.Generator().manual_seed(seed)
    L = PER_RANK * world
    q = torch.randn(B, H, L, D_HEAD, generator=g)
    k = torch.randn(B, Hkv, L, D_HEAD, generator=g)
    v = torch.randn(B, Hkv, L, D_HEAD, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def _reference(q, k, v, causal):
    """One-device attention (mha's explicit SDPA, float32) on the whole sequence."""
    q, k, v = q.float(), k.float(), v.float()
    G = q.size(1) // k.size(1)
    k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)  # (B, H, L, Dh)
    mask = mha.causal_mask(q.size(2), device=q.device) if causal else None
    return mha.scaled_dot_product_attention(q, k, v, mask)[0]


def _run(scheme, lay, causal, q, k, v):
    if scheme == "ulysses":
        return md.ulysses_attention(q, k, v, is_causal=causal)
    return md.ring_attention(q, k, v, is_causal=causal, layout=lay)


def check_many(rank, world):
    """Every case of ``_cases`` on this rank: its error against its rows of the reference and
    what ``traffic()`` counted."""
    records = []
    for scheme, lay, causal, H, Hkv, dtype in _cases(world):
        q, k, v = _inputs(world, H, Hkv, dtype)
        rows = layout.positions_of_rank(rank, world, q.size(2), lay)
        with md.traffic() as t:
            out = _run(scheme, lay, causal, q[:, :, rows], k[:, :, rows], v[:, :, rows])
        reference = _reference(q, k, v, causal)[:, :, rows]
        records.append({
            "case": (scheme, lay, causal, H, Hkv, str(dtype)), "rank": rank, "H": H, "Hkv": Hkv,
            "dtype": dtype, "scheme": scheme, "layout": lay, "causal": causal,
            "shape": tuple(out.shape), "out_dtype": out.dtype,
            "error": (out.float() - reference).abs().max().item(), "sent": t.sent_bytes,
            "calls": t.calls, "computed": t.blocks_computed, "skipped": t.blocks_skipped})
    q, k, v = _inputs(world, 4, 2, torch.float32)
    rows = layout.positions_of_rank(rank, world, q.size(2), "zigzag")
    with md.traffic() as outer:  # nested blocks: the outer one counts both calls
        with md.traffic() as inner:
            md.ring_attention(q[:, :, rows], k[:, :, rows], v[:, :, rows], layout="zigzag",
                              is_causal=True, scale=0.5)
        out = md.ring_attention(q[:, :, rows], k[:, :, rows], v[:, :, rows], layout="zigzag",
                                is_causal=True, scale=0.5)
    G = q.size(1) // k.size(1)
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(G, 1), v.repeat_interleave(G, 1), is_causal=True, scale=0.5)
    nested = {"inner": (inner.sent_bytes, inner.blocks_computed),
              "outer": (outer.sent_bytes, outer.blocks_computed),
              "scale_error": (out - expected[:, :, rows]).abs().max().item()}
    nested["subgroup_error"] = check_subgroup(rank, world)
    return records, nested, check_errors(rank, world)


def check_subgroup(rank, world):
    """Two rings of world / 2 ranks each (``group=``): ranks of a group are not global ranks.
    Returns the largest error of ring (zigzag) and Ulysses, causal, on this rank's rows."""
    half = world // 2
    groups = [dist.new_group(list(range(s, s + half))) for s in (0, half)]  # every rank makes both
    group, local = groups[rank // half], rank % half
    q, k, v = _inputs(half, 4, 2, torch.float32, seed=rank // half)
    reference = _reference(q, k, v, True)
    errors = []
    for lay, fn in (("zigzag", md.ring_attention), ("contiguous", md.ulysses_attention)):
        rows = layout.positions_of_rank(local, half, q.size(2), lay)
        extra = {"layout": lay} if fn is md.ring_attention else {}
        out = fn(q[:, :, rows], k[:, :, rows], v[:, :, rows], is_causal=True, group=group, **extra)
        errors.append((out - reference[:, :, rows]).abs().max().item())
    return max(errors)


def _raised(fn):
    """(exception type name, message) of what ``fn()`` raised, or None."""
    try:
        fn()
    except (TypeError, ValueError) as error:
        return type(error).__name__, str(error)
    return None


def check_errors(rank, world):
    """Bad input, on every rank: what each call raised here ({label: (type, message)})."""
    def block(H, Hkv, per=PER_RANK, dtype=torch.float32):
        return (torch.randn(B, H, per, D_HEAD, dtype=dtype),
                torch.randn(B, Hkv, per, D_HEAD, dtype=dtype),
                torch.randn(B, Hkv, per, D_HEAD, dtype=dtype))

    unequal = block(4, 4, per=PER_RANK + 2 * (rank == 0))  # rank 0 holds a longer block
    q, k, v = block(4, 4)
    bad_heads = 3 if world == 2 else 6  # not divisible by the number of ranks
    bad_kv = 3 if world == 2 else 6  # neither divisible by the ranks nor dividing them
    k_wrong = k.double() if rank == world - 1 else k  # one rank's key has the wrong dtype
    raised = {
        "ring_unequal": _raised(lambda: md.ring_attention(*unequal)),
        "ulysses_unequal": _raised(lambda: md.ulysses_attention(*unequal)),
        "ulysses_heads": _raised(lambda: md.ulysses_attention(*block(bad_heads, bad_heads))),
        "ulysses_kv_heads": _raised(lambda: md.ulysses_attention(*block(2 * bad_kv, bad_kv))),
        "zigzag_odd": _raised(lambda: md.ring_attention(*block(4, 4, per=3), layout="zigzag")),
        "gqa_heads": _raised(lambda: md.ring_attention(*block(4, 3))),
        "one_rank_dtype": _raised(lambda: md.ring_attention(q, k_wrong, v)),
        "layout_name": _raised(lambda: md.ring_attention(q, k, v, layout="spiral")),
    }
    # after all that, the ranks are still in step: a good call still works
    raised["still_works"] = _raised(lambda: md.ring_attention(q, k, v, is_causal=True))
    return raised


@pytest.fixture(scope="module", params=[2, 4], ids=["2 ranks", "4 ranks"])
def world_results(request, tmp_path_factory):
    world = request.param
    # the shared launch's ranks ran check_many(rank, world) (and the other files' checks)
    return world, [r["sequence"] for r in shared_launch(world, tmp_path_factory)["results"]]


def test_every_rank_gets_its_rows_of_the_full_attention(world_results):
    world, results = world_results
    for rank, (records, _, _) in enumerate(results):
        for r in records:
            assert r["rank"] == rank
            assert r["shape"] == (B, r["H"], PER_RANK, D_HEAD) and r["out_dtype"] == r["dtype"]
            atol = 1e-5 if r["dtype"] == torch.float32 else 2e-2
            assert r["error"] <= atol, (world, r["case"], rank, r["error"])


def test_traffic_counts_the_bytes_of_layout_sent_bytes(world_results):
    world, results = world_results
    for rank, (records, _, _) in enumerate(results):
        for r in records:
            size = r["dtype"].itemsize
            expected = layout.sent_bytes(
                r["scheme"], world=world, seq_len=PER_RANK * world, d_model=r["H"] * D_HEAD,
                num_heads=r["H"], num_kv_heads=r["Hkv"], batch=B, dtype_bytes=size)
            assert r["sent"] == expected, (world, r["case"], rank, r["sent"], expected)
            assert sum(n for _, n in r["calls"]) == r["sent"]
            if r["scheme"] == "ulysses":  # q, k, v in, output back
                assert [name for name, _ in r["calls"]] == ["all_to_all"] * 4
            else:  # the rank's key/value block (B, Hkv, Lr, Dh) x 2, passed on world - 1 times
                block = 2 * B * r["Hkv"] * PER_RANK * D_HEAD * size
                assert r["calls"] == [("send", block)] * (world - 1)


def test_gqa_sends_less(world_results):
    world, results = world_results
    sent = {r["case"]: r["sent"] for r in results[0][0]}
    f32 = str(torch.float32)
    for scheme, lay in (("ring", "contiguous"), ("zigzag", "zigzag")):
        assert sent[(scheme, lay, False, 4, 2, f32)] * 2 == sent[(scheme, lay, False, 4, 4, f32)]
    ulysses = {Hkv: sent[("ulysses", "contiguous", False, 4, Hkv, f32)] for Hkv in (4, 2, 1)}
    if world == 2:
        assert ulysses[1] == ulysses[2] < ulysses[4]  # 1 kv head copied up to 2, one a rank
    else:
        assert ulysses[1] == ulysses[2] == ulysses[4]  # kv heads copied up to 4


def test_causal_work_agrees_with_layout_causal_blocks(world_results):
    world, results = world_results
    computed = {"contiguous": [], "zigzag": []}
    for rank, (records, _, _) in enumerate(results):
        for r in records:
            if r["scheme"] == "ulysses":
                assert (r["computed"], r["skipped"]) == (0, 0)
                continue
            # every key/value block brings 2 x 2 (query chunk, key chunk) pairs
            assert r["computed"] + r["skipped"] == 4 * world
            if r["causal"]:
                assert r["computed"] == layout.causal_blocks(rank, world, r["layout"])
                computed[r["layout"]].append(r["computed"])
            else:
                assert r["skipped"] == 0
    assert len(set(computed["zigzag"])) == 1  # balanced
    assert max(computed["contiguous"]) == 4 * world - 1 and min(computed["contiguous"]) == 3


def test_nested_traffic_blocks_scale_and_subgroups(world_results):
    world, results = world_results
    for _, nested, _ in results:
        sent, computed = nested["inner"]
        assert nested["outer"] == (2 * sent, 2 * computed)
        assert nested["scale_error"] <= 1e-5
        assert nested["subgroup_error"] <= 1e-5


def test_bad_input_raises_on_every_rank(world_results):
    world, results = world_results
    raised = [errors for _, _, errors in results]
    for rank, errors in enumerate(raised):
        assert errors["still_works"] is None
        for label in ("ring_unequal", "ulysses_unequal"):
            kind, message = errors[label]
            assert kind == "ValueError" and "block length Lr" in message, message
            assert f"[{PER_RANK + 2}, {PER_RANK}" in message  # every rank's length, in order
        bad_heads = 3 if world == 2 else 6
        assert errors["ulysses_heads"] == (
            "ValueError", f"num_heads ({bad_heads}) must be divisible by the number of devices "
                          f"({world})")
        kind, message = errors["ulysses_kv_heads"]
        bad_kv = 3 if world == 2 else 6
        assert kind == "ValueError" and f"num_kv_heads ({bad_kv}) must be divisible by the " \
            f"number of devices ({world}), or divide it" in message, message
        kind, message = errors["zigzag_odd"]
        assert kind == "ValueError" and "Lr = 3" in message and "zigzag" in message
        kind, message = errors["gqa_heads"]
        assert kind == "ValueError" and "4 heads" in message and "have 3" in message
        kind, message = errors["layout_name"]
        assert kind == "ValueError" and "'spiral'" in message and "zigzag" in message
        kind, message = errors["one_rank_dtype"]  # one rank's own error; the others stop with it
        assert kind == "TypeError"
        if rank == world - 1:
            assert "torch.float64" in message and "key" in message
        else:
            assert f"rank {world - 1}" in message


def raise_on_every_rank(rank, world):
    per = PER_RANK + (rank == 1)  # unequal blocks, uncaught
    md.ring_attention(*(torch.randn(B, 2, per, D_HEAD) for _ in range(3)))


def test_an_uncaught_error_reaches_the_caller_and_leaves_no_process():
    with pytest.raises(ValueError, match="block length Lr"):
        md.launch(raise_on_every_rank, 2, backend="gloo")
    assert multiprocessing.active_children() == []


def test_without_a_process_group():
    q = torch.randn(1, 2, 4, 8)
    for fn in (md.ring_attention, md.ulysses_attention):
        with pytest.raises(RuntimeError, match="process group"):
            fn(q, q, q)
    with md.traffic() as t:
        pass
    assert (t.sent_bytes, t.calls, t.blocks_computed, t.blocks_skipped) == (0, [], 0, 0)


def check_nccl(rank, world):
    torch.cuda.set_device(rank)
    errors = []
    for scheme, lay, causal, H, Hkv, dtype in _cases(world):
        if dtype != torch.float32:
            continue
        q, k, v = (x.cuda() for x in _inputs(world, H, Hkv, dtype))
        rows = layout.positions_of_rank(rank, world, q.size(2), lay)
        with md.traffic() as t:
            out = _run(scheme, lay, causal, q[:, :, rows], k[:, :, rows], v[:, :, rows])
        reference = _reference(q, k, v, causal)[:, :, rows]
        expected = layout.sent_bytes(scheme, world=world, seq_len=q.size(2), d_model=H * D_HEAD,
                                     num_heads=H, num_kv_heads=Hkv, batch=B, dtype_bytes=4)
        errors.append(((out - reference).abs().max().item(), t.sent_bytes == expected))
    return errors


@pytest.mark.gpu
def test_nccl_on_two_gpus():
    found = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if found < 2:
        pytest.skip(f"needs 2 CUDA GPUs (NCCL); found {found}")
    for errors in md.launch(check_nccl, 2, backend="nccl"):
        for error, counted in errors:
            assert error <= 2e-5 and counted
