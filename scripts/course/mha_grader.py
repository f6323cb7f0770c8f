"""The grader of the course's autograded tests (appendix/teachers.md).

scripts/assignments.py copies this file to COURSE/grading/mha_grader.py.
Every autograded test cell of an assignment ends with a hidden test
(nbgrader's ``### BEGIN HIDDEN TESTS``: not in the students' copy, put back
by ``nbgrader autograde``) that loads this file by its absolute path and
calls ``grade(check, the student's function)``, in the notebook's kernel:

1. It builds its own cases: the public check's cases and this course's
   variants (the exercise's ``variants``: other sizes, values and
   parameters, in mha_book/exercises/<check>.py), from seeds
   derived from the course secret (COURSE/grading/secret), so the numbers
   in the book and in the public checks are not the graded ones.
2. It calls the student's function on every case in the notebook's kernel
   (the function may use the chapter's earlier cells), with a time limit,
   and notes any call, while it runs, of the package's own answer to the
   exercise (the exercise's ``forbidden``, e.g. ``mha.masked_softmax`` when
   the exercise is to write the masked softmax).
3. It saves what the function returned and judges it in a fresh Python
   process (``python -I mha_grader.py judge CHECK FILE``): the expected
   values come from the package's reference, or a course question's own
   answer, on the same cases.

That report is the student's, at once; the score that counts is not the
kernel's, since code in a notebook can change anything in its own kernel
(the profiler, subprocess, the verdict it reads back). After the kernel has
run, ``nbgrader autograde`` verifies each test cell (``verify``, called by
COURSE/mha_course.py's VerifyGrades): the notebook's code cells run again,
in order, in a fresh ``python -I`` in an empty folder that only calls the
student's function on cases it is given and writes what it returned
(``run``); the cases come from, and the outputs go back to, another fresh
process that never runs student code (``serve``: it alone reads the
verification's own secret, COURSE/verification/secret, and the
references); both places that run student code, nbgrader's kernel
(``kernel``) and ``run``, are sandboxed first (``sandbox``: Landlock); and
the answer cells are read, not run (``Reading``):
a function whose code names the package's answer (``forbidden``, the
check's reference) scores 0, and code that can reach around a grade (threads,
processes, the profiler, mocks, the import system, the kernel, files,
private names of mha, a library softmax in a softmax exercise) is flagged
for the teacher to read.

A test cell scores 0 unless every case passes; its output names each failed
case (and the hint, unless the course turned hints off in
COURSE/grading/settings.json). What is not caught: a student's function
that calls an equivalent library function under a name not forbidden
without any flagged construct (it is correct, and graded as such); code in
the verification's student process that defeats the grader there through
flagged constructs (frames, gc, ctypes); and, where Linux has no Landlock,
code that attacks the teacher's machine (it runs with the teacher's
rights). Read a surprising score's code.
"""

import ast
import base64
import contextlib
import hashlib
import hmac
import io
import json
import os
import pickle
import random
import re
import runpy
import subprocess
import sys
import tempfile
import warnings

GRADING = os.path.dirname(os.path.abspath(__file__))
QUESTION = "course:"  # a course question's check: course:<assignment>/<name>

# what a student's function may not call directly (the package's own answer
# and the private helpers that do its work), the course's own cases of each
# check and the package's functions its solution may use: each exercise's
# file says (mha_book/exercises/<check>.py: ``forbidden``, ``variants``,
# ``allowed``), and the check's reference is always forbidden too.
# The verification (verify) scores 0 a function whose code names one of
# them; the notebook's own test also watches the calls it makes. A teacher
# can forbid more in COURSE/grading/mha_grader.py: check name -> dotted names.
COURSE_FORBIDDEN = {}


# --- the course's settings, secret and checks -------------------------------


def settings(grading=GRADING):
    """COURSE/grading/settings.json: {"hints": bool}."""
    path = os.path.join(grading, "settings.json")
    try:
        with open(path, encoding="utf-8") as f:
            return {"hints": True, **json.load(f)}
    except FileNotFoundError:
        return {"hints": True}


def secret_path(grading=GRADING, verification=False):
    """COURSE/grading/secret (the kernel's cases) or, with
    ``verification``, COURSE/verification/secret (the verification's, which
    no code of a submission can read: see ``sandbox``)."""
    if verification:
        return os.path.join(os.path.dirname(grading), "verification",
                            "secret")
    return os.path.join(grading, "secret")


def seed(name, grading=GRADING, verification=False):
    """The seed of check ``name``'s cases: an HMAC of the name under a
    course secret (``secret_path``), so each course has its own."""
    with open(secret_path(grading, verification), "rb") as f:
        key = f.read().strip()
    digest = hmac.new(key, name.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:6], "big")


class Spec:
    """A check to grade: ``reference(*args)`` gives the expected value,
    ``cases(rng)`` the cases; compared as ``mha_book.exercises`` compares."""

    def __init__(self, name, reference, cases, *, hint="", atol=1e-5,
                 rtol=1e-4, compare=None, time_limit=10.0, forbidden=(),
                 allowed=None):
        self.name, self.reference, self.cases = name, reference, cases
        self.hint, self.atol, self.rtol = hint, atol, rtol
        self.compare, self.time_limit = compare, time_limit
        self.forbidden = list(forbidden)
        # the package's functions it may use (None: those it enters are
        # not noted, as for a course question)
        self.allowed = allowed


def question_path(name, grading=GRADING):
    """COURSE/questions/<assignment>/<name>.py of check course:<a>/<name>."""
    assignment, _, stem = name[len(QUESTION):].partition("/")
    return os.path.join(os.path.dirname(grading), "questions", assignment,
                        f"{stem}.py")


def student_function(namespace):
    """The name of a question file's one ``my_...`` function."""
    names = [k for k, v in namespace.items()
             if k.startswith("my_") and callable(v)]
    if len(names) != 1:
        raise ValueError(f"a question defines one my_... function; "
                         f"found {names}")
    return names[0]


def spec(name, grading=GRADING):
    """The Spec of check ``name``: a course question or a package check."""
    if name.startswith(QUESTION):
        ns = runpy.run_path(question_path(name, grading))
        reference = ns[student_function(ns)]
        return Spec(name, reference, ns["cases"], hint=ns.get("HINT", ""),
                    atol=ns.get("ATOL", 1e-5), rtol=ns.get("RTOL", 1e-4),
                    compare=ns.get("COMPARE"),
                    time_limit=ns.get("TIME_LIMIT", 10.0),
                    forbidden=[reference, *ns.get("FORBIDDEN", [])])
    from mha_book import exercises

    check = exercises._REGISTRY[name]
    variants = check.variants or (lambda rng: [])

    def cases(rng):
        import torch

        public = list(check.cases())
        torch.manual_seed(rng.randint(0, 2**31))
        return public + list(variants(rng))

    return Spec(name, check.reference, cases, hint=check.hint,
                atol=check.atol, rtol=check.rtol, compare=check.compare,
                time_limit=check.time_limit,
                forbidden=[check.reference, *(check.forbidden or ()),
                           *COURSE_FORBIDDEN.get(name, [])],
                allowed=tuple(check.allowed))


def build_cases(check, number):
    """``check``'s cases for seed ``number``: the same in every process."""
    import torch

    with torch.random.fork_rng(devices=[]):
        dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.float32)
        try:
            torch.manual_seed(number)
            return list(check.cases(random.Random(number)))
        finally:
            torch.set_default_dtype(dtype)


# --- the kernel's side: run the student's function --------------------------


def _resolve(entry):
    """A forbidden entry (a dotted name or an object) as
    (label, code objects, builtin objects, (class, method name) or None)."""
    return _resolved(entry)[:4]


def _resolved(entry):
    """_resolve's answer and the object itself."""
    import importlib

    obj = entry
    label = (f"{getattr(entry, '__module__', '')}."
             f"{getattr(entry, '__qualname__', repr(entry))}")
    if isinstance(entry, str):
        label = entry
        parts = entry.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
        else:
            raise ImportError(f"cannot resolve {entry}")
    if isinstance(obj, type):
        init = getattr(obj.__init__, "__code__", None)
        return label, {init} - {None}, set(), None, obj
    codes, target = set(), obj
    while target is not None:
        if hasattr(target, "__code__"):
            codes.add(target.__code__)
        target = getattr(target, "__wrapped__", None)
    if codes:
        return label, codes, set(), None, obj
    owner = getattr(obj, "__objclass__", None)
    if owner is not None:  # a method of a class written in C (Tensor.softmax)
        return label, set(), set(), (owner, obj.__name__), obj
    return label, set(), {id(obj)}, None, obj


