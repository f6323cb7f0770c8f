"""Chapter 16's live figure draws what mha.distributed.layout says (mha_book.figures.many_devices):
who holds which heads and positions on W devices, and the bytes each rank sends per layer."""

import itertools
import json
import math
import re

import pytest
from live_texts import strings

from mha.distributed import layout
from mha.live.figure import MAX_STATES
from mha_book import figures
from mha_book.figures import many_devices as md

GRID = list(itertools.product(md.NUM_HEADS, md.NUM_KV_HEADS, md.WORLDS, md.SEQ_LENS,
                              layout.SCHEMES))
HTML_LIMIT = 450_000  # bytes of the figure's HTML (its 432 states, the front end inlined)


@pytest.fixture(scope="module")
def fig():
    return figures.build("device_layout")


def state(fig, H, Hkv, W, L, scheme):
    return fig.state(num_heads=H, num_kv_heads=Hkv, world=W, seq_len=L, scheme=scheme)


def allowed(scheme, H, Hkv, W, L):
    """Whether layout.sent_bytes accepts the setting (the package's own word on it)."""
    try:
        layout.sent_bytes(scheme, world=W, seq_len=L, d_model=128 * H, num_heads=H,
                          num_kv_heads=Hkv)
    except ValueError:
        return False
    return True


def parse(text):
    """A table cell's ranges back into integers: "0-3, 12-13" -> [0, 1, 2, 3, 12, 13]."""
    out = []
    for part in text.replace(md.NB_HYPHEN, "-").split(", "):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def holds(r, W, scheme, H, Hkv, L):
    return layout.rank_holds(r, W, scheme, num_heads=H, num_kv_heads=Hkv, seq_len=L)


# ----------------------------------------------------------------------------- the figure

def test_the_figure_is_registered_small_and_light(fig):
    assert figures.FIGURES["device_layout"] is md.device_layout
    assert fig.name == "device-layout"
    assert [c.name for c in fig.controls] == ["num_heads", "num_kv_heads", "world", "seq_len",
                                              "scheme"]
    assert fig.controls[2].values == [1, 2, 4, 8]
    assert fig.controls[4].kind == "select" and fig.controls[4].values == list(layout.SCHEMES)
    assert len(fig.states) == len(GRID) == 432 <= MAX_STATES
    html = fig._repr_html_()
    assert len(html) < HTML_LIMIT, f"{len(html):,} bytes of HTML"
    spec = fig.spec()
    json.dumps(spec, allow_nan=False)
    # every view's data pooled (a hidden view's None too), a state names it by index
    assert all(isinstance(i, int) for s in spec["states"].values() for i in s["views"].values())


def test_possible_exactly_where_the_package_says(fig):
    for H, Hkv, W, L, scheme in GRID:
        ok = allowed(scheme, H, Hkv, W, L)
        assert (md.problem(scheme, H, Hkv, W, L) is None) == ok, (H, Hkv, W, L, scheme)
        views = state(fig, H, Hkv, W, L, scheme)["views"]
        assert set(views) == {"layout", "ranks", "bytes"} and all(views.values())
        message = md.why_text(scheme, H, Hkv, W, L)
        assert (message is None) == ok
        if not ok:  # every view in place, the picture crossed out, both captions saying why
            assert views["layout"]["caption"] == views["ranks"]["caption"] == message
            assert all(v is None for g in views["layout"]["grids"] for row in g for v in row)
            assert all(row[1:] == [md.NONE] * (len(row) - 1) for row in views["ranks"]["rows"])
            assert [row[0] for row in views["ranks"]["rows"]] == [str(r) for r in range(W)]


# ----------------------------------------------------------------------------- the picture

def chunk_positions(c, W, L):
    """The positions of chunk c of 2W."""
    per = L // (2 * W)
    return set(range(c * per, (c + 1) * per))


def held_sets(W, scheme, H, Hkv, L):
    """Each rank's rank_holds as sets: {"query_heads": set, "kv_heads": set, "positions": set}."""
    return [{k: set(v) for k, v in holds(r, W, scheme, H, Hkv, L).items()} for r in range(W)]


