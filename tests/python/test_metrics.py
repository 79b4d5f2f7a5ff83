import numpy as np
import pytest
import scipy.sparse as sp

from slide.metrics import ndcg_at_k, precision_at_k, ranking_report


def test_precision_and_ndcg_by_hand():
    Y = sp.csr_matrix(np.array([[1, 0, 1, 0, 0], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]]))
    top = np.array([[2, 1, 0], [0, 1, 2], [4, -1, -1]])
    assert precision_at_k(top, Y, 1) == pytest.approx((1 + 0 + 0) / 3)
    assert precision_at_k(top, Y, 3) == pytest.approx((2 / 3 + 0 + 0) / 3)
    d = 1 / np.log2([2, 3, 4])
    assert ndcg_at_k(top, Y, 3) == pytest.approx(((d[0] + d[2]) / (d[0] + d[1])) / 3)
    r = ranking_report(top, Y, ks=(1, 3))
    assert set(r) == {"P@1", "P@3", "nDCG@1", "nDCG@3"}


def test_perfect_ranking_scores_one():
    Y = sp.csr_matrix(np.eye(4))
    top = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    assert precision_at_k(top, Y, 1) == 1.0
    assert ndcg_at_k(top, Y, 2) == pytest.approx(1.0)


def test_propensities_follow_jain_et_al():
    from slide.metrics import inverse_propensities

    Y = sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0]]))
    inv = inverse_propensities(Y, a=0.55, b=1.5)
    c = (np.log(4) - 1) * 2.5 ** 0.55
    np.testing.assert_allclose(inv, 1 + c * (np.array([4, 1, 0]) + 1.5) ** -0.55)
    assert inv[2] > inv[1] > inv[0]  # rarer labels weigh more


def test_psp_by_hand_and_ideal_is_one():
    from slide.metrics import psp_at_k, xc_report

    Y = sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 1, 0, 0]]))
    inv = np.array([1.0, 2.0, 4.0, 8.0])
    top = np.array([[0, 3], [1, 0]])
    # hits: sample 0 ranks label 0 (1.0) first, sample 1 label 1 (2.0); ideal top-1: 4.0 and 2.0
    assert psp_at_k(top, Y, inv, 1) == pytest.approx((1.0 + 2.0) / (4.0 + 2.0))
    assert psp_at_k(top, Y, inv, 2) == pytest.approx((1.0 + 2.0) / (4.0 + 1.0 + 2.0))
    assert psp_at_k(np.array([[2, 0], [1, 3]]), Y, inv, 2) == pytest.approx(1.0)
    assert set(xc_report(top, Y, inv, ks=(1,))) == {"P@1", "nDCG@1", "PSP@1"}


def _dense_oracle(top, Y, k):
    """P@k and nDCG@k by a loop over a dense copy of Y: what the sorted search must agree with."""
    dense = Y.toarray()
    discounts = 1 / np.log2(np.arange(2, k + 2))
    p, n = [], []
    for i, ids in enumerate(top[:, :k]):
        hits = np.array([j >= 0 and dense[i, j] != 0 for j in ids], float)
        p.append(hits.sum() / k)
        ideal = discounts[:min(np.diff(Y.indptr)[i], k)].sum()
        n.append((hits * discounts[:len(hits)]).sum() / ideal if ideal > 0 else 0.0)
    return np.mean(p), np.mean(n)


def test_metrics_match_a_dense_oracle_with_padding_and_stored_zeros():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n, labels, k = int(rng.integers(1, 30)), int(rng.integers(1, 25)), int(rng.integers(1, 7))
        stored = int(rng.integers(0, 3 * n + 1))
        values = rng.choice([1.0, 1.0, 0.0], stored)  # explicit zeros are not labels
        Y = sp.csr_matrix((values, (rng.integers(0, n, stored), rng.integers(0, labels, stored))), shape=(n, labels))
        top = rng.integers(-1, labels, (n, k))  # -1: no prediction at that rank
        report = ranking_report(top, Y, ks=(1, 3, 5))
        for depth in (1, 3, 5):
            p, g = _dense_oracle(top, Y, depth)
            assert precision_at_k(top, Y, depth) == pytest.approx(p) == pytest.approx(report[f"P@{depth}"])
            assert ndcg_at_k(top, Y, depth) == pytest.approx(g) == pytest.approx(report[f"nDCG@{depth}"])


def test_rankings_with_no_label_at_all_score_zero():
    # scipy's element indexing of no pairs returned a sparse matrix, which the old lookup could not compare
    Y = sp.csr_matrix(np.array([[0.0, 0.0, 1.0]]))
    assert ranking_report(np.array([[-1, -1]]), Y, ks=(1, 2)) == {"P@1": 0.0, "P@2": 0.0, "nDCG@1": 0.0, "nDCG@2": 0.0}
    assert precision_at_k(np.array([[2, -1]]), Y, 2) == 0.5


def test_more_rankings_than_label_rows_is_refused():
    with pytest.raises(ValueError, match="2 samples ranked, but the labels hold only 1 rows"):
        precision_at_k(np.array([[0], [1]]), sp.csr_matrix(np.ones((1, 3))), 1)


def test_no_samples_score_zero_at_every_k():
    report = ranking_report(np.zeros((0, 5), np.int32), sp.csr_matrix((0, 7)), (1, 3, 5))
    assert report == {f"{m}@{k}": 0.0 for m in ("P", "nDCG") for k in (1, 3, 5)}


def test_each_samples_metric_averages_to_the_hit_report():
    from slide.metrics import hit_report, point_metric
    rng = np.random.default_rng(3)
    hits = rng.random((50, 5)) < 0.3
    Y = sp.csr_matrix(rng.random((50, 20)) < 0.15, dtype=np.float32)
    report = hit_report(hits, Y, (1, 3, 5))
    for metric in ("P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5"):
        per_sample = point_metric(hits, Y, metric)
        assert per_sample.shape == (50,) and per_sample.mean() == pytest.approx(report[metric], abs=1e-12)
    assert point_metric(hits[:, :1], Y, "P@1").tolist() == hits[:, 0].astype(float).tolist()
    with pytest.raises(ValueError, match="P@k or nDCG@k, got 'PSP@1'"):
        point_metric(hits, Y, "PSP@1")
