"""Train the tiny transformers of chapter 08 on the synthetic tasks of `mha_book.tasks`.

From Python::

    model, history = mha_book.train.train(task="multitask", steps=1500, seed=0)

From a shell (this is how ``mha_book/weights/*.pt`` were made)::

    python -m mha_book.train --task multitask --out mha_book/weights/multitask.pt
    python -m mha_book.train --task translation --out mha_book/weights/translation.pt
    python -m mha_book.train --task multitask --num-heads 8 --float16 --out mha_book/weights/multitask_8heads.pt

Every batch is drawn fresh from a generator seeded with ``seed``, and the model's initial weights
come from ``torch.manual_seed(seed)``, so a run on the CPU repeats exactly. A tqdm progress bar
shows the loss while it trains.
"""

from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn.functional as F

from mha_book import tasks as _tasks
from mha_book import tiny as _tiny

# Per task: the model's size and the training schedule used for the shipped weights.
SETTINGS = {
    "previous_token": {"model": {"num_layers": 1}, "steps": 300, "lr": 1e-2},
    "first_token": {"model": {"num_layers": 1}, "steps": 300, "lr": 1e-2},
    "induction": {"model": {"num_layers": 2, "d_model": 48, "d_ff": 96}, "steps": 1500, "lr": 1e-2},
    "multitask": {"model": {"num_layers": 2, "d_model": 48, "d_ff": 96}, "steps": 1500, "lr": 1e-2},
    "translation": {"model": {"num_layers": 2}, "steps": 400, "lr": 1e-2},
}


def build_model(task_name: str, task=None, **overrides) -> torch.nn.Module:
    """A fresh tiny model sized for ``task_name`` (keyword overrides: d_model, num_heads, ...)."""
    task = task or _tasks.make_task(task_name)
    config = {"d_model": 32, "num_heads": 4, "d_ff": 64, **SETTINGS[task_name]["model"],
              **overrides}
    if isinstance(task, _tasks.Translation):
        return _tiny.TinyEncoderDecoder(task.src_vocab_size, task.tgt_vocab_size, task.src_len,
                                        task.tgt_len, **config)
    return _tiny.TinyEncoder(task.vocab_size, task.vocab_size, task.length,
                             num_outputs=len(task.jobs), **config)


def logits_of(model, batch: _tasks.TaskBatch) -> torch.Tensor:
    """Run ``model`` on ``batch``: logits whose shape is ``batch.targets.shape + (C,)``."""
    if batch.decoder_inputs is not None:
        return model(batch.inputs, batch.decoder_inputs)  # (B, Lt, C)
    return model(batch.inputs)  # (B, L, K, C)


def loss_of(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the labelled positions (targets of -100 are skipped)."""
    # logits (..., C) -> (N, C), targets (...) -> (N,)
    return F.cross_entropy(logits.flatten(0, -2), targets.flatten(), ignore_index=_tasks.IGNORE)


@torch.no_grad()
def accuracy(model, batch: _tasks.TaskBatch) -> torch.Tensor:
    """Fraction of labelled positions predicted right; one value per job for `SequenceTasks`
    ((K,) tensor), one value (0-d) for translation (teacher-forced next-token accuracy)."""
    was_training = model.training
    model.eval()
    pred = logits_of(model, batch).argmax(-1)
    model.train(was_training)
    labelled = batch.targets != _tasks.IGNORE
    correct = (pred == batch.targets) & labelled
    per_job = batch.decoder_inputs is None  # (B, L, K): one value per job; (B, Lt): one value
    dims = tuple(range(correct.dim() - 1 if per_job else correct.dim()))
    return correct.sum(dims).float() / labelled.sum(dims).clamp_min(1)


def train(task: str = "multitask", steps: int | None = None, seed: int = 0, *,
          batch_size: int = 64, lr: float | None = None, device=None, progress: bool = True,
          model=None, **model_overrides):
    """Train a tiny model on ``task`` and return ``(model, history)``.

    ``history`` holds ``loss`` (one float per step), ``accuracy`` (on 1,000 fresh examples, a list
    with one value per job, or a float for translation), ``task``, ``steps``, ``seed``, ``seconds``.
    ``model``: continue training that model instead of building a fresh one. The returned model is
    in eval mode, on ``device`` (default: cpu).
    """
    if task not in SETTINGS:
        raise ValueError(f"task must be one of {sorted(SETTINGS)}, got {task!r}")
    settings = SETTINGS[task]
    steps = settings["steps"] if steps is None else steps
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    lr = settings["lr"] if lr is None else lr
    device = torch.device(device or "cpu")
    task_obj = _tasks.make_task(task)
    torch.manual_seed(seed)
    model = (model or build_model(task, task_obj, **model_overrides)).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)  # linear warm-up, then cosine decay to 10% of lr
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min(1.0, (s + 1) / warmup) * (0.55 + 0.45 * math.cos(math.pi * s / steps)))
    data = torch.Generator().manual_seed(seed)
    from tqdm.auto import tqdm  # only training needs tqdm

    losses, start, threads = [], time.perf_counter(), torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(1)  # tiny matrices: one thread is fastest, and the same on any CPU
    try:
        bar = tqdm(range(steps), desc=f"training {task}", disable=not progress)
        for step in bar:
            batch = task_obj.sample(batch_size, data).to(device)
            loss = loss_of(logits_of(model, batch), batch.targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            if step % 25 == 0 or step == steps - 1:
                bar.set_postfix(loss=f"{loss.item():.4f}")
        bar.close()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    test = task_obj.sample(1000, seed + 10_000).to(device)
    acc = accuracy(model, test)
    history = {"task": task, "steps": steps, "seed": seed, "loss": losses,
               "accuracy": acc.tolist(), "seconds": time.perf_counter() - start}
    return model, history


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mha_book.train",
        description="Train a tiny transformer of mha_book.tiny on a synthetic task of mha_book.tasks.")
    parser.add_argument("--task", default="multitask", choices=sorted(SETTINGS),
                        help="which task (default: multitask)")
    parser.add_argument("--steps", type=int, default=None,
                        help="optimiser steps (default: the task's setting in mha_book.train.SETTINGS)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed for weights and data (default: 0)")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="examples per step (default: 64)")
    parser.add_argument("--num-heads", type=int, default=None,
                        help="heads per attention layer (default: 4, as in build_model)")
    parser.add_argument("--float16", action="store_true",
                        help="store the weights in float16 (half the file; loading upcasts)")
    parser.add_argument("--out", default=None,
                        help="save the trained weights to this .pt file "
                             "(e.g. mha_book/weights/multitask.pt)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    overrides = {} if args.num_heads is None else {"num_heads": args.num_heads}
    model, history = train(args.task, args.steps, args.seed, batch_size=args.batch_size,
                           progress=not args.no_progress, **overrides)
    print(f"task {args.task}: final loss {history['loss'][-1]:.4f}, "
          f"accuracy {history['accuracy']}, {history['seconds']:.1f} s")
    if args.out:
        info = {k: history[k] for k in ("steps", "seed", "accuracy")}
        extra = "" if args.num_heads is None else f" --num-heads {args.num_heads}"
        extra += " --float16" if args.float16 else ""
        info.update(final_loss=history["loss"][-1], batch_size=args.batch_size,
                    command=f"python -m mha_book.train --task {args.task} --steps {history['steps']} "
                            f"--seed {args.seed}{extra} --out {args.out}")
        path = _tiny.save_pretrained(model, args.out, task=args.task, info=info,
                                     dtype=torch.float16 if args.float16 else None)
        print(f"saved {path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
