"""The tree methods extreme-classification users pick, with their own defaults: omikuji (Parabel /
Bonsai label trees of linear classifiers) and napkinXC (probabilistic label trees). Both train once
on the whole training set (`fit`) and rank the top k labels of new rows (`top_k`); shared by
benches.xc_real and benches.compare.

    pip install omikuji napkinxc
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np
import scipy.sparse as sp


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """omikuji draws a progress bar per example on stderr (megabytes in a log); hide it."""
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


class Omikuji:
    name = "omikuji"
    hyper_param = "omikuji defaults (Parabel-like: 3 trees, balanced 2-means, hinge linear nodes)"

    def __init__(self, threads: int, seed: int = 0) -> None:
        self.threads, self.model = threads, None  # omikuji's training takes no seed

    def fit(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
        import omikuji

        from slide.datasets import write_xc

        folder = Path(tempfile.mkdtemp())
        try:
            write_xc(folder / "train.txt", X, Y)
            with _quiet_stderr():
                self.model = omikuji.Model.train_on_data(str(folder / "train.txt"),
                                                         omikuji.Model.default_hyper_param(), self.threads)
        finally:
            shutil.rmtree(folder)

    def top_k(self, X: sp.csr_matrix, k: int) -> np.ndarray:
        ids = np.full((X.shape[0], k), -1, dtype=np.int64)
        for i in range(X.shape[0]):
            row = slice(X.indptr[i], X.indptr[i + 1])
            top = [label for label, _ in self.model.predict(list(zip(X.indices[row].tolist(),
                                                                     X.data[row].tolist())), top_k=k)]
            ids[i, :len(top)] = top
        return ids


class NapkinXC:
    name = "napkinxc"
    hyper_param = "napkinXC PLT defaults"

    def __init__(self, threads: int, seed: int = 0) -> None:
        from napkinxc.models import PLT

        self.folder = tempfile.mkdtemp()
        self.model = PLT(self.folder, threads=threads, seed=seed)

    def fit(self, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
        labels = [Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist() for i in range(Y.shape[0])]
        self.model.fit(X.astype(np.float64), labels)

    def top_k(self, X: sp.csr_matrix, k: int) -> np.ndarray:
        predicted = self.model.predict(X.astype(np.float64), top_k=k)
        ids = np.full((len(predicted), k), -1, dtype=np.int64)
        for i, top in enumerate(predicted):
            ids[i, :len(top)] = top
        return ids

    def __del__(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


TREES = {"omikuji": Omikuji, "napkinxc": NapkinXC}