def _library_dirs():
    import torch

    import mha
    import mha_book

    # the library and the book's package first (PACKAGES: the package's
    # own frames), then torch
    dirs = [os.path.dirname(os.path.abspath(m.__file__))
            for m in (mha, mha_book, torch)]
    return tuple(d + os.sep for d in dirs), os.path.join(
        dirs[1], "exercises", "__init__.py")


#: how many of ``_library_dirs()``'s folders are the package's (mha, mha_book)
PACKAGES = 2
#: the package's top-level names, as they start a dotted name
PACKAGE_NAMES = ("mha", "mha_book")


def _standard_library(path):
    """Whether ``path`` is a file of Python's standard library (whose
    frames pass a call on: ``functools.singledispatch(torch.softmax)`` is
    the student's call of it)."""
    stdlib = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
    return path.startswith(stdlib) and not any(
        part in path for part in ("site-packages", "dist-packages"))


class _Watch:
    """Notes the first call of a forbidden function while the student's
    function runs, whoever makes it: a profiler sees Python's calls and
    those of C functions made from Python, a torch function mode every call
    of a torch function, from C too (``map``, ``operator``); and notes the
    functions of mha the student's code enters."""

    def __init__(self, forbidden, allowed=None, given=()):
        self.codes, self.builtins, self.methods = {}, {}, []
        self.objects = {}
        # mha's functions the student's code enters (None: not noted), but
        # those ``allowed`` and those of what the case gives (``given``)
        self.mha_calls = None if allowed is None else []
        self.allowed = set()
        for entry in allowed or ():
            try:
                self.allowed |= _resolved(entry)[1]
            except (ImportError, AttributeError):
                continue
        self.given = _given(given)
        self.mha_code = {}
        for entry in forbidden:
            try:
                label, codes, builtins, method, obj = _resolved(entry)
            except (ImportError, AttributeError):
                continue  # a name the installed package does not have
            self.codes.update(dict.fromkeys(codes, label))
            self.builtins.update(dict.fromkeys(builtins, label))
            self.objects[id(obj)] = label
            if method:
                self.methods.append((*method, label))
        last = {str(e).rsplit(".", 1)[-1] for e in forbidden}
        # a softmax exercise: any library softmax or attention is banned
        self.family = bool(last & SOFTMAX_FAMILY)
        self.libraries, self.runner = _library_dirs()
        self.grader = os.path.abspath(__file__)
        self.called, self.in_torch = None, 0

    def torch_call(self, func):
        """A torch function is called (from its function mode)."""
        if self.called:
            return
        label = self.objects.get(id(func))
        name = getattr(func, "__name__", "")
        if label is None and self.family and BANNED_IN_SOFTMAX.search(name):
            label = f"torch's {name}"
        if label is not None:  # whoever calls it: the student's runs
            self.called = label

    def _from_student(self, frame):
        """Whether ``frame`` runs the student's code: code that is neither
        mha's nor torch's nor the grader's (the standard library's frames
        passed over, to the code that called them)."""
        while frame is not None:
            path = os.path.abspath(frame.f_code.co_filename)
            if path == self.runner:
                return True
            if path.startswith(self.libraries) or path == self.grader:
                return False
            if not _standard_library(path):
                return True
            frame = frame.f_back
        return False

    def _mha_entered(self, frame):
        """Notes a function of mha entered from the student's code."""
        code = frame.f_code
        mine = self.mha_code.get(code)
        if mine is None:
            path = os.path.abspath(code.co_filename)
            mine = self.mha_code[code] = (
                path.startswith(self.libraries[:PACKAGES])
                and path != self.runner)
        caller = frame.f_back
        if (not mine or code in self.allowed or code in self.given
                or any(v is frame.f_locals.get("self")
                       for v in self.given.values())
                or caller is None or os.path.abspath(
                    caller.f_code.co_filename).startswith(
                        self.libraries[:PACKAGES])):
            return  # (mha's own calls of itself are not noted)
        label = (f"{frame.f_globals.get('__name__', 'mha')}."
                 f"{getattr(code, 'co_qualname', code.co_name)}")
        if label not in self.mha_calls:
            self.mha_calls.append(label)

    def profile(self, frame, event, arg):
        if event == "call" and self.mha_calls is not None:
            self._mha_entered(frame)
        if self.called:
            return
        if event == "call" and frame.f_code in self.codes:
            self.called = self.codes[frame.f_code]
        elif event == "call" and self.in_torch and self._from_student(frame):
            self.called = ("!runs Python code of its own inside a torch "
                           "operation, where the watch cannot see it "
                           f"({frame.f_code.co_name}, called by torch)")
        elif event == "c_call":
            if id(arg) in self.builtins:
                self.called = self.builtins[id(arg)]
            for owner, method, label in self.methods:
                if (getattr(arg, "__name__", None) == method
                        and isinstance(getattr(arg, "__self__", None), owner)):
                    self.called = label

    def banned(self, fn):
        """The label of ``fn`` if it is itself a forbidden function."""
        target = fn
        while target is not None:
            code = getattr(target, "__code__", None)
            if code in self.codes:
                return self.codes[code]
            if id(target) in self.builtins:
                return self.builtins[id(target)]
            target = getattr(target, "__wrapped__", None) or getattr(
                target, "func", None)
        return None

    def audit(self, event):
        """An audit event while the watch is on: the student's code
        switching the profiler (or a tracer) off or over."""
        if not self.own and event in ("sys.setprofile", "sys.settrace"):
            self.called = self.called or (
                f"!calls {event}, which switches off the grader's watch")

    def __enter__(self):
        global _AUDITED
        if not _AUDITED:  # once per load of this file: hooks stay for good
            _AUDITED = True
            sys.addaudithook(_audit)
        self.mode = _torch_mode(self)
        self.mode.__enter__()
        self.previous = sys.getprofile()
        self.own = True
        sys.setprofile(self.profile)
        self.own = False
        _WATCHING.append(self)
        return self

    def __exit__(self, *exc):
        _WATCHING.remove(self)
        self.own = True
        sys.setprofile(self.previous)
        self.mode.__exit__(*exc)


_WATCHING, _AUDITED = [], False  # the watches on; this file's audit hook


def _audit(event, args):
    if _WATCHING and event.startswith("sys.set"):
        _WATCHING[-1].audit(event)


def _given(args):
    """{code object or id: object} of the callables and objects a case
    gives the student's function (chapter 09's cost function, a model)."""
    found, todo = {}, [args]
    while todo and len(found) < 256:
        value = todo.pop()
        if isinstance(value, (tuple, list)):
            todo += list(value)
        elif isinstance(value, dict):
            todo += list(value.values())
        elif value is not None and not isinstance(
                value, (int, float, str, bool)):
            code = getattr(value, "__code__", None)
            found[code if code is not None else id(value)] = value
    return found


def _torch_mode(watch):
    """A torch function mode that tells ``watch`` of every torch call."""
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            watch.torch_call(func)
            watch.in_torch += 1  # this mode is off until func returns
            try:
                return func(*args, **(kwargs or {}))
            finally:
                watch.in_torch -= 1

    return Mode()


_KEPT = None  # what run() relies on, kept before any student code ran


def _keep():
    """[(owner, name, object)] of what run() and its helpers call."""
    import base64 as b64
    import builtins

    import torch

    from mha_book import exercises as ex

    names = {torch: ("save", "load", "is_tensor", "Tensor"),
             io: ("BytesIO",), b64: ("b64encode",), json: ("dump", "dumps"),
             hmac: ("new", "compare_digest"), hashlib: ("sha256",),
             sys: ("setprofile", "getprofile", "_getframe",
                   "_current_frames"),
             os: ("path", "getcwd"),
             ex: ("_call", "_clone", "_changed_inputs", "_describe",
                  "_Stub", "_Timeout", "_reader_state_kept"),
             builtins: ("isinstance", "getattr", "open", "str", "len",
                        "list", "dict", "id", "type", "print")}
    kept = [(owner, name, getattr(owner, name))
            for owner, attrs in names.items() for name in attrs]
    mine = globals()  # this file's functions, however it was loaded
    kept += [(mine, name, value) for name, value in list(mine.items())
             if callable(value) and not name.startswith("__")]
    return kept


