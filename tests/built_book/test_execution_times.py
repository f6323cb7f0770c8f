"""Every chapter was executed by the book build, without error, in under 60 s (the book's promise
for a 2-core CPU). Reads the execution record that MyST-NB keeps in the build's environment, and
prints the timings per chapter (the figures the teachers' notes quote)."""

import pickle
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT = ROOT / "_build" / ".doctrees" / "environment.pickle"
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))
BUDGET_S = 60.0


@pytest.fixture(scope="module")
def execution(require_build):
    require_build(ENVIRONMENT)
    with ENVIRONMENT.open("rb") as f:
        env = pickle.load(f)
    records = {doc: meta.get("exec_data") for doc, meta in env.nb_metadata.items()}
    print("\nexecution time per chapter (this build):")
    for doc, record in sorted(records.items()):
        if record:
            print(f"  {doc:40s} {record['runtime']:6.1f} s  {'ok' if record['succeeded'] else 'FAILED'}")
    return records


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_executed_within_budget(execution, chapter):
    record = execution.get(f"chapters/{chapter}")
    assert record, f"{chapter} was not executed by the book build"
    assert record["succeeded"], f"{chapter} failed in the book build: {record['error']}"
    assert record["runtime"] < BUDGET_S, (
        f"{chapter} took {record['runtime']:.1f} s to execute; the budget is {BUDGET_S:.0f} s"
    )
