"""Layers with a fixed-size state: Gated DeltaNet (Qwen3-Next, Qwen3.5) and
Kimi Delta Attention (Kimi Linear).

Both project the input to queries, keys and values, pass them through a short
causal depthwise convolution (with SiLU), l2-normalise each head's queries
and keys, and run the gated delta rule (``mha.fixed_state``) with a
strength ``beta = sigmoid(W_b x)`` and a decay computed from the input; each
head's output is RMS-normalised and gated before ``W_o``. Gated DeltaNet has
one decay per head and position and a SiLU output gate; Kimi Delta
Attention one decay per head, position and key feature and a sigmoid gate.

The state a layer carries from call to call, a ``RecurrentState``, is the
convolution's last inputs and the (B, Hv, Dk, Dv) matrix: its size does not
depend on the length. Shapes: B batch, L length, D d_model, H query/key
heads, Hv value heads, Dk and Dv their features.
"""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from . import _checks
from .fixed_state import _delta_rule_step, _gated_delta_rule

__all__ = ["GatedDeltaNet", "KimiDeltaAttention", "RecurrentState"]


class RecurrentState(NamedTuple):
    """What a ``GatedDeltaNet`` or ``KimiDeltaAttention`` carries from one
    call to the next: ``conv`` (B, channels, conv_size - 1), the last inputs
    of the causal convolution, and ``matrix`` (B, Hv, Dk, Dv), the state of
    the delta rule. Feed it back (``state=``) to continue the sequence."""

    conv: torch.Tensor
    matrix: torch.Tensor

    @property
    def nbytes(self):
        """The bytes of both tensors, the same at every length."""
        return sum(x.numel() * x.element_size() for x in self)


# --- the pieces both layers share --------------------------------------------


def causal_conv(x, weight, past=None):
    """Depthwise causal convolution then SiLU: x (B, L, channels), weight
    (channels, 1, K), past (B, channels, K - 1) the inputs before x (zeros
    by default) -> (output (B, L, channels), the last K - 1 inputs)."""
    x = x.transpose(1, 2)  # (B, channels, L)
    K = weight.size(-1)
    if past is None:
        past = x.new_zeros(x.size(0), x.size(1), K - 1)
    full = torch.cat([past.to(x.dtype), x], dim=-1)  # (B, ch, K - 1 + L)
    out = F.conv1d(full, weight, groups=x.size(1))  # (B, channels, L)
    return F.silu(out).transpose(1, 2), full[..., full.size(-1) - K + 1:]


def gated_rms_norm(x, gate, weight, eps, activation):
    """Each head's RMSNorm times ``weight``, times ``activation(gate)``, in
    float32 at least: x and gate (B, L, H, Dv), weight (Dv,) -> x's dtype.
    """
    c = _compute(x.dtype)
    h = x.to(c)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (weight.to(c) * h * activation(gate.to(c))).to(x.dtype)


def l2norm(x, eps=1e-6):
    """x * rsqrt(sum(x^2) + eps) over the last axis (Qwen's form), in
    float32 at least."""
    h = x.to(_compute(x.dtype))
    return (h * torch.rsqrt(h.pow(2).sum(-1, keepdim=True) + eps)).to(x.dtype)


