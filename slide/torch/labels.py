"""A batch's labels, in any form `Network.fit` takes or as tensors, to the engine's CSR arrays."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from .._inputs import as_labels


def label_arrays(labels: Any, n_labels: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64, indices int32) of each row's sorted label ids.

    labels: a 1-D integer tensor or array of class ids (one label per row), a 2-D 0/1 indicator
    tensor or array, a sparse tensor or scipy.sparse matrix (rows x n_labels), or one label id or
    list of label ids per row. ValueError names what does not fit."""
    if isinstance(labels, torch.Tensor):
        labels = _tensor_to_numpy(labels)
    if isinstance(labels, np.ndarray) and labels.ndim == 1 and labels.dtype.kind in "iu":
        return _class_ids(labels, n_labels, rows)
    if not sp.issparse(labels) and hasattr(labels, "__len__") and not isinstance(labels, (str, bytes)) \
            and len(labels) != rows:
        raise ValueError(f"labels has {len(labels)} rows but hidden has {rows}")
    if sp.issparse(labels) and labels.shape[0] != rows:
        raise ValueError(f"labels has {labels.shape[0]} rows but hidden has {rows}")
    Y = as_labels(labels, n_labels, rows, name="labels")
    return Y.indptr.astype(np.int64), Y.indices.astype(np.int32)


def _tensor_to_numpy(labels: torch.Tensor) -> Any:
    labels = labels.detach()
    if labels.layout in (torch.sparse_coo, torch.sparse_csr):
        if labels.ndim != 2:
            raise ValueError(f"sparse labels must be 2-D (rows x labels), got {labels.ndim}-D")
        coo = labels.to_sparse_coo().coalesce().cpu()
        rows, cols = coo.indices().numpy()
        return sp.csr_matrix((coo.values().numpy(), (rows, cols)), shape=tuple(coo.shape))
    if labels.is_complex():
        raise ValueError(f"labels must be integer class ids or a 0/1 indicator, got a {labels.dtype} tensor")
    return labels.cpu().numpy()


def _class_ids(ids: np.ndarray, n_labels: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    if ids.size != rows:
        raise ValueError(f"labels has {ids.size} class ids but hidden has {rows} rows")
    bad = np.flatnonzero((ids < 0) | (ids >= n_labels))
    if bad.size:
        raise ValueError(f"labels row {int(bad[0])} has label id {ids[bad[0]]} outside [0, {n_labels})")
    return np.arange(rows + 1, dtype=np.int64), ids.astype(np.int32)
