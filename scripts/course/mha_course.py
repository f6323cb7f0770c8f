"""The course's nbgrader plugins: the verification of the autograded
scores, a learning platform's downloads and grades, and feedback without the
grader's code (appendix/teachers.md).

scripts/assignments.py copies this file to COURSE/mha_course.py, where
nbgrader imports it (COURSE/nbgrader_config.py puts the course folder on
the import path):

- ``VerifyGrades``, one of ``nbgrader autograde``'s preprocessors, verifies
  every test cell apart from the notebook's kernel (grading/mha_grader.py's
  ``verify``) and writes the verified score into the gradebook; ``python
  mha_course.py verify ASSIGNMENT``, in the course folder, lists the scores
  it changed and the submissions it flagged for the teacher to read (and
  verifies any autograded submission not verified yet);
- ``OverwriteCells`` replaces nbgrader's own in ``autograde``: the same, but
  a test cell handed in as released gets its hidden tests back without a
  checksum warning;
- ``Execute`` replaces nbgrader's own in ``autograde``: the same, but the
  kernel that runs a submission is sandboxed first (``SandboxedKernelManager``,
  grading/mha_grader.py's ``kernel``): it cannot change the course or read
  other students' work or the verification's secret;

- ``nbgrader zip_collect A --collector=mha_course.CanvasCollector`` (or
  ``MoodleCollector``) files a platform's "download all submissions" zip,
  put in COURSE/downloaded/A/archive/, under submitted/<student id>/A/;
- ``nbgrader export --exporter=mha_course.CanvasExport --to=canvas.csv``
  (or ``MoodleExport``) writes the grades as that platform imports them
  (the assignments with submissions, or those given with --assignment; a
  submission whose written answers wait for a hand grade is left empty,
  with a warning), and ``--exporter=mha_course.QuestionExport`` one row per
  question;
- ``HideGraderCode``, one of ``nbgrader generate_feedback``'s preprocessors,
  takes the hidden tests' code out of the tracebacks in the feedback.

Students are matched to the gradebook's (``nbgrader db student import``:
id, first_name, last_name, email, lms_user_id): on Canvas by the user id in
the file name (the gradebook's lms_user_id), on Moodle by the full name. A
student the gradebook does not know keeps the platform's id (Canvas) or a
name in lower case with dashes (Moodle), with a warning.
"""

import ast
import csv
import hashlib
import importlib.util
import json
import os
import re
import sys

from jupyter_client.manager import AsyncKernelManager
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbgrader import preprocessors as nbgrader_preprocessors
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from nbgrader.plugins.zipcollect import FileNameCollectorPlugin
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Dict, Enum, Integer, Unicode

# Canvas: "Download Submissions" names each file
# <lastfirst>[_LATE]_<user id>_<attachment id>_<file name>, and adds -1, -2
# before the extension of a file a student submitted again
CANVAS = (r"(?P<name>[^_]+?)(?P<late>_late)?_(?P<user>\d+)_(?P<attachment>\d+)"
          r"_(?P<file_id>.+?)(?:-\d+)?(?P<ext>\.ipynb)")
# Moodle: "Download all submissions" puts each student's files in a folder
# "<Full Name>_<participant id>_assignsubmission_file_" (the default since
# Moodle 3.1), or prefixes each file with that name (folders turned off)
MOODLE = (r"(?P<name>[^/]+?)_(?P<participant>\d+)_assignsubmission_file_"
          r"[/]?(?P<file_id>[^/]+?)(?P<ext>\.ipynb)")


def _gradebook(plugin):
    coursedir = getattr(getattr(plugin, "parent", None), "coursedir", None)
    url = coursedir.db_url if coursedir else "sqlite:///gradebook.db"
    return Gradebook(url)


