"""Train the Shakespeare character model and write mha_book/weights/shakespeare.pt.

    python scripts/train_language_model.py                     # the shipped run (CPU, seeded)
    python scripts/train_language_model.py --steps 20 --out /tmp/lm.pt --log-every 10

It reads ``data/shakespeare/corpus.txt.xz`` (made by ``scripts/shakespeare_corpus.py``), draws
every batch from a generator seeded with ``--seed``, and every ``--log-every`` steps records the
training loss, the validation loss and every head's previous-token and induction scores and the
repeated-sequence losses (`mha.head_scores`), so the chapter can show when each kind of head
appeared. The record ships inside the weights file (``info``) and in
``mha_book/weights/shakespeare_log.json``. On the CPU with the same torch and thread count, a rerun
repeats the shipped run's logged losses; the test ``tests/test_language_model.py`` checks the
first steps.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mha import head_scores  # noqa: E402
from mha_book.language_model import VOCAB, LanguageModel, save_language_model  # noqa: E402

CORPUS = ROOT / "data" / "shakespeare" / "corpus.txt.xz"
REPEAT_LEN = 32  # block length of the repeated random sequences (2 x 32 <= context)


def load_corpus(path: Path = CORPUS):
    """(train ids, validation ids) as 1-D LongTensors."""
    text = lzma.decompress(path.read_bytes()).decode("utf-8")
    train, valid = text.split("\f")
    index = {ch: i for i, ch in enumerate(VOCAB)}
    to_ids = lambda s: torch.tensor([index[c] for c in s], dtype=torch.long)
    return to_ids(train), to_ids(valid)


def batch_of(data: torch.Tensor, batch: int, length: int, gen: torch.Generator) -> torch.Tensor:
    """(batch, length + 1) windows of ``data`` at random starts."""
    starts = torch.randint(0, len(data) - length - 1, (batch,), generator=gen)
    return torch.stack([data[s: s + length + 1] for s in starts.tolist()])


def with_repeats(windows: torch.Tensor, fraction: float, gen: torch.Generator,
                 min_len: int = 8, max_len: int = 64, source: str = "cycle-mixed") -> torch.Tensor:
    """The copying lesson: about ``fraction`` of the windows (B, L + 1) are rewritten so that
    copying from earlier in the window pays. m, the length of what repeats, is drawn from
    ``min_len`` to ``max_len``. ``source``:

    - ``"span"``: a span of m characters of the window is copied to a later place in it (text
      that repeats a passage, as a play repeats a name, but more often). Tried with half the
      windows, in an earlier version of this function: no induction head in 10,750 steps;
    - ``"cycle"``: the whole window becomes a block of m random letters, repeated until full.
      Tried with a quarter of the windows: induction heads by step 2,000, but they fired on
      random letters only, not on repeated text;
    - ``"cycle-mixed"`` (the shipped run): as ``"cycle"``, but in every other window (odd
      index) the block is random letters and in the others it is the window's own first m
      characters of Shakespeare, so the lesson is about text too.

    The draws are made for every window, so the data order does not depend on ``fraction``."""
    B, L1 = windows.shape
    out = windows.clone()
    pick = torch.rand(B, generator=gen) < fraction
    m = torch.randint(min_len, max_len + 1, (B,), generator=gen)
    u, v = torch.rand(B, generator=gen), torch.rand(B, generator=gen)
    letters = torch.tensor([VOCAB.index(c) for c in VOCAB if c.isalpha()])
    noise = letters[torch.randint(0, len(letters), (B, max_len), generator=gen)]
    for b in pick.nonzero().flatten().tolist():
        n = int(m[b])
        if source == "span":
            s = int(u[b] * (L1 - 2 * n + 1))  # the first copy: s .. s + n - 1
            t = s + n + int(v[b] * (L1 - s - 2 * n + 1))  # the second, after it
            out[b, t: t + n] = windows[b, s: s + n]
        else:  # the whole window: one block, repeated
            block = noise[b, :n] if source == "cycle" or b % 2 else windows[b, :n]
            out[b] = block.repeat(L1 // n + 1)[:L1]
    return out


def baselines(train: torch.Tensor, valid: torch.Tensor) -> dict:
    """Validation loss (nats per character) of the unigram and bigram models of the training
    text (add-one smoothing)."""
    V = len(VOCAB)
    uni = torch.bincount(train, minlength=V).double() + 1
    uni_loss = -(uni / uni.sum()).log()[valid].mean()
    pairs = torch.bincount(train[:-1] * V + train[1:], minlength=V * V).double().view(V, V) + 1
    bi = pairs / pairs.sum(-1, keepdim=True)
    bi_loss = -bi[valid[:-1], valid[1:]].log().mean()
    return {"unigram": float(uni_loss), "bigram": float(bi_loss)}


@torch.no_grad()
def evaluate(model, valid_batch, repeat_ids) -> dict:
    """Validation loss, per-head scores (lists [layer][head]) and repeated-sequence losses."""
    was_training = model.training
    model.eval()
    val = float(model.loss_per_token(valid_batch).mean())
    prev = [head_scores.previous_token_score(w).tolist()
            for w in model.attention(valid_batch)]
    ind = [head_scores.induction_score(w, REPEAT_LEN).tolist()
           for w in model.attention(repeat_ids)]
    first, second = head_scores.repeated_sequence_losses(model, repeat_ids, REPEAT_LEN)
    model.train(was_training)
    return {"val_loss": val, "previous_token": prev, "induction": ind,
            "repeat_first": first, "repeat_second": second}


def train(steps: int, *, seed: int = 0, batch: int = 32, lr: float = 2e-3,
          log_every: int = 250, warmup: int = 200, config: dict | None = None,
          progress: bool = True, checkpoint=None, repeat_fraction: float = 0.0,
          repeat_source: str = "cycle-mixed", repeat_max: int = 64):
    torch.manual_seed(seed)
    model = LanguageModel(VOCAB, **(config or {}))
    train_ids, valid_ids = load_corpus()
    L = model.context_length
    gen = torch.Generator().manual_seed(seed)
    valid_batch = batch_of(valid_ids, 32, L - 1, torch.Generator().manual_seed(seed + 1))
    # random lowercase letters (uniform over the 26), the block repeated
    repeat_ids = head_scores.repeated_sequence(len(VOCAB), REPEAT_LEN, 32, seed=seed + 2,
                                               low=VOCAB.index("a"))
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in trained if p.dim() >= 2 and "embed" not in n]
    rest = [p for n, p in trained if not (p.dim() >= 2 and "embed" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
    # linear warm-up, then lr / sqrt(step / warmup): the schedule does not depend on the
    # number of steps, so the first k steps of any run are the run with --steps k
    schedule = lambda s: min((s + 1) / warmup, math.sqrt(warmup / (s + 1)))
    log = {"steps": [], "train_loss": [], "seconds": []}
    start, running = time.time(), []
    for step in range(steps + 1):
        if step % log_every == 0 or step == steps:
            record = evaluate(model, valid_batch, repeat_ids)
            log["steps"].append(step)
            log["train_loss"].append(sum(running) / len(running) if running else None)
            log["seconds"].append(round(time.time() - start, 1))
            for key, value in record.items():
                log.setdefault(key, []).append(value)
            running = []
            if checkpoint is not None:
                checkpoint(model, log)
            if progress:
                best = max(max(h) for h in record["induction"])
                print(f"step {step:5d}  train {log['train_loss'][-1] or float('nan'):.3f}  "
                      f"val {record['val_loss']:.3f}  repeat {record['repeat_first']:.2f}->"
                      f"{record['repeat_second']:.2f}  best induction {best:.2f}  "
                      f"{time.time() - start:.0f} s", flush=True)
        if step == steps:
            break
        for group in opt.param_groups:
            group["lr"] = lr * schedule(step)
        ids = batch_of(train_ids, batch, L, gen)  # (B, L + 1)
        if repeat_fraction:
            ids = with_repeats(ids, repeat_fraction, gen, source=repeat_source,
                               max_len=repeat_max)
        loss = model.loss_per_token(ids[:, :-1]).mean()  # predicts ids[:, 1:L]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running.append(loss.item())
    model.eval()
    info = {"log": log, "seed": seed, "batch": batch, "lr": lr, "steps": steps,
            "repeat_fraction": repeat_fraction,
            "minutes": round((time.time() - start) / 60, 1)}
    return model, describe(info, model, train_ids, valid_ids)


def describe(info: dict, model, train_ids, valid_ids) -> dict:
    """Add to a run's ``info`` what the book reads beside the log: the configuration, the
    baselines, the bigram counts of the training text, a held-out sample (32 context windows
    of the validation split) and the versions."""
    V = len(VOCAB)
    pairs = torch.bincount(train_ids[:-1] * V + train_ids[1:], minlength=V * V).view(V, V)
    sample_len = 32 * model.context_length
    return {**info, "config": dict(model.config), "baselines": baselines(train_ids, valid_ids),
            "bigram_counts": pairs.tolist(), "train_chars": len(train_ids),
            "validation_sample": "".join(VOCAB[i] for i in valid_ids[:sample_len].tolist()),
            "repeat_len": REPEAT_LEN, "torch": str(torch.__version__),
            "threads": torch.get_num_threads()}


def package(checkpoint: Path, out: Path, command: str) -> dict:
    """Ship the state a run saved at its last log (``*_last.pt``) as a finished run: the full
    ``info`` (`describe`) and float16 weights at ``out``, the log beside it. A run stopped at a
    logged step k is the run with ``--steps k`` (the schedule does not depend on the number of
    steps), whose command is ``command``."""
    blob = torch.load(checkpoint, map_location="cpu", weights_only=True)
    model = LanguageModel(**blob["config"])
    model.load_state_dict(blob["state_dict"])
    model.eval()
    log = blob["info"]["log"]
    train_ids, valid_ids = load_corpus()
    info = {"log": log, "steps": log["steps"][-1], "minutes": round(log["seconds"][-1] / 60, 1),
            **blob["info"].get("run", {}), "command": command}
    info = describe(info, model, train_ids, valid_ids)
    save_language_model(model, out, info=info)
    out.with_name(out.stem + "_log.json").write_text(
        json.dumps(info, indent=None, separators=(",", ":")) + "\n")
    return info


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=250)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--positions", choices=("learned", "sinusoidal", "rotary"), default="learned")
    parser.add_argument("--repeat-fraction", type=float, default=0.0,
                        help="the share of training windows that are a copying lesson")
    parser.add_argument("--repeat-source", choices=("span", "cycle", "cycle-mixed"),
                        default="cycle-mixed", help="the kind of lesson (see with_repeats)")
    parser.add_argument("--repeat-max", type=int, default=64,
                        help="the longest block that repeats (characters)")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--d-ff", type=int, default=512, help="0: attention only")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--out", type=Path, default=ROOT / "mha_book" / "weights" / "shakespeare.pt")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = {"context_length": args.context, "d_model": args.d_model, "d_ff": args.d_ff,
              "positions": args.positions, "num_layers": args.num_layers}
    log_path = args.out.with_name(args.out.stem + "_log.json")

    def checkpoint(model, log):  # the run so far, so a long run can be inspected as it goes
        torch.save({"config": dict(model.config), "state_dict": model.state_dict(),
                    "info": {"log": log}}, args.out.with_name(args.out.stem + "_last.pt"))

    model, info = train(args.steps, seed=args.seed, log_every=args.log_every, lr=args.lr,
                        batch=args.batch, config=config, checkpoint=checkpoint,
                        repeat_fraction=args.repeat_fraction, warmup=args.warmup,
                        repeat_source=args.repeat_source, repeat_max=args.repeat_max)
    info["command"] = ("python scripts/train_language_model.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k != "out"))
    save_language_model(model, args.out, info=info)
    log_path.write_text(json.dumps(info, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB) and {log_path}")


if __name__ == "__main__":
    main()
