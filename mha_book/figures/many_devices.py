"""Chapter 16's live figure: one attention layer split over W devices, who holds what and what
each rank sends (every number from ``mha.distributed.layout``).

``device_layout()``: the reader picks the query heads H, the key/value heads Hkv, the devices W
(ranks 0 .. W - 1), the sequence length L and the scheme (``layout.SCHEMES``): tensor
parallelism (rank r holds H/W query heads and every position), the ring (every head, one
contiguous block of positions), the ring with zigzag blocks (chunks r and 2W - 1 - r of 2W) or
DeepSpeed-Ulysses (blocks of positions in and out, heads during the attention). Views:

* ``layout`` (a heatmap): who holds what while the layer computes attention
  (``layout.rank_holds``). Rows: the query heads, then the key/value heads, in blocks of heads
  that one rank holds together (at most 8 rows each); where a key/value head is copied on
  several ranks (fewer key/value heads than devices, under tensor parallelism and Ulysses) one
  row per copy. Columns: the sequence in 2W chunks of L/(2W) positions (zigzag's chunks, the
  unit of ``layout.causal_blocks``; a contiguous block is two of them). Each cell is coloured by
  the rank that holds it and says its number (not on 2 devices: the page would write rank 1 as
  "1.00"); the colour bar has one tick per rank. Ulysses has a second grid first: q, k and v by
  position, as the layer's input comes in and its output goes out
  (``layout.positions_of_rank``), before an all-to-all regroups them by head.
* ``ranks`` (a table): one row per rank, its query heads, key/value heads and positions as
  ranges ("0-1023, 7168-8191", with non-breaking hyphens; Ulysses adds the block it holds in and
  out); the caption says how many ranks hold each key/value head where it is copied.
* ``bytes`` (a line plot): the bytes one rank sends in one forward pass of the layer, for the
  four schemes against L, for the chosen W (``layout.sent_bytes`` with d_head 128, bfloat16,
  batch 1; the ring and zigzag as one line where they send the same), both axes on a log scale,
  in KiB, MiB or GiB: the unit in which the middle of the numbers (on the log scale) lies
  between 1 and 1,024; ringed at the chosen L. A scheme the heads do not allow has no points
  ("tensor (impossible)" in the legend); one device sends nothing (flat lines at 0 bytes).
Where the chosen scheme cannot split the layer (Hkv > H, Hkv not dividing H, W not dividing the
heads under tensor parallelism or Ulysses) every view stays in place: the picture's cells are
crossed out and the table's empty, both captioned with why ("Tensor parallelism on 8 devices is
impossible: 12 query heads cannot be split over 8 devices (8 does not divide 12)"), and the plot
and the readout still give the other schemes' bytes (no scheme at all: an empty plot).

The readout gives the chosen numbers: each scheme's bytes, which sends least and, for the ring
and zigzag, the causal work of the busiest rank against the average (``layout.causal_blocks``).
``layout_state`` is the figure's data for one setting of the controls; the figure lists it for
every setting (``mha.live.figure``).
"""

import math
from functools import lru_cache

from mha.distributed import layout
from mha.live.figure import Figure, View, heatmap, plot, select, slider, table

from ._registry import live_figure

__all__ = ["DTYPE_BYTES", "D_HEAD", "NB_HYPHEN", "NONE", "NUM_HEADS", "NUM_KV_HEADS",
           "SCHEME_NAMES", "SEQ_LENS", "WORLDS", "bytes_plot", "chunks", "device_layout",
           "layout_state", "no_picture", "picture", "picture_rows", "problem", "rank_rows",
           "readout", "sent", "size_text", "spans", "why_text"]