def _other_threads():
    """The Python threads alive beside this one (tqdm's monitor, started by
    a chapter's training loop, excepted): in the verification's process,
    only the student's code starts one."""
    import threading

    frames = _original(sys, "_current_frames")()
    me = threading.get_ident()
    names = []
    for ident in frames:
        thread = threading._active.get(ident)
        if ident == me or (thread is not None and type(
                thread).__module__.startswith("tqdm")):
            continue
        names.append(getattr(thread, "name", f"thread {ident}"))
    return names


def _original(owner, name):
    """``owner.name`` as it was before any student code ran (_KEPT), so a
    rebinding after the last check changes nothing the grader does."""
    for kept_owner, kept_name, value in _KEPT or ():
        if kept_owner is owner and kept_name == name:
            return value
    return getattr(owner, name)


def _tampered(kept):
    """The names in ``kept`` rebound since."""
    out = []
    for owner, name, value in kept:
        if isinstance(owner, dict):
            now, where = owner.get(name), "mha_grader"
        else:
            now, where = getattr(owner, name, None), owner.__name__
        if now is not value:
            out.append(f"{where}.{name}")
    return out


@contextlib.contextmanager
def _quiet():
    """No output and no warnings from the student's function (nbgrader
    gives 0 to a test cell that writes to stderr)."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield


def _plain(value):
    """``value`` as plain tensors, numbers, tuples and lists (a tensor
    subclass or a tuple subclass of the student's turned into torch's and
    Python's own), so that saving it runs none of the student's code."""
    import torch

    if issubclass(type(value), torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            plain = torch.Tensor.detach(value).clone()
        return torch.Tensor.as_subclass(plain, torch.Tensor)
    if value is None or type(value) in (bool, int, float, complex, str):
        return value
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bool):  # a subclass's, numpy's
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"cannot grade {type(value).__name__}")


def run(check, fn, cases):
    """[outcome] of ``fn`` on ``cases``: {"case", "message", "stub",
    "value" (what it returned, saved by torch.save, base64)}."""
    import torch

    from mha_book import exercises as ex

    kept = _KEPT or _keep()
    outcomes = []
    for case in cases:
        if outcomes and outcomes[-1].get("timeout"):
            outcomes.append({"case": case.name, "stub": False,
                             "message": "not run after the time limit"})
            continue
        args, kwargs = ex._clone(case.args), ex._clone(case.kwargs)
        pristine = ex._clone(case.args), ex._clone(case.kwargs)
        watch = _Watch(check.forbidden, None if check.name.startswith(
            QUESTION) else check.allowed or (), (args, kwargs))
        banned = watch.banned(fn)
        with _quiet(), watch:
            if banned:
                value, message = None, f"is {banned}"
            else:
                value, message = ex._call(fn, args, kwargs, check.time_limit,
                                          lambda line: None, case.name)
            if message is None:  # still watched: a subclass's own code
                try:
                    value = _plain(value)
                except Exception:  # noqa: BLE001 (said below)
                    message = (f"returned {ex._describe(value)}, which "
                               "cannot be graded: return tensors, numbers, "
                               "tuples or lists")
        banned = banned or watch.called
        if banned and banned.startswith("!"):  # a way round the watch
            message = f"{banned[1:]}: not graded"
        elif banned:
            message = (f"calls {banned}, which does what this exercise asks "
                       "you to write: write it yourself")
        threads = _other_threads() if _KEPT else []
        if threads and not message:
            message = (f"other Python threads ran beside the function "
                       f"({', '.join(threads[:3])}), where the watch cannot "
                       "see them: not graded")
        rebound = _tampered(kept)
        if rebound:
            message = (f"the code changed {', '.join(rebound[:3])}, which "
                       "the grader uses: not graded")
        outcome = {"case": case.name, "stub": isinstance(message, ex._Stub),
                   "timeout": isinstance(message, ex._Timeout),
                   "mha": [] if banned else watch.mha_calls or []}
        if message is None:
            changed = ex._changed_inputs(fn, args, kwargs, *pristine)
            if changed:
                message = (f"changed its input {', '.join(changed)} in "
                           "place; work on a copy")
        if message is None:
            buffer = _original(io, "BytesIO")()
            try:
                _original(torch, "save")(value, buffer)
                outcome["value"] = _original(base64, "b64encode")(
                    buffer.getvalue()).decode()
            except Exception:  # noqa: BLE001 (a value that cannot be saved)
                message = (f"returned {ex._describe(value)}, which cannot be "
                           "graded: return tensors, numbers, tuples or lists")
        outcome["message"] = None if message is None else str(message)
        outcomes.append(outcome)
    return outcomes


def grade(name, fn):
    """The hidden test: grade ``fn`` on check ``name``'s course cases;
    raises AssertionError with the report unless every case passes."""
    from mha_book import exercises as ex

    check = spec(name)
    with ex._reader_state_kept():
        outcomes = run(check, fn, build_cases(check, seed(name)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "outcomes.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(outcomes, f)
        done = subprocess.run([sys.executable, "-I", __file__, "judge", name,
                               path], capture_output=True, text=True,
                              timeout=600)
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise AssertionError(
            f"the grader failed:\n{done.stderr[-2000:]}") from None
    if not result["passed"]:
        raise AssertionError(result["report"])
    print(result["report"])


# --- the judge's side: a fresh process --------------------------------------


def judge(name, outcomes, grading=GRADING, cases=None, check=None):
    """{"passed", "report"} for the outcomes of check ``name`` (None: the
    function was never run on them)."""
    import torch

    from mha_book import exercises as ex

    if outcomes is None:
        return {"passed": False, "report": (
            f"Not graded: the notebook stopped before the test of {name!r} "
            "ran (an error that ended Python, or the time limit).")}
    check = check or spec(name, grading)
    if cases is None:
        cases = build_cases(check, seed(name, grading))
    if [c.name for c in cases] != [o["case"] for o in outcomes]:
        return {"passed": False, "report": (
            "the graded cases differ from the ones the notebook ran: the "
            "notebook changed torch's or Python's random numbers, or the "
            "course's files changed during the run")}
    lines, failures, stubs = [], [], []
    for case, outcome in zip(cases, outcomes):
        message = outcome["message"]
        if message is None:
            try:
                actual = torch.load(io.BytesIO(base64.b64decode(
                    outcome["value"])), weights_only=True, map_location="cpu")
            except Exception as error:  # noqa: BLE001 (an odd value)
                actual, message = None, (
                    "returned a value that is not a tensor, a number or a "
                    f"tuple/list of them ({type(error).__name__})")
        if message is None:
            expected = check.reference(*ex._clone(case.args),
                                       **ex._clone(case.kwargs))
            message = ex._judge(check, expected, actual)
        stubs.append(bool(outcome["stub"]))
        if message:
            failures.append(f"case '{case.name}': {message}")
        lines.append(f"  {'FAIL' if message else 'ok  '} {case.name}"
                     + (f": {message}" if message else ""))
    hint = check.hint if settings(grading)["hints"] else ""
    if cases and all(stubs):
        report = ("Graded: not written yet (every case raised "
                  "NotImplementedError or returned None).")
    else:
        header = (f"Graded on this course's {len(cases)} cases of "
                  f"{name!r} (the public cases and the course's own):")
        footer = (f"All {len(cases)} cases passed." if not failures else
                  f"{len(failures)} of {len(cases)} cases failed.")
        report = "\n".join([header, *lines, footer]
                           + ([f"Hint: {hint}"] if failures and hint else []))
    report = "\n".join(ex._wrap(line) for line in report.split("\n"))
    return {"passed": not failures, "report": report}


# --- reading the answer cells (the verification's static part) --------------
# Code is read, never run, here. A function whose code names the package's
# answer (its forbidden names, the check's reference) scores 0; code that can
# reach around a grade (threads, processes, the profiler, the import system,
# the kernel, files), a private name of mha, or a library softmax in a softmax
# exercise is flagged for the teacher to read, and keeps its score.

REVIEW_MODULES = ("threading", "_thread", "concurrent", "multiprocessing",
                  "subprocess", "ctypes", "importlib", "runpy", "inspect",
                  "builtins", "unittest", "signal", "gc", "shutil", "socket",
                  "pickle", "marshal", "pty", "code", "codeop", "dis",
                  "sqlite3", "nbgrader", "asyncio", "urllib", "http",
                  "requests", "operator", "copyreg", "mha_grader",
                  "mha_course", "atexit", "weakref", "faulthandler",
                  "pydoc", "pkgutil", "string", "timeit", "doctest",
                  "cProfile", "profile", "pdb", "bdb", "trace")
REVIEW_NAMES = ("__import__", "__builtins__", "exec", "eval", "compile",
                "globals", "vars", "setattr", "delattr", "open",
                "breakpoint")
REVIEW_DOTTED = ("sys.setprofile", "sys.settrace", "sys.modules",
                 "sys._getframe", "sys.exit", "os.system", "os.popen",
                 "os._exit", "os.kill", "os.fork", "os.chdir", "os.remove",
                 "os.unlink", "os.rename", "os.replace", "os.environ",
                 "os.putenv", "os.spawnv",
                 "os.execv", "os.execl", "os.write", "os.open",
                 "sys.path", "sys.argv", "sys.meta_path", "sys.path_hooks",
                 "os.getppid", "os.listdir", "os.scandir", "os.walk",
                 "torch.overrides", "torch.utils._python_dispatch",
                 "torch.jit", "torch.library", "torch.ops",
                 "torch.utils.cpp_extension", "logging.config",
                 "torch.load", "torch.utils.benchmark", "torch.serialization",
                 "torch.package", "functools.singledispatch")
REVIEW_ATTRS = ("__globals__", "__code__", "__closure__", "__subclasses__",
                "__builtins__", "__dict__", "__class__", "f_back",
                "f_globals", "f_locals", "write_text", "write_bytes",
                "showtraceback", "user_ns", "run_cell", "set_custom_exc",
                "__setattr__", "__delattr__", "__getattribute__",
                "__setitem__", "__delitem__", "__import__", "__loader__",
                "__spec__", "__wrapped__", "__self__", "__func__",
                "__mro__", "__bases__", "__base__", "__reduce__",
                "__reduce_ex__", "read_text", "read_bytes", "FileIO",
                "fdopen", "addaudithook", "get_type_hints", "ForwardRef",
                "resolve_name", "get_field", "Formatter", "apply_", "map_",
                "map2_")
# a container's methods that put something into it
FILLS = ("append", "extend", "insert", "update", "setdefault", "add",
         "__setitem__", "appendleft", "push")
# methods that Python or torch call on their own (when an object is freed,
# saved, or passed to a torch function)
REVIEW_DEFS = ("__del__", "__torch_function__", "__torch_dispatch__",
               "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
               "__getnewargs__", "__getnewargs_ex__", "__getattr__",
               "__getattribute__", "__init_subclass__", "__set_name__",
               "__class_getitem__", "__instancecheck__", "__subclasscheck__")
# a string in an answer cell that names the grader's files or another
# process's (/proc): flagged
REVIEW_STRINGS = re.compile(r"(^|/)proc/|secret|mha_grader|mha_course|"
                            r"gradebook|nbgrader|/grading\b|exchange", re.I)
# a softmax exercise: any of these, named by a student's function, is a
# library's softmax (flagged unless forbidden already scores it 0)
# (and what computes one inside: a distribution's normalised logits, the
# gradient of a cross-entropy, TorchScript compiled from a string)
SOFTMAX_LIKE = re.compile(
    r"soft_?(max|min)|logsumexp|attention|distribution|categorical|"
    r"cross_entropy|nll_loss|kl_div|gumbel|autograd|^grad$|backward|jit|"
    r"^compile$|logits|^vjp$|^jvp$|^jac(rev|fwd)$|hessian|logcumsumexp|"
    r"^func$", re.I)
# and these torch functions, called by it, score 0
BANNED_IN_SOFTMAX = re.compile(r"soft_?(max|min)|attention|cross_entropy|"
                               r"nll_loss|gumbel", re.I)
SOFTMAX_FAMILY = {"softmax", "log_softmax", "Softmax", "LogSoftmax"}
REFERENCE_ATTRS = ("_REGISTRY", "reference")  # mha_book.exercises' own answers


def _python(text):
    """A cell's code as Python: IPython's magics turned into calls, and the
    code a magic runs (``%%time``, ``%timeit``, ``%%capture``...) added
    after the cell, so that it is read too."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        code = TransformerManager().transform_cell(text)
    except Exception:  # noqa: BLE001 (no IPython, or odd input: as is)
        return text
    try:
        tree = ast.parse(code)
    except (SyntaxError, RecursionError, ValueError, MemoryError):
        return code
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("run_cell_magic", "run_line_magic")):
            for arg in node.args[1:]:
                if not (isinstance(arg, ast.Constant)
                        and isinstance(arg.value, str)):
                    continue
                inner = _python(arg.value)
                try:
                    ast.parse(inner)
                except (SyntaxError, RecursionError, ValueError,
                        MemoryError):
                    continue  # a magic's options, not code
                code += "\n" + inner
    return code


