"""Attention with a fixed-size state: linear attention and the delta rule.

Softmax attention reads every cached key; these read one matrix per head, the
state S (Dk, Dv), whatever the length. Each token writes to it and reads from
it (rows of S are key features, columns value features):

- linear attention: ``S <- S + k v^T``, ``o = scale * S^T q``;
- the delta rule (DeltaNet): ``S <- S + beta * k (v - S^T k)^T`` writes the
  correction of what S already recalls for k, with a strength beta in [0, 1];
- the gated delta rule (Gated DeltaNet: Qwen3-Next, Qwen3.5): the state decays
  first, ``S <- exp(decay) * S``, decay <= 0 (log space), one per head and
  position; with one decay per key feature, ``S <- diag(exp(decay)) S``, it is
  Kimi Delta Attention (Kimi Linear).

Every function runs token by token (``chunk_size=None``: the plain recurrence,
``delta_rule_step`` in a loop) or by chunks (``chunk_size=C``: matrix products
within a chunk, the state carried from chunk to chunk), with equal results.

Shapes: B batch, Hk query/key heads, Hv value heads (a multiple of Hk:
consecutive value heads share one query/key head), L length, Dk query/key
features, Dv value features. query, key (B, Hk, L, Dk); value (B, Hv, L, Dv);
state (B, Hv, Dk, Dv); output (B, Hv, L, Dv). float16 and bfloat16 inputs are
computed in float32: the output has the input's dtype, the state float32.
"""

import math

import torch

from . import _checks
from .attention_functions import register, repeat_kv

__all__ = ["delta_rule", "delta_rule_step", "gated_delta_rule",
           "linear_attention"]


# --- the recurrence, one token -----------------------------------------------


def delta_rule_step(state, query, key, value, beta, decay=None, *,
                    scale=None):
    """One token of the (gated) delta rule: returns (output, new state).

    state (B, Hv, Dk, Dv); query, key (B, Hv, Dk) (one per value head);
    value (B, Hv, Dv); beta (B, Hv) in [0, 1]; decay None (no gate), (B, Hv)
    (Gated DeltaNet) or (B, Hv, Dk) (Kimi Delta Attention: one per key
    feature), in log space, <= 0. In order: ``S <- diag(exp(decay)) S``, then
    ``S <- S + beta * k (v - S^T k)^T``, then ``o = scale * S^T q``; scale
    defaults to 1 / sqrt(Dk). The computation is ``_delta_rule_step``.
    """
    scale = _check_step(state, query, key, value, beta, decay, scale)
    return _delta_rule_step(state, query, key, value, beta, decay, scale)


# the delta rule, one token [start]
def _delta_rule_step(S, q, k, v, beta, decay, scale):
    """S (B, Hv, Dk, Dv), q, k (B, Hv, Dk), v (B, Hv, Dv), beta (B, Hv),
    decay None, (B, Hv) or (B, Hv, Dk) -> o (B, Hv, Dv), S."""
    if decay is not None:  # forget: row d of S (key feature d) times exp(.)
        a = decay.exp()  # (B, Hv) or (B, Hv, Dk)
        a = a[..., None, None] if a.dim() == 2 else a[..., None]
        S = S * a  # (B, Hv, Dk, Dv)
    recalled = (k.unsqueeze(-2) @ S).squeeze(-2)  # S^T k: (B, Hv, Dv)
    delta = beta.unsqueeze(-1) * (v - recalled)  # the correction
    S = S + k.unsqueeze(-1) * delta.unsqueeze(-2)  # + k delta^T
    o = scale * (q.unsqueeze(-2) @ S).squeeze(-2)  # S^T q: (B, Hv, Dv)
    return o, S
# the delta rule, one token [end]


# --- linear attention ------------------------------------------------------


