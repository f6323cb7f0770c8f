"""A live figure as data: controls, views and every state the controls can reach.

A figure is declared in Python and drawn by one front end (``mha.live.bundles``: the ES modules of
``mha/static/src/`` bundled into ``mha/static/live.js``):

* **controls** (``slider``, ``select``, ``toggle``, ``steps``): each offers a list of values and
  starts at one of them; ``textbox``, the reader's own text, needs an in-page ``compute``;
* **views** (``View(name, kind)``, a kind of ``mha.live.views.VIEW_KINDS``): the pictures, whose
  data each state gives (build it with ``heatmap``, ``bars``, ``plot``, ``table``, ``lines``: one
  head as lines between its query and key tokens, ``arrows``; see ``mha.live.views``);
* **states**: ``state_fn(**values)`` is called for every combination of the controls' values when
  the figure is made, with the package's own functions, so the page only looks a state up and
  draws it: what the page draws is what the package computed. (A figure with too many states to
  list, chapter 07's explorer, names an in-page ``compute`` instead, which a package's own
  bundle registers: ``mha.live.bundles.register``; the book's is ``mha_book/static/``.)

Displayed, a figure is one ``text/html`` output (the spec as JSON, the script inlined): the same
HTML and the same script in the built book (no kernel), JupyterLab, Notebook, VS Code and Colab,
and moving a control needs no kernel. Shapes of view data: see ``mha.live.views``.
"""

import html
import itertools
import json
from dataclasses import dataclass, field

from .._threads import one_thread
from . import bundles
from .style import CSS
from .views import VIEW_KINDS, arrows, bars, heatmap, lines, plot, table

# the view builders (mha.live.views) are re-exported: a chapter's figure imports all it needs here
__all__ = ["Control", "Figure", "View", "arrows", "bars", "heatmap", "lines", "plot", "select",
           "slider", "steps", "table", "textbox", "toggle"]

CONTROL_KINDS = ("range", "select", "toggle", "step", "text")
MAX_STATES = 5000

@dataclass
class Control:
    """One control: ``kind`` is ``range`` (a slider over ``values``), ``select``, ``toggle``
    (values False, True), ``step`` (a slider with previous/next buttons) or ``text`` (a text
    box: ``value`` is its starting text, at most ``max_length`` characters, ``values`` empty;
    only with an in-page compute); otherwise ``value`` is one of ``values``; ``labels``
    (optional) are what the reader sees for each value. ``group`` (optional) names the tab
    the control sits behind when a narrow figure splits its bar into pages (a phone:
    ``mha/static/src/pages.js``); without it the controls are packed in order."""

    name: str
    label: str
    kind: str
    values: list
    value: object
    labels: list = None
    disabled: bool = False
    max_length: int = None  # a text box's
    group: str = None

    def __post_init__(self):
        if self.kind not in CONTROL_KINDS:
            raise ValueError(f"kind must be one of {CONTROL_KINDS}; got {self.kind!r}")
        if self.group is not None and (not isinstance(self.group, str) or not self.group):
            raise ValueError(f"control {self.name!r}: group must be a non-empty str or None; "
                             f"got {self.group!r}")
        if self.kind == "text":
            self._check_text()
            return
        if not self.values:
            raise ValueError(f"control {self.name!r}: values must not be empty")
        if self.value not in self.values:
            raise ValueError(f"control {self.name!r}: value must be one of {self.values}; "
                             f"got {self.value!r}")
        if self.labels is not None and len(self.labels) != len(self.values):
            raise ValueError(f"control {self.name!r}: labels has {len(self.labels)} entries, "
                             f"values {len(self.values)}; expected one label per value")

    def _check_text(self):
        n = self.max_length
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"control {self.name!r}: max_length must be a positive int; "
                             f"got {n!r}")
        if not isinstance(self.value, str):
            raise TypeError(f"control {self.name!r}: a text box's value must be a str; got "
                            f"{type(self.value).__name__}")
        if len(self.value) > n:
            raise ValueError(f"control {self.name!r}: value has {len(self.value)} characters; "
                             f"max_length is {n}")
        if self.values:
            raise ValueError(f"control {self.name!r}: a text box lists no values")

    def spec(self):
        group = {"group": self.group} if self.group else {}
        if self.kind == "text":
            return {"name": self.name, "label": self.label, "kind": "text", "values": [],
                    "labels": [], "value": self.value, "max_length": self.max_length,
                    "disabled": self.disabled, **group}
        labels = self.labels or [_label(v) for v in self.values]
        return {"name": self.name, "label": self.label, "kind": self.kind,
                "values": list(self.values), "labels": [str(x) for x in labels],
                "value": self.values.index(self.value), "disabled": self.disabled, **group}


