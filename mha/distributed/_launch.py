"""``launch``: run one function in several local processes, one rank each.

A distributed program is one function that every process of a group (a
"rank") runs: ``fn(rank, world_size, *args)``. ``launch`` starts
``world_size`` fresh Python processes on this machine (the ``spawn`` start
method), joins them into one process group that talks over a free TCP port
of 127.0.0.1, runs ``fn`` on every rank and returns what the ranks returned,
in rank order: ``torchrun`` in one call, usable from a notebook cell.
"""

import builtins
import datetime
import os
import pickle
import socket
import sys
import time
import traceback
from multiprocessing.connection import wait

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from .. import _checks

__all__ = ["launch"]

GRACE = 3.0  # seconds the other ranks get to end after one fails


def launch(fn, world_size, *args, backend=None, timeout=300.0):
    """Run ``fn(rank, world_size, *args)`` on ranks 0 .. world_size - 1,
    each in its own process; returns the ranks' return values in rank order.

    ``fn`` must be importable by name (a function defined in a module, not
    in a notebook cell, a lambda or a nested function): every rank is a new
    Python process that imports it (it gets this process's ``sys.path``;
    a script that calls ``launch`` is imported too, so it must do so under
    ``if __name__ == "__main__":``). Arguments and return values travel
    pickled: return tensors moved to the CPU (``.cpu()``), that is the
    caller's job. Each rank uses one CPU thread, and finds its process group
    ready (``torch.distributed`` initialised; destroyed after ``fn``).

    ``backend``: ``"gloo"`` (CPU tensors) or ``"nccl"`` (CUDA tensors, one
    GPU a rank: rank r uses ``cuda:r``); None means NCCL when every rank can
    have its own GPU, else gloo: pass ``"gloo"`` for CPU tensors on a
    machine with GPUs.

    A rank that raises makes ``launch`` raise, with that rank's traceback
    in the message: the exception's type when every failing rank raised the
    same builtin one (ValueError, TypeError, ...), else RuntimeError (not
    counting the errors of ranks whose peer left them in a collective). The
    other ranks, perhaps waiting for it in a collective, get ``GRACE``
    seconds, then are stopped. A rank that dies without a Python exception
    is a RuntimeError with its exit code. After ``timeout`` seconds every
    rank is stopped and ``launch`` raises TimeoutError. No process outlives
    the call.
    """
    world_size = _checks.check_positive_int("world_size", world_size)
    timeout = _checks.check_real("timeout", timeout)
    if timeout <= 0:
        raise ValueError(f"timeout must be positive (seconds); got {timeout}")
    backend = _check_backend(backend, world_size)
    _check_importable(fn)
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()  # (rank, "ok" | "error", ...) messages
    common = (fn, world_size, args, backend, _free_port(), timeout, queue)
    ranks = [context.Process(target=_rank_main, args=(rank, *common))
             for rank in range(world_size)]
    outcome, threads = None, os.environ.get("OMP_NUM_THREADS")
    try:
        os.environ["OMP_NUM_THREADS"] = "1"  # what the children inherit
        for process in ranks:
            process.start()
        _restore("OMP_NUM_THREADS", threads)  # (again below if start fails)
        outcome = _collect(ranks, queue, timeout)
    finally:  # after a failure the others have had their grace
        _restore("OMP_NUM_THREADS", threads)
        ok = outcome is not None and all(m[0] == "ok" for m in outcome.values())
        _stop(ranks, grace=GRACE if ok else 0.0)
    if outcome is None:
        raise TimeoutError(f"launch: the {world_size} ranks did not all end "
                           f"within timeout={timeout} s; stopped them all")
    if not ok:
        raise _failure(outcome, world_size) from None
    return [pickle.loads(outcome[rank][1]) for rank in range(world_size)]


def _rank_main(rank, fn, world_size, args, backend, port, timeout, queue):
    """One rank: set up its process group, run ``fn``, send the outcome:
    ("ok", pickled value) or ("error", (module, type name), message,
    traceback, whether it came from within a collective)."""
    torch.set_num_threads(1)
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(
            backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
            world_size=world_size, timeout=datetime.timedelta(seconds=timeout))
        message = ("ok", pickle.dumps(fn(rank, world_size, *args)))
    except Exception as error:
        kind = (type(error).__module__, type(error).__qualname__)
        message = ("error", kind, str(error), traceback.format_exc(),
                   _in_collective(error))
    queue.put((rank, *message))
    if message[0] == "ok":  # after a failure the peers may never join it
        dist.destroy_process_group()


