"""Checks for the chapters' coding exercises.

A check runs the reader's function and the package's reference on the same cases and prints,
case by case, what passed or, on failure, the case, the expected and the actual shape or values,
the line of the reader's code that failed (when it raised) and a hint. It never raises because
the reader's function is wrong or misbehaves: an exception, ``sys.exit()``, a return value of the
wrong kind (None, a numpy array, a tuple, the wrong shape, NaN), an input changed in place, or a
call that runs past the time limit (``time_limit`` seconds per case; a line every few seconds
says it is still running) all end in a short message. An unsolved stub (it raises
``NotImplementedError`` or returns None on every case) gets one line saying what to do. The
global random state (torch, ``random``, numpy) is left as the reader had it.
``hints=False`` (or the environment variable ``MHA_EXERCISE_HINTS=off``, for an
assessed lab) leaves the hints out of the report.

One exercise, one file: ``mha_book/exercises/<check name>.py`` holds everything about it, in
one ``register(...)`` call: the book's check (reference, cases, hint) and the course's facts
(``scripts/course/mha_grader.py`` reads them from here)::

    from mha_book.exercises import Case, register
    from mha_book.exercises._shared import variant

    def _variants(rng):  # the course's graded cases: sizes from ``rng``, torch seeded
        H, Dh = rng.randint(1, 6), rng.randint(1, 5)
        return [variant(f"{H} heads", (torch.randn(2, 3, H * Dh), H))]

    register(
        "split_heads",
        reference=mha.functional.split_heads,
        cases=lambda: [Case("batch of 2, 3 heads", args=(torch.randn(2, 5, 12), 3))],
        hint="Reshape to (B, L, H, Dh) first, then transpose L and H.",
        variants=_variants,
        forbidden=[mha.functional.split_heads, mha.functional._split_heads],
    )
    result = check("split_heads", my_split_heads)   # result.passed, result.failures, bool(result)

``variants(rng)`` gives the course's own cases (``rng`` a ``random.Random``; torch's generator
is seeded too). ``forbidden`` lists what a student's function may not call: the package's
answer and its private helpers, as the objects themselves (a rename then fails at import, not
silently), or as dotted names where an object's own name is not its public one (torch's:
``"torch.softmax"``, ``"torch.Tensor.softmax"``); ``[]`` says there is none. ``allowed`` lists
the package's functions the book's own solution uses (any other function of ``mha`` it calls is
flagged for the teacher). Every exercise of the package declares ``variants`` and ``forbidden``
(the tests fail otherwise); ``forbidden_names(name)`` and ``allowed_names(name)`` give them as
the dotted names the course's grader matches.

Every module of this package (other than those starting with ``_``) is imported when
``mha_book.exercises`` is, so a module only needs to call ``register(...)`` at import time.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import inspect
import linecache
import math
import numbers
import os
import pkgutil
import random
import signal
import sys
import textwrap
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

import torch

import mha
import mha_book

__all__ = ["Case", "CheckResult", "allowed_names", "available", "check", "forbidden_names",
           "hints_on", "register"]

TIME_LIMIT = 10.0  # seconds per case, unless a check or a call says otherwise
_TICK = 3.0  # seconds between two "still running" lines


@dataclass
class Case:
    """One input for a check: a description a reader understands, and the call's arguments."""

    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass
class CheckResult:
    """What ``check`` found: ``passed`` and one message per failed case (``failures``)."""

    name: str
    passed: bool
    failures: list

    def __bool__(self):
        return self.passed


@dataclass
class _Check:
    reference: Callable
    cases: Callable
    hint: str
    atol: float
    rtol: float
    compare: Callable | None
    module: str
    time_limit: float = TIME_LIMIT
    variants: Callable | None = None  # the course's cases: variants(rng) -> [Case]
    forbidden: tuple | None = None  # dotted names (None: not declared)
    allowed: tuple = ()  # dotted names, public aliases included


_REGISTRY = {}


