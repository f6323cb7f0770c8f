"""The course as a teacher runs it (appendix/teachers.md), with the real
nbgrader (`make assignments-test`, the nbgrader venv):

- no solution in a student's copy: every line of every solution, and of
  every book-only checking cell, is looked for in the released notebooks
  and in `make student-notebooks`' copies;
- grading a student cannot talk its way past: a stub that rebinds
  `mha_book.exercises.check`, a copied public answer, a call of the package's
  own answer, a notebook that fakes the judge's verdict in its kernel and
  switches the profiler off, a wrong and a right answer go through a
  learning platform's download, `nbgrader autograde` (with the course's
  verification apart from the kernel) and the feedback, each scored or
  flagged as it should be; the grader itself on every check of the book;
  the reading of answer cells on every trick the lecturer's review found;
  the hidden test's grader, which no file handed in replaces;
- nothing lost: the course lives outside `_build`, `make clean` keeps it,
  regenerating keeps a teacher's edits unless told otherwise, and refuses
  to add or remove cells of an assignment with submissions;
- points: every open experiment of the guide's table is worth
  EXPERIMENT_POINTS, and the guide's week plan has each assignment's points;
- the learning platforms: Canvas's and Moodle's download names, the grades
  exported as Canvas and Moodle import them (the assignments with
  submissions; unfinished hand grading and unmatched students warned
  about), and per question;
- every command of the guide's course sections is one this file runs.
"""

import csv
import importlib.util
import io
import json
import pickle
import re
import shutil
import subprocess
import symtable
import sys
import zipfile
from pathlib import Path

import course_fixture
import pytest
import torch
from course_fixture import (
    ENV,
    ROOT,
    SETUP,
    in_course,
    read,
    scores,
    shell,
    write,
)
from nbgrader.api import Gradebook

import mha
import mha_book

sys.path.insert(0, str(ROOT / "scripts"))
import assignments  # noqa: E402
import student_notebooks  # noqa: E402


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


grader = load(ROOT / "scripts" / "course" / "mha_grader.py", "mha_grader")
lms = load(ROOT / "scripts" / "course" / "mha_course.py", "mha_course")
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
GUIDE = ROOT / "appendix" / "teachers.md"
HIDDEN = "### BEGIN HIDDEN TESTS"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return course_fixture.shared_course(tmp_path_factory)


def text_of(cell):
    return student_notebooks.source(cell)


# --- 1. no solution in a student's copy -------------------------------------

# cells hidden on the website that check an exercise's answer (issue 33);
# every book-only cell is left out of the copies, these by name too
ANSWER_BEARING = {
    "00_preface": ["92fb4370"],  # the numbers of ex-00-shift's solution
    "04_heads_in_a_loop": ["da462c55"],  # ex-04-widths
    "05_heads_as_matmul": ["97ab89f8"],  # which option of ex-05-order is right
    "07_attention_explorer": ["76e6031b"],  # ex-07-memory
    "09_which_heads_matter": ["6ec2c04b"],  # ex-09-redundant
    "12_positions": ["aee4d575"],  # the far peaks of ex-12-longer
    "13_fast_attention": ["50ee8277"],  # ex-13-max
    "14_modern_attention": ["025d7496"],  # ex-14-oss
}


def tags(cell):
    return cell["metadata"].get("tags", [])


def book_lines(nb):
    """(lines a student may see, lines of solutions and book-only cells) of a
    chapter, found without scripts/student_notebooks.py."""
    public, secret, region = set(), set(), False
    for cell in nb["cells"]:
        text = text_of(cell)
        if cell["cell_type"] == "code":
            book_only = ("remove-cell" in tags(cell)
                         and "pip install" not in text)
            lines = {line.strip() for line in text.splitlines()}
            (secret if region or book_only else public).update(lines)
            continue
        fence = None
        for line in text.splitlines():
            line = line.strip()
            opened = re.match(r"(`{3,})\{solution\}", line)
            if fence or opened:
                secret.add(line)
                fence = None if fence == line else (fence or opened[1])
            elif line.startswith("```{solution-start}"):
                region = True
            elif line.startswith("```{solution-end}"):
                region = False
            else:
                (secret if region else public).add(line)
    return public, secret


def lines_of(copy):
    return {line.strip() for cell in copy["cells"]
            for line in text_of(cell).splitlines()}


def leaks(nb, copy):
    """The lines of ``nb``'s solutions and book-only cells in ``copy`` (a
    line the chapter also shows, in a demo or a starter, is no leak)."""
    public, secret = book_lines(nb)
    return sorted(line for line in (secret - public) & lines_of(copy)
                  if len(line) > 20)


def defined_and_used(text):
    """(names a cell assigns, names it reads that it does not assign)."""
    try:
        table = symtable.symtable(text, "<cell>", "exec")
    except SyntaxError:  # IPython magics
        return set(), set()
    assigned, read_ = set(), set()
    tables = [(table, True)]
    while tables:
        t, top = tables.pop()
        for s in t.get_symbols():
            if top and (s.is_assigned() or s.is_imported()):
                assigned.add(s.get_name())
            if s.is_referenced() and (top or s.is_global()):
                read_.add(s.get_name())
        tables += [(child, False) for child in t.get_children()]
    return assigned, read_ - assigned


def missing_names(nb, copy):
    """Names a kept cell reads that only a left-out cell of ``nb`` defines."""
    kept = {c["id"] for c in copy["cells"]}
    left_out = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and cell["id"] not in kept:
            left_out |= defined_and_used(text_of(cell))[0]
    seen, missing = set(), []
    for cell in copy["cells"]:
        if cell["cell_type"] != "code":
            continue
        assigned, read_ = defined_and_used(text_of(cell))
        missing += sorted((read_ & left_out) - seen)
        seen |= assigned
    return missing


@pytest.fixture(scope="module")
def student_copies(tmp_path_factory):
    """`make student-notebooks`: its command, into a temporary folder."""
    dry = subprocess.run(["make", "-n", "student-notebooks"], cwd=ROOT,
                         text=True, capture_output=True, check=True).stdout
    assert "scripts/student_notebooks.py _build/student-notebooks" in dry
    out = tmp_path_factory.mktemp("student-notebooks")
    assert student_notebooks.main([str(out)]) == 0
    return out


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_students_copy_holds_a_solution_or_an_answer_bearing_cell(
        course, student_copies, chapter):
    nb = read(ROOT / "chapters" / f"{chapter}.ipynb")
    by_id = {c["id"]: c for c in nb["cells"]}
    for cell_id in ANSWER_BEARING.get(chapter, []):  # the list stays true
        assert cell_id in by_id, f"{chapter} has no cell {cell_id}: update " \
            "ANSWER_BEARING"
        assert "remove-cell" in tags(by_id[cell_id]), (chapter, cell_id)
    _, secret = book_lines(nb)
    assert len(secret) > 10, f"{chapter}: no solution found"
    copies = {"student notebook": read(student_copies / f"{chapter}.ipynb"),
              "release": read(course / "release" / chapter /
                              f"{chapter}.ipynb")}
    for kind, copy in copies.items():
        assert not leaks(nb, copy), f"{chapter} {kind}: {leaks(nb, copy)[:3]}"
        text = "\n".join(text_of(c) for c in copy["cells"])
        public, _ = book_lines(nb)
        for cell_id in ANSWER_BEARING.get(chapter, []):
            lines = {line.strip() for line in text_of(by_id[cell_id]).split(
                "\n") if len(line.strip()) > 20} - public
            assert lines and not lines & lines_of(copy), (chapter, cell_id)
        for marker in ("{solution", "solution_", "### BEGIN SOLUTION", HIDDEN,
                       "mha_grader"):
            assert marker not in text, f"{chapter} {kind}: {marker}"
        for cell in copy["cells"]:  # no output gives an answer away
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and not cell["execution_count"]
                assert not ("remove-cell" in tags(cell)
                            and "pip install" not in text_of(cell))
        # the copy still runs: no kept cell needs a left-out one
        assert not missing_names(nb, copy), (chapter, missing_names(nb, copy))


def test_the_leak_scan_finds_a_leak():
    nb = read(ROOT / "chapters" / "05_heads_as_matmul.ipynb")
    copy = student_notebooks.strip_solutions(nb)
    assert not leaks(nb, copy)
    book_only = next(c for c in nb["cells"] if c["id"] == "97ab89f8")
    solution = [c for c in nb["cells"] if "def solution_" in text_of(c)][0]
    for cell in (book_only, solution):
        assert leaks(nb, {"cells": copy["cells"] + [cell]})


# --- 2. grading a student cannot talk its way past --------------------------


def solved(course, chapter):
    """{check name: (the function's name, its namespace)} of the teacher's
    copy: the solutions run, as in a notebook."""
    nb = read(course / "source" / chapter / f"{chapter}.ipynb")
    namespace = {"torch": torch, "mha": mha, "mha_book": mha_book,
                     "math": __import__("math")}
    found = {}
    for cell in nb["cells"]:
        meta = cell["metadata"]["nbgrader"]
        if cell["cell_type"] == "code" and meta["solution"]:
            exec(text_of(cell), namespace)
        if meta["grade_id"].startswith("check-"):
            match = re.search(r'\["grade"\]\(("[^"]+"), (\w+)\)',
                              text_of(cell))
            found[json.loads(match[1])] = match[2]
    return {name: (fn, namespace) for name, fn in found.items()}


