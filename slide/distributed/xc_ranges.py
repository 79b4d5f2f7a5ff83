"""One rank's share of an Extreme Classification text file, read by byte range: the file's body is
cut into near-equal ranges at line starts, and each rank reads and parses only its own, so no rank
holds the whole file (what MPI training needs at scale)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._core import ParseError, XcStreamParser
from ..paths import regular_file
from ..datasets.errors import DataFormatError
from ..datasets.synthetic import Split


_UNCOUNTED = 1 << 62  # a point count no share reaches


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
    """Rank `rank`'s points of the XC text file `path` (header line, then one point per line).
    Alone, a rank cannot check what spans the ranks (the header's point count, blank lines between
    them): `read_xc_shares` does, over an MPI job."""
    shape, text, start, end = _read_range(path, rank, ranks)
    return _parse(path, shape, text, 1, 0, f" (line {{}} of rank {rank}'s bytes {start:,}-{end:,})")[0]


def read_xc_shares(path: Path, comm) -> Split:
    """This rank's points of `path`, read by byte range over the ranks of `comm`; collective. The
    file is checked as one parser reading it whole checks it (exact line numbers, the header's
    point count, blank lines only at the end), and a problem stops every rank (RankError)."""
    from .agree import RankError, fail, on_every_rank

    path = Path(path)
    shape, text, _, _ = on_every_rank(comm, _read_range, path, comm.rank, comm.size)
    lines = comm.gather_objects(text.count(b"\n"))
    lines_before = 1 + sum(lines[:comm.rank])  # the header, then the ranks before this one
    # The header's point count is checked over all the ranks below, where the first line past it is known.
    uncounted = (_UNCOUNTED, *shape[1:])
    split, points, trailing = on_every_rank(comm, _parse, path, uncounted, text, lines_before, 0)
    counts = comm.gather_objects((points, trailing))
    gap, total = 0, 0
    for got, ends_blank in counts:
        if got and gap:
            raise RankError(str(DataFormatError(path, gap, "blank line in the middle of the data")), 0)
        if got or not gap:  # a share of blank lines alone still opens a gap before the next point
            gap = ends_blank
        total += got
    if total < shape[0]:  # reported where the next point was due, as one parser does
        raise RankError(str(DataFormatError(path, total + 2, f"the header promises {shape[0]} points but the file "
                                                             f"ends after {total}")), 0)
    before = sum(got for got, _ in counts[:comm.rank])
    problem = None
    if before <= shape[0] < before + points:  # the share holding the point past the header's count
        try:
            _parse(path, shape, text, lines_before, before)
        except DataFormatError as e:
            problem = str(e)
    fail(comm, problem)
    if total > shape[0]:  # (the share above has said where; this only keeps the promise)
        raise RankError(str(DataFormatError(path, 0, f"more points than the header's {shape[0]}")), 0)
    return split


def _read_range(path: Path, rank: int, ranks: int) -> tuple[tuple[int, int, int], bytes, int, int]:
    """The header's counts and the bytes of rank `rank`'s lines (and where they start and end)."""
    path = regular_file(path, "training file")
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b":  # by content, whatever the name says
            raise ValueError(f"{path} is gzip-compressed, and a gzip file cannot be read by byte ranges; under MPI "
                             "give the training file uncompressed (gunzip it once)")
        f.seek(0)
        header = f.readline(1 << 16)
        try:
            if not header.endswith(b"\n") and f.read(1):  # a header line this long is no header
                raise ValueError
            n, features, labels = (int(v) for v in header.split())
            if n < 0 or not 0 < features <= 2**31 - 1 or not 0 < labels <= 2**31 - 1:
                raise ValueError
        except ValueError:
            raise DataFormatError(path, 1, "the header must be 'points features labels' (points >= 0, 1 <= "
                                           "features, labels <= 2^31-1)") from None
        size = path.stat().st_size
        body = len(header)
        cuts = [body + (size - body) * r // ranks for r in (rank, rank + 1)]
        start = _line_start_at_or_after(f, cuts[0], body)
        end = _line_start_at_or_after(f, cuts[1], body) if rank + 1 < ranks else size
        f.seek(start)
        text = f.read(max(0, end - start))
    return (n, features, labels), text, start, end


def _parse(path: Path, shape: tuple[int, int, int], text: bytes, lines_before: int, points_before: int,
           where: str = "") -> tuple[Split, int, int]:
    """The points in `text`, how many, and the first of the blank lines it ends with (0: none)."""
    n, features, labels = shape
    parser = XcStreamParser(n, features, labels, lines_before, points_before)
    try:
        d = parser.feed(text, False)
    except ParseError as e:
        line, message = e.args
        raise DataFormatError(path, line, message + where.format(line)) from None
    got = parser.points_read - points_before
    X = sp.csr_matrix((d["x_data"], d["x_indices"], d["x_indptr"]), shape=(got, features))
    Y = sp.csr_matrix((np.ones(len(d["y_indices"]), np.float32), d["y_indices"], d["y_indptr"]), shape=(got, labels))
    return Split(X, Y), got, parser.first_trailing_blank
