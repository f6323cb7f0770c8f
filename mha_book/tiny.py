"""A tiny transformer built on `mha.MultiHeadAttention`, for looking at what trained heads learn.

- `TinyEncoder`: token embeddings + learned positions, ``num_layers`` encoder blocks, and one
  linear readout per job (``num_outputs``), e.g. previous / first / induction letter.
- `TinyEncoderDecoder`: an encoder over the source and a decoder whose blocks run causal
  self-attention, then cross-attention to the encoder's output (queries: target tokens, keys and
  values: source tokens), for the toy translation task.
- `load_pretrained(name)`: the weights shipped in ``mha_book/weights/<name>.pt``; `save_pretrained`
  writes such a file (config + state_dict), which `mha_book.train` does.

Blocks are pre-LN by default (``norm_first=True``: x + attn(norm(x))), or post-LN as in the
original Transformer (norm(x + attn(x))). Every attention layer is a `MultiHeadAttention`, so
`mha.record_attention(model)` captures its per-head weights, keyed by names such as
``encoder.layers.0.self_attn`` or ``decoder.layers.1.cross_attn``.

Shapes: B batch, L length, Ls / Lt source / target length, D d_model, H heads, K jobs, C classes.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from mha import _checks
from mha.layer import MultiHeadAttention

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"


class FeedForward(nn.Sequential):
    """Position-wise MLP: (B, L, D) -> (B, L, d_ff) -> (B, L, D)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))


class _Residual(nn.Module):
    """x + sublayer(norm(x)) (pre-LN) or norm(x + sublayer(x)) (post-LN)."""

    def __init__(self, d_model: int, norm_first: bool):
        super().__init__()
        self.norm, self.norm_first = nn.LayerNorm(d_model), norm_first

    def forward(self, x, sublayer):
        if self.norm_first:
            return x + sublayer(self.norm(x))
        return self.norm(x + sublayer(x))


class EncoderBlock(nn.Module):
    """Self-attention then feed-forward, each in a residual: (B, L, D) -> (B, L, D)."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = True):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff = FeedForward(d_model, d_ff)
        self.res_attn = _Residual(d_model, norm_first)
        self.res_ff = _Residual(d_model, norm_first)

    def forward(self, x, *, valid_lens=None, is_causal=False, head_mask=None):
        x = self.res_attn(x, lambda h: self.self_attn(
            h, valid_lens=valid_lens, is_causal=is_causal, head_mask=head_mask)[0])
        return self.res_ff(x, self.ff)


class DecoderBlock(nn.Module):
    """Causal self-attention, cross-attention to ``memory``, feed-forward:
    (B, Lt, D) -> (B, Lt, D)."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = True):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff = FeedForward(d_model, d_ff)
        self.res_self = _Residual(d_model, norm_first)
        self.res_cross = _Residual(d_model, norm_first)
        self.res_ff = _Residual(d_model, norm_first)

    def forward(self, y, memory, *, src_valid_lens=None):
        # memory (B, Ls, D): the encoder's output; the queries come from y (B, Lt, D)
        y = self.res_self(y, lambda h: self.self_attn(h, is_causal=True)[0])
        y = self.res_cross(y, lambda h: self.cross_attn(h, memory, valid_lens=src_valid_lens)[0])
        return self.res_ff(y, self.ff)


class _Embedding(nn.Module):
    """Token embedding + learned position embedding: (B, L) ids -> (B, L, D)."""

    def __init__(self, vocab_size: int, max_len: int, d_model: int):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, d_model)
        self.positions = nn.Embedding(max_len, d_model)
        self.max_len = max_len

    def forward(self, ids):
        if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long:
            raise TypeError(f"ids must be a torch.long tensor of token ids; got "
                            f"{getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (B, L); got shape {tuple(ids.shape)}")
        if ids.size(1) > self.max_len:
            raise ValueError(f"sequence length ({ids.size(1)}) exceeds max_len ({self.max_len})")
        pos = torch.arange(ids.size(1), device=ids.device)
        return self.tokens(ids) + self.positions(pos)  # (B, L, D) + (L, D)


