"""The data of a live figure's views: one builder per view kind, each returning the JSON-ready
dict that the front end (mha/static/src/) draws (numbers rounded, NaN and infinities as None).

``heatmap`` (grids on one colour scale), ``bars``, ``plot`` (lines, linear or log-log), ``table``,
``lines`` (one head as lines between its query and key tokens), ``arrows`` (2-D arrows in small
panels) and ``strips`` (integer grids too wide for a heatmap, built by mha_book/figures/batched_heads.py); a
``text`` view's data is ``{"text": str}``. ``fill`` fills a caption's template as the page's
``fill`` (mha/static/src/format.js) does, so one template, shipped in a figure's data, makes the
same words in Python and in the page.
"""

import math
import re
import string

__all__ = ["VIEW_KINDS", "arrows", "bars", "fill", "heatmap", "lines", "plot", "table"]

VIEW_KINDS = ("heatmap", "bars", "plot", "table", "text", "lines", "strips", "arrows")

# ----------------------------------------------------------------------------- captions

#: the format specs a template may use, each written the same by Python and the page: ".Nf" (N
#: decimals: toFixed), "g" (a short number, 6 significant digits; for numbers from 1e-4 to 1e6),
#: "," (a whole number with thousands separators: toLocaleString("en")); none: an int or a str
FILL_SPECS = re.compile(r"\.\d+f|g|,")


def fill(template, **values):
    """``template`` with each ``{name}`` or ``{name:spec}`` replaced by its value (``FILL_SPECS``),
    as the page's ``fill`` does. A float needs a spec: Python writes 1.0, JavaScript 1. (Exact
    ties round differently: 0.125 is "0.12" here and "0.13" in the page; the captions' numbers
    are no such ties.)"""
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if conversion or (spec and not FILL_SPECS.fullmatch(spec)) or not name.isidentifier():
            raise ValueError(f"template {template!r}: {{{name}:{spec}}} is not one of the forms "
                             f"the page fills ({{name}}, {{name:.2f}}, {{name:g}}, {{name:,}})")
        if name not in values:
            raise KeyError(f"template {template!r}: no value for {name!r}")
        if not spec and isinstance(values[name], float):
            raise TypeError(f"template {template!r}: {name!r} is a float; give it a spec "
                            f"(.2f, g), the page writes floats otherwise")
    return template.format(**values)


# ----------------------------------------------------------------------------- view data

