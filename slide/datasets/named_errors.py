"""Out-of-memory errors that say which data asked for the memory. NumPy's "Unable to allocate 100.
GiB for an array with shape ..." and the engine's std::bad_alloc name no file, so a user cannot
tell a dataset too large for the machine from a damaged or hostile file whose counts ask too much."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator


@contextlib.contextmanager
def naming(path: "os.PathLike[str] | str") -> Iterator[None]:
    """Re-raise a MemoryError from the block as one whose message starts with `path`."""
    try:
        yield
    except MemoryError as e:
        if str(path) in str(e):
            raise
        raise MemoryError(f"{path}: {e or 'out of memory'} (while reading it: more than this machine has free; "
                          "if the data is not that large, its header or manifest promises more than it holds)") \
            from None
