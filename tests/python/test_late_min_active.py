"""lsh.late_min_active: once a network has trained lsh.late_after samples, training tops its active
sets up to late_min_active instead of min_active, in the batch-shared mode, per sample, in
slide.torch.ExtremeOutput and after a save and load; inference is unchanged."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._inputs import as_features, as_labels

IN, OUT, B = 40, 5000, 16


def _data(n=B, out=OUT, seed=0):
    rng = np.random.default_rng(seed)
    X = as_features(sp.random(n, IN, density=6 / IN, format="csr", dtype=np.float32, random_state=rng), IN)
    Y = as_labels([np.sort(rng.choice(out, 2, replace=False)) for _ in range(n)], out, n)
    return X, Y


def _active_per_sample(net, X, Y) -> float:
    """One training batch of every row of X; the shared set's size per sample."""
    rows = np.arange(X.shape[0], dtype=np.int64)
    stats = net._core.train_batch(X.indptr, X.indices, X.data, Y.indptr, Y.indices, rows, 0.01, apply=True)
    return stats["active"] / stats["samples"]


def _batch_net(**late):
    lsh = slide.LSHConfig(k=6, l=2, batch_active=10, min_active=1500, **late)
    return slide.Network(IN, OUT, hidden=(16,), lsh=lsh, threads=1, seed=1)


def test_the_shared_set_grows_from_late_after_samples_on():
    X, Y = _data()
    net = _batch_net(late_min_active=3000, late_after=2 * B)
    assert [_active_per_sample(net, X, Y) for _ in range(4)] == [1500, 1500, 3000, 3000]
    assert "3000 after 32 samples" in repr(net)


def test_without_late_min_active_the_set_keeps_min_active():
    X, Y = _data()
    net = _batch_net(late_after=0)
    assert [_active_per_sample(net, X, Y) for _ in range(3)] == [1500] * 3
    lower = _batch_net(late_min_active=1000, late_after=0)  # only ever raises the floor
    assert _active_per_sample(lower, X, Y) == 1500


def test_a_loaded_network_resumes_at_the_late_size(tmp_path):
    X, Y = _data()
    net = _batch_net(late_min_active=3000, late_after=2 * B)
    for _ in range(2):
        _active_per_sample(net, X, Y)
    net.save(tmp_path / "m.npz")
    loaded = slide.Network.load(tmp_path / "m.npz")
    assert loaded.lsh.late_min_active == 3000 and loaded.lsh.late_after == 2 * B
    assert _active_per_sample(loaded, X, Y) == 3000


def test_per_sample_training_sets_grow_and_inference_sets_do_not():
    X, Y = _data()
    lsh = slide.LSHConfig(k=6, l=2, min_active=100, late_min_active=400, late_after=B, batch_negatives=0)
    net = slide.Network(IN, OUT, hidden=(16,), lsh=lsh, threads=1, seed=1)

    def sizes():
        args = (X.indptr, X.indices, X.data, Y.indptr, Y.indices, 0)
        train = net._core.output_activations(*args, True)[0].size
        infer = net._core.output_activations(*args, False)[0].size
        return train, infer

    before = sizes()
    assert before[0] < 400 and before[1] == OUT
    _active_per_sample(net, X, Y)
    after = sizes()
    assert after == (400, OUT)


def test_a_sampled_hidden_layer_follows_its_own_schedule():
    X, Y = _data(out=200)
    hidden_lsh = slide.LSHConfig(k=4, l=2, min_active=8, late_min_active=64, late_after=B)
    net = slide.Network(IN, 200, hidden=(16, 64), hidden_lsh=(None, hidden_lsh), threads=1, seed=1,
                        lsh=slide.LSHConfig(k=6, l=2, min_active=200))

    def first_layer_rows_with_gradient():
        rows = np.arange(B, dtype=np.int64)
        net._core.train_batch(X.indptr, X.indices, X.data, Y.indptr, Y.indices, rows[:1], 0.0, apply=False)
        grad = net.weights()["layers.0.weight_grad"].copy()  # a view of the engine's memory
        net._core.clear_gradients()
        return int((np.abs(grad).sum(axis=1) > 0).sum())

    early = first_layer_rows_with_gradient()
    net._core.train_batch(X.indptr, X.indices, X.data, Y.indptr, Y.indices, np.arange(B, dtype=np.int64), 0.01,
                          apply=True)
    late = first_layer_rows_with_gradient()
    assert early < 64 / 2 < late  # ReLU may zero a few of the 64 active neurons' gradients


@pytest.mark.parametrize("field,value", [("late_min_active", -1), ("late_after", -5), ("late_after", 2**62 + 1),
                                         ("late_min_active", 1.5), ("late_after", "soon")])
def test_bad_late_settings_name_the_setting(field, value):
    with pytest.raises(ValueError, match=field):
        slide.LSHConfig(**{field: value})


def test_run_files_take_the_late_settings():
    lsh = slide.LSHConfig.from_dict({"min_active": 10, "late_min_active": 20, "late_after": 1000})
    assert (lsh.late_min_active, lsh.late_after) == (20, 1000)
    assert slide.MODES["batch"].lsh_config().late_min_active == 0  # off unless asked for


def test_the_torch_layer_steps_more_rows_after_late_after_and_keeps_the_schedule_in_its_state():
    torch = pytest.importorskip("torch")
    from slide.torch import ExtremeOutput

    lsh = slide.MODES["batch"].lsh_config(min_active=300, batch_active=50, late_min_active=1200, late_after=64)
    layer = ExtremeOutput(16, OUT, lsh=lsh, threads=1, seed=0)
    gen = torch.Generator().manual_seed(0)

    def moved_rows() -> int:
        w = layer.weight.clone()
        loss = layer(torch.randn(32, 16, generator=gen), torch.randint(0, OUT, (32,), generator=gen))
        loss.backward()
        layer.optimizer.step()
        return int((layer.weight != w).any(dim=1).sum())

    assert [moved_rows() for _ in range(2)] == [300, 300]
    state = layer.state_dict()
    assert moved_rows() == 1200
    again = ExtremeOutput(16, OUT, lsh=lsh, threads=1, seed=0)
    again.load_state_dict(state)
    layer = again
    assert moved_rows() == 1200