def test_every_cell_is_coloured_by_the_rank_that_holds_it(fig):
    """At L = 8,192 (the picture is the same at every L: its columns are chunks of L/(2W)): the
    rank in a cell holds the row's heads at every position of the column's chunk; a row that is
    not a copy has no other rank holding any of them there; the copies of a key/value head are
    exactly the ranks that hold it, one a row."""
    L = 8192
    for H, Hkv, W, scheme in itertools.product(md.NUM_HEADS, md.NUM_KV_HEADS, md.WORLDS,
                                               layout.SCHEMES):
        if not allowed(scheme, H, Hkv, W, L):
            continue
        pic = state(fig, H, Hkv, W, L, scheme)["views"]["layout"]
        assert all(state(fig, H, Hkv, W, n, scheme)["views"]["layout"] == pic
                   for n in md.SEQ_LENS)
        rows = md.picture_rows(scheme, H, Hkv, W)
        assert pic["rows"] == [r[0] for r in rows]
        assert pic["cols"] == [str(c) for c in range(2 * W)]
        assert pic["vmin"] == 0 and pic["ticks"] == list(range(W))
        assert len(pic["grids"]) == (2 if scheme == "ulysses" else 1)
        grid = pic["grids"][-1]  # Ulysses: the attention's grid is the second
        held = held_sets(W, scheme, H, Hkv, L)
        for (label, key, heads, copy), line in zip(rows, grid, strict=True):
            kind = "q" if key == "query_heads" else "kv"
            assert label == f"{kind} " + (md.spans(heads) if copy is None
                                          else f"{heads[0]}, copy {copy + 1}")
            for c, r in enumerate(line):
                assert isinstance(r, int) and 0 <= r < W
                where = chunk_positions(c, W, L)
                owners = [q for q, h in enumerate(held)
                          if set(heads) <= h[key] and where <= h["positions"]]
                assert r in owners, (scheme, H, Hkv, W, label, c)
                if copy is None:  # nobody else holds any of these heads at these positions
                    assert not any(set(heads) & h[key] and where & h["positions"]
                                   for q, h in enumerate(held) if q != r), (scheme, label, c)
                else:
                    assert r == owners[copy]


def test_each_head_and_position_is_held_once_or_copied_as_counted(fig):
    """Ring, zigzag, tensor without copies: every (head, position) on exactly one rank (the
    ranks' blocks are disjoint and add up to H x L); with fewer key/value heads than devices
    (tensor, Ulysses) each key/value head on W/Hkv ranks, one row of the picture each."""
    L = 8192  # the same blocks at every L, in proportion
    for H, Hkv, W, scheme in itertools.product(md.NUM_HEADS, md.NUM_KV_HEADS, md.WORLDS,
                                               layout.SCHEMES):
        if not allowed(scheme, H, Hkv, W, L):
            continue
        held = held_sets(W, scheme, H, Hkv, L)
        for a, b in itertools.combinations(held, 2):
            assert not (a["query_heads"] & b["query_heads"] and a["positions"] & b["positions"])
        assert sum(len(h["query_heads"]) * len(h["positions"]) for h in held) == H * L
        copies = W // Hkv if scheme in ("tensor", "ulysses") and Hkv < W else 1
        assert sum(len(h["kv_heads"]) * len(h["positions"]) for h in held) == copies * Hkv * L
        if copies == 1:
            for a, b in itertools.combinations(held, 2):
                assert not (a["kv_heads"] & b["kv_heads"] and a["positions"] & b["positions"])
            continue
        grid = state(fig, H, Hkv, W, L, scheme)["views"]["layout"]["grids"][-1]
        rows = md.picture_rows(scheme, H, Hkv, W)
        for k in range(Hkv):
            on = [r for r, h in enumerate(held) if k in h["kv_heads"]]
            lines = [i for i, row in enumerate(rows) if row[1] == "kv_heads" and row[2] == [k]]
            assert len(on) == len(lines) == copies
            assert [grid[i][0] for i in lines] == on