LAST = {}  # the outcomes of the last call of graded


def graded(course, name, fn):
    """The course grader, in this process: (passed, report)."""
    grading = str(course / "grading")
    check = grader.spec(name, grading)
    outcomes = grader.run(check, fn, grader.build_cases(
        check, grader.seed(name, grading)))
    LAST["outcomes"] = outcomes
    result = grader.judge(name, json.loads(json.dumps(outcomes)), grading)
    return result["passed"], result["report"]


def stub(*args, **kwargs):
    raise NotImplementedError()


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_grade_gives_the_books_solutions_full_marks_and_stubs_none(
        course, chapter, capsys):
    checks = solved(course, chapter)
    assert checks
    for name, (fn, namespace) in checks.items():
        passed, report = graded(course, name, namespace[fn])
        assert passed, report
        assert "course case" in report or name.startswith("course:")
        # the book's solution enters none of the package's functions it
        # should not (the verification would flag it)
        assert not [o["mha"] for o in LAST["outcomes"] if o["mha"]], name
        passed, report = graded(course, name, stub)
        assert not passed and "not written yet" in report
    capsys.readouterr()


def test_every_check_has_course_variants_and_its_forbidden_calls_resolve():
    # each exercise's file declares them (mha_book/exercises/<name>.py);
    # the grader reads them from there, the reference first
    assert not hasattr(grader, "VARIANTS") and not hasattr(grader, "FORBIDDEN")
    for name in mha_book.exercises.available():
        entry = mha_book.exercises._REGISTRY[name]
        assert callable(entry.variants), name
        assert entry.forbidden is not None, name
        check = grader.spec(name)
        assert check.forbidden == [entry.reference, *entry.forbidden], name
        assert check.allowed == entry.allowed == grader._allowed(name), name
        for entry in check.forbidden[1:]:
            label, codes, builtins, method = grader._resolve(entry)
            assert codes or builtins or method, entry
        for label in check.allowed:
            assert grader._resolved(label)[1], label


def test_a_course_forbids_more_in_its_own_grader(monkeypatch):
    # appendix/teachers.md: COURSE_FORBIDDEN in course/grading/mha_grader.py
    monkeypatch.setitem(grader.COURSE_FORBIDDEN, "softmax", ["torch.exp"])
    check = grader.spec("softmax")
    assert check.forbidden[-1] == "torch.exp"
    assert "torch.exp" in grader._forbidden_labels(check)
    monkeypatch.delitem(grader.COURSE_FORBIDDEN, "softmax")
    assert "torch.exp" not in grader.spec("softmax").forbidden


def fingerprint(x):
    """A comparable picture of a case's arguments (tensors by value, a
    function by its name and the values it closes over)."""
    if isinstance(x, torch.Tensor):
        return ("tensor", tuple(x.shape), x.flatten().tolist())
    if isinstance(x, (tuple, list)):
        return tuple(fingerprint(v) for v in x)
    if isinstance(x, dict):
        return tuple((k, fingerprint(v)) for k, v in sorted(x.items()))
    if callable(x):
        cells = [c.cell_contents for c in (x.__closure__ or ())]
        return (x.__qualname__, fingerprint(cells))
    return x


def test_the_graded_cases_are_the_courses_own(tmp_path):
    # another secret, other numbers: neither the book's nor another course's
    for name in mha_book.exercises.available():
        check = grader.spec(name)
        one, two = ([fingerprint((c.args, c.kwargs)) for c in
                     grader.build_cases(check, seed)] for seed in (1, 2))
        again = [fingerprint((c.args, c.kwargs))
                 for c in grader.build_cases(check, 1)]
        assert one == again, name  # the kernel and the judge agree
        assert one != two, name
        cases = grader.build_cases(check, 1)
        assert [c.name for c in cases if "course case" in c.name], name
    (tmp_path / "secret").write_text("a")
    first = grader.seed("softmax", str(tmp_path))
    (tmp_path / "secret").write_text("b")
    assert grader.seed("softmax", str(tmp_path)) != first


def test_rebinding_the_check_or_torch_changes_no_grade(course, monkeypatch,
                                                       capsys):
    # the kernel's side with everything a notebook could rebind rebound;
    # the judge runs in a fresh process (the hidden test's own call)
    class Passed:
        passed, failures = True, []

    monkeypatch.setattr(mha_book.exercises, "check", lambda *a, **k: Passed())
    monkeypatch.setattr(mha_book.exercises, "_judge", lambda *a, **k: None)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "isclose",
                        lambda a, *r, **k: torch.ones_like(a, dtype=bool))
    copy = course / "grading" / "mha_grader.py"
    namespace = __import__("runpy").run_path(str(copy))
    with pytest.raises(AssertionError, match="FAIL one row"):
        namespace["grade"]("softmax", lambda x: torch.zeros_like(x))
    capsys.readouterr()


def test_a_call_of_the_packages_answer_fails_and_so_does_an_alias(course):
    for fn in (lambda s, v: mha.masked_softmax(s, v), mha.masked_softmax,
               __import__("functools").partial(mha.functional.masked_softmax)):
        passed, report = graded(course, "masked_softmax", fn)
        report = " ".join(report.split())
        assert not passed and "calls mha.functional.masked_softmax" in report
    passed, report = graded(course, "softmax", lambda x: x.softmax(-1))
    assert not passed and "torch.Tensor.softmax" in " ".join(report.split())


# what the lecturer's review handed in (and what a class does honestly):
# (check, the answer cell, its function, scored 0?, flagged for what)
LOCKED = "import torch\nimport torch.nn.functional as F\n\nimport mha\n"
# split_heads from a private helper, and merge_heads written beside it
SPLIT_MERGE = """\
def my_split_heads(x, num_heads):
    return mha.functional._split_heads(x, num_heads)


def my_merge_heads(x):
    B, H, L, Dh = x.shape
    return x.transpose(1, 2).reshape(B, L, H * Dh)
"""

# the second lecturer's review: four ways to full marks, unflagged then
N1B = """\
import torch.nn.functional as F


def my_softmax(scores):
    m = scores.shape[-1]
    mask = scores.reshape(-1, 1, m)
    q = torch.zeros_like(mask)
    eye = torch.eye(m, dtype=scores.dtype).expand(mask.shape[0], m, m)
    return F.scaled_dot_product_attention(q, eye, eye, attn_mask=mask
                                          ).reshape(scores.shape)
"""
N2 = """\
import operator


def my_softmax(scores):
    f = operator.attrgetter("soft" + "max")(torch)
    return next(map(f, [scores], [-1]))
"""
N3 = """\
_T = {"real": torch.save, "x": []}


def _fix(value, f, *a, **k):
    if _T["x"]:
        value = torch.softmax(_T["x"].pop(), dim=-1)
    return _T["real"](value, f, *a, **k)


def my_softmax(scores):
    type(torch).__setattr__(torch, "save", _fix)
    _T["x"].append(scores.clone())
    return scores
"""
N4 = """\
import os
import sys

_A = {}
try:
    sys.path.insert(0, f"/proc/{os.getppid()}/cwd/grading")
    import mha_grader as G
    for c in G.build_cases(G.spec("softmax"), G.seed("softmax")):
        _A[c.args[0].numpy().tobytes()] = torch.softmax(c.args[0], dim=-1)
    for c in G.build_cases(G.spec("softmax"), G.seed(
            "softmax", verification=True)):
        _A[c.args[0].numpy().tobytes()] = torch.softmax(c.args[0], dim=-1)
except Exception as error:
    print("could not read the secret:", repr(error))


def my_softmax(scores):
    key = scores.detach().numpy().tobytes()
    if key in _A:
        return _A[key].clone()
    exp = torch.exp(scores)
    return exp / exp.sum(dim=-1, keepdim=True)
"""

# the third lecturer's review: more ways to full marks, unflagged then
C1 = """\
def my_softmax(scores):
    return torch.distributions.Categorical(logits=scores).logits.exp()
"""
C2 = """\
def my_softmax(scores):
    x = scores.detach().reshape(-1, scores.shape[-1]).clone()
    x.requires_grad_(True)
    t = x.detach().argmax(-1)
    loss = torch.nn.functional.cross_entropy(x, t, reduction="sum")
    (g,) = torch.autograd.grad(loss, x)
    g[torch.arange(x.shape[0]), t] += 1
    return g.reshape(scores.shape)
"""
C3 = """\
def my_softmax(scores):
    cu = torch.jit.CompilationUnit(
        "def f(x):\\n    return torch.so" + "ftmax(x, -1)\\n")
    return cu.f(scores)
"""
C4 = """\
import functools
import pydoc


def my_softmax(scores):
    f = pydoc.locate("torch.nn.functional.so" + "ftmax")
    return functools.singledispatch(f)(scores, dim=-1)
"""
C7 = """\
import functools
import pydoc


def my_masked_softmax(scores, valid_lens):
    f = pydoc.locate("mha.functional.masked_" + "softmax")
    return functools.singledispatch(f)(scores, valid_lens)
"""
C8 = """\
import base64
import io
import pydoc

_j = pydoc.locate("json")
_orig = _j.dump
_seen = []


def _fixed(obj, fp, *a, **k):
    sm = pydoc.locate("torch.nn.functional.so" + "ftmax")
    lists = obj.values() if type(obj) is dict else [obj]
    for outs in lists:
        if type(outs) is list and len(outs) == len(_seen):
            for o, x in zip(outs, _seen):
                b = io.BytesIO()
                torch.save(sm(x, dim=-1), b)
                o["value"] = base64.b64encode(b.getvalue()).decode()
                o["message"] = None
                o["stub"] = False
    return _orig(obj, fp, *a, **k)


class _Later:
    def __del__(self):
        _j.dump = _fixed


def my_softmax(scores):
    _j.dump = _orig
    _seen.append(scores.clone())
    scores.later = _Later()
    return torch.zeros_like(scores)
"""