def register(name, *, reference, cases, hint="", atol=1e-5, rtol=1e-4, compare=None,
             time_limit=TIME_LIMIT, variants=None, forbidden=None, allowed=()):
    """Register the check ``name``: ``reference`` is the package's function, ``cases`` a zero-arg
    callable returning a list of ``Case`` (built afresh, seeded, on each check), ``hint`` is shown
    on failure, ``atol``/``rtol`` are the tolerances of the default comparison and ``compare``,
    when given, replaces it: ``compare(expected, actual)`` returns None or a failure message.
    ``time_limit`` is the most seconds one case may take. The course's facts: ``variants(rng)``
    returns its graded cases, ``forbidden`` what the answer may not call (objects or dotted
    names), ``allowed`` the package's functions the book's solution calls (objects)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str; got {name!r}")
    if not callable(reference) or not callable(cases):
        raise TypeError(f"reference and cases of check {name!r} must be callables")
    if compare is not None and not callable(compare):
        raise TypeError(f"compare of check {name!r} must be None or a callable; got {compare!r}")
    if not isinstance(hint, str):
        raise TypeError(f"hint of check {name!r} must be a str; got {type(hint).__name__}")
    if variants is not None and not callable(variants):
        raise TypeError(f"variants of check {name!r} must be None or a callable (rng -> list "
                        f"of Case); got {variants!r}")
    time_limit = _positive_seconds("time_limit", time_limit)
    forbidden = None if forbidden is None else tuple(
        _dotted(entry, "forbidden", name) for entry in _entries(forbidden, "forbidden", name))
    allowed = tuple(label for entry in _entries(allowed, "allowed", name)
                    for label in _public_names(entry, name))
    module = sys._getframe(1).f_globals.get("__name__", "?")
    if name in _REGISTRY and _REGISTRY[name].module != module:
        raise ValueError(
            f"check {name!r} is already registered by {_REGISTRY[name].module}; "
            f"pick another name in {module}"
        )
    _REGISTRY[name] = _Check(reference, cases, hint, atol, rtol, compare, module, time_limit,
                             variants, forbidden, allowed)


def _entries(value, argument, name):
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{argument} of check {name!r} must be a list; got {value!r}")
    return value


def _dotted(entry, argument, name):
    """The dotted name of a forbidden or allowed ``entry``: a str as it is, an object's
    ``__module__`` + ``__qualname__``."""
    if isinstance(entry, str):
        if not entry or entry.startswith(".") or entry.endswith("."):
            raise ValueError(f"{argument} of check {name!r}: {entry!r} is not a dotted name")
        return entry
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        raise TypeError(f"{argument} of check {name!r}: {entry!r} has no importable name; give "
                        f"a module-level function or class, or its dotted name as a str")
    return f"{module}.{qualname}"


def _public_names(entry, name):
    """``entry``'s dotted name and, where its top-level package exports it too, that alias
    (``mha.split_heads`` beside ``mha.functional.split_heads``)."""
    label = _dotted(entry, "allowed", name)
    top = sys.modules.get(label.split(".")[0])
    alias = f"{top.__name__}.{label.rsplit('.', 1)[1]}" if top is not None else label
    if not isinstance(entry, str) and alias != label and getattr(
            top, label.rsplit(".", 1)[1], None) is entry:
        return (alias, label)
    return (label,)


def forbidden_names(name):
    """The dotted names check ``name``'s function may not call (the course's grader adds the
    reference); None when the exercise declares none (not even ``[]``)."""
    return _spec(name).forbidden


def allowed_names(name):
    """The dotted names of the package's functions check ``name``'s function may call."""
    return _spec(name).allowed


def _spec(name):
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"name must be the name of a check; got {name!r}. Available checks: "
                         f"{', '.join(available())}")
    return _REGISTRY[name]


def _positive_seconds(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds; got {value!r}")
    return float(value)


def available():
    """The names of the registered checks, sorted."""
    return sorted(_REGISTRY)


# --- describing and comparing values ---------------------------------------------------------


def _is_numpy(x):
    return type(x).__module__.split(".")[0] == "numpy"


def _describe(x):
    if isinstance(x, torch.Tensor):
        if x.dim() == 0:
            return f"a 0-D tensor {x.item():.6g}"
        return f"a tensor of shape {tuple(x.shape)}"
    if _is_numpy(x) and hasattr(x, "shape") and getattr(x, "ndim", 0) > 0:
        return f"a numpy array of shape {tuple(x.shape)}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)} items"
    if x is None:
        return "None"
    text = repr(x)
    return f"{type(x).__name__} {text if len(text) < 60 else text[:57] + '...'}"


def _as_number(x):
    """A plain Python number for a number-like ``x`` (numpy scalar, 1-element tensor), else x."""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and not x.dtype.is_complex:
        return x.item()
    if _is_numpy(x) and getattr(x, "size", 0) == 1 and hasattr(x, "item"):
        return x.item()
    return x


def _compare_number(expected, actual, where, atol, rtol):
    if isinstance(actual, torch.Tensor) or (_is_numpy(actual) and getattr(actual, "size", 1) > 1):
        return (f"{where}: expected one number ({expected!r}), got {_describe(actual)}; "
                f"return a single number (e.g. add the parts up: int(parts.sum()))")
    if isinstance(actual, bool) or not isinstance(actual, numbers.Real):
        return f"{where}: expected the number {expected!r}, got {_describe(actual)}"
    if isinstance(expected, numbers.Integral) and actual == expected:
        return None
    if math.isclose(actual, expected, rel_tol=rtol, abs_tol=atol) if isinstance(
            expected, float) else actual == expected:
        return None
    return f"{where}: expected {expected!r}, got {actual!r}"


def _compare(expected, actual, atol, rtol, where="output"):
    """None when ``actual`` matches ``expected``, else a message saying how they differ."""
    actual = _as_number(actual) if not isinstance(expected, torch.Tensor) else actual
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            return f"{where}: expected {_describe(expected)}, got {_describe(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            message = _compare(e, a, atol, rtol, f"{where}[{i}]")
            if message:
                return message
        return None
    if isinstance(expected, numbers.Number) and not isinstance(expected, bool):
        return _compare_number(expected, actual, where, atol, rtol)
    if not isinstance(expected, torch.Tensor):
        try:
            same = bool(actual == expected)
        except Exception:  # noqa: BLE001 (an odd value that cannot be compared is a mismatch)
            same = False
        return None if same else f"{where}: expected {expected!r}, got {_describe(actual)}"
    if not isinstance(actual, torch.Tensor):
        advice = ""
        if _is_numpy(actual):
            advice = "; return a torch.Tensor (stay in torch, or torch.from_numpy(...))"
        return f"{where}: expected {_describe(expected)}, got {_describe(actual)}{advice}"
    if actual.shape != expected.shape:
        return (f"{where}: expected shape {tuple(expected.shape)}, "
                f"got shape {tuple(actual.shape)}")
    if actual.dtype.is_complex:
        return f"{where}: expected real numbers, got dtype {actual.dtype}"
    e = expected.detach().cpu().double()
    a = actual.detach().cpu().double()
    nan = torch.isnan(a) & ~torch.isnan(e)
    if bool(nan.any()):
        index = tuple(int(i) for i in nan.nonzero()[0])
        return (f"{where}: {int(nan.sum())} of {nan.numel()} values are NaN; first at index "
                f"{index}: expected {e[index].item():.6g}, got nan")
    close = torch.isclose(a, e, atol=atol, rtol=rtol, equal_nan=True)
    if bool(close.all()):
        return None
    index = tuple(int(i) for i in (~close).nonzero()[0])
    return (f"{where}: {int((~close).sum())} of {close.numel()} values differ; first at index "
            f"{index}: expected {e[index].item():.6g}, got {a[index].item():.6g} "
            f"(atol={atol}, rtol={rtol})")


def _clone(args):
    """A deep copy, so a function that edits its inputs in place cannot spoil the other's."""
    return copy.deepcopy(args)


