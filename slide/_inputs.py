"""Validation and conversion of user inputs to the exact arrays the engine reads.

Every check here runs before scipy or the engine trusts a structure: scipy's own routines
(sum_duplicates, sort_indices) read `indptr` unchecked and crash the process on a corrupt one.
"""

from __future__ import annotations

import numbers
from typing import Sequence, Union

import numpy as np
import scipy.sparse as sp

LabelsLike = Union[sp.spmatrix, sp.sparray, Sequence[Sequence[int]], Sequence[int], np.ndarray]

# Feature and label ids are int32 in the engine.
MAX_DIM = 2**31 - 1


def as_features(X, input_dim: int, name: str = "X") -> sp.csr_matrix:
    """Return X as a float32 CSR matrix with int32 indices and int64 indptr, checked."""
    if isinstance(X, np.ndarray):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (samples x {input_dim} features), got shape {X.shape}")
        if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
            raise ValueError(f"{name} must hold real numbers, got dtype {X.dtype}")
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
    X = checked_structure(X, name).astype(np.float32, copy=False)
    if not np.all(np.isfinite(X.data)):
        bad = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], side="right") - 1)
        raise ValueError(f"{name} contains NaN or infinite values (first in row {bad})")
    X.sum_duplicates()
    X.indices = X.indices.astype(np.int32, copy=False)
    X.indptr = X.indptr.astype(np.int64, copy=False)
    return X


def checked_structure(M, name: str) -> sp.csr_matrix:
    """M as a new CSR matrix with int64 index arrays, once its own index arrays are checked.

    A copy, so the caller's arrays are never modified by the in-place clean-ups that follow, and
    with index arrays of one dtype, which scipy's compiled routines require.
    """
    if M.format in ("csr", "csc"):
        _check_compressed(M, name)
        M = type(M)((M.data, M.indices.astype(np.int64), M.indptr.astype(np.int64)), shape=M.shape, copy=True)
        return M if M.format == "csr" else M.tocsr()
    if M.format != "coo":
        try:
            M = M.tocoo()
        except (ValueError, IndexError, TypeError, OverflowError) as e:
            raise ValueError(f"{name} is a malformed {M.format.upper()} matrix: {e}") from None
    _check_coordinates(M, name)
    return sp.csr_matrix((M.data, (M.row.astype(np.int64), M.col.astype(np.int64))), shape=M.shape)


def _check_compressed(M, name: str) -> None:
    major, minor = M.shape if M.format == "csr" else M.shape[::-1]
    indptr, indices, data = M.indptr, M.indices, M.data
    kind = M.format.upper()
    if indptr.ndim != 1 or indices.ndim != 1 or data.ndim != 1:
        raise ValueError(f"{name}: a {kind} matrix's indptr, indices and data must be 1-D arrays")
    if not (np.issubdtype(indptr.dtype, np.integer) and np.issubdtype(indices.dtype, np.integer)):
        raise ValueError(f"{name}: {kind} indptr and indices must be integer arrays, got {indptr.dtype} and "
                         f"{indices.dtype}")
    if len(indptr) != major + 1:
        raise ValueError(f"{name}: {kind} indptr has {len(indptr)} entries, expected {major + 1} (one per "
                         f"{'row' if M.format == 'csr' else 'column'} + 1)")
    if len(indices) != len(data):
        raise ValueError(f"{name}: {kind} indices ({len(indices)}) and data ({len(data)}) differ in length")
    if indptr[0] != 0 or indptr[-1] != len(indices):
        raise ValueError(f"{name}: {kind} indptr must start at 0 and end at the number of stored values "
                         f"({len(indices)}), got {indptr[0]} and {indptr[-1]}")
    steps = np.diff(indptr)
    if steps.size and steps.min() < 0:
        raise ValueError(f"{name}: {kind} indptr decreases at position {int(np.argmax(steps < 0)) + 1}; "
                         "it must be non-decreasing")
    if indices.size and (indices.min() < 0 or indices.max() >= minor):
        raise ValueError(f"{name}: {kind} indices must be in [0, {minor}), found {indices.min()}..{indices.max()}")


def _check_coordinates(M, name: str) -> None:
    for axis, coords in (("row", M.row), ("column", M.col)):
        if len(coords) != len(M.data):
            raise ValueError(f"{name}: COO {axis} indices ({len(coords)}) and data ({len(M.data)}) differ in length")
        if coords.size and (coords.min() < 0 or coords.max() >= M.shape[axis == "column"]):
            raise ValueError(f"{name}: COO {axis} indices must be in [0, {M.shape[axis == 'column']})")


