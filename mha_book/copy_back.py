"""Position schemes side by side: the "copy the token k places back" task of chapter 12.

Every position of a random sequence must output the token ``shift`` places earlier. That is a
purely relative job: the answer sits at the same distance from every query, wherever the query
is. One attention layer learns it with each way of telling the layer where the tokens are:

- ``"learned"``: a learned absolute position vector added to each token embedding (GPT-2, BERT);
- ``"sinusoidal"``: the fixed sines and cosines of Vaswani et al. added to the embeddings;
- ``"relative"``: Shaw et al.'s clipped relative distances (`mha.RelativeMultiHeadAttention`);
- ``"rotary"``: rotary embeddings of queries and keys (`mha.RotaryMultiHeadAttention`).

The models train at one length and are tested at longer ones (length generalisation).
``python -m mha_book.copy_back --out mha_book/weights/positions.pt`` trains the four and writes the file
the chapter loads (``load_models``).

``ROTATIONS`` are three rotary models that differ only in how much of each head turns: all 16
features of a head (``"full"``), the first 4 (``"quarter"``, as Qwen3-Next rotates a quarter of
its heads) and none (``"none"``, a layer without positions, as in Llama 4's every fourth layer),
each trained with several seeds: ``python -m mha_book.copy_back --rotations --out
mha_book/weights/rotations.pt`` (``load_rotations``).

Shapes: B batch, L length, D d_model, V vocabulary size.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from mha import _checks
from mha._threads import one_thread
from mha.layer import MultiHeadAttention
from mha.positions import sinusoidal_positions
from mha.relative import RelativeMultiHeadAttention
from mha.rotary import RotaryMultiHeadAttention

__all__ = ["ROTATIONS", "ROTATION_SEEDS", "SCHEMES", "CopyBackModel", "accuracy_by_position",
           "copy_back_batch", "load_models", "load_rotations", "sinusoidal_positions",
           "train_copy_back"]

SCHEMES = ("learned", "sinusoidal", "relative", "rotary")
IGNORE = -100  # label of the first ``shift`` positions, which have nothing to copy
WEIGHTS = Path(__file__).resolve().parent / "weights" / "positions.pt"
ROTATION_WEIGHTS = WEIGHTS.with_name("rotations.pt")
# the rotary model's rope_dim (of d_head = 16 features) for each way of rotating
ROTATIONS = {"full": None, "quarter": 4, "none": 0}
ROTATION_SEEDS = (0, 1, 2, 3, 4)

# The settings of the shipped weights (mha_book/weights/positions.pt).
DEFAULTS = {"vocab_size": 16, "d_model": 32, "num_heads": 2, "max_len": 64,
            "max_relative_position": 8, "shift": 3, "train_len": 16, "steps": 600,
            "batch_size": 64, "lr": 1e-2, "seed": 0}


def copy_back_batch(batch_size, length, *, shift=3, vocab_size=16, generator=None):
    """Random tokens ``ids`` (B, L) and ``targets`` (B, L): the token ``shift`` places back
    (-100 for the first ``shift`` positions)."""
    ids = torch.randint(vocab_size, (batch_size, length), generator=generator)
    targets = torch.full_like(ids, IGNORE)
    targets[:, shift:] = ids[:, :-shift]
    return ids, targets


class CopyBackModel(nn.Module):
    """Token embedding (+ absolute positions), one causal attention layer, a linear readout:
    ids (B, L) -> logits (B, L, V). ``scheme`` picks how positions enter (see ``SCHEMES``)."""

    def __init__(self, scheme, *, vocab_size=16, d_model=32, num_heads=2, max_len=64,
                 max_relative_position=8, rope_dim=None):
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}; got {scheme!r}")
        if rope_dim is not None and scheme != "rotary":
            raise ValueError(f"rope_dim (the rotated features of each head) is an option of "
                             f"the 'rotary' scheme only; got rope_dim={rope_dim!r} with "
                             f"scheme {scheme!r}")
        self.scheme, self.max_len = scheme, max_len
        self.config = {"scheme": scheme, "vocab_size": vocab_size, "d_model": d_model,
                       "num_heads": num_heads, "max_len": max_len,
                       "max_relative_position": max_relative_position}
        if rope_dim is not None:
            self.config["rope_dim"] = rope_dim
        self.embed = nn.Embedding(vocab_size, d_model)
        if scheme == "learned":
            self.positions = nn.Embedding(max_len, d_model)
        if scheme == "relative":
            self.attn = RelativeMultiHeadAttention(
                d_model, num_heads, max_relative_position=max_relative_position, bias=True)
        elif scheme == "rotary":
            self.attn = RotaryMultiHeadAttention(d_model, num_heads, bias=True,
                                                 rope_dim=rope_dim)
        else:
            self.attn = MultiHeadAttention(d_model, num_heads, bias=True)
        self.readout = nn.Linear(d_model, vocab_size)

    def forward(self, ids, *, need_weights=False):
        """ids (B, L) -> logits (B, L, V) and the weights (B, H, L, L) (or None)."""
        L = ids.size(1)
        x = self.embed(ids)  # (B, L, D)
        if self.scheme == "learned":
            if L > self.max_len:
                raise ValueError(f"ids has length {L} but the learned table has max_len = "
                                 f"{self.max_len} rows")
            x = x + self.positions.weight[:L]  # (B, L, D) + (L, D)
        elif self.scheme == "sinusoidal":
            x = x + sinusoidal_positions(L, x.size(-1), device=x.device)
        out, weights = self.attn(x, is_causal=True, need_weights=need_weights)  # (B, L, D)
        return self.readout(out), weights  # (B, L, V)


def train_copy_back(scheme, *, steps=None, seed=None, train_len=None, shift=None, lr=None,
                    batch_size=None, **model_kwargs):
    """Train a fresh ``CopyBackModel`` on sequences of ``train_len`` tokens; returns
    ``(model, losses)`` with the model in eval mode on the CPU. Batches come from a generator
    seeded with ``seed`` and the initial weights from ``torch.manual_seed(seed)``: a run repeats
    exactly on the same machine."""
    s = {**DEFAULTS, **{k: v for k, v in {"steps": steps, "seed": seed, "train_len": train_len,
                                         "shift": shift, "lr": lr,
                                         "batch_size": batch_size}.items() if v is not None}}
    config = {k: model_kwargs.get(k, DEFAULTS[k]) for k in
              ("vocab_size", "d_model", "num_heads", "max_len", "max_relative_position")}
    if model_kwargs.get("rope_dim") is not None:
        config["rope_dim"] = model_kwargs["rope_dim"]
    torch.manual_seed(s["seed"])
    model = CopyBackModel(scheme, **config).train()
    data = torch.Generator().manual_seed(s["seed"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=s["lr"], weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda t: 0.5 * (1 + math.cos(math.pi * t / s["steps"])))
    losses = []
    with one_thread():  # tiny matrices: one thread is fastest, and the same on any CPU
        for _ in range(s["steps"]):
            ids, targets = copy_back_batch(s["batch_size"], s["train_len"], shift=s["shift"],
                                           vocab_size=config["vocab_size"], generator=data)
            logits, _ = model(ids)  # (B, L, V)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
    return model.eval(), losses


@torch.no_grad()
def accuracy_by_position(model, length, *, shift=3, num_sequences=500, seed=1):
    """Fraction of ``num_sequences`` fresh sequences of ``length`` tokens answered right at each
    position: a tensor (L,), NaN for the first ``shift`` positions (nothing to copy)."""
    g = torch.Generator().manual_seed(seed)
    ids, targets = copy_back_batch(num_sequences, length, shift=shift,
                                   vocab_size=model.config["vocab_size"], generator=g)
    device = next(model.parameters()).device
    with one_thread():  # a tiny model: one thread is fastest
        logits, _ = model(ids.to(device))  # (B, L, V)
    correct = (logits.argmax(-1).cpu() == targets).float().mean(0)  # (L,)
    correct[:shift] = float("nan")
    return correct


def load_models(path=None, device=None):
    """The four position models: ``({scheme: CopyBackModel}, info)``, in eval mode on
    ``device`` (default cpu).

    ``path`` is a file written by ``python -m mha_book.copy_back --out FILE``; the default, None,
    loads the weights shipped with the package, ``mha_book/weights/positions.pt`` (``WEIGHTS``).
    """
    return _load(WEIGHTS if path is None else path, device)


def _load(path, device):
    """The models of a weights file: ({its key: CopyBackModel in eval mode}, info)."""
    device = _checks.check_device_arg("device", device)
    blob = torch.load(path, map_location="cpu", weights_only=True)
    models = {}
    for key, state in blob["state_dicts"].items():
        model = CopyBackModel(**blob["configs"][key])
        model.load_state_dict(state)
        models[key] = model.to(device or "cpu").eval()
    return models, blob["info"]


def load_rotations(path=None, device=None):
    """The rotation models: ``({(rotation, seed): CopyBackModel}, info)`` for every rotation of
    ``ROTATIONS`` and seed of ``ROTATION_SEEDS``, in eval mode on ``device`` (default cpu).
    ``path`` defaults to the shipped ``mha_book/weights/rotations.pt``."""
    models, info = _load(ROTATION_WEIGHTS if path is None else path, device)
    by_key = {}
    for key, model in models.items():  # "rotation/seed" -> (rotation, seed)
        rotation, seed = key.rsplit("/", 1)
        by_key[rotation, int(seed)] = model
    return by_key, info


def _train_rotations(steps):
    """Train every rotation with every seed: (state_dicts, configs, final losses)."""
    states, configs, losses_by_key = {}, {}, {}
    for rotation, rope_dim in ROTATIONS.items():
        for seed in ROTATION_SEEDS:
            start = time.perf_counter()
            model, losses = train_copy_back("rotary", steps=steps, seed=seed,
                                            rope_dim=rope_dim)
            key = f"{rotation}/{seed}"
            test = {n: round(accuracy_by_position(model, n)[DEFAULTS["shift"]:].mean().item(),
                             3) for n in (16, 32, 64, 128)}
            print(f"{key:>10}: final loss {losses[-1]:.4f}, accuracy by length {test}, "
                  f"{time.perf_counter() - start:.1f} s")
            states[key] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            configs[key], losses_by_key[key] = dict(model.config), losses[-1]
    return states, configs, losses_by_key


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m mha_book.copy_back",
        description="Train the four position schemes on 'copy the token k places back'.")
    parser.add_argument("--out", default=None, help="write the weights (e.g. "
                                                    "mha_book/weights/positions.pt)")
    parser.add_argument("--steps", type=int, default=DEFAULTS["steps"])
    parser.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    parser.add_argument("--rotations", action="store_true",
                        help="train the rotary model with full, a quarter and no rotation, "
                             "each with the seeds of ROTATION_SEEDS (for rotations.pt)")
    args = parser.parse_args(argv)
    if args.rotations:
        states, configs, losses = _train_rotations(args.steps)
        info = {"settings": {**DEFAULTS, "steps": args.steps, "seed": list(ROTATION_SEEDS)},
                "rotations": dict(ROTATIONS), "final_loss": losses,
                "command": f"python -m mha_book.copy_back --rotations --steps {args.steps} "
                           f"--out {args.out}"}
        if args.out:
            torch.save({"state_dicts": states, "configs": configs, "info": info}, args.out)
            print(f"saved {args.out} ({Path(args.out).stat().st_size / 1024:.0f} KB)")
        return 0
    states, configs, info = {}, {}, {"settings": {**DEFAULTS, "steps": args.steps,
                                                  "seed": args.seed}, "final_loss": {}}
    for scheme in SCHEMES:
        start = time.perf_counter()
        model, losses = train_copy_back(scheme, steps=args.steps, seed=args.seed)
        test = {n: accuracy_by_position(model, n)[DEFAULTS["shift"]:].mean().item()
                for n in (16, 32, 64)}
        print(f"{scheme:>10}: final loss {losses[-1]:.4f}, accuracy by length {test}, "
              f"{time.perf_counter() - start:.1f} s")
        states[scheme] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        configs[scheme], info["final_loss"][scheme] = dict(model.config), losses[-1]
    if args.out:
        info["command"] = f"python -m mha_book.copy_back --steps {args.steps} --seed {args.seed} " \
                          f"--out {args.out}"
        torch.save({"state_dicts": states, "configs": configs, "info": info}, args.out)
        print(f"saved {args.out} ({Path(args.out).stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
