"""The course the tests in tests/assignments share, built once per session
as appendix/teachers.md builds one: the example question copied into the
course, then `make assignments` (the course in a temporary folder)."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from nbgrader.api import Gradebook

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # nbgrader runs `alembic` from PATH
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
# appendix/teachers.md, "A question of your own" and "Set up the course", as
# run from the checkout (`course/` and `make assignments` get the test's own
# course folder)
SETUP = [
    "mkdir -p course/questions/00_preface",
    "cp scripts/course/example_question.py "
    "course/questions/00_preface/log_softmax.py",
    "make assignments",
]
QUESTION = "log_softmax"  # the example question's name in the course


def in_course(command, course):
    """A command of the guide, run from the checkout, on ``course``."""
    if command == "make assignments":
        return f"make assignments COURSE={course}"
    return re.sub(r"(?<![\w/])course/", f"{course}/", command)


def shell(command, cwd, env=ENV, timeout=900):
    start = time.monotonic()
    run = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, text=True,
                         capture_output=True, timeout=timeout)
    print(f"{command}: {time.monotonic() - start:.1f} s")
    assert run.returncode == 0, f"{command} failed:\n{run.stdout}{run.stderr}"
    assert "[ERROR]" not in run.stderr and "| ERROR]" not in run.stderr, \
        run.stderr
    return run


def shared_course(tmp_path_factory):
    """The session's course (built by the first test module asking)."""
    base = tmp_path_factory.getbasetemp() / "shared"
    course = base / "course"
    if not (base / "built").exists():
        base.mkdir(exist_ok=True)
        for command in SETUP:
            shell(in_course(command, course), ROOT)
        (base / "built").touch()
    return course


def nbgrader(course, *args):
    return shell(" ".join([str(BIN / "nbgrader"), *map(_quote, args)]),
                 course)


def _quote(arg):
    return f"'{arg}'" if any(c in arg for c in " *") else arg


def read(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write(nb, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                    "utf-8")


def scores(course, student, assignment):
    """{grade_id: (score, max_score, needs_manual_grade)}."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(assignment, assignment,
                                               student)
        return {g.name: (g.score, g.max_score, g.needs_manual_grade)
                for g in notebook.grades}
