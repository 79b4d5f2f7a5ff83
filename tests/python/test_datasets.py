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


def _share_a_cluster_signature(cluster_size: int) -> float:
    """Of the labels seen 20+ times, the share with another label whose feature support overlaps
    theirs in 8+ features. One label per point and no background, so a label's support is its
    signature: 24 features, half of them its cluster's when clustered."""
    d = make_extreme_classification(20_000, 5_000, 1_000, avg_labels=1.0, background=0.0,
                                    cluster_size=cluster_size, seed=1)
    support = ((d.Y.T @ d.X) != 0).astype(np.int32)[np.asarray(d.Y.sum(axis=0)).ravel() >= 20]
    overlap = (support @ support.T).toarray()
    np.fill_diagonal(overlap, 0)
    return float((overlap.max(axis=1) >= 8).mean())


def test_clustered_labels_share_half_their_signature_with_siblings():
    assert _share_a_cluster_signature(1) < 0.02
    assert _share_a_cluster_signature(4) > 0.3


def test_cluster_size_one_is_the_independent_generator():
    a = make_extreme_classification(2000, 5_000, 3_000, seed=2)
    b = make_extreme_classification(2000, 5_000, 3_000, seed=2, cluster_size=1, cluster_share=0.9)
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0


def test_amazon_shape_constants():
    assert AMAZON670K_SHAPE["n_features"] == 135_909 and AMAZON670K_SHAPE["n_labels"] == 670_091


def test_bad_generator_arguments():
    with pytest.raises(ValueError, match="n_samples"):
        make_extreme_classification(0, 10, 10)
    with pytest.raises(ValueError, match="avg_labels"):
        make_extreme_classification(10, 100, 3, avg_labels=5)
    with pytest.raises(ValueError, match="cluster_size"):
        make_extreme_classification(10, 100, 30, cluster_size=0)
    with pytest.raises(ValueError, match="cluster_size"):
        make_extreme_classification(10, 100, 30, cluster_size=2.5)
    with pytest.raises(ValueError, match="cluster_share"):
        make_extreme_classification(10, 100, 30, cluster_size=3, cluster_share=1.0)


def test_train_test_split_sizes():
    tr, te = make_train_test(100, 20, 500, 800, seed=1)
    assert len(tr) == 100 and len(te) == 20
