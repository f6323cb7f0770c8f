"""The tiny transformer (mha_book.tiny), its synthetic tasks (mha_book.tasks), its training (mha_book.train) and
the weights shipped in mha/weights: accuracy on fresh data, attention capture, determinism."""

import subprocess
import sys

import pytest
import torch

import mha
from mha_book import tasks, tiny, train

# The shipped weights must solve their tasks on data they never saw (a seed not used in training).
ACCURACY_THRESHOLD = 0.99
FRESH = 2024


@pytest.fixture(scope="module")
def multitask():
    return tiny.load_pretrained("multitask"), tasks.make_task("multitask")


@pytest.fixture(scope="module")
def translation():
    return tiny.load_pretrained("translation"), tasks.make_task("translation")


def test_shipped_weights_are_small_and_listed():
    files = sorted(tiny.WEIGHTS_DIR.glob("*.pt"))
    assert [f.stem for f in files] == ["multitask", "multitask_8heads", "positions",
                                       "rotations", "shakespeare", "translation"]
    assert tiny.available() == ["multitask", "multitask_8heads", "translation"]
    # the Shakespeare model has its own limit (3 MB, tests/test_language_model.py)
    total = sum(f.stat().st_size for f in files if f.stem != "shakespeare")
    assert total < 1_000_000, f"shipped weights take {total} bytes; keep them under 1 MB"


def test_shipped_multitask_accuracy(multitask):
    model, task = multitask
    acc = train.accuracy(model, task.sample(1000, FRESH))  # (K,): previous, first, induction
    assert acc.shape == (3,)
    assert (acc >= ACCURACY_THRESHOLD).all(), dict(zip(task.jobs, acc.tolist()))


def test_shipped_translation_accuracy(translation):
    model, task = translation
    batch = task.sample(500, FRESH)
    assert train.accuracy(model, batch).item() >= ACCURACY_THRESHOLD  # teacher-forced tokens
    out = model.greedy_decode(batch.inputs, task.tgt_len, bos=task.bos)  # free-running
    exact = (out == batch.targets).all(dim=1).float().mean().item()
    assert exact >= ACCURACY_THRESHOLD, f"only {exact:.3f} of sentences translated exactly"


def test_shipped_multitask_8heads_accuracy_and_float16_storage():
    """Chapter 09's model: 2 layers x 8 heads, stored in float16, loaded as float32."""
    model, info = tiny.load_pretrained("multitask_8heads", with_info=True)
    assert model.config["num_heads"] == 8 and model.config["num_layers"] == 2
    assert "--num-heads 8" in info["command"] and "--float16" in info["command"]
    blob = torch.load(tiny.WEIGHTS_DIR / "multitask_8heads.pt", weights_only=True)
    assert blob["state_dict"]["encoder.layers.0.self_attn.W_q.weight"].dtype == torch.float16
    assert all(p.dtype == torch.float32 for p in model.parameters())
    task = tasks.make_task("multitask")
    acc = train.accuracy(model, task.sample(1000, FRESH))  # (K,): previous, first, induction
    assert (acc >= ACCURACY_THRESHOLD).all(), dict(zip(task.jobs, acc.tolist()))


def test_save_pretrained_float16_round_trip(tmp_path):
    model = tiny.load_pretrained("multitask")
    path = tiny.save_pretrained(model, tmp_path / "half.pt", task="multitask",
                                dtype=torch.float16)
    again = tiny.load_pretrained(path)
    assert all(p.dtype == torch.float32 for p in again.parameters())
    for (name, p), q in zip(model.named_parameters(), again.parameters()):
        assert torch.equal(p.detach().half().float(), q.detach()), name


def test_load_pretrained_info_and_errors(tmp_path):
    model, info = tiny.load_pretrained("multitask", with_info=True)
    # the command that made the shipped file (mha.train was later moved to mha_book.train)
    assert info["task"] == "multitask" and "python -m mha.train" in info["command"]
    assert not model.training and next(model.parameters()).device.type == "cpu"
    with pytest.raises(ValueError, match="no shipped weights named 'nope'"):
        tiny.load_pretrained("nope")
    path = tiny.save_pretrained(model, tmp_path / "copy.pt", task="multitask")
    again = tiny.load_pretrained(path)
    x = tasks.make_task("multitask").sample(4, 0).inputs
    assert torch.equal(model(x), again(x))


