"""One assignment through a real JupyterHub, as a class runs it.

`make course-test` runs this with the nbgrader venv's Python, after
installing JupyterHub (requirements-hub.txt) and its proxy (npm,
tests/course_hub/package.json). scripts/hub_course.py starts JupyterHub and
configurable-http-proxy on 127.0.0.1 (free ports), a teacher (group
instructors) and four students with a server each (SimpleLocalProcessSpawner:
one Unix user, a home each; the student image's Jupyter configuration,
deploy/jupyterhub/etc, given by the Zero to JupyterHub values' hook) and
nbgrader's exchange in a folder made with a documented mode. Then, every step
over HTTP through the hub's proxy, with each user's own token:

- the teacher generates and releases the preface's assignment (formgrader);
- each student fetches it (the Assignments tab's REST calls), writes their
  answers into the notebook (the contents API: what JupyterLab saves) and
  submits: alice right, bob wrong (tests/assignments' typical wrong softmax),
  carol blank; the deadline passes; dave submits right, but late;
- the teacher collects, autogrades (with the course's verification apart
  from the notebook's kernel, nbgrader_config.py's VerifyGrades), grades the
  written answers by hand, generates and releases the feedback (formgrader),
  and exports the grades with `nbgrader export` in a JupyterLab terminal;
- each student fetches their feedback.

The tests check every score, the late flag (only dave's submission is after
the due date, in the gradebook and in the export), each student's feedback,
the exchange's permissions, the logins, that a student can reach neither
another student's server nor the formgrader (nor see it in JupyterLab), and
that nothing the hub started is left running once it stops; and that
scripts/hub_course.py, started in the background as a shell does (SIGINT
ignored), stops everything on Ctrl-C's SIGINT. About two minutes on 2 cores
(appendix/teachers.md, "Running the course on JupyterHub").
"""

import csv
import datetime
import html
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests
from nbgrader.api import Gradebook

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests" / "assignments"))
import hub_course  # noqa: E402
import test_nbgrader  # noqa: E402 (its typical wrong answers)

import mha_book  # noqa: E402

CHAPTER = "00_preface"
NOTEBOOK = f"{CHAPTER}/{CHAPTER}.ipynb"
RIGHT, WRONG, BLANK, LATE = hub_course.STUDENTS
ANSWER_ID, CHECK, WRONG_FUNCTION, WRONG_CODE = test_nbgrader.WRONG[CHAPTER]
# the question, and the open experiment (appendix/teachers.md: 1 and 2)
POINTS = {"check-softmax": 2, "answer-ex-00-shift": 1,
          "answer-ex-00-device": 2}
TOTAL = sum(POINTS.values())
# the teacher's grades of the written answers (the right ones in full)
MANUAL = {RIGHT: {"answer-ex-00-shift": 1, "answer-ex-00-device": 2},
          LATE: {"answer-ex-00-shift": 1, "answer-ex-00-device": 2},
          WRONG: {"answer-ex-00-shift": 1, "answer-ex-00-device": 0}}
EXPECTED = {RIGHT: 5, WRONG: 1, BLANK: 0, LATE: 5}  # of TOTAL
CODE = {RIGHT: 2, WRONG: 0, BLANK: 0, LATE: 2}  # of 2, autograded
# the per-question export of scripts/course/mha_course.py (copied into the
# course by scripts/assignments.py), where the checkout has it
QUESTION_EXPORT = (ROOT / "scripts" / "course" / "mha_course.py").exists()
WRITTEN = {
    "answer-ex-00-shift": "The weights do not change: the constant cancels "
                          "between the numerator and the denominator.",
    "answer-ex-00-device": "On this machine, the CPU.",
}