class _DeltaLayer(nn.Module):
    """The forward pass both layers share; a subclass gives its
    projections (``_inputs``) and its output gate (``_gate``)."""

    def forward(self, x, *, state=None, chunk_size=64):
        """x (B, L, D) -> (output (B, L, D), ``RecurrentState``).

        ``state``: the state a previous call returned (None: the start of
        a sequence); one token at a time, each call fed the last one's
        state, equals one call over the whole sequence. ``chunk_size``:
        the chunk length of the gated delta rule (None: token by token);
        a single token with a state takes one step."""
        self._check(x, state, chunk_size)
        past = None if state is None else state.conv
        # (B, L, 2*H*Dk + Hv*Dv) and the gates (B, Hv, L), (B, Hv, L[, Dk])
        mixed, beta, decay = self._inputs(x)
        mixed, conv = causal_conv(mixed, self.conv.weight, past)
        q, k, v = mixed.split(self._sizes, dim=-1)
        q = q.unflatten(-1, (self.num_heads, self.d_head_k)).transpose(1, 2)
        k = k.unflatten(-1, (self.num_heads, self.d_head_k)).transpose(1, 2)
        v = v.unflatten(-1, (self.num_value_heads, -1)).transpose(1, 2)
        q, k = self._l2norm(q), self._l2norm(k)  # (B, H, L, Dk)
        o, matrix = _run(q, k, v, decay, beta,
                         None if state is None else state.matrix, chunk_size)
        o = o.transpose(1, 2)  # (B, Hv, L, Dv) -> (B, L, Hv, Dv)
        gate, activation = self._gate(x)  # (B, L, Hv, Dv)
        o = gated_rms_norm(o, gate, self.norm_weight, self.eps, activation)
        return self.W_o(o.flatten(2)), RecurrentState(conv, matrix)

    def _l2norm(self, x):
        return l2norm(x, 1e-6)

    def _check(self, x, state, chunk_size):
        _checks.check_module_input("x", x, self.W_o.weight, self.d_model,
                                   "d_model")
        if chunk_size is not None:
            _checks.check_positive_int("chunk_size", chunk_size)
        if state is None:
            return
        if not isinstance(state, RecurrentState):
            raise TypeError(f"state must be the RecurrentState a previous "
                            f"call returned, or None; got "
                            f"{type(state).__name__}")
        B, channels = x.size(0), sum(self._sizes)
        want = {"conv": (B, channels, self.conv_size - 1),
                "matrix": (B, self.num_value_heads, self.d_head_k,
                           self.d_head_v)}
        for name, t in zip(state._fields, state):
            _checks.check_float_tensor(f"state.{name}", t)
            _checks.check_device(f"state.{name}", t, self.W_o.weight)
            if tuple(t.shape) != want[name]:
                raise ValueError(f"state.{name} must have shape "
                                 f"{want[name]} for x of batch size {B}; got "
                                 f"shape {tuple(t.shape)}")

    def _init_gates(self, num, width):
        """A_log (num,) and dt_bias (width,): decay rates A in [1, 16] and
        softplus(dt_bias) in [0.001, 0.1], as in Mamba and FLA."""
        self.A_log = nn.Parameter(torch.empty(num).uniform_(1, 16).log())
        dt = torch.empty(width).uniform_(math.log(1e-3), math.log(1e-1))
        dt = dt.exp().clamp(min=1e-4)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))

    def extra_repr(self):
        return (f"d_model={self.d_model}, num_heads={self.num_heads}, "
                f"num_value_heads={self.num_value_heads}, "
                f"d_head_k={self.d_head_k}, d_head_v={self.d_head_v}, "
                f"conv_size={self.conv_size}")