def _slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class _Collector(FileNameCollectorPlugin):
    pattern = ""

    def _student(self, info):
        raise NotImplementedError

    def collect(self, submitted_file):
        path = submitted_file.replace(os.sep, "/")
        tail = "/".join(path.split("/")[-2:])
        match = (re.fullmatch(self.pattern, os.path.basename(path), re.I)
                 or re.fullmatch(self.pattern, tail, re.I))
        if match is None:
            self.log.warning("Not a submission's name: %s", submitted_file)
            return None
        info = match.groupdict()
        student = self._student(info)
        if info.get("late"):
            self.log.warning("%s: late on the platform (%s)", student,
                             os.path.basename(path))
        return {"student_id": student,
                "file_id": info["file_id"] + info["ext"].lower()}


class CanvasCollector(_Collector):
    """Canvas's download names (CANVAS): the student is the gradebook's
    student whose lms_user_id is the Canvas user id."""

    pattern = CANVAS

    def _student(self, info):
        with _gradebook(self) as gb:
            for student in gb.students:
                if student.lms_user_id == info["user"]:
                    return student.id
        self.log.warning("Canvas user %s is not in the gradebook; using the "
                         "Canvas id as the student id", info["user"])
        return info["user"]


class MoodleCollector(_Collector):
    """Moodle's download names (MOODLE): the student is the gradebook's
    student of that full name (Moodle's participant id changes from one
    assignment to the next)."""

    pattern = MOODLE

    def _student(self, info):
        name = " ".join(info["name"].split()).lower()
        with _gradebook(self) as gb:
            for student in gb.students:
                full = f"{student.first_name or ''} {student.last_name or ''}"
                if " ".join(full.split()).lower() == name:
                    return student.id
        self.log.warning("%s is not in the gradebook; using %s as the "
                         "student id", info["name"], _slug(info["name"]))
        return _slug(info["name"])


# --- exports ----------------------------------------------------------------


def _score(gb, assignment, student):
    """The score after the late penalty, or None without a submission."""
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        return None
    return max(0.0, submission.score - submission.late_submission_penalty)


def _number(value):
    return "" if value is None else f"{value:g}"


