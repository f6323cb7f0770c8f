"""A live figure as data: controls, views and every state the controls can reach.

A figure is declared in Python and drawn by one front end, ``mha/static/live.js``:

* **controls** (``slider``, ``select``, ``toggle``, ``steps``): each offers a list of values and
  starts at one of them;
* **views** (``View(name, kind)``, kind ``heatmap``, ``bars``, ``plot``, ``table``, ``text`` or
  ``lines``): the pictures, whose data each state gives (build it with ``heatmap``, ``bars``,
  ``plot``, ``table``, ``lines``: one head as lines between its query and key tokens);
* **states**: ``state_fn(**values)`` is called for every combination of the controls' values when
  the figure is made, with the package's own functions, so the page only looks a state up and
  draws it: what the page draws is what the package computed. (A figure with too many states to
  list, chapter 07's explorer, names an in-page ``compute`` of live.js instead.)

Displayed, a figure is one ``text/html`` output (the spec as JSON, the script inlined): the same
HTML and the same script in the built book (no kernel), JupyterLab, Notebook, VS Code and Colab,
and moving a control needs no kernel. Shapes of view data: see the builders below.
"""

import html
import itertools
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = ["Control", "Figure", "View", "bars", "heatmap", "lines", "plot", "select", "slider",
           "steps", "table", "toggle"]

JS = Path(__file__).resolve().parents[1] / "static" / "live.js"
CONTROL_KINDS = ("range", "select", "toggle", "step")
VIEW_KINDS = ("heatmap", "bars", "plot", "table", "text", "lines")
MAX_STATES = 5000

CSS = """<style>
.mha-live{font-family:sans-serif;font-size:14px;margin:.6em 0;color:inherit;max-width:100%}
.mha-live .mha-note{border-left:4px solid #3b6ea5;padding:.4em .7em;margin:.3em 0 .6em;
 background:rgba(59,110,165,.08)}
.mha-live .mha-controls{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(20em,100%),1fr));
 gap:.4em 1.2em;margin:.4em 0}
.mha-live .mha-control{display:flex;align-items:center;gap:.5em;min-height:32px}
.mha-live .mha-control label{min-width:7.5em}
.mha-live .mha-step{grid-column:1/-1;flex-wrap:wrap}
.mha-live .mha-control input[type=range]{flex:1;min-width:6em;max-width:12em;min-height:28px}
.mha-live .mha-control input[type=checkbox]{width:22px;height:22px}
.mha-live .mha-control select{min-height:30px;max-width:12em;font-size:14px}
.mha-live .mha-control button{min-width:32px;min-height:32px;font-size:14px}
.mha-live .mha-control output{min-width:3.5em;font-variant-numeric:tabular-nums}
.mha-live :disabled{opacity:.5;cursor:not-allowed}
.mha-live .mha-readout{margin:.3em 0;min-height:1.4em;font-weight:600}
.mha-live canvas{display:block;max-width:100%;height:auto;margin:.3em 0}
.mha-live [hidden]{display:none!important}
.mha-live .mha-views{display:flex;flex-wrap:wrap;gap:.4em 1.5em;align-items:flex-start;
 overflow-x:auto}
.mha-live table{border-collapse:collapse;font-size:13px;margin:.4em 0}
.mha-live td,.mha-live th{padding:0 .6em;text-align:right}
.mha-live caption{text-align:left;color:inherit}
.mha-live .mha-error{color:#b00020}
html[data-theme=dark] .mha-live .mha-error{color:#ff8a80}
</style>"""


@dataclass
class Control:
    """One control: ``kind`` is ``range`` (a slider over ``values``), ``select``, ``toggle``
    (values False, True) or ``step`` (a slider with previous/next buttons); ``value`` is one of
    ``values``; ``labels`` (optional) are what the reader sees for each value."""

    name: str
    label: str
    kind: str
    values: list
    value: object
    labels: list = None
    disabled: bool = False

    def __post_init__(self):
        if self.kind not in CONTROL_KINDS:
            raise ValueError(f"kind must be one of {CONTROL_KINDS}; got {self.kind!r}")
        if not self.values:
            raise ValueError(f"control {self.name!r}: values must not be empty")
        if self.value not in self.values:
            raise ValueError(f"control {self.name!r}: value must be one of {self.values}; "
                             f"got {self.value!r}")
        if self.labels is not None and len(self.labels) != len(self.values):
            raise ValueError(f"control {self.name!r}: labels has {len(self.labels)} entries, "
                             f"values {len(self.values)}; expected one label per value")

    def spec(self):
        labels = self.labels or [_label(v) for v in self.values]
        return {"name": self.name, "label": self.label, "kind": self.kind,
                "values": list(self.values), "labels": [str(x) for x in labels],
                "value": self.values.index(self.value), "disabled": self.disabled}


def _label(v):
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def slider(name, label, values, value, labels=None):
    """A slider over the listed ``values`` (any numbers, e.g. powers of two)."""
    return Control(name, label, "range", list(values), value, labels)