def linear_attention(query, key, value, *, state=None, scale=None,
                     chunk_size=None):
    """Causal linear attention, no feature map, no normaliser: per position
    t, ``S <- S + k_t v_t^T``, then ``o_t = scale * S^T q_t``. Returns
    (output (B, Hv, L, Dv), state (B, Hv, Dk, Dv)).

    The same as ``tril(Q K^T) V * scale`` (softmax attention without the
    softmax). query, key (B, Hk, L, Dk); value (B, Hv, L, Dv), Hv a multiple
    of Hk; state (B, Hv, Dk, Dv), zeros by default; scale 1 / sqrt(Dk) by
    default. ``chunk_size=None``: token by token; an int C: by chunks of C
    positions (within one the masked ``(Q K^T) V``, across them the state).
    """
    scale = _check_rule(query, key, value, state, chunk_size, scale)
    q, k, v, S, dtype = _prepare(query, key, value, state)
    out, S = _linear_attention(q, k, v, S, scale, chunk_size)
    return out.to(dtype), S


def _linear_attention(q, k, v, S, scale, chunk_size):
    """q, k (B, Hv, L, Dk), v (B, Hv, L, Dv), S (B, Hv, Dk, Dv) -> the
    output (B, Hv, L, Dv) and the last state."""
    if chunk_size is None:
        outs = []
        for t in range(q.size(2)):
            S = S + k[:, :, t, :, None] * v[:, :, t, None, :]  # + k v^T
            outs.append(scale * (q[:, :, t, None] @ S))  # (B, Hv, 1, Dv)
        return _cat(outs, v), S
    outs = []
    for start in range(0, q.size(2), chunk_size):
        c = slice(start, start + chunk_size)
        qc, kc, vc = q[:, :, c], k[:, :, c], v[:, :, c]  # (B, Hv, C, D)
        within = (qc @ kc.transpose(-2, -1)).tril()  # (B, Hv, C, C)
        outs.append(scale * (qc @ S + within @ vc))  # (B, Hv, C, Dv)
        S = S + kc.transpose(-2, -1) @ vc
    return _cat(outs, v), S


def _cat(outs, v):
    return torch.cat(outs, dim=2) if outs else v.new_zeros(v.shape)


@register("linear")
def linear_attention_function(module, q, k, v, mask=None, *, is_causal=False,
                              scale=None, dropout_p=0.0, need_weights=False):
    """The attention function ``"linear"``: causal linear attention
    (``linear_attention``), so ``MultiHeadAttention(...,
    attn_implementation="linear")`` called with ``is_causal=True`` runs it.
    q (B, H, L, Dk), k and v (B, Hkv, L, D). The weights, with
    ``need_weights``, are the unnormalised causal scores
    ``tril(q k^T) * scale`` (B, H, L, L)."""
    if mask is not None or is_causal is not True:
        got = ("no mask" if mask is None
               else f"a mask of shape {tuple(mask.shape)}")
        raise ValueError(
            f"linear attention here is causal and takes no mask: call it "
            f"with is_causal=True and no mask (no valid_lens, no KV cache); "
            f"got is_causal={is_causal!r} and {got}")
    if dropout_p:
        raise ValueError(f"linear attention takes no dropout (it forms no "
                         f"weights to drop); got dropout_p={dropout_p}")
    if q.size(2) != k.size(2):
        raise ValueError(f"causal linear attention needs as many queries as "
                         f"keys; got Lq = {q.size(2)} and Lk = {k.size(2)}")
    H = q.size(1)
    k, v = repeat_kv(k, H), repeat_kv(v, H)  # (B, H, L, D)
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    if need_weights:  # the parallel form: (B, H, L, L) scores
        weights = (q @ k.transpose(-2, -1) * scale).tril()
        return weights @ v, weights
    return linear_attention(q, k, v, scale=scale, chunk_size=64)[0], None


# --- the delta rule and the gated delta rule --------------------------------


def delta_rule(query, key, value, beta, *, state=None, scale=None,
               chunk_size=None):
    """The delta rule (DeltaNet): per position t,
    ``S <- S + beta_t * k_t (v_t - S^T k_t)^T``, then ``o_t = scale * S^T
    q_t``. The gated delta rule with decay 0 (``gated_delta_rule``, which
    says the shapes); beta (B, Hv, L). Returns (output, state)."""
    decay = beta.new_zeros(()) if isinstance(beta, torch.Tensor) else None
    if decay is not None and beta.dim() == 3:
        decay = decay.expand(beta.shape)  # (B, Hv, L), no memory
    return gated_delta_rule(query, key, value, decay, beta, state=state,
                            chunk_size=chunk_size, scale=scale)


