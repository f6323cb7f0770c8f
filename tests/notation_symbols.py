"""Find the symbols of the book's display formulas (used by tests/test_notation.py).

A *symbol* is what a reader must be able to look up on the notation page (appendix/notation.md):

- a letter with a subscript or superscript, ``W_i^Q``, ``d_\\text{model}``, ``h_\\text{kv}``;
  subscripts that are only running indices (``s_j``, ``s_{i,i-1}``, ``k_{j,f}``) are written
  ``_•``, so ``s_j`` and ``s_{i,i+1}`` are the one symbol ``s_•``; ``^\\top``, powers and
  primes are not part of a symbol;
- a single capital letter, ``X``, ``Q``, ``S``;
- a name, ``\\operatorname{softmax}``, ``\\text{head}``, ``\\mathrm{Var}``, ``\\mathbb{R}``;
- a Greek letter, ``\\sigma``, ``\\delta``.

It is a simple extraction, by regular expressions, not a LaTeX parser: enough to catch a symbol
that enters a chapter without being listed on the notation page.
"""

from __future__ import annotations

import re

GREEK = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu "
    "xi pi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma "
    "Phi Psi Omega ell"
).split()
# \mathbf{q}, \boldsymbol q: the same letter as q (the book writes vectors in plain italics)
BOLD = re.compile(r"\\(?:mathbf|boldsymbol|bm)\s*(?:\{\s*([A-Za-z0-9])\s*\}|([A-Za-z0-9]))")
# \tilde q: a symbol of its own, written \tilde{q}
ACCENT = re.compile(r"\\(tilde|hat|bar)\s*(?:\{\s*([A-Za-z])\s*\}|([A-Za-z]))")
# running indices and the imaginary unit: a lowercase letter on its own is a symbol, except these
BARE_INDEX = {"i", "j"}
# commands whose argument is a name (\text{head}, \operatorname{softmax}, \mathbb{R})
NAMED = ("text", "mathrm", "operatorname", "mathbb", "mathcal")
# subscripts made only of these are running indices: s_j, s_{i,i-1}, k_{j,f}, x_{t+1}
INDEX = re.compile(r"^(?:[ijftnmrlpbc0-9+\-,() ]+|.*clip.*)$")
# \text{...} that holds a word of the prose between two formulas, not a name
PROSE = {"and", "or", "for", "where", "with", "if", "otherwise", "else", "i.e.", "e.g."}


