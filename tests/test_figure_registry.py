"""The figures are found, not listed: ``mha_book.figures`` imports every module of its package
and exposes each function marked ``@live_figure`` (``FIGURES``, ``build``)."""

import importlib
import pkgutil
from pathlib import Path

import pytest

from mha.live.figure import Figure
from mha_book import figures

MODULES = sorted(m.name for m in pkgutil.iter_modules(figures.__path__)
                 if not m.name.startswith("_"))


def test_every_figure_is_exposed_under_its_name_beside_its_module():
    assert figures.FIGURES and list(figures.FIGURES) == sorted(figures.FIGURES)
    for name, function in figures.FIGURES.items():
        assert getattr(figures, name) is function and name in figures.__all__
        module = importlib.import_module(function.__module__)
        assert name in module.__all__ and getattr(module, name) is function
    for name in MODULES:  # the modules stay modules (chapters import them)
        assert getattr(figures, name) is importlib.import_module(f"mha_book.figures.{name}")


def test_the_chapters_calls_keep_working():
    from mha_book.figures import dk_softmax, kv_cache, scaled_scores

    assert dk_softmax is scaled_scores.dk_softmax and kv_cache.decode_steps is \
        figures.decode_steps
    assert scaled_scores.DIMS[0] == 1


@pytest.mark.parametrize("module", MODULES)
def test_a_module_that_makes_a_figure_marks_it(module):
    """A module that returns a Figure has a marked function (a forgotten mark would leave the
    figure out of every check that goes over the registry)."""
    source = (Path(figures.__file__).parent / f"{module}.py").read_text(encoding="utf-8")
    if "return Figure(" in source:
        assert any(f.__module__ == f"mha_book.figures.{module}"
                   for f in figures.FIGURES.values()), f"{module}: no @live_figure"


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_every_figure_builds_from_its_mark(name):
    figure = figures.build(name)
    assert isinstance(figure, Figure)
    assert figure.name and f'data-figure="{figure.name}"' in figure.html()


def test_figure_names_differ():
    names = [figures.build(n).name for n in figures.FIGURES]
    assert len(set(names)) == len(names), names


def test_live_figure_marks_with_or_without_arguments():
    def plain():
        return None

    def with_example(x):
        return x

    assert figures.live_figure(plain) is plain and plain.live_figure_example == {}
    assert figures.live_figure(x=3)(with_example).live_figure_example == {"x": 3}
