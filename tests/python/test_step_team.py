"""A training step too small to gain from a second thread runs on one (cpp/train/step_team.h,
slide/parallel_work_floor.py). The suite runs with the floor at 0 (tests/conftest.py), so each
test here sets the floor it needs and puts the suite's back."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide import LSHConfig, _core
from slide.parallel_work_floor import VARIABLE, floor_from_environment


@pytest.fixture
def floor():
    """Sets the engine's floor for one test, then puts the suite's back."""
    before = _core.parallel_work_floor()
    yield _core.set_parallel_work_floor
    _core.set_parallel_work_floor(before)


def _problem(n=64, d=40, labels=30, density=0.5, seed=1):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr", dtype=np.float32)
    Y = sp.csr_matrix((np.ones(n, np.float32), (np.arange(n), rng.integers(0, labels, n))), shape=(n, labels))
    return X, Y


def _step_team(net, X, rows):
    X = sp.csr_matrix(X)
    return _core.testing.step_team(net._core, X.indptr.astype(np.int64), X.indices.astype(np.int32),
                                   X.data.astype(np.float32), np.asarray(rows, np.int64))


def test_a_dense_step_counts_its_features_and_its_output_products(floor):
    X, Y = _problem()
    net = slide.Network(40, 30, hidden=[16], mode="dense", threads=2, seed=0)
    rows = np.arange(10, 26)
    work = int(X[rows].nnz) * 16 + len(rows) * 30 * 16
    floor(work)
    assert tuple(_step_team(net, X, rows)) == (work, 2)  # at the floor: split
    floor(work + 1)
    assert tuple(_step_team(net, X, rows)) == (work, 1)  # below it: one thread
    floor(0)
    assert tuple(_step_team(net, X, rows)) == (work, 2)


def test_hidden_layers_count_and_a_one_thread_network_never_splits(floor):
    X, _ = _problem()
    net = slide.Network(40, 30, hidden=[16, 8], mode="dense", threads=1, seed=0)
    rows = np.arange(5)
    work = int(X[rows].nnz) * 16 + len(rows) * (8 * 16 + 30 * 8)
    floor(0)
    assert tuple(_step_team(net, X, rows)) == (work, 1)


def test_a_sampled_layer_counts_the_most_its_tables_return(floor):
    X, _ = _problem(d=40)
    lsh = LSHConfig(l=4, bucket_size=8, min_active=20, max_active=0)
    net = slide.Network(40, 1000, hidden=[16], lsh=lsh, threads=2, seed=0)
    rows = np.arange(8)
    assert _step_team(net, X, rows)[0] == int(X[rows].nnz) * 16 + len(rows) * max(4 * 8, 20) * 16
    lsh = LSHConfig(l=50, bucket_size=128, min_active=0, max_active=100)
    net = slide.Network(40, 1000, hidden=[16], lsh=lsh, threads=2, seed=0)
    assert _step_team(net, X, rows)[0] == int(X[rows].nnz) * 16 + len(rows) * 100 * 16


def _trained(X, Y, threads, seed):
    net = slide.Network(X.shape[1], Y.shape[1], hidden=[16], mode="dense", threads=threads, seed=seed)
    net.fit(X, Y, epochs=2, batch_size=X.shape[0], progress=False)
    return {name: np.array(a) for name, a in net.weights().items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_below_the_floor_two_threads_train_exactly_as_one(floor, seed):
    X, Y = _problem(density=1.0, seed=seed)
    floor(10**15)
    one, two = _trained(X, Y, 1, seed), _trained(X, Y, 2, seed)
    assert one.keys() == two.keys()
    for name in one:
        np.testing.assert_array_equal(one[name], two[name], err_msg=name)


def test_the_floor_rejects_a_negative_count():
    with pytest.raises(ValueError, match="multiply-adds"):
        _core.set_parallel_work_floor(-1)


@pytest.mark.parametrize("value, expected", [(None, None), ("", None), ("  ", None), ("0", 0), ("300000", 300000),
                                             (" 42 ", 42), (str(2**63 - 1), 2**63 - 1)])
def test_the_environment_sets_a_floor_or_none(value, expected):
    environ = {} if value is None else {VARIABLE: value}
    assert floor_from_environment(environ) == expected


@pytest.mark.parametrize("value", ["-1", "+5", "1.5", "lots", "1e6", "1_000", "٣", str(2**63)])
def test_a_malformed_floor_names_the_variable(value):
    with pytest.raises(ValueError, match=re.escape(f"{VARIABLE}={value!r}: expected a whole number")):
        floor_from_environment({VARIABLE: value})


def _import_slide(env_value, cwd):
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    if env_value is not None:
        env[VARIABLE] = env_value
    return subprocess.run([sys.executable, "-c", "import slide; print(slide._core.parallel_work_floor())"],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_without_the_variable_the_engine_keeps_its_default_and_with_it_takes_it(tmp_path):
    plain = _import_slide(None, tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert int(plain.stdout) == _core.DEFAULT_PARALLEL_WORK_FLOOR > 0
    chosen = _import_slide("12345", tmp_path)
    assert chosen.returncode == 0, chosen.stderr
    assert int(chosen.stdout) == 12345


def test_a_malformed_variable_stops_the_import_with_a_clear_error(tmp_path):
    bad = _import_slide("fast", tmp_path)
    assert bad.returncode != 0
    assert f"ValueError: {VARIABLE}='fast': expected a whole number" in bad.stderr
