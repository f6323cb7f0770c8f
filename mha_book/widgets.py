"""The attention explorer's Jupyter controls (chapter 07), and the explorer's names in one place.

``explorer(...)`` builds ipywidgets controls around ``mha_book.explore.explore_once``: every change
of a control recomputes with Python (any d_model, any seed, a reader's own ``attention_fn``) and
hands the picture to the book's one front end, ``mha.live`` (``mha_book.figures.explorer``).
Displayed, an ``Explorer`` is that widget in Jupyter (and Colab), and in the built book the live
figure ``mha_book.figures.explorer.explorer_figure``, which recomputes in the page with no kernel.

The picture is a ``mha.live.picture.Picture``, an anywidget: the front end
reaches the page once per explorer, as the widget's ES module, and a change of a
control sends only the new figure (its markup and its spec: the weights as
JSON), which the front end redraws. Without anywidget (ipywidgets only: e.g. a
Colab runtime that lacks it, since the chapters' set-up cell installs the
package alone) the picture is an ``ipywidgets.Output`` instead, whose one output
is replaced by the whole figure, front end included, at every change: the same
picture, slower.

A saved notebook shows the explorer again with no kernel where the widget state
is saved with it (JupyterLab: Settings, Save Widget State Automatically, on in
the project's ``make lab``; the state holds the picture's module and its last
figure); otherwise JupyterLab says "Error displaying widget: model not found":
it does not fall back to the output's HTML, which only the built book shows.

Coupled knobs stay valid in the UI: num_heads offers only the divisors of d_model (up to 16),
num_kv_heads only the divisors of num_heads, and window is greyed out (off) for a
cross-attention source. ``explore_once`` still explains an impossible combination given to it
directly. ``window`` and ``sink`` (None = off; ``WINDOWS``, ``SINKS``) are the sliding window
and the sink logit of ``mha_book.explore``'s module docstring.

The computation's names (``explore_once``, ``build_layer``, ``embed_tokens``, the counts, ...) are
importable from here too, as chapter 07 uses them: ``from mha import widgets``.
"""

import contextlib

from mha.counts import count_flops, count_parameters
from mha.live.picture import markup, picture_class
from mha_book.explore import (
    DEFAULTS,
    EXAMPLE_SENTENCES,
    MASK_KINDS,
    MAX_HEADS,
    SINKS,
    SOURCES,
    WINDOWS,
    ExplorerResult,
    _divisors,
    build_layer,
    embed_tokens,
    explore_once,
    knob_labels,
    knob_options,
    tokenize,
    validate,
)
from mha_book.figures import explorer as live_explorer
from mha_book.figures.explorer import payload, render
from mha_book.figures.temperature import temperature_bars
from mha_book.sources import TRAINED_SOURCES