def as_labels(Y: LabelsLike, output_dim: int, n_rows: int, name: str = "Y") -> sp.csr_matrix:
    """Return labels as a CSR matrix whose rows hold sorted unique label ids (int32).

    Y may be a sparse samples x labels matrix, a dense 0/1 indicator matrix (what scikit-learn's
    MultiLabelBinarizer gives), a 1-D vector of class ids (one label per sample), or a sequence of
    rows, each a label id or a 1-D sequence of label ids.
    """
    if sp.issparse(Y):
        if Y.ndim != 2:
            raise ValueError(f"{name} must be 2-D (samples x labels), got {Y.ndim}-D")
        if Y.shape[1] != output_dim:
            raise ValueError(f"{name} has {Y.shape[1]} columns, expected output_dim={output_dim}")
        Y = checked_structure(Y, name)
        Y.sum_duplicates()
        Y.eliminate_zeros()
        indptr, indices = Y.indptr.astype(np.int64), Y.indices.astype(np.int32)
    elif isinstance(Y, np.ndarray) and Y.ndim == 2 and Y.dtype != object:
        indptr, indices = _indicator(Y, output_dim, name)
    else:
        indptr, indices = _label_rows(Y, output_dim, name)
    if len(indptr) - 1 != n_rows:
        raise ValueError(f"{name} has {len(indptr) - 1} rows but X has {n_rows}")
    return sp.csr_matrix((np.ones(indices.size, np.float32), indices, indptr), shape=(n_rows, output_dim))


def _indicator(Y: np.ndarray, output_dim: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    if Y.shape[1] != output_dim or Y.dtype.kind not in "biuf" or not np.all((Y == 0) | (Y == 1)):
        raise ValueError(f"{name} is a dense {Y.shape} {Y.dtype} array; a dense label matrix must be a 0/1 "
                         f"indicator of width output_dim={output_dim}. For label ids pass a list of 1-D "
                         "arrays (one per sample) or a 1-D vector of class ids")
    m = sp.csr_matrix(Y != 0)
    return m.indptr.astype(np.int64), m.indices.astype(np.int32)


def _label_rows(Y, output_dim: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(Y, (str, bytes)) or not hasattr(Y, "__len__"):
        raise ValueError(f"{name} must be a label matrix or a sequence of per-sample labels, got {type(Y).__name__}")
    rows = [_row_ids(r, i, output_dim, name) for i, r in enumerate(Y)]
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    flat = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    if flat.size and (flat.min() < 0 or flat.max() >= output_dim):
        at = int(np.flatnonzero((flat < 0) | (flat >= output_dim))[0])
        row = int(np.searchsorted(np.cumsum(lengths), at, side="right"))
        raise ValueError(f"{name} row {row} has label id {flat[at]} outside [0, {output_dim})")
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    m = sp.csr_matrix((np.ones(flat.size, np.float32), flat, indptr), shape=(len(rows), output_dim))
    m.sum_duplicates()
    return m.indptr.astype(np.int64), m.indices.astype(np.int32)


def _row_ids(row, i: int, output_dim: int, name: str) -> np.ndarray:
    """One sample's label ids as int64; ids outside int64 or [0, output_dim) are refused here or by
    the caller's range check, never wrapped."""
    if isinstance(row, (str, bytes)):
        raise ValueError(f"{name} row {i} is the string {row!r}; label ids must be integers")
    if isinstance(row, (list, tuple)):  # np.asarray([0, False]) would read the bool as label 0
        flag = next((v for v in row if isinstance(v, (bool, np.bool_))), None)
        if flag is not None:
            raise ValueError(f"{name} row {i} holds {flag!r}; label ids must be integers, not booleans")
    try:
        a = np.asarray(row)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name} row {i} is not a label id or a 1-D sequence of label ids: {e}") from None
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValueError(f"{name} row {i} is a {a.ndim}-D array of shape {a.shape}; each row must be one label id "
                         "or a 1-D sequence of label ids")
    if a.size == 0:
        return np.zeros(0, np.int64)
    kind = a.dtype.kind
    if kind == "i":
        return a.astype(np.int64, copy=False)
    if kind == "u":
        if a.max() >= output_dim:
            raise ValueError(f"{name} row {i} has label id {a.max()} outside [0, {output_dim})")
        return a.astype(np.int64)
    if kind == "f":
        integral = np.isfinite(a)
        integral[integral] = np.mod(a[integral], 1) == 0
        if not integral.all():
            raise ValueError(f"{name} row {i} holds {a[~integral][0]!r}; label ids must be integers")
        if a.min() < 0 or a.max() >= output_dim:
            raise ValueError(f"{name} row {i} has a label id outside [0, {output_dim})")
        return a.astype(np.int64)
    if kind == "O" and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in a):
        bad = [v for v in a if not 0 <= int(v) < output_dim]
        if bad:
            raise ValueError(f"{name} row {i} has label id {bad[0]} outside [0, {output_dim})")
        return a.astype(np.int64)
    shown = next((v for v in a if not isinstance(v, numbers.Integral) or isinstance(v, bool)), a[0])
    raise ValueError(f"{name} row {i} holds {shown!r} ({a.dtype}); label ids must be integers")
