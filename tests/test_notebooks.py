"""The chapters are sources: committed without outputs, with a python3 kernelspec, normalised, and
each following the chapter template (set-up cell first, exercises with solutions, summary, references).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
SETUP_CELL = '''# Set-up: on Colab or Binder, install the book's `mha` package (only the package, so Colab keeps its own torch).
import importlib.util

if importlib.util.find_spec("mha") is None:
    %pip install --quiet "mha @ git+{url}"'''


def repository_url() -> str:
    """The repository URL, read from _config.yml (the one place it is set)."""
    config = (ROOT / "_config.yml").read_text()
    match = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", config, re.MULTILINE)
    assert match, "_config.yml has no repository.url"
    return match.group(1)


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 1, "no notebooks found in chapters/"


def test_every_notebook_is_in_the_toc():
    toc = (ROOT / "_toc.yml").read_text()
    missing = [nb.stem for nb in NOTEBOOKS if f"chapters/{nb.stem}" not in toc]
    assert not missing, f"notebooks missing from _toc.yml: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = load(path)
    dirty = [
        i for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs or execution counts"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_python3_kernelspec(path):
    kernelspec = load(path)["metadata"].get("kernelspec", {})
    assert kernelspec.get("name") == "python3", f"{path.name}: kernelspec is {kernelspec!r}"
    assert kernelspec.get("language") == "python"


def test_notebooks_are_normalised():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "normalize_notebooks.py"), "--check", *map(str, NOTEBOOKS)],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, "run scripts/normalize_notebooks.py:\n" + run.stdout


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_code_cell_is_the_setup_cell(path):
    cells = load(path)["cells"]
    first_code = next(c for c in cells if c["cell_type"] == "code")
    assert source(first_code) == SETUP_CELL.format(url=repository_url()), (
        f"{path.name}: the first code cell must be the set-up cell, installing from the URL in _config.yml"
    )
    assert "remove-cell" in first_code["metadata"].get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_follows_the_chapter_template(path):
    cells = load(path)["cells"]
    markdown = "\n".join(source(c) for c in cells if c["cell_type"] == "markdown")
    code = "\n".join(source(c) for c in cells if c["cell_type"] == "code")
    assert markdown.lstrip().startswith("# "), f"{path.name}: must open with a '# Title' cell"
    exercises = re.findall(r"```\{exercise\}", markdown)
    assert len(exercises) >= 3, f"{path.name}: {len(exercises)} exercises, the template asks for 3"
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", markdown)
    solved = set(re.findall(r"```\{solution(?:-start)?\} (\S+)", markdown))
    assert len(labels) == len(exercises), f"{path.name}: every exercise needs a :label:"
    assert set(labels) <= solved, f"{path.name}: exercises without solutions: {set(labels) - solved}"
    assert markdown.count("{solution-start}") == markdown.count("{solution-end}")
    assert ":class: dropdown" in markdown, f"{path.name}: solutions are hidden (dropdown)"
    assert "mha_book.exercises.check(" in code, f"{path.name}: one exercise is checked by mha_book.exercises"
    assert "## Summary" in markdown and "## References" in markdown
    assert "{bibliography}" in markdown


def test_exercise_labels_are_unique_across_the_book():
    labels = []
    for path in NOTEBOOKS:
        for cell in load(path)["cells"]:
            if cell["cell_type"] == "markdown":
                labels += re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", source(cell))
    duplicates = {label for label in labels if labels.count(label) > 1}
    assert not duplicates, f"exercise labels used twice: {duplicates}"


MAX_CODE_LINE = 80


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_lines_fit_the_column(path):
    """Every line of every code cell is at most 80 characters, so the rendered page never cuts it.

    The set-up cell is exempt: its text is fixed by the template (see SETUP_CELL) and it is
    removed from the rendered page (tag remove-cell).
    """
    setup = SETUP_CELL.format(url=repository_url())
    long_lines = [
        f"cell {i} ({cell.get('id')}), line {n}: {len(line)} chars: {line[:60]}..."
        for i, cell in enumerate(load(path)["cells"])
        if cell["cell_type"] == "code" and source(cell) != setup
        for n, line in enumerate(source(cell).splitlines(), start=1)
        if len(line) > MAX_CODE_LINE
    ]
    assert not long_lines, (
        f"{path.name}: {len(long_lines)} code lines longer than {MAX_CODE_LINE} characters "
        "(wrap them):\n" + "\n".join(long_lines)
    )


# A section is named by its label (``(sec-14-gate)=`` before its heading, then {ref}`sec-14-gate`),
# never by where it lies: "the next section" turns wrong as soon as a section moves or one is
# added between (chapter 14's "the experiment of the last section" was two sections back).
RELATIVE_SECTION = re.compile(
    r"\bthe\s+(?:next|last|previous)\s+(?:(?:two|three|few)\s+)?sections?\b", re.IGNORECASE)
LABEL = re.compile(r"^\(([\w-]+)\)=\s*$|^:(?:label|name): *(\S+)", re.MULTILINE)
REF = re.compile(r"\{ref\}`(?:[^`<]*<([^`>]+)>|([^`<]+))`")


def markdown_of(path):
    return "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_sections_are_referred_to_by_label(path):
    found = [
        f"cell {i} ({cell.get('id')}): ...{source(cell)[max(0, m.start() - 40):m.end() + 20]!r}..."
        for i, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "markdown"
        for m in RELATIVE_SECTION.finditer(source(cell))
    ]
    assert not found, (
        f"{path.name}: refer to a section by its label ({{ref}}`sec-NN-name`, with "
        "(sec-NN-name)= before its heading), not as the next, last or previous section:\n"
        + "\n".join(found))


def test_the_guard_catches_a_relative_section_reference():
    for said in ("the next section", "The last section", "the previous\nsection",
                 "the next two sections"):
        assert RELATIVE_SECTION.search(f"As {said} shows."), said
    for fine in ("the next subsection", "the last row", "{ref}`sec-14-gate`",
                 "the section {ref}`sec-04-counting`, next,"):
        assert not RELATIVE_SECTION.search(fine), fine


def test_every_section_reference_has_its_label():
    pages = [markdown_of(p) for p in NOTEBOOKS] + [
        p.read_text(encoding="utf-8") for p in ROOT.glob("appendix/*.md")]
    labels = {a or b for text in pages for a, b in LABEL.findall(text)}
    missing = sorted({
        f"{path.name}: {a or b}" for path in NOTEBOOKS
        for a, b in REF.findall(markdown_of(path)) if (a or b).strip() not in labels})
    assert not missing, f"{{ref}} targets that no (label)= or :label: defines: {missing}"