def test_ulysses_first_grid_is_the_blocks_in_and_out(fig):
    for H, Hkv, W in itertools.product(md.NUM_HEADS, md.NUM_KV_HEADS, md.WORLDS):
        if not allowed("ulysses", H, Hkv, W, 8192):
            continue
        pic = state(fig, H, Hkv, W, 8192, "ulysses")["views"]["layout"]
        owner = [r for r in range(W) for _ in range(2)]  # chunk c of 2W: rank c // 2
        assert all(line == owner for line in pic["grids"][0])
        for c, r in enumerate(owner):
            assert chunk_positions(c, W, 8192) <= set(layout.positions_of_rank(r, W, 8192))
        assert pic["titles"][0].startswith("in and out")


def test_ranks_are_numbered_in_their_cells_except_on_two_devices(fig):
    for W in md.WORLDS:
        pic = state(fig, 128, 8, W, 8192, "zigzag")["views"]["layout"]
        assert pic["numbers"] == (W != 2)
        # zigzag: rank r holds chunks r and 2W - 1 - r
        assert pic["grids"][0][0] == [min(c, 2 * W - 1 - c) for c in range(2 * W)]


# ----------------------------------------------------------------------------- the table

def test_the_table_is_rank_holds_as_ranges(fig):
    for H, Hkv, W, L, scheme in GRID:
        if not allowed(scheme, H, Hkv, W, L):
            continue
        t = state(fig, H, Hkv, W, L, scheme)["views"]["ranks"]
        assert len(t["rows"]) == W and t["caption"].startswith(f"What each rank holds, L = {L:,}")
        for r, row in enumerate(t["rows"]):
            h = holds(r, W, scheme, H, Hkv, L)
            assert row[0] == str(r)
            assert [parse(x) for x in row[1:4]] == [h["query_heads"], h["kv_heads"],
                                                    h["positions"]]
            if scheme == "ulysses":
                assert t["columns"][-1] == "in, out"
                assert parse(row[4]) == layout.positions_of_rank(r, W, L)
            assert all(isinstance(x, str) and "-" not in x for x in row)  # U+2011 only
        copies = W // Hkv if scheme in ("tensor", "ulysses") and Hkv < W else 1
        assert (f"each kv head on {copies} ranks" in t["caption"]) == (copies > 1)
        # copies counted: each kv head listed by W/Hkv ranks
        listed = [k for row in t["rows"] for k in parse(row[2])]
        assert all(listed.count(k) == copies * (1 if scheme in ("tensor", "ulysses") else W)
                   for k in range(Hkv))


def test_the_chapters_zigzag_example():
    rows = md.rank_rows("zigzag", 128, 8, 4, 8192)
    assert [row[3].replace(md.NB_HYPHEN, "-") for row in rows] == [
        "0-1023, 7168-8191", "1024-2047, 6144-7167", "2048-3071, 5120-6143", "3072-5119"]
    assert md.spans([0, 1, 2, 3]) == "0-3" and md.spans([5]) == "5"
    assert md.spans([1, 3, 4, 5, 9]) == "1, 3-5, 9"
    assert md.spans(list(range(131072))) == "0-131071"


# ----------------------------------------------------------------------------- the bytes