def _dotted(node, imports):
    """'torch.nn.functional.softmax' for F.softmax (``imports``: what each
    imported name stands for); the chain as written if its base is not an
    import; None for a chain on a call or a subscript."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    base = imports.get(node.id, node.id)
    return ".".join([base, *reversed(parts)])


def _is_code(text):
    """Whether a string is Python code that calls or looks something up
    (``"kit.append(__import__('torch').softmax)"``), not prose."""
    if len(text) < 6 or not re.search(r"[.(]", text):
        return False
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(n, (ast.Call, ast.Import, ast.ImportFrom))
               or (isinstance(n, ast.Attribute)
                   and isinstance(n.value, ast.Name))
               for n in ast.walk(tree))


def _module(dotted):
    """Whether ``dotted`` names a module (mha.masks), not a function."""
    import importlib.util

    try:
        return importlib.util.find_spec(dotted) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _private_name(dotted):
    """Whether ``dotted`` is a private name of mha or torch (torch._C, where
    its function modes are switched off)."""
    parts = (dotted or "").split(".")
    return parts[0] in (*PACKAGE_NAMES, "torch") and any(
        p.startswith("_") and not p.startswith("__") for p in parts[1:])


class _Names(ast.NodeVisitor):
    """The names a definition reads from outside itself (``reads``) and
    those it binds (parameters, assignments, imports: ``bound``)."""

    def __init__(self, node):
        self.reads, self.bound = set(), set()
        self.visit(node)
        self.reads -= self.bound

    def visit_Name(self, node):
        (self.reads if isinstance(node.ctx, ast.Load) else
         self.bound).add(node.id)

    def visit_arg(self, node):
        self.bound.add(node.arg)

    def visit_alias(self, node):
        self.bound.add((node.asname or node.name).split(".")[0])


class Reading:
    """The answer cells of a notebook read with its other code cells:
    ``cells`` is [(kind, grade id, source)], kind "answer" or "code"."""

    def __init__(self, cells):
        self.imports, self.answers, self.defs = {}, [], {}
        self.findings = []
        for kind, grade_id, text in cells:
            try:
                tree = ast.parse(_python(text))
            except SyntaxError:
                if kind == "answer":
                    self.review(grade_id, None, "does not parse as Python")
                continue
            for node in ast.walk(tree):  # every cell's imports, in order
                if isinstance(node, ast.Import):
                    for a in node.names:
                        self.imports[a.asname or a.name.split(".")[0]] = (
                            a.name if a.asname else a.name.split(".")[0])
                elif isinstance(node, ast.ImportFrom) and node.module:
                    for a in node.names:
                        self.imports[a.asname or a.name] = (
                            f"{node.module}.{a.name}")
            if kind == "answer":
                self.answers.append((grade_id, tree, text))
                for statement in tree.body:
                    for name in self._binds(statement):
                        self.defs.setdefault(name, []).append(
                            (grade_id, statement))
        for grade_id, tree, text in self.answers:
            self._anywhere(grade_id, tree, text)

    @staticmethod
    def _binds(statement):
        """The names a top-level statement binds or fills: its targets,
        the containers it stores into or fills (``tools["f"] = ...``,
        ``helpers.append(...)``), and a function's ``global`` names."""
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.ClassDef)):
            return [statement.name] + [
                name for node in ast.walk(statement)
                if isinstance(node, ast.Global) for name in node.names]
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            return [(a.asname or a.name).split(".")[0]
                    for a in statement.names]
        targets = []
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                targets.append(node.id)
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and \
                    isinstance(node.ctx, ast.Store):
                base = node.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    targets.append(base.id)
            elif (isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Attribute)
                  and node.func.attr in FILLS
                  and isinstance(node.func.value, ast.Name)):
                targets.append(node.func.value.id)
                if node.args and isinstance(node.args[0], ast.Name):
                    targets.append(node.args[0].id)  # dict.update(kit, f=)
        return targets

    def review(self, cell, line, what, check=None):
        finding = {"level": "review", "cell": cell, "line": line,
                   "what": what, "check": check}
        if finding not in self.findings:
            self.findings.append(finding)

    def _anywhere(self, cell, tree, text):
        """Flags for what an answer cell does anywhere (top level too); an
        attribute chain is read whole (a.b.c once, not a.b and a too)."""
        inner = {id(n.value) for n in ast.walk(tree)
                 if isinstance(n, ast.Attribute)}
        called = {id(n.func) for n in ast.walk(tree)
                  if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            line = getattr(node, "lineno", None)
            if id(node) in inner:
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = ([a.name for a in node.names]
                           if isinstance(node, ast.Import)
                           else [node.module or ""])
                for module in modules:
                    if module.split(".")[0] in REVIEW_MODULES:
                        self.review(cell, line, f"imports {module}")
                if isinstance(node, ast.ImportFrom):
                    for a in node.names:
                        if _private_name(f"{node.module}.{a.name}"):
                            self.review(cell, line, "uses the private "
                                        f"{node.module}.{a.name}")
            elif isinstance(node, ast.Name) and node.id in REVIEW_NAMES:
                self.review(cell, line, f"uses {node.id}")
            elif (isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name)
                  and node.func.id == "type" and len(node.args) == 3):
                self.review(cell, line, "makes a class with type(name, "
                            "bases, namespace)")
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.review(cell, line, "binds " + ", ".join(node.names)
                            + " from inside a function (global)")
            elif (isinstance(node, ast.Name)
                  and node.id in ("getattr", "hasattr")
                  and id(node) not in called):
                self.review(cell, line, f"passes {node.id} on (a name "
                            "looked up by another function)")
            elif (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.name in REVIEW_DEFS):
                self.review(cell, line, f"defines {node.name} (code that "
                            "Python or torch runs on its own)")
            elif isinstance(node, ast.ClassDef) and any(
                    re.search(r"^torch\.Tensor$|TensorBase|FunctionMode|"
                              r"DispatchMode", _dotted(b, self.imports) or "")
                    for b in node.bases):
                self.review(cell, line, f"defines {node.name}, a subclass "
                            "of torch's tensor or of a torch mode")
            elif (isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name)
                  and node.func.id == "getattr" and len(node.args) > 1
                  and not isinstance(node.args[1], ast.Constant)):
                self.review(cell, line, "uses getattr with a name made at "
                            "run time")
            elif (isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr")
                  and len(node.args) > 1
                  and isinstance(node.args[1], ast.Constant)):
                name = str(node.args[1].value)
                base = _dotted(node.args[0], self.imports) or ""
                dotted = f"{base}.{name}"
                if (name.startswith("_") or name in REVIEW_ATTRS
                        or base.split(".")[0] in REVIEW_MODULES
                        or any(dotted == d or dotted.startswith(d + ".")
                               for d in REVIEW_DOTTED)):
                    self.review(cell, line, f"uses getattr(..., {name!r})"
                                + (f" ({dotted})" if base else ""))
            elif (isinstance(node, ast.arg) and isinstance(
                    node.annotation, ast.Constant)) or (isinstance(
                        node, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and isinstance(node.returns, ast.Constant)):
                self.review(cell, line, "annotates with a string (which "
                            "typing.get_type_hints runs as code)")
            elif (isinstance(node, ast.Constant)
                  and isinstance(node.value, str) and _is_code(node.value)):
                self.review(cell, line, "holds Python code in a string: "
                            f"{node.value[:60]!r}")
            elif (isinstance(node, ast.Constant)
                  and isinstance(node.value, str)
                  and ("/proc/" in node.value
                       or not re.search(r"\s", node.value))
                  and REVIEW_STRINGS.search(node.value)):
                self.review(cell, line, "names the path or file "
                            f"{node.value[:60]!r}")
            elif isinstance(node, ast.Name) and self.imports.get(
                    node.id, "").split(".")[0] in REVIEW_MODULES:
                self.review(cell, line, f"uses {self.imports[node.id]}")
            elif isinstance(node, ast.Attribute):
                dotted = _dotted(node, self.imports) or ""
                parts = dotted.split(".") if dotted else []
                chain, base = [node.attr], node.value
                while isinstance(base, ast.Attribute):
                    chain.append(base.attr)
                    base = base.value
                prefixes = {".".join(parts[:i + 1])
                            for i in range(len(parts))}
                if (prefixes & set(REVIEW_DOTTED)
                        or set(chain) & set(REVIEW_ATTRS)
                        or (parts and parts[0] in REVIEW_MODULES
                            and isinstance(base, ast.Name))):
                    self.review(cell, line, "uses "
                                f"{dotted or ast.unparse(node)}")
                elif _private_name(dotted):
                    self.review(cell, line, f"uses the private {dotted}")
            elif isinstance(node, ast.Call) and isinstance(
                    node.func, ast.Attribute) and node.func.attr in (
                        "run_line_magic", "run_cell_magic", "system",
                        "getoutput") and "get_ipython" in (
                            _dotted(node.func.value.func, {})
                            if isinstance(node.func.value, ast.Call)
                            else ""):
                magic = node.args[0].value if node.args and isinstance(
                    node.args[0], ast.Constant) else node.func.attr
                self.review(cell, line, f"runs the magic or shell "
                            f"command {magic!r}")
            elif isinstance(node, ast.Name) and node.id == "get_ipython" \
                    and "get_ipython" in text:
                self.review(cell, line, "uses get_ipython (the kernel)")
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete,
                                 ast.AnnAssign)):
                targets = (node.targets if isinstance(node, (ast.Assign,
                                                             ast.Delete))
                           else [node.target])
                for target in targets:
                    base = target
                    while isinstance(base, (ast.Attribute, ast.Subscript)):
                        base = base.value
                    if not isinstance(base, ast.Name) or not isinstance(
                            target, (ast.Attribute, ast.Subscript)):
                        continue
                    if base.id in self.imports or (
                            isinstance(target, ast.Attribute)
                            and base.id not in ("self", "cls")):
                        self.review(cell, line, "rebinds or changes "
                                    f"{ast.unparse(target)}")

    def reached(self, fn):
        """[(cell, statement)] of the answer cells' definitions that ``fn``
        reaches (its own, those it reads, and so on)."""
        todo, seen, out = [fn], set(), []
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for cell, statement in self.defs.get(name, []):
                out.append((cell, statement))
                todo += [n for n in _Names(statement).reads
                         if n in self.defs]
        return out

    def check(self, grade_id, name, fn, forbidden):
        """The findings of test cell ``grade_id`` (check ``name`` of
        function ``fn``; ``forbidden``: dotted names, as
        ``_forbidden_labels`` gives them)."""
        last = {entry.rsplit(".", 1)[-1] for entry in forbidden}
        family = bool(last & SOFTMAX_FAMILY)
        found = []

        def zero(cell, line, what):
            found.append({"level": "zero", "cell": cell, "line": line,
                          "what": what, "check": grade_id})

        allowed_mha = _allowed(name)

        def named(cell, line, label, short, attribute=False):
            if not name.startswith(QUESTION) and (
                    short == "_REGISTRY" or attribute and short in
                    REFERENCE_ATTRS):
                zero(cell, line, f"{fn} uses {label}, the package's answer "
                     "to the exercise")
            elif short in last:
                zero(cell, line, f"{fn} names {label}, which does what "
                     "this exercise asks you to write")
            elif (not name.startswith(QUESTION)
                  and label.split(".")[0] in PACKAGE_NAMES
                  and not _module(label) and label not in allowed_mha
                  and not any(a.startswith(label + ".")
                              for a in allowed_mha)):
                found.append({"level": "review", "cell": cell, "line": line,
                              "check": grade_id, "what": (
                                  f"{fn} calls {label}, of the package: "
                                  "is it the package's answer?")})
            elif family and SOFTMAX_LIKE.search(short):
                found.append({"level": "review", "cell": cell, "line": line,
                              "check": grade_id, "what": (
                                  f"{fn} calls {label}, a library softmax: "
                                  "is it the exercise's own work?")})

        for cell, statement in self.reached(fn):
            local = _Names(statement).bound - {fn}
            for node in ast.walk(statement):
                line = getattr(node, "lineno", None)
                if isinstance(node, ast.Attribute):
                    label = _dotted(node, self.imports) or f".{node.attr}"
                    named(cell, line, label, node.attr, attribute=True)
                elif (isinstance(node, ast.Name)
                      and isinstance(node.ctx, ast.Load)
                      and node.id not in self.defs and node.id not in local):
                    label = self.imports.get(node.id, node.id)
                    named(cell, line, label, label.rsplit(".", 1)[-1])
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for a in node.names:
                        label = (f"{node.module}.{a.name}" if isinstance(
                            node, ast.ImportFrom) else a.name)
                        named(cell, line, label, label.rsplit(".", 1)[-1])
                elif (isinstance(node, ast.Call)
                      and isinstance(node.func, ast.Name)
                      and node.func.id == "getattr" and len(node.args) > 1
                      and isinstance(node.args[1], ast.Constant)
                      and isinstance(node.args[1].value, str)):
                    named(cell, line, f"getattr(..., {node.args[1].value!r})",
                          node.args[1].value)
                elif isinstance(node, ast.MatchClass):  # case object(a=f)
                    for attr in node.kwd_attrs:
                        named(cell, line, f"case ...({attr}=...)", attr,
                              attribute=True)
        reached = {id(statement) for _, statement in self.reached(fn)}
        for cell, tree, _ in self.answers:  # the rest of the answer cells
            for statement in tree.body:
                if id(statement) in reached:
                    continue
                for node in ast.walk(statement):
                    short = (node.attr if isinstance(node, ast.Attribute)
                             else node.id if isinstance(node, ast.Name)
                             else None)
                    if short in last and short not in self.defs:
                        label = (_dotted(node, self.imports) or short
                                 if isinstance(node, ast.Attribute) else
                                 self.imports.get(short, short))
                        found.append({
                            "level": "review", "cell": cell,
                            "line": getattr(node, "lineno", None),
                            "check": grade_id, "what": (
                                f"an answer cell names {label}, which {fn} "
                                "may not call, outside it: does it reach "
                                f"{fn}?")})
        unique = []
        for finding in found:
            if finding not in unique:
                unique.append(finding)
        return unique