def _numbers(x, digits=5):
    """Nested lists of floats, NaN and infinities as None (JSON has neither), rounded to
    ``digits`` decimals (the tests compare the page with Python to 1e-3); a value too small for
    that keeps one significant digit instead (7e-06, not 0: a softmax weight is never 0, and the
    page writes small numbers as 7e-6)."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, (list, tuple)):
        return [_numbers(v, digits) for v in x]
    x = float(x)
    if not math.isfinite(x):
        return None
    if x != 0 and abs(x) < 10.0 ** -(digits - 1):
        return float(f"{x:.0e}")
    return round(x, digits)

#: the longest sequence whose heatmaps draw every token label (the explorer's seq_len limit too)
MAX_LEN = 24
#: the smallest heatmap cell (px) for a long passage (a character-level model's context): the
#: grids fit a phone
TEXT_CELL_MIN = 1
#: the two views of one layer's weights (the explorer's and head_view's "view" control)
VIEWS = {"heatmaps": "heatmaps, every head", "lines": "lines, one head"}


def _depth(x):
    """How deeply ``x`` nests lists (or tuples), along its first entries: 2 for (Lq, Lk)."""
    n = 0
    while isinstance(x, (list, tuple)) and x:
        x, n = x[0], n + 1
    return n


def _masked(masked, H, Lq, Lk):
    """A view's ``masked`` (True = blocked): (Lq, Lk), every grid alike, or (H, Lq, Lk), one per
    grid, as the page reads it: one string per row ("1" = blocked; a passage's 128 x 128), a
    list of them per grid for (H, Lq, Lk); None when nothing is blocked."""
    cells = masked.tolist() if hasattr(masked, "tolist") else masked
    per_grid = _depth(cells) == 3
    grids = cells if per_grid else [cells]
    regular = (_depth(cells) in (2, 3) and len(grids) == (H if per_grid else 1)
               and all(len(g) == Lq and all(len(r) == Lk for r in g) for g in grids))
    if not regular:
        raise ValueError(f"masked must be (Lq, Lk) = ({Lq}, {Lk}), every grid alike, or "
                         f"(H, Lq, Lk) = ({H}, {Lq}, {Lk}), one entry per cell")
    rows = [["".join("1" if x else "0" for x in r) for r in g] for g in grids]
    if not any("1" in r for g in rows for r in g):
        return None
    return rows if per_grid else rows[0]


def heatmap(grids, rows, cols, *, titles=None, caption="", vmin=0.0, vmax=1.0, scale="viridis",
            label="attention weight", numbers=False, marks=None, axes=None, digits=5,
            ticks=None, tick_labels=None, masked=None, fit=False):
    """Heatmaps on one colour scale: ``grids`` (H, Lq, Lk) (a tensor or nested lists; NaN drawn
    as a crossed grey cell), ``rows``/``cols`` token labels, ``titles`` one per heatmap,
    ``scale`` ``viridis`` or ``diverging``, ``numbers`` writes each value in its cell, ``marks``
    ``[(h, i, j), ...]`` outlines cells, ``axes`` replaces the "rows: queries" line; values are
    rounded to ``digits`` decimals. ``ticks`` (values in ``vmin..vmax``) and ``tick_labels``
    (one per tick) replace the colour bar's numbers, e.g. ``[0, 1]`` and ``["blocked", "may
    attend"]`` for a mask. ``masked`` (Lq, Lk) bool, True = blocked by a mask (every grid
    alike), or (H, Lq, Lk) (one per grid), draws those cells blank and struck through, apart
    from weights near 0 (sent as one string per row, "1" = blocked, a list of them per grid
    for (H, Lq, Lk)). ``fit``: many heads in smaller cells (never under
    12 px, every token labelled), more a row, until they fit the screen below the figure's
    controls (chapter 07's explorer)."""
    if ticks is not None:
        ticks = [float(v) for v in ticks]
        if any(not vmin <= v <= vmax for v in ticks):
            raise ValueError(f"ticks must lie in vmin..vmax = {vmin}..{vmax}; got {ticks}")
        if tick_labels is not None and len(tick_labels) != len(ticks):
            raise ValueError(f"tick_labels must have one label per tick ({len(ticks)}); got "
                             f"{len(tick_labels)}")
    grids = _numbers(grids, digits)
    if len(grids) and not isinstance(grids[0][0], list):
        grids = [grids]  # one (Lq, Lk) grid
    d = {"grids": grids, "rows": [str(r) for r in rows], "cols": [str(c) for c in cols],
         "titles": titles, "caption": caption, "vmin": vmin, "vmax": vmax, "scale": scale,
         "label": label, "numbers": numbers, "marks": [list(m) for m in marks or []]}
    if axes:
        d["axes"] = axes
    if fit:
        d["fit"] = True
    if masked is not None:
        blocked = _masked(masked, len(grids), len(d["rows"]), len(d["cols"]))
        if blocked is not None:
            d["masked"] = blocked
    if ticks is not None:
        d["ticks"] = ticks
        d["tick_labels"] = None if tick_labels is None else [str(x) for x in tick_labels]
    return d


def bars(values, labels, *, caption="", highlight=(), y_label="attention weight",
         x_label="key", y_min=0.0, y_max=1.0, null_label="n/a", decimals=None):
    """Bars ``values`` (n,) over ``labels``; ``highlight``: indices drawn in the accent colour; a
    value that is None (or NaN) draws no bar and writes ``null_label`` where its number would be
    (e.g. "not yet" for a key the computation has not reached); ``decimals`` fixes how many
    decimals each bar's number shows (as the readout writes them), instead of the default."""
    d = {"values": _numbers(values), "labels": [str(x) for x in labels], "caption": caption,
         "highlight": list(highlight), "y_label": y_label, "x_label": x_label,
         "y_min": y_min, "y_max": y_max, "null_label": str(null_label)}
    if decimals is not None:
        d["decimals"] = int(decimals)
    return d


def plot(x, series, *, caption="", x_label="", y_label="", y_min=None, y_max=None,
         x_log=False, marker=None, marker_series=None):
    """Lines: ``series`` is ``{label: y values}``, one y per x; ``marker`` rings the point at
    that index (the current setting) on every line, or only on the lines whose indices
    ``marker_series`` lists (the one the other controls select); ``x_log`` spaces x by log2."""
    if marker_series is not None:
        marker_series = [int(i) for i in marker_series]
        if any(not 0 <= i < len(series) for i in marker_series):
            raise ValueError(f"marker_series must index the {len(series)} series; got "
                             f"{marker_series}")
    d = {"x": list(x), "series": [{"label": k, "y": _numbers(v)} for k, v in series.items()],
         "caption": caption, "x_label": x_label, "y_label": y_label, "x_log": x_log,
         "marker": marker, "marker_series": marker_series}
    if y_min is not None:
        d["y_min"] = y_min
    if y_max is not None:
        d["y_max"] = y_max
    return d


def table(columns, rows, caption=""):
    """A small table: ``rows`` are ``[row label, value, ...]`` under ``columns``."""
    return {"columns": list(columns), "rows": [list(r) for r in rows], "caption": caption}


# ----------------------------------------------------------------------------- lines view
# One head as lines (in the manner of bertviz's head view): queries in a left column, keys in a
# right one, a line for every query-key pair, its width and opacity the weight. In the page each
# token is a button: focusing or hovering it (or tapping it, which pins it) shows only its lines.

def lines(weights, query_labels, key_labels, *, titles=None, head=0, focus=None,
          focus_from=None, caption="", label="attention weight", masked=None):
    """Data of a ``lines`` view: ``weights`` (H, Lq, Lk) or (Lq, Lk), rows summing to 1 (or 0);
    ``titles`` one per head (with H > 1 the view has its own head picker, starting at ``head``);
    ``focus`` ``("query", i)`` or ``("key", j)``: the token whose lines alone are drawn at first
    (None: every line); ``focus_from`` ``(control name, [query index or None per value])``: the
    focused query follows that control (e.g. a ``steps`` control through the queries), so the
    states that differ only in it share one copy of the weights. ``masked``: as ``heatmap``'s
    (True = blocked by a mask): those pairs get no line and are not listed."""
    grids = _numbers(weights)
    if not isinstance(grids, list) or not grids or not isinstance(grids[0], list):
        raise ValueError(f"weights must be (H, Lq, Lk) or (Lq, Lk); got {weights!r:.80}")
    if not isinstance(grids[0][0], list):
        grids = [grids]  # one head
    H, Lq, Lk = len(grids), len(grids[0]), len(grids[0][0])
    if any(len(g) != Lq or any(len(r) != Lk for r in g) for g in grids):
        raise ValueError("weights must be a regular (H, Lq, Lk) array; got ragged rows")
    if len(query_labels) != Lq or len(key_labels) != Lk:
        raise ValueError(f"query_labels and key_labels must have Lq = {Lq} and Lk = {Lk} "
                         f"entries; got {len(query_labels)} and {len(key_labels)}")
    if titles is not None and len(titles) != H:
        raise ValueError(f"titles must have one entry per head ({H}); got {len(titles)}")
    if not (isinstance(head, int) and 0 <= head < H):
        raise ValueError(f"head must be an int in 0..{H - 1}; got {head!r}")
    if focus is not None:
        side, index = focus
        size = Lq if side == "query" else Lk if side == "key" else None
        if size is None or not (isinstance(index, int) and 0 <= index < size):
            raise ValueError(f"focus must be ('query', 0..{Lq - 1}) or ('key', 0..{Lk - 1}) "
                             f"or None; got {focus!r}")
    d = {"grids": grids, "rows": [str(r) for r in query_labels],
         "cols": [str(c) for c in key_labels], "titles": titles, "head": head,
         "focus": list(focus) if focus else None, "caption": caption, "label": label}
    if focus_from is not None:
        knob, queries = focus_from
        bad = [q for q in queries if q is not None and not (isinstance(q, int) and 0 <= q < Lq)]
        if not isinstance(knob, str) or bad:
            raise ValueError(f"focus_from must be (control name, [query index in 0..{Lq - 1} "
                             f"or None per value]); got {focus_from!r:.120}")
        d["focus_from"] = {"knob": knob, "queries": list(queries)}
    if masked is not None:
        blocked = _masked(masked, H, Lq, Lk)
        if blocked is not None:
            d["masked"] = blocked
    return d


# ----------------------------------------------------------------------------- strips (ch05)
# Integer grids too wide for a heatmap (9 x 512): the front end's ``strips`` (panels.js) draws each panel's grid
# (one category per cell, e.g. a head) with one colour per category and marks a focused cell.
# Data: {"panels": [{"title", "grid" (rows x cols, or heads side by side), "focus"}], "heads",
# "d_head", "rows", "cols", "labels", "caption"}; see mha_book/figures/batched_heads.py.


# ----------------------------------------------------------------------------- arrows view
# (chapter 12's rotary pairs)



def arrows(panels, labels, *, caption="", radius=1.0):
    """2-D arrows from the origin, one small panel each: ``panels`` is ``[{"title": str,
    "arrows": [[x, y], ...]}, ...]``, one arrow per entry of ``labels`` (the legend; the first
    arrow is drawn in the main colour, the second in the accent, the third faded and dashed);
    ``radius`` is the length the panels' circle stands for."""
    return {"panels": [{"title": str(p["title"]), "arrows": _numbers(p["arrows"])}
                       for p in panels],
            "labels": [str(x) for x in labels], "caption": caption, "radius": float(radius)}
