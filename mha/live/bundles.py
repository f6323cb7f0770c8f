"""The front end's bundles: the scripts a figure's HTML inlines.

The front end is ES modules (``mha/static/src/``: the engine, its views and controls), bundled by
esbuild (``frontend/build.mjs``, ``make frontend``) into ``mha/static/live.js``, which is
committed and shipped with the package. A package with figures of its own may add a bundle of
its own (in-page computes, views), built from its own modules with the same build, and register
it here: ``register("mha_book", path, computes=("explorer", ...))`` (``mha_book.figures`` does on
import). A figure then carries the bundles it needs (``Figure.bundles()``): the extension that
provides its ``compute``, any it names in ``extensions``, then the engine. So a figure of
``mha.live`` alone (``mha.head_view``) carries the engine only, and a book figure both.

In the HTML the extensions come first, in one ``<script>``: each registers itself
(``mha/static/src/extend.js``) with the engine already on the page, or with the engine that
starts right after it.
"""

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["ENGINE", "STATIC", "Bundle", "bundle", "providing", "register", "script", "text"]

#: the package's built front end: mha/static/live.js (the engine), widget.js (the widget entry)
STATIC = Path(__file__).resolve().parents[1] / "static"
ENGINE = "mha.live"


@dataclass(frozen=True)
class Bundle:
    """A built script: ``name`` (a figure names it in ``extensions``), its ``path`` and the
    in-page computes it registers (``Figure(compute=...)``)."""

    name: str
    path: Path
    computes: tuple = ()


_BUNDLES = {ENGINE: Bundle(ENGINE, STATIC / "live.js")}


def register(name, path, computes=()):
    """Add a package's bundle (a path to a script built by frontend/build.mjs) whose in-page
    ``computes`` figures may name; registering the same again is a no-op."""
    path = Path(path)
    if not isinstance(name, str) or not name or name == ENGINE:
        raise ValueError(f"a bundle's name must be a non-empty str other than {ENGINE!r}; "
                         f"got {name!r}")
    if not path.is_file():
        raise FileNotFoundError(f"bundle {name!r}: no file at {path} (build it: make frontend)")
    new = Bundle(name, path, tuple(computes))
    taken = {c: b.name for b in _BUNDLES.values() if b.name != name for c in b.computes}
    clash = sorted(set(new.computes) & set(taken))
    if clash:
        raise ValueError(f"bundle {name!r}: the compute {clash[0]!r} is already registered "
                         f"by bundle {taken[clash[0]]!r}")
    _BUNDLES[name] = new
    return new


def bundle(name):
    if name not in _BUNDLES:
        raise ValueError(f"no front-end bundle {name!r} is registered; registered: "
                         f"{sorted(_BUNDLES)}")
    return _BUNDLES[name]


def providing(compute):
    """The name of the bundle that registers the in-page ``compute``."""
    for b in _BUNDLES.values():
        if compute in b.computes:
            return b.name
    known = sorted(c for b in _BUNDLES.values() for c in b.computes)
    raise ValueError(f"no registered bundle provides the in-page compute {compute!r} (known: "
                     f"{known}); import the package that registers it (the book's: "
                     f"mha_book.figures)")


@lru_cache(maxsize=None)
def _read(path):
    found = Path(path).read_text(encoding="utf-8")
    if "</script" in found.lower():
        raise ValueError(f"{path} holds '</script', which would end the inline script")
    return found


def text(name):
    """A bundle's script text."""
    return _read(str(bundle(name).path))


@lru_cache(maxsize=None)
def script(*extensions):
    """One ``<script>`` element: the ``extensions``' bundles, then the engine (strict mode;
    each bundle is its own function scope, nothing leaks into the page)."""
    names = [n for n in dict.fromkeys(extensions) if n != ENGINE]
    body = "\n".join(text(n) for n in [*names, ENGINE])
    return f'<script>"use strict";\n{body}</script>'
