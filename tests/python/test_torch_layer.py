"""slide.torch.ExtremeOutput against PyTorch itself: the dense mode's loss and dL/dhidden are torch's
softmax cross-entropy, the sampled mode keeps the batch's labels and steps only its active rows, the
optimizer follows torch's conventions (loss factors, accumulation, zero_grad, schedulers), and the
module saves, loads, pickles and refuses bad input the way a torch module should."""

from __future__ import annotations

import contextlib
import copy
import io
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch", reason="slide.torch needs torch: pip install \"slide[torch]\"")
F = torch.nn.functional

import slide  # noqa: E402
from slide.torch import ExtremeOutput  # noqa: E402

K, N = 16, 50  # in_features, n_labels of the small dense layers


def _layer(in_features: int = K, n_labels: int = N, **kw) -> ExtremeOutput:
    kw = {"mode": "dense", "threads": 2, "seed": 0, **kw}
    return ExtremeOutput(in_features, n_labels, **kw)


def _with_bias(layer: ExtremeOutput, seed: int = 0) -> ExtremeOutput:
    """The layer with a non-zero bias (it starts at 0), written into the engine's memory."""
    with torch.no_grad():
        layer.bias.copy_(torch.randn(layer.n_labels, generator=torch.Generator().manual_seed(seed)) * 0.5)
    return layer


