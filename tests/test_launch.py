"""The launch buttons' set-ups: Binder installs the CPU build of the torch the book pins, plus the
package with its [book] extra; Colab's set-up cell installs the package alone (tests/test_notebooks.py
checks that cell); the [book] extra's floors are the versions `make colab-check` installs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def requirement_lines(path):
    lines = (ROOT / path).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_binder_installs_cpu_torch_matching_the_pin():
    pinned = next(line for line in requirement_lines("requirements.txt") if line.startswith("torch=="))
    binder = requirement_lines("binder/requirements.txt")
    assert f"{pinned}+cpu" in binder, f"binder/requirements.txt should pin {pinned}+cpu; has {binder}"
    indexes = [line for line in binder if line.startswith("--extra-index-url")]
    assert indexes and indexes[0].endswith("/whl/cpu"), f"no CPU wheel index in {binder}"


def test_binder_installs_the_package_with_its_book_extra():
    assert ".[book]" in requirement_lines("binder/requirements.txt")


def test_book_extra_floors_are_the_colab_check_lowest_profile():
    """`make colab-check` pins each floor exactly (profile 'lowest'): every requirement of the
    extra must have a floor (>=), so the versions tested are the versions allowed."""
    text = (ROOT / "pyproject.toml").read_text()
    book = re.search(r"^book\s*=\s*\[(.*?)\]", text, re.MULTILINE | re.DOTALL).group(1)
    requirements = re.findall(r'"([^"]+)"', book)
    assert requirements, "pyproject.toml has no [book] extra"
    without_floor = [r for r in requirements if ">=" not in r]
    assert not without_floor, f"[book] requirements without a floor: {without_floor}"
    ipywidgets = next(r for r in requirements if r.startswith("ipywidgets"))
    assert ipywidgets == "ipywidgets>=7.7.1", "Colab ships ipywidgets 7.7.1: the floor must admit it"


def test_colab_check_compares_an_environment_with_its_own():
    """The newest profile is run only where it differs from the book's venv (whose chapters
    nbval runs): the venv against itself differs in nothing, and torch is compared."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("colab_check",
                                                  ROOT / "scripts" / "colab_check.py")
    colab_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(colab_check)
    found = colab_check.versions(sys.executable)
    assert "torch" in found and "mha" not in found
    assert colab_check.differs_from_here(sys.executable) == {}
