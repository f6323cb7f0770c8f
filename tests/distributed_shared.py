"""The two launches, of 2 and of 4 gloo processes, that the ``tests/test_distributed_*.py`` files
share. Each launch costs seconds (a fresh Python importing torch a rank), so each rank of one
runs the per-rank checks of the launch, tensor-parallel and sequence-parallel tests in turn
(``every_check``) and the test files assert on what it returned.

``shared_launch(world, tmp_path_factory)`` launches once per test run: in one process it keeps
the outcome; under pytest-xdist the first worker that asks launches and leaves the outcome in a
file of the run's temporary directory, which the other workers read (a ``filelock``, which
torch depends on, makes them wait for it).
"""

import importlib
import multiprocessing
import os
import pickle
import time

from filelock import FileLock

import mha.distributed as md

try:
    import psutil
except ImportError:  # only multiprocessing's own bookkeeping then
    psutil = None

# part of the results: (test module, its per-rank function, the arguments after rank, world)
CHECKS = {"launch": ("test_distributed_launch", "report", (10,)),
          "tensor": ("test_distributed_tensor", "check_many", ()),
          "sequence": ("test_distributed_sequence", "check_many", ())}


def every_check(rank, world_size):
    """What each rank of a shared launch runs: {part: what that part's function returned}."""
    return {part: getattr(importlib.import_module(module), name)(rank, world_size, *args)
            for part, (module, name, args) in CHECKS.items()}


def children():
    """The pids of this process's live children (new ones only count: compare two calls)."""
    pids = {p.pid for p in multiprocessing.active_children()}
    if psutil is not None:
        pids |= {p.pid for p in psutil.Process().children(recursive=True)
                 if p.status() != psutil.STATUS_ZOMBIE}
    return pids


def resource_tracker_pid():
    """The multiprocessing resource tracker's pid (started once and kept by design), or None."""
    from multiprocessing import resource_tracker
    return getattr(resource_tracker._resource_tracker, "_pid", None)


def _launch(world):
    """One launch of ``every_check``: {"results": the ranks' values, "seconds": how long it
    took, "omp": OMP_NUM_THREADS before and after, "left": processes it left behind}, or
    {"error": (exception type, message)}."""
    before, omp, start = children(), os.environ.get("OMP_NUM_THREADS"), time.perf_counter()
    try:
        results = md.launch(every_check, world, backend="gloo")
    except Exception as error:  # every test that uses the launch reports it
        return {"error": (type(error).__name__, str(error))}
    return {"results": results, "seconds": time.perf_counter() - start,
            "omp": (omp, os.environ.get("OMP_NUM_THREADS")),
            "left": sorted(children() - before - {resource_tracker_pid()})}


_outcomes = {}  # world -> what _launch returned, in this process


def shared_launch(world, tmp_path_factory):
    """The outcome of the run's one launch of ``every_check`` on ``world`` ranks (see
    ``_launch``); a RuntimeError with the launch's error if it failed."""
    if world not in _outcomes:
        run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
        if run is None:  # no xdist: this process runs every test
            _outcomes[world] = _launch(world)
        else:  # the workers' temporary directories share a parent, new each run
            path = tmp_path_factory.getbasetemp().parent / f"distributed-{run}-{world}.pickle"
            with FileLock(f"{path}.lock", timeout=900):
                if path.exists():
                    _outcomes[world] = pickle.loads(path.read_bytes())
                else:
                    _outcomes[world] = _launch(world)
                    path.write_bytes(pickle.dumps(_outcomes[world]))
    outcome = _outcomes[world]
    if "error" in outcome:
        kind, message = outcome["error"]
        raise RuntimeError(f"the shared launch of {world} ranks raised {kind}: {message}")
    return outcome