__all__ = ["DEFAULTS", "EXAMPLE_SENTENCES", "MASK_KINDS", "SINKS", "SOURCES", "WINDOWS",
           "Explorer", "ExplorerResult", "build_layer", "count_flops", "count_parameters",
           "embed_tokens", "explore_once", "explorer", "measure_latency", "payload", "render",
           "temperature_bars", "tokenize", "validate"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _display(widget, static_html, text):
    """Show ``widget`` in a live front end and ``static_html`` where no kernel runs.

    One output with both: Jupyter, JupyterLab, Colab and VS Code render the widget view first;
    the book (``nb_mime_priority_overrides`` in _config.yml) renders the HTML, which works
    without a kernel. Published by hand: ipywidgets 7 widgets have no ``_repr_mimebundle_``.
    """
    from IPython.display import display

    view = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    display({"text/plain": text, "text/html": static_html, WIDGET_VIEW: view}, raw=True)


def _output(view, html_text, text):
    """Replace the outputs of the ``Output`` widget ``view`` with one HTML output."""
    view.outputs = ({"output_type": "display_data", "metadata": {},
                     "data": {"text/html": html_text, "text/plain": text}},)


def _picture():
    """The explorer's picture: a ``Picture`` (anywidget), else an ``Output``."""
    import ipywidgets as w

    cls = picture_class()
    return w.Output() if cls is None else cls()


def _show(view, figure, message_html, text):
    """Draw ``figure`` in ``view``, or with no figure the message: a
    ``Picture`` gets the figure's markup and spec only, an ``Output`` the whole
    HTML (``text``: its plain-text form)."""
    if isinstance(view, picture_class() or ()):
        view.html = message_html if figure is None else markup(figure)
    else:
        _output(view, message_html if figure is None else figure.html(), text)


class Explorer:
    """The UI: ``controls`` (name -> widget), ``view`` (the heatmaps: a
    ``mha.live.picture.Picture``, or an ``Output`` without anywidget;
    ``drawn_html()`` says what it was given), ``counts`` (HTML table), ``note``
    (what the coupled knobs do).

    Every change of a control keeps the coupled knobs valid, calls
    ``update()``, which recomputes with ``explore_once`` and sends the weights
    to the front end (a ``Picture``: the figure's markup and spec only; the
    front end came once, with the widget); ``result`` is the latest
    ``ExplorerResult`` and ``redraws`` counts the updates. Displaying the object
    shows its widget (``.widget``) in Jupyter and a self-contained HTML
    explorer in the built book.
    """

    def __init__(self, attention_fn=None, **initial):
        import ipywidgets as w

        unknown = set(initial) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"explorer() got unknown knobs {sorted(unknown)}; "
                            f"expected some of {sorted(DEFAULTS)}")
        v = {**DEFAULTS, **initial}
        if v["num_kv_heads"] == DEFAULTS["num_kv_heads"] and "num_kv_heads" not in initial:
            v["num_kv_heads"] = v["num_heads"]
        d_model = v["d_model"]
        heads = self._head_options(d_model)
        v["num_heads"] = _nearest(heads, v["num_heads"])
        v["num_kv_heads"] = _nearest(_divisors(v["num_heads"]), v["num_kv_heads"])
        temps = live_explorer.temperature_grid(value=v["temperature"])  # checks it too
        window, sink = (knob_options(n, v[n]) for n in ("window", "sink"))  # these too
        cont = {"continuous_update": False, "style": {"description_width": "7.5em"},
                "layout": w.Layout(width="20em")}  # wide enough for the label, bar and readout
        self.controls = {
            "source": w.Dropdown(options=SOURCES, value=v["source"], description="source",
                                 style=cont["style"], layout=cont["layout"]),
            "d_model": w.IntSlider(d_model, min=4, max=256, step=2, description="d_model",
                                   **cont),
            "num_heads": w.SelectionSlider(options=heads, value=v["num_heads"],
                                           description="num_heads", **cont),
            "num_kv_heads": w.SelectionSlider(options=_divisors(v["num_heads"]),
                                              value=v["num_kv_heads"],
                                              description="num_kv_heads", **cont),
            "seq_len": w.IntSlider(v["seq_len"], min=2, max=24, description="seq_len", **cont),
            # the page's stops (even on a log scale, 0.1, 0.5, 1 and 10 among them)
            "temperature": w.SelectionSlider(options=list(zip(
                live_explorer.temperature_labels(temps), temps)), value=float(v["temperature"]),
                description="temperature", **cont),
            "mask_kind": w.Dropdown(options=MASK_KINDS, value=v["mask_kind"],
                                    description="mask", style=cont["style"],
                                    layout=cont["layout"]),
            # the knobs of today's models (chapter 14), off by default
            "window": w.Dropdown(options=list(zip(knob_labels("window", window), window)),
                                 value=v["window"], description="window", style=cont["style"],
                                 layout=cont["layout"]),
            "sink": w.Dropdown(options=list(zip(knob_labels("sink", sink), sink)),
                               value=v["sink"], description="sink", style=cont["style"],
                               layout=cont["layout"]),
            "seed": w.IntSlider(v["seed"], min=0, max=20, description="seed", **cont),
            "sentence": w.Dropdown(options=list(EXAMPLE_SENTENCES), value=v["sentence"],
                                   description="sentence", style=cont["style"],
                                   layout=cont["layout"]),
            # not a knob of the layer: which picture of its weights (live_explorer.VIEWS)
            "view": w.Dropdown(options=[(label, name) for name, label
                                        in live_explorer.VIEWS.items()],
                               value="heatmaps", description="view", style=cont["style"],
                               layout=cont["layout"]),
        }
        self.attention_fn = attention_fn
        self.view = _picture()
        self.counts = w.HTML()
        self.note = w.HTML(
            "<div style='font-size:0.85em;color:#444;max-width:44em'>The knobs keep each other "
            "valid: <b>num_heads</b> offers only the divisors of d_model (up to 16) and "
            "<b>num_kv_heads</b> only the divisors of num_heads. With a trained <b>source</b> "
            "only temperature, window, sink and seed (the input sample; for the Shakespeare "
            "model, the passage) apply. <b>window</b>: each query sees only its last "
            "w positions, itself included (causal, also on a trained layer that had no mask; a "
            "cross-attention source has none). <b>sink</b>: a logit s joins every row's softmax "
            "and is dropped, so rows sum to less than 1 (the title says how much went to the "
            "sink). <b>view</b> shows every head's heatmap or one head as lines (pick "
            "the head; focus, hover or tap a token to see only its lines).</div>")
        self.result, self.redraws, self._syncing = None, 0, False
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        names = list(self.controls)
        top = w.HBox([w.VBox([self.controls[n] for n in names[:6]]),
                      w.VBox([self.controls[n] for n in names[6:]])])
        self.widget = w.VBox([top, self.note, self.counts, self.view])
        self._enable()
        self.update()

    @staticmethod
    def _head_options(d_model):
        return [h for h in _divisors(d_model) if h <= MAX_HEADS]

    def config(self):
        """The layer's knobs (every control but ``view``; a greyed-out window is off)."""
        return {name: None if name == "window" and c.disabled else c.value
                for name, c in self.controls.items() if name != "view"}

    def _enable(self):
        source = self.controls["source"].value
        trained = source != "random layer"
        for name in ("d_model", "num_heads", "num_kv_heads", "seq_len", "mask_kind", "sentence"):
            self.controls[name].disabled = trained
        # cross-attention: a query has no position among the keys, so no window
        self.controls["window"].disabled = trained and TRAINED_SOURCES[source][2] == "cross"

    def _sync(self, name, old):
        """Keep the coupled knobs valid after ``name`` changed from ``old`` (no redraw while
        doing it). Without grouping (num_kv_heads = num_heads) the two move
        together. A control's new options and value reach the front end in one
        message."""
        c = self.controls
        self._syncing = True
        try:
            with contextlib.ExitStack() as held:
                for control in c.values():
                    held.enter_context(control.hold_sync())
                self._sync_held(name, old)
        finally:
            self._syncing = False

    def _sync_held(self, name, old):
        c = self.controls
        old_heads = old if name == "num_heads" else c["num_heads"].value
        if name == "d_model":
            heads = self._head_options(c["d_model"].value)
            value = _nearest(heads, c["num_heads"].value)
            c["num_heads"].options = heads
            c["num_heads"].value = value
        if name in ("d_model", "num_heads"):
            kv = _divisors(c["num_heads"].value)
            ungrouped = c["num_kv_heads"].value == old_heads
            value = (c["num_heads"].value if ungrouped
                     else _nearest(kv, c["num_kv_heads"].value))
            c["num_kv_heads"].options = kv
            c["num_kv_heads"].value = value
        if name == "source":
            self._enable()
            if old == "random layer" and c["source"].value != "random layer":
                # trained heads are first shown as trained: T = 1
                c["temperature"].value = 1.0

    def _changed(self, change):
        if self._syncing:
            return
        owner = next(n for n, c in self.controls.items() if c is change["owner"])
        self._sync(owner, change["old"])
        self.update()

    def update(self, change=None):
        """Recompute and redraw (the observer of every control)."""
        self.result = explore_once(**self.config(), attention_fn=self.attention_fn)
        self.redraws += 1
        # the picture first: its message is the larger, and what the reader is looking at
        if not self.result.ok:
            message = self.result.message
            _show(self.view, None, live_explorer.message_html(message), message)
        else:
            view = self.controls["view"].value
            _show(self.view, live_explorer.view_figure(self.result, view), None,
                  f"<attention weights: {live_explorer.VIEWS[view]}>")
        self.counts.value = self.result.counts_html()

    def drawn_html(self):
        """What ``view`` was last given to draw: the figure's HTML with its spec
        (a ``Picture``'s ``html``; an ``Output``'s one output) or a message."""
        if isinstance(self.view, picture_class() or ()):
            return self.view.html
        (out,) = self.view.outputs
        return out["data"]["text/html"]

    def static_html(self):
        """The explorer for a page with no kernel (the built book): ``mha_book.figures.explorer``."""
        if self.attention_fn is not None:
            if not self.result.ok:
                return live_explorer.message_html(self.result.message)
            return live_explorer.frozen_figure(
                {k: v for k, v in self.config().items() if k != "source"}, self.result,
                "this explorer runs an attention function written in Python, which the page "
                "cannot run.").html()
        return live_explorer.explorer_figure({**DEFAULTS, **self.config()}).html()

    def _ipython_display_(self):
        _display(self.widget, self.static_html(), "<the attention explorer>")


