"""`make assignments` with the real nbgrader: generate, release, autograde,
feedback.

Runs with the nbgrader venv's Python (`make assignments-test`; the book's
`.venv` has no nbgrader, so `make unit` leaves this folder out by path). The
course is the session's (course_fixture.py: `make assignments` into a
temporary folder, with appendix/teachers.md's example question in the
preface). Full-notebook autograding costs a chapter's whole run (5 to 50 s on
2 cores), so the correct submissions are autograded for the chapters in
AUTOGRADED (every kind of exercise, the quick chapters) and the wrong ones for
two of them, without the course's verification (mha_course.VerifyGrades: the
notebook's code run again apart from its kernel, which test_course.py's
learning-platform submissions go through); `ASSIGNMENTS_AUTOGRADE=all`
autogrades every chapter, and verifies each correct submission. For every
chapter, the generated answer cells (the solutions) and the visible part of
the test cells are also run together, without the rest of the chapter, so
each chapter's test cells are shown to pass on the solution (the hidden part,
the course's grade, is run on every check in test_course.py).
"""

import html
import importlib.util
import os
import re
import sys

import course_fixture
import pytest
import torch
from course_fixture import ROOT, nbgrader, read, scores
from nbgrader.api import Gradebook

import mha
import mha_book

sys.path.insert(0, str(ROOT / "scripts"))
import assignments  # noqa: E402
import student_notebooks  # noqa: E402

CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
AUTOGRADED = ["00_preface", "01_soft_lookup", "02_scaled_dot_product", "12_positions",
              "13_fast_attention"]
# the verification runs a chapter again: for every chapter's correct
# submission with ASSIGNMENTS_AUTOGRADE=all, else not here
VERIFY = ["--VerifyGrades.enabled=False"]
if os.environ.get("ASSIGNMENTS_AUTOGRADE") == "all":
    AUTOGRADED, VERIFY = CHAPTERS, []
QUESTION = f"course-{course_fixture.QUESTION}"  # the example question's ids
HIDDEN = "### BEGIN HIDDEN TESTS"


def source_text(nb, kinds=("code", "markdown")):
    return "\n".join(student_notebooks.source(c) for c in nb["cells"] if c["cell_type"] in kinds)


def grade_cells(nb, prefix):
    return {c["metadata"]["nbgrader"]["grade_id"]: c for c in nb["cells"]
            if c["metadata"].get("nbgrader", {}).get("grade_id", "").startswith(prefix)}


def visible(text):
    """The part of a test cell students see (before the hidden tests)."""
    return text.split(HIDDEN)[0]


def hidden(text):
    """The hidden part of a test cell."""
    return text.split(HIDDEN, 1)[1]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return course_fixture.shared_course(tmp_path_factory)


