"""``mha.distributed.launch``: the return values of 2 and 4 gloo processes in rank order; a rank
that raises (a ValueError, with its traceback), dies (os._exit, a signal) or blocks makes
``launch`` raise, and stops the others; a timeout; an fn a new process cannot import, and bad
arguments, refused before any process starts. After every call no child process is left.

The rank functions are defined here at the top level: the spawned processes import them from
this module (pytest puts tests/ on ``sys.path``, which the children inherit). Each launch costs
seconds (a fresh Python importing torch a rank), so each failure test makes one, and the return
values come from the launches of 2 and 4 ranks that this file shares with the tensor- and
sequence-parallel tests (``distributed_shared``).
"""

import os
import signal
import sys
import time
import types

import pytest
import torch
import torch.distributed as dist
from distributed_shared import children, resource_tracker_pid, shared_launch

import mha.distributed as md
import mha.distributed._launch as launch_module

# --- what the ranks run ----------------------------------------------------------------------


def report(rank, world_size, scale):
    """Who am I, how many threads, and an all-reduce (sum of rank * scale)."""
    total = torch.tensor([float(rank * scale)])
    dist.all_reduce(total)
    return {"rank": rank, "world": world_size, "threads": torch.get_num_threads(),
            "omp": os.environ.get("OMP_NUM_THREADS"), "backend": dist.get_backend(),
            "sum": total.item(), "tensor": torch.full((2,), float(rank))}


def one_raises(rank, world_size):
    """Rank 1 raises a ValueError; rank 0 waits for it in a collective; rank 2 sleeps."""
    if rank == 1:
        raise ValueError("rank one found a bad value")
    if rank == 2:
        time.sleep(600)
    dist.barrier()


def some_die(rank, world_size):
    """Rank 1 leaves with os._exit(7), rank 2 is killed by SIGKILL; rank 0 waits for them."""
    if rank == 1:
        os._exit(7)
    if rank == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()


def mixed_errors(rank, world_size):
    raise (TypeError if rank == 0 else ValueError)(f"error on rank {rank}")


def sleeps(rank, world_size):
    time.sleep(600)


# --- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def no_process_left():
    """Fails the test if a process it started is still alive at its end (the multiprocessing
    resource tracker, started once and kept by design, aside)."""
    before = children()
    yield
    left = children() - before - {resource_tracker_pid()}
    assert not left, f"processes left behind: {sorted(left)}"


@pytest.fixture
def short_grace(monkeypatch):
    """The seconds the other ranks get after one fails: 0.5 instead of 3, for a test that
    waits all of it (a rank sleeps) and whose checks hold whether the rank in a collective
    reports its peer's error within it or is stopped."""
    monkeypatch.setattr(launch_module, "GRACE", 0.5)


# --- tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("world", [2, 4])
def test_returns_each_ranks_value_in_rank_order(world, tmp_path_factory, no_process_left):
    # the shared launch's ranks ran report(rank, world, 10) (and the other files' checks)
    shared = shared_launch(world, tmp_path_factory)
    results = [r["launch"] for r in shared["results"]]
    omp, omp_after = shared["omp"]
    elapsed = shared["seconds"]
    assert shared["left"] == [], f"processes left behind: {shared['left']}"
    assert [r["rank"] for r in results] == list(range(world))
    expected_sum = 10.0 * sum(range(world))
    for rank, r in enumerate(results):
        assert r["world"] == world and r["backend"] == "gloo"
        assert r["threads"] == 1 and r["omp"] == "1"  # one CPU thread a rank
        assert r["sum"] == expected_sum  # the process group works
        assert torch.equal(r["tensor"], torch.full((2,), float(rank)))
    assert omp_after == omp  # the launching process's own setting is back
    assert elapsed < 120, f"{world} processes took {elapsed:.1f} s"


def test_a_value_error_names_its_rank_and_the_others_are_stopped(short_grace,
                                                                  no_process_left):
    start = time.perf_counter()
    with pytest.raises(ValueError, match="rank 1 of 3 raised ValueError: rank one found a bad "
                                         "value") as info:
        md.launch(one_raises, 3, backend="gloo")
    text = str(info.value)
    assert "traceback of rank 1:" in text and "in one_raises" in text  # the rank's traceback
    assert 'raise ValueError("rank one found a bad value")' in text
    assert "rank 2 was still running: stopped" in text  # it slept: terminated
    assert "rank 0" in text  # in the barrier: its peer's error, or stopped
    assert time.perf_counter() - start < 120


def test_a_rank_that_dies_without_an_exception_is_a_runtime_error(no_process_left):
    with pytest.raises(RuntimeError) as info:
        md.launch(some_die, 3, backend="gloo")
    text = str(info.value)
    assert type(info.value) is RuntimeError
    assert "rank 1 of 3 exited with code 7 without a Python exception" in text
    assert "rank 2 was killed by signal 9" in text


def test_different_exception_types_give_a_runtime_error(no_process_left):
    with pytest.raises(RuntimeError) as info:
        md.launch(mixed_errors, 2, backend="gloo")
    text = str(info.value)
    assert type(info.value) is RuntimeError
    assert "rank 0 of 2 raised TypeError: error on rank 0" in text
    assert "rank 1 raised ValueError too" in text


def test_timeout_stops_every_rank(no_process_left):
    start = time.perf_counter()
    with pytest.raises(TimeoutError, match="did not all end within timeout=0.5 s"):
        md.launch(sleeps, 2, backend="gloo", timeout=0.5)
    assert time.perf_counter() - start < 30


def nested_function():
    def inner(rank, world_size):
        return rank
    return inner


def test_an_fn_that_cannot_be_imported_is_refused_before_starting(monkeypatch,
                                                                  no_process_left):
    before = children()
    with pytest.raises(ValueError, match="a lambda or a function defined inside another"):
        md.launch(lambda rank, world_size: rank, 2)
    with pytest.raises(ValueError, match="define it in a module"):
        md.launch(nested_function(), 2)
    # a function defined in a notebook cell: its module is a __main__ without a file
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    cell = types.FunctionType(report.__code__, {}, "cell_function")
    cell.__module__ = "__main__"
    with pytest.raises(ValueError, match="defined in a notebook cell"):
        md.launch(cell, 2)
    with pytest.raises(TypeError, match="fn must be a function"):
        md.launch("report", 2)
    assert children() == before  # nothing was started


@pytest.mark.parametrize("world_size, error, match", [
    (0, ValueError, "world_size must be a positive int; got 0"),
    (-2, ValueError, "world_size must be a positive int"),
    (2.0, TypeError, "world_size must be an int"),
    (True, TypeError, "world_size must be an int"),
])
def test_bad_world_size(world_size, error, match):
    with pytest.raises(error, match=match):
        md.launch(report, world_size, 1)


def test_bad_backend_and_timeout():
    with pytest.raises(ValueError, match="backend must be one of"):
        md.launch(report, 2, 1, backend="mpi")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ValueError, match=rf"at most the number of GPUs \({gpus}\)"):
        md.launch(report, gpus + 1, 1, backend="nccl")
    with pytest.raises(ValueError, match="timeout must be positive"):
        md.launch(report, 2, 1, timeout=0)
    with pytest.raises(TypeError, match="timeout must be a number"):
        md.launch(report, 2, 1, timeout="1")