# --- the sandbox: Landlock, Linux's unprivileged access control -------------
# The student's code runs twice as the teacher's user: in nbgrader's kernel
# (``kernel``) and in the verification's process (``run``). Both restrict
# themselves before any of it runs, with Landlock (Linux 5.13 or later; no
# root needed; it holds for every process they start): files are read only
# beneath Python's own folders and the system's (and, for the kernel, the
# course's grading/ and questions/ folders and its notebook's folder) and
# written only beneath a folder of their own; no TCP connection (the kernel
# may bind its own ports), and, from Linux 6.12, no signal to a process
# outside. So a submission cannot change the course (its grader, gradebook
# or other students' work), read other students' work, reach the network,
# or, in the verification, read the course's secrets at all. Where Landlock
# is missing the code runs unrestricted and the verification says so.

_LANDLOCK = {"create": 444, "add_rule": 445, "restrict_self": 446}
_FS_EXECUTE, _FS_WRITE, _FS_READ, _FS_READ_DIR = 1, 2, 4, 8
_FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 14, 1 << 15
SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc",
               "/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat",
               "/sys/devices/system/cpu", "/sys/fs/cgroup")
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
# the environment a submission's code never sees: the hub's token of the
# teacher's server (a notebook could print it into its feedback), nbgrader's
PRIVATE_ENV = re.compile(r"^(JPY_|JUPYTERHUB|NBGRADER)|TOKEN|SECRET|PASSW|"
                         r"_KEY$|^KEY$|CREDENTIAL|AUTH", re.I)