D_HEAD = 128
DTYPE_BYTES = 2  # bfloat16
NUM_HEADS = (12, 32, 128)  # 128: Llama 3 405B (8-way tensor parallel); 12: not over 8 devices
NUM_KV_HEADS = (1, 8, 32)  # MQA, Llama 3's 8, MHA at H = 32
WORLDS = (1, 2, 4, 8)
SEQ_LENS = (8192, 32768, 131072)  # Llama 3: trained at 8K, then extended to 128K
MAX_ROWS = 8  # rows of query heads, and of key/value heads, at most
SCHEME_NAMES = {"tensor": "tensor", "ring": "ring", "zigzag": "zigzag", "ulysses": "Ulysses"}
SCHEME_LABELS = ("tensor parallel", "ring", "zigzag ring", "Ulysses")
TITLES = {"tensor": "Tensor parallelism", "ring": "The ring", "zigzag": "The zigzag ring",
          "ulysses": "Ulysses"}
#: what a rank holds, said in the picture's caption (filled with per = H/W, last = 2W - 1)
HOLDS = {"tensor": "each rank holds {per} query heads (W_q, W_k, W_v by columns, W_o by rows) "
                   "at every position; one all-reduce sums the outputs",
         "ring": "each rank holds every head at one block of positions; the key/value blocks "
                 "travel round the ring, merged by the online softmax",
         "zigzag": "rank r holds chunks r and {last} - r of every head; the key/value blocks "
                   "travel round the ring",
         "ulysses": "each rank takes in and gives out one block of positions; an all-to-all "
                    "gives it every position of its {per} heads for the attention"}
HEAD_SPLIT = ("tensor", "ulysses")  # the schemes that split the heads over the devices
MODELS = {(128, 8): "Llama 3 405B", (32, 8): "Llama 3 8B", (32, 32): "Llama 2 7B"}
UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")
#: the table's ranges are written with a non-breaking hyphen (U+2011): a phone's narrow column
#: broke "6144-7167" after its hyphen; it may break after a range's comma
NB_HYPHEN = "\u2011"
NONE = "\u2014"  # an em dash: what a rank holds where the scheme cannot split the layer


# ----------------------------------------------------------------------------- what is possible

def _heads_problem(num_heads, num_kv_heads):
    if num_kv_heads > num_heads:
        return (f"{num_heads} query heads cannot share {num_kv_heads} key/value heads: each "
                f"key/value head serves one query head or more, so there are at most "
                f"{num_heads}")
    if num_heads % num_kv_heads:
        return (f"{num_heads} query heads cannot be shared equally by {num_kv_heads} key/value "
                f"heads ({num_kv_heads} does not divide {num_heads})")
    return None


def problem(scheme, num_heads, num_kv_heads, world, seq_len):
    """Why ``scheme`` cannot split this layer (a sentence without its full stop), or None when
    it can (exactly when ``layout.sent_bytes`` does not raise)."""
    said = _heads_problem(num_heads, num_kv_heads)
    if said:
        return said
    if scheme in HEAD_SPLIT and num_heads % world:
        return (f"{num_heads} query heads cannot be split over {world} devices ({world} does "
                f"not divide {num_heads})")
    if scheme in HEAD_SPLIT and num_kv_heads % world and world % num_kv_heads:
        return (f"{num_kv_heads} key/value heads can neither be split over {world} devices "
                f"nor copied equally on them")
    parts = 2 * world if scheme == "zigzag" else world
    if seq_len % parts:
        return f"{seq_len:,} positions cannot be cut into {parts} equal blocks"
    return None


@lru_cache(maxsize=None)
def sent(scheme, num_heads, num_kv_heads, world, seq_len):
    """Bytes one rank sends per layer (``layout.sent_bytes``: d_head 128, bfloat16, batch 1), or
    None where the scheme cannot split the layer."""
    if problem(scheme, num_heads, num_kv_heads, world, seq_len):
        return None
    return layout.sent_bytes(scheme, world=world, seq_len=seq_len, d_model=num_heads * D_HEAD,
                             num_heads=num_heads, num_kv_heads=num_kv_heads, batch=1,
                             dtype_bytes=DTYPE_BYTES)


def why_text(scheme, num_heads, num_kv_heads, world, seq_len):
    """What the picture's and the table's captions say where ``scheme`` cannot split the layer
    (None where it can)."""
    why = problem(scheme, num_heads, num_kv_heads, world, seq_len)
    if why is None:
        return None
    if _heads_problem(num_heads, num_kv_heads):
        return f"No scheme can split this layer: {why}"
    return f"{TITLES[scheme]} on {world} device{'s' if world > 1 else ''} is impossible: {why}"