def _rows_ok(w):
    sums = w.sum(-1)
    return torch.all((sums - 1).abs() < 1e-5)


def test_record_attention_on_encoder(multitask):
    model, task = multitask
    x = task.sample(5, 1).inputs
    with torch.no_grad(), mha.record_attention(model) as rec:
        model(x)
    assert sorted(rec) == ["encoder.layers.0.self_attn", "encoder.layers.1.self_attn"]
    for w in rec.values():
        assert w.shape == (5, 4, 16, 16)
        assert _rows_ok(w)


def test_record_attention_on_encoder_decoder(translation):
    model, task = translation
    batch = task.sample(3, 1)
    with torch.no_grad(), mha.record_attention(model) as rec:
        model(batch.inputs, batch.decoder_inputs)
    expected = {f"encoder.layers.{n}.self_attn": (3, 4, 9, 9) for n in range(2)}
    expected.update({f"decoder.layers.{n}.self_attn": (3, 4, 12, 12) for n in range(2)})
    expected.update({f"decoder.layers.{n}.cross_attn": (3, 4, 12, 9) for n in range(2)})
    assert {k: tuple(v.shape) for k, v in rec.items()} == expected
    for name, w in rec.items():
        assert _rows_ok(w), name
        if "decoder" in name and "self_attn" in name:  # causal: nothing above the diagonal
            assert torch.all(w.triu(diagonal=1) == 0), name


def test_padded_source_gets_zero_cross_attention(translation):
    model, task = translation
    batch = task.sample(2, 3)
    valid = torch.tensor([9, 6])
    with torch.no_grad(), mha.record_attention(model) as rec:
        model(batch.inputs, batch.decoder_inputs, src_valid_lens=valid)
    for n in range(2):
        cross = rec[f"decoder.layers.{n}.cross_attn"]
        assert torch.all(cross[1, :, :, 6:] == 0) and _rows_ok(cross)
        assert torch.all(rec[f"encoder.layers.{n}.self_attn"][1, :, :, 6:] == 0)


def test_fused_and_weights_paths_agree(multitask, translation):
    model, task = multitask
    x = task.sample(8, 5).inputs
    with torch.no_grad():
        fused = model(x)
        with mha.record_attention(model):
            explicit = model(x)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-4)
    model, task = translation
    batch = task.sample(8, 5)
    with torch.no_grad():
        fused = model(batch.inputs, batch.decoder_inputs)
        with mha.record_attention(model):
            explicit = model(batch.inputs, batch.decoder_inputs)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-4)


def test_head_mask_removes_a_head(multitask):
    model, task = multitask
    x = task.sample(4, 6).inputs
    keep = torch.ones(2, 4)
    drop = keep.clone()
    drop[1, 2] = 0
    with torch.no_grad():
        assert torch.equal(model(x, head_mask=keep), model(x))
        assert not torch.allclose(model(x, head_mask=drop), model(x))
    with pytest.raises(ValueError, match="head_mask must have shape"):
        model(x, head_mask=torch.ones(3, 4))


@pytest.mark.parametrize("norm_first", [True, False])
def test_blocks_pre_and_post_ln_shapes(norm_first):
    enc = tiny.TinyEncoder(10, 7, 12, d_model=16, num_heads=2, num_outputs=3, norm_first=norm_first)
    assert enc(torch.randint(10, (2, 12))).shape == (2, 12, 3, 7)
    ed = tiny.TinyEncoderDecoder(10, 11, 9, 12, d_model=16, num_heads=4, norm_first=norm_first)
    assert ed(torch.randint(10, (2, 9)), torch.randint(11, (2, 12))).shape == (2, 12, 11)
    with pytest.raises(ValueError, match="exceeds max_len"):
        enc(torch.randint(10, (2, 13)))
    with pytest.raises(TypeError, match="torch.long"):
        enc(torch.rand(2, 12))
    with pytest.raises(ValueError, match=r"shape \(B, L\)"):
        enc(torch.randint(10, (12,)))