def _libc():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi():
    """Landlock's ABI version on this kernel (0: none, or not Linux)."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return 0
    try:
        abi = _libc().syscall(_LANDLOCK["create"], None, ctypes.c_size_t(0),
                              ctypes.c_uint32(1))  # ..._CREATE_RULESET_VERSION
    except (OSError, AttributeError):
        return 0
    return max(int(abi), 0)


def sandbox(read=(), write=(), ports=()):
    """Restrict this process and all it starts: read and run files only
    beneath ``read``, change them only beneath ``write``, bind TCP only on
    ``ports``, connect nowhere. Returns Landlock's ABI (0: not restricted,
    the kernel has no Landlock)."""
    import ctypes

    class Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64),
                    ("scoped", ctypes.c_uint64)]

    class Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]

    class Port(ctypes.Structure):
        _fields_ = [("allowed", ctypes.c_uint64), ("port", ctypes.c_uint64)]

    abi = landlock_abi()
    if not abi:
        return 0
    libc = _libc()

    def call(name, *args):
        done = libc.syscall(_LANDLOCK[name], *args)
        if done < 0:
            error = ctypes.get_errno()
            raise OSError(error, f"landlock {name}: {os.strerror(error)}")
        return done

    fs = (1 << 13) - 1  # every right of ABI 1, then those added since
    fs |= ((1 << 13) if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    fs |= _FS_IOCTL_DEV if abi >= 5 else 0
    file_rights = fs & (_FS_EXECUTE | _FS_WRITE | _FS_READ | _FS_TRUNCATE
                        | _FS_IOCTL_DEV)
    attr = Ruleset(fs, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = call("create", ctypes.byref(attr), ctypes.c_size_t(size),
                   ctypes.c_uint32(0))
    try:
        reading = _FS_EXECUTE | _FS_READ | _FS_READ_DIR
        for paths, rights in ((read, reading), (write, fs)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue  # a folder this machine does not have
                try:
                    allowed = rights if os.path.isdir(path) else \
                        rights & file_rights
                    call("add_rule", ctypes.c_int(ruleset), ctypes.c_int(1),
                         ctypes.byref(Beneath(allowed, fd)),
                         ctypes.c_uint32(0))
                finally:
                    os.close(fd)
        for port in ports if abi >= 4 else ():
            call("add_rule", ctypes.c_int(ruleset), ctypes.c_int(2),
                 ctypes.byref(Port(1, int(port))), ctypes.c_uint32(0))
        if libc.prctl(38, 1, 0, 0, 0):  # PR_SET_NO_NEW_PRIVS
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        call("restrict_self", ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return abi


def python_dirs(*executables):
    """The folders Python (and ``executables``' environments) read from."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix,
             sys.base_exec_prefix}
    for exe in (sys.executable, *executables):
        for path in (os.path.abspath(exe), os.path.realpath(exe)):
            found.add(os.path.dirname(os.path.dirname(path)))
    found |= {p for p in sys.path if os.path.isabs(p)}
    import importlib.util

    for name in ("mha", "mha_book", "torch", "IPython", "ipykernel",
                 "matplotlib",
                 "numpy"):  # where each is, editable installs included
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for folder in (spec and spec.submodule_search_locations) or ():
            found |= {os.path.realpath(folder),
                      os.path.dirname(os.path.realpath(folder))}
    return found | set(SYSTEM_DIRS)


def allowed(paths, protected):
    """``paths`` without what lies beneath ``protected``: a path that holds
    a protected one is replaced by its other entries (recursively)."""
    protected = [os.path.realpath(p) for p in protected]
    out = set()
    todo = [os.path.realpath(p) for p in paths if os.path.exists(p)]
    while todo:
        path = todo.pop()
        inside = [p for p in protected
                  if p == path or p.startswith(path.rstrip(os.sep) + os.sep)]
        if not inside:
            out.add(path)
        elif path not in protected and os.path.isdir(path):
            todo += [os.path.join(path, entry) for entry in os.listdir(path)]
    return sorted(p for p in out  # no path beneath another one
                  if not any(p.startswith(q.rstrip(os.sep) + os.sep)
                             for q in out))


