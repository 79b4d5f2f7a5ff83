"""New arrays on ordinary 4 KiB pages, for large buffers that are only copied in and out in order:
snapshots of a network's parameters and their running mean.

NumPy asks for transparent huge pages for every array of 4 MiB or more. The engine wants them for
its weights (random rows, `cpp/common/aligned_array.h`), but a buffer read and written in order
gains nothing from them, and on a virtual machine that hands its free memory back to its host (the
suite's host, under KVM, has a balloon device that reports free pages) the first touch of each new
2 MiB page costs far more than 512 small ones. There, beside a network of debian-rdeps' shape, a
new 59 MB array took 0.128 s to fill on huge pages and 0.036 s on small ones, a snapshot of its 81
MB of parameters 0.173 s and 0.048 s (benches/small_pages.py, medians of 5), and validation's three
first snapshots were 0.52 s of a run's 1.15 s of validation (cProfile, one run).
"""

from __future__ import annotations

import mmap

import numpy as np

# Below this NumPy never asks for huge pages, so an ordinary array is the same.
HUGE_PAGE_ADVICE_FROM = 4 << 20


def empty(shape: "int | tuple[int, ...]", dtype: "np.dtype | type") -> np.ndarray:
    """An uninitialised, writable, C-contiguous array of `shape` and `dtype` on small pages where
    the platform can say so (Linux), else `np.empty`. The memory is returned when the array goes."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = count * dtype.itemsize
    advice = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if nbytes < HUGE_PAGE_ADVICE_FROM or advice is None:
        return np.empty(shape, dtype)
    region = mmap.mmap(-1, nbytes)
    region.madvise(advice)
    return np.frombuffer(region, dtype, count).reshape(shape)


def copy(values: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `values` in a new `empty` array."""
    out = empty(values.shape, values.dtype)
    np.copyto(out, values)
    return out
