"""threads=1 with a seed is bit-for-bit reproducible; save/load round-trips exactly."""

import json
import os
import zipfile

import numpy as np
import pytest

import slide
from slide.datasets import make_train_test


@pytest.fixture(scope="module")
def tiny():
    return make_train_test(1500, 300, 800, 3000, seed=4, avg_nnz=20, avg_labels=2)


def _net(seed=0, threads=1, optimizer="adam", **kw):
    lsh = slide.LSHConfig(k=3, l=10, rehash_every=300, rebuild_every=900, **kw)
    return slide.Network(800, 3000, hidden=(32,), lsh=lsh, threads=threads, seed=seed, learning_rate=2e-3,
                         optimizer=optimizer)


def _trained(tiny, **kw):
    net = _net(**kw)
    net.fit(tiny[0].X, tiny[0].Y, epochs=2, batch_size=64, progress=False)
    return net


def test_one_thread_runs_are_bit_identical(tiny):
    a, b = _trained(tiny), _trained(tiny)
    for name, w in a.weights().items():
        np.testing.assert_array_equal(w, b.weights()[name], err_msg=name)
    assert a.table_stats()["layers.0"]["rehashes"] > 0, "the run must exercise rehashing"
    assert a.table_stats()["layers.0"]["generation"] > 1, "the run must exercise rebuilding"


def test_another_seed_gives_other_weights(tiny):
    a, b = _trained(tiny), _trained(tiny, seed=1)
    assert not np.array_equal(a.weights()["layers.0.weight"], b.weights()["layers.0.weight"])


@pytest.mark.parametrize("policy", ["fifo", "reservoir"])
def test_save_load_round_trip(tiny, tmp_path, policy):
    net = _trained(tiny, bucket_policy=policy)
    test = tiny[1]
    path = tmp_path / "model.npz"
    net.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"], "no temporary files may remain"
    loaded = slide.Network.load(path)
    assert loaded.get_config() == net.get_config()
    for mode in ("dense", "sparse"):
        ids_a, scores_a = net.predict(test.X, k=5, mode=mode)
        ids_b, scores_b = loaded.predict(test.X, k=5, mode=mode)
        np.testing.assert_array_equal(ids_a, ids_b)
        np.testing.assert_array_equal(scores_a, scores_b)
    for name, w in net.weights().items():
        np.testing.assert_array_equal(w, loaded.weights()[name], err_msg=name)
    assert loaded.table_stats() == net.table_stats()


@pytest.mark.parametrize("optimizer", slide.optimizers.OPTIMIZERS)
def test_resumed_training_continues_identically(tiny, tmp_path, optimizer):
    """Saving with optimizer state and continuing equals never having stopped (threads=1)."""
    straight = _net(optimizer=optimizer)
    straight.fit(tiny[0].X, tiny[0].Y, epochs=1, batch_size=64, progress=False, shuffle=False)
    straight.fit(tiny[0].X, tiny[0].Y, epochs=1, batch_size=64, progress=False, shuffle=False)
    first = _net(optimizer=optimizer)
    first.fit(tiny[0].X, tiny[0].Y, epochs=1, batch_size=64, progress=False, shuffle=False)
    first.save(tmp_path / "ckpt.npz")
    resumed = slide.Network.load(tmp_path / "ckpt.npz")
    resumed.fit(tiny[0].X, tiny[0].Y, epochs=1, batch_size=64, progress=False, shuffle=False)
    for name, w in straight.weights().items():
        np.testing.assert_array_equal(w, resumed.weights()[name], err_msg=name)


def test_model_without_optimizer_state_is_smaller_and_predicts_the_same(tiny, tmp_path):
    net = _trained(tiny)
    net.save(tmp_path / "full.npz")
    net.save(tmp_path / "slim.npz", include_optimizer=False)
    assert os.path.getsize(tmp_path / "slim.npz") < 0.7 * os.path.getsize(tmp_path / "full.npz")
    slim = slide.Network.load(tmp_path / "slim.npz")
    np.testing.assert_array_equal(slim.predict(tiny[1].X)[0], net.predict(tiny[1].X)[0])


def test_bad_model_files_give_clear_errors(tiny, tmp_path):
    net = _net()
    path = tmp_path / "m.npz"
    net.save(path)
    with pytest.raises(FileNotFoundError, match="no model file"):
        slide.Network.load(tmp_path / "missing.npz")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="truncated or corrupted|not a readable"):
        slide.Network.load(truncated)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(ValueError):
        slide.Network.load(junk)
    # a file from a future format version
    newer = tmp_path / "newer.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["__slide_header__"].tobytes())
    header["version"] = 99
    arrays["__slide_header__"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    np.savez(newer, **arrays)
    with pytest.raises(ValueError, match="newer slide"):
        slide.Network.load(newer)
    # an array of the wrong shape
    bad = tmp_path / "bad.npz"
    arrays["__slide_header__"] = np.frombuffer(json.dumps({**header, "version": 2}).encode(), np.uint8)
    arrays["layers.0.bias"] = np.zeros(7, np.float32)
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match="layers.0.bias"):
        slide.Network.load(bad)
    assert zipfile.is_zipfile(path)


def test_failed_save_keeps_the_previous_file(tiny, tmp_path, monkeypatch):
    net = _net()
    path = tmp_path / "m.npz"
    net.save(path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="No space"):
        net.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]
