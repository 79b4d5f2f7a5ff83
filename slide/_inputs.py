"""Validation and conversion of user inputs to the exact arrays the engine reads."""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np
import scipy.sparse as sp

LabelsLike = Union[sp.spmatrix, sp.sparray, Sequence[Sequence[int]], np.ndarray]


def as_features(X, input_dim: int, name: str = "X") -> sp.csr_matrix:
    """Return X as a float32 CSR matrix with int32 indices and int64 indptr, checked."""
    if isinstance(X, np.ndarray):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (samples x {input_dim} features), got shape {X.shape}")
        X = sp.csr_matrix(X)
    elif not sp.issparse(X):
        raise ValueError(f"{name} must be a scipy.sparse matrix (CSR preferred) or a 2-D NumPy array, "
                         f"got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
    if X.shape[1] != input_dim:
        raise ValueError(f"{name} has {X.shape[1]} columns, expected input_dim={input_dim}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"{name} must hold real numbers, got dtype {X.dtype}")
    X = sp.csr_matrix(X, dtype=np.float32)
    if not np.all(np.isfinite(X.data)):
        bad = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], side="right") - 1)
        raise ValueError(f"{name} contains NaN or infinite values (first in row {bad})")
    X.sum_duplicates()
    X.indices = X.indices.astype(np.int32, copy=False)
    X.indptr = X.indptr.astype(np.int64, copy=False)
    return X


def as_labels(Y: LabelsLike, output_dim: int, n_rows: int, name: str = "Y") -> sp.csr_matrix:
    """Return labels as a CSR matrix whose rows hold sorted unique label ids (int32)."""
    if sp.issparse(Y):
        if Y.shape[1] != output_dim:
            raise ValueError(f"{name} has {Y.shape[1]} columns, expected output_dim={output_dim}")
        Y = sp.csr_matrix(Y)
        Y.sum_duplicates()
        Y.eliminate_zeros()
        indptr, indices = Y.indptr.astype(np.int64), Y.indices.astype(np.int32)
    else:
        if isinstance(Y, np.ndarray) and Y.ndim == 2 and Y.dtype != object:
            raise ValueError(f"{name}: pass a scipy.sparse label matrix or a list of label-id arrays, "
                             f"not a dense {Y.shape} array")
        rows = list(Y)
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = np.concatenate([np.asarray(r).ravel() for r in rows]) if rows else np.zeros(0)
        if flat.size and not np.issubdtype(flat.dtype, np.integer):
            if not np.all(np.mod(flat, 1) == 0):
                raise ValueError(f"{name} label ids must be integers")
        flat = flat.astype(np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= output_dim):
            row = int(np.searchsorted(np.cumsum(lengths), np.flatnonzero((flat < 0) | (flat >= output_dim))[0],
                                      side="right"))
            raise ValueError(f"{name} row {row} has a label id outside [0, {output_dim})")
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        m = sp.csr_matrix((np.ones(flat.size, np.float32), flat, indptr), shape=(len(rows), output_dim))
        m.sum_duplicates()
        indptr, indices = m.indptr.astype(np.int64), m.indices.astype(np.int32)
    if len(indptr) - 1 != n_rows:
        raise ValueError(f"{name} has {len(indptr) - 1} rows but X has {n_rows}")
    return sp.csr_matrix((np.ones(indices.size, np.float32), indices, indptr), shape=(n_rows, output_dim))
