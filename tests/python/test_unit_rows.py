"""unit_rows: every row at unit L2 norm, its entries where X had them, index arrays scipy can use, and the
caller's arrays untouched (the label tree, the re-ranker and the vote all normalise through it)."""

import numpy as np
import scipy.sparse as sp

from slide.datasets.synthetic import unit_rows


def _by_diagonal(X: sp.csr_matrix) -> sp.csr_matrix:
    """The reference: each row's float32 sum of squares, its float32 scale, a diagonal product."""
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)).astype(np.float32) @ X).astype(np.float32)


def _canonical(rng: np.random.Generator, rows: int = 300, cols: int = 2_000) -> sp.csr_matrix:
    X = sp.random(rows, cols, density=0.02, format="csr", dtype=np.float32, random_state=rng)
    X.data = (X.data * 10).astype(np.float32)
    X.sum_duplicates()
    return X


def test_values_match_the_diagonal_product_bit_for_bit():
    X = _canonical(np.random.default_rng(0))
    got, want = unit_rows(X), _by_diagonal(X)
    assert (got != want).nnz == 0  # same values at the same places, not just close
    np.testing.assert_allclose(np.sqrt(np.asarray(got.multiply(got).sum(axis=1)).ravel()), 1.0, rtol=1e-5)


def test_entries_keep_their_order_in_index_arrays_scipy_can_use():
    X = _canonical(np.random.default_rng(1))
    X.indptr = X.indptr.astype(np.int64)  # as slide's checked inputs hold them: int32 ids, int64 offsets
    got = unit_rows(X)
    np.testing.assert_array_equal(got.indices, X.indices)
    np.testing.assert_array_equal(got.indptr, X.indptr)
    assert got.has_sorted_indices and got.dtype == np.float32
    assert got.indices.dtype == got.indptr.dtype  # scipy's compiled routines take no mix
    got.tocoo()  # one of those (it failed on the mix)


def test_the_callers_matrix_is_neither_changed_nor_shared():
    X = _canonical(np.random.default_rng(2))
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    got = unit_rows(X)
    got.data[:] = 7.0
    got.indices[:] = 0
    for kept, now in zip(before, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(now, kept)


def test_duplicate_entries_are_summed_before_the_norm():
    # row 0 holds feature 2 twice (3 + 1 = 4) and feature 0 once (3): norm 5, not sqrt(19)
    X = sp.csr_matrix((np.array([3, 3, 1], np.float32), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 4))
    assert not X.has_canonical_format
    np.testing.assert_allclose(unit_rows(X).toarray(), [[0.6, 0.0, 0.8, 0.0]], rtol=1e-6)


def test_empty_rows_stay_empty_and_other_formats_and_dtypes_convert():
    X = sp.csr_matrix(np.array([[0, 0, 0], [1, 0, 1], [0, 0, 0]], np.float64))
    got = unit_rows(X.tocoo())
    np.testing.assert_allclose(got.toarray(), [[0, 0, 0], [2 ** -0.5, 0, 2 ** -0.5], [0, 0, 0]], rtol=1e-6)
    assert got.getnnz(axis=1).tolist() == [0, 2, 0] and got.dtype == np.float32
