"""scripts/student_notebooks.py removes every solution and keeps every exercise and check."""

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
spec = importlib.util.spec_from_file_location("student_notebooks", ROOT / "scripts" / "student_notebooks.py")
student_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(student_notebooks)


def text(nb, kind):
    return "\n".join(student_notebooks.source(c) for c in nb["cells"] if c["cell_type"] == kind)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_solutions_removed_exercises_kept(path):
    nb = json.loads(path.read_text())
    stripped = student_notebooks.strip_solutions(nb)
    markdown, code = text(stripped, "markdown"), text(stripped, "code")
    assert "{solution" not in markdown, f"{path.name}: a solution survived"
    assert "solution_" not in code, f"{path.name}: solution code survived"
    exercises = re.findall(r"```\{exercise\}", text(nb, "markdown"))
    assert len(re.findall(r"```\{exercise\}", markdown)) == len(exercises) >= 3
    assert "## Summary" in markdown and "{bibliography}" in markdown
    assert code.count("mha_book.exercises.check(") >= 1  # the starter cells keep their checks
    assert len(stripped["cells"]) < len(nb["cells"])


def test_a_solution_start_without_end_is_an_error():
    nb = {"cells": [{"cell_type": "markdown", "metadata": {},
                     "source": "```{solution-start} ex-1\n:class: dropdown\n```"}]}
    with pytest.raises(ValueError, match="solution-end"):
        student_notebooks.strip_solutions(nb)


def test_writes_the_copies(tmp_path):
    assert student_notebooks.main([str(tmp_path), str(NOTEBOOKS[0])]) == 0
    written = json.loads((tmp_path / NOTEBOOKS[0].name).read_text())
    assert "{solution" not in text(written, "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_line_of_a_solution_block_survives(path):
    # a ````{solution} block holding a ```python block once left its code and answer behind
    nb = json.loads(path.read_text())
    markdown = text(student_notebooks.strip_solutions(nb), "markdown")
    blocks = student_notebooks.solution_blocks(nb)
    assert blocks, f"{path.name}: no {{solution}} block found"
    for label, body in blocks.items():
        for line in body.splitlines():
            if len(line.strip()) > 30:
                assert line not in markdown, f"{path.name}: {label} left {line!r}"


def test_a_solution_with_a_code_block_inside_goes_whole():
    cell = {"cell_type": "markdown", "metadata": {}, "source":
            "```{exercise} E\n:label: ex-1\nDo it.\n```\n\n````{solution} ex-1\n:class: dropdown\n"
            "A start:\n\n```python\nprint(1)\n```\n\nThe answer.\n````\n\nAfter."}
    stripped = student_notebooks.strip_solutions({"cells": [cell]})
    assert text(stripped, "markdown") == "```{exercise} E\n:label: ex-1\nDo it.\n```\n\n\nAfter."
    assert student_notebooks.solution_blocks({"cells": [cell]}) == {
        "ex-1": "A start:\n\n```python\nprint(1)\n```\n\nThe answer."}
