"""Write an nbgrader course directory from the chapters: one assignment per
chapter.

Usage: python scripts/assignments.py COURSE_DIR [NOTEBOOK ...] [--force]
[--no-hints] (default: chapters/*.ipynb; ``make assignments`` writes the
course to ``course/``)

COURSE_DIR gets ``nbgrader_config.py``, ``mha_course.py`` (nbgrader plugins:
Canvas, Moodle, feedback), ``grading/`` (the grader of the hidden tests, the
course secret, ``settings.json``) and ``source/<chapter>/<chapter>.ipynb``
for every chapter (the preface too: it has a coding exercise). Each source
notebook is the chapter as students get it (``scripts/student_notebooks.py``:
no solutions, no book-only checking cells) turned into nbgrader cells:

- a coding exercise's starter cell becomes an autograded answer cell: its
  ``my_...`` functions, each body replaced by the chapter's solution between
  ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (nbgrader puts
  ``raise NotImplementedError()`` there in the release); its ``check(...)``
  calls move to read-only test cells worth ``CHECK_POINTS`` each: the public
  ``mha_book.exercises.check`` (students see its report), then a hidden test
  (nbgrader's ``### BEGIN HIDDEN TESTS``, not in the release) that grades the
  function with ``grading/mha_grader.py`` (by its absolute path) on the
  course's own cases, judged in a fresh process; ``nbgrader autograde`` then
  verifies every test cell apart from the notebook's kernel
  (``mha_course.VerifyGrades``, in ``nbgrader_config.py``);
- every other exercise is followed by a manually graded markdown answer cell
  that holds the chapter's model answer (the release shows "YOUR ANSWER
  HERE"), worth ``EXPERIMENT_POINTS`` for the chapter's open experiment (its
  last exercise, or one titled "(open experiment)", or one whose solution
  runs code) and ``QUESTION_POINTS`` for a question;
- a question of the course's own, ``COURSE_DIR/questions/<chapter>/<name>.py``
  (see ``scripts/course/example_question.py``), is added before the chapter's
  summary: its exercise, answer cell and test cell;
- every other cell is locked (read-only).

Nothing a teacher changed is overwritten: ``COURSE_DIR/.mha-assignments.json``
keeps a hash of every file this script wrote, and a rerun that would replace a
file changed since (a source notebook edited in the formgrader, the
configuration) stops without writing anything, unless ``--force`` is given;
then each changed file is first copied to ``COURSE_DIR/backup/<time>/``. The
course secrets (``grading/secret``, the kernel's cases, and
``verification/secret``, the verification's) are made once and never replaced.
An assignment that has submissions in the gradebook keeps its cells: a rerun
that would add or remove one (a question of the course's own added after the
release) stops before writing anything; nbgrader could not regenerate it.
``--no-hints`` leaves the checks' hints out of the test cells and the grades
(an assessed course).

The assignments are generated, never kept in the repository: run
``make assignments``.
"""

import argparse
import ast
import datetime
import hashlib
import io
import json
import math
import random
import re
import runpy
import secrets
import shutil
import sqlite3
import sys
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_notebooks import (  # noqa: E402 (the sibling script, importable from anywhere)
    EXERCISE_BLOCK,
    ROOT,
    directive_options,
    solution_blocks,
    source,
    split_solutions,
    strip_solutions,
)

CHECK_POINTS = 2  # one autograded test cell per mha_book.exercises.check
QUESTION_POINTS = 1  # a written answer to a question
EXPERIMENT_POINTS = 2  # a written report of an open experiment
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
ANSWER_NOTE = ("*Model answer (the teacher's copy; students see an empty answer cell). "
               "Grade it by hand in the formgrader.*\n\n")