def select(name, label, values, value, labels=None):
    return Control(name, label, "select", list(values), value, labels)


def toggle(name, label, value=False):
    return Control(name, label, "toggle", [False, True], bool(value), ["off", "on"])


def steps(name, label, count, value=0, labels=None):
    """Step buttons (and a slider) through ``count`` steps of a process: values 0..count-1."""
    return Control(name, label, "step", list(range(count)), value, labels)


@dataclass
class View:
    """One picture: ``kind`` is one of ``VIEW_KINDS``; ``label`` names it for screen readers
    until it is drawn (then the drawing describes itself)."""

    name: str
    kind: str
    label: str = ""

    def __post_init__(self):
        if self.kind not in VIEW_KINDS:
            raise ValueError(f"kind must be one of {VIEW_KINDS}; got {self.kind!r}")


# ----------------------------------------------------------------------------- view data

def _numbers(x, digits=5):
    """Nested lists of floats, NaN and infinities as None (JSON has neither), rounded to
    ``digits`` decimals (the tests compare the page with Python to 1e-3)."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, (list, tuple)):
        return [_numbers(v, digits) for v in x]
    x = float(x)
    return None if not math.isfinite(x) else round(x, digits)


def heatmap(grids, rows, cols, *, titles=None, caption="", vmin=0.0, vmax=1.0, scale="viridis",
            label="attention weight", numbers=False, marks=None, axes=None, digits=5):
    """Heatmaps on one colour scale: ``grids`` (H, Lq, Lk) (a tensor or nested lists; NaN drawn
    as a crossed grey cell), ``rows``/``cols`` token labels, ``titles`` one per heatmap,
    ``scale`` ``viridis`` or ``diverging``, ``numbers`` writes each value in its cell, ``marks``
    ``[(h, i, j), ...]`` outlines cells, ``axes`` replaces the "rows: queries" line; values are
    rounded to ``digits`` decimals."""
    grids = _numbers(grids, digits)
    if len(grids) and not isinstance(grids[0][0], list):
        grids = [grids]  # one (Lq, Lk) grid
    d = {"grids": grids, "rows": [str(r) for r in rows], "cols": [str(c) for c in cols],
         "titles": titles, "caption": caption, "vmin": vmin, "vmax": vmax, "scale": scale,
         "label": label, "numbers": numbers, "marks": [list(m) for m in marks or []]}
    if axes:
        d["axes"] = axes
    return d


def bars(values, labels, *, caption="", highlight=(), y_label="attention weight",
         x_label="key", y_min=0.0, y_max=1.0):
    """Bars ``values`` (n,) over ``labels``; ``highlight``: indices drawn in the accent colour."""
    return {"values": _numbers(values), "labels": [str(x) for x in labels], "caption": caption,
            "highlight": list(highlight), "y_label": y_label, "x_label": x_label,
            "y_min": y_min, "y_max": y_max}


def plot(x, series, *, caption="", x_label="", y_label="", y_min=None, y_max=None,
         x_log=False, marker=None):
    """Lines: ``series`` is ``{label: y values}``, one y per x; ``marker`` rings the point at
    that index on every line (the current setting); ``x_log`` spaces x by log2."""
    d = {"x": list(x), "series": [{"label": k, "y": _numbers(v)} for k, v in series.items()],
         "caption": caption, "x_label": x_label, "y_label": y_label, "x_log": x_log,
         "marker": marker}
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
          focus_from=None, caption="", label="attention weight"):
    """Data of a ``lines`` view: ``weights`` (H, Lq, Lk) or (Lq, Lk), rows summing to 1 (or 0);
    ``titles`` one per head (with H > 1 the view has its own head picker, starting at ``head``);
    ``focus`` ``("query", i)`` or ``("key", j)``: the token whose lines alone are drawn at first
    (None: every line); ``focus_from`` ``(control name, [query index or None per value])``: the
    focused query follows that control (e.g. a ``steps`` control through the queries), so the
    states that differ only in it share one copy of the weights."""
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
    return d


# ----------------------------------------------------------------------------- strips (ch05)
# Integer grids too wide for a heatmap (9 x 512): live.js's ``strips`` draws each panel's grid
# (one category per cell, e.g. a head) with one colour per category and marks a focused cell.
# Data: {"panels": [{"title", "grid" (rows x cols, or heads side by side), "focus"}], "heads",
# "d_head", "rows", "cols", "labels", "caption"}; see mha/live/ch05.py.
VIEW_KINDS = VIEW_KINDS + ("strips",)


# ----------------------------------------------------------------------------- the figure

@lru_cache(maxsize=1)
def script():
    """The front end, to inline in an output (a page's copies mount once: see live.js)."""
    return f"<script>{JS.read_text(encoding='utf-8')}</script>"


def _json_script(data, cls):
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json" class="{cls}">{text}</script>'


class _one_thread:
    """Tiny tensor ops on one CPU thread: a 5 x 8 matmul is slower on two busy threads."""

    def __enter__(self):
        import torch

        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self.threads)