def gated_delta_rule(query, key, value, decay, beta, *, state=None,
                     chunk_size=None, scale=None):
    """The gated delta rule of Gated DeltaNet: per position t, with S the
    state, ``S <- exp(decay_t) * S``, then
    ``S <- S + beta_t * k_t (v_t - S^T k_t)^T``, then ``o_t = scale * S^T
    q_t``. Returns (output (B, Hv, L, Dv), state (B, Hv, Dk, Dv)).

    query, key (B, Hk, L, Dk); value (B, Hv, L, Dv), Hv a multiple of Hk
    (value head h reads query/key head h // (Hv / Hk)); decay (B, Hv, L), or
    (B, Hv, L, Dk) for one decay per key feature (Kimi Delta Attention,
    ``S <- diag(exp(decay_t)) S``), in log space, <= 0; beta (B, Hv, L) in
    [0, 1]; state zeros by default; scale 1 / sqrt(Dk) by default. No
    normalisation of query or key inside (the layer does that).

    ``chunk_size=None`` runs the recurrence, ``delta_rule_step`` token by
    token; an int C the chunked form (``_chunked_delta_rule``): equal for
    every C and every length. A state handed from one call to the next
    continues the sequence.
    """
    scale = _check_rule(query, key, value, state, chunk_size, scale,
                        decay=decay, beta=beta)
    q, k, v, S, dtype = _prepare(query, key, value, state)
    decay, beta = decay.to(v.dtype), beta.to(v.dtype)
    out, S = _gated_delta_rule(q, k, v, decay, beta, S, scale, chunk_size)
    return out.to(dtype), S


def _gated_delta_rule(q, k, v, decay, beta, S, scale, chunk_size):
    """Checked inputs, q and k repeated to Hv heads -> (output, state)."""
    if chunk_size is not None:
        return _chunked_delta_rule(q, k, v, decay, beta, S, scale, chunk_size)
    outs = []
    for t in range(q.size(2)):  # the reference: one token at a time
        g = decay[:, :, t]  # (B, Hv) or (B, Hv, Dk)
        o, S = _delta_rule_step(S, q[:, :, t], k[:, :, t], v[:, :, t],
                                beta[:, :, t], g, scale)
        outs.append(o)  # (B, Hv, Dv)
    out = torch.stack(outs, dim=2) if outs else v.new_zeros(v.shape)
    return out, S  # (B, Hv, L, Dv), (B, Hv, Dk, Dv)


