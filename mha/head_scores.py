"""Scores that say what kind of head a head is, from its attention weights.

Following Olsson et al. (2022), "In-context learning and induction heads":

- `previous_token_score`: the mean weight a query puts on the position just before it.
- `induction_score`: on a sequence made of a random block and the same block again
  (`repeated_sequence`), the mean weight a query of the second copy puts on the position right
  after its own earlier occurrence (the prefix-matching pattern). A head that does nothing
  special puts about 1 / (i + 1) there.
- `prefix_match_score`: the same idea on any text: the weight a query at ``i`` puts on keys
  ``j <= i`` whose ``n`` preceding characters equal the ``n`` characters ending at ``i``.
- `repeated_sequence_losses`: the per-token loss on the first and on the second copy; the drop
  is the in-context learning that induction heads buy.

Shapes: B batch, H heads, L length, T the length of one random block.
"""

from __future__ import annotations

import torch

from . import _checks


def _check_weights(weights):
    _checks.check_float_tensor("weights", weights)
    if weights.dim() != 4 or weights.size(-1) != weights.size(-2):
        raise ValueError(f"weights must have shape (B, H, L, L); got {tuple(weights.shape)}")


def previous_token_score(weights: torch.Tensor) -> torch.Tensor:
    """weights (B, H, L, L) -> (H,): mean over queries 1..L-1 (and the batch) of the weight on
    the key right before the query."""
    _check_weights(weights)
    if weights.size(-1) < 2:
        raise ValueError("weights must cover at least 2 positions for a previous-token score")
    diag = weights.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, L-1): w[i, i-1]
    return diag.mean(dim=(0, 2))


def repeated_sequence(vocab_size: int, length: int, batch: int = 8, *, seed: int = 0,
                      low: int = 0) -> torch.Tensor:
    """(batch, 2 * length) ids: a uniform random block of ids in [low, vocab_size), twice."""
    _checks.check_positive_int("length", length)
    _checks.check_positive_int("batch", batch)
    if not 0 <= low < vocab_size:
        raise ValueError(f"low must lie in [0, vocab_size = {vocab_size}); got {low}")
    gen = torch.Generator().manual_seed(seed)
    block = torch.randint(low, vocab_size, (batch, length), generator=gen)  # (B, T)
    return torch.cat([block, block], dim=1)  # (B, 2T)


def induction_score(weights: torch.Tensor, length: int) -> torch.Tensor:
    """weights (B, H, 2T, 2T) on a `repeated_sequence` with block length T = ``length``
    -> (H,): mean over the second copy's queries i = T..2T-1 of w[i, i - T + 1], the weight on
    the token that followed the query's token last time."""
    _check_weights(weights)
    if weights.size(-1) != 2 * length:
        raise ValueError(f"weights cover {weights.size(-1)} positions; a repeated sequence "
                         f"with length = {length} has {2 * length}")
    diag = weights.diagonal(offset=-(length - 1), dim1=-2, dim2=-1)  # (B, H, T+1)
    return diag[..., 1:].mean(dim=(0, 2))  # queries T..2T-1


def prefix_match_targets(ids: torch.Tensor, n: int = 2) -> torch.Tensor:
    """ids (L,) -> bool (L, L): True at (i, j) when j <= i, j >= n and ids[j-n:j] equals
    ids[i-n+1:i+1] (the n tokens before key j are the n tokens ending at query i)."""
    if ids.dim() != 1:
        raise ValueError(f"ids must have shape (L,); got {tuple(ids.shape)}")
    _checks.check_positive_int("n", n)
    L = ids.size(0)
    match = torch.ones(L, L, dtype=torch.bool)
    for k in range(n):
        # query side: token i - k; key side: token j - 1 - k
        q = torch.full((L,), -1, dtype=torch.long)
        q[k:] = ids[: L - k]
        kk = torch.full((L,), -2, dtype=torch.long)
        kk[k + 1:] = ids[: L - k - 1]
        match &= (q[:, None] == kk[None, :]) & (q[:, None] >= 0)
    return match & torch.ones(L, L, dtype=torch.bool).tril()


def prefix_match_score(weights: torch.Tensor, ids: torch.Tensor, n: int = 2) -> torch.Tensor:
    """weights (1, H, L, L) or (H, L, L) for the text ``ids`` (L,) -> (H,): over the queries
    that have at least one earlier match (see `prefix_match_targets`), the mean total weight on
    their matches. NaN where no query has a match."""
    if weights.dim() == 3:
        weights = weights[None]
    _check_weights(weights)
    targets = prefix_match_targets(ids, n)  # (L, L)
    rows = targets.any(dim=-1)  # (L,)
    if not rows.any():
        return torch.full((weights.size(1),), float("nan"))
    per_row = (weights[0] * targets).sum(-1)  # (H, L)
    return per_row[:, rows].mean(-1)


@torch.no_grad()
def repeated_sequence_losses(model, ids: torch.Tensor, length: int, *, head_mask=None):
    """Mean next-token loss (nats) over the first copy's predictions (tokens 1..T-1) and the
    second copy's (tokens T+1..2T-1, which the first copy gives away): ``(first, second)``."""
    loss = model.loss_per_token(ids, head_mask=head_mask)  # (B, 2T-1): predicts 1..2T-1
    return float(loss[:, : length - 1].mean()), float(loss[:, length:].mean())