def kernel(course, argv):
    """``python -I mha_grader.py kernel COURSE -- KERNEL COMMAND``: start
    nbgrader's kernel (mha_course.SandboxedKernelManager) restricted: it
    reads Python, COURSE/grading and COURSE/questions (the hidden tests'
    grader, the kernel's secret) and its notebook's folder, writes that
    folder and a temporary one, binds only its own ports."""
    here = os.getcwd()
    read = {os.path.join(course, "grading"), os.path.join(course,
                                                          "questions")}
    ports, connection = [], None
    if "-f" in argv:
        connection = argv[argv.index("-f") + 1]
        read.add(connection)
        with open(connection, encoding="utf-8") as f:
            info = json.load(f)
        # its own ports, and any free one (ipykernel's IOPub pipe binds one)
        ports = [0, *(v for k, v in info.items() if k.endswith("_port"))]
        if info.get("transport", "tcp") != "tcp":
            read.add(os.path.dirname(connection))
    tmp = tempfile.mkdtemp(prefix="mha-kernel-")
    for name in list(os.environ):  # the teacher's tokens stay out of it
        if PRIVATE_ENV.search(name) and name != "JPY_PARENT_PID":
            del os.environ[name]
    os.environ.update(TMPDIR=tmp, HOME=tmp, IPYTHONDIR=os.path.join(
        tmp, "ipython"), MPLCONFIGDIR=os.path.join(tmp, "matplotlib"))
    # psutil, which ipykernel asks for its children at shutdown, reads every
    # process's /proc entry, which the sandbox denies (and ipykernel logs an
    # ERROR): the kernel does without it
    shadow = os.path.join(tmp, "shadow")
    os.mkdir(shadow)
    with open(os.path.join(shadow, "psutil.py"), "w", encoding="utf-8") as f:
        f.write("raise ImportError('not in the grading sandbox')\n")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [shadow, *filter(None, [os.environ.get("PYTHONPATH")])])
    protected = [course, os.path.dirname(connection or course)]
    sandbox(read=sorted(read) + allowed(python_dirs(argv[0]), protected),
            write=[here, tmp, *DEVICES], ports=ports)
    os.execv(argv[0], argv)


# --- the verification: the notebook again, away from its kernel -------------
# After `nbgrader autograde` has run a submission in its kernel (whose test
# cells give the student the grader's report at once), the course verifies
# every test cell without trusting that kernel: this process reads the
# notebook's code; a fresh process (`serve`) builds the course's cases and,
# later, judges; a third (`run`), in an empty folder, runs the answer cells
# and the chapter's other code cells in order, calls the student's function
# on those cases where each test cell stands, and writes what it returned.
# The verdict is the judge's and the reading's, never the notebook's.

BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
GRADE_CALL = re.compile(r'\["grade"\]\(("(?:[^"\\]|\\.)*"), (\w+)\)')


def _source(cell):
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def test_call(text):
    """(check name, function name) of a test cell's hidden grade, or None."""
    if BEGIN_HIDDEN not in text:
        return None
    match = GRADE_CALL.search(text.split(BEGIN_HIDDEN, 1)[1])
    return (json.loads(match[1]), match[2]) if match else None


def notebook_cells(nb):
    """The code cells of an assignment notebook (a dict) as the
    verification runs them: {"kind": "answer" | "code", "grade_id",
    "source"} or, for a test cell, {"kind": "test", "grade_id", "check",
    "fn"} (its visible part is not run; its hidden grade is the test)."""
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        text = _source(cell)
        call = test_call(text)
        if call:
            cells.append({"kind": "test", "grade_id": meta.get("grade_id"),
                          "check": call[0], "fn": call[1]})
        else:
            cells.append({"kind": "answer" if meta.get("solution") else
                          "code", "grade_id": meta.get("grade_id"),
                          "source": text})
    return cells


def _function(code, module, name, defaults, cells):
    """A function rebuilt from its code (_Pickler: a case's lambda or
    closure, such as chapter 09's cost functions)."""
    import importlib
    import marshal
    import types

    namespace = importlib.import_module(module).__dict__
    return types.FunctionType(marshal.loads(code), namespace, name, defaults,
                              tuple(types.CellType(c) for c in cells))


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        import marshal
        import types

        if isinstance(obj, types.FunctionType) and "<" in obj.__qualname__:
            return _function, (marshal.dumps(obj.__code__), obj.__module__,
                               obj.__name__, obj.__defaults__,
                               tuple(c.cell_contents
                                     for c in obj.__closure__ or ()))
        return NotImplemented


def _allowed(name):
    """The dotted names of the package's functions check ``name``'s function
    may use (its exercise's ``allowed``, aliases included)."""
    from mha_book import exercises

    entry = exercises._REGISTRY.get(name)
    return tuple(entry.allowed) if entry is not None else ()


def _forbidden_labels(check):
    """The dotted names of what ``check``'s function may not call."""
    labels = [e for e in check.forbidden if isinstance(e, str)]
    for entry in check.forbidden:
        name = getattr(entry, "__qualname__", "")
        if not isinstance(entry, str) and name and "<" not in name and \
                not check.name.startswith(QUESTION):
            labels.append(f"{entry.__module__}.{name}")
    return labels


def serve(grading=GRADING):
    """The judge's process (``python -I mha_grader.py serve GRADING``): reads
    a line {"cells", "dir"}, writes the course's cases to DIR/cases.pkl and
    answers {"cases", "findings"}; reads a line {"outcomes": FILE} and
    answers {"results": {test cell: {"passed", "report"}}}."""
    request = json.loads(sys.stdin.readline())
    cells = request["cells"]
    plan, built, findings = {}, {}, []
    unreadable = None  # code too deep to read: every test scores 0
    try:
        reading = Reading([(c["kind"], c["grade_id"], c["source"])
                           for c in cells if c["kind"] != "test"])
    except (RecursionError, MemoryError, ValueError) as error:
        reading, unreadable = Reading([]), error
    for cell in cells:
        if cell["kind"] != "test":
            continue
        try:
            check = spec(cell["check"], grading)
            cases = build_cases(check, seed(cell["check"], grading,
                                            verification=True))
        except Exception as error:  # noqa: BLE001 (an unknown check)
            built[cell["grade_id"]] = error
            continue
        labels = _forbidden_labels(check)
        built[cell["grade_id"]] = (check, cases)
        plan[cell["grade_id"]] = {
            "check": cell["check"], "time_limit": check.time_limit,
            "forbidden": labels, "allowed": check.allowed,
            "cases": [(c.name, c.args, c.kwargs) for c in cases]}
        try:
            if unreadable is None:
                findings += reading.check(cell["grade_id"], cell["check"],
                                          cell["fn"], labels)
        except (RecursionError, MemoryError, ValueError) as error:
            unreadable = error
        if unreadable is not None:
            findings.append({"level": "zero", "cell": None, "line": None,
                             "check": cell["grade_id"], "what": (
                                 "the answer cells cannot be read "
                                 f"({type(unreadable).__name__})")})
    path = os.path.join(request["dir"], "cases.pkl")
    with open(path, "wb") as f:
        _Pickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(plan)
    print(json.dumps({"cases": path,
                      "findings": reading.findings + findings}), flush=True)
    line = sys.stdin.readline()
    outcomes = {}
    if line.strip():
        try:
            with open(json.loads(line)["outcomes"], encoding="utf-8") as f:
                outcomes = json.load(f)
        except (OSError, ValueError, KeyError):
            outcomes = {}
    results = {}
    for cell in cells:
        if cell["kind"] != "test":
            continue
        entry = built[cell["grade_id"]]
        if isinstance(entry, Exception):
            results[cell["grade_id"]] = {"passed": False, "report": (
                f"the course cannot grade {cell['check']!r}: {entry!r}")}
            continue
        check, cases = entry
        got = outcomes.get(cell["grade_id"]) if isinstance(
            outcomes, dict) else None
        try:
            results[cell["grade_id"]] = judge(cell["check"], got, grading,
                                              cases, check)
        except Exception as error:  # noqa: BLE001 (odd outcomes)
            results[cell["grade_id"]] = {"passed": False, "report": (
                f"the outcomes could not be judged: {error!r}")}
    print(json.dumps({"results": results}), flush=True)


