"""Head importance (Michel et al. 2019), head gates and whole-model pruning (mha.importance):
the score equals |dL/dgate| computed directly (autograd through the model's own head_mask, and
central finite differences in float64); pruning every layer equals masking those heads."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha_book import tasks, tiny, train


def _encoder(num_heads=3, num_layers=2, seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    model = tiny.TinyEncoder(16, 16, 16, d_model=24, num_heads=num_heads, num_layers=num_layers,
                             d_ff=32, num_outputs=3)
    return model.to(dtype).eval()


def _loss_fn(model, batch):
    return train.loss_of(train.logits_of(model, batch), batch.targets)


def _batches(n=3, size=8):
    task = tasks.make_task("multitask")
    return [task.sample(size, seed) for seed in range(n)]


def test_head_importance_equals_direct_autograd_of_the_head_mask():
    model = _encoder()
    batches = _batches()
    scores = mha.head_importance(model, batches, _loss_fn)
    assert list(scores) == ["encoder.layers.0.self_attn", "encoder.layers.1.self_attn"]
    expected = torch.zeros(2, 3)
    for batch in batches:  # a gate (num_layers, H) through TinyEncoder's own head_mask argument
        gate = torch.ones(2, 3, requires_grad=True)
        loss = train.loss_of(model(batch.inputs, head_mask=gate), batch.targets)
        (grad,) = torch.autograd.grad(loss, gate)
        expected += grad.abs()
    expected /= len(batches)
    assert expected.min() > 0  # a real test: every head has a non-zero gradient
    torch.testing.assert_close(torch.stack(list(scores.values())), expected,
                               atol=1e-6, rtol=1e-5)


def test_head_importance_equals_finite_differences_float64():
    model = _encoder(num_heads=2, seed=1, dtype=torch.float64)
    batch = _batches(1, 4)[0]
    scores = torch.stack(list(mha.head_importance(model, [batch], _loss_fn).values()))
    eps = 1e-6
    with torch.no_grad():
        for layer in range(2):
            for head in range(2):
                up = torch.ones(2, 2, dtype=torch.float64)
                down = up.clone()
                up[layer, head] += eps
                down[layer, head] -= eps
                diff = (train.loss_of(model(batch.inputs, head_mask=up), batch.targets)
                        - train.loss_of(model(batch.inputs, head_mask=down), batch.targets))
                assert abs(scores[layer, head].item() - abs(diff.item()) / (2 * eps)) < 1e-6


def test_head_importance_takes_the_absolute_value_per_batch():
    model = _encoder(seed=2)
    batches = _batches(2)
    both = torch.stack(list(mha.head_importance(model, batches, _loss_fn).values()))
    one = [torch.stack(list(mha.head_importance(model, [b], _loss_fn).values()))
           for b in batches]
    torch.testing.assert_close(both, (one[0] + one[1]) / 2)
    assert all((s >= 0).all() for s in one)


def test_head_importance_on_encoder_decoder_keys_and_parameters_untouched():
    torch.manual_seed(0)
    task = tasks.make_task("translation")
    model = tiny.TinyEncoderDecoder(task.src_vocab_size, task.tgt_vocab_size, 9, 12,
                                    d_model=16, num_heads=2).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    batch = task.sample(4, 0)
    scores = mha.head_importance(model, iter([batch]), _loss_fn)  # any iterable of batches
    with torch.no_grad(), mha.record_attention(model) as weights:
        train.logits_of(model, batch)
    assert list(scores) == list(weights)  # keyed as record_attention keys the layers
    assert all(s.shape == (2,) and (s > 0).all() for s in scores.values())
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not model.training


def test_head_gates_at_zero_equal_the_head_mask():
    model = _encoder(num_heads=4)
    x = _batches(1)[0].inputs
    mask = torch.ones(2, 4)
    mask[0, 1] = mask[1, 3] = 0.0
    with torch.no_grad():
        with mha.head_gates(model) as gates:
            gates["encoder.layers.0.self_attn"][1] = 0.0
            gates["encoder.layers.1.self_attn"][3] = 0.0
            gated = model(x)
            combined = model(x, head_mask=mask)  # a head_mask given too: multiplied
        torch.testing.assert_close(gated, model(x, head_mask=mask))
        torch.testing.assert_close(combined, gated)
        assert torch.equal(model(x), model(x, head_mask=torch.ones(2, 4)))  # hooks removed


def test_head_importance_errors():
    model = _encoder()
    with pytest.raises(ValueError, match="batches is empty"):
        mha.head_importance(model, [], _loss_fn)
    with pytest.raises(ValueError, match="scalar tensor"):
        mha.head_importance(model, _batches(1), lambda m, b: train.logits_of(m, b).sum(-1))
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        mha.head_importance(model, _batches(1), "cross_entropy")
    with pytest.raises(ValueError, match="contains no MultiHeadAttention"):
        mha.head_importance(torch.nn.Linear(3, 3), [torch.ones(1, 3)], lambda m, b: m(b).sum())
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        mha.head_importance("model", [], _loss_fn)


def _num_params(model):
    return sum(p.numel() for p in model.parameters())


def test_prune_every_layer_equals_masking_and_parameters_go():
    model = _encoder(num_heads=4)
    x = _batches(1, 16)[0].inputs
    heads = [(0, 1), (0, 3), (1, 0)]
    mask = torch.ones(2, 4)
    for layer, head in heads:
        mask[layer, head] = 0.0
    with torch.no_grad():
        masked = model(x, head_mask=mask)
    before = _num_params(model)
    assert mha.prune_heads(model, heads) is model
    with torch.no_grad():
        pruned = model(x)
    torch.testing.assert_close(pruned, masked, atol=1e-6, rtol=1e-5)
    layers = mha.attention_layers(model)
    assert [layer.num_heads for layer in layers.values()] == [2, 3]
    d_model, d_head = 24, 6
    assert before - _num_params(model) == len(heads) * 4 * d_model * d_head


def test_prune_by_name_or_dict_is_the_same():
    a, b, c = _encoder(num_heads=4), _encoder(num_heads=4), _encoder(num_heads=4)
    mha.prune_heads(a, [(0, 2), (1, 1), (1, 2)])
    mha.prune_heads(b, {"encoder.layers.0.self_attn": [2], "encoder.layers.1.self_attn": [2, 1]})
    mha.prune_heads(c, [("encoder.layers.1.self_attn", 1), (0, 2), (1, 2), (1, 2)])  # repeat: ok
    x = _batches(1)[0].inputs
    with torch.no_grad():
        torch.testing.assert_close(a(x), b(x), atol=0, rtol=0)
        torch.testing.assert_close(a(x), c(x), atol=0, rtol=0)


def test_prune_encoder_decoder_equals_gates_at_zero():
    torch.manual_seed(3)
    task = tasks.make_task("translation")
    model = tiny.TinyEncoderDecoder(task.src_vocab_size, task.tgt_vocab_size, 9, 12,
                                    d_model=16, num_heads=4).eval()
    batch = task.sample(6, 1)
    heads = {"encoder.layers.1.self_attn": [0, 2], "decoder.layers.0.self_attn": [3],
             "decoder.layers.1.cross_attn": [1, 2, 3]}
    with torch.no_grad():
        with mha.head_gates(model) as gates:
            for name, hs in heads.items():
                gates[name][hs] = 0.0
            masked = train.logits_of(model, batch)
        mha.prune_heads(model, heads)
        pruned = train.logits_of(model, batch)
    torch.testing.assert_close(pruned, masked, atol=1e-6, rtol=1e-5)
    assert mha.attention_layers(model)["decoder.layers.1.cross_attn"].num_heads == 1
    scores = mha.head_importance(model, [batch], _loss_fn)  # the pruned model can be scored
    assert scores["decoder.layers.1.cross_attn"].shape == (1,)


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_prune_equals_mask_property(data):
    num_layers = data.draw(st.integers(1, 3))
    num_heads = data.draw(st.sampled_from([2, 3, 4, 6]))
    model = _encoder(num_heads=num_heads, num_layers=num_layers, seed=data.draw(st.integers(0, 9)))
    mask = torch.ones(num_layers, num_heads)
    heads = []
    for layer in range(num_layers):
        gone = data.draw(st.lists(st.integers(0, num_heads - 1), max_size=num_heads - 1,
                                  unique=True))
        heads += [(layer, h) for h in gone]
        mask[layer, gone] = 0.0
    x = _batches(1, 4)[0].inputs
    with torch.no_grad():
        masked = model(x, head_mask=mask)
        pruned = mha.prune_heads(model, heads)(x)
    torch.testing.assert_close(pruned, masked, atol=1e-5, rtol=1e-4)


def test_prune_errors_leave_the_model_unchanged():
    model = _encoder(num_heads=3)
    x = _batches(1)[0].inputs
    with torch.no_grad():
        before = model(x)
    cases = [
        ([(0, 1), (1, 0), (1, 1), (1, 2)], "cannot prune all 3 heads of layer"),
        ([(0, 1), ("encoder.layers.7.self_attn", 0)], "no attention layer named"),
        ([(2, 0)], r"layer index 2 out of range: the model has 2 attention layers"),
        ([(0, 3)], r"must be an int in 0..2 \(num_heads = 3\)"),
        ([(0, 1, 2)], r"\(layer, head\) pairs"),
    ]
    for heads, message in cases:
        with pytest.raises(ValueError, match=message):
            mha.prune_heads(model, heads)
    assert [layer.num_heads for layer in mha.attention_layers(model).values()] == [3, 3]
    with torch.no_grad():
        assert torch.equal(model(x), before)


def test_training_a_pruned_model_keeps_its_shape_and_ends_in_eval_mode():
    """Ch 09 (ex-09-finetune): train(model=pruned) trains the model it is given, keeps its
    pruned shape and hands it back in evaluation mode."""
    model = mha.prune_heads(_encoder(num_heads=3), [(0, 1), (1, 0), (1, 2)])
    heads = [layer.num_heads for layer in model.modules()
             if isinstance(layer, mha.MultiHeadAttention)]
    trained, history = train.train("multitask", steps=2, model=model, progress=False)
    assert trained is model and not trained.training and len(history["loss"]) == 2
    assert [layer.num_heads for layer in trained.modules()
            if isinstance(layer, mha.MultiHeadAttention)] == heads == [2, 1]