def _run(q, k, v, decay, beta, matrix, chunk_size):
    """The gated delta rule on the layer's q, k (B, H, L, Dk), v
    (B, Hv, L, Dv): one step for one token with a state, else chunked."""
    dtype, Hv = v.dtype, v.size(1)
    compute = _compute(dtype)
    # (B, H, L, Dk) -> (B, Hv, L, Dk); every tensor in the compute dtype
    q, k = (x.repeat_interleave(Hv // x.size(1), dim=1).to(compute)
            for x in (q, k))
    v, decay, beta = v.to(compute), decay.to(compute), beta.to(compute)
    B, _, L, Dk = k.shape
    if matrix is None:
        matrix = v.new_zeros(B, Hv, Dk, v.size(-1))
    matrix, scale = matrix.to(compute), 1 / math.sqrt(Dk)
    if L == 1 and chunk_size is not None:  # decoding: one step
        o, matrix = _delta_rule_step(matrix, q[:, :, 0], k[:, :, 0],
                                     v[:, :, 0], beta[:, :, 0],
                                     decay[:, :, 0], scale)
        return o.unsqueeze(2).to(dtype), matrix
    o, matrix = _gated_delta_rule(q, k, v, decay, beta, matrix, scale,
                                  chunk_size)
    return o.to(dtype), matrix


def _compute(dtype):
    """The dtype the rule runs in: float32 for float16 and bfloat16."""
    return (torch.float32 if dtype in (torch.float16, torch.bfloat16)
            else dtype)


def _check_sizes(d_model, num_heads, d_head_k, d_head_v, num_value_heads,
                 conv_size, eps):
    d_model = _checks.check_positive_int("d_model", d_model)
    num_heads = _checks.check_positive_int("num_heads", num_heads)
    d_head_k = _checks.check_positive_int("d_head_k", d_head_k)
    d_head_v = _checks.check_positive_int("d_head_v", d_head_v)
    Hv = (num_heads if num_value_heads is None
          else _checks.check_positive_int("num_value_heads", num_value_heads))
    if Hv % num_heads:
        raise ValueError(f"num_value_heads ({Hv}) must be a multiple of "
                         f"num_heads ({num_heads}): consecutive value heads "
                         f"share one query/key head")
    conv_size = _checks.check_positive_int("conv_size", conv_size)
    eps = _checks.check_real("eps", eps)
    if eps <= 0:
        raise ValueError(f"eps must be > 0; got {eps}")
    return d_model, num_heads, d_head_k, d_head_v, Hv, conv_size, eps


# --- the layers --------------------------------------------------------------


class GatedDeltaNet(_DeltaLayer):
    """The Gated DeltaNet layer of Qwen3.5 (``Qwen3_5GatedDeltaNet``):
    ``num_heads`` query/key heads of ``d_head_k`` features and
    ``num_value_heads`` (default ``num_heads``) value heads of ``d_head_v``.

    ``W_qkv`` (features [query | key | value]), ``W_z`` (the output gate),
    ``W_b`` (beta), ``W_a`` (the decay), all without bias; ``conv``
    (depthwise, causal, kernel ``conv_size``, then SiLU) over W_qkv's
    features; ``A_log``, ``dt_bias`` (Hv,); ``norm_weight`` (Dv,); ``W_o``.
    Per head: q and k l2-normalised, ``beta = sigmoid(W_b x)``,
    ``decay = -exp(A_log) * softplus(W_a x + dt_bias)``, the gated delta
    rule, then ``RMSNorm(o) * norm_weight * silu(W_z x)`` (eps ``eps``).
    """

    def __init__(self, d_model, num_heads, *, d_head_k, d_head_v,
                 num_value_heads=None, conv_size=4, eps=1e-6):
        super().__init__()
        D, H, Dk, Dv, Hv, K, eps = _check_sizes(
            d_model, num_heads, d_head_k, d_head_v, num_value_heads,
            conv_size, eps)
        self.d_model, self.num_heads, self.num_value_heads = D, H, Hv
        self.d_head_k, self.d_head_v, self.conv_size, self.eps = Dk, Dv, K, eps
        self._sizes = [H * Dk, H * Dk, Hv * Dv]  # [query | key | value]
        channels = sum(self._sizes)
        self.W_qkv = nn.Linear(D, channels, bias=False)
        self.W_z = nn.Linear(D, Hv * Dv, bias=False)
        self.W_b = nn.Linear(D, Hv, bias=False)
        self.W_a = nn.Linear(D, Hv, bias=False)
        self.conv = nn.Conv1d(channels, channels, K, groups=channels,
                              bias=False)  # causal: forward pads on the left
        self._init_gates(Hv, Hv)
        self.norm_weight = nn.Parameter(torch.ones(Dv))
        self.W_o = nn.Linear(Hv * Dv, D, bias=False)

    def _inputs(self, x):
        beta = torch.sigmoid(self.W_b(x)).transpose(1, 2)  # (B, Hv, L)
        f = _compute(x.dtype)  # float32 for float16 and bfloat16, as HF
        a = self.W_a(x).to(f) + self.dt_bias.to(f)  # (B, L, Hv)
        decay = -self.A_log.to(f).exp() * F.softplus(a)
        return self.W_qkv(x), beta, decay.transpose(1, 2)  # (B, Hv, L)

    def _gate(self, x):
        z = self.W_z(x).unflatten(-1, (self.num_value_heads, self.d_head_v))
        return z, F.silu  # (B, L, Hv, Dv)


class KimiDeltaAttention(_DeltaLayer):
    """Kimi Delta Attention, the linear layer of Kimi Linear
    (``KimiLinearDeltaAttention``): ``num_heads`` heads of ``d_head``
    features for queries, keys and values.

    ``W_q``, ``W_k``, ``W_v`` (each D -> H*Dk, no bias); ``conv`` depthwise
    over [q | k | v]; the decay ``-exp(A_log) * softplus(W_f_up(W_f_down x)
    + dt_bias)`` per head and key feature (``A_log`` (H,), ``dt_bias``
    (H*Dk,)); ``beta = sigmoid(W_b x)``; the output gate
    ``sigmoid(W_g_up(W_g_down x))``; ``norm_weight`` (Dk,); ``W_o``. Queries
    and keys are l2-normalised as ``x / sqrt(sum(x^2) + 1e-6)``.
    """

    def __init__(self, d_model, num_heads, d_head, *, conv_size=4,
                 eps=1e-6):
        super().__init__()
        D, H, Dk, _, _, K, eps = _check_sizes(
            d_model, num_heads, d_head, d_head, None, conv_size, eps)
        self.d_model, self.num_heads, self.num_value_heads = D, H, H
        self.d_head_k = self.d_head_v = self.d_head = Dk
        self.conv_size, self.eps = K, eps
        self._sizes = [H * Dk] * 3
        self.W_q, self.W_k, self.W_v = (nn.Linear(D, H * Dk, bias=False)
                                        for _ in range(3))
        self.conv = nn.Conv1d(3 * H * Dk, 3 * H * Dk, K, groups=3 * H * Dk,
                              bias=False)
        self.W_f_down = nn.Linear(D, Dk, bias=False)
        self.W_f_up = nn.Linear(Dk, H * Dk, bias=False)
        self._init_gates(H, H * Dk)
        self.W_b = nn.Linear(D, H, bias=False)
        self.W_g_down = nn.Linear(D, Dk, bias=False)
        self.W_g_up = nn.Linear(Dk, H * Dk, bias=False)
        self.norm_weight = nn.Parameter(torch.ones(Dk))
        self.W_o = nn.Linear(H * Dk, D, bias=False)

    def _inputs(self, x):
        H, Dk = self.num_heads, self.d_head
        # one matmul for the three projections: (B, L, 3*H*Dk)
        weight = torch.cat([self.W_q.weight, self.W_k.weight,
                            self.W_v.weight])
        mixed = F.linear(x, weight)
        c = _compute(x.dtype)  # float32 for float16 and bfloat16, as HF
        f = self.W_f_up(self.W_f_down(x)).to(c) + self.dt_bias.to(c)
        f = F.softplus(f.unflatten(-1, (H, Dk)))  # (B, L, H, Dk)
        decay = -self.A_log.to(c).exp()[:, None] * f
        beta = torch.sigmoid(self.W_b(x)).transpose(1, 2)  # (B, H, L)
        return mixed, beta, decay.transpose(1, 2)  # (B, H, L, Dk)

    def _l2norm(self, x):  # Kimi's: x / sqrt(sum(x^2) + eps)
        h = x.to(_compute(x.dtype))
        return (h / torch.sqrt(h.pow(2).sum(-1, keepdim=True) + 1e-6)).to(
            x.dtype)

    def _gate(self, x):
        g = self.W_g_up(self.W_g_down(x)).unflatten(-1, (self.num_heads,
                                                         self.d_head))
        return g, torch.sigmoid  # (B, L, H, Dk)