# ----------------------------------------------------------------------------- words and numbers

def _runs(items, lo, hi):
    """The runs of consecutive integers in sorted ``items[lo..hi]``: [(first, last), ...]
    (halving: a block of 131,072 positions is one test, not 131,072)."""
    if items[hi] - items[lo] == hi - lo:
        return [(items[lo], items[hi])]
    mid = (lo + hi) // 2
    left, right = _runs(items, lo, mid), _runs(items, mid + 1, hi)
    if left[-1][1] + 1 == right[0][0]:
        return left[:-1] + [(left[-1][0], right[0][1])] + right[1:]
    return left + right


def spans(items):
    """Ascending integers as ranges: [0, 1, 2, 3, 12, 13] -> "0-3, 12-13"; [5] -> "5" (what
    ``layout.rank_holds`` returns is ascending)."""
    items = list(items)
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in _runs(items, 0, len(items) - 1))


def _unit(n):
    """The power of 1024 at which ``n`` bytes is a number from 1 to 1,024 (0: bytes)."""
    k = 0
    while k < len(UNITS) - 1 and n >= 1024 ** (k + 1):
        k += 1
    return k


def size_text(n):
    """Bytes as the page writes them: "448 MiB", "59.5 MiB", "1.75 GiB", "0 bytes"."""
    k = _unit(n)
    v = n / 1024 ** k
    return f"{v:,.0f} {UNITS[k]}" if v >= 100 else f"{v:.3g} {UNITS[k]}"


def _copies(scheme, num_kv_heads, world):
    """Ranks that hold each key/value head: world / Hkv where the heads are split and there are
    fewer key/value heads than devices, else 1."""
    return world // num_kv_heads if scheme in HEAD_SPLIT and num_kv_heads < world else 1


# ----------------------------------------------------------------------------- the picture

