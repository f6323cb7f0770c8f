"""A small character-level language model trained on Shakespeare.

The model is a decoder-only transformer built from the package's own blocks: token embeddings
(plus a learned or sinusoidal position table, or none with rotary positions), ``num_layers``
pre-LN blocks whose self-attention is a causal `MultiHeadAttention` (`RotaryMultiHeadAttention`
with ``positions="rotary"``) followed by a GELU feed-forward (none with ``d_ff=0``), a final
LayerNorm and a linear readout to the next character. The tokenizer is one character per token over ``VOCAB``, simple enough to
run in the book's page too.

    lm = mha_book.load_language_model()           # the shipped weights, eval mode, on the CPU
    ids = lm.encode("To be, or not to be")   # LongTensor (L,)
    logits = lm(ids[None])                   # (1, L, vocab)
    weights = lm.attention(ids[None])        # per layer: (1, H, L, L)

Shapes: B batch, L length (at most ``context_length``), D d_model, H heads, V vocabulary.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

from mha import _checks
from mha.record import record_attention
from mha.rotary import RotaryMultiHeadAttention
from mha_book.tiny import Encoder

WEIGHTS = Path(__file__).resolve().parent / "weights" / "shakespeare.pt"
#: the shipped model's number of layers, known without loading it (a test reads the file)
SHIPPED_LAYERS = 2
# the log of the same model trained on plain Shakespeare only (no copying lesson, no
# induction head): chapter 10 compares the two runs
PLAIN_RUN_LOG = WEIGHTS.with_name("shakespeare_plain_log.json")
# the log of a one-layer model given the same copying lesson (chapter 10's open experiment)
ONE_LAYER_RUN_LOG = WEIGHTS.with_name("shakespeare_one_layer_log.json")

# newline, space, 13 marks of punctuation, A-Z, a-z: 67 characters
VOCAB = ("\n !\"'(),-.:;?[]" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
         + "abcdefghijklmnopqrstuvwxyz")
_REPLACE = {"&": "and", "{": "(", "}": ")", "\t": " "}


def normalise_text(text: str) -> str:
    """Map ``text`` into ``VOCAB``: '&' becomes 'and', braces become parentheses, a tab a space,
    and every other character outside the vocabulary (digits, '@', '*', ...) is dropped."""
    text = re.sub("[&{}\t]", lambda m: _REPLACE[m.group()], text)
    return "".join(ch for ch in text if ch in _INDEX)


_INDEX = {ch: i for i, ch in enumerate(VOCAB)}

#: how a token label shows a character that draws no ink: a space '␣', a newline '↵'
GLYPHS = {" ": "\u2423", "\n": "\u21b5"}


def token_labels(text: str) -> list:
    """One label per character of ``text`` for a figure: the character, '␣' for a space and
    '↵' for a newline."""
    return [GLYPHS.get(ch, ch) for ch in text]


#: passages of the held-out works (the validation split: the model never trained on them),
#: exactly as in the corpus; the book's figures offer them beside the reader's own text
PASSAGES = {
    "Julius Caesar: Antony": ("ANTONY.\nFriends, Romans, countrymen, lend me your ears;\n"
                              "I come to bury Caesar, not to praise him.\n"
                              "The evil that men do lives after them;\n"
                              "The good is oft interred with their bones:\n"
                              "So let it be with Caesar. The noble Brutus\n"),
    "Julius Caesar: Cinna and Cassius": ("CINNA.\nLiberty! Freedom! Tyranny is dead!--\n"
                                         "Run hence, proclaim, cry it about the streets.\n\n"
                                         "CASSIUS.\nSome to the common pulpits and cry out,\n"
                                         "\"Liberty, freedom, and enfranchisement!\"\n"),
    "Twelfth Night: the Duke": ("DUKE.\nIf music be the food of love, play on,\n"
                                "Give me excess of it; that, surfeiting,\n"
                                "The appetite may sicken and so die.--\n"),
    "The Tempest: Ariel's song": ("[ARIEL sings]\nFull fathom five thy father lies:\n"
                                  "Of his bones are coral made:\n"
                                  "Those are pearls that were his eyes:\n"),
    "Sonnet 18": ("Shall I compare thee to a summer's day?\n"
                  "Thou art more lovely and more temperate:\n"
                  "Rough winds do shake the darling buds of May,\n"),
}


def sinusoids(length: int, d_model: int) -> torch.Tensor:
    """The sinusoidal position table of Vaswani et al. (2017), (length, d_model): feature 2k of
    position p is sin(p / 10000^(2k/d_model)), feature 2k + 1 its cosine."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    freq = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (D/2,)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return table.float()