def answered(release, source, student):
    """``student``'s copy of the ``release`` notebook, answered."""
    if student == BLANK:
        return release
    solutions = {c["metadata"]["nbgrader"]["grade_id"]: c
                 for c in source["cells"]}
    cells = []
    for cell in release["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if grade_id == ANSWER_ID and student == WRONG:
            cell = {**cell, "source": WRONG_CODE}
        elif cell["cell_type"] == "code" and meta.get("solution"):
            cell = {**cell, "source": solutions[grade_id]["source"]}
        elif grade_id in WRITTEN:
            cell = {**cell, "source": WRITTEN[grade_id]}
        cells.append(cell)
    return {**release, "cells": cells}


def utc(timestamp):
    """nbgrader's timestamps and due dates as naive UTC datetimes."""
    stamp = datetime.datetime.fromisoformat(str(timestamp).replace(" UTC", ""))
    if stamp.tzinfo:
        stamp = stamp.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return stamp


def page_text(page):
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def submit(student):
    listing = student.assignment_action("submit", CHAPTER)
    stamps = [s["timestamp"] for a in listing if a["status"] == "submitted"
              for s in a["submissions"]]
    assert len(stamps) == 1, listing
    return stamps[0]


@pytest.fixture(scope="module")
def course():
    """The whole run; returns what the tests check. The hub, its proxy and
    every server are stopped before the tests look, the folder removed
    after."""
    root = Path(tempfile.mkdtemp(prefix="mha-hub-"))
    start = time.monotonic()
    steps, out = {}, {"root": root}

    def step(name):
        steps[name] = round(time.monotonic() - start, 1)
        print(f"{steps[name]:6.1f} s  {name}")

    try:
        with hub_course.Hub(root, [CHAPTER]) as hub:
            out["hub"] = hub
            step("hub and proxy up")
            hub.start_servers()
            step("5 servers up")
            teacher = hub.as_user(hub.teacher)
            students = {s: hub.as_user(s) for s in hub.students}
            run_course(hub, teacher, students, out, step)
            out["isolation"] = isolation(hub, teacher, students)
            step("checks of who reaches what")
        step("hub stopped")
        out["left_running"] = hub.marked_processes()
        out["port_open"] = port_open(hub.port)
        out["gradebook"] = gradebook(hub.course / "gradebook.db")
        out["steps"] = steps
        yield out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_course(hub, teacher, students, out, step):
    # the teacher: generate and release (formgrader)
    teacher.formgrader("POST", f"assignment/{CHAPTER}/assign")
    teacher.formgrader("POST", f"assignment/{CHAPTER}/release")
    step("released")
    released = {s: a for s, a in ((s, u.assignments()) for s, u in
                                  students.items())}
    # each student fetches, answers in the notebook, and (but dave) submits
    source = test_nbgrader.read(hub.course / "source" / CHAPTER /
                                f"{CHAPTER}.ipynb")
    out["stamps"] = {}
    for name, student in students.items():
        student.assignment_action("fetch", CHAPTER)
        nb = student.read_notebook(NOTEBOOK)
        student.write_notebook(NOTEBOOK, answered(nb, source, name))
        if name != LATE:
            out["stamps"][name] = submit(student)
    step("fetched, answered; 3 submitted")
    # the deadline passes: the due date, set now, is after those three
    due = datetime.datetime.now(datetime.timezone.utc)
    assignment = teacher.formgrader(
        "PUT", f"assignment/{CHAPTER}",
        json={"duedate_notimezone": due.strftime("%Y-%m-%dT%H:%M:%S.%f"),
              "duedate_timezone": "UTC"})
    out["duedate"] = assignment["duedate"]
    out["stamps"][LATE] = submit(students[LATE])
    step("the late submission")
    # the teacher: collect, autograde, grade by hand, feedback
    teacher.formgrader("POST", f"assignment/{CHAPTER}/collect")
    out["autograde_log"] = {}
    for name in students:
        reply = teacher.formgrader(
            "POST", f"submission/{CHAPTER}/{name}/autograde")
        out["autograde_log"][name] = reply.get("log", "")
    step("collected, autograded 4")
    for notebook in teacher.formgrader(
            "GET", f"submitted_notebooks/{CHAPTER}/{CHAPTER}"):
        grades = teacher.formgrader(
            "GET", f"grades?submission_id={notebook['id']}")
        for grade in grades:
            score = MANUAL.get(notebook["student"], {}).get(grade["name"])
            if score is not None:
                teacher.formgrader("PUT", f"grade/{grade['id']}",
                                   json={"manual_score": score})
    out["verified"] = {
        name: json.loads((hub.course / "verification" / CHAPTER / name /
                          f"{CHAPTER}.json").read_text())
        for name in students}
    out["submissions"] = {
        s["student"]: s for s in
        teacher.formgrader("GET", f"submissions/{CHAPTER}")}
    teacher.formgrader("POST", f"assignment/{CHAPTER}/generate_feedback")
    teacher.formgrader("POST", f"assignment/{CHAPTER}/release_feedback")
    out["modes"] = hub_course.exchange_modes(hub.exchange)
    step("graded by hand, feedback released")
    # each student fetches their feedback
    out["feedback"], out["listing"] = {}, {}
    for name, student in students.items():
        student.assignment_action("fetch_feedback", CHAPTER)
        folders = student.listing(f"{CHAPTER}/feedback")
        out["feedback"][name] = {
            stamp: student.read_text(f"{CHAPTER}/feedback/{stamp}/"
                                     f"{CHAPTER}.html")
            for stamp in folders}
        out["listing"][name] = student.assignments()
    step("feedback fetched")
    # the teacher exports the grades, in a terminal of their JupyterLab:
    # nbgrader's CSV, and one row per question (mha_course.py, when the
    # course has it)
    command = "cd ~/course && nbgrader export --to grades.csv"
    if QUESTION_EXPORT:
        command += (" && nbgrader export --exporter=mha_course.QuestionExport"
                    " --to questions.csv")
    rc, terminal = teacher.terminal(command)
    assert rc == 0, terminal
    for name in ("grades", "questions") if QUESTION_EXPORT else ("grades",):
        out[name] = list(csv.DictReader(io.StringIO(
            teacher.read_text(f"course/{name}.csv"))))
    out["released"] = released
    step("grades exported")


def isolation(hub, teacher, students):
    alice, bob = students[RIGHT], students[WRONG]
    login = requests.Session()
    form = login.get(f"{hub.url}/hub/login", timeout=30)
    xsrf = login.cookies.get("_xsrf", "")

    def log_in(password):
        return login.post(f"{hub.url}/hub/login", allow_redirects=False,
                          timeout=60, data={"username": RIGHT,
                                            "password": password,
                                            "_xsrf": xsrf})
    return {
        "login page": form.status_code,
        "wrong password": log_in("not the password").status_code,
        "password": log_in(hub.password).status_code,
        "alice on bob's server": alice.request(
            "GET", f"/../{WRONG}/api/contents").status_code,
        "bob on the teacher's formgrader": bob.request(
            "GET", f"/../{hub.teacher}/formgrader/api/assignments"
        ).status_code,
        "alice's own formgrader": alice.request(
            "GET", "/formgrader/api/assignments").status_code,
        "the teacher's formgrader": teacher.request(
            "GET", "/formgrader/api/assignments").status_code,
        "lab plugins off for alice": lab_disabled(alice),
        "lab plugins off for the teacher": lab_disabled(teacher),
    }


def lab_disabled(user):
    """The nbgrader plugins JupyterLab leaves out of ``user``'s page."""
    page = user.request("GET", "/lab").text
    data = re.search(r'<script id="jupyter-config-data"[^>]*>(.*?)</script>',
                     page, re.S)
    disabled = json.loads(data[1]).get("disabledExtensions", [])
    if isinstance(disabled, dict):
        disabled = [name for name, off in disabled.items() if off]
    return sorted(n for n in disabled if n.startswith("@jupyter/nbgrader"))


def port_open(port):
    try:
        requests.get(f"http://127.0.0.1:{port}/hub/api", timeout=5)
    except requests.ConnectionError:
        return False
    return True


def gradebook(db):
    with Gradebook(f"sqlite:///{db}") as gb:
        return {s.student.id: {
            "late": s.total_seconds_late,
            "timestamp": s.timestamp, "duedate": s.duedate,
            "score": s.score, "penalty": s.late_submission_penalty,
            "grades": {g.name: (g.score, g.needs_manual_grade)
                       for nb in s.notebooks for g in nb.grades}}
            for s in gb.assignment_submissions(CHAPTER)}


def test_every_score(course):
    submissions, book = course["submissions"], course["gradebook"]
    assert set(submissions) == set(book) == set(EXPECTED)
    for name, score in EXPECTED.items():
        sub = submissions[name]
        assert (sub["score"], sub["max_score"]) == (score, TOTAL), \
            (name, sub)
        assert (sub["code_score"], sub["max_code_score"]) == (CODE[name], 2)
        assert not sub["needs_manual_grade"], name
        grades = book[name]["grades"]
        assert set(grades) == set(POINTS)
        check, _ = grades["check-softmax"]
        assert check == CODE[name]
        for grade_id, points in MANUAL.get(name, {}).items():
            assert grades[grade_id] == (points, False), (name, grade_id)
        if name == BLANK:  # blank answers score 0 without the teacher
            assert all(g == (0, False) for g in grades.values()), grades
        print(f"{name}: {sub['score']:g} / {sub['max_score']:g}")


def test_autograding_verified_every_submission_quietly(course):
    for name, record in course["verified"].items():
        cell = record["cells"]["check-softmax"]
        assert cell["verified"] == cell["kernel"] == CODE[name], record
        assert not cell["mismatch"] and not record["flags"], record
        # the released test cell's hidden tests come back unannounced
        assert "Attribute 'checksum'" not in course["autograde_log"][name]


def test_only_the_late_submission_is_flagged_late(course):
    book, due = course["gradebook"], utc(course["duedate"])
    stamps = {name: utc(stamp) for name, stamp in course["stamps"].items()}
    for name, sub in book.items():
        assert sub["duedate"] == due
        assert sub["timestamp"] == stamps[name]  # the time of the submit
        if name == LATE:
            assert sub["timestamp"] > due and sub["late"] > 0
            assert "seconds late" in course["autograde_log"][name]
        else:
            assert sub["timestamp"] < due and sub["late"] == 0, name
        assert not sub["penalty"]  # the course's policy: flag, no penalty
    print(f"{LATE}: {book[LATE]['late']:.3f} s late")


def test_the_export_has_every_score_and_the_late_timestamp(course):
    rows = {row["student_id"]: row for row in course["grades"]}
    assert set(rows) == set(EXPECTED)
    for name, score in EXPECTED.items():
        row = rows[name]
        assert row["assignment"] == CHAPTER
        assert float(row["score"]) == float(row["raw_score"]) == score
        assert float(row["max_score"]) == TOTAL
        assert float(row["late_submission_penalty"]) == 0
        assert (utc(row["timestamp"]) > utc(row["duedate"])) == \
            (name == LATE), row


@pytest.mark.skipif(not QUESTION_EXPORT,
                    reason="no scripts/course/mha_course.py")
def test_the_export_per_question(course):
    rows = {(r["student_id"], r["question"]): r for r in course["questions"]}
    assert set(rows) == {(s, q) for s in EXPECTED for q in POINTS}
    for (name, question), row in rows.items():
        score = CODE[name] if question == "check-softmax" else \
            MANUAL.get(name, {}).get(question, 0)
        assert float(row["score"]) == score, row
        assert float(row["max_score"]) == POINTS[question]
        assert row["kind"] == ("auto" if question.startswith("check-")
                               else "manual")
        assert row["needs_manual_grade"] == "False"


def test_each_student_fetched_their_own_feedback(course):
    failure = mha_book.exercises.check(CHECK, WRONG_FUNCTION, verbose=False)
    assert not failure.passed
    for name, pages in course["feedback"].items():
        assert len(pages) == 1, (name, list(pages))
        [(stamp, page)] = pages.items()
        assert stamp == course["stamps"][name]  # named by the submission time
        text = page_text(page)
        score = re.search(r"Score: ([\d.]+) / ([\d.]+)", text)
        assert score and float(score[1]) == EXPECTED[name], (name, score)
        if name == WRONG:  # the check's own message for the wrong softmax
            for message in failure.failures:
                assert " ".join(message.split(". Hint:")[0].split()) in text
        if name == BLANK:
            assert "NotImplementedError" in text
        listing = course["listing"][name]
        submitted = [s for a in listing if a["status"] == "submitted"
                     for s in a["submissions"]]
        assert submitted and all(s["has_local_feedback"]
                                 for s in submitted), listing


def test_the_exchange_has_nbgraders_permissions(course):
    modes = course["modes"]
    assert modes["."] == hub_course.EXCHANGE_MODE == 0o1777
    for name, mode in hub_course.COURSE_MODES.items():
        path = f"{hub_course.COURSE_ID}/{name}".rstrip("/")
        assert modes[path] == mode, (path, oct(modes[path]))
    # no student can list the others' submissions nor the feedback folder
    assert not modes[f"{hub_course.COURSE_ID}/inbound"] & 0o004
    assert not modes[f"{hub_course.COURSE_ID}/feedback"] & 0o006


def test_students_reach_only_their_own_server(course):
    assert course["isolation"] == {
        "login page": 200,
        "wrong password": 403,
        "password": 302,
        "alice on bob's server": 403,
        "bob on the teacher's formgrader": 403,
        "alice's own formgrader": 404,  # students' servers do not load it
        "the teacher's formgrader": 200,
        "lab plugins off for alice": ["@jupyter/nbgrader:create-assignment",
                                      "@jupyter/nbgrader:formgrader"],
        "lab plugins off for the teacher": [],
    }
    # the assignment was listed as released to every student
    for name, listing in course["released"].items():
        assert [a["assignment_id"] for a in listing
                if a["status"] == "released"] == [CHAPTER], name


def test_nothing_is_left_running(course):
    assert course["left_running"] == []
    assert not course["port_open"]
    assert course["hub"].proc.returncode is not None
    print("steps (s):", course["steps"])


def test_ctrl_c_stops_a_hub_started_in_the_background(tmp_path):
    # as `python scripts/hub_course.py DIR &` in a script: SIGINT ignored
    # at the start, then Ctrl-C's SIGINT (what the hub's stop does with
    # servers and kernels, test_nothing_is_left_running checks)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "NBGRADER"))}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "hub_course.py"),
         str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    hub = hub_course.Hub(tmp_path)  # its marked_processes, of this root
    try:
        line = proc.stdout.readline()
        match = re.search(r"(http://[\d.:]+)/hub/login.* password (\S+)",
                          line)
        assert match, line + proc.stdout.read()
        url = match[1]
        # the banner's second line: the script waits for Ctrl-C after it
        assert "Ctrl-C stops everything" in proc.stdout.readline()
        assert len(hub.marked_processes()) >= 2  # the hub and its proxy
        proc.send_signal(signal.SIGINT)
        assert proc.wait(90) == 0
        said = proc.stdout.read()
        assert "stopping the hub" in said and "stopped" in said, said
        assert hub.marked_processes() == []
        assert not port_open(int(url.rsplit(":", 1)[1]))
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in hub.marked_processes():
            os.kill(pid, signal.SIGKILL)
