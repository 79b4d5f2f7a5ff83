"""An Extreme Classification text file (plain or gzip) read as blocks of whole lines and parsed
by several threads at once, the results handed out in file order: what conversion, prediction
and evaluation read large files with. Line numbers, the checks that span lines and the header's
point count come out exactly as one parser reading the whole file would give them."""

from __future__ import annotations

import gzip
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator, Optional

from .._core import ParseError, XcStreamParser
from .errors import DataFormatError
from .prefetch import prefetched

# Bytes of text parsed at a time: large enough that per-call costs vanish, and below glibc's
# largest mmap threshold (32 MB), so blocks reuse heap memory instead of faulting in fresh pages
# (32 MB blocks read at a quarter of the speed).
BLOCK_BYTES = 8 << 20


def _open(path: Path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def line_blocks(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[memoryview, bool]]:
    """(text, last) pieces of the file that end at line breaks (the last may not), each about
    `block_bytes` long (longer only when one line is). Each piece is its own buffer, read into
    directly (no copies), so pieces can be parsed at the same time.

    While no line break comes, each read is as long as all the text carried so far, so a line of n
    bytes takes log2(n / block_bytes) reads and is copied about twice in all (reading on a block at
    a time copied it n / block_bytes times: a 1 GB line took minutes)."""
    carry: "bytes | memoryview" = b""
    want = block_bytes
    with _open(path) as f:
        try:
            while True:
                buf = bytearray(len(carry) + want)
                buf[:len(carry)] = carry
                n = f.readinto(memoryview(buf)[len(carry):])
                if not n:
                    yield memoryview(buf)[:len(carry)], True
                    return
                end = len(carry) + n
                cut = buf.rfind(b"\n", len(carry), end)  # the carried text holds no line break
                if cut < 0:  # one line longer than a block: read on, twice as much
                    carry = memoryview(buf)[:end]
                    want = max(block_bytes, end)
                    continue
                carry, want = bytes(buf[cut + 1:end]), block_bytes
                yield memoryview(buf)[:cut + 1], False
        except (OSError, EOFError) as e:
            if isinstance(e, OSError) and not isinstance(f, gzip.GzipFile):
                raise
            raise DataFormatError(path, 0, f"broken gzip stream: {e}") from None


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def parse_blocks(path: Path, block_bytes: int = BLOCK_BYTES, workers: Optional[int] = None
                 ) -> Iterator[dict]:
    """The parsed CSR arrays (and header counts) of each block of `path`, in order.

    The first block is parsed alone (it holds the header); the rest by `workers` threads at once,
    each block by a parser that starts at the block's line number. What spans blocks is checked
    here: a point after blank lines, more points than the header promises (the block is parsed
    again knowing the points before it, for the exact line), and too few.
    """
    workers = workers or default_workers()
    blocks = prefetched(line_blocks(path, block_bytes), depth=2)
    text, last = next(blocks)
    head = XcStreamParser()
    try:
        first = head.feed(text, last)
    except ParseError as e:
        raise _error(path, e) from None
    yield first
    if last:
        return
    check = _Blocks(path, (int(first["num_points"]), int(first["num_features"]), int(first["num_labels"])),
                    head.points_read, head.first_trailing_blank)
    lines = head.lines_read
    with ThreadPoolExecutor(workers, thread_name_prefix="slide-parse") as pool:
        jobs: deque = deque()
        for text, last in blocks:
            jobs.append((pool.submit(check.parse, text, lines), text, lines))
            lines += text.obj.count(b"\n", 0, len(text))  # the last block's count is not used
            while len(jobs) > workers:
                yield check.finish(jobs.popleft())
        while jobs:
            yield check.finish(jobs.popleft())
    check.end()


def _error(path: Path, e: ParseError) -> DataFormatError:
    line, message = e.args
    return DataFormatError(path, line, message)


class _Blocks:
    """The blocks after the first: each parsed on a pool thread, then checked in order for what
    spans blocks (points counted against the header, blank lines between points)."""

    def __init__(self, path: Path, shape: tuple[int, int, int], points: int, trailing: int) -> None:
        self.path, self.shape, self.points, self.trailing = path, shape, points, trailing
        self.own = threading.local()  # a parser per thread, kept: its repeat checks are megabytes to set up

    def parse(self, text: memoryview, lines_before: int):
        parser = getattr(self.own, "parser", None)
        if parser is None or parser.lines_read > lines_before:
            parser = self.own.parser = XcStreamParser(*self.shape, lines_before, 0)
        else:
            parser.restart(lines_before, 0)
        return parser.feed(text, False), parser.points_read, parser.first_trailing_blank

    def finish(self, job) -> dict:
        future, text, lines_before = job
        try:
            d, got, ends_blank = future.result()
            failure = None
        except ParseError as e:  # errors come only from lines with a point on them
            d, got, ends_blank, failure = None, 0, 0, e
        if self.trailing and (failure or got):
            raise DataFormatError(self.path, self.trailing, "blank line in the middle of the data")
        if failure or self.points + got > self.shape[0]:
            # Again, knowing the points before it: the first error a single parser meets, at its line.
            try:
                XcStreamParser(*self.shape, lines_before, self.points).feed(text, False)
            except ParseError as e:
                raise _error(self.path, e) from None
            raise _error(self.path, failure) from None
        self.points += got
        if got or not self.trailing:  # a block of blank lines alone still opens a gap before the next point
            self.trailing = ends_blank
        return d

    def end(self) -> None:
        if self.points != self.shape[0]:  # reported at the line where the next point was due
            raise DataFormatError(self.path, self.points + 2, f"the header promises {self.shape[0]} points but the "
                                                              f"file ends after {self.points}")