def test_the_plot_is_sent_bytes_in_one_readable_unit(fig):
    for H, Hkv, W in itertools.product(md.NUM_HEADS, md.NUM_KV_HEADS, md.WORLDS):
        for L in md.SEQ_LENS:
            plot = state(fig, H, Hkv, W, L, "tensor")["views"]["bytes"]
            want = {s: [layout.sent_bytes(s, world=W, seq_len=n, d_model=128 * H, num_heads=H,
                                          num_kv_heads=Hkv, batch=1, dtype_bytes=2)
                        if allowed(s, H, Hkv, W, n) else None for n in md.SEQ_LENS]
                    for s in layout.SCHEMES}
            if all(v is None for ys in want.values() for v in ys):
                continue  # no scheme can split the layer: test_impossible_combinations_say_why
            assert plot["x"] == list(md.SEQ_LENS) and plot["marker"] == md.SEQ_LENS.index(L)
            unit = plot["y_label"].split()[0]
            scale = 1024 ** md.UNITS.index(unit)
            assert want["ring"] == want["zigzag"]  # the same blocks: one line, "ring and zigzag"
            names = {"tensor": "tensor", "ring": "ring and zigzag", "ulysses": "Ulysses"}
            assert [x["label"] for x in plot["series"]] == [
                names[s] + ("" if want[s][0] is not None else " (impossible)") for s in names]
            for series, s in zip(plot["series"], names):
                for got, w in zip(series["y"], want[s]):
                    assert (got is None) == (w is None)
                    if w is not None:
                        assert math.isclose(got * scale, w, rel_tol=1e-5, abs_tol=1e-5 * scale)
            if W == 1:
                assert unit == "bytes" and plot.get("y_log") is None
                assert all(y == 0 for x in plot["series"] for y in x["y"] if y is not None)
                continue
            assert plot["y_log"] and plot["x_log"] and "log scale" in plot["y_label"]
            ys = [y for x in plot["series"] for y in x["y"] if y is not None]
            assert 1 <= math.sqrt(min(ys) * max(ys)) < 1024  # the unit of the middle number
            assert max(ys) < 8192 and min(ys) >= 0.5  # never "MiB up to 2,097,152"


def test_sizes_are_written_in_kib_mib_gib():
    assert md.size_text(0) == "0 bytes"
    assert md.size_text(512 * 1024) == "512 KiB"
    assert md.size_text(29_360_128) == "28 MiB" and md.size_text(62_390_272) == "59.5 MiB"
    assert md.size_text(7 * 2**30) == "7 GiB" and md.size_text(1023 * 2**20) == "1,023 MiB"
    assert md.size_text(1.75 * 2**30) == "1.75 GiB"
    for H, Hkv, W, L, scheme in GRID:
        n = md.sent(scheme, H, Hkv, W, L)
        if n:
            number, unit = md.size_text(n).split()
            assert unit in ("KiB", "MiB", "GiB") and 1 <= float(number.replace(",", "")) < 1024


# ----------------------------------------------------------------------------- the readout

def test_the_default_readout_says_llama_3_405bs_numbers(fig):
    s = fig.state()
    assert s["readout"] == (
        "Tensor parallelism, 8 devices, 128 query and 8 key/value heads (Llama 3 405B), "
        "L = 8,192: per layer each rank sends tensor 448 MiB, ring 28 MiB, zigzag 28 MiB, "
        "Ulysses 59.5 MiB; least: ring and zigzag. Causal: the same work on every rank.")
    # by hand: the all-reduce 2 (W - 1)/W x L x d_model x 2 bytes; the ring (W - 1) x 2 x Hkv x
    # (L / W) x 128 x 2; Ulysses (W - 1)/W x (L / W) x 128 x (2H + 2 max(Hkv, W)) x 2
    assert 2 * 7 * 8192 * 16384 * 2 // 8 == 448 * 2**20
    assert 7 * 2 * 8 * 1024 * 128 * 2 == 28 * 2**20
    assert 7 * 1024 * 128 * (256 + 16) * 2 // 8 == 59.5 * 2**20