class Encoder(nn.Module):
    """Embedding and a stack of `EncoderBlock`s (+ a final LayerNorm when pre-LN):
    (B, L) ids -> (B, L, D)."""

    def __init__(self, vocab_size, max_len, d_model, num_heads, num_layers, d_ff, norm_first):
        super().__init__()
        self.embed = _Embedding(vocab_size, max_len, d_model)
        self.layers = nn.ModuleList(
            EncoderBlock(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, ids, *, valid_lens=None, is_causal=False, head_mask=None):
        x = self.embed(ids)  # (B, L, D)
        if head_mask is not None and head_mask.shape[0] != len(self.layers):
            raise ValueError(f"head_mask must have shape (num_layers, H) = "
                             f"({len(self.layers)}, H), "
                             f"got {tuple(head_mask.shape)}")
        for n, layer in enumerate(self.layers):
            x = layer(x, valid_lens=valid_lens, is_causal=is_causal,
                      head_mask=None if head_mask is None else head_mask[n])
        return self.norm(x)


class TinyEncoder(nn.Module):
    """Encoder + ``num_outputs`` linear readouts: ids (B, L) -> logits (B, L, K, C).

    ``is_causal=True`` makes every self-attention causal (a decoder-only model).
    ``head_mask`` (num_layers, H) multiplies each head's output (0 removes a head).
    """

    def __init__(self, vocab_size: int, num_classes: int, max_len: int, *, d_model: int = 32,
                 num_heads: int = 4, num_layers: int = 2, d_ff: int = 64, num_outputs: int = 1,
                 norm_first: bool = True, is_causal: bool = False):
        super().__init__()
        self.config = {"vocab_size": vocab_size, "num_classes": num_classes, "max_len": max_len,
                       "d_model": d_model, "num_heads": num_heads, "num_layers": num_layers,
                       "d_ff": d_ff, "num_outputs": num_outputs, "norm_first": norm_first,
                       "is_causal": is_causal}
        self.encoder = Encoder(vocab_size, max_len, d_model, num_heads, num_layers, d_ff,
                               norm_first)
        self.readout = nn.Linear(d_model, num_outputs * num_classes)

    def forward(self, ids, *, valid_lens=None, head_mask=None):
        x = self.encoder(ids, valid_lens=valid_lens, is_causal=self.config["is_causal"],
                         head_mask=head_mask)  # (B, L, D)
        B, L, _ = x.shape
        # (B, L, D) -> (B, L, K*C) -> (B, L, K, C)
        return self.readout(x).view(B, L, self.config["num_outputs"], -1)


class Decoder(nn.Module):
    """Embedding and a stack of `DecoderBlock`s (+ a final LayerNorm when pre-LN):
    (B, Lt) ids and memory (B, Ls, D) -> (B, Lt, D)."""

    def __init__(self, vocab_size, max_len, d_model, num_heads, num_layers, d_ff, norm_first):
        super().__init__()
        self.embed = _Embedding(vocab_size, max_len, d_model)
        self.layers = nn.ModuleList(
            DecoderBlock(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, ids, memory, *, src_valid_lens=None):
        y = self.embed(ids)  # (B, Lt, D)
        for layer in self.layers:
            y = layer(y, memory, src_valid_lens=src_valid_lens)
        return self.norm(y)


class TinyEncoderDecoder(nn.Module):
    """Encoder over the source, decoder over the target: (B, Ls), (B, Lt) -> logits (B, Lt, C)."""

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, max_src_len: int,
                 max_tgt_len: int, *, d_model: int = 32, num_heads: int = 4, num_layers: int = 2,
                 d_ff: int = 64, norm_first: bool = True):
        super().__init__()
        self.config = {"src_vocab_size": src_vocab_size, "tgt_vocab_size": tgt_vocab_size,
                       "max_src_len": max_src_len, "max_tgt_len": max_tgt_len, "d_model": d_model,
                       "num_heads": num_heads, "num_layers": num_layers, "d_ff": d_ff,
                       "norm_first": norm_first}
        self.encoder = Encoder(src_vocab_size, max_src_len, d_model, num_heads, num_layers, d_ff,
                               norm_first)
        self.decoder = Decoder(tgt_vocab_size, max_tgt_len, d_model, num_heads, num_layers, d_ff,
                               norm_first)
        self.readout = nn.Linear(d_model, tgt_vocab_size)

    def forward(self, src, tgt_in, *, src_valid_lens=None):
        memory = self.encoder(src, valid_lens=src_valid_lens)  # (B, Ls, D)
        y = self.decoder(tgt_in, memory, src_valid_lens=src_valid_lens)  # (B, Lt, D)
        return self.readout(y)  # (B, Lt, C)

    @torch.no_grad()
    def greedy_decode(self, src, length: int, bos: int = 0) -> torch.Tensor:
        """Translate by feeding back the most likely token: src (B, Ls) -> (B, length) ids."""
        out = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
        for _ in range(length):
            next_id = self(src, out)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
            out = torch.cat([out, next_id], dim=1)
        return out[:, 1:]


KINDS = {"encoder": TinyEncoder, "encoder_decoder": TinyEncoderDecoder}


def build(kind: str, config: dict) -> nn.Module:
    """A fresh model of ``kind`` (``encoder`` or ``encoder_decoder``) from its config dict."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    return KINDS[kind](**config)


def save_pretrained(model: nn.Module, path, *, task: str, info: dict | None = None,
                    dtype: torch.dtype | None = None) -> Path:
    """Write ``{kind, task, config, state_dict, info}`` to ``path`` (a .pt file).

    ``dtype`` (e.g. ``torch.float16``) stores the floating-point tensors in that type, to make
    the file smaller; `load_pretrained` upcasts them into the model's float32 parameters."""
    kind = {v: k for k, v in KINDS.items()}[type(model)]
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    if dtype is not None:
        state = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"kind": kind, "task": task, "config": dict(model.config), "state_dict": state,
                "info": dict(info or {})}, path)
    return path


# weight files in mha_book/weights/ that hold other experiments' models, not a tiny transformer
# chapter 12's position and rotation models (mha_book.copy_back); the Shakespeare model (mha_book.language_model)
_OTHER_WEIGHTS = {"positions", "rotations", "shakespeare"}


def available() -> list:
    """Names of the shipped tiny transformers (``mha_book/weights/<name>.pt``)."""
    return sorted(p.stem for p in WEIGHTS_DIR.glob("*.pt") if p.stem not in _OTHER_WEIGHTS)


def load_pretrained(name_or_path, device=None, *, with_info: bool = False):
    """The trained model ``name`` shipped with the package (e.g. ``"multitask"``,
    ``"translation"``), or one saved at a path; in eval mode, on ``device`` (default cpu).

    With ``with_info=True`` returns ``(model, info)``, ``info`` holding the training record.
    """
    device = _checks.check_device_arg("device", device)
    path = Path(name_or_path)
    if path.suffix != ".pt":
        path = WEIGHTS_DIR / f"{name_or_path}.pt"
        if not path.exists():
            raise ValueError(f"no shipped weights named {name_or_path!r}; available: {available()}")
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = build(blob["kind"], blob["config"])
    model.load_state_dict(blob["state_dict"])  # copies into float32 (upcasts float16 files)
    model = model.to(device if device is not None else "cpu").eval()
    return (model, {"task": blob["task"], **blob["info"]}) if with_info else model