def _in_collective(error):
    """Whether ``error`` is torch.distributed's RuntimeError from within a
    collective (most often: a peer failed and went away), the consequence
    of another rank's failure rather than its cause."""
    frames = traceback.extract_tb(error.__traceback__)
    return isinstance(error, RuntimeError) and bool(frames) and frames[
        -1].filename.startswith(os.path.dirname(dist.__file__))


def _collect(ranks, queue, timeout):
    """{rank: message} until every rank has answered or died, or the grace
    after the first failure has run out; None at ``timeout``."""
    outcome, deadline, failed_at = {}, time.monotonic() + timeout, None
    while len(outcome) < len(ranks):
        if failed_at is not None and time.monotonic() > failed_at + GRACE:
            break
        if time.monotonic() > deadline:
            return None
        wait([process.sentinel for process in ranks], timeout=0.05)
        ended = [r for r, process in enumerate(ranks)
                 if process.exitcode is not None]
        while not queue.empty():  # read after `ended`: a rank sends, then ends
            rank, *message = queue.get()
            outcome[rank] = message
        for rank in ended:
            outcome.setdefault(rank, ("died", ranks[rank].exitcode))
        if failed_at is None and any(m[0] != "ok" for m in outcome.values()):
            failed_at = time.monotonic()
    return outcome


def _stop(ranks, grace):
    """Join the ranks; those still running after ``grace`` seconds are
    terminated, then killed."""
    started = [process for process in ranks if process.pid is not None]
    end = time.monotonic() + grace
    for process in started:
        process.join(max(0.0, end - time.monotonic()))
    for stop in ("terminate", "kill"):
        for process in started:
            if process.is_alive():
                getattr(process, stop)()
        for process in started:
            process.join(1.0)


def _failure(outcome, world_size):
    """The exception that tells the caller which ranks failed, and how."""
    failed = [r for r in sorted(outcome) if outcome[r][0] != "ok"]
    causes = [r for r in failed if not (outcome[r][0] == "error"
                                        and outcome[r][4])] or failed
    first = causes[0]
    text = f"rank {first} of {world_size} {_what(outcome[first])}"
    others = [f"rank {r} {_what(outcome[r], short=True)} too"
              for r in failed if r != first]
    others += [f"rank {r} was still running: stopped"
               for r in range(world_size) if r not in outcome]
    if others:
        text += "\n(" + "; ".join(others) + ")"
    if outcome[first][0] == "error":
        text += f"\ntraceback of rank {first}:\n{outcome[first][3]}"
    kinds = {outcome[r][1] if outcome[r][0] == "error" else None
             for r in causes}
    module, name = (kinds.pop() if len(kinds) == 1 and None not in kinds
                    else (None, None))
    cls = getattr(builtins, name, None) if module == "builtins" else None
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    try:
        return cls(text)
    except TypeError:  # a builtin that needs more than a message
        return RuntimeError(text)


def _what(message, short=False):
    """What happened to a rank, in words."""
    if message[0] == "died":
        code = message[1]
        how = (f"was killed by signal {-code}" if code < 0
               else f"exited with code {code}")
        return f"{how} without a Python exception (see its stderr)"
    return f"raised {message[1][1]}" + ("" if short else f": {message[2]}")


def _check_backend(backend, world_size):
    """The backend to use: "gloo", or "nccl" with a GPU for every rank."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if backend is None:
        return "nccl" if gpus >= world_size else "gloo"
    _checks.check_choice("backend", backend, ("gloo", "nccl"))
    if backend == "nccl" and world_size > gpus:
        raise ValueError(f"backend='nccl' needs one CUDA GPU a rank: world_size"
                         f" ({world_size}) must be at most the number of GPUs"
                         f" ({gpus}); use backend='gloo' on the CPU")
    return backend


def _check_importable(fn):
    """A ValueError unless a new process can import ``fn`` by name."""
    if not callable(fn):
        raise TypeError(f"fn must be a function; got {_checks._kind(fn)}")
    name = getattr(fn, "__qualname__", repr(fn))
    why = None
    main = sys.modules["__main__"]
    if getattr(fn, "__module__", None) == "__main__" and not hasattr(
            main, "__file__"):
        why = "defined in a notebook cell or an interactive session"
    elif "<lambda>" in name or "<locals>" in name:
        why = "a lambda or a function defined inside another function"
    else:
        try:
            pickle.dumps(fn)
        except Exception as error:
            why = f"not importable by name ({error})"
    if why is not None:
        raise ValueError(
            f"launch needs fn importable by name, since each rank is a new "
            f"Python process that imports it; {name} is {why}: define it in "
            f"a module (a .py file, e.g. ranks.py next to the notebook), "
            f"import it and pass ranks.fn")


def _free_port():
    """A TCP port of 127.0.0.1 that no one listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _restore(name, old):
    if old is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = old
