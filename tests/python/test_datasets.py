import numpy as np
import pytest

from slide.datasets import AMAZON670K_SHAPE, make_extreme_classification, make_train_test


def test_generator_is_deterministic_and_shaped():
    a = make_extreme_classification(3000, 20_000, 50_000, seed=3)
    b = make_extreme_classification(3000, 20_000, 50_000, seed=3)
    c = make_extreme_classification(3000, 20_000, 50_000, seed=4)
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0
    assert (a.X != c.X).nnz > 0
    assert a.X.shape == (3000, 20_000) and a.Y.shape == (3000, 50_000)
    assert a.X.dtype == np.float32
    nnz, labels = a.X.getnnz(axis=1).mean(), a.Y.getnnz(axis=1).mean()
    assert 65 <= nnz <= 80, nnz
    assert 5.0 <= labels <= 5.9, labels
    np.testing.assert_allclose(np.sqrt(a.X.multiply(a.X).sum(axis=1)).A.ravel(), 1.0, rtol=1e-4)


def test_label_frequencies_follow_a_power_law():
    d = make_extreme_classification(20_000, 10_000, 100_000, seed=0)
    freq = np.sort(np.asarray(d.Y.sum(axis=0)).ravel())[::-1]
    head = freq[:1000].sum() / freq.sum()  # top 1% of labels
    assert head > 0.15, head
    assert (freq == 0).mean() > 0.3  # a long tail never seen in a small sample


def test_amazon_shape_constants():
    assert AMAZON670K_SHAPE["n_features"] == 135_909 and AMAZON670K_SHAPE["n_labels"] == 670_091


def test_bad_generator_arguments():
    with pytest.raises(ValueError, match="n_samples"):
        make_extreme_classification(0, 10, 10)
    with pytest.raises(ValueError, match="avg_labels"):
        make_extreme_classification(10, 100, 3, avg_labels=5)


def test_train_test_split_sizes():
    tr, te = make_train_test(100, 20, 500, 800, seed=1)
    assert len(tr) == 100 and len(te) == 20