def test_readouts_give_each_schemes_bytes_the_least_and_the_causal_work(fig):
    for H, Hkv, W, L, scheme in GRID:
        text = state(fig, H, Hkv, W, L, scheme)["readout"]
        assert text.endswith(".") and not re.search(r"\bnan\b|\bNone\b|\b1 key/value heads\b",
                                                     text), text
        sizes = {s: md.sent(s, H, Hkv, W, L) for s in layout.SCHEMES}
        if all(n is None for n in sizes.values()):
            assert text.startswith("Impossible: ") and "no scheme can split" in text
            continue
        if W == 1:
            assert "sends nothing" in text
            continue
        assert f"L = {L:,}" in text and f"{W} devices" in text
        for s, n in sizes.items():
            said = "impossible" if n is None else md.size_text(n)
            assert f"{md.SCHEME_NAMES[s]} {said}" in text, (s, text)
        least = min(n for n in sizes.values() if n is not None)
        who = " and ".join(md.SCHEME_NAMES[s] for s, n in sizes.items() if n == least)
        assert f"least: {who}." in text
        work = [layout.causal_blocks(r, W) for r in range(W)]
        zig = [layout.causal_blocks(r, W, "zigzag") for r in range(W)]
        assert sum(work) == sum(zig) == W * (2 * W + 1) and set(zig) == {2 * W + 1}
        if scheme == "ring" and md.problem(scheme, H, Hkv, W, L) is None:
            assert (f"the busiest rank ({W - 1}) computes {4 * W - 1} blocks, "
                    f"{(4 * W - 1) / (2 * W + 1):.2f}x the average of {2 * W + 1}") in text
        if scheme == "zigzag" and md.problem(scheme, H, Hkv, W, L) is None:
            assert f"Causal: {2 * W + 1} blocks on every rank, the average" in text
    ring = state(fig, 128, 8, 8, 8192, "ring")["readout"]
    assert "the busiest rank (7) computes 31 blocks, 1.82x the average of 17" in ring


def test_impossible_combinations_say_why(fig):
    s = state(fig, 12, 1, 8, 8192, "tensor")
    why = ("Tensor parallelism on 8 devices is impossible: 12 query heads cannot be split over 8 "
           "devices (8 does not divide 12)")
    assert s["views"]["layout"]["caption"] == s["views"]["ranks"]["caption"] == why
    assert s["readout"] == (f"{why}. With 8 devices, 12 query and 1 key/value head, L = 8,192, "
                            "per layer each rank sends tensor impossible, ring 3.5 MiB, zigzag "
                            "3.5 MiB, Ulysses impossible; least: ring and zigzag.")
    labels = [x["label"] for x in s["views"]["bytes"]["series"]]
    assert labels == ["tensor (impossible)", "ring and zigzag", "Ulysses (impossible)"]
    assert state(fig, 12, 1, 8, 8192, "ulysses")["views"]["layout"]["caption"].startswith(
        "Ulysses on 8 devices is impossible: 12 query heads cannot be split over 8")
    # the crossed-out picture keeps the heads' rows: the views below it stay in place
    assert state(fig, 12, 8, 8, 8192, "tensor")["views"]["layout"]["rows"] == [
        "q 0-1", "q 2-3", "q 4-5", "q 6-7", "q 8-9", "q 10-11", *(f"kv {k}" for k in range(8))]
    # 12 heads over 4 devices: 3 each, possible
    assert md.why_text("tensor", 12, 1, 4, 8192) is None
    # Hkv not dividing H, and Hkv > H: no scheme at all, an empty plot; the views say why
    for Hkv, why in ((8, "12 query heads cannot be shared equally by 8 key/value heads (8 does "
                         "not divide 12)"),
                     (32, "12 query heads cannot share 32 key/value heads: each key/value head "
                          "serves one query head or more, so there are at most 12")):
        for scheme in layout.SCHEMES:
            s = state(fig, 12, Hkv, 4, 8192, scheme)
            assert s["views"]["layout"]["caption"] == f"No scheme can split this layer: {why}"
            assert s["views"]["ranks"]["caption"] == f"No scheme can split this layer: {why}"
            assert s["readout"] == f"Impossible: {why}; no scheme can split such a layer."
            plot = s["views"]["bytes"]
            assert plot["caption"].startswith("No scheme can split this layer")
            assert all(y is None for x in plot["series"] for y in x["y"])
            assert (plot["y_min"], plot["y_max"]) == (0, 1) and not plot.get("y_log")


def test_every_state_reads_well(fig):
    for st in fig.states.values():
        for text in strings([st["readout"], st["views"]]):
            assert not re.search(r"\bnan\b|\bNone\b|\b1 (heads|devices|ranks)\b", text), text
