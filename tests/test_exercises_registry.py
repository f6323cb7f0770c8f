"""One exercise, one file: each check of the package lives in mha_book/exercises/<name>.py with
its course facts (variants, forbidden and allowed calls), every dotted name there resolves to a
real object (a rename fails here, not silently in the course), and the teachers' guide's table
of exercises names the checks each chapter calls, in that chapter's row."""

import importlib
import json
import re
from pathlib import Path

import pytest

import mha_book.exercises as ex
from mha_book.exercises import Case, register

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "mha_book.exercises."


def package_checks():
    return [n for n in ex.available() if ex._REGISTRY[n].module.startswith(PACKAGE)]


def resolve(label):
    """The object a dotted name names (as the course's grader resolves it)."""
    parts = label.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot resolve {label}")


def test_every_check_of_the_package_has_a_file_of_its_own_named_by_its_idea():
    names = package_checks()
    assert len(names) >= 21
    for name in names:
        assert ex._REGISTRY[name].module == PACKAGE + name, name
    files = [p.stem for p in (ROOT / "mha_book" / "exercises").glob("*.py")]
    assert not [f for f in files if re.search(r"(^|_)(ch|part)\d", f)], files
    assert sorted(f for f in files if not f.startswith("_")) == sorted(names)


@pytest.mark.parametrize("name", package_checks())
def test_every_check_declares_its_course_facts_and_they_resolve(name):
    entry = ex._REGISTRY[name]
    assert callable(entry.variants), f"{name}: no course variants"
    assert entry.forbidden is not None, f"{name}: no forbidden calls declared ([] if none)"
    assert ex.forbidden_names(name) == entry.forbidden
    assert ex.allowed_names(name) == entry.allowed
    for label in (*entry.forbidden, *entry.allowed):
        obj = resolve(label)
        assert callable(obj), (name, label)
    with_seed = [c for c in entry.variants(__import__("random").Random(3))]
    assert with_seed and all(isinstance(c, Case) and c.name.startswith("course case: ")
                             for c in with_seed), name


def test_forbidden_objects_become_their_dotted_names_and_allowed_ones_their_aliases():
    import mha

    register("_registry_probe", reference=abs, cases=lambda: [],
             forbidden=[mha.functional.masked_softmax, "torch.Tensor.softmax"],
             allowed=[mha.functional.split_heads], variants=lambda rng: [])
    try:
        assert ex.forbidden_names("_registry_probe") == (
            "mha.functional.masked_softmax", "torch.Tensor.softmax")
        assert ex.allowed_names("_registry_probe") == (
            "mha.split_heads", "mha.functional.split_heads")
    finally:
        del ex._REGISTRY["_registry_probe"]
    register("_registry_probe", reference=abs, cases=lambda: [])
    try:
        assert ex.forbidden_names("_registry_probe") is None
        assert ex.allowed_names("_registry_probe") == ()
    finally:
        del ex._REGISTRY["_registry_probe"]


@pytest.mark.parametrize("kwargs, error, text", [
    ({"variants": 3}, TypeError, "variants of check '_bad' must be None or a callable"),
    ({"forbidden": "torch.softmax"}, TypeError, "forbidden of check '_bad' must be a list"),
    ({"forbidden": [lambda x: x]}, TypeError, "has no importable name"),
    ({"forbidden": [".softmax"]}, ValueError, "is not a dotted name"),
    ({"allowed": [3]}, TypeError, "allowed of check '_bad'"),
])
def test_register_refuses_bad_course_facts_naming_them(kwargs, error, text):
    with pytest.raises(error, match=re.escape(text)):
        register("_bad", reference=abs, cases=lambda: [], **kwargs)
    assert "_bad" not in ex.available()
    with pytest.raises(ValueError, match="name must be the name of a check"):
        ex.forbidden_names("_bad")


def chapter_checks():
    """{chapter: the check names its notebook calls check("name", ...) with}."""
    found = {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        found[path.stem] = set(re.findall(r"\bcheck\(\s*\"(\w+)\"", code))
    return found


def test_the_teachers_table_names_every_check_in_its_chapters_row():
    lines = (ROOT / "appendix" / "teachers.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| chapter | discuss |"))
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        chapter, _, write, _ = (c.strip() for c in line.strip("|").split("|"))
        name = re.search(r"chapters/(\w+)>?`", chapter)[1]
        table[name] = set(re.findall(r"\(`\"(\w+)\"`", write)
                          + re.findall(r", `\"(\w+)\"`\)", write))
    calls = {chapter: names for chapter, names in chapter_checks().items() if names}
    assert table == calls
    named = [n for names in table.values() for n in names]
    assert len(named) == len(set(named))  # each check in one chapter's row
    assert set(named) <= set(package_checks())  # (a check no chapter calls is not listed)
