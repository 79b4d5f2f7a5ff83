"""Extreme Classification Repository files (Amazon-670K, WikiLSHTC-325K, Delicious-200K, ...).

    num_points num_features num_labels
    l1,l2,...,lk f1:v1 f2:v2 ...        (0-based ids; an empty label field starts with a space)

Parsed by the C++ engine (hundreds of MB/s), plain or gzip-compressed, with a binary cache.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional, Union

import numpy as np
import scipy.sparse as sp

from .._core import ParseError, format_xc_points, parse_xc
from ..paths import regular_file
from .cache import fresh_shards, shard_cache_path
from .errors import DataFormatError
from .named_errors import naming
from .gunzip import gunzip_bounded
from .synthetic import Split

PathLike = Union[str, Path]
log = logging.getLogger("slide")


def read_bytes(path: Path) -> Union[bytes, bytearray]:
    """The file's content, decompressed when it is gzip (by magic number, not by name; bounded by
    the memory available)."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gunzip_bounded(path)  # a bytearray: the parsers take any buffer
    return path.read_bytes()


def _parse(text: bytes, path: PathLike) -> dict:
    try:
        return parse_xc(text)
    except ParseError as e:
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

    With ``cache=True`` the parsed data is kept as a shard folder ``<file>.shards/`` beside the
    file (or in ``cache_dir``), so a second load reads binary data at disk speed; a changed
    source is parsed again. A shard folder itself (`slide data convert`) loads as well.
    Raises FileNotFoundError for a missing file and DataFormatError (a ValueError) naming the
    file, line and what was expected for a malformed one.
    """
    if Path(path).is_dir():
        from .shards import ShardFolder

        with naming(path):
            return ShardFolder.open(path).load()
    path = regular_file(path, "data file")
    cdir = Path(cache_dir) if cache_dir is not None else None
    if cache:
        folder = fresh_shards(path, cdir)
        if folder is not None:
            with naming(folder.path):
                return folder.load()
    with naming(path):
        d = _parse(read_bytes(path), path)
        split = _split_from_arrays(d)
    if cache:
        _store_shards(path, cdir, split)
    return split


def _store_shards(path: Path, cache_dir: Optional[Path], split: Split) -> None:
    from .convert import source_fingerprint
    from .shards import write_split

    target = shard_cache_path(path, cache_dir)
    try:
        write_split(target, split, source=source_fingerprint(path))
    except (OSError, ValueError) as e:  # a cache that cannot be written is only a slower next load
        log.warning("could not write the cache %s (%s); the next load parses again", target, e)


def stream_shards(path: PathLike, *, cache_dir: Optional[PathLike] = None):
    """The shard folder to stream `path` from: `path` itself when it is one, else the file's
    cache folder, converted now with bounded memory when it is missing or stale."""
    from .convert import convert_xc
    from .shards import ShardFolder

    if Path(path).is_dir():
        return ShardFolder.open(path)
    path = regular_file(path, "data file")
    cdir = Path(cache_dir) if cache_dir is not None else None
    folder = fresh_shards(path, cdir)
    if folder is None:
        target = shard_cache_path(path, cdir)
        print(f"converting {path} into shards in {target} (once; reused while the file is unchanged)", flush=True)
        folder = convert_xc(path, target)
    return folder


def format_points(X: sp.csr_matrix, Y: sp.csr_matrix) -> bytes:
    """The rows of X and Y as lines of the repository's format (no header); every value is written
    in the shortest form that reads back as the same float32."""
    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}")
    return format_xc_points(X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data.astype(np.float32),
                                  Y.indptr.astype(np.int64), Y.indices.astype(np.int32))


def write_xc(path: PathLike, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
    """Write features and labels in the repository's format, atomically."""
    from ..atomic_files import atomic_write

    X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    header = f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n".encode()
    body = format_points(X, Y)
    atomic_write(Path(path), lambda f: (f.write(header), f.write(body)))
