"""Generating a sequence token by token, with a key/value cache per layer or without one.

Shape legend: B batch, Ls source length, L target tokens fed in, C target vocabulary, D d_model
(see ``mha.functional``).

The model is the tiny translator of ``mha_book.tiny`` (``TinyEncoderDecoder``): the encoder reads the
source once; the decoder writes the target one token at a time, each new token fed back in. Its
causal self-attention is where a cache pays: token t's key and value never change once computed,
so ``use_cache=True`` keeps them in one ``KVCache`` per decoder layer and feeds in only the newest
token, while ``use_cache=False`` runs the decoder over the whole prefix again at every step
(recomputing every past key and value). Both give the same tokens and logits.
"""

import torch

from mha.cache import KVCache

__all__ = ["decoder_logits", "generate", "new_caches"]


def new_caches(model):
    """One empty ``KVCache`` per decoder layer of ``model``."""
    return [KVCache() for _ in model.decoder.layers]


def decoder_logits(model, ids, memory, *, caches=None, start=0, src_valid_lens=None):
    """Logits (B, L, C) for the target ids (B, L) at positions start .. start + L - 1.

    memory (B, Ls, D): the encoder's output. ``caches``: one ``KVCache`` per decoder layer,
    holding the keys and values of positions 0 .. start - 1 (the new ones are appended); or None,
    and then ``ids`` must be the whole prefix (``start`` = 0). The blocks run exactly as in
    ``model.decoder``, with ``cache=`` passed to their causal self-attention.
    """
    decoder, L = model.decoder, ids.size(1)
    if caches is None and start != 0:
        raise ValueError(f"start must be 0 without caches (the whole prefix); got start={start}")
    if caches is not None and any(c.seq_len != start for c in caches):
        raise ValueError(f"every cache must hold start = {start} positions; they hold "
                         f"{[c.seq_len for c in caches]}")
    if start + L > decoder.embed.max_len:
        raise ValueError(f"positions up to {start + L - 1} exceed the model's max_len "
                         f"({decoder.embed.max_len})")
    positions = torch.arange(start, start + L, device=ids.device)  # (L,)
    y = decoder.embed.tokens(ids) + decoder.embed.positions(positions)  # (B, L, D)
    for n, block in enumerate(decoder.layers):
        y = _block(block, y, memory, None if caches is None else caches[n], src_valid_lens)
    return model.readout(decoder.norm(y))  # (B, L, D) -> (B, L, C)


def _block(block, y, memory, cache, src_valid_lens):
    """``DecoderBlock.forward`` with a cache for the self-attention: (B, L, D) -> (B, L, D)."""

    def self_attention(h):
        return block.self_attn(h, is_causal=True, cache=cache)[0]

    def cross_attention(h):  # the source does not grow: no cache needed
        return block.cross_attn(h, memory, valid_lens=src_valid_lens)[0]

    y = block.res_self(y, self_attention)
    y = block.res_cross(y, cross_attention)
    return block.res_ff(y, block.ff)


@torch.no_grad()
def generate(model, src, length, *, bos=0, use_cache=True, src_valid_lens=None):
    """Greedy decoding of ``length`` tokens: src (B, Ls) -> tokens (B, length), logits
    (B, length, C), the logits of step t being the ones token t was chosen from.

    ``use_cache=True``: one ``KVCache`` per decoder layer, and each step feeds in only the
    newest token. ``use_cache=False``: each step runs the decoder over the whole prefix again.
    """
    memory = model.encoder(src, valid_lens=src_valid_lens)  # (B, Ls, D), computed once
    ids = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)  # (B, 1)
    caches = new_caches(model) if use_cache else None
    steps = []
    for t in range(length):
        if use_cache:  # the newest token only; its key and value join the caches
            logits = decoder_logits(model, ids[:, -1:], memory, caches=caches, start=t,
                                    src_valid_lens=src_valid_lens)  # (B, 1, C)
        else:  # the whole prefix: every past key and value computed again
            logits = decoder_logits(model, ids, memory, src_valid_lens=src_valid_lens)
        steps.append(logits[:, -1])  # (B, C)
        ids = torch.cat([ids, steps[-1].argmax(-1, keepdim=True)], dim=1)  # (B, t + 2)
    return ids[:, 1:], torch.stack(steps, dim=1)  # (B, length), (B, length, C)