class _Export(ExportPlugin):
    """An export of the assignments with submissions (or those given with
    --assignment), with warnings on stderr for what a platform should not
    get yet: a submission with answers not graded by hand, one the course
    has not verified, a student the platform cannot match."""

    default = "grades.csv"
    unfinished = Enum(
        ["blank", "score"], "blank", help="a submission with answers not "
        "graded by hand yet: its grade left empty (blank), or the score so "
        "far (score)").tag(config=True)

    def rows(self, gb):
        raise NotImplementedError

    def selected(self, gb):
        students = [s for s in gb.students
                    if not self.student or s.id in self.student]
        assignments = [a for a in gb.assignments
                       if (a.name in self.assignment if self.assignment
                           else a.num_submissions > 0)]
        return students, assignments

    def check(self, gb):
        """{(assignment, student): the cells that wait for a hand grade}, and
        warnings for those and for unverified submissions."""
        students, assignments = self.selected(gb)
        ids = {s.id for s in students}
        course = getattr(getattr(self.parent, "coursedir", None), "root",
                         None) or os.getcwd()
        waiting, unverified = {}, []
        for a in assignments:
            for submission in gb.assignment_submissions(a.name):
                student = submission.student.id
                if student not in ids:
                    continue
                for notebook in submission.notebooks:
                    cells = [g.name for g in notebook.grades
                             if g.needs_manual_grade]
                    if cells:
                        waiting.setdefault((a.name, student), []).extend(
                            cells)
                    if not os.path.exists(record_path(
                            course, a.name, student, notebook.notebook.name)):
                        unverified.append(f"{a.name} {student}")
        if waiting:
            self.log.warning(
                "%d submission(s) wait for grading by hand (the formgrader "
                "lists them; %s): %s", len(waiting),
                "their grades are left empty here" if self.unfinished ==
                "blank" and not isinstance(self, QuestionExport) else
                "their scores so far are exported",
                "; ".join(f"{a} {s}: {', '.join(c)}"
                          for (a, s), c in sorted(waiting.items())))
        if unverified:
            self.log.warning(
                "%d submission(s) not verified (python mha_course.py verify "
                "ASSIGNMENT, in the course folder): %s", len(unverified),
                ", ".join(unverified))
        return waiting

    def score(self, gb, assignment, student, waiting):
        if (assignment, student) in waiting and self.unfinished == "blank":
            return ""
        return _number(_score(gb, assignment, student))

    def missing(self, students, attribute, platform, means):
        lacking = [s.id for s in students if not getattr(s, attribute)]
        if lacking:
            self.log.warning(
                "%d student(s) without %s, which %s matches a row by: %s "
                "(import the class list: nbgrader db student import "
                "students.csv)", len(lacking), means, platform,
                ", ".join(lacking))

    def export(self, gradebook):
        dest = self.to or self.default
        self.log.info("Exporting grades to %s", dest)
        with open(dest, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(self.rows(gradebook))


class CanvasExport(_Export):
    """The CSV Canvas's gradebook imports (Grades, Import): Student, ID (the
    Canvas user id: lms_user_id), SIS User ID (nbgrader's student id), SIS
    Login ID, Section, then one column per assignment with submissions (or
    given with --assignment), after a "Points Possible" row. Canvas makes a
    new assignment of a column it does not know, so there is no other
    column; ``assignment_names`` maps an assignment to the column of an
    existing one, "Name (Canvas id)"."""

    default = "canvas.csv"
    assignment_names = Dict(
        {}, help="nbgrader assignment -> Canvas column").tag(config=True)

    def rows(self, gb):
        students, assignments = self.selected(gb)
        waiting = self.check(gb)
        self.missing(students, "lms_user_id", "Canvas",
                     "a Canvas user id (lms_user_id)")
        names = [self.assignment_names.get(a.name, a.name)
                 for a in assignments]
        yield ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
               *names]
        yield ["Points Possible", "", "", "", "",
               *[_number(a.max_score) for a in assignments]]
        for s in students:
            yield [f"{s.last_name or ''}, {s.first_name or ''}".strip(", "),
                   s.lms_user_id or "", s.id, "", "",
                   *[self.score(gb, a.name, s.id, waiting)
                     for a in assignments]]


class MoodleExport(_Export):
    """The CSV Moodle imports (Grades, Import, CSV file): Email address, ID
    number (nbgrader's student id), First name, Last name, one column per
    assignment with submissions (or given with --assignment), and "Waiting
    for hand grading" (the assignments whose written answers are not graded
    yet: leave it unmapped); map "Email address" to "Email address" and each
    assignment's column to its grade item when importing."""

    default = "moodle.csv"
    WAITING = "Waiting for hand grading"

    def rows(self, gb):
        students, assignments = self.selected(gb)
        waiting = self.check(gb)
        self.missing(students, "email", "Moodle", "an email address")
        yield ["Email address", "ID number", "First name", "Last name",
               *[a.name for a in assignments], self.WAITING]
        for s in students:
            yield [s.email or "", s.id, s.first_name or "", s.last_name or "",
                   *[self.score(gb, a.name, s.id, waiting)
                     for a in assignments],
                   " ".join(a.name for a in assignments
                            if (a.name, s.id) in waiting)]


class QuestionExport(_Export):
    """One row per student, assignment and graded cell (question):
    assignment, student_id, email, lms_user_id, question, kind (auto or
    manual), score, max_score, needs_manual_grade; a question not yet
    graded by hand has an empty score."""

    default = "questions.csv"
    keys = ["assignment", "student_id", "email", "lms_user_id", "question",
            "kind", "score", "max_score", "needs_manual_grade"]

    def rows(self, gb):
        students, assignments = self.selected(gb)
        self.check(gb)
        yield self.keys
        for a in assignments:
            for s in students:
                try:
                    submission = gb.find_submission(a.name, s.id)
                except MissingEntry:
                    continue
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        manual = grade.cell_type != "code"
                        score = None if grade.needs_manual_grade else \
                            grade.score
                        yield [a.name, s.id, s.email or "",
                               s.lms_user_id or "", grade.name,
                               "manual" if manual else "auto",
                               _number(score), _number(grade.max_score),
                               grade.needs_manual_grade]


