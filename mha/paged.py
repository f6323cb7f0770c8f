"""Paged attention: the key/value cache as a pool of fixed-size blocks and one block table per
sequence (vLLM's PagedAttention; Kwon et al. 2023, "Efficient Memory Management for Large
Language Model Serving with PagedAttention").

Shape legend: N sequences in a decoding batch, H query heads, Hkv key/value heads, L cached
positions of a sequence, Lq new positions, Dh d_head, S block_size (see ``mha.functional``).

A server decodes many sequences at once, of lengths it cannot know in advance. Giving each a
contiguous ``KVCache`` of the longest possible length wastes most of it; growing each by
concatenation copies it at every step. Paging does what an operating system does with memory:
one pool of ``num_blocks`` blocks of ``block_size`` positions (``key_blocks`` and
``value_blocks``, (num_blocks, Hkv, S, Dh) each) serves every sequence; sequence s owns a list of
physical block ids, its *block table*, and its position p lives in block ``table[p // S]`` at
slot ``p % S``. A sequence takes a block from the free list only when its last block is full, so
it wastes fewer than S positions; a finished sequence's blocks go back to the pool (``free``) for
the next one; and since blocks are handed out as the sequences grow, one sequence's blocks are
scattered through the pool, in any order.

Two ways to attend with it:

- ``cache.sequence(seq_id)``: one sequence as the ``KVCache`` that a layer's
  ``forward(cache=...)`` decodes with (batch size 1): ``layer(x, is_causal=True,
  cache=cache.sequence("a"))``. The layer's batch has one past length and one position offset
  for all its rows, which sequences of different lengths do not share, so the layer decodes
  one sequence per call, and the pool is shared. Each step gathers the sequence's blocks into
  contiguous keys (a copy: the teaching version of what a paged kernel reads in place).
- ``paged_attention(q, cache, seq_ids)``: one call for a batch of sequences of different lengths
  (the kernel's job in vLLM): the new queries of every sequence, keys read through the block
  tables in one indexed gather, padded to the longest and masked by each sequence's length.

The pool stores values for inference, not an autograd graph: appending keys that require
gradients is refused (decode under ``torch.no_grad()``).
"""

import torch

from . import _checks
from .attention_functions import sdpa
from .cache import KVCache

__all__ = ["PagedKVCache", "PagedSequence", "paged_attention"]


def _check_seq_id(seq_id):
    """A sequence's name: an int (not a bool) or a str."""
    if isinstance(seq_id, bool) or not isinstance(seq_id, (int, str)):
        raise TypeError(f"seq_id must be an int or a str naming a sequence; got "
                        f"{_checks._kind(seq_id)}")
    return seq_id


