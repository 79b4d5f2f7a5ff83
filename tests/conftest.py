import numpy as np
import pytest
import scipy.sparse as sp


@pytest.fixture(scope="session")
def small_problem():
    """A learnable problem: 5,000 features, 10,000 labels, 20,000 points (18k train, 2k test)."""
    from slide.datasets import make_train_test

    return make_train_test(18_000, 2_000, 5_000, 10_000, seed=1)


def random_csr(rng, rows, cols, nnz_per_row):
    indptr = np.arange(0, rows * nnz_per_row + 1, nnz_per_row, dtype=np.int64)
    indices = np.concatenate([rng.choice(cols, nnz_per_row, replace=False) for _ in range(rows)]).astype(np.int32)
    data = rng.random(rows * nnz_per_row).astype(np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(rows, cols))


def random_labels(rng, rows, cols, per_row):
    return [np.sort(rng.choice(cols, per_row, replace=False)) for _ in range(rows)]