# --- feedback ---------------------------------------------------------------

# what marks a traceback frame of the hidden tests or of the grader
GRADER_CODE = ("HIDDEN TESTS", "mha_grader", "_runpy.run_path")


class HideGraderCode(Preprocessor):
    """Drops the frames of an error's traceback that show a hidden test's
    code or the grader's (IPython prints the lines around the failing one);
    the error's message, the grader's report, stays."""

    enabled = Bool(True).tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [
                    frame for frame in output.get("traceback", [])
                    if not any(mark in frame for mark in GRADER_CODE)]
        return cell, resources


# --- autograding: the verification, and hidden tests restored quietly -------

HERE = os.path.dirname(os.path.abspath(__file__))  # the course folder
MISMATCH = "the notebook reported a pass the verification did not confirm"
BLOCK = ("---- verification ----", "---- end of verification ----")


def grader(course=HERE):
    """COURSE/grading/mha_grader.py, imported."""
    path = os.path.join(course, "grading", "mha_grader.py")
    spec = importlib.util.spec_from_file_location("mha_grader", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class OverwriteCells(nbgrader_preprocessors.OverwriteCells):
    """nbgrader's OverwriteCells, without its warning for a test cell that
    is the released one: a locked cell with hidden tests comes back without
    them (its checksum, the teacher's copy's, cannot match), and nbgrader
    would warn "Attribute 'checksum' ... has changed!" for every honest
    submission. A cell changed in any other way is still restored with the
    warning."""

    def preprocess_cell(self, cell, resources, index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id:
            try:
                source = self.gradebook.find_source_cell(
                    grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:
                source = None
            if (source is not None and source.locked
                    and "BEGIN HIDDEN TESTS" in source.source
                    and cell.cell_type == source.cell_type):
                released = NotebookNode({"source": source.source})
                nbgrader_preprocessors.ClearHiddenTests(
                )._remove_hidden_test_region(released)
                if cell.source == released.source:
                    self.log.debug("%s: the hidden tests put back",
                                   grade_id)
                    cell.source = source.source
        return super().preprocess_cell(cell, resources, index)


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel started through ``python -I COURSE/grading/mha_grader.py
    kernel COURSE -- <its command>``, which restricts it (Landlock) before
    it runs: it reads Python, the course's grading/ and questions/ and its
    notebook's folder, writes only that folder and a temporary one, and
    opens no connection."""

    course = Unicode(HERE, help="the course folder").tag(config=True)

    def format_kernel_cmd(self, extra_arguments=None):
        command = super().format_kernel_cmd(extra_arguments)
        grader_path = os.path.join(self.course, "grading", "mha_grader.py")
        return [sys.executable, "-I", grader_path, "kernel", self.course,
                "--", *command]


class Execute(nbgrader_preprocessors.Execute):
    """nbgrader's Execute with its kernel sandboxed (SandboxedKernelManager).
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)


def _defines(text, name):
    try:
        tree = ast.parse(text)
    except (SyntaxError, RecursionError, ValueError, MemoryError):
        return False
    for statement in tree.body:
        if getattr(statement, "name", None) == name:
            return True
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id == name and \
                    isinstance(node.ctx, ast.Store):
                return True
    return False


def answer_cells(cells):
    """{test cell: the answer cell that defines its function} (or the answer
    cell before the test cell)."""
    found, last = {}, None
    for cell in cells:
        if cell["kind"] == "answer":
            last = cell["grade_id"]
        elif cell["kind"] == "test":
            mine = [c["grade_id"] for c in cells if c["kind"] == "answer"
                    and _defines(c["source"], cell["fn"])]
            found[cell["grade_id"]] = mine[-1] if mine else last
    return found


def _with_block(comment, lines):
    """``comment`` with its verification block replaced by ``lines``."""
    text = comment or ""
    if BLOCK[0] in text:
        head, _, rest = text.partition(BLOCK[0])
        text = head.rstrip("\n") + rest.partition(BLOCK[1])[2]
    text = text.strip("\n")
    if lines:
        block = "\n".join([BLOCK[0], *lines, BLOCK[1]])
        text = f"{text}\n\n{block}" if text else block
    return text or None


def record_path(course, assignment, student, notebook):
    return os.path.join(course, "verification", assignment, student,
                        f"{notebook}.json")


def _digest(cells, course):
    data = json.dumps(cells, sort_keys=True).encode()
    for name in ("mha_grader.py", "secret", "settings.json"):
        try:
            with open(os.path.join(course, "grading", name), "rb") as f:
                data += f.read()
        except FileNotFoundError:
            pass
    return hashlib.sha256(data).hexdigest()


def _summary(text):
    """A report's line that says most: its first failed case."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if line.startswith("FAIL")),
                lines[0] if lines else "")


def _line(finding):
    where = finding["cell"] or "?"
    if finding.get("line"):
        where += f" line {finding['line']}"
    return f"{finding['what']} ({where})"


def verify_submission(gb, nb, assignment, notebook, student, course=HERE,
                      python=None, timeout=1200, log=None):
    """Verify a submission's test cells (``nb``: the autograded notebook,
    a dict) and write the verified scores into the gradebook ``gb``; the
    record (COURSE/verification/...) is returned."""
    mha_grader = grader(course)
    cells = mha_grader.notebook_cells(nb)
    source = gb.find_notebook(notebook, assignment)
    present = {c["grade_id"] for c in cells}
    for cell in source.grade_cells:  # a test cell the submission lost
        if cell.name in present or cell.cell_type != "code":
            continue
        text = gb.find_source_cell(cell.name, notebook, assignment).source
        call = mha_grader.test_call(text)
        if call:
            cells.append({"kind": "test", "grade_id": cell.name,
                          "check": call[0], "fn": call[1]})
    path = record_path(course, assignment, student, notebook)
    try:
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
    except (FileNotFoundError, ValueError):
        previous = {"cells": {}}
    result = mha_grader.verify(cells, os.path.join(course, "grading"),
                               python=python, timeout=timeout)
    findings = result["findings"]
    flags = [f for f in findings if f["level"] == "review"]
    answers = answer_cells(cells)
    comments = {}
    record = {"assignment": assignment, "student": student,
              "notebook": notebook, "input": _digest(cells, course),
              "cells": {}, "flags": [_line(f) for f in flags],
              "run": {k: result["run"].get(k)
                      for k in ("returncode", "sandbox", "timed_out")}}
    for grade_id, outcome in result["results"].items():
        grade = gb.find_grade(grade_id, notebook, assignment, student)
        zero = [f for f in findings if f["level"] == "zero"
                and f["check"] == grade_id]
        passed = outcome["passed"] and not zero
        verified = float(grade.max_score) if passed else 0.0
        kernel = grade.auto_score
        ours = previous["cells"].get(grade_id, {}).get("set")
        teacher = grade.manual_score is not None and \
            grade.manual_score != ours
        mismatch = (verified != kernel if kernel is not None
                    else verified > 0)
        if teacher:
            pass  # the teacher's own score stays
        elif mismatch:
            grade.manual_score = verified
        else:
            grade.manual_score = None
        grade.needs_manual_grade = bool(flags) or (
            teacher and grade.needs_manual_grade)
        why = [f"{_line(f)}: scored 0" for f in zero] or (
            [] if outcome["passed"] else [outcome["report"]])
        if mismatch and not teacher:
            said = (f"{grade_id}: {MISMATCH}" if kernel else
                    f"{grade_id}: the notebook's test failed, but the "
                    "verification passed every case")
            comments.setdefault(answers.get(grade_id), []).extend(
                [f"{said} ({verified:g} of {grade.max_score:g} points)."]
                + why)
        record["cells"][grade_id] = {
            "check": next(c["check"] for c in cells
                          if c.get("grade_id") == grade_id),
            "kernel": kernel, "verified": verified,
            "max": float(grade.max_score), "mismatch": mismatch,
            "teacher": teacher, "set": None if teacher else
            grade.manual_score, "why": why,
            "review": [_line(f) for f in flags]}
        if log is not None and mismatch:
            log.warning("%s %s %s: %s: %s (verified: %g of %g%s)",
                        student, assignment, grade_id,
                        MISMATCH if kernel else "the verification passed "
                        "what the notebook failed",
                        "; ".join(map(_summary, why))[:300]
                        or "every case passed", verified, grade.max_score,
                        "; the teacher's own score kept" if teacher else "")
    for answer in set(answers.values()) | set(comments):
        if answer is None:
            continue
        try:
            comment = gb.find_comment(answer, notebook, assignment, student)
        except MissingEntry:
            continue
        comment.manual_comment = _with_block(comment.manual_comment,
                                             comments.get(answer, []))
    gb.db.commit()
    if log is not None and flags:
        log.warning("%s %s: flagged for you to read (its scores stand; "
                    "the formgrader lists it as needing a grade): %s",
                    student, assignment, "; ".join(record["flags"])[:600])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    return record


class VerifyGrades(NbGraderPreprocessor):
    """One of ``nbgrader autograde``'s preprocessors (after SaveAutoGrades):
    the verification of every test cell (mha_grader.verify), its scores
    written into the gradebook (a Grade's manual_score overrides the kernel's
    auto_score, with a comment on the answer cell where they differ) and its
    record in COURSE/verification/<assignment>/<student>/; ``python
    mha_course.py verify ASSIGNMENT`` lists them."""

    course = Unicode(HERE, help="the course folder").tag(config=True)
    python = Unicode("", help="the Python that runs the student's code "
                     "and the judge (default: nbgrader's)").tag(config=True)
    timeout = Integer(1200, help="seconds for a whole notebook's "
                      "verification run").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        try:
            with Gradebook(info["db_url"]) as gb:
                verify_submission(gb, nb, info["assignment"],
                                  info["notebook"], info["student"],
                                  self.course, self.python or None,
                                  self.timeout, self.log)
        except Exception as error:  # noqa: BLE001 (the course's own fault)
            not_verified(info["db_url"], self.course, info["assignment"],
                         info["notebook"], info["student"], error, self.log)
        return nb, resources


def not_verified(db_url, course, assignment, notebook, student, error, log):
    """A submission the verification could not verify: no record (the
    exports warn), and its autograded cells wait for the teacher."""
    try:
        os.remove(record_path(course, assignment, student, notebook))
    except FileNotFoundError:
        pass
    try:
        with Gradebook(db_url) as gb:
            found = gb.find_submission_notebook(notebook, assignment,
                                                student)
            for grade in found.grades:
                if grade.auto_score is not None:
                    grade.needs_manual_grade = True
            gb.db.commit()
    except Exception:  # noqa: BLE001, S110 (the log says it all)
        pass
    log.error("%s %s: not verified (%r); its autograded cells wait for you "
              "in the formgrader (an export leaves it empty) until `python "
              "mha_course.py verify %s --student %s` verifies it", student,
              assignment, error, assignment, student)


# --- the teacher's command: python mha_course.py verify ASSIGNMENT ----------


def stale(course, assignment, student, notebook, nb):
    """Whether a submission has no verification record for what it is now."""
    try:
        with open(record_path(course, assignment, student, notebook),
                  encoding="utf-8") as f:
            record = json.load(f)
    except (FileNotFoundError, ValueError):
        return True
    cells = grader(course).notebook_cells(nb)
    return record.get("input") != _digest(cells, course)


def report(records):
    """The lines a teacher reads: mismatches, 0s for naming the answer, and
    submissions flagged for review."""
    lines, counts = [], {"mismatch": 0, "flagged": 0}
    for r in records:
        who = f"{r['assignment']} {r['student']}"
        for grade_id, cell in r["cells"].items():
            zero = [w for w in cell["why"] if w.endswith(": scored 0")]
            if zero and not cell["mismatch"]:
                lines.append(f"{who} {grade_id}: 0 (as the notebook's test "
                             "said):")
                lines += [f"    {w}" for w in zero]
            if cell["mismatch"]:
                counts["mismatch"] += 1
                what = (MISMATCH if cell["kernel"] else "the notebook's "
                        "test failed; the verification passed it")
                kept = " (your own score kept)" if cell["teacher"] else ""
                kernel = "-" if cell["kernel"] is None else \
                    f"{cell['kernel']:g}"
                lines.append(f"{who} {grade_id}: {what}: {kernel} -> "
                             f"{cell['verified']:g} of {cell['max']:g}{kept}")
                lines += [f"    {_summary(w)}" for w in cell["why"]]
        if r["flags"]:
            counts["flagged"] += 1
            lines.append(f"{who}: flagged for review (scores stand):")
            lines += [f"    {flag}" for flag in r["flags"]]
        if r["run"]["timed_out"]:
            lines.append(f"{who}: the verification run hit its time limit")
        if not r["run"].get("sandbox"):
            counts["open"] = counts.get("open", 0) + 1
    lines.append(f"{len(records)} submission(s) verified: "
                 f"{counts['mismatch']} score(s) changed by the "
                 f"verification, {counts['flagged']} flagged for review.")
    if counts.get("open"):
        lines.append(f"{counts['open']} of them ran without a sandbox: this "
                     "Linux has no Landlock (5.13 or later, with landlock "
                     "in its lsm= list), so a submission's code could read "
                     "and change the course's files. Read every full-mark "
                     "answer.")
    return lines


def verify_command(argv, course=HERE):
    """python mha_course.py verify ASSIGNMENT [--student ID ...] [--rerun]:
    verifies the autograded submissions not verified yet (each one that
    `nbgrader autograde` graded already is), and prints the report."""
    import argparse

    parser = argparse.ArgumentParser(prog="python mha_course.py verify",
                                     description=verify_command.__doc__)
    parser.add_argument("assignment")
    parser.add_argument("--student", nargs="*", default=[])
    parser.add_argument("--rerun", action="store_true",
                        help="verify again even where a record is current")
    parser.add_argument("--db", default=os.path.join(course, "gradebook.db"))
    args = parser.parse_args(argv)
    import logging

    log = logging.getLogger("mha_course.verify")
    logging.basicConfig(format="[verify | %(levelname)s] %(message)s")
    folder = os.path.join(course, "autograded")
    records = []
    with Gradebook(f"sqlite:///{args.db}") as gb:
        for submission in gb.assignment_submissions(args.assignment):
            student = submission.student.id
            if args.student and student not in args.student:
                continue
            for notebook in submission.notebooks:
                name = notebook.notebook.name
                path = os.path.join(folder, student, args.assignment,
                                    f"{name}.ipynb")
                if not os.path.exists(path):
                    log.warning("%s: not autograded yet", path)
                    continue
                with open(path, encoding="utf-8") as f:
                    nb = json.load(f)
                if args.rerun or stale(course, args.assignment, student,
                                       name, nb):
                    try:
                        verify_submission(gb, nb, args.assignment, name,
                                          student, course, log=log)
                    except Exception as error:  # noqa: BLE001 (said)
                        gb.db.rollback()
                        not_verified(f"sqlite:///{args.db}", course,
                                     args.assignment, name, student, error,
                                     log)
                        continue
                with open(record_path(course, args.assignment, student,
                                      name), encoding="utf-8") as f:
                    records.append(json.load(f))
    print("\n".join(report(records)))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["verify"]:
        sys.exit(verify_command(sys.argv[2:]))
    print(__doc__)
    sys.exit(2)
