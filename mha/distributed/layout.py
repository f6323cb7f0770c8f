"""Who holds what when one attention layer runs on several devices, and what each sends.

Pure functions of the layout (no process group): the chapter, its live figure, the exercise
and the tests that count what the processes really send all use them.

Schemes (``SCHEMES``), for ``world`` devices (ranks 0 .. world - 1), ``num_heads`` query heads H,
``num_kv_heads`` key/value heads Hkv and a sequence of ``seq_len`` positions L:

- ``"tensor"``: tensor parallelism (Megatron-LM). Rank r holds query heads
  r*H/world .. (r+1)*H/world - 1 (the columns of W_q, W_k, W_v that make them, the rows of W_o
  that read them) and every position. Key/value heads: Hkv/world each, or, when there are
  fewer key/value heads than devices, the one that its query heads read (a copy: world / Hkv
  ranks hold each).
- ``"ring"``: context parallelism. Rank r holds every head and the contiguous block of
  positions r*L/world .. (r+1)*L/world - 1; key/value blocks travel round the ring.
- ``"zigzag"``: the same, with the sequence cut into 2*world chunks and rank r holding chunks r
  and 2*world - 1 - r, so that every rank has as much causal work as every other.
- ``"ulysses"``: DeepSpeed-Ulysses. The layer's input and output are split by position as in
  ``"ring"``; for the attention itself one all-to-all regroups them so that rank r holds every
  position of the heads ``"tensor"`` gives it.

``rank_holds`` says what a rank holds while it computes attention; ``sent_bytes`` what one rank
sends to the others in one forward pass of the layer.
"""

from .. import _checks

__all__ = ["SCHEMES", "causal_blocks", "heads_of_rank", "kv_heads_of_rank",
           "positions_of_rank", "rank_holds", "sent_bytes"]

SCHEMES = ("tensor", "ring", "zigzag", "ulysses")
LAYOUTS = ("contiguous", "zigzag")


def _check_rank(rank, world):
    world = _checks.check_positive_int("world", world)
    rank = _checks.check_int("rank", rank, minimum=0)
    if rank >= world:
        raise ValueError(f"rank must be below world ({world}); got {rank}")
    return rank, world


def check_divides(name, count, world, what="the number of devices"):
    """``count`` (named ``name``) split evenly over ``world``: returns count // world."""
    if count % world:
        raise ValueError(f"{name} ({count}) must be divisible by {what} ({world})")
    return count // world


def heads_of_rank(rank, world, num_heads):
    """The query heads rank ``rank`` of ``world`` holds: a contiguous block of H/world."""
    rank, world = _check_rank(rank, world)
    num_heads = _checks.check_positive_int("num_heads", num_heads)
    per = check_divides("num_heads", num_heads, world)
    return list(range(rank * per, (rank + 1) * per))