def _nearest(options, value):
    """``value`` if it is one of ``options``, else the closest of them (the smaller on a tie)."""
    return value if value in options else min(options, key=lambda o: (abs(o - value), o))


def explorer(attention_fn=None, **initial):
    """Build the attention explorer; ``initial`` sets starting knobs (see ``DEFAULTS``).

    ``attention_fn(query, key, value, mask) -> (output, weights)``, if given, replaces
    ``mha.scaled_dot_product_attention`` (see the module docstring for shapes).
    ``window`` (None = off, or w >= 1 positions: a causal sliding window) and ``sink`` (None =
    off, or a logit s that joins every row's softmax and is dropped) start off; ``WINDOWS`` and
    ``SINKS`` are their choices, a value of your own joins them, and one they cannot take is a
    ``ValueError`` naming the knob (``explore_once`` for their exact arithmetic).
    """
    return Explorer(attention_fn=attention_fn, **initial)


def measure_latency(repeats=20, *, change="seed"):
    """Median seconds of one redraw of the explorer in Jupyter, Python side (recompute with the
    package and build what the front end draws), over ``repeats`` changes of one control,
    starting from 8 heads over 12 tokens (d_model 64).

    ``change``: any control: ``"num_heads"`` alternates 8 and 4 heads, ``"seq_len"`` 12 and 8
    tokens, ``"sentence"`` two sentences, ``"source"`` the random layer and a trained layer,
    ``"d_model"`` 64 and 32, and the others step through their values.
    """
    import statistics
    import time

    values = {"seed": list(range(1, 20)) + [0], "temperature": [0.5, 1.0],
              "mask_kind": ["causal", "padding", "none"], "d_model": [32, 64],
              "window": [4, None], "sink": [2.0, None],
              "num_heads": [4, 8], "num_kv_heads": [2, 8], "seq_len": [8, 12],
              "sentence": ["animal and street", "counting"],
              "source": ["letters model: layer 1", "random layer"]}
    if change not in values:
        raise ValueError(f"change must be one of {sorted(values)}; got {change!r}")
    ex = Explorer(sentence="counting")
    times = []
    for i in range(repeats):
        value = values[change][i % len(values[change])]
        start = time.perf_counter()
        ex.controls[change].value = value
        times.append(time.perf_counter() - start)
    if ex.redraws != repeats + 1 or not ex.result.ok:
        raise RuntimeError("the explorer did not redraw once per change")
    return statistics.median(times)
