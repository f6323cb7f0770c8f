"""One notation from the first chapter to the last: every symbol of every display formula in the
chapters' markdown is listed on the notation page (appendix/notation.md), which the preface and
the table of contents point to. The extraction lives in tests/notation_symbols.py; its own tests
come first, so that a broken extractor cannot pass the book by finding nothing."""

import json
import re
from pathlib import Path

import pytest
from notation_symbols import all_symbols, display_formulas, inline_formulas, symbols

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
PAGE = ROOT / "appendix" / "notation.md"


def markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def page_symbols() -> set[str]:
    text = PAGE.read_text(encoding="utf-8")
    return all_symbols(inline_formulas(text) + display_formulas(text))


# --- the extractor, on small strings -------------------------------------------------------------

def test_extractor_finds_letters_with_scripts_names_and_greek():
    found = symbols(r"\text{head}_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^\top}"
                    r"{\sqrt{d_k}}\right) V_i, \quad W_i^Q \in \mathbb R^{d_\text{model} \times d_k},"
                    r" \sigma^2")
    assert found == {
        r"\mathrm{head}", r"\mathrm{softmax}", "Q_•", "K_•", "V_•", "d_k", "W_•^Q", r"\mathbb{R}",
        "d_model", r"\sigma",
    }


def test_extractor_normalises_indices_and_ignores_powers_and_transposes():
    # s_j, s_{ij} and s_{i,i-1} are one symbol; ^\top, ^2 and ^{(i)} do not make a new one
    assert symbols(r"s_j + s_{ij} - s_{i,i-1}") == {"s_•"}
    assert symbols(r"K^\top K^2") == {"K"}
    assert symbols(r"a^{(i)}_j") == {"a_•"}
    # \text{head}, \mathrm{head} and \operatorname{head} are one name; prose in \text{} is not
    assert symbols(r"\text{head}_1 \text{ and } \mathrm{head}_2") == {r"\mathrm{head}"}
    # bold letters are the plain letters; i and j alone are indices
    assert symbols(r"\mathbf q \cdot \mathbf k_j + i + j") == {"q", "k_•"}
    # the subscript of an underbrace is a formula, not an index
    assert symbols(r"\underbrace{d^2}_{W^Q}") == {"d", "W^Q"}


def test_extractor_finds_display_formulas_and_skips_code():
    markdown = "\n".join([
        "Inline $x_i$ is not a display formula.",
        "$$ Q = XW^Q $$",
        "```{math}", ":label: eq-test", r"\alpha_{ij} = 1", "```",
        r"\begin{aligned} Z &= Y \end{aligned}",
        "```python", "$$ not = math $$", "```",
        "```{exercise} Title", ":label: ex-test", "$$ W^O_i $$", "```",
    ])
    formulas = display_formulas(markdown)
    assert formulas == [r"\alpha_{ij} = 1", r"W^O_i", "Q = XW^Q", r"\begin{aligned} Z &= Y \end{aligned}"]
    assert all_symbols(formulas) == {r"\alpha_•", "W_•^O", "Q", "X", "W^Q", "Z", "Y"}
    assert inline_formulas(markdown) == ["x_i"]


def test_the_check_can_fail():
    """A symbol the page does not list is reported: the comparison below is not vacuous."""
    missing = symbols(r"\zeta_i + W^Z x_i + \mathrm{NewName}(Q)") - page_symbols()
    assert missing == {r"\zeta_•", "W^Z", r"\mathrm{NewName}"}


# --- the book ------------------------------------------------------------------------------------

def test_the_page_is_in_the_toc_and_linked_from_the_preface():
    assert PAGE.exists(), "appendix/notation.md is missing"
    toc = (ROOT / "_toc.yml").read_text()
    assert re.search(r"caption: Appendix\n(\s+.*\n)*?\s+- file: appendix/notation\n", toc), \
        "appendix/notation is not in the Appendix part of _toc.yml"
    preface = "\n".join(markdown_cells(ROOT / "chapters" / "00_preface.ipynb"))
    assert "<notation>`" in preface or "appendix/notation.md" in preface


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_chapter_links_the_notation_page(path):
    text = "\n".join(markdown_cells(path))
    assert re.search(r"\{ref\}`[^`]*<?notation(-\w+)?>?`|appendix/notation\.md", text), \
        f"{path.name} never links the notation page"


def test_the_chapters_have_display_formulas():
    formulas = [f for path in NOTEBOOKS for cell in markdown_cells(path) for f in display_formulas(cell)]
    assert len(formulas) > 30, f"only {len(formulas)} display formulas found: is the extractor broken?"
    assert {"Q", "K", "V", "W^Q", "W^O", "d_k", "d_model", r"\mathrm{softmax}"} <= all_symbols(formulas)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_symbol_is_on_the_notation_page(path):
    listed = page_symbols()
    missing = {}
    for cell in markdown_cells(path):
        for formula in display_formulas(cell):
            for symbol in symbols(formula) - listed:
                missing.setdefault(symbol, formula[:80])
    assert not missing, (
        f"{path.name}: symbols not listed on appendix/notation.md (add them, with their meaning, "
        f"shape and code name, or use the book's existing symbol): {missing}")