def submit(course, student, chapter, nb):
    folder = course / "submitted" / student / chapter
    folder.mkdir(parents=True, exist_ok=True)
    student_notebooks.write_notebook(nb, folder / f"{chapter}.ipynb")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_is_an_assignment_without_its_solutions_in_the_release(course, chapter):
    chapter_nb = read(ROOT / "chapters" / f"{chapter}.ipynb")
    source = read(course / "source" / chapter / f"{chapter}.ipynb")
    release = read(course / "release" / chapter / f"{chapter}.ipynb")
    text = source_text(release)
    # every exercise is graded: by its checks (coding) or by hand (an answer cell)
    labels = re.findall(r":label: (ex-\S+)", source_text(chapter_nb, ("markdown",)))
    checks, answers = grade_cells(release, "check-"), grade_cells(release, "answer-")
    assert checks, f"{chapter}: no autograded check"
    # the course's own question, in the preface only
    own = {f"check-{QUESTION}", f"answer-{QUESTION}"}
    ours = bool(own & set(checks) and own & set(answers))
    assert (chapter == "00_preface") == ours
    checks = {g: c for g, c in checks.items() if g not in own}
    answers = {g: c for g, c in answers.items() if g not in own}
    _, regions = student_notebooks.split_solutions(chapter_nb)
    coded = {label for label in regions if "check(" in source_text({"cells": regions[label]})}
    assert set(labels) == {g[len("answer-"):] for g in answers}  # one answer cell each
    assert coded == {g[len("answer-"):] for g, c in answers.items() if c["cell_type"] == "code"}
    for cell in checks.values():
        meta = cell["metadata"]["nbgrader"]
        assert meta["locked"] and meta["points"] == assignments.CHECK_POINTS
        assert "assert result.passed" in student_notebooks.source(cell)
        # the grade is not released; the teacher's copy grades with the grader
        assert HIDDEN not in student_notebooks.source(cell)
    for grade_id in checks:
        teacher = grade_cells(source, grade_id)[grade_id]
        teacher = student_notebooks.source(teacher)
        assert HIDDEN in teacher and '["grade"]' in hidden(teacher)
    for cell in answers.values():
        if cell["cell_type"] == "markdown":
            meta = cell["metadata"]["nbgrader"]
            assert meta["grade"] and meta["points"] in (assignments.QUESTION_POINTS,
                                                        assignments.EXPERIMENT_POINTS)
            assert student_notebooks.source(cell).strip() == "YOUR ANSWER HERE"
    # no solution: no line of the chapter's gated solutions nor of its {solution} blocks
    solution_lines = [line.strip() for cells in regions.values() for cell in cells
                      for line in student_notebooks.source(cell).splitlines()]
    solution_lines += [line.strip() for body in student_notebooks.solution_blocks(
        chapter_nb).values() for line in body.splitlines()]
    # (a line the chapter also has outside its solutions, as in a demo, is no leak, and the
    # test cells call the same checks)
    student = source_text(student_notebooks.strip_solutions(chapter_nb))
    solution_lines = [line for line in solution_lines if len(line) > 25
                      and line not in student and "exercises.check(" not in line]
    assert solution_lines
    leaked = [line for line in solution_lines if line in text]
    assert not leaked, f"{chapter}: the release holds solution lines {leaked[:3]}"
    assert "### BEGIN SOLUTION" not in text and "solution_" not in text
    assert HIDDEN not in text and "mha_grader" not in text
    # and the source (the teacher's copy) does hold them, between the markers
    assert source_text(source).count("### BEGIN SOLUTION") >= len(checks)
    answer_code = [c for c in release["cells"] if c["cell_type"] == "code"
                   and c["metadata"]["nbgrader"]["solution"]]
    assert answer_code and all("raise NotImplementedError()" in student_notebooks.source(c)
                               for c in answer_code)
    # the rest is read-only
    for cell in release["cells"]:
        meta = cell["metadata"]["nbgrader"]
        assert meta["locked"] or meta["solution"], f"{chapter}: {meta['grade_id']} not locked"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_test_cells_pass_on_the_solutions_and_fail_on_the_stubs(course, chapter, capsys):
    # every chapter: the teacher's answer cells, then the visible part of the
    # test cells, in a fresh namespace
    source = read(course / "source" / chapter / f"{chapter}.ipynb")
    release = read(course / "release" / chapter / f"{chapter}.ipynb")
    for nb, passes in ((source, True), (release, False)):
        namespace = {"torch": torch, "mha": mha, "mha_book": mha_book,
                     "math": __import__("math")}
        for cell in nb["cells"]:
            meta = cell["metadata"]["nbgrader"]
            if cell["cell_type"] == "code" and meta["solution"]:
                exec(student_notebooks.source(cell), namespace)
        for grade_id, cell in grade_cells(nb, "check-").items():
            test = visible(student_notebooks.source(cell))
            if passes:
                exec(test, namespace)
            elif grade_id == f"check-{QUESTION}":  # the question's own test
                with pytest.raises(NotImplementedError):
                    exec(test, namespace)
            else:
                with pytest.raises(AssertionError, match="not written yet"):
                    exec(test, namespace)
    capsys.readouterr()


@pytest.fixture(scope="module")
def autograded(course):
    """Correct submissions (the teacher's source notebooks, solutions in place) for the chapters
    in AUTOGRADED, autograded for student `alice`."""
    for chapter in AUTOGRADED:
        submit(course, "alice", chapter, read(course / "source" / chapter / f"{chapter}.ipynb"))
    nbgrader(course, "autograde", "*", "--student", "alice", "--create",
             *VERIFY)
    return course


