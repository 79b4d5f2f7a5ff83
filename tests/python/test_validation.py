"""User errors become ValueError naming what was expected; nothing crashes."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide


@pytest.fixture(scope="module")
def net():
    return slide.Network(50, 200, hidden=(16,), lsh=slide.LSHConfig(k=2, l=4), threads=1)


def _X(n=4, cols=50):
    return sp.random(n, cols, density=0.2, format="csr", dtype=np.float32, random_state=0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(input_dim=0), "input_dim"),
    (dict(output_dim=-3), "output_dim"),
    (dict(hidden=()), "hidden"),
    (dict(hidden=(0,)), "hidden layer size"),
    (dict(learning_rate=-1.0), "learning_rate"),
    (dict(learning_rate=float("nan")), "learning_rate"),
    (dict(threads=0), "threads"),
    (dict(optimizer="rmsprop"), "optimizer must be one of adam, adagrad, sgd"),
    (dict(lr_schedule="warp"), "lr_schedule"),
    (dict(lsh="dwta"), "LSHConfig"),
    (dict(hidden_lsh=(slide.LSHConfig(),)), "first hidden layer"),
    (dict(beta2=1.5), "beta2"),
])
def test_bad_constructor_arguments(kwargs, match):
    args = dict(input_dim=50, output_dim=200, hidden=(16,), threads=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        slide.Network(**args)


def test_bad_features(net):
    Y = [[1], [2], [3], [4]]
    with pytest.raises(ValueError, match="columns, expected input_dim=50"):
        net.fit(_X(cols=51), Y, progress=False)
    X = _X()
    X.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        net.fit(X, Y, progress=False)
    X = _X()
    X.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        net.predict(X)
    with pytest.raises(ValueError, match="scipy.sparse"):
        net.fit([[1, 2]], Y, progress=False)
    with pytest.raises(ValueError, match="2-D"):
        net.predict(np.zeros(50, np.float32))
    with pytest.raises(ValueError, match="real numbers"):
        net.predict(sp.csr_matrix(np.ones((2, 50), dtype=np.complex64)))


def test_bad_labels(net):
    X = _X()
    with pytest.raises(ValueError, match=r"outside \[0, 200\)"):
        net.fit(X, [[1], [2], [200], [4]], progress=False)
    with pytest.raises(ValueError, match=r"outside \[0, 200\)"):
        net.fit(X, [[1], [-1], [2], [4]], progress=False)
    with pytest.raises(ValueError, match="rows but X has"):
        net.fit(X, [[1], [2]], progress=False)
    with pytest.raises(ValueError, match="columns, expected output_dim=200"):
        net.fit(X, sp.csr_matrix((4, 300)), progress=False)
    with pytest.raises(ValueError, match="dense"):  # label ids in a dense array: not an indicator matrix
        net.fit(X, np.array([[1, 2], [3, 4], [5, 6], [7, 8]]), progress=False)
    with pytest.raises(ValueError, match="0/1 indicator"):
        net.fit(X, np.full((4, 200), 2), progress=False)


def test_bad_fit_and_predict_arguments(net):
    X, Y = _X(), [[1], [2], [3], [4]]
    for kwargs, match in [(dict(epochs=0), "epochs"), (dict(batch_size=0), "batch_size"),
                          (dict(validation_mode="fuzzy"), "validation_mode")]:
        with pytest.raises(ValueError, match=match):
            net.fit(X, Y, progress=False, **kwargs)
    with pytest.raises(ValueError, match="exceeds output_dim"):
        net.predict(X, k=201)
    with pytest.raises(ValueError, match="k must be"):
        net.predict(X, k=0)
    with pytest.raises(ValueError, match="mode"):
        net.predict(X, mode="magic")
    dense = slide.Network(50, 200, hidden=(16,), lsh=None, threads=1)
    with pytest.raises(ValueError, match="sampled output layer"):
        dense.predict(X, mode="sparse")


def test_core_rejects_bad_arrays_without_crashing(net):
    X = _X()
    core = net._core
    indptr, indices, data = X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data
    yp, yi = np.array([0, 1, 2, 3, 4], np.int64), np.array([1, 2, 3, 4], np.int32)
    rows = np.arange(4, dtype=np.int64)
    bad_indices = indices.copy()
    bad_indices[0] = 10**6
    with pytest.raises(ValueError, match="feature id"):
        core.train_batch(indptr, bad_indices, data, yp, yi, rows, 0.1)
    with pytest.raises(ValueError, match="out of range"):
        core.train_batch(indptr, indices, data, yp, yi, np.array([7], np.int64), 0.1)
    with pytest.raises(ValueError, match="label"):
        core.train_batch(indptr, indices, data, yp, np.array([1, 2, 999, 4], np.int32), rows, 0.1)
    with pytest.raises(ValueError, match="sorted and unique"):
        core.train_batch(indptr, indices, data, np.array([0, 2, 2, 3, 4], np.int64),
                         np.array([5, 5, 3, 4], np.int32), rows, 0.1)
    with pytest.raises(ValueError, match="indptr"):
        core.predict(indptr[:-1], indices, data, 3, True)
    with pytest.raises(ValueError, match="learning rate"):
        core.train_batch(indptr, indices, data, yp, yi, rows, float("nan"))


def test_labels_as_lists_and_matrix_agree(net):
    X = _X()
    lists = [[3, 1, 3], [], [199], [0, 5]]
    Y = sp.csr_matrix((np.ones(5), ([0, 0, 2, 3, 3], [1, 3, 199, 0, 5])), shape=(4, 200))
    a = slide.Network(50, 200, hidden=(16,), lsh=None, threads=1, seed=2)
    b = slide.Network(50, 200, hidden=(16,), lsh=None, threads=1, seed=2)
    a.fit(X, lists, epochs=2, progress=False)
    b.fit(X, Y, epochs=2, progress=False)
    np.testing.assert_array_equal(a.weights()["layers.0.weight"], b.weights()["layers.0.weight"])


# ---------------------------------------------------------------- reliability round two (issue 12)

@pytest.mark.parametrize("k", [1431655765, 715827883, 2**31 - 1, 11])
def test_lsh_k_whose_code_width_overflows_is_a_value_error(k):
    # k x 3 bits wrapped int32 and passed the "<= 32" check; the process was OOM-killed.
    with pytest.raises(ValueError, match=r"lsh.k x code bits must be <= 32 .*k <= 10"):
        slide.Network(50, 200, hidden=(16,), lsh=slide.LSHConfig(k=k, l=2), threads=1)


def _corrupt(kind):
    X = _X(20)
    if kind == "huge":
        X.indptr[5] = 10**7
    elif kind == "decreasing":
        X.indptr[5] = X.indptr[3] - 1
    elif kind == "end":
        X.indptr[-1] += 5
    elif kind == "index":
        X.indices[2] = 10**6
    elif kind == "negative":
        X.indices[2] = -1
    elif kind == "short":
        X.indptr = X.indptr[:-2]
    return X


@pytest.mark.parametrize("kind", ["huge", "decreasing", "end", "index", "negative", "short"])
@pytest.mark.parametrize("call", ["fit", "predict", "evaluate", "loss"])
def test_corrupt_csr_structure_is_a_value_error_not_a_crash(net, kind, call):
    X, Y = _corrupt(kind), [[1]] * 20
    run = {"fit": lambda: net.fit(X, Y, progress=False), "predict": lambda: net.predict(X),
           "evaluate": lambda: net.evaluate(X, Y), "loss": lambda: net.loss(X, Y)}[call]
    with pytest.raises(ValueError, match=r"X: CSR (indptr|indices)"):
        run()


def test_corrupt_label_matrix_and_coo_inputs(net):
    X = _X()
    Y = sp.csr_matrix((np.ones(4), ([0, 1, 2, 3], [1, 2, 3, 4])), shape=(4, 200))
    Y.indptr[2] = 10**6
    with pytest.raises(ValueError, match="Y: CSR indptr"):
        net.fit(X, Y, progress=False)
    C = _X().tocoo()
    C.col[0] = 10**6
    with pytest.raises(ValueError, match="COO column indices"):
        net.predict(C)
    np.testing.assert_array_equal(net.predict(_X().tocsc())[0], net.predict(_X())[0])


@pytest.mark.parametrize("Y, match", [
    ([[[1, 2]], [[3, 4]], [[5, 6]], [[7, 8]]], "row 0 is a 2-D array"),  # was accepted with labels shifted
    ([2**64, 1, 2, 3], "label id 18446744073709551616 outside"),
    ([[2**63], [1], [2], [3]], "outside"),
    (["a", "b", "c", "d"], "string 'a'"),
    ([[1.5], [1], [2], [3]], "must be integers"),
    ([[True], [1], [2], [3]], "must be integers"),
    ([[0, False], [1], [2], [3]], "row 0 holds False; label ids must be integers, not booleans"),  # was label 0
    ([[float("nan")], [1], [2], [3]], "must be integers"),
    ([[1], {"a": 1}, [2], [3]], "row 1"),
    (42, "sequence of per-sample labels"),
])
def test_malformed_label_rows_name_the_row(net, Y, match):
    with pytest.raises(ValueError, match=match):
        net.fit(_X(), Y, progress=False)


def test_class_vectors_indicator_matrices_and_scalar_rows_mean_the_same_labels(net):
    X = _X()
    expected = [[1], [2], [3], [0]]
    for Y in (np.array([1, 2, 3, 0]), [1, 2, 3, 0], np.eye(200, dtype=np.int8)[[1, 2, 3, 0]],
              np.eye(200, dtype=bool)[[1, 2, 3, 0]], [[1], 2, np.int64(3), [0]]):
        labels = net.prepare(X, Y).Y
        assert [list(labels[i].indices) for i in range(4)] == expected


@pytest.mark.parametrize("kwargs, match", [
    (dict(input_dim=2**31), "input_dim must be <= 2,147,483,647"),
    (dict(output_dim=2**40), "output_dim must be <="),
    (dict(hidden=(2**31,)), "hidden layer size must be <="),
    (dict(seed=99999999999999999999999), "seed must be <="),
    (dict(seed=-1), "seed must be >= 0"),
    (dict(hidden="128"), "hidden must be a layer size"),
    (dict(learning_rate="fast"), "learning_rate"),
    (dict(beta1="x"), "beta1 must be a finite number"),
    (dict(learning_rate=-2**63 - 1), "learning_rate must be a positive finite number"),
    (dict(learning_rate=10**400), "learning_rate must be a positive finite number"),
    (dict(threads=5000), "threads must be <= 1,024"),
    (dict(hidden=(16, 8), hidden_lsh=(None, "dwta")), "hidden_lsh entries"),
])
def test_out_of_range_and_mistyped_constructor_arguments(kwargs, match):
    args = dict(input_dim=50, output_dim=200, hidden=(16,), threads=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        slide.Network(**args)


def test_hidden_as_a_single_int_is_one_layer():
    assert slide.Network(50, 200, hidden=32, lsh=None, threads=1).hidden == (32,)


def test_more_threads_than_cpus_warns():
    from slide.network import default_threads

    with pytest.warns(RuntimeWarning, match=f"more than the {default_threads()} CPUs"):
        slide.Network(50, 200, hidden=(16,), lsh=None, threads=default_threads() + 1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(validation_data=(_X(),)), "pair"),
    (dict(validation_data=_X()), "pair"),
    (dict(callback=3), "callback must be callable"),
])
def test_bad_fit_keywords(net, kwargs, match):
    with pytest.raises(ValueError, match=match):
        net.fit(_X(), [[1], [2], [3], [4]], progress=False, **kwargs)


@pytest.mark.parametrize("ks, match", [((), "at least one"), (5, "sequence of ranks"), ((0,), ">= 1"),
                                       ((1, 201), "<= 200"), ((1.5,), "integer")])
def test_bad_evaluation_ranks(net, ks, match):
    with pytest.raises(ValueError, match=match):
        net.evaluate(_X(), [[1], [2], [3], [4]], ks=ks)


def test_fewer_labels_than_the_default_ranks_evaluates_the_ranks_that_exist():
    tiny = slide.Network(50, 3, hidden=(8,), lsh=None, threads=1)
    history = tiny.fit(_X(), [[0], [1], [2], [0]], progress=False, validation_data=(_X(), [[0], [1], [2], [0]]))
    assert {"val_P@1", "val_P@3"} <= set(history[0]) and "val_P@5" not in history[0]


@pytest.mark.parametrize("field, value", [("bucket_size", 2**31), ("l", -2**31 - 1), ("min_active", 2**40),
                                          ("rehash_every", 2**63), ("late_after", 2**63)])
def test_lsh_integers_beyond_the_engines_field_width(field, value):
    with pytest.raises(ValueError, match=f"LSHConfig.{field} must be below"):
        slide.LSHConfig(**{field: value})