CONFIG = '''\
# nbgrader's configuration of the course written by scripts/assignments.py
# (make assignments). Edit it freely: make assignments does not overwrite a
# file changed since it wrote it (see its --force).
import os
import sys

# the course's plugins (mha_course.py) are imported from this folder
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = "mha-book"
# a chapter trains small models: give a cell time (the book allows 120 s)
c.Execute.timeout = 300
# autograding: a released test cell gets its hidden tests back without
# nbgrader's checksum warning (mha_course.OverwriteCells), the submission runs
# in a kernel that cannot change the course (mha_course.Execute: Landlock
# restricts what it reads and writes), and every test cell
# is verified apart from the notebook's kernel (mha_course.VerifyGrades: the
# student's code again in a fresh process, judged in another; the verified
# score is the one that counts; `python mha_course.py verify ASSIGNMENT`
# lists what it changed and what it flagged)
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "mha_course.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.autograde_preprocessors = [
    "mha_course.Execute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "mha_course.VerifyGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# the feedback shows each test's output but not the code of its hidden part
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "nbgrader.preprocessors.ClearHiddenTests",
    "mha_course.HideGraderCode",
]
'''
MANIFEST = ".mha-assignments.json"
COURSE_FILES = Path(__file__).resolve().parent / "course"
# the grader a hidden test runs, by default (a course's own: planned_files)
GRADER = Path("grading") / "mha_grader.py"
HIDDEN = '''\
### BEGIN HIDDEN TESTS
# The notebook's grade: this course's own cases, judged in a fresh Python
# process by the course's grader (by its path: never a file of the
# submission's). `nbgrader autograde` then verifies it apart from this kernel.
import runpy as _runpy
_runpy.run_path({grader})["grade"]({name}, {fn})
### END HIDDEN TESTS'''


