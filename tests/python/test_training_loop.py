"""The training loop as a user sees it: per-epoch metrics, validation, callbacks, the GIL."""

import threading
import time

import numpy as np

import slide
from slide.datasets import make_train_test


def _problem():
    return make_train_test(3000, 500, 1000, 2000, seed=3, avg_nnz=30, avg_labels=2)


def test_history_reports_validation_metrics_per_epoch():
    train, test = _problem()
    net = slide.Network(1000, 2000, hidden=(32,), lsh=slide.LSHConfig(k=3, l=10), threads=2, seed=0)
    history = net.fit(train.X, train.Y, epochs=3, batch_size=64, validation_data=(test.X, test.Y), progress=False)
    assert len(history) == 3 and not history.interrupted
    for e in history.epochs:
        assert {"loss", "samples_per_second", "active_per_sample", "val_P@1", "val_P@5", "val_nDCG@3"} <= set(e)
    assert history[-1]["val_P@1"] > history[0]["val_P@1"]


def test_callback_can_stop_training():
    train, _ = _problem()
    net = slide.Network(1000, 2000, hidden=(32,), lsh=None, threads=1, seed=0)
    seen = []
    history = net.fit(train.X, train.Y, epochs=5, progress=False, callback=lambda n, m: seen.append(m) or False)
    assert len(history) == 1 and len(seen) == 1


def test_lr_schedules_change_the_result():
    train, _ = _problem()
    weights = []
    for schedule in ("constant", "cosine", lambda step, total: 0.5):
        net = slide.Network(1000, 2000, hidden=(32,), lsh=None, threads=1, seed=0, lr_schedule=schedule)
        net.fit(train.X[:500], train.Y[:500], epochs=2, batch_size=100, progress=False)
        weights.append(net.weights()["layers.0.weight"].copy())
    assert not np.array_equal(weights[0], weights[1]) and not np.array_equal(weights[0], weights[2])


def test_training_releases_the_gil():
    """Another Python thread keeps running while a long batch trains in C++."""
    rng = np.random.default_rng(0)
    import scipy.sparse as sp

    X = sp.random(512, 2000, density=0.02, format="csr", dtype=np.float32, random_state=rng)
    # Wide enough that the one batch takes about a second on a fast core (the check below needs > 0.5 s).
    Y = [[int(i)] for i in rng.integers(0, 500_000, 512)]
    net = slide.Network(2000, 500_000, hidden=(64,), lsh=None, threads=1, seed=0)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (net.fit(X, Y, epochs=1, batch_size=512, progress=False), done.set()))
    start = time.perf_counter()
    worker.start()
    longest_gap, last, ticks = 0.0, time.perf_counter(), 0
    while not done.is_set():
        time.sleep(0.005)
        now = time.perf_counter()
        longest_gap, last, ticks = max(longest_gap, now - last), now, ticks + 1
    worker.join()
    total = time.perf_counter() - start
    assert total > 0.5, "the batch must be long enough to tell"
    assert longest_gap < 0.25 * total, f"main thread stalled {longest_gap:.2f}s of {total:.2f}s"
