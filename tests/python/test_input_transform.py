"""input_norm="l2" and input_dropout: what the embedding sees, in training and in inference."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide


def sparse_rows(n, d, density, seed):
    X = sp.random(n, d, density=density, format="csr", dtype=np.float32, random_state=seed)
    X.data = X.data * 3 + 0.1
    return X


def params(net):
    return {k: np.array(v) for k, v in net.weights().items() if not k.endswith(("_grad", "adam_m", "adam_v"))}


def test_l2_norm_makes_rows_scale_free_and_equals_normalised_input():
    X = sparse_rows(20, 50, 0.2, 0)
    normed = slide.Network(50, 30, hidden=[16], lsh=None, input_norm="l2", threads=1, seed=3)
    plain = slide.Network(50, 30, hidden=[16], lsh=None, threads=1, seed=3)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    X_unit = sp.diags(1 / norms) @ X
    np.testing.assert_allclose(normed.transform(X), normed.transform(X * 7.0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(normed.transform(X), plain.transform(X_unit), rtol=1e-5, atol=1e-6)
    assert not np.allclose(plain.transform(X), plain.transform(X_unit))


@pytest.mark.parametrize("hidden, lsh", [
    ([16], None),                                        # batch-shared dense output, hidden kept from forward
    ([16, 12], None),                                    # batch-shared, hidden recomputed for backward
    ([16], slide.LSHConfig(k=2, l=4, batch_negatives=0)),  # SLIDE per-sample path
])
def test_dropout_forward_and_backward_drop_the_same_features(hidden, lsh):
    """One SGD step with dropout equals one step without it on exactly the kept features, scaled
    by 1/(1-p): the mask seen by the forward pass is the one the backward pass applies."""
    p = 0.4
    x = sparse_rows(1, 400, 0.5, 1)
    y = [[3, 7]]
    dropped = slide.Network(400, 40, hidden=hidden, lsh=lsh, optimizer="sgd", learning_rate=0.5, input_dropout=p,
                            threads=1, seed=5)
    before = params(dropped)["input.weight"]
    dropped.fit(x, y, epochs=1, batch_size=1, shuffle=False, progress=False)
    after = params(dropped)
    kept = np.flatnonzero(np.abs(after["input.weight"] - before).sum(axis=1) > 0)
    assert 0.45 * x.nnz < len(kept) < 0.75 * x.nnz  # about 1 - p of the features reached the embedding
    x_kept = sp.csr_matrix(x.toarray() * np.isin(np.arange(400), kept) / (1 - p))
    reference = slide.Network(400, 40, hidden=hidden, lsh=lsh, optimizer="sgd", learning_rate=0.5, threads=1, seed=5)
    reference.fit(x_kept, y, epochs=1, batch_size=1, shuffle=False, progress=False)
    for name, value in params(reference).items():
        np.testing.assert_allclose(after[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_dropout_is_seeded_and_absent_from_inference(tmp_path):
    X = sparse_rows(300, 100, 0.1, 2)
    Y = [[i % 17] for i in range(300)]
    nets = [slide.Network(100, 17, hidden=[16], lsh=None, input_dropout=0.5, input_norm="l2", threads=1, seed=9)
            for _ in range(2)]
    fresh = slide.Network(100, 17, hidden=[16], lsh=None, input_norm="l2", threads=1, seed=9)
    np.testing.assert_array_equal(nets[0].transform(X), fresh.transform(X))  # no dropout outside training
    for net in nets:
        net.fit(X, Y, epochs=2, batch_size=32, progress=False)
    for name, value in params(nets[0]).items():
        np.testing.assert_array_equal(value, params(nets[1])[name], err_msg=name)
    nets[0].save(tmp_path / "m.npz")
    loaded = slide.Network.load(tmp_path / "m.npz")
    assert (loaded.input_norm, loaded.input_dropout) == ("l2", 0.5)
    np.testing.assert_array_equal(loaded.transform(X), nets[0].transform(X))


@pytest.mark.parametrize("kwargs, message", [
    (dict(input_norm="l1"), "input_norm must be one of none, l2; got 'l1'"),
    (dict(input_dropout=1.0), r"input_dropout must be a number in \[0, 1\)"),
    (dict(input_dropout=-0.1), r"input_dropout must be a number in \[0, 1\)"),
    (dict(input_dropout="0.2"), r"input_dropout must be a number in \[0, 1\)"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        slide.Network(10, 5, **kwargs)
