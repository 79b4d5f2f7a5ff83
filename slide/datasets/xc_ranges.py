"""One rank's share of an Extreme Classification text file, read by byte range: the file's body is
cut into near-equal ranges at line starts, and each rank reads and parses only its own, so no rank
holds the whole file (what MPI training needs at scale)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .. import _core
from ..paths import regular_file
from .errors import DataFormatError
from .synthetic import Split


def _line_start_at_or_after(f, offset: int, body_start: int) -> int:
    """The first byte of the first line that starts at or after `offset`."""
    if offset <= body_start:
        return body_start
    f.seek(offset - 1)
    while True:
        chunk = f.read(1 << 16)
        if not chunk:
            return f.tell()
        cut = chunk.find(b"\n")
        if cut >= 0:
            return f.tell() - len(chunk) + cut + 1


def read_xc_share(path: Path, rank: int, ranks: int) -> Split:
    """Rank `rank`'s points of the XC text file `path` (header line, then one point per line)."""
    path = regular_file(path, "training file")
    if path.name.endswith(".gz"):
        raise ValueError(f"{path}: a gzip file cannot be read by byte ranges; under MPI give the training file "
                         "uncompressed (gunzip it once)")
    with open(path, "rb") as f:
        header = f.readline()
        try:
            n, features, labels = (int(v) for v in header.split())
        except ValueError:
            raise DataFormatError(path, 1, "the header must be 'points features labels'") from None
        size = path.stat().st_size
        body = len(header)
        cuts = [body + (size - body) * r // ranks for r in (rank, rank + 1)]
        start = _line_start_at_or_after(f, cuts[0], body)
        end = _line_start_at_or_after(f, cuts[1], body) if rank + 1 < ranks else size
        f.seek(start)
        text = f.read(max(0, end - start))
    parser = _core.XcStreamParser(n, features, labels, 1, 0)  # line 1 is the header
    try:
        d = parser.feed(text, False)
    except _core.ParseError as e:
        line, message = e.args
        raise DataFormatError(path, line, f"{message} (line {line} of rank {rank}'s bytes {start:,}-{end:,})") from None
    got = parser.points_read
    X = sp.csr_matrix((d["x_data"], d["x_indices"], d["x_indptr"]), shape=(got, features))
    Y = sp.csr_matrix((np.ones(len(d["y_indices"]), np.float32), d["y_indices"], d["y_indptr"]), shape=(got, labels))
    return Split(X, Y)