def run_cells(cells_file, cases_file, out_file):
    """The student's process (``python -I mha_grader.py run CELLS CASES
    OUT``, a key on stdin): runs the code cells in order in an IPython
    shell; at each test cell, the student's function on that test's cases;
    writes {"results": {test cell: outcomes}, "mac"} to OUT after each
    test, sealed with the key (``seal``), and ends at once (no exit
    handler of the student's runs after the last write)."""
    key = bytes.fromhex(sys.stdin.readline().strip())  # before student code
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    streams = (sys.stdout, sys.stderr)  # the log's, whatever it rebinds
    with open(cases_file, "rb") as f:
        plan = pickle.load(f)
    with open(cells_file, encoding="utf-8") as f:
        cells = json.load(f)
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    from mha_book.exercises import Case

    global _KEPT
    _KEPT = _keep()
    out = open(out_file, "w", encoding="utf-8")  # noqa: SIM115
    sandbox(read=allowed(python_dirs(), [os.path.dirname(GRADING),
                                         os.path.dirname(out_file)]),
            write=[os.getcwd(), *DEVICES])
    results = {}
    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    tests = [i for i, c in enumerate(cells) if c["kind"] == "test"]
    for cell in cells[:tests[-1] + 1] if tests else []:
        if cell["kind"] != "test":
            shell.run_cell(cell["source"], store_history=False)
            continue
        entry = plan.get(cell["grade_id"])
        if entry is None:
            continue
        fn = shell.user_ns.get(cell["fn"])
        cases = [Case(name, args=args, kwargs=kwargs)
                 for name, args, kwargs in entry["cases"]]
        if not callable(fn):
            results[cell["grade_id"]] = [
                {"case": c.name, "stub": False, "timeout": False,
                 "message": f"{cell['fn']} is not defined"} for c in cases]
        else:
            check = Spec(entry["check"], None, None,
                         time_limit=entry["time_limit"],
                         forbidden=entry["forbidden"],
                         allowed=entry["allowed"])
            results[cell["grade_id"]] = run(check, fn, cases)
        out.seek(0)  # the file opened before the sandbox
        out.truncate()
        out.write(seal(results, key))
        out.flush()
    out.seek(0)
    out.truncate()
    out.write(seal(results, key))
    out.close()
    for stream in streams:
        stream.flush()
    os._exit(0)


def seal(results, key):
    """``results`` as JSON with an HMAC under ``key``, which only the
    grader's code in the student's process holds."""
    dumps = _original(json, "dumps")
    text = dumps(results, sort_keys=True)
    mac = _original(hmac, "new")(key, text.encode(),
                                 _original(hashlib, "sha256")).hexdigest()
    return dumps({"results": text, "mac": mac})


def unseal(text, key):
    """The results ``seal`` wrote, None if none were written, or False if
    they do not carry the key's HMAC (the student's code wrote them)."""
    try:
        sealed = json.loads(text)
        body, mac = sealed["results"], sealed["mac"]
    except (ValueError, KeyError, TypeError):
        return None
    expected = hmac.new(key, str(body).encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, str(mac)):
        return False
    return json.loads(body)


def verify(cells, grading=GRADING, python=None, timeout=1200):
    """Verify a submission's test cells (``cells``: notebook_cells'); the
    student's code runs in a fresh ``python -I`` in an empty folder, at most
    ``timeout`` seconds. Returns {"results": {test cell: {"passed",
    "report"}}, "findings": [...], "run": {"returncode", "timed_out",
    "log"}}."""
    import signal

    python = python or sys.executable
    me = os.path.abspath(__file__)
    private = secret_path(grading, verification=True)
    if not os.path.exists(private):  # a course made before it existed
        import secrets

        os.makedirs(os.path.dirname(private), exist_ok=True)
        with open(os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                          0o600), "w", encoding="utf-8") as f:
            f.write(secrets.token_hex(32) + "\n")
    with tempfile.TemporaryDirectory(prefix="mha-verify-") as tmp:
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        err = open(os.path.join(tmp, "judge.err"), "w+", encoding="utf-8")
        judge_process = subprocess.Popen(
            [python, "-I", me, "serve", grading], cwd=tmp, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        try:
            judge_process.stdin.write(json.dumps({"cells": cells,
                                                  "dir": tmp}) + "\n")
            judge_process.stdin.flush()
            ready = judge_process.stdout.readline()
            if not ready:
                err.seek(0)
                raise RuntimeError(f"the judge failed: {err.read()[-2000:]}")
            ready = json.loads(ready)
            cells_file = os.path.join(tmp, "cells.json")
            out_file = os.path.join(tmp, "outcomes.json")
            with open(cells_file, "w", encoding="utf-8") as f:
                json.dump(cells, f)
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith("JUPYTER")
                   and not PRIVATE_ENV.search(k)}
            home = os.path.join(work, ".home")  # all it may write: work
            env.update(MPLBACKEND="Agg", IPYTHONDIR=os.path.join(home, "ip"),
                       HOME=home, TMPDIR=home, CUDA_VISIBLE_DEVICES="",
                       MPLCONFIGDIR=os.path.join(home, "matplotlib"))
            os.mkdir(home)
            log_path = os.path.join(tmp, "run.log")
            key = os.urandom(32)
            with open(log_path, "w", encoding="utf-8") as log:
                runner = subprocess.Popen(
                    [python, "-I", me, "run", cells_file, ready["cases"],
                     out_file], cwd=work, env=env, stdout=log,
                    stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                    start_new_session=True)
                runner.stdin.write(key.hex().encode() + b"\n")
                runner.stdin.close()
                timed_out = False
                try:
                    runner.wait(timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                finally:
                    try:  # and whatever it started
                        os.killpg(runner.pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                    runner.wait()
            with open(log_path, encoding="utf-8", errors="replace") as f:
                log_text = f.read()[-4000:]
            try:
                with open(out_file, encoding="utf-8") as f:
                    outcomes = unseal(f.read(), key)
            except OSError:
                outcomes = None
            checked = os.path.join(tmp, "checked.json")
            with open(checked, "w", encoding="utf-8") as f:
                json.dump(outcomes or {}, f)
            judge_process.stdin.write(json.dumps({"outcomes": checked})
                                      + "\n")
            judge_process.stdin.flush()
            answer = judge_process.stdout.readline()
            if not answer:
                err.seek(0)
                raise RuntimeError(f"the judge failed: {err.read()[-2000:]}")
            results = json.loads(answer)["results"]
            if outcomes is False:  # written by the student's code
                results = {grade_id: {"passed": False, "report": (
                    "Not graded: the verification's outcomes were not the "
                    "grader's (the notebook's code wrote them)")}
                    for grade_id in results}
        finally:
            judge_process.kill()
            judge_process.wait()
            err.close()
    findings = ready["findings"]
    tests = {c["grade_id"]: c for c in cells if c["kind"] == "test"}
    for grade_id, outs in (outcomes or {}).items():
        entered = sorted({label for o in outs if isinstance(o, dict)
                          for label in o.get("mha", [])}) if isinstance(
                              outs, list) else []
        for label in entered:
            findings = [*findings, {
                "level": "review", "cell": None, "line": None,
                "check": grade_id, "what": (
                    f"{tests.get(grade_id, {}).get('fn', 'the function')} "
                    f"ran {label}, of the package: is it the package's "
                    "answer?")}]
    if outcomes is False:
        findings = [*findings, {"level": "review", "cell": None,
                                "line": None, "check": None, "what": (
                                    "the verification's outcomes were "
                                    "written by the notebook's code")}]
    return {"results": results, "findings": findings,
            "run": {"returncode": runner.returncode, "timed_out": timed_out,
                    "log": log_text, "sandbox": landlock_abi()}}


def main(argv):
    if len(argv) == 3 and argv[0] == "judge":
        with open(argv[2], encoding="utf-8") as f:
            outcomes = json.load(f)
        print(json.dumps(judge(argv[1], outcomes)))
        return 0
    if len(argv) == 2 and argv[0] == "serve":
        serve(argv[1])
        return 0
    if len(argv) == 4 and argv[0] == "run":
        run_cells(*argv[1:])
        return 0
    if len(argv) > 3 and argv[0] == "kernel" and argv[2] == "--":
        kernel(argv[1], argv[3:])
    if argv == ["landlock"]:  # can this machine sandbox a submission?
        abi = landlock_abi()
        print(f"Landlock ABI {abi}: a submission's code is sandboxed" if abi
              else "no Landlock here: a submission's code would run with "
              "your rights (Linux 5.13 or later, landlock in its lsm= list, "
              "and a container runtime that allows its system calls)")
        return 0 if abi else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.modules.setdefault("mha_grader", sys.modules["__main__"])
    sys.exit(main(sys.argv[1:]))
