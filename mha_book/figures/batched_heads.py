"""Chapter 05's live figures: where ``split_heads`` puts a number, and ``valid_lens`` for heads
folded into the batch.

* ``split_explorer()``: the chapter's 1 x 9 x 512 tensor of the integers 1..4608. Choose
  num_heads, a token and a feature: the number there, and where ``mha.split_heads`` puts it
  (head, row, column of the (1, H, 9, d_head) result) and where ``mha.merge_heads`` brings it
  back; a toggle replaces ``split_heads`` by the classic bug, a reshape straight to
  (1, H, 9, d_head) without the transpose. Three strips show every number coloured by its head:
  the input, the split tensor (heads side by side) and the merged tensor, with the focused
  number marked. The settings are too many to list (5 x 9 x 512 x 2), so the page finds the
  number in the tensors the package computed (exported once per num_heads, ``compute:
  "split-heads"`` in mha_book/static/src/split_heads.js); ``split_state`` is the same picture in Python, for the tests.
* ``fold_valid_lens()``: d2l's layout, heads folded into the batch, (B * H, Lq, Lk); a select
  between ``torch.repeat_interleave(valid_lens, H)`` (right) and ``valid_lens.repeat(H)``
  (wrong), num_heads and the two sequences' valid lengths. The heatmaps are the mask each
  folded row gets and the weights of its first query, cells that differ from the package's
  ``MultiHeadAttention(..., valid_lens=...)`` outlined.
"""

import base64
from functools import lru_cache

import torch

from mha.functional import masked_softmax, merge_heads, split_heads
from mha.layer import MultiHeadAttention
from mha.live.figure import Figure, View, heatmap, select, slider, table, toggle
from mha.masks import valid_lens_to_mask

from ._registry import live_figure

__all__ = ["D_MODEL", "EXPANSIONS", "HEADS", "TOKENS", "fold_state", "fold_valid_lens",
           "folded_weights", "layout", "split_explorer", "split_state"]

D_MODEL = 512
HEADS = (1, 2, 4, 8, 16)
TOKENS = ("Anthony", "Hopkins", "admired", "Michael", "Bay", "as", "a", "great",
          "director.")
L = len(TOKENS)


def numbers():
    """The chapter's tensor (1, 9, 512): the integers 1, 2, ..., 4608 in order."""
    return torch.arange(1, L * D_MODEL + 1).reshape(1, L, D_MODEL)