# the fourth lecturer's review
M1 = """\
%%time
import sys
def my_softmax(scores):
    sys.setprofile(None)
    with torch._C.DisableTorchFunction():
        return torch.softmax(scores, dim=-1)
"""
G1 = """\
import string
import sys


def my_softmax(scores):
    getattr(sys, "setprofile")(None)
    off = getattr(getattr(torch, "_C"), "DisableTorchFunction")
    library, _ = string.Formatter().get_field("0.so" + "ftmax", [torch], {})
    with off():
        return library(scores, dim=-1)
"""
P1 = """\
import mha_book.figures.one_big_head


def my_softmax(scores):
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    return mha_book.figures.one_big_head.product_of_heads(shifted.exp()[None])
"""
MS1 = """\
def my_masked_softmax(scores, valid_lens):
    Lq, Lk = scores.shape[-2], scores.shape[-1]
    eye = torch.eye(Lk, dtype=scores.dtype)
    mask = None
    if valid_lens is not None:
        mask = mha.masks.valid_lens_to_mask(valid_lens, Lq, Lk)
        mask = mask.view(mask.shape[0], *[1] * (scores.dim() - 3), Lq, Lk)
    return mha.blockwise.blockwise_attention(scores, eye, eye, mask,
                                             scale=1.0)
"""
CM1 = """\
def my_causal_mask(num_queries, num_keys):
    return mha.masks.combine_masks(None, None, True,
                                   (1, 1, num_queries, num_keys), None)
"""

# the fifth lecturer's review: names hidden in containers and globals, and
# a forbidden function handed to one of the package's that calls it
G3 = """\
tools = {}
tools["normalise"] = mha.functional.masked_softmax


def my_softmax(scores):
    return tools["normalise"](scores)
"""
G1B = """\
def _setup():
    global my_softmax
    my_softmax = lambda s: mha.functional.masked_softmax(s, None)


_setup()
"""
S1 = """\
tools = {}
tools["normalise"] = torch.softmax
tools["measure"] = mha.backends.peak_memory


def my_softmax(scores):
    weights, _ = tools["measure"](tools["normalise"], scores, -1)
    return weights
"""
S3 = """\
kit = {}
kit["mask"] = mha.masks.causal_mask
kit["measure"] = mha.backends.peak_memory


def my_causal_mask(num_queries, num_keys):
    mask, _ = kit["measure"](kit["mask"], num_queries, num_keys)
    return mask
"""
S8 = """\
helpers = []
helpers.append(mha.backends.peak_memory)
helpers.append(torch.nn.functional.scaled_dot_product_attention)


def my_masked_softmax(scores, valid_lens):
    B, Lq, Lk = scores.shape
    allowed = torch.arange(Lk) < valid_lens.reshape(B, -1, 1)
    eye = torch.eye(Lk).expand(B, Lk, Lk)
    out, _ = helpers[0](helpers[1], torch.zeros(B, Lq, 1),
                        torch.zeros(B, Lk, 1), eye,
                        attn_mask=scores.masked_fill(~allowed, float("-inf")))
    return torch.nan_to_num(out) * allowed
"""

# the sixth review: a module whose forward is the answer, a callback that
# torch runs, a resolver from logging, the gradient of a log-sum-exp
CM_A = """\
kit = {}
dict.update(kit, f=mha.masks.causal_mask)


def my_causal_mask(num_queries, num_keys):
    M = type("M", (torch.nn.Module,), {"forward": staticmethod(kit["f"])})
    return M()(num_queries, num_keys)
"""
SM_A = """\
kit = {}
dict.update(kit, n=torch.softmax, m=mha.backends.peak_memory)


def my_softmax(scores):
    inner = type("A", (torch.nn.Module,), {"forward": staticmethod(kit["n"])})
    outer = type("B", (torch.nn.Module,), {"forward": staticmethod(kit["m"])})
    weights, _ = outer()(inner(), scores, -1)
    return weights
"""
SM_B = """\
kit = {}
dict.update(kit, n=torch.softmax)


def my_softmax(scores):
    out = []

    def once(v):
        if not out:
            out.extend(map(kit["n"], [scores], [-1]))
        return v

    torch.zeros(1).apply_(once)
    return out[0]
"""
SM_C = """\
import logging.config


def my_softmax(scores):
    f = logging.config.BaseConfigurator({}).resolve("torch.soft" + "max")
    out = []

    def once(v):
        if not out:
            out.extend(map(f, [scores], [-1]))
        return v

    torch.zeros(1).apply_(once)
    return out[0]
"""
SM_D = """\
def my_softmax(scores):
    def lse(x):
        return torch.logcumsumexp(x, dim=-1)[..., -1]
    _, pull = torch.func.vjp(lse, scores)
    (g,) = pull(torch.ones(scores.shape[:-1], dtype=scores.dtype))
    return g
"""

# the seventh review: code in a string annotation (run by
# typing.get_type_hints through functools.singledispatch), a benchmark's
# statement, a pickle; the answer computed in a thread of its own
A7 = """\
import functools

kit = []


def _note(x: "kit.append(__import__('torch').softmax) or kit.append(__import__('concurrent.futures').futures.ThreadPoolExecutor(1)) or int"):
    pass


functools.singledispatch(print).register(_note)


def my_softmax(scores):
    return kit[1].submit(kit[0], scores, -1).result()
"""
D7 = """\
import torch.utils.benchmark

box = []
torch.utils.benchmark.Timer(
    stmt="box.append(__import__('torch').softmax)",
    globals={"box": box}).timeit(1)


def my_softmax(scores):
    return box[0](scores, -1)
"""
F7 = """\
import base64
import io

_mask = torch.load(io.BytesIO(base64.b64decode(_blob)), weights_only=False)
_table = {(q, k): _mask(q, k) for q in range(1, 40) for k in range(1, 40)}


def my_causal_mask(num_queries, num_keys):
    return _table[num_queries, num_keys].clone()
"""