def _changed(before, after):
    """Whether ``after`` (an input after the reader's call) differs from ``before``."""
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or before.shape != after.shape:
            return True
        return not torch.equal(before.nan_to_num(), after.detach().nan_to_num())
    if isinstance(before, (tuple, list)):
        return len(before) != len(after) or any(_changed(b, a) for b, a in zip(before, after))
    if isinstance(before, dict):
        return before.keys() != after.keys() or any(_changed(before[k], after[k]) for k in before)
    return False


def _changed_inputs(fn, args, kwargs, pristine_args, pristine_kwargs):
    """The names of the inputs the reader's function changed in place."""
    try:
        names = list(inspect.signature(fn).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        names = []
    changed = []
    for i, (before, after) in enumerate(zip(pristine_args, args)):
        if _changed(before, after):
            changed.append(names[i] if i < len(names) else f"argument {i + 1}")
    changed += [k for k in pristine_kwargs if _changed(pristine_kwargs[k], kwargs.get(k))]
    return changed


# --- running the reader's function -----------------------------------------------------------


class _TimeLimit(BaseException):
    """Raised inside the reader's function when a case runs past its time limit (a
    BaseException, so that the reader's own ``except Exception`` does not swallow it)."""


#: the book's package and the library: their frames are not the reader's code
_PACKAGE_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__)) for m in (mha, mha_book))
_LIBRARY_DIRS = tuple({os.path.dirname(os.path.abspath(m.__file__))
                       for m in (os, torch) if getattr(m, "__file__", None)})


