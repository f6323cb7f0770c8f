"""The built book holds nothing of the machine that built it: no absolute path of the checkout
and no path in the builder's home directory, in any page, script, source or data file.

Such a path is both a leak (the published book prints where its builder keeps files) and a bug:
a default argument like ``PosixPath('/…/mha_book/weights/positions.pt')`` in the API reference is as
long as the clone's directory, so whether a page fits its column depended on where the repository
was cloned. ``.ci/run`` builds and tests the book from a clone under a directory whose path is over
120 characters, so a path that slips in shows up there as well as here.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
#: files that are data, not text a reader or a browser reads
BINARY = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".woff", ".woff2", ".ttf", ".eot", ".ico",
          ".pickle", ".doctree", ".pt", ".pdf"}


def local_paths() -> dict[str, str]:
    """What must not appear: the checkout's path, and the home directory (as a path prefix)."""
    found = {"the checkout's absolute path": str(ROOT)}
    home = str(Path.home())
    if home not in {"", "/"}:
        found["the home directory"] = home.rstrip("/") + "/"
    return found


def leaks(text: str) -> list[str]:
    """The names of the local paths that ``text`` contains."""
    return [name for name, path in local_paths().items() if path in text]


def test_leaks_finds_a_path_in_a_signature():
    signature = f"load_models(path=PosixPath('{ROOT}/mha_book/weights/positions.pt'), device=None)"
    assert "the checkout's absolute path" in leaks(signature)
    assert leaks("load_models(path=None, device=None)") == []


def test_no_local_path_in_the_built_book(require_build):
    require_build()
    found = []
    for path in sorted(HTML.rglob("*")):
        if not path.is_file() or path.suffix.lower() in BINARY:
            continue
        text = path.read_text(errors="replace")
        for name in leaks(text):
            needle = local_paths()[name]
            at = text.index(needle)
            found.append(f"{path.relative_to(HTML)}: {name} in "
                         f"...{text[max(0, at - 60):at + len(needle) + 60]!r}...")
    if not found:
        return
    pytest.fail(f"{len(found)} built files name a path of this machine:\n" + "\n".join(found[:30]))
