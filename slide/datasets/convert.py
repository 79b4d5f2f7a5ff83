"""`convert_xc`: an Extreme Classification text file (plain or gzip) into a shard folder in one
streaming pass with bounded memory: blocks of whole lines are read on one thread, parsed on as
many threads as the process may use (xc_blocks) and written as shards on this one, so reading,
parsing and writing overlap."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..paths import regular_file, same_file
from .cache import source_identity
from .prefetch import prefetched
from .shards import DEFAULT_SHARD_ROWS, ShardFolder, ShardWriter
from .xc_blocks import BLOCK_BYTES, parse_blocks

log = logging.getLogger("slide")


def source_fingerprint(path: Path) -> dict:
    """The source a shard folder was converted from, as its manifest records it (cache.source_identity)."""
    return {"path": str(path.resolve()), **source_identity(path)}


def convert_xc(source: "str | Path", out_dir: "str | Path", *, shard_rows: int = DEFAULT_SHARD_ROWS,
               block_bytes: int = BLOCK_BYTES, workers: Optional[int] = None,
               on_progress: Optional[Callable[[int, int], None]] = None) -> ShardFolder:
    """Convert an Extreme Classification file into a shard folder; returns it, opened.

    Memory stays near a few blocks of text (two read ahead, one per parsing thread) plus two
    shards, whatever the file's size. A malformed file raises DataFormatError naming the file
    and line; like any failure, it leaves `out_dir` as it was (the shards are built beside it and
    swapped in only when complete: shards.ShardWriter).
    `on_progress(points, total)` is called per block.
    """
    source = regular_file(source, "data file")
    out_dir = Path(out_dir)
    if same_file(out_dir, source) or out_dir.resolve() in source.resolve().parents:
        raise ValueError(f"the shard folder {out_dir} would hold or replace the source file {source}; "
                         "choose another folder")
    writer: Optional[ShardWriter] = None
    t0 = time.perf_counter()
    points = 0
    try:
        for arrays in prefetched(parse_blocks(source, block_bytes, workers), depth=1):  # overlaps the writing
            if writer is None:
                writer = ShardWriter(out_dir, int(arrays["num_features"]), int(arrays["num_labels"]),
                                     shard_rows=shard_rows, source=source_fingerprint(source))
            writer.add({k: v for k, v in arrays.items() if isinstance(v, np.ndarray)})
            points += len(arrays["x_indptr"]) - 1
            if on_progress is not None:
                on_progress(points, int(arrays["num_points"]))
        assert writer is not None  # the last block always comes, and a file without a header fails in it
        folder = writer.finish()
    except BaseException:  # a full disk, a malformed line, Ctrl-C: the previous conversion stays
        if writer is not None:
            writer.abort()
        raise
    log.info("converted %s into %d shards in %.1fs", source, len(folder), time.perf_counter() - t0)
    return folder