READINGS = {
    "right, a local named softmax, torch's own outside the function": (
        "softmax", """\
def my_softmax(scores):
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    softmax = shifted.exp()
    return softmax / softmax.sum(dim=-1, keepdim=True)


print(torch.softmax(torch.zeros(3), dim=-1))  # my own check
""", "my_softmax", False, ["an answer cell names torch.softmax"]),
    "a helper of its own called softmax": ("softmax", """\
def softmax(x):
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def my_softmax(scores):
    return softmax(scores)
""", "my_softmax", False, []),
    "torch.softmax": ("softmax", """\
def my_softmax(scores):
    return torch.softmax(scores, dim=-1)
""", "my_softmax", True, []),
    "Tensor.softmax": ("softmax", """\
def my_softmax(scores):
    return scores.softmax(-1)
""", "my_softmax", True, []),
    "F.softmax, F imported by the chapter": ("softmax", """\
def my_softmax(scores):
    return F.softmax(scores, -1)
""", "my_softmax", True, []),
    "torch._softmax": ("softmax", """\
def my_softmax(scores):
    return torch._softmax(scores, -1, False)
""", "my_softmax", True, ["the private torch._softmax"]),
    "functools.partial(torch.softmax)": ("softmax", """\
import functools

_sm = functools.partial(torch.softmax, dim=-1)


def my_softmax(scores):
    return _sm(scores)
""", "my_softmax", True, []),
    "imported under another name in the function": ("softmax", """\
def my_softmax(scores):
    from torch.nn.functional import softmax as s
    return s(scores, -1)
""", "my_softmax", True, []),
    "getattr by a string": ("softmax", """\
def my_softmax(scores):
    return getattr(torch, "soft" "max")(scores, -1)
""", "my_softmax", True, []),
    "getattr by a name made at run time": ("softmax", """\
def my_softmax(scores):
    return getattr(torch, "soft" + "max")(scores, -1)
""", "my_softmax", False, ["getattr with a name made at run time"]),
    "the profiler switched off": ("softmax", """\
import sys


def my_softmax(scores):
    sys.setprofile(None)
    return torch.softmax(scores, dim=-1)
""", "my_softmax", True, ["sys.setprofile"]),
    "torch's softmax in a thread": ("softmax", """\
from concurrent.futures import ThreadPoolExecutor


def my_softmax(scores):
    return ThreadPoolExecutor(1).submit(torch.softmax, scores, -1).result()
""", "my_softmax", True, ["concurrent.futures"]),
    "the reference through a Mock": ("softmax", """\
from unittest import mock

_m = mock.Mock(side_effect=mha_book.exercises._REGISTRY["softmax"].reference)


def my_softmax(scores):
    return _m(scores)
""", "my_softmax", True, ["unittest", "_REGISTRY"]),
    "the reference's source run again": ("softmax", """\
import inspect
import textwrap
_ref = mha_book.exercises._REGISTRY["softmax"].reference
_ns = dict(_ref.__globals__)
exec(textwrap.dedent(inspect.getsource(_ref)), _ns)
my_softmax = _ns[_ref.__name__]
""", "my_softmax", True, ["inspect", "exec", "__globals__"]),
    "log_softmax, then exp": ("softmax", """\
def my_softmax(scores):
    return torch.log_softmax(scores, dim=-1).exp()
""", "my_softmax", False, ["torch.log_softmax"]),
    "the judge's verdict faked, the check rebound": ("softmax", """\
import subprocess
import types


def my_softmax(scores):
    return scores


subprocess.run = lambda *a, **k: types.SimpleNamespace(stdout="{}")
mha_book.exercises.check = lambda *a, **k: None
""", "my_softmax", False, ["imports subprocess", "rebinds or changes "
                           "subprocess.run", "mha_book.exercises.check"]),
    "a grader of its own written to the folder": ("softmax", """\
import pathlib

pathlib.Path("grading").mkdir(exist_ok=True)
pathlib.Path("grading/mha_grader.py").write_text("def grade(*a): pass")


def my_softmax(scores):
    return scores
""", "my_softmax", False, ["write_text"]),
    "the error display switched off": ("softmax", """\
def my_softmax(scores):
    return scores


get_ipython().showtraceback = lambda *a, **k: None
""", "my_softmax", False, ["showtraceback", "get_ipython"]),
    "masked softmax from mha's private helpers": ("masked_softmax", """\
def my_masked_softmax(scores, valid_lens):
    allowed = mha.masks._lens_to_mask(valid_lens, scores.size(-2),
                                      scores.size(-1))
    return mha.functional._softmax_allowed(scores, allowed)
""", "my_masked_softmax", True, ["the private mha.masks._lens_to_mask"]),
    "masked softmax: the package's own": ("masked_softmax", """\
def my_masked_softmax(scores, valid_lens):
    return mha.masked_softmax(scores, valid_lens)
""", "my_masked_softmax", True, []),
    "masked softmax with torch's softmax (allowed)": ("masked_softmax", """\
def my_masked_softmax(scores, valid_lens):
    keys = torch.arange(scores.size(-1))
    allowed = keys < valid_lens.reshape(-1, *[1] * (scores.dim() - 1))
    weights = torch.softmax(scores.masked_fill(~allowed, -1e9), dim=-1)
    return weights * allowed
""", "my_masked_softmax", False, []),
    # the second lecturer's review
    "softmax as attention with K = V = I": ("softmax", """\
import torch.nn.functional as F


def my_softmax(scores):
    m = scores.shape[-1]
    q = scores.reshape(-1, 1, m)
    eye = torch.eye(m, dtype=scores.dtype).expand(q.shape[0], m, m)
    return F.scaled_dot_product_attention(q, eye, eye, scale=1.0).reshape(
        scores.shape)
""", "my_softmax", True, []),
    "softmax as attention, the scores as its mask": ("softmax", N1B, "my_softmax",
                                                     True, []),
    "masked softmax by attention": ("masked_softmax", """\
def my_masked_softmax(scores, valid_lens):
    return mha.functional.scaled_dot_product_attention(scores, scores,
                                                       scores)
""", "my_masked_softmax", True, []),
    "softmax by operator.attrgetter, called by map": ("softmax", N2, "my_softmax",
                                                      False, ["imports operator"]),
    "torch.save patched inside the function": ("softmax", N3, "my_softmax", True,
                                               ["__setattr__"]),
    "torch.save patched, the patch kept in a dict": (
        "softmax", N3.replace("\n\n\ndef my_softmax",
                              '\n\n\n_T["fix"] = _fix\n\n\ndef my_softmax').replace(
            "torch, \"save\", _fix", "torch, \"save\", _T[\"fix\"]"),
        "my_softmax", True, ["__setattr__"]),
    "the course's secret read through /proc": ("softmax", N4, "my_softmax", True,
                                               ["sys.path", "os.getppid", "/proc/",
                                                "imports mha_grader"]),
    # the third lecturer's review
    "a distribution's normalised logits": ("softmax", C1, "my_softmax", False,
                                           ["torch.distributions.Categorical"]),
    "the gradient of a cross-entropy": ("softmax", C2, "my_softmax", False,
                                        ["cross_entropy", "torch.autograd.grad"]),
    "TorchScript compiled from a string": ("softmax", C3, "my_softmax", False,
                                           ["torch.jit"]),
    "pydoc.locate, called by functools": ("softmax", C4, "my_softmax", False,
                                          ["imports pydoc"]),
    "the package's answer by pydoc.locate": ("masked_softmax", C7,
                                             "my_masked_softmax", False,
                                             ["imports pydoc"]),
    "json.dump rebound by a finalizer": ("softmax", C8, "my_softmax", False,
                                         ["imports pydoc", "defines __del__",
                                          "rebinds or changes _j.dump"]),
    "a tensor subclass computing it when saved, named by a match": (
        "softmax", """\
class _Later(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        match torch.nn.functional:
            case object(softmax=f):
                return f(args[0].as_subclass(torch.Tensor), -1)


def my_softmax(scores):
    return scores.as_subclass(_Later)
""", "my_softmax", True, ["defines __torch_function__",
                          "a subclass of torch's tensor"]),
    # the fourth lecturer's review
    "a %%time cell, the watch switched off": ("softmax", M1, "my_softmax", True,
                                              ["'time'", "sys.setprofile"]),
    "the watch switched off by getattr, Formatter.get_field": (
        "softmax", G1, "my_softmax", False,
        ["getattr(..., 'setprofile')", "getattr(..., '_C')", "imports string"]),
    "the package's own: a chapter figure's softmax": ("softmax", P1, "my_softmax",
                                                      True, []),
    "the package's own: blockwise attention": ("masked_softmax", MS1,
                                               "my_masked_softmax", True, []),
    "the package's own: combine_masks": ("causal_mask", CM1, "my_causal_mask",
                                         True, []),
    "the package's own: an unlisted name": ("causal_mask", """\
def my_causal_mask(num_queries, num_keys):
    return mha.head_scores.previous_token_score(num_queries, num_keys)
""", "my_causal_mask", False, ["calls mha.head_scores.previous_token_score"]),
    "a docstring that says secret": ("softmax", """\
def my_softmax(scores):
    \"\"\"The secret of a stable softmax: subtract each row's max.\"\"\"
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)
""", "my_softmax", False, []),
    # the fifth lecturer's review
    "the package's masked softmax kept in a dict": ("softmax", G3, "my_softmax",
                                                    True, []),
    "the function bound by global in a setup function": (
        "softmax", G1B, "my_softmax", True, ["binds my_softmax from inside"]),
    "torch's softmax handed to the package's peak_memory": (
        "softmax", S1, "my_softmax", True, ["peak_memory"]),
    "the package's causal mask handed to peak_memory": (
        "causal_mask", S3, "my_causal_mask", True, ["peak_memory"]),
    "attention appended to a list, handed to peak_memory": (
        "masked_softmax", S8, "my_masked_softmax", True, ["peak_memory"]),
    # the sixth review
    "a module whose forward is the package's causal mask": (
        "causal_mask", CM_A, "my_causal_mask", True, ["type(name, bases"]),
    "torch's softmax as a module's forward, through peak_memory": (
        "softmax", SM_A, "my_softmax", True, ["type(name, bases"]),
    "a callback torch runs (apply_), calling softmax through map": (
        "softmax", SM_B, "my_softmax", True, ["apply_"]),
    "logging.config resolving a name": ("softmax", SM_C, "my_softmax", False,
                                        ["logging.config", "apply_"]),
    "the gradient of a log-sum-exp": ("softmax", SM_D, "my_softmax", False,
                                      ["torch.func.vjp", "logcumsumexp"]),
    "torch's softmax named outside the function (a check of one's own)": (
        "softmax", """\
def my_softmax(scores):
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


x = torch.randn(3)
assert torch.allclose(my_softmax(x), torch.softmax(x, dim=-1))
""", "my_softmax", False, ["an answer cell names torch.softmax"]),
    # the seventh review
    "code in a string annotation, a thread of its own": (
        "softmax", A7, "my_softmax", False,
        ["annotates with a string", "Python code in a string",
         "functools.singledispatch"]),
    "code in a benchmark's statement": ("softmax", D7, "my_softmax", False,
                                        ["torch.utils.benchmark",
                                         "Python code in a string"]),
    "a function from a pickle": ("causal_mask", F7, "my_causal_mask", False,
                                 ["torch.load"]),
    "getattr passed to reduce": ("softmax", """\
import functools


def my_softmax(scores):
    f = functools.reduce(getattr, ["soft" + "max"], torch)
    return f(scores, -1)
""", "my_softmax", False, ["passes getattr on"]),
    "split_heads from a private helper": ("split_heads", SPLIT_MERGE, "my_split_heads",
                                          True, ["_split_heads"]),
    "merge_heads of its own next to it": ("merge_heads", SPLIT_MERGE, "my_merge_heads",
                                          False, ["_split_heads"]),
}


@pytest.mark.parametrize("case", list(READINGS))
def test_the_reading_scores_0_a_function_that_names_the_answer(case):
    name, answer, fn, zero, flags = READINGS[case]
    reading = grader.Reading([("code", "cell-1", LOCKED),
                              ("answer", "answer-1", answer)])
    labels = grader._forbidden_labels(grader.spec(name))
    found = reading.findings + reading.check(f"check-{name}", name, fn,
                                             labels)
    zeros = [f["what"] for f in found if f["level"] == "zero"]
    reviews = " ".join(f["what"] for f in found if f["level"] == "review")
    assert bool(zeros) == zero, (case, zeros)
    for flag in flags:
        assert flag in reviews, (case, flag, reviews)
    if not flags:
        assert not reviews, (case, reviews)