def display_formulas(markdown: str) -> list[str]:
    """The LaTeX of every display formula in a markdown text: ``$$ ... $$``, ```` ```{math} ````
    blocks and ``\\begin{...} ... \\end{...}`` environments outside those."""
    formulas = []
    # code fences other than {math} hold code, not formulas
    fence = re.compile(r"^(`{3,}|~{3,})([^\n]*)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
    rest = []
    last = 0
    for match in fence.finditer(markdown):
        rest.append(markdown[last:match.start()])
        last = match.end()
        info = match.group(2).strip()
        if info.startswith("{math}"):
            body = re.sub(r"^:\w[\w-]*:.*$", "", match.group(3), flags=re.MULTILINE)
            formulas.append(body.strip())
        elif info.startswith("{") and not info.startswith(("{code", "{literalinclude")):
            # a directive (exercise, solution, admonition, ...): its body is markdown
            inner = display_formulas(match.group(3))
            formulas.extend(inner)
            rest.append(re.sub(r"\$\$.*?\$\$", " ", match.group(3), flags=re.DOTALL))
    rest.append(markdown[last:])
    text = "".join(rest)
    # inline code spans may contain dollar signs or backslashes that are not math
    text = re.sub(r"`[^`\n]*`", " ", text)
    for match in re.finditer(r"\$\$(.+?)\$\$", text, re.DOTALL):
        formulas.append(match.group(1).strip())
    text = re.sub(r"\$\$(.+?)\$\$", " ", text, flags=re.DOTALL)
    for match in re.finditer(r"\\begin\{(\w+\*?)\}(.*?)\\end\{\1\}", text, re.DOTALL):
        formulas.append(match.group(0).strip())
    return formulas


def inline_formulas(markdown: str) -> list[str]:
    """The LaTeX of every inline formula ``$ ... $`` (outside code), for the notation page."""
    text = re.sub(r"^(`{3,})[^\n]*\n.*?^\1[ \t]*$", " ", markdown, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"\$\$(.+?)\$\$", " ", text, flags=re.DOTALL)
    return [m.group(1) for m in re.finditer(r"(?<![\\$])\$([^$\n]+?)\$", text)]


def _script(latex: str, start: int) -> tuple[str, int]:
    """The argument of a sub/superscript starting at ``latex[start]`` (after ``_`` or ``^``):
    ``{...}`` (balanced), ``\\command`` (with a braced argument for \\text and friends) or one
    character. Returns the argument and the index after it."""
    while start < len(latex) and latex[start] == " ":
        start += 1
    if start >= len(latex):
        return "", start
    if latex[start] == "{":
        depth, i = 0, start
        while i < len(latex):
            depth += {"{": 1, "}": -1}.get(latex[i], 0)
            if depth == 0:
                return latex[start + 1:i], i + 1
            i += 1
        return latex[start + 1:], len(latex)
    if latex[start] == "\\":
        match = re.match(r"\\([A-Za-z]+)\s*(\{[^{}]*\})?", latex[start:])
        if match:
            return match.group(0), start + match.end()
        return latex[start:start + 2], start + 2
    return latex[start], start + 1


def _clean(script: str) -> str:
    """``\\text{model}`` -> ``model``; ``\\mathrm{kv}`` -> ``kv``; spaces removed."""
    script = re.sub(r"\\(?:text|mathrm|operatorname|mathit)\s*\{([^{}]*)\}", r"\1", script)
    return re.sub(r"\s+", "", script)


def _normalise_sub(sub: str) -> str:
    sub = _clean(sub)
    return "•" if INDEX.match(sub) else sub


def _normalise_sup(sup: str) -> str | None:
    """The part of a superscript that names the symbol (``Q`` in ``W^Q``, ``(p)``), or None for
    ``^\\top``, ``^2``, ``^{-1}``, ``^{s_j}`` and other operations on the symbol."""
    sup = _clean(sup)
    if re.fullmatch(r"[A-Z]{1,2}", sup):
        return sup
    return None


def symbols(latex: str) -> set[str]:
    """The symbols of one formula, normalised (see the module's docstring)."""
    found: set[str] = set()
    latex = BOLD.sub(lambda m: m.group(1) or m.group(2), latex)
    latex = latex.replace("\\operatorname*", "\\operatorname")
    for match in ACCENT.finditer(latex):
        letter = match.group(2) or match.group(3)
        found.add(f"\\{match.group(1)}{{{letter}}}" + _scripts(latex, match.end()))
    latex = ACCENT.sub(lambda m: " " * len(m.group(0)), latex)
    # names: \text{head}, \operatorname{softmax}, \mathbb{R}; \text{...} holding words is prose
    for match in re.finditer(r"\\(" + "|".join(NAMED) + r")\s*\{([^{}]*)\}", latex):
        name = match.group(2).strip()
        if re.search(r"[_^]\s*\{?\s*$", latex[:match.start()]):
            continue  # d_\text{model}: part of a subscript, found with its letter
        if match.group(1) == "text" and (not re.fullmatch(r"\w+", name) or name in PROSE):
            continue  # \text{or, for all keys at once,}: words between formulas
        # \text{head}, \mathrm{head} and \operatorname{head} are one name
        prefix = "\\" + match.group(1) if match.group(1) in ("mathbb", "mathcal") else "\\mathrm"
        found.add(f"{prefix}{{{name}}}")
    for match in re.finditer(r"\\mathbb\s+([A-Za-z])", latex):
        found.add(f"\\mathbb{{{match.group(1)}}}")
    # Greek letters (with their scripts, if any)
    for match in re.finditer(r"\\(" + "|".join(GREEK) + r")(?![A-Za-z])", latex):
        symbol, end = "\\" + match.group(1), match.end()
        found.add(symbol + _scripts(latex, end))
    # letters: drop commands and the arguments of names, then look at what is left
    plain = re.sub(r"\\(?:" + "|".join(NAMED + ("texttt", "mathit", "label", "tag")) +
                   r")\s*\{[^{}]*\}", lambda m: " " * len(m.group(0)), latex)
    # environments and spacing: \begin{aligned}, \\[2pt]
    plain = re.sub(r"\\(?:begin|end)\s*\{[^{}]*\}|\\\\\[[^\]]*\]", lambda m: " " * len(m.group(0)),
                   plain)
    plain = re.sub(r"\\mathbb\s*[A-Za-z]", lambda m: " " * len(m.group(0)), plain)
    plain = re.sub(r"\\[A-Za-z]+", lambda m: " " * len(m.group(0)), plain)
    # the insides of subscripts are indices or names, found with their letter: blank them
    plain = _blank_subscripts(latex, plain)
    # adjacent letters are a product of single letters: XW^Q is X times W^Q
    for match in re.finditer(r"(?<![_^])([A-Za-z])", plain):
        letter, end = match.group(1), match.end()
        scripts = _scripts(latex, end)
        if scripts:
            found.add(letter + scripts)
        elif letter not in BARE_INDEX:
            found.add(letter)
    return found


def _blank_subscripts(latex: str, plain: str) -> str:
    """``plain`` (``latex`` with commands blanked, same length) with the argument of every
    subscript of ``latex`` that belongs to a letter, a name or an operator (``\\sum_{i=1}``)
    replaced by spaces; the subscript of ``\\underbrace{...}_{W^Q}`` is a formula, kept."""
    out, i = list(plain), 0
    while i < len(latex):
        before = latex[:i].rstrip()
        attached = bool(before) and (before[-1].isalnum() or re.search(
            r"\\(?:" + "|".join(NAMED) + r")\s*\{[^{}]*\}$", before))
        if latex[i] == "_" and attached:
            _, end = _script(latex, i + 1)
            out[i + 1:end] = " " * (end - i - 1)
            i = end
        else:
            i += 1
    return "".join(out)


def _scripts(latex: str, end: int) -> str:
    """The normalised sub/superscripts that follow position ``end``: ``_•^Q``, ``_model``, ''."""
    sub = sup = None
    i = end
    while True:
        j = i
        while j < len(latex) and latex[j] == " ":
            j += 1
        if j < len(latex) and latex[j] in "_^":
            kind = latex[j]
            arg, i = _script(latex, j + 1)
            if kind == "_":
                sub = _normalise_sub(arg)
            else:
                sup = _normalise_sup(arg)
            continue
        break
    out = ""
    if sub:
        out += "_" + sub
    if sup:
        out += "^" + sup
    return out


def all_symbols(formulas) -> set[str]:
    found: set[str] = set()
    for formula in formulas:
        found |= symbols(formula)
    return found
