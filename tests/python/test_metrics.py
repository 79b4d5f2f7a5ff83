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