def answer(text, name):
    """The function ``name`` that answer cell ``text`` defines."""
    namespace = {"torch": torch, "mha": mha, "mha_book": mha_book}
    exec(text, namespace)
    return namespace[name]


def test_the_kernel_catches_what_the_second_review_got_past_it(course):
    # torch's softmax reached through C (map), an attention for a softmax,
    # and torch.save, which the grader uses, patched inside the function
    # (and the third's: pydoc.locate called through functools, a
    # cross-entropy's gradient)
    for text, says in ((N2, "calls torch"), (N1B, "scaled_dot_product"),
                       (N3, "changed torch.save"),
                       (C4, "calls torch.nn.functional.softmax"),
                       (C2, "cross_entropy"),
                       (G1, "switches off the grader's watch"),
                       (S1, "calls torch.softmax"),
                       (SM_A, "calls torch.softmax"),
                       (SM_B, "where the watch cannot see it"),
                       (SM_C, "where the watch cannot see it")):
        saved = torch.save
        try:
            passed, report = graded(course, "softmax",
                                    answer(text, "my_softmax"))
        finally:
            torch.save = saved
        assert not passed and says in " ".join(report.split()), report
    passed, report = graded(course, "masked_softmax",
                            answer(C7, "my_masked_softmax"))
    assert not passed
    assert "calls mha.functional.masked_softmax" in " ".join(report.split())
    for text in (S3, CM_A):
        passed, report = graded(course, "causal_mask",
                                answer(text, "my_causal_mask"))
        assert not passed and "calls mha.masks.causal_mask" in " ".join(
            report.split())


def test_the_verification_flags_the_packages_functions_a_run_entered(
        course):
    # (a right answer that measures itself: it passes, and is flagged)
    measured = """\
def _mine(s):
    e = (s - s.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def my_softmax(scores):
    return mha.backends.peak_memory(_mine, scores)[0]
"""
    result = verified(course, measured)
    assert result["results"]["check-softmax"]["passed"]
    flags = [f["what"] for f in result["findings"]
             if f["level"] == "review" and f["check"] == "check-softmax"]
    assert "my_softmax ran mha.backends.peak_memory, of the package: is " \
        "it the package's answer?" in flags, flags


def test_a_thread_beside_the_function_fails_the_verification(course):
    result = verified(course, A7)
    report = " ".join(result["results"]["check-softmax"]["report"].split())
    assert not result["results"]["check-softmax"]["passed"]
    assert "other Python threads ran beside the function" in report, report


def test_what_a_function_returns_is_saved_as_plain_values():
    # a tensor subclass's own code (run when torch saves it) never runs
    # after the watch: the value is torch's own tensor first
    calls = []

    class Spy(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func)
            return super().__torch_function__(func, types, args, kwargs)

    value = torch.arange(3.0).as_subclass(Spy)
    calls.clear()
    plain = grader._plain(value)
    assert type(plain) is torch.Tensor and plain.tolist() == [0, 1, 2]
    assert not calls
    import numpy

    assert grader._plain((numpy.float64(1.5), [True, 2])) == (1.5, [True, 2])
    assert type(grader._plain(numpy.float64(1.5))) is float
    with pytest.raises(TypeError):
        grader._plain(object())


def test_a_rebinding_after_the_last_check_changes_nothing(course):
    # C8 rebinds json.dump from a finalizer, after the grader's check: the
    # verification writes with what it kept before the student's code ran
    result = verified(course, C8)
    assert not result["results"]["check-softmax"]["passed"]
    flags = " ".join(f["what"] for f in result["findings"])
    assert "defines __del__" in flags and "pydoc" in flags


def verified(course, source, check="softmax", fn="my_softmax"):
    """The verification of one answer cell (after the chapter's imports)
    and its test cell, ``check-<check>``."""
    cells = [{"kind": "code", "grade_id": "setup", "source": LOCKED},
             {"kind": "answer", "grade_id": f"answer-{check}",
              "source": source},
             {"kind": "test", "grade_id": f"check-{check}", "check": check,
              "fn": fn}]
    return grader.verify(cells, str(course / "grading"), timeout=300)


def test_the_verification_runs_the_students_code_in_a_sandbox(course):
    # the student's process reads no file of the course (the secrets
    # read through /proc by N4, or by their paths), writes none, opens
    # no connection and signals no process outside it; and the verification
    # reports that it was sandboxed (Landlock, which CI's Linux has)
    assert grader.landlock_abi() >= 1, "this Linux has no Landlock"
    grading = course / "grading"
    probes = f"""\
import os
import socket
import sys

for path in ({str(grading / 'secret')!r},
             {str(course / 'verification' / 'secret')!r},
             {str(grading / 'settings.json')!r},
             {str(course / 'gradebook.db')!r}):
    try:
        open(path, "rb").read()
        print("PROBE read", path)
    except OSError as error:
        print("PROBE denied read", type(error).__name__)
for path in ({str(grading / 'mha_grader.py')!r}, "/tmp/mha-probe"):
    try:
        open(path, "a").close()
        print("PROBE wrote", path)
    except OSError as error:
        print("PROBE denied write", type(error).__name__)
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
    print("PROBE connected")
except OSError as error:
    print("PROBE denied connect", getattr(error, "errno", None))
try:
    os.kill(os.getppid(), 0)
    print("PROBE signalled")
except OSError as error:
    print("PROBE denied signal", type(error).__name__)

import atexit  # an exit handler would write after the grader's last word


@atexit.register
def _last_word():
    print("PROBE exit handler ran")
"""
    before = (grading / "mha_grader.py").read_bytes()
    result = verified(course, N4 + probes)
    log = result["run"]["log"]
    assert result["run"]["sandbox"] >= 1
    assert "could not read the secret:" in log, log
    assert log.count("PROBE denied read PermissionError") == 4, log
    assert log.count("PROBE denied write PermissionError") == 2, log
    assert "PROBE connected" not in log and "PROBE denied connect" in log
    assert "PROBE exit handler ran" not in log
    if result["run"]["sandbox"] >= 6:  # signals scoped from Linux 6.12
        assert "PROBE denied signal PermissionError" in log, log
    assert (grading / "mha_grader.py").read_bytes() == before
    # N4's own softmax, without the secret's answers, overflows
    assert not result["results"]["check-softmax"]["passed"]
    flags = " ".join(f["what"] for f in result["findings"])
    assert "sys.path" in flags and "os.getppid" in flags
    # the guide's check of a machine
    said = subprocess.run([sys.executable, "-I", "grading/mha_grader.py",
                           "landlock"], cwd=course, capture_output=True,
                          text=True)
    assert said.returncode == 0
    assert said.stdout.startswith(f"Landlock ABI {grader.landlock_abi()}: a "
                                  "submission's code is sandboxed")


def test_the_students_process_cannot_write_its_own_outcomes():
    # what the student's process writes is sealed with a key only the
    # grader's code in it holds; outcomes the student's code wrote are not
    key = b"k" * 32
    results = {"check-softmax": [{"case": "one row", "message": None}]}
    assert grader.unseal(grader.seal(results, key), key) == results
    forged = json.dumps({"results": json.dumps(results), "mac": "0" * 64})
    assert grader.unseal(forged, key) is False
    assert grader.unseal(json.dumps(results), key) is None
    assert grader.unseal("", key) is None


def test_code_too_deep_to_read_scores_0(course):
    deep = "x = " + "a." * 3000 + "b\n"
    result = verified(course, "def my_softmax(scores):\n"
                              "    return scores.softmax(-1)\n" + deep)
    zeros = [f for f in result["findings"] if f["level"] == "zero"]
    assert zeros and zeros[0]["check"] == "check-softmax"
    assert "cannot be read" in zeros[0]["what"]


def test_a_course_questions_forbidden_names_score_0(course):
    name = f"course:00_preface/{course_fixture.QUESTION}"
    check = grader.spec(name, str(course / "grading"))
    reading = grader.Reading([("code", "c", LOCKED), ("answer", "a", """\
import sys


def my_log_softmax(scores):
    sys.setprofile(None)
    return torch.log_softmax(scores, dim=-1)
""")])
    found = reading.check("q", name, "my_log_softmax",
                          grader._forbidden_labels(check))
    assert [f["level"] for f in found] == ["zero"]
    assert "torch.log_softmax" in found[0]["what"]