@pytest.mark.parametrize("chapter", AUTOGRADED)
def test_a_correct_submission_scores_full_marks(autograded, chapter):
    course = autograded
    grades = scores(course, "alice", chapter)
    release = read(course / "release" / chapter / f"{chapter}.ipynb")
    points = assignments.points(release)
    assert set(grades) == set(points)
    for grade_id, (score, max_score, manual) in grades.items():
        assert max_score == points[grade_id]
        if grade_id.startswith("check-"):
            assert (score, manual) == (max_score, False), f"{chapter}: {grade_id} {score}"
        else:  # a written answer waits for the teacher
            assert manual, f"{chapter}: {grade_id} should need a manual grade"
    executed = read(course / "autograded" / "alice" / chapter / f"{chapter}.ipynb")
    errors = [o.get("ename") for c in executed["cells"] if c["cell_type"] == "code"
              for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, f"{chapter}: the correct submission raised {errors}"
    # the teacher grades the written answers (as in the formgrader): full marks in all
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(chapter, chapter, "alice")
        for grade in notebook.grades:
            if grade.needs_manual_grade:
                grade.manual_score = grade.max_score
        gb.db.commit()
        notebook = gb.find_submission_notebook(chapter, chapter, "alice")
        assert notebook.score == notebook.max_score == sum(points.values())
        print(f"{chapter}: alice {notebook.score:g} / {notebook.max_score:g} "
              f"({notebook.code_score:g} / {notebook.max_code_score:g} autograded)")


def wrong_softmax(scores):  # forgot to subtract the max: overflows for large scores
    exp = torch.exp(scores)
    return exp / exp.sum(dim=-1, keepdim=True)


def wrong_masked_softmax(scores, valid_lens):  # the softmax over the wrong axis
    if valid_lens is None:
        return torch.softmax(scores, dim=1)
    B, Lq, Lk = scores.shape
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(B, Lq)
    allowed = torch.arange(Lk) < valid_lens[..., None]
    return torch.softmax(scores.masked_fill(~allowed, -1e9), dim=1) * allowed


WRONG = {  # chapter: (the answer cell's grade_id, the wrong code, check name, wrong function)
    "00_preface": ("answer-ex-00-softmax", "softmax", wrong_softmax,
                   "def my_softmax(scores):\n"
                   "    exp = torch.exp(scores)\n"
                   "    return exp / exp.sum(dim=-1, keepdim=True)\n"),
    "02_scaled_dot_product": ("answer-ex-02-masked-softmax", "masked_softmax",
                              wrong_masked_softmax,
                              "def my_masked_softmax(scores, valid_lens):\n"
                              "    if valid_lens is None:\n"
                              "        return torch.softmax(scores, dim=1)\n"
                              "    B, Lq, Lk = scores.shape\n"
                              "    if valid_lens.dim() == 1:\n"
                              "        valid_lens = valid_lens[:, None].expand(B, Lq)\n"
                              "    allowed = torch.arange(Lk) < valid_lens[..., None]\n"
                              "    weights = scores.masked_fill(~allowed, -1e9)\n"
                              "    return torch.softmax(weights, dim=1) * allowed\n"),
}


@pytest.fixture(scope="module")
def wrong(course):
    """Student `bob` hands in the release with one typical wrong answer per chapter in WRONG;
    his other coding answers are the solutions and his written answers stay empty."""
    for chapter, (answer_id, _, _, code) in WRONG.items():
        source = read(course / "source" / chapter / f"{chapter}.ipynb")
        release = read(course / "release" / chapter / f"{chapter}.ipynb")
        solutions = {c["metadata"]["nbgrader"]["grade_id"]: c for c in source["cells"]}
        cells = []
        for cell in release["cells"]:
            grade_id = cell["metadata"]["nbgrader"]["grade_id"]
            if grade_id == answer_id:
                cell = {**cell, "source": code}
            elif cell["cell_type"] == "code" and cell["metadata"]["nbgrader"]["solution"]:
                cell = {**cell, "source": solutions[grade_id]["source"]}
            cells.append(cell)
        submit(course, "bob", chapter, {**release, "cells": cells})
    nbgrader(course, "autograde", "*", "--student", "bob", "--create",
             "--VerifyGrades.enabled=False")
    for chapter in WRONG:
        nbgrader(course, "generate_feedback", chapter, "--student", "bob")
    return course


@pytest.mark.parametrize("chapter", list(WRONG))
def test_a_wrong_answer_loses_exactly_its_points_and_the_feedback_says_why(wrong, chapter):
    course = wrong
    _, name, function, _ = WRONG[chapter]
    grades = scores(course, "bob", chapter)
    release = read(course / "release" / chapter / f"{chapter}.ipynb")
    points = assignments.points(release)
    for grade_id, (score, max_score, manual) in grades.items():
        if grade_id == f"check-{name}":
            assert score == 0, f"{chapter}: the wrong {name} scored {score}"
        elif grade_id.startswith("check-"):
            assert score == max_score, f"{chapter}: {grade_id} lost points"
        else:  # an answer left empty scores 0 without the teacher
            assert (score, manual) == (0, False), f"{chapter}: {grade_id}"
    auto = sum(p for g, p in points.items() if g.startswith("check-"))
    code_score = sum(s for g, (s, _, _) in grades.items() if g.startswith("check-"))
    assert code_score == auto - assignments.CHECK_POINTS
    print(f"{chapter}: bob {code_score:g} / {auto:g} autograded (wrong {name})")
    # the feedback shows the checker's own message for this answer
    feedback = course / "feedback" / "bob" / chapter / f"{chapter}.html"
    page = re.sub(r"<[^>]+>", "", feedback.read_text(encoding="utf-8"))
    page = " ".join(html.unescape(page).split())
    result = mha_book.exercises.check(name, function, verbose=False)
    assert not result.passed and result.failures
    for failure in result.failures:
        message = " ".join(failure.split(". Hint:")[0].split())
        assert message in page, f"{chapter}: the feedback lacks {message!r}"
    assert "Hint:" in page
    # the hidden tests' code stays out of the feedback (their output is in it)
    assert HIDDEN not in page and "mha_grader" not in page


def test_an_export_has_only_the_assignments_asked_for_and_warns(
        autograded, tmp_path, monkeypatch, caplog):
    # the course's Canvas export, as `nbgrader export --assignment=...`
    # runs it in the course folder
    course = autograded
    chapter = AUTOGRADED[-1]
    spec = importlib.util.spec_from_file_location(
        "mha_course", course / "mha_course.py")
    lms = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lms)
    monkeypatch.chdir(course)
    export = lms.CanvasExport(assignment=[chapter], to=str(tmp_path / "c.csv"))
    with caplog.at_level("WARNING"), \
            Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        export.export(gb)
    header = (tmp_path / "c.csv").read_text().splitlines()[0].split(",")
    assert header[5:] == [chapter]
    # alice's submission was not verified unless every chapter was (the
    # export says so)
    assert ("not verified" in caplog.text) == bool(VERIFY), caplog.text
    if not VERIFY:  # verified: nothing changed, nothing flagged
        records = sorted((course / "verification").glob("*/alice/*.json"))
        assert len(records) == len(AUTOGRADED)
        for path in records:
            record = read(path)
            assert not record["flags"] and not any(
                c["mismatch"] for c in record["cells"].values()), record