def layout(num_heads, wrong=False):
    """The (1, H, 9, d_head) tensor the numbers become: ``mha.split_heads`` or, ``wrong``, the
    reshape without the transpose."""
    x = numbers()
    if wrong:
        return x.reshape(1, num_heads, L, D_MODEL // num_heads)  # the bug
    return split_heads(x, num_heads)  # (1, 9, 512) -> (1, H, 9, Dh)


def _where(tensor, n):
    return [int(i) for i in (tensor[0] == n).nonzero()[0]]


def split_state(num_heads, token, feature, wrong=False):
    """Where the number at [0, token, feature] goes: the figure's data for one setting."""
    split = layout(num_heads, wrong)  # (1, H, 9, Dh)
    merged = merge_heads(split)  # (1, H, 9, Dh) -> (1, 9, 512)
    n = int(numbers()[0, token, feature])
    h, row, col = _where(split, n)
    t2, f2 = _where(merged, n)
    d_head = D_MODEL // num_heads
    head_of = torch.empty(L * D_MODEL, dtype=torch.long)  # head of each number, by value - 1
    for i in range(num_heads):
        head_of[split[0, i].flatten() - 1] = i
    name = "reshape without transpose" if wrong else "split_heads"
    home = (t2, f2) == (token, feature)
    back = int((merged == numbers()).sum())  # numbers the round trip leaves where they were
    panels = [
        {"title": f"input (1, 9, 512): colour = the head that {name} gives each number to",
         "grid": head_of.reshape(L, D_MODEL).tolist(), "focus": [token, feature]},
        {"title": f"{name} -> (1, {num_heads}, 9, {d_head}): the heads side by side",
         "grid": [[i] * d_head for i in range(num_heads) for _ in range(L)],
         "focus": [h, row, col]},
        {"title": "merge_heads -> (1, 9, 512): colour = the head each number came from"
                  + (" (a correct round trip's stripes, other numbers in them)" if wrong
                     and num_heads > 1 else ""),
         "grid": head_of[merged[0] - 1].tolist(), "focus": [t2, f2]}]
    path = table(["step", "index", "value"],
                 [["input", f"[0, {token}, {feature}]", n],
                  [name, f"[0, {h}, {row}, {col}]", n],
                  ["merge_heads", f"[0, {t2}, {f2}]", n]],
                 caption=f"The number {n:,}, step by step")
    how = (f"feature {feature} = {h} x {d_head} + {col}" if not wrong else
           f"its position counting from 0, {n - 1} = {h} x {L * d_head} + {row} x {d_head} + "
           f"{col}: the numbers are dealt out in reading order")
    return {
        "views": {
            "strips": {"panels": panels, "heads": num_heads, "d_head": d_head, "rows": L,
                       "cols": D_MODEL, "labels": list(TOKENS),
                       "caption": f"{n:,} = input[0, {token}, {feature}], {num_heads} "
                                  f"head{'s' if num_heads > 1 else ''} of {d_head}"},
            "path": path},
        "readout": (f"{n:,} (token {token} \"{TOKENS[token]}\", feature {feature}): {name} "
                    f"puts it in head {h}, row {row}, column {col} ({how}); merge_heads "
                    f"brings it to token {t2}, feature {f2}"
                    + ((", where it started." if back == L * D_MODEL else
                        f", where it started, by luck: the wrong round trip leaves only "
                        f"{back:,} of the {L * D_MODEL:,} numbers in place.") if home else
                       f", not where it started (token {token}, feature {feature}).")
                    + (" The real harm is inside attention: a row of a head is no longer one "
                       "token, so the head compares pieces of different tokens."
                       if wrong and num_heads > 1 else "")),
        "state": {"num_heads": num_heads, "token": token, "feature": feature, "wrong": wrong,
                  "number": n, "head": h, "row": row, "column": col, "back": [t2, f2]},
    }


def _b64(x):
    """int16 little-endian, base64: the page decodes it (split_heads.js, ``ints16``)."""
    return base64.b64encode(x.to(torch.int16).numpy().astype("<i2").tobytes()).decode()


@lru_cache(maxsize=1)
def _export():
    """The tensors the page reads: per num_heads, both layouts and merge_heads of each."""
    data = {"heads": list(HEADS), "rows": L, "cols": D_MODEL, "tokens": list(TOKENS),
            "input": _b64(numbers()), "layouts": {}}
    for h in HEADS:
        for wrong in (False, True):
            split = layout(h, wrong)
            data["layouts"][f"{h},{int(wrong)}"] = {"split": _b64(split),
                                                     "merged": _b64(merge_heads(split))}
    return data


@live_figure
def split_explorer(num_heads=8, token=2, feature=209, wrong=False):
    """Chapter 05: focus a number of the 1 x 9 x 512 tensor and follow it through split_heads
    and merge_heads (or the reshape without the transpose)."""
    for name, value, allowed in (("num_heads", num_heads, HEADS),
                                 ("token", token, range(L)),
                                 ("feature", feature, range(D_MODEL))):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {list(allowed)}; got {value!r}")
    return Figure(
        name="split-explorer", title="Where split_heads puts a number, and where merge_heads "
                                     "brings it back",
        controls=[slider("num_heads", "num_heads", HEADS, num_heads),
                  select("token", "token", list(range(L)), token,
                         labels=[f"{i} {t}" for i, t in enumerate(TOKENS)]),
                  slider("feature", "feature (column)", list(range(D_MODEL)), feature),
                  toggle("wrong", "reshape without transpose (the bug)", wrong)],
        views=[View("strips", "strips"), View("path", "table")],
        compute="split-heads", data=_export(), state_fn=split_state,
        alt="Three strips of 9 rows by 512 columns: the input numbers coloured by the head "
            "split_heads gives them to, the split tensor with its heads side by side, and "
            "the tensor merge_heads returns; the chosen number is marked in each, and a table "
            "gives its index at every step.")


# ----------------------------------------------------------------------------- valid_lens

EXPANSIONS = ("repeat_interleave (right)", "repeat (wrong)")
FOLD_HEADS = (1, 2, 4)
LQ, LK, D_SMALL = 3, 6, 32


def _expand(valid_lens, num_heads, expansion):
    if expansion == EXPANSIONS[0]:
        return torch.repeat_interleave(valid_lens, num_heads, dim=0)  # (B,) -> (B * H,)
    if expansion == EXPANSIONS[1]:
        return valid_lens.repeat(num_heads)  # (B,) -> (B * H,): tiled, the wrong order
    raise ValueError(f"expansion must be one of {EXPANSIONS}; got {expansion!r}")


@lru_cache(maxsize=None)
def _small(num_heads):
    """The chapter's small layer and inputs: MultiHeadAttention(32, H), 2 sequences of 3
    queries over 6 keys, drawn after torch.manual_seed(0)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layer = MultiHeadAttention(D_SMALL, num_heads).eval()
        query, memory = torch.randn(2, LQ, D_SMALL), torch.randn(2, LK, D_SMALL)
    return layer, query, memory


def _fold(x, num_heads):
    """d2l's transpose_qkv: (B, L, D) -> (B, H, L, Dh) -> (B * H, L, Dh)."""
    heads = split_heads(x, num_heads)
    return heads.reshape(-1, *heads.shape[2:])


def folded_weights(num_heads, len0, len1, expansion):
    """The folded layout's weights (B * H, Lq, Lk) with ``valid_lens`` (len0, len1) expanded
    by ``expansion``, and the package's (B, H, Lq, Lk) for the same layer."""
    layer, query, memory = _small(num_heads)
    valid_lens = torch.tensor([len0, len1])
    with torch.no_grad():
        q = _fold(layer.W_q(query), num_heads)  # (B * H, Lq, Dh)
        k = _fold(layer.W_k(memory), num_heads)  # (B * H, Lk, Dh)
        scores = q @ k.transpose(1, 2) / q.size(-1) ** 0.5  # (B * H, Lq, Lk)
        folded = masked_softmax(scores, _expand(valid_lens, num_heads, expansion))
        _, package = layer(query, memory, valid_lens=valid_lens, need_weights=True)
    return folded, package


def fold_state(expansion, num_heads, len0, len1):
    H = num_heads
    lens = _expand(torch.tensor([len0, len1]), H, expansion)  # (B * H,)
    allowed = (torch.arange(LK) < lens[:, None]).int()  # (B * H, Lk): 1 = may attend
    right = valid_lens_to_mask(torch.tensor([len0, len1]), LQ, LK)[:, 0]  # (B, Lk)
    right = right.repeat_interleave(H, dim=0).int()  # the package's mask, in folded order
    folded, package = folded_weights(H, len0, len1, expansion)
    first = folded[:, 0]  # (B * H, Lk): each folded row's first query
    expected = package[:, :, 0].reshape(2 * H, LK)  # (B, H, Lk) -> (B * H, Lk)
    rows = [f"seq {r // H}, head {r % H}" for r in range(2 * H)]
    bad_mask = (allowed != right).nonzero().tolist()
    bad_w = ((first - expected).abs() > 1e-6).nonzero().tolist()
    wrong_rows = sorted({r for r, _ in bad_mask})
    keys = [f"key {j}" for j in range(LK)]
    which = ("every folded row gets its own sequence's length" if not wrong_rows else
             f"{len(wrong_rows)} of {2 * H} folded rows get the other sequence's length "
             f"({'; '.join(rows[r] for r in wrong_rows)})")
    return {
        "views": {
            "mask": heatmap(allowed, rows, keys, label="mask", ticks=[0, 1],
                            tick_labels=["blocked", "may attend"],
                            marks=[(0, r, j) for r, j in bad_mask],
                            caption=f"valid_lens ({len0}, {len1}) -> {lens.tolist()}",
                            axes="rows: folded rows (B x H), columns: keys; outlined: wrong"),
            "weights": heatmap(first, rows, keys, numbers=True,
                               marks=[(0, r, j) for r, j in bad_w],
                               caption="Weights of each folded row's first query",
                               axes="outlined: differs from mha.MultiHeadAttention")},
        "readout": (f"{expansion}: valid_lens ({len0}, {len1}) for {H} head"
                    f"{'s' if H > 1 else ''} becomes {lens.tolist()}; {which}."),
        "state": {"expansion": expansion, "num_heads": H, "len0": len0, "len1": len1,
                  "wrong_rows": wrong_rows},
    }


@live_figure
def fold_valid_lens(expansion=EXPANSIONS[1], num_heads=4, len0=2, len1=5):
    """Chapter 05: valid_lens for heads folded into the batch, repeat_interleave or repeat."""
    lengths = list(range(1, LK + 1))
    return Figure(
        name="fold-valid-lens", title="valid_lens for heads folded into the batch: "
                                      "repeat_interleave or repeat",
        controls=[select("expansion", "expand valid_lens with", EXPANSIONS, expansion),
                  slider("num_heads", "num_heads", FOLD_HEADS, num_heads),
                  slider("len0", "valid_len of sequence 0", lengths, len0),
                  slider("len1", "valid_len of sequence 1", lengths, len1)],
        views=[View("mask", "heatmap"), View("weights", "heatmap")],
        state_fn=fold_state,
        alt="Two heatmaps with one row per folded row (sequence, head): the keys each row may "
            "attend to, and the weights of its first query; cells that differ from the "
            "package's layer are outlined.")
