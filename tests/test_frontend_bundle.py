"""The front end's bundles are its ES modules built: a fresh build (esbuild, pinned in
frontend/package-lock.json) equals the committed bundles byte for byte, so the sources
(mha/static/src/, mha_book/static/src/) and what the package serves cannot drift apart.
Skipped without Node.js or frontend/node_modules (`make frontend-deps`), except in CI."""

import subprocess

import pytest
from node_js import FRONTEND, IN_CI, NODE, ROOT, need_tools


def test_the_committed_bundles_are_the_sources_built():
    need_tools()
    done = subprocess.run([NODE, str(FRONTEND / "build.mjs"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + (" (CI)" if IN_CI else "")


def test_every_bundle_is_shipped_and_no_source_is():
    """The wheel ships the bundles (package data), not the sources nor the npm project."""
    tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml (Python 3.11+)")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "static/*.js" in data["package-data"]["mha"]
    assert "static/*.js" in data["package-data"]["mha_book"]
    for bundle in ("mha/static/live.js", "mha/static/widget.js", "mha_book/static/book.js"):
        assert (ROOT / bundle).is_file(), bundle