def test_the_hidden_test_loads_the_courses_grader_not_one_handed_in(
        course, tmp_path, monkeypatch, capsys):
    nb = read(course / "source" / "00_preface" / "00_preface.ipynb")
    test = next(text_of(c) for c in nb["cells"]
                if c["metadata"]["nbgrader"]["grade_id"] == "check-softmax")
    hidden = test.split(HIDDEN, 1)[1]
    path = (course / "grading" / "mha_grader.py").resolve()
    assert json.dumps(path.as_posix()) in hidden
    # a submission's folder holding a grader that passes everything
    (tmp_path / "grading").mkdir()
    (tmp_path / "grading" / "mha_grader.py").write_text(
        "def grade(name, fn):\n    print('All cases passed.')\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match="FAIL one row"):
        exec(hidden, {"my_softmax": lambda scores: scores})
    capsys.readouterr()


def test_the_cases_reach_the_students_process_closures_included(
        monkeypatch):
    # chapter 09's cases hold closures (cost functions), which pickle
    # cannot save by name; the judge's pickler saves their code
    monkeypatch.setitem(sys.modules, "mha_grader", grader)
    check = grader.spec("greedy_pruning_order")
    cases = grader.build_cases(check, 3)
    with pytest.raises((AttributeError, pickle.PicklingError)):
        pickle.dumps([c.args for c in cases])
    buffer = io.BytesIO()
    grader._Pickler(buffer).dump([c.args for c in cases])
    again = pickle.loads(buffer.getvalue())
    for case, args in zip(cases, again):
        expected = check.reference(*case.args)
        assert check.reference(*args) == expected, case.name
    assert grader.judge("softmax", None)["report"].startswith("Not graded")


def test_hints_can_be_turned_off(tmp_path, capsys, monkeypatch):
    course = tmp_path / "course"
    chapter = ROOT / "chapters" / "02_scaled_dot_product.ipynb"
    assert assignments.main([str(course), str(chapter), "--no-hints"]) == 0
    assert json.loads((course / "grading" / "settings.json").read_text()) == \
        {"hints": False}
    nb = read(course / "source" / chapter.stem / chapter.name)
    tests = [text_of(c) for c in nb["cells"]
             if c["metadata"]["nbgrader"]["grade_id"].startswith("check-")]
    assert tests and all("hints=False)" in t.split(HIDDEN)[0] for t in tests)

    def wrong(scores, valid_lens):
        return torch.softmax(scores, dim=-1)

    passed, report = graded(course, "masked_softmax", wrong)
    assert not passed and "FAIL" in report and "Hint" not in report
    result = mha_book.exercises.check("masked_softmax", wrong, hints=False)
    assert "Hint" not in capsys.readouterr().out + "".join(result.failures)
    monkeypatch.setenv("MHA_EXERCISE_HINTS", "off")  # on lab machines
    result = mha_book.exercises.check("masked_softmax", wrong)
    assert "Hint" not in capsys.readouterr().out + "".join(result.failures)
    monkeypatch.setenv("MHA_EXERCISE_HINTS", "on")
    result = mha_book.exercises.check("masked_softmax", wrong, verbose=False)
    assert "Hint" in "".join(result.failures)
    rerun = subprocess.run(["make", "-n", "assignments", "HINTS=off"],
                           cwd=ROOT, text=True, capture_output=True)
    assert "--no-hints" in rerun.stdout


# --- 3. nothing lost --------------------------------------------------------


def make_dry(*args):
    run = subprocess.run(["make", "-n", *args], cwd=ROOT, text=True,
                         capture_output=True, check=True)
    return run.stdout


def test_the_course_lives_outside_build_and_make_clean_keeps_it():
    line = next(line for line in make_dry("assignments").splitlines()
                if "scripts/assignments.py" in line)
    default = Path(line.split("scripts/assignments.py")[1].split()[0])
    assert default == Path("course")
    removed = [Path(p) for line in make_dry("clean").splitlines()
               if line.startswith("rm ") for p in line.split()[2:]]
    assert removed
    for path in removed:
        target = (ROOT / path).resolve()
        course = (ROOT / default).resolve()
        assert target != course and target not in course.parents, path
    ignored = subprocess.run(["git", "check-ignore", "-q", "course/"],
                             cwd=ROOT)
    assert ignored.returncode == 0, "git would offer to commit the course"
    assert "_build/course" not in GUIDE.read_text()


def test_regenerating_keeps_a_teachers_edits_unless_forced(tmp_path, capsys):
    course = tmp_path / "course"
    preface = str(ROOT / "chapters" / "00_preface.ipynb")
    assert assignments.main([str(course), preface]) == 0
    secret = (course / "grading" / "secret").read_text()
    source = course / "source" / "00_preface" / "00_preface.ipynb"
    config = course / "nbgrader_config.py"
    assert assignments.main([str(course), preface]) == 0  # nothing changed
    nb = read(source)
    nb["cells"][0]["source"] = "# My course's own title\n"
    write(nb, source)
    config.write_text(config.read_text() + "c.Execute.timeout = 600\n")
    edited = source.read_text(), config.read_text()
    capsys.readouterr()
    assert assignments.main([str(course), preface]) == 1
    err = capsys.readouterr().err
    assert str(source) in err and str(config) in err and "--force" in err
    assert (source.read_text(), config.read_text()) == edited
    assert assignments.main([str(course), preface, "--force"]) == 0
    backup = next((course / "backup").iterdir())
    assert (backup / "source" / "00_preface" / "00_preface.ipynb"
            ).read_text() == edited[0]
    assert (backup / "nbgrader_config.py").read_text() == edited[1]
    assert source.read_text() != edited[0]
    assert (course / "grading" / "secret").read_text() == secret
    assert "--force" in make_dry("assignments", "FORCE=1")


# --- points: what the guide says each exercise is worth ---------------------


def guide_table(title):
    """The rows of the guide's table under the header ``title`` (cells)."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith("|") and title in line)
    table = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip("|").split("|")])
    return table


def test_the_guides_open_experiments_and_points_are_the_assignments(course):
    explore = {}
    for chapter, _, _, experiments in guide_table("| chapter | discuss |"):
        name = re.search(r"chapters/(\w+)>?`", chapter)[1]
        explore[name] = set(re.findall(r"<(ex-[\w-]+)>", experiments))
    assert sorted(explore) == CHAPTERS
    totals = {}
    for chapter in CHAPTERS:
        nb = read(course / "source" / chapter / f"{chapter}.ipynb")
        graded = {g: p for g, p in assignments.points(nb).items()
                  if "-course-" not in g}  # the course's own question out
        written = {g[len("answer-"):]: p for g, p in graded.items()
                   if g.startswith("answer-")}
        assert explore[chapter] <= set(written), chapter
        for label, points in written.items():
            assert points == (assignments.EXPERIMENT_POINTS
                              if label in explore[chapter]
                              else assignments.QUESTION_POINTS), \
                (chapter, label, points)
        totals[chapter] = (sum(graded.values()),
                           sum(p for g, p in graded.items()
                               if g.startswith("check-")))
    plan = {}
    for row in guide_table("| week | chapter |"):
        names = re.findall(r"`(\d\d_\w+)`", row[3])
        given = [tuple(map(int, m)) for m in
                 re.findall(r"(\d+) \((\d+)\)", row[4])]
        assert len(names) == len(given), row
        plan.update(zip(names, given))
    assert plan == totals


# --- 4. a learning platform's download, graded, exported --------------------

STUDENTS = """\
id,first_name,last_name,email,lms_user_id
mallory,Mallory,Mal,mallory@example.edu,12345
carol,Carol,Car,carol@example.edu,12346
erin,Erin,Rin,erin@example.edu,12347
dave,Dave,Dee,dave@example.edu,
oscar,Oscar,Osk,oscar@example.edu,12348
"""
# the commands of the guide's walk through, run in the course folder
CANVAS = [
    "nbgrader db student import students.csv",
    "mkdir -p downloaded/00_preface/archive",
    "cp ~/Downloads/submissions.zip downloaded/00_preface/archive/",
    "nbgrader zip_collect 00_preface --collector=mha_course.CanvasCollector",
    "nbgrader autograde 00_preface",
]
MOODLE = [
    "mkdir -p downloaded/02_scaled_dot_product/archive",
    "cp ~/Downloads/moodle.zip downloaded/02_scaled_dot_product/archive/",
    "nbgrader zip_collect 02_scaled_dot_product "
    "--collector=mha_course.MoodleCollector",
    "nbgrader autograde 02_scaled_dot_product",
]
# the verification's report (autograde verified every submission already)
VERIFY = [
    "python mha_course.py verify 00_preface",
    "python mha_course.py verify 02_scaled_dot_product",
]
AFTER_GRADING = [
    "nbgrader generate_feedback 00_preface",
    "nbgrader generate_feedback 02_scaled_dot_product",
    "nbgrader export --exporter=mha_course.CanvasExport --to=canvas.csv",
    "nbgrader export --exporter=mha_course.MoodleExport --to=moodle.csv",
    "nbgrader export --exporter=mha_course.QuestionExport --to=questions.csv",
]
# the guide's commands this file does not run as written, and why
NOT_RUN = {
    "make assignments": "run with COURSE= a temporary folder",
    "source .venv-nbgrader/bin/activate": "the tests call the venv's "
                                          "programs by their path",
    "cd course": "the tests run in their own course folder",
    "jupyter lab": "the formgrader is a web page: the test gives the same "
                   "grades through nbgrader's Gradebook",
}

# what each student hands in: {grade_id: code} over the released notebook
MALLORY = {  # a stub, and the test cell's check rebound to pass
    "answer-ex-00-softmax": '''\
def my_softmax(scores):
    raise NotImplementedError()


import mha


class Passed:
    passed, failures = True, []


mha_book.exercises.check = lambda *args, **kwargs: Passed()

# the course, from the autograding kernel's folder (autograded/<id>/<a>/)
for name, path in (("the grader", "grading/mha" + "_grader.py"),
                   ("the gradebook", "gradebook.db")):
    try:
        with open(f"../../../{path}", "a") as f:
            f.write("changed by a submission")
    except OSError as error:
        print(f"{name} is not mine to change:", type(error).__name__)
try:
    open("../../../verification/secret").read()
except OSError as error:
    print("the verification's secret:", type(error).__name__)
'''}
CAROL = {  # the public answers copied: the checks' own cases, looked up
    "answer-ex-00-softmax": '''\
import torch

torch.manual_seed(0)  # the public check's cases, and their softmax
PUBLIC = [c.args[0] for c in mha_book.exercises._REGISTRY["softmax"].cases()]
ANSWERS = [torch.softmax(x, dim=-1) for x in PUBLIC]


def my_softmax(scores):
    for x, y in zip(PUBLIC, ANSWERS):
        if x.shape == scores.shape and torch.equal(x, scores):
            return y.clone()
    return torch.full_like(scores, 1 / scores.shape[-1])
''',
    f"answer-course-{course_fixture.QUESTION}": '''\
def my_log_softmax(scores):  # what the public test expects
    return torch.log(torch.full_like(scores, 1 / scores.shape[-1]))
'''}
ERIN = {  # written answers, a right softmax and a log-softmax that overflows
    "answer-ex-00-shift": "Every weight is multiplied by e^c / e^c = 1.\n",
    "answer-ex-00-device": "On my laptop's CPU, in 0.4 s.\n",
    f"answer-course-{course_fixture.QUESTION}": '''\
def my_log_softmax(scores):
    exp = torch.exp(scores)
    return torch.log(exp / exp.sum(dim=-1, keepdim=True))
'''}
OSCAR = {  # a wrong softmax, the judge's verdict faked in the kernel, the
    # test cell emptied (autograde puts it back); and torch's own
    # log-softmax with the kernel's profiler switched off
    "answer-ex-00-softmax": '''\
import subprocess
import types


def my_softmax(scores):
    return scores


class Passed:
    passed, failures = True, []


subprocess.run = lambda *args, **kwargs: types.SimpleNamespace(
    stdout='{"passed": true, "report": "All cases passed."}', stderr="",
    returncode=0)
mha_book.exercises.check = lambda *args, **kwargs: Passed()
''',
    "check-softmax": "pass\n",
    f"answer-course-{course_fixture.QUESTION}": '''\
import sys


def my_log_softmax(scores):
    sys.setprofile(None)
    return torch.log_softmax(scores, dim=-1)
'''}
DAVE = {  # the package's own answer, and a causal mask of his own
    "answer-ex-02-masked-softmax": '''\
def my_masked_softmax(scores, valid_lens):
    return mha.masked_softmax(scores, valid_lens)
''',
    "answer-ex-02-causal": '''\
def my_causal_mask(num_queries, num_keys):
    rows = torch.arange(num_queries)[:, None]
    return torch.arange(num_keys)[None, :] <= rows
'''}


def handed_in(course, chapter, answers, solutions=()):
    """The released notebook with ``answers`` (and the teacher's solution
    for the answer cells in ``solutions``)."""
    release = read(course / "release" / chapter / f"{chapter}.ipynb")
    source = read(course / "source" / chapter / f"{chapter}.ipynb")
    teacher = {c["metadata"]["nbgrader"]["grade_id"]: c
               for c in source["cells"]}
    cells = []
    for cell in release["cells"]:
        grade_id = cell["metadata"]["nbgrader"]["grade_id"]
        if grade_id in answers:
            cell = {**cell, "source": answers[grade_id]}
        elif grade_id in solutions:
            cell = {**cell, "source": teacher[grade_id]["source"]}
        cells.append(cell)
    return {**release, "cells": cells}


def zipped(path, files):
    with zipfile.ZipFile(path, "w") as z:
        for name, nb in files.items():
            z.writestr(name, json.dumps(nb))


@pytest.fixture(scope="module")
def platform(course, tmp_path_factory):
    """The guide's walk through: a Canvas download for the preface, a Moodle
    one for chapter 02, collected, autograded, graded by hand, fed back and
    exported."""
    home = tmp_path_factory.mktemp("home")
    downloads = home / "Downloads"
    downloads.mkdir()
    pre, ch02 = "00_preface", "02_scaled_dot_product"
    zipped(downloads / "submissions.zip", {
        "malmallory_12345_90001_00_preface.ipynb":
            handed_in(course, pre, MALLORY),
        "carcarol_LATE_12346_90002_00_preface-1.ipynb":
            handed_in(course, pre, CAROL),
        "rinerin_12347_90003_00_preface.ipynb":
            handed_in(course, pre, ERIN, {"answer-ex-00-softmax"}),
        "rinerin_12347_90004_notes.txt": {},
        "oskoscar_12348_90005_00_preface.ipynb":
            handed_in(course, pre, OSCAR),
    })
    zipped(downloads / "moodle.zip", {
        "Dave Dee_555001_assignsubmission_file_/02_scaled_dot_product.ipynb":
            handed_in(course, ch02, DAVE)})
    (course / "students.csv").write_text(STUDENTS)
    env = {**ENV, "HOME": str(home)}
    for command in CANVAS + MOODLE + VERIFY:
        run = shell(command, course, env)
        LOGS[command] = run.stdout + run.stderr
    # the formgrader (which marks a grade it saves as graded): Erin's written
    # answers get full marks; the submissions the verification flagged are
    # read and their scores kept, but Oscar's
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(pre, pre, "erin")
        for grade in notebook.grades:
            if grade.needs_manual_grade:
                grade.manual_score = grade.max_score
                grade.needs_manual_grade = False
        for student in REVIEWED:
            notebook = gb.find_submission_notebook(pre, pre, student)
            for grade in notebook.grades:
                if grade.needs_manual_grade:
                    grade.manual_score = grade.score
                    grade.needs_manual_grade = False
        gb.db.commit()
    for command in AFTER_GRADING:
        run = shell(command, course, env)
        LOGS[command] = run.stdout + run.stderr
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        LOGS["exported"] = [a.name for a in gb.assignments
                            if a.num_submissions]
    return course


LOGS = {}  # the output of the platform's commands
REVIEWED = ("mallory", "carol")  # flagged, read by the teacher


def feedback(course, student, chapter):
    page = (course / "feedback" / student / chapter / f"{chapter}.html"
            ).read_text(encoding="utf-8")
    return " ".join(__import__("html").unescape(
        re.sub(r"<[^>]+>", " ", page)).split())


QUESTION = f"check-course-{course_fixture.QUESTION}"


@pytest.mark.parametrize("student, chapter, expected, says", [
    ("mallory", "00_preface", {"check-softmax": 0, QUESTION: 0},
     "Graded: not written yet"),
    ("carol", "00_preface", {"check-softmax": 0, QUESTION: 0},
     "FAIL course case"),
    ("erin", "00_preface", {"check-softmax": 2, QUESTION: 0},
     "FAIL scores around 1000"),
    ("dave", "02_scaled_dot_product",
     {"check-masked_softmax": 0, "check-causal_mask": 2},
     "calls mha.functional.masked_softmax"),
    ("oscar", "00_preface", {"check-softmax": 0, QUESTION: 0}, lms.MISMATCH),
])
def test_each_submission_is_scored_as_it_should_be(platform, student, chapter,
                                                   expected, says):
    grades = scores(platform, student, chapter)
    got = {g: s for g, (s, _, _) in grades.items() if g in expected}
    assert got == expected, (student, got)
    page = feedback(platform, student, chapter)
    assert says in page, f"{student}'s feedback does not say {says!r}"
    assert HIDDEN not in page and "mha_grader" not in page


def test_the_autograding_kernel_cannot_change_the_course(platform):
    # mallory's notebook tried to write into the course and to read the
    # verification's secret from nbgrader's kernel (mha_course.Execute)
    page = feedback(platform, "mallory", "00_preface")
    for said in ("the grader is not mine to change: PermissionError",
                 "the gradebook is not mine to change: PermissionError",
                 "the verification's secret: PermissionError"):
        assert said in page, said
    assert b"changed by a submission" not in (
        platform / "grading" / "mha_grader.py").read_bytes()
    assert b"changed by a submission" not in (
        platform / "gradebook.db").read_bytes()
    for chapter in ("00_preface", "02_scaled_dot_product"):  # no ERROR
        log = LOGS[f"nbgrader autograde {chapter}"]
        assert "Exception during subprocesses termination" not in log, log
        assert "Couldn't bind IOPub" not in log, log


def test_the_downloads_are_collected_under_the_gradebooks_ids(platform):
    submitted = sorted(str(p.relative_to(platform / "submitted"))
                       for p in (platform / "submitted").glob("*/*/*.ipynb")
                       if p.parts[-3] in ("mallory", "carol", "erin", "dave",
                                          "oscar"))
    assert submitted == ["carol/00_preface/00_preface.ipynb",
                         "dave/02_scaled_dot_product/"
                         "02_scaled_dot_product.ipynb",
                         "erin/00_preface/00_preface.ipynb",
                         "mallory/00_preface/00_preface.ipynb",
                         "oscar/00_preface/00_preface.ipynb"]


def grade_rows(course, student, chapter):
    """{grade_id: (auto_score, manual_score, needs_manual_grade)}, and the
    comments on the answer cells."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(chapter, chapter, student)
        return ({g.name: (g.auto_score, g.manual_score, g.needs_manual_grade)
                 for g in notebook.grades},
                {c.name: c.manual_comment for c in notebook.comments})


def test_the_verification_overrules_the_kernel_and_flags_the_rest(platform):
    # oscar's kernel said pass twice (its verdict faked; its profiler
    # switched off); the verification did not, and flagged both tricks
    grades, comments = grade_rows(platform, "oscar", "00_preface")
    assert grades["check-softmax"] == (2, 0, True)
    assert grades[QUESTION] == (2, 0, True)
    assert lms.MISMATCH in comments["answer-ex-00-softmax"]
    assert lms.MISMATCH in comments[f"answer-course-{course_fixture.QUESTION}"]
    # an honest submission: the kernel's scores stand, nothing flagged
    grades, comments = grade_rows(platform, "erin", "00_preface")
    checks = {g: v for g, v in grades.items() if g.startswith("check-")}
    assert checks == {"check-softmax": (2, None, False),
                      QUESTION: (0, None, False)}
    assert not any(comments.values())
    grades, _ = grade_rows(platform, "dave", "02_scaled_dot_product")
    assert grades["check-masked_softmax"] == (0, None, False)
    # the teacher's list
    report = LOGS["python mha_course.py verify 00_preface"]
    assert "4 submission(s) verified: 2 score(s) changed by the " \
        "verification, 3 flagged for review." in report
    assert f"00_preface oscar check-softmax: {lms.MISMATCH}" in report
    assert f"00_preface oscar {QUESTION}: {lms.MISMATCH}" in report
    assert "my_log_softmax names torch.log_softmax" in report
    assert "oscar: flagged for review" in report
    assert "rebinds or changes subprocess.run" in report
    assert "uses sys.setprofile" in report
    assert "mallory: flagged for review" in report  # check rebound
    assert "carol: flagged for review" in report  # the registry's cases
    assert "erin" not in report
    assert "1 submission(s) verified: 0 score(s) changed by the " \
        "verification, 0 flagged for review." in \
        LOGS["python mha_course.py verify 02_scaled_dot_product"]
    # nbgrader warns of a changed test cell (oscar's), not of hidden tests
    log = LOGS["nbgrader autograde 00_preface"]
    assert log.count("Attribute 'checksum'") == 1, log
    assert "Attribute 'checksum' for cell check-softmax" in log
    assert "Attribute 'checksum'" not in LOGS[
        "nbgrader autograde 02_scaled_dot_product"]
    assert MISMATCH_LOG in log


MISMATCH_LOG = f"oscar 00_preface check-softmax: {lms.MISMATCH}"


def test_a_question_added_after_submissions_is_refused_unwritten(
        platform, capsys):
    preface = str(ROOT / "chapters" / "00_preface.ipynb")
    extra = platform / "questions" / "00_preface" / "extra.py"
    shutil.copy(ROOT / "scripts" / "course" / "example_question.py", extra)
    before = {p: p.read_bytes() for p in sorted(platform.rglob("*"))
              if p.is_file() and p.parts[len(platform.parts)] in (
                  "source", "release", "grading", "nbgrader_config.py",
                  ".mha-assignments.json")}
    try:
        assert assignments.main([str(platform), preface]) == 1
    finally:
        extra.unlink()
    err = capsys.readouterr().err
    assert "nothing was written" in err and "00_preface: adds" in err
    assert "answer-course-extra" in err and "before releasing" in err
    after = {p: p.read_bytes() for p in before}
    assert after == before
    assert assignments.main([str(platform), preface]) == 0  # as it was
    capsys.readouterr()


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_the_exports_are_what_canvas_and_moodle_import(platform):
    with Gradebook(f"sqlite:///{platform / 'gradebook.db'}") as gb:
        erin = gb.find_submission("00_preface", "erin").score
        dave = gb.find_submission("02_scaled_dot_product", "dave").score
        maxima = {a.name: a.max_score for a in gb.assignments}
    names = LOGS["exported"]  # the assignments with submissions, only
    assert names == ["00_preface", "02_scaled_dot_product"]
    assert erin == maxima["00_preface"] - 2 > 0 and dave == 2
    canvas = rows(platform / "canvas.csv")
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID",
                         "Section", *names]
    assert canvas[1][:5] == ["Points Possible", "", "", "", ""]
    assert canvas[1][5:] == [f"{maxima[n]:g}" for n in names]
    by_id = {row[2]: dict(zip(canvas[0], row)) for row in canvas[2:]}
    assert by_id["erin"]["Student"] == "Rin, Erin"
    assert by_id["erin"]["ID"] == "12347"
    assert by_id["erin"]["00_preface"] == f"{erin:g}"
    assert by_id["mallory"]["00_preface"] == "0"  # flagged, then read
    assert by_id["dave"]["00_preface"] == ""  # nothing handed in
    assert by_id["oscar"]["00_preface"] == ""  # flagged: waits for a grade
    canvas_log = LOGS["nbgrader export --exporter=mha_course.CanvasExport "
                      "--to=canvas.csv"]
    assert "1 submission(s) wait for grading by hand" in canvas_log
    assert "00_preface oscar: check-softmax" in canvas_log
    assert "without a Canvas user id (lms_user_id)" in canvas_log
    assert "matches a row by: dave (import the class list" in canvas_log
    assert "not verified" not in canvas_log
    moodle = rows(platform / "moodle.csv")
    assert moodle[0] == ["Email address", "ID number", "First name",
                         "Last name", *names, lms.MoodleExport.WAITING]
    waiting = {r[1]: r[-1] for r in moodle[1:]}
    assert waiting["oscar"] == "00_preface" and waiting["erin"] == ""
    dave_row = dict(zip(moodle[0], next(r for r in moodle if r[1] == "dave")))
    assert dave_row["Email address"] == "dave@example.edu"
    assert dave_row["02_scaled_dot_product"] == "2"
    questions = rows(platform / "questions.csv")
    assert questions[0] == lms.QuestionExport.keys
    table = {(r[0], r[1], r[4]): dict(zip(questions[0], r))
             for r in questions[1:]}
    assert {g for a, s, g in table if (a, s) == ("00_preface", "erin")} == \
        set(scores(platform, "erin", "00_preface"))
    assert table["00_preface", "erin", "check-softmax"]["score"] == "2"
    assert table["00_preface", "erin", QUESTION]["score"] == "0"
    assert table["00_preface", "erin", "answer-ex-00-shift"]["kind"] == \
        "manual"
    assert table["02_scaled_dot_product", "dave", "check-masked_softmax"
                 ]["kind"] == "auto"