def nbgrader_meta(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def check_calls(tree):
    """[(statement, check name, function name)] for the top-level statements of ``tree`` that
    call ``check("name", fn)`` (``mha_book.exercises.check`` or an imported ``check``)."""
    found = []
    for statement in tree.body:
        for node in ast.walk(statement):
            if (isinstance(node, ast.Call) and len(node.args) >= 2
                    and (getattr(node.func, "attr", None) == "check"
                         or getattr(node.func, "id", None) == "check")
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and isinstance(node.args[1], ast.Name)):
                found.append((statement, node.args[0].value, node.args[1].id, node))
    return found


def functions(tree):
    return {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}


def is_stub(function):
    """Whether a function's body is only ``raise NotImplementedError(...)`` (a starter)."""
    body = [s for s in function.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None
            and "NotImplementedError" in ast.unparse(body[0].exc))


def header_end(text, function):
    """(line number (1-based), column) of the colon that ends ``function``'s signature."""
    depth = 0
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    for token in tokens:
        if token.start[0] < function.lineno:
            continue
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif token.type == tokenize.OP and token.string == ":" and depth == 0:
            return token.start
    raise ValueError(f"no end to the signature of {function.name}")


def body_lines(text, function):
    """The lines of ``function``'s body (comments included), without its common indent."""
    lines = text.split("\n")
    end, column = header_end(text, function)
    if lines[end - 1][column + 1:].split("#")[0].strip():
        raise ValueError(f"{function.name}: put the body on its own lines")
    body = lines[end:function.end_lineno]
    indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
    return [line[indent:] for line in body]


def solutions_by_check(cells, where):
    """{check name: (solution function, its body lines)} from a gated solution's code
    cells (``def solution_x(...)`` and ``assert check("name", solution_x).passed``)."""
    found = {}
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        text = source(cell)
        tree = ast.parse(text)
        defined = functions(tree)
        for _, name, fn, _ in check_calls(tree):
            if fn not in defined:
                raise ValueError(f"{where}: check({name!r}, {fn}) in a solution cell, but "
                                 f"{fn} is not defined in that cell")
            found[name] = (defined[fn], body_lines(text, defined[fn]))
    return found


def exercise_kind(label, title, blocks, regions, solved, last=False):
    """"code", "experiment" (the chapter's open experiment: its last
    exercise, or one titled so, or one whose solution runs code) or
    "question"."""
    if label in solved:
        return "code"
    if last or "open experiment" in title.lower():
        return "experiment"
    if label in regions and any(c["cell_type"] == "code" for c in regions[label]):
        return "experiment"
    return "question"


def model_answer(label, blocks, regions):
    if label in blocks:
        return blocks[label]
    parts = []
    for cell in regions.get(label, []):
        text = source(cell).strip("\n")
        parts.append(text if cell["cell_type"] == "markdown" else f"```python\n{text}\n```")
    return "\n\n".join(parts)


def answer_cell(label, kind, blocks, regions, cell_id):
    points = QUESTION_POINTS if kind == "question" else EXPERIMENT_POINTS
    text = ANSWER_NOTE + model_answer(label, blocks, regions)
    return {"cell_type": "markdown", "id": cell_id,
            "metadata": {"nbgrader": nbgrader_meta(f"answer-{label}", solution=True,
                                                   grade=True, points=points)},
            "source": text.splitlines(True)}


def split_markdown(cell, kinds, regions, blocks):
    """The markdown cell cut after every exercise that needs a written answer, with the
    answer cell after it (a list of cells)."""
    text, out, start, part = source(cell), [], 0, 0
    for match in EXERCISE_BLOCK.finditer(text):
        label = directive_options(match["body"])[0].get("label", "")
        if kinds.get(label, "code") == "code":
            continue
        piece = text[start:match.end()].strip("\n")
        if piece.strip():
            out.append({**cell, "id": f"{cell['id']}-{part}", "source": piece.splitlines(True)})
            part += 1
        out.append(answer_cell(label, kinds[label], blocks, regions, f"answer-{label}"))
        start = match.end()
    rest = text[start:].strip("\n")
    if rest.strip():
        out.append({**cell, "id": cell["id"] if not out else f"{cell['id']}-{part}",
                    "source": rest.splitlines(True)})
    return out


def test_source(name, fn, visible, points, grader):
    """A test cell's source: the part students see, then the hidden grade
    (``grader``: the course's grading/mha_grader.py, an absolute path)."""
    head = (f"# Autograded ({points} points): passes when the check passes "
            "here and, when it is\n# graded, on this course's own cases.\n")
    return head + visible + "\n" + HIDDEN.format(
        name=json.dumps(name), fn=fn, grader=json.dumps(str(grader)))


def test_cell(grade_id, source_text, points):
    meta = nbgrader_meta(grade_id, grade=True, locked=True, points=points)
    return {"cell_type": "code", "id": grade_id, "execution_count": None,
            "metadata": {"nbgrader": meta}, "outputs": [],
            "source": source_text.splitlines(True)}


def coding_cells(cell, solved, where, hints=True, grader=GRADER):
    """A starter cell as [answer cell, test cell, ...], or None if ``cell`` is no starter."""
    text = source(cell)
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a cell with IPython magics is no starter
        return None
    defined = functions(tree)
    calls = [(s, name, fn, call) for s, name, fn, call in check_calls(tree)
             if fn in defined and is_stub(defined[fn])]
    if not calls:
        return None
    lines = text.split("\n")
    drop = set()
    for statement, *_ in calls:
        drop.update(range(statement.lineno, statement.end_lineno + 1))
    replace = {}  # line number of a stub's raise -> the solution body between the markers
    renames = {}
    for _, name, fn, _ in calls:
        if name not in solved:
            raise ValueError(f"{where}: starter {fn} is checked with {name!r}, but no gated "
                             f"solution ({{solution-start}} ... {{solution-end}}) checks it")
        solution = solved[name][0]
        renames[solution.name] = fn
        ours = [a.arg for a in defined[fn].args.args]
        theirs = [a.arg for a in solution.args.args]
        if ours != theirs:
            raise ValueError(f"{where}: {fn}{tuple(ours)} and {solution.name}{tuple(theirs)} "
                             f"take different arguments")
    for _, name, fn, _ in calls:
        stub = [s for s in defined[fn].body if isinstance(s, ast.Raise)][0]
        indent = " " * stub.col_offset
        body = [re.sub(r"\b(" + "|".join(map(re.escape, renames)) + r")\b",
                       lambda m: renames[m[1]], line) for line in solved[name][1]]
        replace[stub.lineno] = [indent + BEGIN] + [(indent + b).rstrip() for b in body] + \
            [indent + END]
        drop.update(range(stub.lineno + 1, stub.end_lineno + 1))
    out_lines = []
    for number, line in enumerate(lines, start=1):
        if number in replace:
            out_lines += replace[number]
        elif number not in drop:
            out_lines.append(line)
    answer = "\n".join(out_lines).strip("\n")
    label = "-".join(sorted({solved[name][2] for _, name, _, _ in calls}))
    cells = [{**cell, "metadata": {**cell["metadata"], "nbgrader": nbgrader_meta(
        f"answer-{label}", solution=True)}, "source": answer.splitlines(True)}]
    for _, name, fn, call in calls:
        no_hints = "" if hints else ", hints=False"
        visible = (f"result = {ast.unparse(call.func)}({json.dumps(name)}, "
                   f"{fn}{no_hints})\n"
                   "assert result.passed, \"\\n\".join(result.failures)")
        test = test_source(name, fn, visible, CHECK_POINTS, grader)
        cells.append(test_cell(f"check-{name}", test, CHECK_POINTS))
    return cells


def assignment(nb, where="notebook", hints=True, grader=GRADER):
    """The nbgrader source notebook of chapter ``nb`` (a new dict)."""
    _, regions = split_solutions(nb)
    blocks = solution_blocks(nb)
    solved, solved_labels = {}, set()
    for label, cells in regions.items():
        found = solutions_by_check(cells, f"{where}, solution of {label}")
        solved.update({name: (*value, label) for name, value in found.items()})
        if found:
            solved_labels.add(label)
    exercises = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for match in EXERCISE_BLOCK.finditer(source(cell)):
                label = directive_options(match["body"])[0].get("label", "")
                if not label:
                    raise ValueError(f"{where}: exercise {match['title']!r} has no :label:")
                exercises.append((label, match["title"]))
    kinds = {label: exercise_kind(label, title, blocks, regions, solved_labels,
                                  last=number == len(exercises) - 1)
             for number, (label, title) in enumerate(exercises)}
    cells, seen = [], set()
    for cell in strip_solutions(nb)["cells"]:
        if cell["cell_type"] == "markdown":
            new = split_markdown(cell, kinds, regions, blocks)
        else:
            new = coding_cells(cell, solved, where, hints, grader) or [cell]
            seen.update(c["id"] for c in new if c["id"].startswith("check-"))
        for c in new:
            if "nbgrader" not in c["metadata"]:
                c = {**c, "metadata": {**c["metadata"], "nbgrader": nbgrader_meta(
                    f"cell-{c['id']}", locked=True)}}
            cells.append(c)
    missing = sorted(f"check-{name}" for name in solved if f"check-{name}" not in seen)
    if missing:
        raise ValueError(f"{where}: no starter cell for the solved checks {missing}")
    answers = [c for c in cells if c["metadata"]["nbgrader"]["solution"]]
    if not answers:
        raise ValueError(f"{where}: no exercise to turn into an assignment")
    return {**nb, "cells": cells}


def question_cells(path, assignment_id, grader=GRADER):
    """The cells of a course's own question ``path``
    (questions/<assignment>/<name>.py): a locked exercise, an answer cell (the
    ``my_...`` function, its body the solution) and a test cell (PUBLIC_TEST,
    then the hidden grade of check ``course:<assignment>/<name>``)."""
    text = path.read_text(encoding="utf-8")
    where = f"question {path}"
    namespace = runpy.run_path(str(path))
    mine = [f for f in functions(ast.parse(text)).values()
            if f.name.startswith("my_")]
    if len(mine) != 1:
        raise ValueError(f"{where}: define one my_... function (the answer)")
    for key in ("TITLE", "TEXT", "cases"):
        if key not in namespace:
            raise ValueError(f"{where}: no {key}")
    function, points = mine[0], namespace.get("POINTS", CHECK_POINTS)
    fn = namespace[function.name]
    cases = namespace["cases"](random.Random(0))
    if not cases:
        raise ValueError(f"{where}: cases(rng) gave no case")
    for case in cases:  # the teacher's answer must run on every case
        fn(*case.args, **case.kwargs)
    public = namespace.get("PUBLIC_TEST", "").strip("\n")
    if public:
        import torch  # the public test runs as in a notebook

        exec(public, {"torch": torch, "math": math, function.name: fn})
    lines = text.split("\n")
    end, _ = header_end(text, function)
    indent = " " * 4
    body = [(indent + b).rstrip() for b in body_lines(text, function)]
    answer = "\n".join(lines[function.lineno - 1:end] + [indent + BEGIN]
                       + body + [indent + END])
    stem = path.stem
    exercise = (f"## A question of this course: {namespace['TITLE']}\n\n"
                f"{namespace['TEXT'].strip()}\n\n*{points:g} points, graded "
                "automatically (the test below; the grade also uses cases "
                "you do not see).*")
    visible = public or "# (the test of this question runs when it is graded)"
    test = test_source(f"course:{assignment_id}/{stem}", function.name,
                       visible, points, grader)
    return [
        {"cell_type": "markdown", "id": f"course-{stem}",
         "metadata": {"nbgrader": nbgrader_meta(f"cell-course-{stem}",
                                                locked=True)},
         "source": exercise.splitlines(True)},
        {"cell_type": "code", "id": f"answer-course-{stem}",
         "execution_count": None, "outputs": [],
         "metadata": {"nbgrader": nbgrader_meta(f"answer-course-{stem}",
                                                solution=True)},
         "source": answer.splitlines(True)},
        test_cell(f"check-course-{stem}", test, points),
    ]


def points(nb):
    """{grade_id: points} of an assignment notebook's graded cells."""
    return {c["metadata"]["nbgrader"]["grade_id"]:
            c["metadata"]["nbgrader"]["points"] for c in nb["cells"]
            if c["metadata"].get("nbgrader", {}).get("grade")}


def notebook_text(nb):
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def digest(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def planned_files(course, paths, hints=True):
    """({path relative to the course: text} of every file a run writes, a
    summary line per assignment)."""
    files = {
        "nbgrader_config.py": CONFIG,
        "mha_course.py": (COURSE_FILES / "mha_course.py").read_text("utf-8"),
        "grading/mha_grader.py": (COURSE_FILES / "mha_grader.py"
                                  ).read_text("utf-8"),
        "grading/settings.json": json.dumps({"hints": hints}) + "\n",
    }
    summary = []
    grader = (Path(course).resolve() / GRADER).as_posix()
    for path in map(Path, paths):
        nb = assignment(json.loads(path.read_text(encoding="utf-8")),
                        path.name, hints, grader)
        questions = sorted((course / "questions" / path.stem).glob("*.py"))
        at = next((i for i, c in enumerate(nb["cells"])  # before the summary
                   if source(c).startswith("## Summary")), len(nb["cells"]))
        for question in reversed(questions):
            nb["cells"][at:at] = question_cells(question, path.stem, grader)
        rel = f"source/{path.stem}/{path.name}"
        files[rel] = notebook_text(nb)
        graded = points(nb)
        auto = sum(p for g, p in graded.items() if g.startswith("check-"))
        own = f", {len(questions)} of the course's own" if questions else ""
        summary.append(f"{rel}: {len(graded)} graded cells, "
                       f"{sum(graded.values()):g} points ({auto:g} "
                       f"autograded{own})")
    return files, summary


def cell_sets(nb):
    """The cells nbgrader records of a notebook, by kind (its SaveCells):
    {"grade", "solution", "task", "source"}: sets of grade ids."""
    sets = {"grade": set(), "solution": set(), "task": set(), "source": set()}
    for cell in nb["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if not grade_id:
            continue
        kinds = [k for k in ("grade", "solution", "task") if meta.get(k)]
        locked = not meta.get("solution") and (meta.get("grade")
                                               or meta.get("locked"))
        if kinds or locked:
            kinds.append("source")
        for kind in kinds:
            sets[kind].add(grade_id)
    return sets


def submitted_cells(course):
    """{(assignment, notebook): cell_sets} of the notebooks that have
    submissions in the course's gradebook (read only; {} without one)."""
    db = Path(course) / "gradebook.db"
    if not db.exists():
        return {}
    con = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        notebooks = con.execute(
            "SELECT n.id, a.name, n.name FROM notebook n JOIN assignment a "
            "ON n.assignment_id = a.id WHERE EXISTS (SELECT 1 FROM "
            "submitted_notebook s WHERE s.notebook_id = n.id)").fetchall()
        found = {}
        for notebook_id, assignment_name, notebook_name in notebooks:
            sets = {"grade": set(), "solution": set(), "task": set(),
                    "source": set()}
            for name, kind in con.execute(
                    "SELECT name, type FROM base_cell WHERE notebook_id = ?",
                    (notebook_id,)):
                key = {"GradeCell": "grade", "SolutionCell": "solution",
                       "TaskCell": "task"}.get(kind)
                if key:
                    sets[key].add(name)
            sets["source"] = {name for (name,) in con.execute(
                "SELECT name FROM source_cell WHERE notebook_id = ?",
                (notebook_id,))}
            found[assignment_name, notebook_name] = sets
        return found
    except sqlite3.DatabaseError:  # not nbgrader's gradebook
        return {}
    finally:
        con.close()


def cell_changes(course, files):
    """[(assignment, added cells, removed cells)] of the planned source
    notebooks whose cells differ from those of an assignment with
    submissions (nbgrader's generate_assignment refuses those)."""
    recorded = submitted_cells(course)
    changes = []
    for rel, text in files.items():
        parts = Path(rel).parts
        if len(parts) != 3 or parts[0] != "source":
            continue
        key = (parts[1], Path(parts[2]).stem)
        if key not in recorded:
            continue
        planned = cell_sets(json.loads(text))
        added = set().union(*(planned[k] - recorded[key][k] for k in planned))
        removed = set().union(*(recorded[key][k] - planned[k]
                                for k in planned))
        if added or removed:
            changes.append((parts[1], sorted(added), sorted(removed)))
    return changes


def read_manifest(course):
    try:
        text = (course / MANIFEST).read_text("utf-8")
    except FileNotFoundError:
        return {}
    return json.loads(text)["files"]


def changed_files(course, files):
    """The planned files that exist with other contents than this script
    last wrote there (changed since, or never written by it)."""
    manifest = read_manifest(course)
    changed = []
    for rel, text in files.items():
        target = course / rel
        if not target.exists():
            continue
        now = digest(target.read_bytes())
        if now != digest(text) and manifest.get(rel) != now:
            changed.append(rel)
    return changed


def write_course(course, files, force=False):
    """Write ``files`` into ``course``. Returns the files that would replace
    a change (nothing written) unless ``force``; with it, they are copied to
    backup/<time>/ first and [] is returned."""
    changed = changed_files(course, files)
    if changed and not force:
        return changed
    if changed:
        now = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = course / "backup" / now
        for rel in changed:
            (backup / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(course / rel, backup / rel)
        print(f"kept the changed files in {backup}")
    manifest = read_manifest(course)
    for rel, text in files.items():
        target = course / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text("utf-8") != text:
            target.write_text(text, "utf-8")
        manifest[rel] = digest(text)
    record = json.dumps({"files": manifest}, indent=1, sort_keys=True)
    (course / MANIFEST).write_text(record + "\n", "utf-8")
    for secret in (course / "grading" / "secret",
                   course / "verification" / "secret"):
        if not secret.exists():  # once: a new secret changes the cases
            secret.parent.mkdir(exist_ok=True)
            secret.write_text(secrets.token_hex(32) + "\n", "utf-8")
            secret.chmod(0o600)
    return []


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("course", type=Path)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--force", action="store_true",
                        help="replace files changed since the last run "
                        "(each copied to backup/ first)")
    parser.add_argument("--no-hints", dest="hints", action="store_false",
                        help="no hints in the test cells and the grades")
    if not argv:
        print(__doc__)
        return 2
    args = parser.parse_args(argv)
    course = args.course
    paths = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
    course.mkdir(parents=True, exist_ok=True)
    files, summary = planned_files(course, paths, args.hints)
    changes = cell_changes(course, files)
    if changes:
        print(f"{course}: nothing was written. These assignments have "
              "submissions in the gradebook, and this run would add or "
              "remove cells in them, which nbgrader cannot do once students "
              "have handed in:", file=sys.stderr)
        for name, added, removed in changes:
            print(f"  {name}: " + "; ".join(
                f"{what} {', '.join(cells)}" for what, cells in
                (("adds", added), ("removes", removed)) if cells),
                file=sys.stderr)
        print("Add a question of your own before releasing its assignment; "
              "for one already handed in, take the question's file out of "
              f"{course / 'questions'}/ again (or give it to a later "
              "assignment).", file=sys.stderr)
        return 1
    changed = write_course(course, files, args.force)
    if changed:
        print(f"{course}: these files changed since make assignments wrote "
              "them; nothing was written:", file=sys.stderr)
        for rel in changed:
            print(f"  {course / rel}", file=sys.stderr)
        print("Rerun with --force (make assignments FORCE=1) to replace "
              f"them; each is first copied to {course / 'backup'}/.",
              file=sys.stderr)
        return 1
    print("\n".join(f"{course}/{line}" for line in summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