def test_causal_encoder_ignores_the_future():
    enc = tiny.TinyEncoder(10, 10, 8, d_model=16, num_heads=2, is_causal=True).eval()
    x = torch.randint(10, (1, 8))
    y = x.clone()
    y[0, 5:] = (y[0, 5:] + 1) % 10  # change the future only
    with torch.no_grad():
        assert torch.allclose(enc(x)[:, :5], enc(y)[:, :5], atol=1e-6)


def test_task_generators_are_deterministic():
    for name in ("multitask", "translation"):
        task = tasks.make_task(name)
        a, b, c = task.sample(16, 7), task.sample(16, 7), task.sample(16, 8)
        assert torch.equal(a.inputs, b.inputs) and torch.equal(a.targets, b.targets)
        assert not torch.equal(a.inputs, c.inputs)
    with pytest.raises(ValueError, match="task must be one of"):
        tasks.make_task("reverse")


def test_sequence_task_labels_by_hand():
    task = tasks.make_task("multitask")
    x = torch.tensor([[task.vocab.index(c) for c in "abcdefghcahgbdfe"]])
    labels = task.labels(x)[0]  # (L, 3): previous, first, induction
    decode = {i: c for i, c in enumerate(task.vocab)}
    assert labels[0, 0] == tasks.IGNORE and decode[int(labels[5, 0])] == "e"
    assert all(decode[int(v)] == "a" for v in labels[:, 1])
    # "c" at position 8 appeared at position 2, followed by "d"; "a" at 9 -> "b"; "e" at 15 -> "f"
    assert [decode[int(labels[i, 2])] for i in (8, 9, 15)] == ["d", "b", "f"]
    assert torch.all(labels[:8, 2] == tasks.IGNORE)
    batch = task.sample(32, 0)
    halves = batch.inputs[:, :8].sort(1).values, batch.inputs[:, 8:].sort(1).values
    assert torch.equal(*halves)  # second half: the first half shuffled
    # ch 08: the first 8 letters are distinct
    assert all(len(set(row.tolist())) == 8 for row in batch.inputs[:, :8])


def test_translation_grammar():
    task = tasks.make_task("translation")
    words = ["black", "cat", "sees", "white", "mouse", "with", "slow", "dog", "."]
    expected = "le chat noir voit la souris blanche avec le chien lent ."
    assert " ".join(task.translate(words)) == expected
    batch = task.sample(4, 0)
    assert batch.inputs.shape == (4, 9) and batch.targets.shape == (4, 12)
    for src, tgt in zip(batch.inputs, batch.targets):
        assert task.translate(task.decode_src(src)) == task.decode_tgt(tgt)
    assert torch.equal(batch.decoder_inputs[:, 1:], batch.targets[:, :-1])
    assert task.alignment_mask(2).shape == (2, 12, 9)


def test_pattern_scores_and_entropy():
    x = torch.tensor([[0, 1, 2, 0, 1]])
    masks = tasks.pattern_masks(x)
    assert masks["induction"][0].nonzero().tolist() == [[3, 1], [4, 2]]
    assert masks["same token"][0].nonzero().tolist() == [[3, 0], [4, 1]]
    prev = masks["previous"].float()[:, None]  # (1, 1, 5, 5): a perfect previous-token head
    assert tasks.pattern_score(prev, masks["previous"]).item() == 1.0
    assert tasks.pattern_score(prev, masks["first"]).item() == pytest.approx(0.25)
    assert tasks.attention_entropy(prev).item() == 0.0  # row 0 is all zero and left out


def test_training_runs_and_loss_decreases():
    _, history = train.train("previous_token", steps=40, seed=0, progress=False, batch_size=32)
    losses = history["loss"]
    assert len(losses) == 40
    assert sum(losses[-5:]) / 5 < 0.85 * losses[0], losses
    _, again = train.train("previous_token", steps=40, seed=0, progress=False, batch_size=32)
    assert again["loss"] == losses  # same seed, same numbers (CPU)


def test_training_rejects_bad_arguments():
    with pytest.raises(ValueError, match="task must be one of"):
        train.train("sorting", steps=1)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        train.train("previous_token", steps=0)


def test_cli_help_runs():
    result = subprocess.run([sys.executable, "-m", "mha_book.train", "--help"], check=False,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert "--task" in result.stdout and "translation" in result.stdout
