"""Extreme Classification Repository files (Amazon-670K, WikiLSHTC-325K, Delicious-200K, ...).

    num_points num_features num_labels
    l1,l2,...,lk f1:v1 f2:v2 ...        (0-based ids; an empty label field starts with a space)

Parsed by the C++ engine (hundreds of MB/s), plain or gzip-compressed, with a binary cache.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Optional, Union

import numpy as np
import scipy.sparse as sp

from .. import _core
from ..paths import regular_file
from .cache import load_cached, store_cached
from .errors import DataFormatError
from .synthetic import Split

PathLike = Union[str, Path]


def read_bytes(path: Path) -> bytes:
    """The file's content, decompressed when it is gzip (by magic number, not by name)."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as f:
                return f.read()
        except (OSError, EOFError) as e:
            raise DataFormatError(path, 0, f"broken gzip stream: {e}") from None
    return path.read_bytes()


def _parse(text: bytes, path: PathLike) -> dict:
    try:
        return _core.parse_xc(text)
    except _core.ParseError as e:
        line, message = e.args
        raise DataFormatError(path, line, message) from None


def parse_xc_bytes(text: bytes, path: PathLike = "<bytes>") -> Split:
    return _split_from_arrays(_parse(text, path))


def _split_from_arrays(d: dict) -> Split:
    n, f, l = int(d["num_points"]), int(d["num_features"]), int(d["num_labels"])
    X = sp.csr_matrix((d["x_data"], d["x_indices"], d["x_indptr"]), shape=(n, f))
    Y = sp.csr_matrix((np.ones(len(d["y_indices"]), np.float32), d["y_indices"], d["y_indptr"]), shape=(n, l))
    return Split(X, Y)


def load_xc(path: PathLike, *, cache: bool = True, cache_dir: Optional[PathLike] = None) -> Split:
    """Load an Extreme Classification Repository file (optionally .gz) as CSR features and labels.

    With ``cache=True`` the parsed arrays are kept in ``<file>.xc.slidecache.npz`` (or in
    ``cache_dir``), so a second load is near instant; a changed source is parsed again.
    Raises FileNotFoundError for a missing file and DataFormatError (a ValueError) naming the
    file, line and what was expected for a malformed one.
    """
    path = regular_file(path, "data file")
    cdir = Path(cache_dir) if cache_dir is not None else None
    if cache:
        arrays = load_cached(path, "xc", cdir)
        if arrays is not None:
            return _split_from_arrays(arrays)
    d = _parse(read_bytes(path), path)
    if cache:
        store_cached(path, "xc", cdir, {k: np.asarray(v) for k, v in d.items()})
    return _split_from_arrays(d)


def write_xc(path: PathLike, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
    """Write features and labels in the repository's format (used for tests and conversions)."""
    from ..atomic_files import atomic_write

    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    lines = [f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}"]
    for i in range(X.shape[0]):
        labels = ",".join(map(str, Y.indices[Y.indptr[i]:Y.indptr[i + 1]]))
        feats = " ".join(f"{j}:{v:.6g}" for j, v in zip(X.indices[X.indptr[i]:X.indptr[i + 1]],
                                                         X.data[X.indptr[i]:X.indptr[i + 1]]))
        lines.append(f"{labels} {feats}".rstrip() if labels else f" {feats}".rstrip() or " ")
    payload = ("\n".join(lines) + "\n").encode()
    atomic_write(Path(path), lambda f: f.write(payload))
