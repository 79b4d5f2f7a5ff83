"""`convert_xc`: an Extreme Classification text file (plain or gzip) into a shard folder in one
streaming pass with bounded memory: blocks of whole lines are read on one thread, parsed by the
engine's piecewise parser (which keeps line numbers and checks across blocks) and written as
shards on another, so reading, parsing and writing overlap."""

from __future__ import annotations

import gzip
import logging
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np

from .. import _core
from ..paths import regular_file, same_file
from .errors import DataFormatError
from .prefetch import prefetched
from .shards import DEFAULT_SHARD_ROWS, ShardFolder, ShardWriter

log = logging.getLogger("slide")

# Bytes of text parsed at a time: large enough that per-call costs vanish, small beside any model.
BLOCK_BYTES = 32 << 20


def source_fingerprint(path: Path) -> dict:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _open(path: Path):
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gz else open(path, "rb")


def line_blocks(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[bytes, bool]]:
    """(text, last) pieces of the file that end at line breaks (the last may not), each about
    `block_bytes` long (longer only when one line is)."""
    carry = b""
    with _open(path) as f:
        try:
            while True:
                chunk = f.read(block_bytes)
                if not chunk:
                    yield carry, True
                    return
                text = carry + chunk
                cut = text.rfind(b"\n")
                if cut < 0:  # one line longer than a block: read on
                    carry = text
                    continue
                carry = text[cut + 1:]
                yield text[:cut + 1], False
        except (OSError, EOFError) as e:
            if isinstance(e, OSError) and not isinstance(f, gzip.GzipFile):
                raise
            raise DataFormatError(path, 0, f"broken gzip stream: {e}") from None


def convert_xc(source: "str | Path", out_dir: "str | Path", *, shard_rows: int = DEFAULT_SHARD_ROWS,
               block_bytes: int = BLOCK_BYTES, on_progress: Optional[Callable[[int, int], None]] = None
               ) -> ShardFolder:
    """Convert an Extreme Classification file into a shard folder; returns it, opened.

    Memory stays near two blocks of text plus two shards whatever the file's size. A malformed
    file raises DataFormatError naming the file and line, and leaves the folder unfinished (no
    manifest), so it is never read as data. `on_progress(points, total)` is called per block.
    """
    source = regular_file(source, "data file")
    out_dir = Path(out_dir)
    if same_file(out_dir, source) or out_dir.resolve() in source.resolve().parents:
        raise ValueError(f"the shard folder {out_dir} would hold or replace the source file {source}; "
                         "choose another folder")
    parser = _core.XcStreamParser()

    def parsed() -> Iterator[dict]:
        for text, last in prefetched(line_blocks(source, block_bytes), depth=2):
            try:
                yield parser.feed(text, last)
            except _core.ParseError as e:
                line, message = e.args
                raise DataFormatError(source, line, message) from None

    writer: Optional[ShardWriter] = None
    t0 = time.perf_counter()
    for arrays in prefetched(parsed(), depth=1):  # parsing on its own thread overlaps writing here
        if writer is None:
            writer = ShardWriter(out_dir, int(arrays["num_features"]), int(arrays["num_labels"]),
                                 shard_rows=shard_rows, source=source_fingerprint(source))
        writer.add({k: v for k, v in arrays.items() if isinstance(v, np.ndarray)})
        if on_progress is not None:
            on_progress(parser.points_read, int(arrays["num_points"]))
    assert writer is not None  # the last block always comes, and a file without a header fails in it
    folder = writer.finish()
    log.info("converted %s into %d shards in %.1fs", source, len(folder), time.perf_counter() - t0)
    return folder