def _is_reader_frame(filename):
    path = os.path.abspath(filename) if not filename.startswith("<") else filename
    if any(path.startswith(d + os.sep) for d in _PACKAGE_DIRS) or "site-packages" in path:
        return False
    return not any(path.startswith(d + os.sep) for d in _LIBRARY_DIRS)


def _reader_line(error, fn):
    """'line N of name: code' for the last frame of the traceback in the reader's code, or ''."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if _is_reader_frame(f.filename)]
    if not frames:
        return ""
    frame = frames[-1]
    code = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    where = f"line {frame.lineno} of {frame.name}" if frame.name != "<module>" else \
        f"line {frame.lineno}"
    return f"{where}: {code}" if code else where


def _call(fn, args, kwargs, limit, say, case_name=""):
    """(returned value, None) or (None, message) for one call of the reader's function."""
    start = time.monotonic()
    use_alarm = (hasattr(signal, "setitimer")
                 and threading.current_thread() is threading.main_thread())
    state = {"running": True, "said": 0}

    def tick(signum, frame):
        if not state["running"]:
            return
        elapsed = time.monotonic() - start
        if elapsed >= limit:  # raised again at every tick, should one be swallowed somewhere
            raise _TimeLimit(elapsed)
        if elapsed >= (state["said"] + 1) * _TICK:  # a sign of life every _TICK seconds
            state["said"] = int(elapsed // _TICK)
            say(f"  ... case '{case_name}' still running ({elapsed:.0f} s; the limit is "
                f"{limit:g} s)")

    if use_alarm:
        old_handler = signal.signal(signal.SIGALRM, tick)
        step = min(0.25, limit)
        old_timer = signal.setitimer(signal.ITIMER_REAL, step, step)
    try:
        try:
            value = fn(*args, **kwargs)
        finally:
            state["running"] = False
    except _TimeLimit as error:
        where = _reader_line(error, fn)
        return None, _Timeout(f"took longer than {limit:g} s and was stopped"
                              + (f" (at {where})" if where else "")
                              + "; look for a loop that never ends or work that grows too fast")
    except SystemExit as error:
        where = _reader_line(error, fn)
        return None, ("called sys.exit()/exit()" + (f" at {where}" if where else "")
                      + "; return the result instead of exiting")
    except NotImplementedError as error:
        return None, _Stub("raised NotImplementedError: not written yet", _reader_line(error, fn))
    except Exception as error:  # noqa: BLE001 (the reader's bug is reported, not raised)
        text = str(error).strip().splitlines()
        text = text[0] if text else ""
        if len(text) > 200:
            text = text[:197] + "..."
        where = _reader_line(error, fn)
        return None, (f"raised {type(error).__name__}: {text}" + (f" (at {where})" if where
                                                                    else ""))
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)
            signal.signal(signal.SIGALRM, old_handler)
    if time.monotonic() - start > limit:  # no alarm here (not the main thread): judged afterwards
        return None, f"took {time.monotonic() - start:.1f} s, longer than the limit of {limit:g} s"
    return value, None