@dataclass
class Figure:
    """A live figure: ``controls``, ``views`` and ``state_fn(**values) -> state`` where a state is
    ``{"views": {view name: data}, "readout": "one sentence: what the picture shows now"}`` and
    may add ``"state"`` (what the tests compare). ``note`` is HTML shown above the controls;
    ``alt`` describes the figure for readers who cannot see it."""

    name: str
    title: str
    controls: list
    views: list
    state_fn: object = None
    alt: str = ""
    note: str = ""
    compute: str = None  # an in-page compute of live.js, instead of listed states
    data: dict = None  # what ``compute`` reads
    states: dict = field(default=None, repr=False)

    def __post_init__(self):
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names):
            raise ValueError(f"figure {self.name!r}: control names must differ; got {names}")
        if self.compute is None and self.states is None:
            with _one_thread():
                self.states = self._all_states()

    def _all_states(self):
        if self.state_fn is None:
            raise TypeError(f"figure {self.name!r}: give state_fn or compute")
        grid = list(itertools.product(*(range(len(c.values)) for c in self.controls)))
        if len(grid) > MAX_STATES:
            raise ValueError(f"figure {self.name!r} has {len(grid)} states; at most "
                             f"{MAX_STATES} are listed (use an in-page compute)")
        states = {}
        for idx in grid:
            values = {c.name: c.values[i] for c, i in zip(self.controls, idx)}
            state = self.state_fn(**values)
            missing = {v.name for v in self.views} - set(state["views"])
            if missing:
                raise ValueError(f"figure {self.name!r}: the state for {values} lacks the "
                                 f"views {sorted(missing)}")
            states[",".join(map(str, idx))] = state
        return states

    def state(self, **values):
        """The listed state for these control values (the others at their start)."""
        start = {c.name: c.value for c in self.controls}
        unknown = set(values) - set(start)
        if unknown:
            raise TypeError(f"unknown controls {sorted(unknown)}; expected some of "
                            f"{sorted(start)}")
        start.update(values)
        key = ",".join(str(c.values.index(start[c.name])) for c in self.controls)
        return self.states[key]

    def spec(self):
        s = {"name": self.name, "title": self.title,
             "controls": [c.spec() for c in self.controls],
             "views": [{"name": v.name, "kind": v.kind, "label": v.label or self.alt}
                       for v in self.views]}
        if self.compute is not None:
            s.update(compute=self.compute, data=self.data)
            return s
        # every distinct view data once, in "pool"; a state names its views' data by index
        pool, seen, states = [], {}, {}
        for key, state in self.states.items():
            refs = {}
            for name, d in state["views"].items():
                text = json.dumps(d, sort_keys=True, allow_nan=False)
                if text not in seen:
                    seen[text] = len(pool)
                    pool.append(d)
                refs[name] = seen[text]
            states[key] = {**state, "views": refs}
        s.update(pool=pool, states=states)
        return s

    def html(self):
        """The figure as one HTML fragment: styles, spec, the front end."""
        note = f'<div class="mha-note">{self.note}</div>' if self.note else ""
        return (f'{CSS}<div class="mha-live" data-figure="{html.escape(self.name)}" '
                f'role="figure" aria-label="{html.escape(self.title)}">{note}'
                f'<div class="mha-controls" role="group" aria-label="controls: '
                f'{html.escape(self.title)}"></div>'
                f'<p class="mha-readout" aria-live="polite"></p><div class="mha-views"></div>'
                f'<div class="mha-error" role="alert"></div>'
                f'{_json_script(self.spec(), "mha-spec")}{script()}</div>')

    def _repr_html_(self):
        return self.html()

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html(), "text/plain": f"<live figure: {self.title}>"}

    def page(self):
        """A whole HTML page with only this figure (for tests and screenshots)."""
        return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta "
                f"name='viewport' content='width=device-width,initial-scale=1'><title>"
                f"{html.escape(self.title)}</title></head><body><main>{self.html()}</main>"
                f"</body></html>")


# ----------------------------------------------------------------------------- arrows view
# (chapter 11's rotary pairs; a self-contained addition: the builder and its view kind)

VIEW_KINDS = VIEW_KINDS + ("arrows",)
__all__ += ["arrows"]


def arrows(panels, labels, *, caption="", radius=1.0):
    """2-D arrows from the origin, one small panel each: ``panels`` is ``[{"title": str,
    "arrows": [[x, y], ...]}, ...]``, one arrow per entry of ``labels`` (the legend; the first
    arrow is drawn in the main colour, the second in the accent, the third faded and dashed);
    ``radius`` is the length the panels' circle stands for."""
    return {"panels": [{"title": str(p["title"]), "arrows": _numbers(p["arrows"])}
                       for p in panels],
            "labels": [str(x) for x in labels], "caption": caption, "radius": float(radius)}