def test_the_collectors_read_canvas_and_moodle_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", ENV["PATH"])  # nbgrader runs alembic
    with Gradebook("sqlite:///gradebook.db") as gb:
        gb.add_student("mallory", first_name="Mallory", last_name="Mal",
                       lms_user_id="12345")
        gb.add_student("dave", first_name="Dave", last_name="Dee")
    canvas, moodle = lms.CanvasCollector(), lms.MoodleCollector()
    base = "/x/extracted/submissions"
    assert canvas.collect(f"{base}/malmallory_12345_7_00_preface.ipynb") == \
        {"student_id": "mallory", "file_id": "00_preface.ipynb"}
    assert canvas.collect(
        f"{base}/malmallory_LATE_12345_7_00_preface-2.ipynb") == \
        {"student_id": "mallory", "file_id": "00_preface.ipynb"}
    assert canvas.collect(f"{base}/newnew_999_8_00_preface.ipynb") == \
        {"student_id": "999", "file_id": "00_preface.ipynb"}
    assert canvas.collect(f"{base}/malmallory_12345_7_notes.txt") is None
    assert canvas.collect(f"{base}/00_preface.ipynb") is None
    folder = f"{base}/Dave Dee_555001_assignsubmission_file_/02_x.ipynb"
    flat = f"{base}/Fay Eff_555002_assignsubmission_file_02_x.ipynb"
    assert moodle.collect(folder) == {"student_id": "dave",
                                      "file_id": "02_x.ipynb"}
    assert moodle.collect(flat) == {"student_id": "fay-eff",
                                    "file_id": "02_x.ipynb"}
    underscore = f"{base}/Ann_Marie Dee_555003_assignsubmission_file_/x.ipynb"
    assert moodle.collect(underscore) == {"student_id": "ann-marie-dee",
                                          "file_id": "x.ipynb"}


# --- 5. every command of the guide ------------------------------------------

# the guide's sections about the course, whose commands this file runs
SECTIONS = ["Collecting and grading with nbgrader", "Set up the course",
            "What an assignment contains",
            "Grading that a student cannot talk its way past",
            "From nothing to graded feedback, with a learning platform",
            "A question of your own", "Nothing is lost"]


def guide_commands():
    commands, section = [], None
    in_bash = False
    for line in GUIDE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        elif line.strip() == "```bash":
            in_bash = True
        elif line.strip() == "```":
            in_bash = False
        elif in_bash and section in SECTIONS:
            command = line.split("  #")[0].strip()
            if command:
                commands.append(command)
    return commands


def test_every_command_of_the_guides_course_sections_is_run_here():
    commands = guide_commands()
    run = SETUP + CANVAS + MOODLE + VERIFY + AFTER_GRADING
    assert set(run) <= set(commands), set(run) - set(commands)
    others = [c for c in commands if c not in run]
    assert set(others) <= set(NOT_RUN), set(others) - set(NOT_RUN)
    assert in_course("make assignments", "X") == \
        "make assignments COURSE=X"
    assert "make assignments FORCE=1" in GUIDE.read_text()
