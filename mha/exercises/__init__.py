"""Checks for the chapters' coding exercises.

A check runs the reader's function and the package's reference on the same cases and prints,
case by case, what passed or, on failure, the case, the expected and the actual shape or values,
and a hint. It never raises because the reader's function is wrong or crashes::

    from mha.exercises import Case, register, check

    register(
        "split_heads",
        reference=mha.split_heads,
        cases=lambda: [Case("batch of 2, 3 heads", args=(torch.randn(2, 5, 12), 3))],
        hint="Reshape to (B, L, H, Dh) first, then transpose L and H.",
    )
    result = check("split_heads", my_split_heads)   # result.passed, result.failures, bool(result)

Every module of this package (other than this one) is imported when ``mha.exercises`` is, so a
module only needs to call ``register(...)`` at import time.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
import sys
from dataclasses import dataclass, field
from typing import Callable

import torch

__all__ = ["Case", "CheckResult", "available", "check", "register"]


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


_REGISTRY = {}


def register(name, *, reference, cases, hint="", atol=1e-5, rtol=1e-4, compare=None):
    """Register the check ``name``: ``reference`` is the package's function, ``cases`` a zero-arg
    callable returning a list of ``Case`` (built afresh, seeded, on each check), ``hint`` is shown
    on failure, ``atol``/``rtol`` are the tolerances of the default comparison and ``compare``,
    when given, replaces it: ``compare(expected, actual)`` returns None or a failure message."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str; got {name!r}")
    if not callable(reference) or not callable(cases):
        raise TypeError(f"reference and cases of check {name!r} must be callables")
    module = sys._getframe(1).f_globals.get("__name__", "?")
    if name in _REGISTRY and _REGISTRY[name].module != module:
        raise ValueError(
            f"check {name!r} is already registered by {_REGISTRY[name].module}; "
            f"pick another name in {module}"
        )
    _REGISTRY[name] = _Check(reference, cases, hint, atol, rtol, compare, module)


def available():
    """The names of the registered checks, sorted."""
    return sorted(_REGISTRY)


def _describe(x):
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)} items"
    return f"{type(x).__name__} {x!r}"


def _compare(expected, actual, atol, rtol, where="output"):
    """None when ``actual`` matches ``expected``, else a message saying how they differ."""
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            return f"{where}: expected {_describe(expected)}, got {_describe(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            message = _compare(e, a, atol, rtol, f"{where}[{i}]")
            if message:
                return message
        return None
    if not isinstance(expected, torch.Tensor):
        return None if actual == expected else f"{where}: expected {expected!r}, got {actual!r}"
    if not isinstance(actual, torch.Tensor):
        return f"{where}: expected {_describe(expected)}, got {_describe(actual)}"
    if actual.shape != expected.shape:
        return (f"{where}: expected shape {tuple(expected.shape)}, "
                f"got shape {tuple(actual.shape)}")
    e = expected.detach().cpu().double()
    a = actual.detach().cpu().double()
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


def check(name, fn, *, verbose=True):
    """Run the reader's ``fn`` against the reference of check ``name`` on every case; print a
    report and return a ``CheckResult``. A wrong or crashing ``fn`` is reported, not raised."""
    if name not in _REGISTRY:
        raise KeyError(f"no check named {name!r}; available checks: {', '.join(available())}")
    spec = _REGISTRY[name]
    torch.manual_seed(0)
    cases = list(spec.cases())
    failures = []
    lines = [f"Checking {getattr(fn, '__name__', 'your function')} against {name!r}:"]
    for case in cases:
        expected = spec.reference(*_clone(case.args), **_clone(case.kwargs))
        try:
            actual = fn(*_clone(case.args), **_clone(case.kwargs))
        except NotImplementedError:
            message = "raised NotImplementedError: not written yet"
        except Exception as error:  # noqa: BLE001 (the reader's bug is reported, not raised)
            message = f"raised {type(error).__name__}: {error}"
        else:
            if spec.compare is not None:
                message = spec.compare(expected, actual)
            else:
                message = _compare(expected, actual, spec.atol, spec.rtol)
        if message:
            hint = f" Hint: {spec.hint}" if spec.hint else ""
            failures.append(f"case '{case.name}': {message}.{hint}")
        lines.append(f"  {'FAIL' if message else 'ok  '} {case.name}" + (f": {message}"
                                                                         if message else ""))
    passed = not failures
    if passed:
        lines.append(f"All {len(cases)} cases passed.")
    else:
        lines.append(f"{len(failures)} of {len(cases)} cases failed.")
        if spec.hint:
            lines.append(f"Hint: {spec.hint}")
    if verbose:
        print("\n".join(lines))
    return CheckResult(name, passed, failures)


def _import_checks():
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_import_checks()