def _group(count, world):
    """Heads in a row of the picture: the fewest that keep at most ``MAX_ROWS`` rows and never
    put two ranks' heads in one row (they divide the heads a rank holds, when W divides them)."""
    per = count // world if count % world == 0 else count
    return next(g for g in range(1, count + 1)
                if count % g == 0 and count // g <= MAX_ROWS and per % g == 0)


def _name(kind, heads):
    return f"{kind} {spans(heads)}"


def picture_rows(scheme, num_heads, num_kv_heads, world):
    """The picture's rows: ``[(label, key of rank_holds, heads, copy)]``, the query heads' blocks,
    then the key/value heads' blocks, or one row per copy of each (copy: 0, 1, ... or None)."""
    g = _group(num_heads, world)
    rows = [(_name("q", range(i, i + g)), "query_heads", list(range(i, i + g)), None)
            for i in range(0, num_heads, g)]
    copies = _copies(scheme, num_kv_heads, world)
    if copies > 1:
        return rows + [(f"kv {k}, copy {c + 1}", "kv_heads", [k], c)
                       for k in range(num_kv_heads) for c in range(copies)]
    g = _group(num_kv_heads, world)
    return rows + [(_name("kv", range(i, i + g)), "kv_heads", list(range(i, i + g)), None)
                   for i in range(0, num_kv_heads, g)]


def _holders(holds, key, heads, chunk):
    """The ranks that hold all of ``heads`` (under ``key``) at position ``chunk``."""
    return [r for r, h in enumerate(holds) if set(heads) <= set(h[key]) and chunk in h["positions"]]


def chunks(world):
    """The picture's columns: the sequence in 2W chunks (zigzag's)."""
    return 2 * world


def _grid(holds, rows, copied=True):
    """(rows, 2W): the rank that holds each row's heads in each chunk (a copy: the copy-th of
    the ranks that hold it; ``copied`` False: the rank, where only one holds it)."""
    return [[_holders(holds, key, heads, c)[(copy or 0) if copied else 0]
             for c in range(2 * len(holds))] for _, key, heads, copy in rows]


def _holdings(scheme, num_heads, num_kv_heads, world):
    # positions counted in chunks: every scheme's blocks are L/W or L/(2W) positions, so rank r
    # holds chunk c of L/(2W) positions exactly when it holds position c of a 2W-long sequence
    return [layout.rank_holds(r, world, scheme, num_heads=num_heads, num_kv_heads=num_kv_heads,
                              seq_len=chunks(world)) for r in range(world)]


@lru_cache(maxsize=None)
def picture(scheme, num_heads, num_kv_heads, world):
    """The heatmap's data: the rank that holds each (block of heads, chunk) during attention;
    Ulysses first as q, k, v come in and go out (by position: the ring's contiguous blocks)."""
    rows = picture_rows(scheme, num_heads, num_kv_heads, world)
    grids = [_grid(_holdings(scheme, num_heads, num_kv_heads, world), rows)]
    titles = None
    if scheme == "ulysses":
        grids.insert(0, _grid(_holdings("ring", num_heads, num_kv_heads, world), rows, False))
        titles = ["in and out: by position", "attention: by head, after the all-to-all"]
    copies = _copies(scheme, num_kv_heads, world)
    copied = (f"; each key/value head copied on {copies} ranks (fewer than the devices)"
              if copies > 1 else "")
    d = heatmap(grids, [r[0] for r in rows], list(range(chunks(world))), titles=titles,
                vmin=0, vmax=max(world - 1, 1), numbers=world != 2, label="rank",
                ticks=list(range(world)),  # the colour bar: one tick per rank, its number
                caption=f"{TITLES[scheme]} on {world} device{'s' if world > 1 else ''}: "
                        + HOLDS[scheme].format(per=num_heads // world, last=2 * world - 1)
                        + copied,
                axes=f"rows: query (q), key/value (kv) heads; columns: chunks of L/{chunks(world)}")
    d.update(grids=grids, ticks=list(range(world)))  # ranks as ints, 3 not 3.0: lighter
    # on 2 devices no numbers: the page writes a grid of 0s and 1s as weights ("1.00"); the
    # colour bar's two ranks, 0 and 1, are its darkest and lightest colours
    return d


def no_picture(message, num_heads, num_kv_heads, world):
    """The picture where nothing can be drawn: the rows of the heads (no copies), every cell
    crossed out (about as tall as the picture it replaces, so that the views below it stay
    where they were), the caption says why."""
    rows = [_name(kind, range(i, i + g)) for kind, count in (("q", num_heads),
                                                             ("kv", num_kv_heads))
            for g in [_group(count, world)] for i in range(0, count, g)]
    n = chunks(world)
    d = heatmap([[float("nan")] * n] * len(rows), rows, list(range(n)), vmin=0,
                vmax=max(world - 1, 1), label="rank", ticks=list(range(world)), caption=message,
                axes="crossed out: no rank can hold them")
    d["ticks"] = list(range(world))
    return d


# ----------------------------------------------------------------------------- the table

def rank_rows(scheme, num_heads, num_kv_heads, world, seq_len):
    """One row per rank: its number, query heads, key/value heads and positions as ranges
    (``spans``, with ``NB_HYPHEN``); Ulysses adds the block it holds in and out."""
    rows = []
    for r in range(world):
        h = layout.rank_holds(r, world, scheme, num_heads=num_heads,
                              num_kv_heads=num_kv_heads, seq_len=seq_len)
        row = [spans(h["query_heads"]), spans(h["kv_heads"]), spans(h["positions"])]
        if scheme == "ulysses":
            row.append(spans(layout.positions_of_rank(r, world, seq_len)))
        rows.append([str(r)] + [x.replace("-", NB_HYPHEN) for x in row])
    return rows


def ranks_table(scheme, num_heads, num_kv_heads, world, seq_len):
    columns = ["rank", "query heads", "kv heads", "positions"]
    if scheme == "ulysses":
        columns = ["rank", "query heads", "kv heads", "attention", "in, out"]
    message = why_text(scheme, num_heads, num_kv_heads, world, seq_len)
    if message:  # every rank holds nothing: the caption says why
        return table(columns, [[str(r)] + [NONE] * (len(columns) - 1) for r in range(world)],
                     caption=message)
    copies = _copies(scheme, num_kv_heads, world)
    copied = f"; each kv head on {copies} ranks" if copies > 1 else ""
    return table(columns, rank_rows(scheme, num_heads, num_kv_heads, world, seq_len),
                 caption=f"What each rank holds, L = {seq_len:,}{copied}")


# ----------------------------------------------------------------------------- the plot

def _series(curves, k):
    """The plot's lines, in units of 1024 ** k: one a scheme, the ring and zigzag as one line
    where they send the same (their key/value blocks are as large); a scheme the heads do not
    allow keeps its place and colour, with no points ("tensor (impossible)")."""
    names = {s: SCHEME_NAMES[s] for s in curves}
    if curves["ring"] == curves["zigzag"]:
        names = {"tensor": "tensor", "ring": "ring and zigzag", "ulysses": "Ulysses"}
    return {names[s] + ("" if curves[s][0] is not None else " (impossible)"):
            [float("nan") if v is None else v / 1024 ** k for v in curves[s]] for s in names}


@lru_cache(maxsize=None)
def bytes_plot(num_heads, num_kv_heads, world, seq_len):
    """Each scheme's bytes per rank against L, log-log, in one unit; None when no scheme can
    split the layer."""
    curves = {s: [sent(s, num_heads, num_kv_heads, world, n) for n in SEQ_LENS]
              for s in layout.SCHEMES}
    known = [v for ys in curves.values() for v in ys if v is not None]
    if not known:  # no points: a linear axis (a log axis has no range without points)
        return plot(SEQ_LENS, _series(curves, 0), x_log=True, y_min=0, y_max=1,
                    x_label="sequence length L, log scale", y_label="bytes sent per rank",
                    caption="No scheme can split this layer: no bytes to send")
    # one unit for the plot: the one in which the middle of its numbers (on the log scale) is 1
    # to 1,024, the unit of the readout's numbers (3.5 to 7,168 MiB, not 1/2,048 to 7 GiB)
    k = _unit(math.sqrt(min(known) * max(known)))
    marker = SEQ_LENS.index(seq_len)
    if world == 1:  # nothing sent: a flat line at 0 on a linear axis
        return plot(SEQ_LENS, _series(curves, 0), x_log=True, y_min=0, y_max=1, marker=marker,
                    x_label="sequence length L, log scale", y_label="bytes sent per rank",
                    caption="One device sends nothing, whatever the scheme")
    d = plot(SEQ_LENS, _series(curves, k), x_log=True, marker=marker,
             x_label="sequence length L, log scale",
             y_label=f"{UNITS[k]} sent per rank, log scale",
             caption=f"Bytes one rank sends per layer on {world} devices (d_head {D_HEAD}, "
                     f"bfloat16, batch 1)")
    d["y_log"] = True  # both axes log2-spaced: the front end's log-log plot
    return d


# ----------------------------------------------------------------------------- the readout

def _what(num_heads, num_kv_heads, world, seq_len):
    """The setting in words: "8 devices, 128 query and 8 key/value heads (Llama 3 405B),
    L = 8,192"."""
    model = MODELS.get((num_heads, num_kv_heads))
    kv = f"{num_kv_heads} key/value head{'s' if num_kv_heads > 1 else ''}"
    return (f"{world} device{'s' if world > 1 else ''}, {num_heads} query and {kv}"
            f"{f' ({model})' if model else ''}, L = {seq_len:,}")


def _bytes_sentence(num_heads, num_kv_heads, world, seq_len):
    sizes = {s: sent(s, num_heads, num_kv_heads, world, seq_len) for s in layout.SCHEMES}
    each = ", ".join(f"{SCHEME_NAMES[s]} " + ("impossible" if n is None else size_text(n))
                     for s, n in sizes.items())
    least = min(n for n in sizes.values() if n is not None)
    who = " and ".join(SCHEME_NAMES[s] for s, n in sizes.items() if n == least)
    return f"per layer each rank sends {each}; least: {who}."


def _causal(scheme, world):
    """The causal work of the ranks, in blocks of L/(2W) x L/(2W) (``layout.causal_blocks``)."""
    work = [layout.causal_blocks(r, world) for r in range(world)]
    busiest, average = max(work), sum(work) // world  # the average is 2W + 1: whole
    ratio = f"{busiest / average:.2f}x"
    if scheme == "ring":
        return (f"Causal: the busiest rank ({work.index(busiest)}) computes {busiest} blocks, "
                f"{ratio} the average of {average} (zigzag: {average} each).")
    if scheme == "zigzag":
        return (f"Causal: {average} blocks on every rank, the average (contiguous: the "
                f"busiest {busiest}, {ratio}).")
    return "Causal: the same work on every rank."


def readout(scheme, num_heads, num_kv_heads, world, seq_len):
    said = _heads_problem(num_heads, num_kv_heads)
    if said:
        return f"Impossible: {said}; no scheme can split such a layer."
    what = _what(num_heads, num_kv_heads, world, seq_len)
    message = why_text(scheme, num_heads, num_kv_heads, world, seq_len)
    if message:
        return (f"{message}. With {what}, "
                f"{_bytes_sentence(num_heads, num_kv_heads, world, seq_len)}")
    if world == 1:
        return f"{TITLES[scheme]}, {what}: one device holds everything and sends nothing."
    return (f"{TITLES[scheme]}, {what}: {_bytes_sentence(num_heads, num_kv_heads, world, seq_len)}"
            f" {_causal(scheme, world)}")


# ----------------------------------------------------------------------------- the figure

def layout_state(num_heads, num_kv_heads, world, seq_len, scheme):
    message = why_text(scheme, num_heads, num_kv_heads, world, seq_len)
    # an impossible setting keeps every view in place (a view that vanished left the reader,
    # and the page, looking at nothing): the picture crossed out and the table empty, both
    # captioned with why
    views = {"layout": no_picture(message, num_heads, num_kv_heads, world) if message else
             picture(scheme, num_heads, num_kv_heads, world),
             "ranks": ranks_table(scheme, num_heads, num_kv_heads, world, seq_len),
             "bytes": bytes_plot(num_heads, num_kv_heads, world, seq_len)}
    # no "state": the page's data-state is then the controls' values, and 432 states stay light
    return {"views": views, "readout": readout(scheme, num_heads, num_kv_heads, world, seq_len)}


@live_figure
def device_layout(num_heads=128, num_kv_heads=8, world=8, seq_len=8192, scheme="tensor"):
    """Chapter 16: who holds which heads and positions on W devices, and what each rank sends."""
    return Figure(
        name="device-layout", title="One attention layer on many devices",
        controls=[select("num_heads", "query heads", NUM_HEADS, num_heads),
                  select("num_kv_heads", "key/value heads", NUM_KV_HEADS, num_kv_heads),
                  slider("world", "devices N", WORLDS, world),
                  slider("seq_len", "sequence length L", SEQ_LENS, seq_len,
                         labels=[f"{n:,}" for n in SEQ_LENS]),
                  select("scheme", "scheme", layout.SCHEMES, scheme, labels=SCHEME_LABELS)],
        views=[View("layout", "heatmap"), View("ranks", "table"), View("bytes", "plot")],
        state_fn=layout_state,
        alt="A grid with a row for each block of query heads and of key/value heads and a "
            "column for each of 16 chunks of the sequence, each cell coloured by and numbered "
            "with the device (rank) that holds it: under tensor parallelism and Ulysses each "
            "rank holds a block of heads at every position (key/value heads copied when there "
            "are fewer than devices), under the ring a block of positions of every head, under "
            "zigzag two chunks from opposite ends. A table lists each rank's query heads, "
            "key/value heads and positions. A line plot, both axes on a log scale, shows the "
            "bytes one rank sends per layer against the sequence length for the four schemes: "
            "tensor parallelism's all-reduce grows with the model width, the ring's key/value "
            "blocks with the key/value heads, Ulysses's all-to-alls with all the heads, divided "
            "by the devices.")
