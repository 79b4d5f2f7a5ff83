"""A Network runs one call at a time: a second Python thread gets a clear RuntimeError instead
of sharing the worker threads' scratch (which segfaulted or silently ruined the model)."""

import threading
import time

import numpy as np
import pytest

import slide


@pytest.fixture(scope="module")
def problem(small_problem):
    return small_problem


def _wait_until_busy(net, timeout=60.0):
    end = time.monotonic() + timeout
    while net._busy_with is None:
        assert time.monotonic() < end, "the training thread never started"
        time.sleep(0.001)


@pytest.mark.parametrize("second", ["fit", "predict", "evaluate", "loss", "save"])
def test_a_second_thread_is_refused_while_fit_runs(problem, tmp_path, second):
    train, test = problem
    make = lambda: slide.Network(train.X.shape[1], train.Y.shape[1], hidden=(32,),  # noqa: E731
                                 lsh=slide.LSHConfig(k=3, l=8), threads=1, seed=0)
    net, undisturbed = make(), make()
    undisturbed.fit(train.X, train.Y, progress=False)
    errors = []

    def train_in_background():
        try:
            net.fit(train.X, train.Y, progress=False)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    worker = threading.Thread(target=train_in_background)
    worker.start()
    _wait_until_busy(net)
    calls = {"fit": lambda: net.fit(train.X, train.Y, progress=False), "predict": lambda: net.predict(test.X),
             "evaluate": lambda: net.evaluate(test.X, test.Y), "loss": lambda: net.loss(test.X, test.Y),
             "save": lambda: net.save(tmp_path / "m.npz")}
    with pytest.raises(RuntimeError, match=rf"Network.{second} was called while another thread runs Network.fit"):
        calls[second]()
    worker.join()
    assert not errors
    for name, array in undisturbed.weights().items():  # threads=1: bit for bit, as if alone
        np.testing.assert_array_equal(net.weights()[name], array, err_msg=name)


def test_the_same_thread_may_reenter_from_a_callback(problem):
    train, test = problem
    net = slide.Network(train.X.shape[1], train.Y.shape[1], hidden=(16,), lsh=None, threads=2, seed=0)
    seen = []
    net.fit(train.X[:2000], train.Y[:2000], progress=False,
            callback=lambda n, m: seen.append(n.evaluate(test.X[:100], test.Y[:100])["P@1"]))
    assert len(seen) == 1
    # and once the call is over, any thread may use the network
    done = []
    t = threading.Thread(target=lambda: done.append(net.predict(test.X[:5])))
    t.start()
    t.join()
    assert done and done[0][0].shape == (5, 5)