def _chunked_delta_rule(q, k, v, decay, beta, S, scale, C):
    """The gated delta rule by chunks of C positions: (output, state).

    Within a chunk, with G the cumulative log decay since the chunk began
    (per position, or per position and key feature) and S0 the state
    before it:

    - the chunk's writes interact through the strictly lower-triangular
      A[i, j] = beta_i k_i . k_j exp(G_i - G_j) (j < i); one solve of the
      unit-lower-triangular (I + A) X = [beta v | beta k exp(G)] (the UT
      transform) gives U and W, and the chunk writes the values
      ``V' = U - W S0`` (what S0 already recalls taken out: the delta);
    - the outputs are ``q exp(G) S0 + P V'``, with P[i, j] = q_i . k_j
      exp(G_i - G_j) (j <= i) the decayed causal scores of the chunk;
    - the state after it is ``diag(exp(G_last)) S0 + Kd^T V'``, with
      Kd = k exp(G_last - G) (each key decayed to the chunk's end).

    A, P, U and W are computed for all chunks at once, then a scan over the
    chunks carries the state (two small matrix products per chunk), then
    the outputs of all chunks at once. With one decay per key feature, a
    chunk over which the decay spans too much is computed as two halves
    (``_too_wide``): the result is the same.
    """
    B, H, L, Dk = k.shape
    Dv, N = v.size(-1), -(-L // C)  # N chunks, the last one maybe short
    if L == 0:
        return v.new_zeros(v.shape), S
    pad = N * C - L  # zeros: beta 0 writes nothing, decay 0 keeps the state
    channel = decay.dim() == 4  # one decay per key feature (Kimi)
    g = decay if channel else decay[..., None]  # (B, H, L, 1|Dk)
    g = torch.nn.functional.pad(g, (0, 0, 0, pad)) if pad else g
    G = g.reshape(B, H, N, C, g.size(-1)).cumsum(dim=3)  # (B, H, N, C, 1|Dk)
    if channel and _too_wide(G):  # halve the chunks (see _pairwise_channel)
        return _chunked_delta_rule(q, k, v, decay, beta, S, scale, C // 2)
    q = q * scale
    if pad:
        q, k, v = (torch.nn.functional.pad(x, (0, 0, 0, pad))
                   for x in (q, k, v))
        beta = torch.nn.functional.pad(beta, (0, pad))
    # (B, H, N*C, D) -> (B, H, N, C, D): chunks of C positions
    q, k, v = (x.reshape(B, H, N, C, x.size(-1)) for x in (q, k, v))
    beta = beta.reshape(B, H, N, C, 1)
    kb = k * beta  # (B, H, N, C, Dk)
    if channel:
        A, P = _pairwise_channel(kb, q, k, G)  # (B, H, N, C, C) each
    else:
        A, P = _pairwise_scalar(kb, q, k, G[..., 0])
    eG = G.exp()  # (B, H, N, C, 1|Dk)
    rhs = torch.cat([v * beta, kb * eG], dim=-1)  # (B, H, N, C, Dv + Dk)
    UW = torch.linalg.solve_triangular(A, rhs, upper=False,
                                       unitriangular=True)
    U, W = UW[..., :Dv], UW[..., Dv:]  # (B, H, N, C, Dv), (.., C, Dk)
    G_last = G[..., -1:, :]  # (B, H, N, 1, 1|Dk)
    KdT = (k * (G_last - G).exp()).transpose(-2, -1)  # (B, H, N, Dk, C)
    keep = G_last.exp().transpose(-2, -1)  # (B, H, N, 1|Dk, 1)
    before, writes = [], []  # S0 and V' of each chunk
    for n in range(N):  # the scan: (B*H) products of (C, Dk) @ (Dk, Dv)
        before.append(S)
        V = torch.baddbmm(U[:, :, n].reshape(B * H, C, Dv),
                          W[:, :, n].reshape(B * H, C, Dk),
                          S.reshape(B * H, Dk, Dv), alpha=-1)  # U - W S0
        S = torch.baddbmm((S * keep[:, :, n]).reshape(B * H, Dk, Dv),
                          KdT[:, :, n].reshape(B * H, Dk, C), V)
        S = S.view(B, H, Dk, Dv)
        writes.append(V.view(B, H, C, Dv))
    S0 = torch.stack(before, dim=2).view(-1, Dk, Dv)  # (B*H*N, Dk, Dv)
    V = torch.stack(writes, dim=2).view(-1, C, Dv)  # (B*H*N, C, Dv)
    out = torch.baddbmm(P.reshape(-1, C, C) @ V,
                        (q * eG).reshape(-1, C, Dk), S0)  # (B*H*N, C, Dv)
    out = out.view(B, H, N * C, Dv)[:, :, :L]  # (B, H, L, Dv)
    return out, S


def _pairwise_scalar(kb, q, k, G):
    """A (strictly lower) and P (lower) of ``_chunked_delta_rule`` for one
    decay per position: G (B, H, N, C) -> two (B, H, N, C, C)."""
    C = G.size(-1)
    upper = torch.ones(C, C, dtype=torch.bool, device=G.device).triu(1)
    # exp(G_i - G_j) for j <= i, else 0 (never exp of a positive number)
    D = (G[..., :, None] - G[..., None, :]).masked_fill(upper, -torch.inf)
    D = D.exp()  # (B, H, N, C, C)
    kT = k.transpose(-2, -1)  # (B, H, N, Dk, C)
    return (kb @ kT) * D, (q @ kT) * D


def _pairwise_channel(kb, q, k, G):
    """A and P for one decay per key feature, G (B, H, N, C, Dk): the decay
    between positions j <= i differs per feature, so it is split at the
    chunk's middle m, exp(G_i - G_j) = exp(G_i - G_m) exp(G_m - G_j), and A
    and P are products of (C, Dk) matrices. Every factor is at most
    exp(spread), spread = max |G_i - G_m| over the chunk, which
    ``_too_wide`` keeps small enough (halving the chunks if needed) that
    nothing overflows, not even above the diagonal (masked)."""
    C = G.size(-2)
    Gm = G[..., C // 2:C // 2 + 1, :]  # (B, H, N, 1, Dk)
    kT = (k * (Gm - G).exp()).transpose(-2, -1)  # (B, H, N, Dk, C)
    up = (G - Gm).exp()  # (B, H, N, C, Dk)
    upper = torch.ones(C, C, dtype=torch.bool, device=G.device).triu(1)
    A = ((kb * up) @ kT).masked_fill(upper, 0.0)  # (B, H, N, C, C)
    P = ((q * up) @ kT).masked_fill(upper, 0.0)
    return A, P


#: the largest spread of the cumulative log decay within half a chunk that
#: ``_pairwise_channel`` factorises: exp(2 * spread) stays finite
_SPREAD = {torch.float32: 40.0, torch.float64: 300.0}


def _too_wide(G):
    """Whether a chunk's per-feature decay spans more than ``_SPREAD`` from
    its middle (G cumulative, (B, H, N, C, Dk)); chunks of 1 never do."""
    C = G.size(-2)
    if C == 1:
        return False
    Gm = G[..., C // 2, :]  # (B, H, N, Dk); G decreases along the chunk
    spread = torch.maximum(G[..., 0, :] - Gm, Gm - G[..., -1, :]).max()
    return bool(spread > _SPREAD.get(G.dtype, 40.0))


# --- shared preparation and checks -------------------------------------------


def _prepare(query, key, value, state):
    """Checked inputs -> q and k repeated to Hv heads, in the compute dtype
    (float32 for float16 and bfloat16), the state (zeros by default), and
    the dtype to return."""
    dtype = value.dtype
    compute = (torch.float32 if dtype in (torch.float16, torch.bfloat16)
               else dtype)
    Hv = value.size(1)
    # (B, Hk, L, Dk) -> (B, Hv, L, Dk): value head h reads head h // (Hv/Hk)
    q, k = (repeat_kv(x, Hv).to(compute) for x in (query, key))
    v = value.to(compute)
    B, _, _, Dk = key.shape
    if state is None:
        S = v.new_zeros(B, Hv, Dk, v.size(-1))
    else:
        S = state.to(compute)
    return q, k, v, S, dtype


def _check_tensors(names_tensors, reference):
    """Floating-point tensors on the device of ``reference`` (name, tensor).
    """
    for name, x in names_tensors:
        _checks.check_float_tensor(name, x)
        _checks.check_same_device(*reference, name, x)


def _check_rule(query, key, value, state, chunk_size, scale, *, decay=None,
                beta=None):
    """The arguments of ``linear_attention`` and ``gated_delta_rule``:
    returns the scale as a float (1 / sqrt(Dk) by default)."""
    _checks.check_float_tensor("query", query)
    _check_tensors([("key", key), ("value", value)], ("query", query))
    for name, x in (("query", query), ("key", key), ("value", value)):
        if x.dim() != 4:
            what = "(B, Hv, L, Dv)" if name == "value" else "(B, Hk, L, Dk)"
            raise ValueError(f"{name} must have shape {what}; got shape "
                             f"{tuple(x.shape)}")
    _checks.check_same_dtype("query", query, ("key", key), ("value", value))
    if key.shape != query.shape:
        raise ValueError(f"query and key must have the same shape (B, Hk, L, "
                         f"Dk); got query {tuple(query.shape)} and key "
                         f"{tuple(key.shape)}")
    B, Hk, L, Dk = key.shape
    Hv, Dv = value.size(1), value.size(3)
    if value.size(0) != B or value.size(2) != L:
        raise ValueError(f"value must have key's batch size B = {B} and "
                         f"length L = {L}, shape (B, Hv, L, Dv); got shape "
                         f"{tuple(value.shape)}")
    if Hv % Hk:
        raise ValueError(f"value's heads Hv ({Hv}) must be a multiple of "
                         f"key's heads Hk ({Hk}): consecutive value heads "
                         f"share one query/key head")
    if decay is not None or beta is not None:
        _check_gates(decay, beta, B, Hv, L, Dk, ("query", query))
    if state is not None:
        _check_tensors([("state", state)], ("query", query))
        if tuple(state.shape) != (B, Hv, Dk, Dv):
            raise ValueError(f"state must have shape (B, Hv, Dk, Dv) = "
                             f"({B}, {Hv}, {Dk}, {Dv}); got shape "
                             f"{tuple(state.shape)}")
    if chunk_size is not None:
        _checks.check_positive_int("chunk_size", chunk_size)
    return _scale(scale, Dk)


def _check_gates(decay, beta, B, Hv, L, Dk, reference):
    _check_tensors([("beta", beta), ("decay", decay)], reference)
    if tuple(beta.shape) != (B, Hv, L):
        raise ValueError(f"beta must have shape (B, Hv, L) = ({B}, {Hv}, "
                         f"{L}); got shape {tuple(beta.shape)}")
    if tuple(decay.shape) not in {(B, Hv, L), (B, Hv, L, Dk)}:
        raise ValueError(f"decay must have shape (B, Hv, L) = ({B}, {Hv}, "
                         f"{L}) (one per head and position) or (B, Hv, L, Dk)"
                         f" = ({B}, {Hv}, {L}, {Dk}) (one per key feature); "
                         f"got shape {tuple(decay.shape)}")
    _check_values(decay, beta)


def _check_values(decay, beta):
    """decay <= 0 and beta in [0, 1] (one pass over each; NaN passes)."""
    if decay is not None and decay.numel():
        top = float(decay.detach().max())
        if top > 0:
            raise ValueError(f"decay must be <= 0 (log space: the state is "
                             f"multiplied by exp(decay) <= 1); got max "
                             f"{top:.4g}")
    if beta.numel():
        low, high = (float(x) for x in torch.aminmax(beta.detach()))
        if low < 0 or high > 1:
            raise ValueError(f"beta must be in [0, 1] (how much of the "
                             f"correction each token writes); got values "
                             f"from {low:.4g} to {high:.4g}")


def _scale(scale, Dk):
    if scale is not None:
        return _checks.check_real("scale", scale)
    if Dk == 0:
        raise ValueError("key has 0 features: the default scale 1 / sqrt(Dk)"
                         " needs Dk >= 1")
    return 1 / math.sqrt(Dk)


def _check_step(state, query, key, value, beta, decay, scale):
    """The arguments of ``delta_rule_step``: returns the scale."""
    _checks.check_float_tensor("state", state)
    _check_tensors([("query", query), ("key", key), ("value", value),
                    ("beta", beta)], ("state", state))
    if state.dim() != 4:
        raise ValueError(f"state must have shape (B, Hv, Dk, Dv); got shape "
                         f"{tuple(state.shape)}")
    B, Hv, Dk, Dv = state.shape
    want = {"query": (B, Hv, Dk), "key": (B, Hv, Dk), "value": (B, Hv, Dv),
            "beta": (B, Hv)}
    for name, x in (("query", query), ("key", key), ("value", value),
                    ("beta", beta)):
        if tuple(x.shape) != want[name]:
            raise ValueError(f"{name} must have shape {want[name]} (state is "
                             f"(B, Hv, Dk, Dv) = {tuple(state.shape)}); got "
                             f"shape {tuple(x.shape)}")
    if decay is not None:
        _check_tensors([("decay", decay)], ("state", state))
        if tuple(decay.shape) not in {(B, Hv), (B, Hv, Dk)}:
            raise ValueError(f"decay must be None or have shape (B, Hv) = "
                             f"({B}, {Hv}) or (B, Hv, Dk) = ({B}, {Hv}, {Dk});"
                             f" got shape {tuple(decay.shape)}")
    _check_values(decay, beta)
    return _scale(scale, Dk)
