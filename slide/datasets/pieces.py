"""Any Extreme Classification data, read a piece at a time with bounded memory: a text file (plain
or gzip) block by block through the engine's piecewise parser, or a shard folder shard by shard.
What `slide predict` and `slide evaluate` read, so files larger than memory work there too."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..paths import regular_file
from .named_errors import naming
from .prefetch import prefetched
from .shards import ShardFolder, arrays_to_split
from .synthetic import Split
from .xc_blocks import BLOCK_BYTES, parse_blocks


def read_pieces(path: "str | Path", *, block_bytes: int = BLOCK_BYTES) -> Iterator[Split]:
    """Consecutive row blocks of the data at `path`, in file order, each read while the previous
    one is being used. Errors name the file and line (DataFormatError) or shard (ShardError)."""
    path = Path(path)
    if path.is_dir():
        folder = ShardFolder.open(path)
        with naming(path):  # the consumer's own errors come out of `yield`, not from in here
            yield from prefetched((folder.read(i) for i in range(len(folder))), depth=1)
        return
    path = regular_file(path, "data file")
    with naming(path):
        for d in prefetched(parse_blocks(path, block_bytes), depth=1):
            if len(d["x_indptr"]) > 1:
                yield arrays_to_split(d, int(d["num_features"]), int(d["num_labels"]))
