"""The position experiment of chapter 12 (mha_book/copy_back.py) and its shipped weights."""

import pytest
import torch

import mha
from mha_book import copy_back as P


@pytest.fixture(scope="module")
def shipped():
    return P.load_models()


def test_shipped_weights_are_small():
    assert P.WEIGHTS.stat().st_size < 150 * 1024
    total = sum(p.stat().st_size for p in P.WEIGHTS.parent.glob("*"))
    assert total < 2.5 * 1024 * 1024, f"mha/weights holds {total / 1024:.0f} KB; the limit is 2.5 MB"


def test_shipped_models_solve_the_task_at_the_training_length(shipped):
    models, info = shipped
    assert set(models) == set(P.SCHEMES)
    assert info["settings"]["train_len"] == 16 and info["settings"]["shift"] == 3
    for scheme, model in models.items():
        acc = P.accuracy_by_position(model, 16)
        assert acc[:3].isnan().all()
        assert acc[3:].min() > 0.99, scheme


def test_length_generalisation_of_the_shipped_models(shipped):
    models, _ = shipped
    at_64 = {s: P.accuracy_by_position(m, 64)[3:] for s, m in models.items()}
    assert at_64["relative"].min() > 0.99  # clipped distances: nothing new at any length
    assert at_64["learned"][16 - 3:].mean() < 0.2  # rows 16..63 of its table were never trained
    for scheme in ("sinusoidal", "rotary"):
        assert at_64[scheme][: 16 - 3].min() > 0.99  # the trained positions stay right
        assert at_64[scheme].mean() < 0.9  # ... but not the whole of the longer sequence


def test_models_use_the_package_layers(shipped):
    models, _ = shipped
    assert type(models["relative"].attn) is mha.RelativeMultiHeadAttention
    assert type(models["rotary"].attn) is mha.RotaryMultiHeadAttention
    assert type(models["learned"].attn) is mha.MultiHeadAttention
    logits, weights = models["rotary"](torch.zeros(2, 20, dtype=torch.long), need_weights=True)
    assert logits.shape == (2, 20, 16) and weights.shape == (2, 2, 20, 20)
    assert torch.all(weights.triu(1) == 0)  # causal


def test_batch_and_sinusoid():
    ids, targets = P.copy_back_batch(4, 10, shift=3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(targets[:, 3:], ids[:, :-3]) and (targets[:, :3] == P.IGNORE).all()
    pe = P.sinusoidal_positions(50, 8)
    assert torch.allclose(pe[:, 0], torch.sin(torch.arange(50.0)))
    assert torch.allclose(pe[:, 1], torch.cos(torch.arange(50.0)))
    assert torch.allclose(pe[7, 6], torch.sin(torch.tensor(7 / 10000 ** (6 / 8))))
    assert torch.allclose(pe[7, 7], torch.cos(torch.tensor(7 / 10000 ** (6 / 8))))


def test_training_is_repeatable_and_learns():
    _, a = P.train_copy_back("rotary", steps=30, seed=3)
    _, b = P.train_copy_back("rotary", steps=30, seed=3)
    assert a == b
    assert a[-1] < a[0] - 0.1


def test_errors():
    with pytest.raises(ValueError, match="scheme must be one of"):
        P.CopyBackModel("alibi")
    model = P.CopyBackModel("learned", max_len=8)
    with pytest.raises(ValueError, match="length 9 but the learned table has max_len = 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_the_printed_command_reproduces_the_shipped_settings():
    """Ch 12: `python -m mha_book.copy_back` trains with DEFAULTS, the settings of the shipped weights
    (600 steps of 64 sequences of 16 tokens, seed 0)."""
    _, info = P.load_models()
    assert info["settings"] == P.DEFAULTS
    assert (P.DEFAULTS["steps"], P.DEFAULTS["batch_size"], P.DEFAULTS["train_len"],
            P.DEFAULTS["seed"]) == (600, 64, 16, 0)


@pytest.fixture(scope="module")
def rotations():
    return P.load_rotations()


def test_shipped_rotation_models_rotate_what_their_name_says(rotations):
    models, info = rotations
    assert set(models) == {(r, s) for r in P.ROTATIONS for s in P.ROTATION_SEEDS}
    assert info["rotations"] == P.ROTATIONS and info["settings"]["seed"] == list(P.ROTATION_SEEDS)
    assert P.ROTATION_WEIGHTS.stat().st_size < 400 * 1024
    for (rotation, _), model in models.items():
        attn = model.attn
        assert type(attn) is mha.RotaryMultiHeadAttention
        assert attn.rope_dim == {"full": attn.d_head, "quarter": 4, "none": 0}[rotation]
    # rope_dim=0 ignores positions altogether: the same weights in a plain layer, the same output
    x = torch.randn(1, 12, 32)
    nope = models["none", 0].attn
    plain = mha.MultiHeadAttention(32, 2, bias=True)
    plain.load_state_dict(nope.state_dict())
    with torch.no_grad():
        assert torch.allclose(nope(x, is_causal=True)[0], plain(x, is_causal=True)[0], atol=1e-6)


def test_the_rotation_command_reproduces_a_shipped_model(rotations):
    """`python -m mha_book.copy_back --rotations` trains each model with DEFAULTS and its seed:
    retraining one gives the shipped model's function (its loss, its answers, its weights
    where they matter). Not every weight: the key bias of an unrotated feature adds q . b_k to
    every score of a query, which the softmax ignores, so its gradient is float rounding alone;
    Adam scales that noise up to full steps, and a CPU with other vector units lands elsewhere
    (on one of ours the values differed by 5e-3, every answer the same)."""
    models, info = rotations
    assert info["command"].startswith("python -m mha_book.copy_back --rotations")
    retrained, losses = P.train_copy_back("rotary", seed=1, rope_dim=P.ROTATIONS["quarter"])
    retrained.eval()
    shipped_model = models["quarter", 1]
    assert losses[-1] == pytest.approx(info["final_loss"]["quarter/1"], rel=1e-3)
    ids, _ = P.copy_back_batch(64, 48, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(retrained(ids)[0], shipped_model(ids)[0], atol=1e-3,
                                   rtol=1e-3)
    for length in (16, 64):
        assert torch.equal(P.accuracy_by_position(retrained, length)[3:],
                           P.accuracy_by_position(shipped_model, length)[3:])
    shipped = shipped_model.state_dict()
    for name, value in retrained.state_dict().items():
        if name != "attn.W_k.bias":
            assert torch.allclose(value, shipped[name], atol=1e-3), name


def test_rope_dim_is_for_the_rotary_scheme_only():
    with pytest.raises(ValueError, match="rope_dim .* option of the 'rotary' scheme only"):
        P.CopyBackModel("learned", rope_dim=4)
    assert P.CopyBackModel("rotary", rope_dim=4).config["rope_dim"] == 4
    assert "rope_dim" not in P.CopyBackModel("rotary").config  # the old weights' configs