class _Timeout(str):
    """A failure message that also says the case ran out of time (later cases are skipped)."""


class _Stub(str):
    """A failure message that also marks the call as an unsolved stub."""

    def __new__(cls, message, where=""):
        return super().__new__(cls, message + (f" (at {where})" if where else ""))


@contextlib.contextmanager
def _reader_state_kept():
    """Run a block without touching the reader's global state: the random generators of torch
    (CPU and initialised CUDA devices), ``random`` and numpy, the grad mode and the default
    dtype are restored on exit."""
    python_state = random.getstate()
    numpy = sys.modules.get("numpy")
    numpy_state = numpy.random.get_state() if numpy is not None else None
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    devices = list(range(torch.cuda.device_count())) if cuda else []
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    try:
        with torch.random.fork_rng(devices=devices):
            yield
    finally:
        random.setstate(python_state)
        if numpy_state is not None:
            numpy.random.set_state(numpy_state)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)


def _judge(spec, expected, actual):
    """The failure message for a returned value, or None."""
    if actual is None and expected is not None:
        return _Stub("returned None: write the function's body and end it with `return ...`")
    if actual is Ellipsis:
        return _Stub("returned ...: replace the ... with your code")
    if spec.compare is None:
        return _compare(expected, actual, spec.atol, spec.rtol)
    if _is_numpy(actual) and isinstance(expected, numbers.Number):
        actual = _as_number(actual)  # numpy.int64 is a fine answer where an int is expected
    if _is_numpy(actual) and not _is_numpy(expected):
        return (f"returned {_describe(actual)}; return a torch.Tensor (stay in torch, or "
                f"torch.from_numpy(...))")
    try:
        return spec.compare(expected, actual)
    except Exception as error:  # noqa: BLE001 (an unexpected value is reported, not raised)
        return (f"returned {_describe(actual)}, which is not what the exercise asks for "
                f"(expected {_describe(expected)}; comparing them failed with "
                f"{type(error).__name__}: {str(error)[:120]})")


def hints_on(hints=None):
    """Whether a report shows its hints: ``hints`` if it is a bool, else the
    environment variable ``MHA_EXERCISE_HINTS`` (``off``, ``0``, ``no`` or
    ``false`` turn them off; on by default)."""
    if hints is not None:
        if not isinstance(hints, bool):
            raise TypeError(f"hints must be a bool or None; got {hints!r}")
        return hints
    value = os.environ.get("MHA_EXERCISE_HINTS", "on").strip().lower()
    return value not in ("off", "0", "no", "false")