def kv_heads_of_rank(rank, world, num_heads, num_kv_heads):
    """The key/value heads the rank needs for its query heads: a block of Hkv/world when the
    devices divide Hkv; when Hkv divides the devices instead (fewer key/value heads than
    devices), the one head its query heads share, copied on world/Hkv ranks."""
    heads = heads_of_rank(rank, world, num_heads)
    num_kv_heads = _checks.check_positive_int("num_kv_heads", num_kv_heads)
    check_divides("num_heads", num_heads, num_kv_heads, "num_kv_heads")
    if num_kv_heads % world == 0:
        per = num_kv_heads // world
        return list(range(rank * per, (rank + 1) * per))
    if world % num_kv_heads:
        raise ValueError(f"num_kv_heads ({num_kv_heads}) must be divisible by the number of "
                         f"devices ({world}), or divide it (each key/value head then copied on "
                         f"world / num_kv_heads ranks)")
    group = num_heads // num_kv_heads  # query heads per key/value head
    return [heads[0] // group]


def positions_of_rank(rank, world, seq_len, layout="contiguous"):
    """The positions rank ``rank`` holds: ``"contiguous"``, the block r*L/world ..
    (r+1)*L/world - 1; ``"zigzag"``, chunks r and 2*world - 1 - r of L/(2*world) each."""
    rank, world = _check_rank(rank, world)
    seq_len = _checks.check_positive_int("seq_len", seq_len)
    if layout == "contiguous":
        per = check_divides("seq_len", seq_len, world)
        return list(range(rank * per, (rank + 1) * per))
    if layout == "zigzag":
        per = check_divides("seq_len", seq_len, 2 * world, "2 x the number of devices")
        first, second = rank, 2 * world - 1 - rank
        return (list(range(first * per, (first + 1) * per))
                + list(range(second * per, (second + 1) * per)))
    raise ValueError(f"layout must be one of {LAYOUTS}; got {layout!r}")


def rank_holds(rank, world, scheme, *, num_heads, num_kv_heads, seq_len):
    """What rank ``rank`` of ``world`` holds while it computes attention under ``scheme``:
    ``{"query_heads": [...], "kv_heads": [...], "positions": [...]}``, the positions of its
    queries (under "ring" and "zigzag" the keys of every position pass through it in turn)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    rank, world = _check_rank(rank, world)
    num_heads = _checks.check_positive_int("num_heads", num_heads)
    num_kv_heads = _checks.check_positive_int("num_kv_heads", num_kv_heads)
    check_divides("num_heads", num_heads, num_kv_heads, "num_kv_heads")
    if scheme in ("tensor", "ulysses"):
        return {"query_heads": heads_of_rank(rank, world, num_heads),
                "kv_heads": kv_heads_of_rank(rank, world, num_heads, num_kv_heads),
                "positions": list(range(_checks.check_positive_int("seq_len", seq_len)))}
    layout = "zigzag" if scheme == "zigzag" else "contiguous"
    return {"query_heads": list(range(num_heads)), "kv_heads": list(range(num_kv_heads)),
            "positions": positions_of_rank(rank, world, seq_len, layout)}


def causal_blocks(rank, world, layout="contiguous"):
    """How many (query chunk, key chunk) blocks rank ``rank`` computes in causal attention,
    counting in chunks of L/(2*world) positions (a diagonal block counts as one: it is computed
    with its mask; a block wholly above the diagonal is skipped). Contiguous blocks give rank r
    4r + 3 (from 3 to 4*world - 1: the last rank works longest); zigzag gives every rank
    2*world + 1."""
    rank, world = _check_rank(rank, world)
    chunks = {"contiguous": (2 * rank, 2 * rank + 1),
              "zigzag": (rank, 2 * world - 1 - rank)}
    if layout not in chunks:
        raise ValueError(f"layout must be one of {LAYOUTS}; got {layout!r}")
    return sum(q + 1 for q in chunks[layout])  # query chunk q reads key chunks 0 .. q


def sent_bytes(scheme, *, world, seq_len, d_model, num_heads, num_kv_heads, batch=1,
               dtype_bytes=2):
    """Bytes one rank sends to the other ranks in one forward pass of one attention layer
    (``d_head = d_model / num_heads``; ``dtype_bytes`` 2 for bfloat16, 4 for float32):

    - ``"tensor"``: the all-reduce of the output (B, L, d_model), done as a ring (reduce-scatter
      then all-gather): 2 (world - 1) / world x B L d_model x dtype_bytes;
    - ``"ring"``, ``"zigzag"``: the rank's key and value blocks (B, Hkv, L/world, d_head) passed
      on world - 1 times: (world - 1) x 2 x B Hkv (L/world) d_head x dtype_bytes;
    - ``"ulysses"``: four all-to-alls (q, k and v in, the output back), each sending
      (world - 1)/world of the rank's block: (world - 1)/world x B (L/world) d_head x
      (2H + 2 max(Hkv, world)) x dtype_bytes (key/value heads copied up to one a rank when
      there are fewer than devices).

    One device sends nothing."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
    world = _checks.check_positive_int("world", world)
    seq_len = _checks.check_positive_int("seq_len", seq_len)
    d_model = _checks.check_positive_int("d_model", d_model)
    batch = _checks.check_positive_int("batch", batch)
    dtype_bytes = _checks.check_positive_int("dtype_bytes", dtype_bytes)
    d_head = check_divides("d_model", d_model, _checks.check_positive_int(
        "num_heads", num_heads), "num_heads")
    num_kv_heads = _checks.check_positive_int("num_kv_heads", num_kv_heads)
    check_divides("num_heads", num_heads, num_kv_heads, "num_kv_heads")
    if scheme in ("tensor", "ulysses"):  # heads split over the devices
        kv_heads_of_rank(0, world, num_heads, num_kv_heads)
    if scheme == "tensor":
        # reduce-scatter and all-gather, each (world - 1) chunks of B L d_model / world
        chunk = check_divides("batch x seq_len x d_model", batch * seq_len * d_model, world)
        return 2 * (world - 1) * chunk * dtype_bytes
    if scheme in ("ring", "zigzag"):
        layout = "zigzag" if scheme == "zigzag" else "contiguous"
        block = len(positions_of_rank(0, world, seq_len, layout))
        return (world - 1) * 2 * batch * num_kv_heads * block * d_head * dtype_bytes
    per = check_divides("seq_len", seq_len, world)
    heads = 2 * num_heads + 2 * max(num_kv_heads, world)
    # each all-to-all: (world - 1) chunks of B x per x (heads / world) x d_head
    return (world - 1) * batch * per * (heads // world) * d_head * dtype_bytes
