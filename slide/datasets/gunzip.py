"""A gzip file decompressed whole, its output bounded by the memory this process can take. A gzip
stream's size says nothing about what it inflates to (zeros deflate about 1000:1, and the size in
its trailer is the attacker's to write), so the output is counted as it grows and refused, naming
the file, before it fills memory: not zlib's "Unable to allocate output buffer." naming nothing."""

from __future__ import annotations

import gzip
from pathlib import Path

from .. import memory
from .errors import DataFormatError

_CHUNK = 8 << 20  # bytes inflated per step: the most the bound is overshot by
# The text whole and what is parsed from it (CSR arrays about as large) must fit together.
_SHARE = 2


def gunzip_bounded(path: Path) -> bytearray:
    """The decompressed content of the gzip file `path`. MemoryError naming the file when it
    inflates beyond 1/_SHARE of the memory available; DataFormatError for a broken stream."""
    room, source = memory.available_bytes()
    limit = None if room is None else room // _SHARE
    out = bytearray()
    try:
        with gzip.open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                out += chunk
                if limit is not None and len(out) > limit:
                    raise MemoryError(
                        f"{path}: the gzip stream decompresses to more than {limit / 2**30:.2f} GiB, over half the "
                        f"memory available ({source}): a gzip bomb, or data to stream instead of loading whole "
                        "(`slide data convert`, `slide train --stream`)")
    except MemoryError as e:
        if str(path) in str(e):
            raise
        raise MemoryError(f"{path}: too little memory to decompress it after {len(out):,} bytes "
                          f"({e or 'out of memory'})") from None
    except (OSError, EOFError) as e:
        raise DataFormatError(path, 0, f"broken gzip stream: {e}") from None
    return out
