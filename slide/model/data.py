"""Training and validation data as the engine takes it: float32 CSR features, int32 label ids,
int64 offsets, checked once against the network's dimensions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import scipy.sparse as sp

from .._inputs import as_features, as_labels
from ..early_stopping import held_out_rows


@dataclass
class TrainingData:
    """Features and labels validated for the engine (float32 CSR, int32 ids, int64 offsets)."""

    X: sp.csr_matrix
    Y: sp.csr_matrix

    def __len__(self) -> int:
        return self.X.shape[0]


def validation_pair(pair: Any, input_dim: int, output_dim: int, what: str = "validation "
                    ) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(X, Y) checked and converted; `what` prefixes their names in errors."""
    Xv = as_features(pair[0], input_dim, f"{what}X")
    return Xv, as_labels(pair[1], output_dim, Xv.shape[0], f"{what}Y")


def hold_out(data: TrainingData, share: float, seed: int) -> tuple[TrainingData, tuple]:
    """(training data, (X_val, Y_val)): a seeded `share` of the rows held out for validation."""
    train, val = held_out_rows(len(data), share, seed)
    return TrainingData(data.X[train], data.Y[train]), (data.X[val], data.Y[val])