def check(name, fn, *, verbose=True, time_limit=None, hints=None):
    """Run the reader's ``fn`` against the reference of check ``name`` on every case; print a
    report and return a ``CheckResult``. A wrong or misbehaving ``fn`` is reported, not raised.

    ``time_limit`` (seconds per case) overrides the check's own (10 s unless it says otherwise).
    ``hints=False`` leaves the hints out of the report and the failures (see
    ``hints_on``).
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"name must be the name of a check; got {name!r}. Available checks: "
                         f"{', '.join(available())}")
    if not callable(fn):
        raise TypeError(f"fn must be your function itself, e.g. check({name!r}, my_function) "
                        f"(without calling it); got {_describe(fn)}")
    if not isinstance(verbose, bool):
        raise TypeError(f"verbose must be a bool; got {verbose!r}")
    spec = _REGISTRY[name]
    limit = spec.time_limit if time_limit is None else _positive_seconds("time_limit", time_limit)
    hint_text = spec.hint if hints_on(hints) else ""
    label = getattr(fn, "__name__", None) or "your function"
    if label == "<lambda>":
        label = "your function"

    def say(line):
        if verbose:
            print(line, flush=True)

    with _reader_state_kept():
        torch.manual_seed(0)
        cases = list(spec.cases())
        failures, lines, stubs, skipped = [], [], [], 0
        for number, case in enumerate(cases):
            if failures and failures[-1].startswith("timeout"):
                skipped = len(cases) - number
                lines.append(f"  ---- {skipped} more case(s) not run after the time limit")
                failures[-1] = failures[-1][len("timeout"):]
                break
            expected = spec.reference(*_clone(case.args), **_clone(case.kwargs))
            args, kwargs = _clone(case.args), _clone(case.kwargs)
            pristine_args, pristine_kwargs = _clone(case.args), _clone(case.kwargs)
            actual, message = _call(fn, args, kwargs, limit, say, case.name)
            if message is None:
                message = _judge(spec, expected, actual)
                changed = _changed_inputs(fn, args, kwargs, pristine_args, pristine_kwargs)
                if changed and not isinstance(message, _Stub):
                    edited = " and ".join(f"`{c}`" for c in changed)
                    message = (f"changed its input {edited} in place (e.g. with x += ..., "
                               f"x.mul_(...) or x[...] = ...), which would corrupt the caller's "
                               f"tensor; work on a copy or use out-of-place operations"
                               + (f"; also {message}" if message else ""))
            stubs.append(isinstance(message, _Stub))
            if message:
                hint = f" Hint: {hint_text}" if hint_text else ""
                timeout = "timeout" if isinstance(message, _Timeout) else ""
                failures.append(f"{timeout}case '{case.name}': {message}.{hint}")
            lines.append(f"  {'FAIL' if message else 'ok  '} {case.name}"
                         + (f": {message}" if message else ""))
    def show(text):  # lines wrapped to fit a notebook's output box (78 columns)
        say("\n".join(_wrap(line) for line in text.split("\n")))

    if cases and all(stubs):
        first = failures[0].split(": ", 1)[1].split(". Hint:")[0]
        reason = first.split(":")[0].split(" (at")[0]
        line = f"{label} is not solved yet ({reason}): write its body and rerun."
        if "NotImplementedError" in first:
            line = f"{label} raised NotImplementedError: not written yet; write it and rerun."
        show(line)
        return CheckResult(name, False, [line])
    failures = [f[len("timeout"):] if f.startswith("timeout") else f for f in failures]
    passed = not failures
    header = f"Checking {label} against {name!r}:"
    footer = (f"All {len(cases)} cases passed." if passed
              else f"{len(failures)} of {len(cases)} cases failed"
              + (f", {skipped} not run." if skipped else "."))
    report = [header, *lines, footer]
    if not passed and hint_text:
        report.append(f"Hint: {hint_text}")
    show("\n".join(report))
    return CheckResult(name, passed, failures)


def _wrap(line, width=78):
    """One printed line folded at ``width`` columns, continuation lines indented under its text."""
    stripped = line.lstrip(" ")
    indent = " " * (len(line) - len(stripped))
    if stripped.startswith(("FAIL ", "ok   ")):
        indent += " " * 5
    return textwrap.fill(line, width=width, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False, replace_whitespace=False,
                         drop_whitespace=True) if len(line) > width else line


def _import_checks():
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_import_checks()