class PagedKVCache:
    """A pool of ``num_blocks`` blocks of ``block_size`` positions of keys and values, shared by
    sequences that each own a block table.

    ``key_blocks``, ``value_blocks``: (num_blocks, Hkv, S, Dh), the pool. ``append(seq_id, k, v)``
    writes new positions (taking blocks from the free list as needed; a RuntimeError when the
    pool has too few), ``gather(seq_id)`` reads a sequence back as contiguous (Hkv, L, Dh)
    keys and values, ``free(seq_id)`` returns its blocks, ``block_table(seq_id)`` lists them,
    ``length(seq_id)`` is L. ``nbytes`` is the pool's size, ``nbytes_in_use`` the allocated
    blocks', ``nbytes_wasted`` the part of those blocks not yet written (the internal
    fragmentation: fewer than ``block_size`` positions per sequence).
    """

    def __init__(self, num_blocks, block_size, num_kv_heads, d_head, *, dtype=torch.float32,
                 device=None):
        num_blocks = _checks.check_positive_int("num_blocks", num_blocks)
        self.block_size = _checks.check_positive_int("block_size", block_size)
        self.num_kv_heads = _checks.check_positive_int("num_kv_heads", num_kv_heads)
        self.d_head = _checks.check_positive_int("d_head", d_head)
        dtype = _checks.check_dtype_arg("dtype", dtype) or torch.get_default_dtype()
        device = _checks.check_device_arg("device", device)
        shape = (num_blocks, self.num_kv_heads, self.block_size, self.d_head)
        self.key_blocks = torch.zeros(shape, dtype=dtype, device=device)  # (num_blocks, Hkv, S, Dh)
        self.value_blocks = torch.zeros(shape, dtype=dtype, device=device)
        self._free = list(range(num_blocks - 1, -1, -1))  # pop() hands out 0, 1, 2, ...
        self._tables = {}  # seq_id -> [physical block ids], logical block i -> table[i]
        self._lengths = {}  # seq_id -> positions written

    # --- what the pool holds --------------------------------------------------------------------

    @property
    def num_blocks(self):
        return self.key_blocks.size(0)

    @property
    def dtype(self):
        return self.key_blocks.dtype

    @property
    def device(self):
        return self.key_blocks.device

    @property
    def num_free_blocks(self):
        return len(self._free)

    @property
    def seq_ids(self):
        """The sequences holding blocks, in the order they arrived."""
        return list(self._tables)

    def __contains__(self, seq_id):
        return seq_id in self._tables

    def _known(self, seq_id):
        _check_seq_id(seq_id)
        if seq_id not in self._tables:
            raise ValueError(f"seq_id {seq_id!r} is not in the cache, which holds the "
                             f"sequences {self.seq_ids} (a sequence enters it with its first "
                             f"append)")
        return seq_id

    def length(self, seq_id):
        """Positions written for ``seq_id``, L (0 for a sequence not in the cache)."""
        return self._lengths.get(_check_seq_id(seq_id), 0)

    def block_table(self, seq_id):
        """The physical blocks of ``seq_id``, a list of ints: position p is in block
        ``table[p // block_size]``, slot ``p % block_size`` ([] for a sequence not in the
        cache)."""
        return list(self._tables.get(_check_seq_id(seq_id), []))

    # --- bytes ------------------------------------------------------------------------------

    @property
    def bytes_per_block(self):
        """Keys and values of one block: 2 * Hkv * S * Dh * (bytes per number)."""
        return 2 * self.key_blocks[0].numel() * self.key_blocks.element_size()

    @property
    def nbytes(self):
        """The pool's bytes (keys and values, allocated once), num_blocks * bytes_per_block."""
        return self.num_blocks * self.bytes_per_block

    @property
    def nbytes_in_use(self):
        """The bytes of the blocks that sequences hold."""
        return (self.num_blocks - self.num_free_blocks) * self.bytes_per_block

    @property
    def nbytes_wasted(self):
        """The bytes of held blocks not yet written (the slots after each sequence's last
        position in its last block), fewer than ``block_size`` slots per sequence."""
        per_position = self.bytes_per_block // self.block_size
        return self.nbytes_in_use - sum(self._lengths.values()) * per_position

    # --- writing, reading, freeing ----------------------------------------------------------

    def _check_new(self, k, v):
        """k, v (Hkv, Lk, Dh): the pool's heads, d_head, dtype and device; no autograd graph."""
        Hkv, Dh = self.num_kv_heads, self.d_head
        for name, x in (("k", k), ("v", v)):
            _checks.check_float_tensor(name, x)
            if x.dim() != 3 or x.size(0) != Hkv or x.size(-1) != Dh:
                raise ValueError(
                    f"{name} must have shape (Hkv, Lk, Dh) = ({Hkv}, Lk, {Dh}), the pool's "
                    f"num_kv_heads and d_head; got shape {_checks._shape(x)}")
            if x.dtype != self.dtype:
                raise TypeError(f"{name} has dtype {x.dtype} but the pool holds {self.dtype}; "
                                f"convert it with {name}.to({self.dtype})")
            if not _checks._same_device(x.device, self.device):
                raise ValueError(f"{name} is on device {x.device} but the pool is on "
                                 f"{self.device}; move it with {name}.to({str(self.device)!r})")
            if x.requires_grad and torch.is_grad_enabled():
                raise ValueError(
                    f"{name} requires grad, but the paged cache stores values for inference, "
                    f"not an autograd graph: decode under torch.no_grad()")
        if k.size(1) != v.size(1):
            raise ValueError(f"k and v must have the same number of new positions Lk; got "
                             f"{k.size(1)} and {v.size(1)}")

    def append(self, seq_id, k, v):
        """Write k, v (Hkv, Lk, Dh) after the positions ``seq_id`` holds (a new ``seq_id``
        starts a sequence), taking ceil((L + Lk) / S) - (blocks held) blocks from the free list.
        When the pool has fewer free blocks than that, a RuntimeError, and nothing is written."""
        _check_seq_id(seq_id)
        self._check_new(k, v)
        S, Lk = self.block_size, k.size(1)
        table = self._tables.get(seq_id, [])
        L = self._lengths.get(seq_id, 0)
        need = -(-(L + Lk) // S) - len(table)  # ceil((L + Lk) / S): the blocks it will fill
        if need > len(self._free):
            raise RuntimeError(
                f"the pool is full: sequence {seq_id!r} ({L} positions) needs {need} more "
                f"block(s) of {S} positions for {Lk} new one(s), but only {len(self._free)} of "
                f"{self.num_blocks} blocks are free ({len(self._tables)} sequence(s) hold the "
                f"others); free a finished sequence with cache.free(seq_id), or build the "
                f"PagedKVCache with more num_blocks")
        table = table + [self._free.pop() for _ in range(need)]
        self._tables[seq_id], self._lengths[seq_id] = table, L + Lk
        if Lk == 0:
            return
        positions = torch.arange(L, L + Lk, device=self.device)  # (Lk,)
        blocks = torch.tensor(table, device=self.device)[positions // S]  # (Lk,) physical ids
        slots = positions % S  # (Lk,)
        # pool[blocks, :, slots] is (Lk, Hkv, Dh): the advanced indices' axis comes first
        self.key_blocks[blocks, :, slots] = k.transpose(0, 1)  # (Hkv, Lk, Dh) -> (Lk, Hkv, Dh)
        self.value_blocks[blocks, :, slots] = v.transpose(0, 1)

    def gather(self, seq_id):
        """The keys and values of ``seq_id`` in order, contiguous: two (Hkv, L, Dh) tensors (a
        copy, read block by block through the block table)."""
        self._known(seq_id)
        table = torch.tensor(self._tables[seq_id], dtype=torch.long, device=self.device)
        L, Hkv, Dh = self._lengths[seq_id], self.num_kv_heads, self.d_head

        def read(pool):  # (n, Hkv, S, Dh) -> (Hkv, n, S, Dh) -> (Hkv, n * S, Dh) -> (Hkv, L, Dh)
            return pool[table].transpose(0, 1).reshape(Hkv, -1, Dh)[:, :L]

        return read(self.key_blocks), read(self.value_blocks)

    def free(self, seq_id):
        """Forget ``seq_id`` and return its blocks to the free list (the next sequence to grow
        takes them first). Their contents are not cleared: a block is written before it is read."""
        self._known(seq_id)
        self._free.extend(reversed(self._tables.pop(seq_id)))
        del self._lengths[seq_id]

    def reset(self):
        """Free every sequence."""
        for seq_id in self.seq_ids:
            self.free(seq_id)

    def sequence(self, seq_id):
        """``seq_id`` as the ``KVCache`` a layer decodes with: ``layer(x, is_causal=True,
        cache=cache.sequence(seq_id))``, x (1, Lq, D). See ``PagedSequence``."""
        return PagedSequence(self, _check_seq_id(seq_id))

    def __repr__(self):
        return (f"PagedKVCache(num_blocks={self.num_blocks}, block_size={self.block_size}, "
                f"num_kv_heads={self.num_kv_heads}, d_head={self.d_head}, dtype={self.dtype}, "
                f"device={self.device}, sequences={len(self._tables)}, "
                f"free_blocks={self.num_free_blocks}, nbytes={self.nbytes}, "
                f"nbytes_in_use={self.nbytes_in_use})")


class PagedSequence(KVCache):
    """One sequence of a ``PagedKVCache``, behaving as the ``KVCache`` of a batch of one: what
    ``MultiHeadAttention.forward(cache=...)`` (and ``RotaryMultiHeadAttention``'s) uses:
    ``seq_len``, ``start`` (0), ``window`` (None), ``append(k, v)`` taking and returning
    (1, Hkv, L, Dh), ``keys``/``values`` (gathered from the blocks, or None while empty),
    ``nbytes`` (the bytes of the blocks it holds) and ``reset()`` (``free``).

    It holds no tensors: the positions live in the pool's blocks, so several handles of one
    seq_id are one sequence."""

    def __init__(self, pool, seq_id):  # no KVCache.__init__: the storage is the pool's
        self.pool, self.seq_id = pool, seq_id
        self.window, self.start = None, 0

    @property
    def seq_len(self):
        return self.pool.length(self.seq_id)

    @property
    def keys(self):
        return None if not self.seq_len else self.pool.gather(self.seq_id)[0][None]

    @property
    def values(self):
        return None if not self.seq_len else self.pool.gather(self.seq_id)[1][None]

    @property
    def nbytes(self):
        return len(self.pool.block_table(self.seq_id)) * self.pool.bytes_per_block

    def append(self, k, v):
        """Add k, v (1, Hkv, Lk, Dh) to the sequence; returns all its keys and values,
        (1, Hkv, L + Lk, Dh) each."""
        for name, x in (("k", k), ("v", v)):
            _checks.check_tensor(name, x)
            if x.dim() != 4 or x.size(0) != 1:
                raise ValueError(
                    f"{name} must have shape (1, Hkv, Lk, Dh): a PagedSequence is one sequence, "
                    f"decoded with a batch of size 1 (use one cache.sequence(seq_id) per "
                    f"sequence); got shape {_checks._shape(x)}")
        self.pool.append(self.seq_id, k[0], v[0])
        keys, values = self.pool.gather(self.seq_id)
        return keys[None], values[None]  # (Hkv, L, Dh) -> (1, Hkv, L, Dh)

    def reset(self):
        if self.seq_id in self.pool:
            self.pool.free(self.seq_id)

    def __repr__(self):
        return (f"PagedSequence(seq_id={self.seq_id!r}, seq_len={self.seq_len}, "
                f"block_table={self.pool.block_table(self.seq_id)})")


def paged_attention(q, cache, seq_ids, *, scale=None):
    """Attention of the newest positions of several sequences of different lengths, in one
    call, keys and values read through the block tables.

    q (N, H, Lq, Dh): the queries of the last Lq positions of sequence ``seq_ids[n]``, whose
    keys and values are already appended to ``cache`` (a ``PagedKVCache``); causal: the query
    at position p of a sequence sees its keys 0 .. p. ``scale`` None means 1 / sqrt(Dh).
    Returns (N, H, Lq, Dh).

    The block tables, padded to the longest (with block 0: those slots are masked), index the
    pool once: (N, blocks, Hkv, S, Dh), laid out as (N, Hkv, Lmax, Dh) keys; each sequence's
    length makes its mask; the package's fused SDPA wrapper (``mha.attention_functions.sdpa``)
    attends, grouped-query heads shared.
    """
    if not isinstance(cache, PagedKVCache):
        raise TypeError(f"cache must be a mha.paged.PagedKVCache; got {type(cache).__name__}")
    _checks.check_float_tensor("q", q)
    if q.dim() != 4:
        raise ValueError(f"q must have shape (N, H, Lq, Dh); got shape {_checks._shape(q)}")
    N, H, Lq, Dh = q.shape
    Hkv, S = cache.num_kv_heads, cache.block_size
    if Dh != cache.d_head or H % Hkv:
        raise ValueError(
            f"q must have d_head = {cache.d_head} features and a multiple of the pool's "
            f"num_kv_heads = {Hkv} heads; got shape {tuple(q.shape)}")
    if q.dtype != cache.dtype:
        raise TypeError(f"q has dtype {q.dtype} but the pool holds {cache.dtype}")
    if not _checks._same_device(q.device, cache.device):
        raise ValueError(f"q is on device {q.device} but the pool is on {cache.device}")
    if isinstance(seq_ids, (str, bytes)) or not isinstance(seq_ids, (list, tuple)):
        raise TypeError(f"seq_ids must be a list of sequence ids, one per row of q; got "
                        f"{_checks._kind(seq_ids)}")
    if len(seq_ids) != N:
        raise ValueError(f"seq_ids must name one sequence per row of q (N = {N}); got "
                         f"{len(seq_ids)}")
    scale = None if scale is None else _checks.check_real("scale", scale)
    lengths = []
    for seq_id in seq_ids:
        cache._known(seq_id)
        if cache.length(seq_id) < Lq:
            raise ValueError(
                f"seq_ids: sequence {seq_id!r} holds {cache.length(seq_id)} position(s) but q "
                f"has Lq = {Lq} queries per sequence: append their keys and values first")
        lengths.append(cache.length(seq_id))
    tables = [cache.block_table(s) for s in seq_ids]
    width = max(len(t) for t in tables)
    table = torch.tensor([t + [0] * (width - len(t)) for t in tables],
                         device=cache.device)  # (N, width): padded with block 0

    def read(pool):  # (N, width, Hkv, S, Dh) -> (N, Hkv, width, S, Dh) -> (N, Hkv, width*S, Dh)
        return pool[table].transpose(1, 2).reshape(N, Hkv, width * S, Dh)

    keys, values = read(cache.key_blocks), read(cache.value_blocks)
    length = torch.tensor(lengths, device=cache.device).view(N, 1, 1)  # (N, 1, 1)
    position = length - Lq + torch.arange(Lq, device=cache.device).view(1, Lq, 1)  # (N, Lq, 1)
    key_position = torch.arange(width * S, device=cache.device).view(1, 1, -1)  # (1, 1, Lmax)
    allowed = key_position <= position  # (N, Lq, Lmax): causal, and nothing past the length
    return sdpa(q, keys, values, allowed[:, None], scale=scale)  # (N, H, Lq, Dh)