class _Skip(nn.Module):
    """A residual sublayer that is absent: x -> x."""

    def forward(self, x, sublayer):
        return x


class LanguageModel(nn.Module):
    """Causal character-level transformer: ids (B, L) -> next-character logits (B, L, V).

    ``head_mask`` (num_layers, H) multiplies each head's output (0 removes a head), as in
    `mha.prune_heads` and chapter 09. ``d_ff=0`` builds an attention-only model (no
    feed-forward sublayers), as in Olsson et al. (2022).
    """

    def __init__(self, vocab: str = None, context_length: int = 128, *, d_model: int = 128,
                 num_heads: int = 4, num_layers: int = 2, d_ff: int = 512,
                 positions: str = "learned"):
        super().__init__()
        vocab = VOCAB if vocab is None else vocab  # None: the 67 characters of ``VOCAB``
        if not isinstance(vocab, str) or len(set(vocab)) != len(vocab):
            raise ValueError(f"vocab must be a str of distinct characters; got {vocab!r}")
        _checks.check_positive_int("context_length", context_length)
        _checks.check_choice("positions", positions, ("learned", "sinusoidal", "rotary"))
        self.config = {"vocab": vocab, "context_length": context_length, "d_model": d_model,
                       "num_heads": num_heads, "num_layers": num_layers, "d_ff": d_ff,
                       "positions": positions}
        self.vocab = vocab
        self._index = {ch: i for i, ch in enumerate(vocab)}
        self.encoder = Encoder(len(vocab), context_length, d_model, num_heads, num_layers,
                               max(d_ff, 1), norm_first=True)
        if d_ff == 0:  # attention only (Olsson et al. 2022): no feed-forward sublayers
            for block in self.encoder.layers:
                block.ff, block.res_ff = nn.Identity(), _Skip()
        self.readout = nn.Linear(d_model, len(vocab))
        table = self.encoder.embed.positions.weight
        if positions != "learned":  # a fixed table, not trained
            with torch.no_grad():  # rotary: no position is added to the input (zeros)
                table.copy_(sinusoids(context_length, d_model) if positions == "sinusoidal"
                            else torch.zeros_like(table))
            table.requires_grad_(False)
        if positions == "rotary":  # queries and keys rotated by position (chapter 12)
            for block in self.encoder.layers:
                block.self_attn = RotaryMultiHeadAttention(d_model, num_heads)

    @property
    def context_length(self) -> int:
        """The longest sequence the model reads (its learned positions)."""
        return self.config["context_length"]

    @property
    def num_layers(self) -> int:
        return self.config["num_layers"]

    @property
    def num_heads(self) -> int:
        return self.config["num_heads"]

    def encode(self, text: str) -> torch.Tensor:
        """``text`` -> LongTensor (L,) of character ids; every character must be in the
        vocabulary (see `normalise_text` for a forgiving mapping)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}")
        unknown = sorted(set(text) - set(self._index))
        if unknown:
            shown = ", ".join(repr(ch) for ch in unknown[:8])
            raise ValueError(f"text has {len(unknown)} character(s) outside the model's "
                             f"vocabulary: {shown}; the vocabulary is letters, space, newline "
                             f"and {VOCAB[2:15]!r} (mha_book.language_model.normalise_text maps "
                             f"other text into it)")
        return torch.tensor([self._index[ch] for ch in text], dtype=torch.long)

    def decode(self, ids) -> str:
        """Character ids (a 1-D tensor or a list of ints) -> text."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1 or ids.is_floating_point():
                raise ValueError(f"ids must be a 1-D integer tensor; got shape "
                                 f"{tuple(ids.shape)} and dtype {ids.dtype}")
            ids = ids.tolist()
        bad = [i for i in ids if not (isinstance(i, int) and 0 <= i < len(self.vocab))]
        if bad:
            raise ValueError(f"ids must be integers in [0, {len(self.vocab)}); got {bad[:5]}")
        return "".join(self.vocab[i] for i in ids)

    def _check_ids(self, ids):
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"ids must be a torch.long tensor of shape (B, L); "
                            f"got {type(ids).__name__}")
        if ids.dtype != torch.long:
            raise TypeError(f"ids must be a torch.long tensor; got dtype {ids.dtype} "
                            f"(lm.encode(text) gives the right kind; add [None] for a batch)")
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (B, L); got shape {tuple(ids.shape)}"
                             + (" (add [None] for a batch of one)" if ids.dim() == 1 else ""))
        if ids.size(1) == 0 or ids.size(1) > self.context_length:
            raise ValueError(f"ids has length {ids.size(1)}; the model reads 1 to "
                             f"context_length = {self.context_length} characters")
        if ids.numel() and (ids.min() < 0 or ids.max() >= len(self.vocab)):
            raise ValueError(f"ids must lie in [0, {len(self.vocab)}); got values from "
                             f"{int(ids.min())} to {int(ids.max())}")

    def forward(self, ids: torch.Tensor, *, head_mask=None) -> torch.Tensor:
        """ids (B, L) long -> logits (B, L, V): row i predicts character i + 1."""
        self._check_ids(ids)
        if head_mask is not None:
            expected = (self.num_layers, self.num_heads)
            if not isinstance(head_mask, torch.Tensor) or tuple(head_mask.shape) != expected:
                raise ValueError(f"head_mask must be a tensor of shape (num_layers, H) = "
                                 f"{expected}; got {_checks._shape(head_mask)}")
        x = self.encoder(ids, is_causal=True, head_mask=head_mask)  # (B, L, D)
        return self.readout(x)  # (B, L, V)

    @torch.no_grad()
    def attention(self, ids: torch.Tensor, *, head_mask=None) -> list:
        """Each layer's per-head weights for ids (B, L): a list of num_layers tensors
        (B, H, L, L), causal, every row summing to 1."""
        with record_attention(self.encoder) as recorded:
            self(ids, head_mask=head_mask)
        return [recorded[f"layers.{n}.self_attn"] for n in range(self.num_layers)]

    def loss_per_token(self, ids: torch.Tensor, *, head_mask=None) -> torch.Tensor:
        """Cross-entropy (nats) of each next-character prediction: ids (B, L) -> (B, L - 1)."""
        logits = self(ids, head_mask=head_mask)[:, :-1]  # (B, L-1, V)
        return nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:],
                                           reduction="none")

    @torch.no_grad()
    def generate(self, prompt: str, length: int = 200, *, temperature: float = 0.8,
                 seed: int = 0) -> str:
        """Continue ``prompt`` by ``length`` characters sampled at ``temperature`` (seeded)."""
        _checks.check_positive_int("length", length)
        temperature = _checks.check_real("temperature", temperature)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0; got {temperature}")
        ids = self.encode(prompt)
        if len(ids) == 0:
            raise ValueError("prompt must have at least one character")
        gen = torch.Generator().manual_seed(seed)
        for _ in range(length):
            logits = self(ids[-self.context_length:][None])[0, -1]  # (V,)
            probs = torch.softmax(logits / temperature, dim=-1)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=gen)])
        return self.decode(ids[len(prompt):])


def save_language_model(model: LanguageModel, path, *, info: dict | None = None,
                        dtype: torch.dtype | None = torch.float16) -> Path:
    """Write ``{config, state_dict, info}`` to ``path``; floats stored in ``dtype``."""
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    if dtype is not None:
        state = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": dict(model.config), "state_dict": state, "info": dict(info or {})},
               path)
    return path


def load_language_model(path=None, *, with_info: bool = False):
    """The shipped Shakespeare model (``mha_book/weights/shakespeare.pt``), or one saved at ``path``,
    in eval mode on the CPU. ``with_info=True`` returns ``(model, info)``: the training
    record (loss curve, head scores at each checkpoint, baselines)."""
    path = WEIGHTS if path is None else Path(path)
    if not path.exists():
        raise ValueError(f"path {str(path)!r} does not exist; the shipped model is "
                         f"mha_book/weights/shakespeare.pt")
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = LanguageModel(**blob["config"])
    model.load_state_dict(blob["state_dict"])  # float16 file -> float32 parameters
    model.eval()
    return (model, blob["info"]) if with_info else model