def _label(v):
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def slider(name, label, values, value, labels=None, group=None):
    """A slider over the listed ``values`` (any numbers, e.g. powers of two)."""
    return Control(name, label, "range", list(values), value, labels, group=group)


def select(name, label, values, value, labels=None, group=None):
    return Control(name, label, "select", list(values), value, labels, group=group)


def toggle(name, label, value=False, group=None):
    return Control(name, label, "toggle", [False, True], bool(value), ["off", "on"],
                   group=group)


def textbox(name, label, value, max_length, group=None):
    """A text box (a labelled textarea) holding at most ``max_length`` characters, starting
    at ``value``; the figure's in-page compute reads the text as the reader types."""
    return Control(name, label, "text", [], value, max_length=max_length, group=group)


def steps(name, label, count, value=0, labels=None, group=None):
    """Step buttons (and a slider) through ``count`` steps of a process: values 0..count-1."""
    return Control(name, label, "step", list(range(count)), value, labels, group=group)


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


# ----------------------------------------------------------------------------- the figure

def script(*extensions):
    """The front end, to inline in an output (a page's copies mount once: see main.js): the
    engine's bundle after the ``extensions``' (``mha.live.bundles.script``)."""
    return bundles.script(*extensions)


def _json_script(data, cls):
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json" class="{cls}">{text}</script>'


@dataclass
class Figure:
    """A live figure: ``controls``, ``views`` and ``state_fn(**values) -> state`` where a state is
    ``{"views": {view name: data}, "readout": "one sentence: what the picture shows now"}`` and
    may add ``"state"`` (what the tests compare) and ``"alert"`` (a sentence shown under the
    bar: what the controls ask for cannot be drawn). ``note`` is HTML shown above the controls;
    ``alt`` describes the figure for readers who cannot see it."""

    name: str
    title: str
    controls: list
    views: list
    state_fn: object = None
    alt: str = ""
    note: str = ""
    compute: str = None  # an in-page compute (a registered bundle's), instead of listed states
    data: dict = None  # what ``compute`` reads
    extensions: tuple = ()  # bundles the figure needs besides the engine and its compute's
    states: dict = field(default=None, repr=False)

    def __post_init__(self):
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names):
            raise ValueError(f"figure {self.name!r}: control names must differ; got {names}")
        self.bundles()  # a compute no registered bundle provides: said now
        if self.compute is None and self.states is None:
            with one_thread():
                self.states = self._all_states()

    def _all_states(self):
        if self.state_fn is None:
            raise TypeError(f"figure {self.name!r}: give state_fn or compute")
        texts = [c.name for c in self.controls if c.kind == "text"]
        if texts:
            raise ValueError(f"figure {self.name!r}: the text box {texts[0]!r} has no list of "
                             f"values; a figure with one needs an in-page compute")
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

    def bundles(self):
        """The names of the bundles (``mha.live.bundles``) the figure's HTML carries before the
        engine's: those it names in ``extensions``, and the one that registers its compute."""
        names = [bundles.bundle(n).name for n in self.extensions]
        if self.compute is not None:
            names.append(bundles.providing(self.compute))
        return tuple(dict.fromkeys(names))

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
                f'{self._bar()}<div class="mha-views"></div>'
                f'<div class="mha-error" role="alert"></div>'
                f'{_json_script(self.spec(), "mha-spec")}{script(*self.bundles())}</div>')

    def _bar(self):
        """The controls, in a bar that stays in view (CSS position: sticky, below the book's
        sticky header: --mha-top, set by sticky.js) while the reader scrolls to the view a
        control changes; then the readout, which scrolls with the views (in the bar, a readout
        of 5 lines made it a third of a phone's screen). A state's ``alert`` (a sentence: what
        the controls ask for cannot be drawn, e.g. a character the model cannot read) sticks
        right under the bar, where the reader is looking wherever the figure is scrolled (in
        the bar it made a phone's bar scroll inside itself)."""
        controls = (f'<div class="mha-controls" role="group" aria-label="controls: '
                    f'{html.escape(self.title)}"></div>')
        if self.controls:  # and the alert under it: what the controls ask that cannot be drawn
            controls = (f'<div class="mha-bar">{controls}</div>'
                        f'<p class="mha-alert" role="alert"></p>')
        return f'{controls}<p class="mha-readout" aria-live="polite"></p>'

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