def _hidden(rows: int, width: int = K, seed: int = 0, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(rows, width, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _ids(rows: int, n_labels: int = N, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, n_labels, (rows,), generator=torch.Generator().manual_seed(seed))


def _torch_loss(layer: ExtremeOutput, hidden: torch.Tensor, target: torch.Tensor):
    """torch's own softmax cross-entropy from the layer's weights: (loss, dL/dhidden)."""
    h = hidden.detach().clone().requires_grad_()
    logits = h @ layer.weight.T.to(h.dtype) + layer.bias.to(h.dtype)
    loss = F.cross_entropy(logits, target)
    loss.backward()
    return loss.detach(), h.grad


def _slide_loss(layer: ExtremeOutput, hidden: torch.Tensor, labels):
    h = hidden.detach().clone().requires_grad_()
    loss = layer(h, labels)
    loss.backward()
    layer.optimizer.zero_grad()
    return loss.detach(), h.grad


def _step(layer: ExtremeOutput, hidden: torch.Tensor, labels, scale: float = 1.0) -> torch.Tensor:
    """One training step of the layer; returns the loss."""
    loss = layer(hidden, labels)
    (scale * loss).backward()
    layer.optimizer.step()
    return loss.detach()


def _moved_rows(layer: ExtremeOutput, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return ((layer.weight != weight).any(dim=1) | (layer.bias != bias)).nonzero().flatten()


@contextlib.contextmanager
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# 1. The dense mode is PyTorch's softmax cross-entropy.

def test_dense_single_label_loss_and_gradient_equal_torch():
    layer = _with_bias(_layer())
    h, y = _hidden(12), _ids(12)
    loss, grad = _slide_loss(layer, h, y)
    ref_loss, ref_grad = _torch_loss(layer, h, y)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, ref_loss, atol=1e-5, rtol=0)
    torch.testing.assert_close(grad, ref_grad, atol=1e-5, rtol=0)


def _multi_label_forms():
    lists = [[1, 4, 9], [], [7], [0, 49], []]
    indicator = torch.zeros(len(lists), N)
    for r, ids in enumerate(lists):
        indicator[r, ids] = 1
    return lists, indicator, {
        "indicator tensor": indicator,
        "indicator array": indicator.numpy().astype(np.int8),
        "lists": lists,
        "arrays": [np.array(ids, dtype=np.int64) for ids in lists],
        "scipy csr": sp.csr_matrix(indicator.numpy()),
        "sparse coo tensor": indicator.to_sparse(),
    }


@pytest.mark.parametrize("form", list(_multi_label_forms()[2]))
def test_dense_multi_label_is_soft_target_cross_entropy_over_rows_with_labels(form):
    lists, indicator, forms = _multi_label_forms()
    layer = _with_bias(_layer())
    h = _hidden(len(lists), seed=3)
    loss, grad = _slide_loss(layer, h, forms[form])
    has = indicator.sum(1) > 0
    soft = indicator / indicator.sum(1, keepdim=True).clamp(min=1)  # 1/|labels| on each label
    ref_h = h.clone().requires_grad_()
    ref = F.cross_entropy(ref_h[has] @ layer.weight.T + layer.bias, soft[has])  # mean over rows with labels
    ref.backward()
    torch.testing.assert_close(loss, ref.detach(), atol=1e-5, rtol=0)
    torch.testing.assert_close(grad, ref_h.grad, atol=1e-5, rtol=0)
    assert torch.all(grad[~has] == 0) and grad[has].abs().sum() > 0


def test_rows_without_labels_contribute_nothing():
    layer = _with_bias(_layer(optimizer="sgd", lr=0.5))
    h = _hidden(4)
    labels = torch.zeros(4, N)
    labels[1, 5] = 1
    loss_mixed, grad_mixed = _slide_loss(layer, h, labels)
    loss_one, grad_one = _slide_loss(layer, h[1:2], torch.tensor([5]))
    torch.testing.assert_close(loss_mixed, loss_one, atol=1e-6, rtol=0)
    torch.testing.assert_close(grad_mixed[1:2], grad_one, atol=1e-7, rtol=0)
    assert torch.all(grad_mixed[[0, 2, 3]] == 0)
    # A batch with no labels at all: loss 0, no gradient, and the step moves nothing.
    w, b = layer.weight.clone(), layer.bias.clone()
    hh = h.clone().requires_grad_()
    loss = layer(hh, torch.zeros(4, N))
    loss.backward()
    layer.optimizer.step()
    assert loss.item() == 0.0 and torch.all(hh.grad == 0)
    assert torch.equal(layer.weight, w) and torch.equal(layer.bias, b)


def test_gradcheck_float64_hidden():
    # The engine computes in float32, so the finite differences use a wide step and loose
    # tolerances: float32 rounding of a loss ~2 is ~1e-7, divided by 2 * eps = 2e-2 gives ~1e-5.
    layer = _with_bias(_layer(6, 9, threads=1), seed=2)
    h = _hidden(3, 6, seed=4, dtype=torch.float64).requires_grad_()
    labels = [[0, 3], [8], [2, 5, 6]]
    with warnings.catch_warnings():
        # Every forward stages a layer gradient; gradcheck runs forwards without their backward,
        # so the layer drops (and warns about) gradients the test never steps on.
        warnings.simplefilter("ignore", RuntimeWarning)
        assert torch.autograd.gradcheck(lambda x: layer(x, labels), (h,), eps=1e-2, atol=1e-3, rtol=1e-2)


# 2. Loss factors and gradient accumulation.

def test_loss_scale_scales_the_encoder_gradient_and_the_step():
    h, y = _hidden(8), _ids(8)
    scaled, plain = _layer(optimizer="sgd", lr=0.1), _layer(optimizer="sgd", lr=0.25)
    hs, hp = h.clone().requires_grad_(), h.clone().requires_grad_()
    _step(scaled, hs, y, scale=2.5)
    _step(plain, hp, y)
    torch.testing.assert_close(hs.grad, 2.5 * hp.grad, atol=1e-6, rtol=1e-6)
    # SGD: 2.5x the gradient at lr 0.1 moves the weights as far as the gradient at lr 0.25.
    torch.testing.assert_close(scaled.weight, plain.weight, atol=1e-6, rtol=0)
    torch.testing.assert_close(scaled.bias, plain.bias, atol=1e-6, rtol=0)
    assert not torch.equal(scaled.weight, _layer().weight)  # it did move


def test_backward_twice_with_retain_graph_counts_twice():
    h, y = _hidden(8), _ids(8)
    twice, doubled = _layer(optimizer="sgd", lr=0.1), _layer(optimizer="sgd", lr=0.2)
    loss = twice(h, y)
    loss.backward(retain_graph=True)
    loss.backward()
    twice.optimizer.step()
    _step(doubled, h, y)
    torch.testing.assert_close(twice.weight, doubled.weight, atol=1e-6, rtol=0)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_gradient_accumulation_equals_one_step_on_the_whole_batch(optimizer):
    h, y = _hidden(8, seed=5), _ids(8, seed=6)
    accumulated, whole = _layer(optimizer=optimizer, lr=0.05), _layer(optimizer=optimizer, lr=0.05)
    ha = h.clone().requires_grad_()
    with _no_warnings():
        for part in (slice(0, 4), slice(4, 8)):
            (accumulated(ha[part], y[part]) / 2).backward()
        accumulated.optimizer.step()
    hw = h.clone().requires_grad_()
    _step(whole, hw, y)
    torch.testing.assert_close(ha.grad, hw.grad, atol=1e-6, rtol=0)
    torch.testing.assert_close(accumulated.weight, whole.weight, atol=1e-6, rtol=0)
    torch.testing.assert_close(accumulated.bias, whole.bias, atol=1e-6, rtol=0)
    assert not torch.equal(whole.weight, _layer(optimizer=optimizer).weight)


# 3. The sampled mode.

def test_sampled_mode_steps_the_labels_and_only_the_active_rows():
    n_labels = 20_000
    layer = ExtremeOutput(32, n_labels, threads=2, seed=0)  # mode "batch", Adam, min_active 6000
    assert layer.mode == "batch"
    min_active = slide.MODES["batch"].lsh["min_active"]
    h1, y1 = _hidden(32, 32, seed=1), _ids(32, n_labels, seed=1)
    w0, b0 = layer.weight.clone(), layer.bias.clone()
    _step(layer, h1, y1)
    moved1 = _moved_rows(layer, w0, b0)
    assert set(y1.tolist()) <= set(moved1.tolist())
    assert 0 < moved1.numel() <= min_active < n_labels // 3
    # Adam is lazy: the second batch steps only its own active rows, though every row the first
    # batch stepped now has momentum (a dense Adam would move them all again).
    assert int((layer.weight_adam_m.abs().sum(1) > 0).sum()) == moved1.numel()
    h2, y2 = _hidden(32, 32, seed=2), _ids(32, n_labels, seed=2)
    w1, b1 = layer.weight.clone(), layer.bias.clone()
    _step(layer, h2, y2)
    moved2 = _moved_rows(layer, w1, b1)
    assert set(y2.tolist()) <= set(moved2.tolist())
    assert moved2.numel() <= min_active
    assert len(set(moved1.tolist()) - set(moved2.tolist())) > 1000


def test_sampled_mode_allocates_row_accumulators_only_for_batches_summed_before_a_step():
    """One batch a step stays in the engine's compact buffers: the layer's rows x in_features
    accumulators are never allocated. Two batches before a step sum in them, allocated then, and
    the step takes both batches' labels."""
    n_labels = 20_000
    plain, summed = ExtremeOutput(32, n_labels, threads=2, seed=0), ExtremeOutput(32, n_labels, threads=2, seed=0)
    held = plain._engine.memory_bytes
    for seed in (1, 2):
        _step(plain, _hidden(32, 32, seed=seed), _ids(32, n_labels, seed=seed))
    assert plain._engine.memory_bytes == held
    w0 = summed.weight.clone()
    y1, y2 = _ids(32, n_labels, seed=1), _ids(32, n_labels, seed=2)
    with _no_warnings():
        summed(_hidden(32, 32, seed=1), y1).backward()
        summed(_hidden(32, 32, seed=2), y2).backward()
        summed.optimizer.step()
    assert summed._engine.memory_bytes == held + n_labels * 32 * 4
    moved = set(torch.nonzero((summed.weight != w0).any(dim=1)).flatten().tolist())
    assert set(y1.tolist()) | set(y2.tolist()) <= moved


def test_a_model_learns_in_sampled_mode():
    torch.manual_seed(0)
    n_labels, dim = 2000, 32
    prototypes = torch.randn(n_labels, dim)

    def batch(rows, generator):
        y = torch.randint(0, n_labels, (rows,), generator=generator)
        return prototypes[y] + 0.5 * torch.randn(rows, dim, generator=generator), y

    encoder = torch.nn.Sequential(torch.nn.Linear(dim, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32))
    lsh = slide.MODES["batch"].lsh_config(min_active=200, batch_active=100, l=8, k=4)
    layer = ExtremeOutput(32, n_labels, lsh=lsh, lr=0.01, threads=2, seed=0)
    assert layer.mode == "batch"
    adam = torch.optim.Adam(encoder.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(1)
    w0 = layer.weight.clone()
    with _no_warnings():
        for _ in range(300):
            x, y = batch(64, generator)
            loss = layer(encoder(x), y)
            loss.backward()
            adam.step()
            layer.optimizer.step()
            adam.zero_grad()
            layer.optimizer.zero_grad()
    x, y = batch(1000, torch.Generator().manual_seed(2))
    with torch.no_grad():
        ids, _ = layer.predict(encoder(x), 1)
    p_at_1 = float((ids[:, 0] == y).float().mean())
    assert p_at_1 > 0.15, p_at_1  # chance is 1/2000
    assert int((layer.weight != w0).any(1).sum()) > n_labels // 2


# 4. train()/eval()/no_grad, dropped and cleared gradients.

def _sampled_layer(**kw) -> ExtremeOutput:
    lsh = slide.MODES["batch"].lsh_config(min_active=100, batch_active=50)
    return _with_bias(ExtremeOutput(K, 3000, lsh=lsh, optimizer="sgd", lr=0.5, threads=2, seed=0, **kw))


@pytest.mark.parametrize("how", ["eval", "no_grad", "inference_mode"])
def test_eval_and_no_grad_give_the_exact_loss_and_stage_nothing(how):
    layer = _sampled_layer()
    h, y = _hidden(16), _ids(16, 3000)
    exact, _ = _torch_loss(layer, h, y)
    multi = [[1, 2999], [], [7, 8, 9]] + [[i] for i in range(13)]
    soft = torch.zeros(16, 3000)
    for r, ids in enumerate(multi):
        soft[r, ids] = 1 / max(len(ids), 1)
    has = soft.sum(1) > 0
    exact_multi = F.cross_entropy((h @ layer.weight.T + layer.bias)[has], soft[has])
    w, b = layer.weight.clone(), layer.bias.clone()
    with _no_warnings():
        if how == "eval":
            layer.eval()
            losses = layer(h.requires_grad_(), y), layer(h, multi)
            layer.train()
        else:
            with torch.no_grad() if how == "no_grad" else torch.inference_mode():
                losses = layer(h, y), layer(h, multi)
        layer.optimizer.step()
    torch.testing.assert_close(losses[0], exact, atol=1e-5, rtol=0)
    torch.testing.assert_close(losses[1], exact_multi, atol=1e-5, rtol=0)
    assert torch.equal(layer.weight, w) and torch.equal(layer.bias, b)
    # The training loss is the sampled one (over ~100 of 3000 outputs), so the check above is not
    # the training path by accident; and the eval forward left nothing for the next one to drop.
    with _no_warnings():
        train_loss = _step(layer, h, y)
    assert float(train_loss) < float(exact) - 0.5
    assert not torch.equal(layer.weight, w)


def test_forward_without_backward_warns_and_its_batch_does_not_step():
    h, y = _hidden(6), _ids(6)
    layer, reference = _layer(optimizer="sgd", lr=0.5), _layer(optimizer="sgd", lr=0.5)
    layer(_hidden(6, seed=9), _ids(6, seed=9))  # never backpropagated
    with pytest.warns(RuntimeWarning, match="never backpropagated"):
        loss = layer(h, y)
    loss.backward()
    layer.optimizer.step()
    _step(reference, h, y)
    assert torch.equal(layer.weight, reference.weight) and torch.equal(layer.bias, reference.bias)
    # Its late backward warns, still gives the encoder its gradient, and stages nothing.
    hidden = _hidden(6, seed=9).requires_grad_()
    late = layer(hidden, _ids(6, seed=9))
    with pytest.warns(RuntimeWarning, match="never backpropagated"):
        layer(h, y)
    with pytest.warns(RuntimeWarning, match="dropped before its backward"):
        late.backward()
    assert hidden.grad is not None and hidden.grad.abs().sum() > 0


def test_step_after_a_forward_without_backward_warns_and_moves_nothing():
    layer = _layer(optimizer="sgd", lr=0.5)
    w = layer.weight.clone()
    layer(_hidden(6), _ids(6))
    with pytest.warns(RuntimeWarning, match="never backpropagated"):
        layer.optimizer.step()
    assert torch.equal(layer.weight, w)


def test_zero_grad_drops_the_staged_gradient():
    layer = _layer(optimizer="sgd", lr=0.5)
    h, y = _hidden(6), _ids(6)
    w, b = layer.weight.clone(), layer.bias.clone()
    layer(h, y).backward()
    layer.optimizer.zero_grad()
    with _no_warnings():
        layer.optimizer.step()
    assert torch.equal(layer.weight, w) and torch.equal(layer.bias, b)
    # The next batch steps alone: nothing of the cleared one is left in the engine.
    reference = _layer(optimizer="sgd", lr=0.5)
    h2, y2 = _hidden(6, seed=3), _ids(6, seed=3)
    _step(layer, h2, y2)
    _step(reference, h2, y2)
    assert torch.equal(layer.weight, reference.weight)


def test_zero_grad_between_forward_and_backward_keeps_the_batch():
    # The loop order `loss = f(x); opt.zero_grad(); loss.backward(); opt.step()` learns in torch,
    # so it must here: the batch whose backward is still to come is kept.
    layer, reference = _layer(optimizer="sgd", lr=0.5), _layer(optimizer="sgd", lr=0.5)
    h, y = _hidden(6).requires_grad_(), _ids(6)
    _, expected = _torch_loss(layer, h, y)
    w = layer.weight.clone()
    loss = layer(h, y)
    layer.optimizer.zero_grad()
    with _no_warnings():
        loss.backward()
        layer.optimizer.step()
    torch.testing.assert_close(h.grad, expected, atol=1e-5, rtol=0)
    _step(reference, h.detach(), y)
    assert not torch.equal(layer.weight, w) and torch.equal(layer.weight, reference.weight)


def test_backward_after_a_step_that_dropped_its_batch_warns_and_still_gives_the_encoder_gradient():
    layer = _layer(optimizer="sgd", lr=0.5)
    h, y = _hidden(6).requires_grad_(), _ids(6)
    _, expected = _torch_loss(layer, h, y)
    w = layer.weight.clone()
    loss = layer(h, y)
    with pytest.warns(RuntimeWarning, match="never backpropagated"):
        layer.optimizer.step()
    with pytest.warns(RuntimeWarning, match="dropped before its backward"):
        loss.backward()
    torch.testing.assert_close(h.grad, expected, atol=1e-5, rtol=0)
    layer.optimizer.step()
    assert torch.equal(layer.weight, w)


# 5. Learning-rate schedulers.

def test_step_lr_scheduler_drives_the_learning_rate():
    h, y = _hidden(8), _ids(8)
    layer = _layer(optimizer="sgd", lr=0.2)
    scheduler = torch.optim.lr_scheduler.StepLR(layer.optimizer, step_size=1, gamma=0.5)
    _step(layer, h, y)
    scheduler.step()
    assert layer.optimizer.param_groups[0]["lr"] == pytest.approx(0.1)
    # The next step uses lr 0.1: it matches a layer at the same weights stepped with lr 0.1.
    reference = _layer(optimizer="sgd", lr=0.1)
    reference.load_state_dict(layer.state_dict())
    h2, y2 = _hidden(8, seed=4), _ids(8, seed=4)
    _step(layer, h2, y2)
    _step(reference, h2, y2)
    torch.testing.assert_close(layer.weight, reference.weight, atol=1e-7, rtol=0)
    assert "lr=0.1" in repr(layer)


def test_learning_rate_zero_moves_nothing():
    layer = _layer(optimizer="sgd", lr=0.2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(layer.optimizer, lambda epoch: 0.0)
    assert layer.optimizer.param_groups[0]["lr"] == 0.0
    w = layer.weight.clone()
    _step(layer, _hidden(8), _ids(8))
    scheduler.step()
    assert torch.equal(layer.weight, w)


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), -1.0, "0.1", None])
def test_an_invalid_learning_rate_is_refused_on_step(lr):
    layer = _layer(optimizer="sgd")
    w = layer.weight.clone()
    layer(_hidden(4), _ids(4)).backward()
    layer.optimizer.param_groups[0]["lr"] = lr
    with pytest.raises(ValueError, match="learning rate"):
        layer.optimizer.step()
    assert torch.equal(layer.weight, w)


# 6. predict and predict_proba.

def test_predict_is_torch_topk_of_the_logits():
    layer = _with_bias(_layer())
    h = _hidden(10, seed=7)
    ids, scores = layer.predict(h, k=5)
    ref = torch.topk(h @ layer.weight.T + layer.bias, 5)
    assert ids.dtype == torch.int64 and scores.dtype == torch.float32
    assert ids.device == h.device and scores.device == h.device and ids.shape == (10, 5)
    assert torch.equal(ids, ref.indices)
    torch.testing.assert_close(scores, ref.values, atol=1e-5, rtol=0)


def test_predict_proba_is_the_softmax_over_every_output():
    layer = _with_bias(_layer())
    h = _hidden(10, seed=8)
    probabilities = torch.softmax(h @ layer.weight.T + layer.bias, dim=1)
    for k in (3, N):
        ids, p = layer.predict_proba(h, k=k)
        assert ids.dtype == torch.int64 and p.dtype == torch.float32 and p.device == h.device
        assert torch.equal(ids, torch.topk(probabilities, k).indices)
        torch.testing.assert_close(p, torch.gather(probabilities, 1, ids), atol=1e-5, rtol=0)
    torch.testing.assert_close(p.sum(1), torch.ones(10), atol=1e-5, rtol=0)


def test_int8_scan_finds_the_fp32_top_1():
    layer = _with_bias(_layer(32, 3000), seed=3)
    # The int8 scan needs hidden values >= 0 (a ReLU's output; it falls back to fp32 otherwise).
    h = torch.relu(_hidden(200, 32, seed=9)) * 3
    logits = h @ layer.weight.T + layer.bias
    top2 = torch.topk(logits, 2).values
    clear = (top2[:, 0] - top2[:, 1]) > 1e-2
    assert int(clear.sum()) > 150
    ids8, scores8 = layer.predict(h[clear], k=1, scan="int8")
    assert layer._cache.misses >= 1  # the int8 scan ran (it quantized the weights)
    ids32, scores32 = layer.predict(h[clear], k=1, scan="fp32")
    assert ids8.dtype == torch.int64 and scores8.dtype == torch.float32
    assert torch.equal(ids8, ids32)
    assert torch.equal(ids32[:, 0], logits[clear].argmax(1))
    torch.testing.assert_close(scores8, scores32, atol=1e-5, rtol=0)


# 7. state_dict, pickling, and the shared memory.

def _trained(steps: int = 3, **kw) -> ExtremeOutput:
    layer = _with_bias(_layer(optimizer="adam", lr=0.01, **kw))
    for s in range(steps):
        _step(layer, _hidden(8, seed=10 + s), _ids(8, seed=10 + s))
    return layer


def _assert_same_state(a: ExtremeOutput, b: ExtremeOutput) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    assert {"weight", "bias", "weight_adam_m", "weight_adam_v", "bias_adam_m", "bias_adam_v"} <= set(sa)
    for name in sa:
        if isinstance(sa[name], torch.Tensor):
            assert torch.equal(sa[name], sb[name]), name
        else:
            assert sa[name] == sb[name], name


def test_state_dict_round_trip_is_bit_for_bit_and_training_continues_identically(tmp_path):
    layer = _trained()
    assert layer.get_extra_state()["step"] == 3
    torch.save(layer.state_dict(), tmp_path / "layer.pt")
    fresh = _with_bias(_layer(optimizer="adam", lr=0.01), seed=99)
    assert not torch.equal(fresh.bias, layer.bias)
    fresh.load_state_dict(torch.load(tmp_path / "layer.pt"))
    _assert_same_state(layer, fresh)
    h = _hidden(9, seed=20)
    for a, b in zip(layer.predict(h, 4), fresh.predict(h, 4)):
        assert torch.equal(a, b)
    # Adam's step counter came back too: the next step is the same bit for bit.
    h2, y2 = _hidden(8, seed=21), _ids(8, seed=21)
    assert torch.equal(_step(layer, h2, y2), _step(fresh, h2, y2))
    _assert_same_state(layer, fresh)


def test_loading_a_state_drops_the_staged_gradient():
    layer = _layer(optimizer="sgd", lr=0.5)
    saved = copy.deepcopy(_with_bias(_layer(optimizer="sgd", lr=0.5), seed=4).state_dict())
    layer(_hidden(6), _ids(6)).backward()  # staged for a step that the load makes moot
    layer.load_state_dict(saved)
    with _no_warnings():
        layer.optimizer.step()
    assert torch.equal(layer.weight, saved["weight"]) and torch.equal(layer.bias, saved["bias"])


def test_state_dict_round_trip_in_sampled_mode_predicts_the_same():
    layer = _sampled_layer()
    _step(layer, _hidden(16), _ids(16, 3000))
    fresh = _sampled_layer()
    buffer = io.BytesIO()
    torch.save(layer.state_dict(), buffer)
    buffer.seek(0)
    fresh.load_state_dict(torch.load(buffer))
    h = _hidden(5, seed=3)
    assert torch.equal(layer.predict(h, 3)[0], fresh.predict(h, 3)[0])
    assert torch.equal(layer.weight, fresh.weight) and not torch.equal(fresh.weight, _sampled_layer().weight)


def _pickle(layer):
    return pickle.loads(pickle.dumps(layer))


def _torch_save(layer):
    buffer = io.BytesIO()
    torch.save(layer, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.mark.parametrize("round_trip", [_pickle, copy.deepcopy, _torch_save], ids=["pickle", "deepcopy", "torch.save"])
def test_the_module_round_trips_whole(round_trip):
    layer = _trained()
    layer.optimizer.param_groups[0]["lr"] = 0.003
    layer.eval()
    twin = round_trip(layer)
    assert isinstance(twin, ExtremeOutput) and twin is not layer
    _assert_same_state(layer, twin)
    assert not twin.training and twin.optimizer.param_groups[0]["lr"] == 0.003
    assert (twin.mode, twin.n_labels, twin.in_features, twin.threads) == ("dense", N, K, layer.threads)
    h = _hidden(5, seed=4)
    assert torch.equal(layer.predict(h, 3)[0], twin.predict(h, 3)[0])
    # Its own engine: training the copy leaves the original as it was.
    w = layer.weight.clone()
    twin.train()
    _step(twin, h, _ids(5))
    assert torch.equal(layer.weight, w) and not torch.equal(twin.weight, w)


def test_loading_a_state_of_another_shape_is_refused():
    layer = _trained()
    other = _layer(n_labels=N + 1, optimizer="adam", lr=0.01)
    with pytest.raises((RuntimeError, ValueError), match="n_labels|size mismatch"):
        other.load_state_dict(layer.state_dict())
    wider = _layer(in_features=K + 1, optimizer="adam", lr=0.01)
    with pytest.raises((RuntimeError, ValueError), match="in_features|size mismatch"):
        wider.load_state_dict(layer.state_dict())


def test_loading_a_state_of_another_optimizer_is_refused():
    layer = _trained()
    for optimizer in ("sgd", "adagrad"):
        with pytest.raises((RuntimeError, ValueError), match="optimizer"):
            _layer(optimizer=optimizer).load_state_dict(layer.state_dict())
    with pytest.raises((RuntimeError, ValueError), match="optimizer"):
        _layer(optimizer="adam").load_state_dict(_layer(optimizer="sgd").state_dict())


def _state_with(layer: ExtremeOutput, name: str, row: int, value: float) -> dict:
    state = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in layer.state_dict().items()}
    state[name][row] = value
    return state


@pytest.mark.parametrize("name", ["weight", "bias", "weight_adam_v"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_state_with_a_non_finite_value_is_refused_naming_the_buffer(name, value):
    state = _state_with(_trained(), name, 3, value)
    with pytest.raises(ValueError, match=f"{name} holds NaN or inf"):
        _layer(optimizer="adam", lr=0.01).load_state_dict(state)


def test_a_refused_non_finite_state_leaves_the_layer_as_it_was():
    # The buffers are the engine's memory: a check after torch's copy (a post-hook) would raise
    # with the NaN already in the layer, which would then train to a NaN loss. It is refused first.
    state = _state_with(_trained(), "weight", 3, float("nan"))
    layer = _layer(optimizer="adam", lr=0.01)
    w, b = layer.weight.clone(), layer.bias.clone()
    with pytest.raises(ValueError, match="weight holds NaN"):
        layer.load_state_dict(state)
    finite = bool(torch.isfinite(layer.weight).all())
    assert finite, "the refused state's NaN is in the layer's weights"
    assert torch.equal(layer.weight, w) and torch.equal(layer.bias, b)


def _extra(layer: ExtremeOutput, **changes) -> dict:
    """The layer's state with its _extra_state's entries changed."""
    state = layer.state_dict()
    extra = dict(state["_extra_state"])
    extra.update(changes)
    state["_extra_state"] = extra
    return state


@pytest.mark.parametrize("make, match", [
    (lambda s: {**s.state_dict(), "_extra_state": "garbage"}, "not an ExtremeOutput state"),
    (lambda s: {**s.state_dict(), "_extra_state": {"format": "something/1"}}, "not an ExtremeOutput state"),
    (lambda s: _extra(s, settings={"n_labels": N}), "settings are missing or malformed"),
    (lambda s: _extra(s, settings=None), "settings are missing or malformed"),
    (lambda s: _extra(s, step="3"), "step must be an integer"),
    (lambda s: _extra(s, step=True), "step must be an integer"),
    (lambda s: _extra(s, samples_seen=1.5), "samples_seen must be an integer"),
    (lambda s: _extra(s, step=-5), "step"),
    # A step beyond 64 bits is an int too: unchecked, it reached the engine's set_counters, where
    # pybind11 raised a bare RuntimeError ("Unable to cast Python instance of type <class 'int'>").
    (lambda s: _extra(s, step=2**70), "step"),
], ids=["not-a-dict", "format", "settings-partial", "settings-none", "step-str", "step-bool",
        "samples-float", "step-negative", "step-huge"])
def test_a_malformed_extra_state_is_refused(make, match):
    layer = _trained()
    state = make(layer)
    with pytest.raises(ValueError, match=match):
        _layer(optimizer="adam", lr=0.01).load_state_dict(state)


def test_the_weight_tensor_is_the_engines_memory():
    layer = _layer(n_labels=20)
    h = (layer.weight[3] * 10).unsqueeze(0).clone()
    assert int(layer.predict(h, 1)[0]) == 3
    assert float((h @ layer.weight.T).topk(2).values[0, 1]) > 0  # another label scores above 0
    with torch.no_grad():
        layer.weight[3] = 0
    ids, scores = layer.predict(h, 1)
    assert int(ids) != 3
    assert torch.equal(ids[0], (h @ layer.weight.T + layer.bias).argmax(1))
    assert layer.state_dict()["weight"].data_ptr() == layer.weight.data_ptr()


def test_bf16_precision_trains_on_weights_written_in_place():
    # With precision="bf16" the training forward reads the engine's BF16 copy of the weights,
    # which a step refreshes only for the rows it updates. Writing layer.weight in place (what
    # torch.nn.init.*_ does) must reach training too, not only predict() and eval().
    layer = _layer(n_labels=20, precision="bf16")
    h, y = _hidden(6), _ids(6, 20)
    with torch.no_grad():
        torch.nn.init.normal_(layer.weight, std=1.0, generator=torch.Generator().manual_seed(5))
    expected, _ = _torch_loss(layer, h, y)
    loss, _ = _slide_loss(layer, h, y)
    torch.testing.assert_close(loss, expected, atol=5e-2, rtol=1e-2)


def test_bf16_matmul_gives_torch_loss_and_gradient_within_bf16_rounding():
    """matmul="bf16": the products read BF16-rounded operands, so loss and dL/dhidden are torch's
    within BF16's precision; on an AVX-512 BF16 CPU they differ from the fp32 layer's, elsewhere
    they are the fp32 layer's exactly."""
    h, y = _hidden(9), _ids(9)
    exact = _slide_loss(_with_bias(_layer()), h, y)
    layer = _with_bias(_layer(matmul="bf16"))
    assert "matmul='bf16'" in repr(layer)
    loss, grad = _slide_loss(layer, h, y)
    ref_loss, ref_grad = _torch_loss(layer, h, y)
    torch.testing.assert_close(loss, ref_loss, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(grad, ref_grad, atol=2e-2 * ref_grad.abs().max(), rtol=2e-2)
    native = slide._core.bf16_matmul_native()
    assert (not torch.equal(grad, exact[1])) == native


def test_a_state_saved_before_matmul_existed_loads_as_fp32():
    layer = _trained()
    state = layer.state_dict()
    del state["_extra_state"]["settings"]["matmul"]
    fresh = _layer(optimizer="adam", lr=0.01)
    fresh.load_state_dict(state)
    assert torch.equal(fresh.weight, layer.weight)
    with pytest.raises(ValueError, match="matmul: saved 'fp32', this layer 'bf16'"):
        _layer(optimizer="adam", lr=0.01, matmul="bf16").load_state_dict(state)


# 8. Devices and dtypes.

@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-5), (torch.bfloat16, 2e-2)])
def test_float64_and_bfloat16_hidden(dtype, tolerance):
    layer = _with_bias(_layer())
    h, y = _hidden(8, dtype=dtype), _ids(8)
    loss, grad = _slide_loss(layer, h, y)
    assert loss.dtype == dtype and grad.dtype == dtype
    ref_loss, ref_grad = _torch_loss(layer, h.float(), y)
    torch.testing.assert_close(loss.float(), ref_loss, atol=tolerance, rtol=tolerance)
    torch.testing.assert_close(grad.float(), ref_grad, atol=tolerance * ref_grad.abs().max(), rtol=tolerance)
    ids, _ = layer.predict(h, 2)
    assert torch.equal(ids, layer.predict(h.float(), 2)[0])


@pytest.mark.parametrize("convert", [lambda m: m.to(torch.float64), lambda m: m.half(), lambda m: m.double().float(),
                                     lambda m: m.to("cpu")], ids=["to-float64", "half", "double-float", "to-cpu"])
def test_module_conversions_leave_the_layer_in_float32(convert):
    layer = _with_bias(_layer(optimizer="sgd", lr=0.1))
    model = torch.nn.ModuleDict({"head": layer})
    before = {k: v.clone() for k, v in layer.state_dict().items() if isinstance(v, torch.Tensor)}
    pointer = layer.weight.data_ptr()
    assert convert(model)["head"] is layer
    for name, tensor in layer.state_dict().items():
        if isinstance(tensor, torch.Tensor):
            assert tensor.dtype == torch.float32 and torch.equal(tensor, before[name]), name
    assert layer.weight.data_ptr() == pointer
    # Still the engine's memory: training moves the tensors the module holds.
    _step(layer, _hidden(4, dtype=torch.float64), _ids(4))
    assert not torch.equal(layer.weight, before["weight"])


def test_a_frozen_encoder_still_trains_the_layer():
    encoder = torch.nn.Linear(8, K).requires_grad_(False)
    layer = _layer(optimizer="sgd", lr=0.5)
    hidden = encoder(torch.randn(6, 8))
    assert not hidden.requires_grad
    w = layer.weight.clone()
    loss = layer(hidden, _ids(6))
    assert loss.requires_grad
    loss.backward()
    layer.optimizer.step()
    assert not torch.equal(layer.weight, w)


# 9. Threads.

def test_one_and_two_threads_train_alike():
    losses, weights = {}, {}
    for threads in (1, 2):
        layer = _with_bias(_layer(n_labels=300, optimizer="adam", lr=0.01, threads=threads))
        assert layer.threads == threads
        losses[threads] = torch.stack([_step(layer, _hidden(32, seed=s), _ids(32, 300, seed=s)) for s in range(4)])
        weights[threads] = layer.weight.clone()
    assert losses[1][0] > losses[1][-1]  # it trained
    torch.testing.assert_close(losses[1], losses[2], atol=1e-5, rtol=0)
    torch.testing.assert_close(weights[1], weights[2], atol=1e-5, rtol=0)


# 10. Bad input.

_H = _hidden(4, 8)
_Y = torch.tensor([1, 2, 3, 4])


def _nan_row():
    h = _H.clone()
    h[2, 5] = float("nan")
    return h


def _inf_row():
    h = _H.clone()
    h[1, 0] = -float("inf")
    return h


@pytest.mark.parametrize("hidden, match", [
    (_H.numpy(), "hidden must be a torch.Tensor, got ndarray"),
    ([[0.0] * 8] * 4, "hidden must be a torch.Tensor, got list"),
    (_H[0], r"hidden must be \(rows, 8\), got shape \(8,\)"),
    (_H[None], r"hidden must be \(rows, 8\), got shape \(1, 4, 8\)"),
    (_hidden(4, 9), r"hidden must be \(rows, 8\), got shape \(4, 9\)"),
    (_H.long(), "hidden must be a floating-point tensor, got torch.int64"),
    (_nan_row(), "hidden row 2 holds NaN or inf"),
    (_inf_row(), "hidden row 1 holds NaN or inf"),
], ids=["ndarray", "list", "1-d", "3-d", "width", "integer", "nan", "inf"])
def test_bad_hidden_is_a_clear_value_error(hidden, match):
    layer = _layer(8, 20)
    with pytest.raises(ValueError, match=match):
        layer(hidden, _Y)
    with pytest.raises(ValueError, match=match):
        layer.predict(hidden, 1)
    with pytest.raises(ValueError, match=match):
        layer.predict_proba(hidden, 1)


@pytest.mark.parametrize("labels, match", [
    (_Y[:3], "labels has 3 class ids but hidden has 4 rows"),
    (torch.zeros(5, 20), "labels has 5 rows but hidden has 4"),
    ([[1], [2], [3]], "labels has 3 rows but hidden has 4"),
    (sp.csr_matrix((5, 20), dtype=np.float32), "labels has 5 rows but hidden has 4"),
    (torch.tensor([1, -1, 3, 4]), r"labels row 1 has label id -1 outside \[0, 20\)"),
    (torch.tensor([1, 2, 20, 4]), r"labels row 2 has label id 20 outside \[0, 20\)"),
    ([[1], [2], [-1], [4]], "-1"),
    ([[1], [2], [3], [4, 25]], "25"),
    (["a", "b", "c", "d"], "string 'a'; label ids must be integers"),
    ([["a"], ["b"], ["c"], ["d"]], "label ids must be integers"),
    (torch.tensor([1.5, 2.0, 3.0, 4.0]), "label ids must be integers"),
    (torch.zeros(4, 21), "width output_dim=20"),
], ids=["ids-rows", "indicator-rows", "list-rows", "sparse-rows", "negative-id", "id-too-big", "negative-in-list",
        "too-big-in-list", "strings", "string-lists", "fractional-ids", "indicator-width"])
def test_bad_labels_are_a_clear_value_error(labels, match):
    layer = _layer(8, 20, optimizer="sgd")
    w = layer.weight.clone()
    with _no_warnings(), pytest.raises(ValueError, match=match):
        layer(_H, labels)
    layer.optimizer.step()  # the refused batch staged nothing
    assert torch.equal(layer.weight, w)


@pytest.mark.parametrize("args, kw, match", [
    ((0, 20), {}, "in_features must be >= 1"),
    ((8, 1), {}, "n_labels must be >= 2"),
    ((8, 20), {"mode": "fast"}, "mode must be one of"),
    ((8, 20), {"mode": "sample"}, "mode must be 'batch' or 'dense'"),
    ((8, 20), {"mode": "sample", "lsh": slide.MODES["sample"].lsh_config()}, "mode must be 'batch' or 'dense'"),
    ((8, 20), {"optimizer": "rmsprop"}, "optimizer must be one of"),
    ((8, 20), {"lr": 0}, "lr must be > 0"),
    ((8, 20), {"lr": -0.1}, "lr must be > 0"),
    ((8, 20), {"lr": float("nan")}, "lr must be a finite number"),
    ((8, 20), {"lsh": {"k": 3}}, "lsh must be an LSHConfig"),
    ((8, 20), {"mode": "dense", "lsh": slide.MODES["batch"].lsh_config()}, "mode='dense' contradicts lsh"),
    ((8, 20), {"mode": "batch", "lsh": slide.MODES["sample"].lsh_config()}, "mode='batch' contradicts lsh"),
], ids=["in_features", "n_labels", "mode", "sample", "sample-lsh", "optimizer", "lr-0", "lr-negative", "lr-nan",
        "lsh-dict", "dense-with-lsh", "batch-with-sample-lsh"])
def test_bad_constructor_arguments_are_a_clear_value_error(args, kw, match):
    with pytest.raises(ValueError, match=match):
        ExtremeOutput(*args, threads=1, **kw)


@pytest.mark.parametrize("call, match", [
    (lambda layer, h: layer.predict(h, 0), "k must be >= 1"),
    (lambda layer, h: layer.predict(h, 21), "k must be <= 20"),
    (lambda layer, h: layer.predict_proba(h, 0), "k must be >= 1"),
    (lambda layer, h: layer.predict_proba(h, 21), "k must be <= 20"),
    (lambda layer, h: layer.predict(h, 1.5), "k must be an integer"),
    (lambda layer, h: layer.predict(h, 2, scan="int4"), "scan must be 'auto', 'fp32' or 'int8'"),
], ids=["k-0", "k-too-big", "proba-k-0", "proba-k-too-big", "k-float", "scan"])
def test_bad_predict_arguments_are_a_clear_value_error(call, match):
    layer = _layer(8, 20)
    with pytest.raises(ValueError, match=match):
        call(layer, _H)
    assert layer.predict(_H, 20)[0].shape == (4, 20)  # k = n_labels is fine