def test_the_course_folder_is_what_nbgrader_expects(course):
    assert (course / "nbgrader_config.py").is_file()
    assert sorted(p.name for p in (course / "source").iterdir()) == CHAPTERS
    assert sorted(p.name for p in (course / "release").iterdir()) == CHAPTERS
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert sorted(a.name for a in gb.assignments) == CHAPTERS


def chapter(*cells):
    def cell(kind, text, i):
        extra = {"execution_count": None, "outputs": []} if kind == "code" else {}
        return {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": text, **extra}
    return {"cells": [cell(kind, text, i) for i, (kind, text) in enumerate(cells)],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


EXERCISE = ("markdown", "```{exercise} Write it\n:label: ex-1\nWrite `my_f(x)`.\n```")
STARTER = ("code", 'def my_f(x):\n    raise NotImplementedError("your code here")\n\n\n'
                   'mha_book.exercises.check("softmax", my_f);')
START, END = ("markdown", "```{solution-start} ex-1\n:class: dropdown\n```"), \
    ("markdown", "```{solution-end}\n```")


def test_the_generator_turns_a_starter_into_answer_and_test_cells():
    solution = ("code", "def solution_f(x):  # the answer\n    # shift first\n"
                        "    return torch.softmax(x, -1)\n\n\n"
                        'assert mha_book.exercises.check("softmax", solution_f).passed')
    nb = assignments.assignment(chapter(EXERCISE, STARTER, START, solution, END))
    answer = [c for c in nb["cells"] if c["metadata"]["nbgrader"]["solution"]]
    assert [c["metadata"]["nbgrader"]["grade_id"] for c in answer] == ["answer-ex-1"]
    assert student_notebooks.source(answer[0]) == (
        "def my_f(x):\n    ### BEGIN SOLUTION\n    # shift first\n"
        "    return torch.softmax(x, -1)\n    ### END SOLUTION")
    assert assignments.points(nb) == {"check-softmax": assignments.CHECK_POINTS}


def test_a_starter_without_a_checked_solution_is_an_error():
    solution = ("code", "def solution_f(x):\n    return x")  # no check: not a coding solution
    with pytest.raises(ValueError, match="no gated solution"):
        assignments.assignment(chapter(EXERCISE, STARTER, START, solution, END))


def test_a_solution_with_other_arguments_than_the_starter_is_an_error():
    solution = ("code", "def solution_f(scores):\n    return scores\n\n\n"
                        'assert mha_book.exercises.check("softmax", solution_f).passed')
    with pytest.raises(ValueError, match="take different arguments"):
        assignments.assignment(chapter(EXERCISE, STARTER, START, solution, END))
