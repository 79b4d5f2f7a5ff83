"""The members of a .npz archive from an untrusted source, read so that no allocation is larger
than the file. slide writes its archives (model files, checkpoints, skip-gram files) with
np.savez, which stores every member uncompressed; so a member's data can never be larger than the
file, and each .npy header's shape must describe exactly the bytes stored after it. A compressed
member (a 2 MB deflated one inflates to 2 GB) is refused as not written by slide rather than
inflated, and a shape is checked against the stored bytes before its array is allocated."""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path
from typing import Iterable, Optional, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]
_CHUNK = 16 << 20  # bytes read at a time: no transient copy of a whole member


def check_stored(zf: zipfile.ZipFile, path: PathLike, error: type = ValueError) -> None:
    """Raise `error` naming `path` unless every member is stored uncompressed and lies within the
    file (as np.savez writes them); after this, reading a member allocates at most the file's size."""
    size = os.fstat(zf.fp.fileno()).st_size if zf.fp is not None else 0
    for info in zf.infolist():
        if info.compress_type != zipfile.ZIP_STORED:
            raise error(f"{path}: member {info.filename!r} is compressed (zip method {info.compress_type}); slide "
                        "writes its files uncompressed, so this file was not written by slide (refusing to inflate "
                        "it)")
        if info.file_size != info.compress_size or info.header_offset + info.compress_size > size:
            raise error(f"{path}: member {info.filename!r} claims {info.file_size:,} bytes in a file of {size:,}; "
                        "the file is truncated or corrupted")


def npy_meta(f, what: str, error: type = ValueError) -> tuple[tuple, bool, np.dtype]:
    """Shape, Fortran order and dtype of a .npy member, read without touching its data."""
    try:
        major, _ = np.lib.format.read_magic(f)
        if major not in (1, 2):
            raise error(f"unsupported .npy format version {major}")
        parse = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = parse(f)
    except Exception as e:  # numpy parses the header dict with ast: a damaged one raises all sorts
        raise error(f"{what} has a malformed header: {type(e).__name__}: {e}") from None
    if dtype.hasobject:
        raise error(f"{what} holds Python objects; slide's files never do (refusing to unpickle)")
    if dtype.kind not in "biuf" or dtype.itemsize == 0:  # all slide writes; a zero itemsize breaks size checks
        raise error(f"{what} holds {dtype} values; slide's files hold only plain numbers")
    if any(d < 0 for d in shape):
        raise error(f"{what} has a negative dimension in its shape {shape}")
    return shape, fortran, dtype


def check_data_size(f, info: zipfile.ZipInfo, shape: tuple, dtype: np.dtype, what: str,
                    error: type = ValueError) -> int:
    """The data's size in bytes, once the shape is known to describe exactly the bytes stored after
    the .npy header that `f` has just been read past (np.save writes nothing else)."""
    need = math.prod(shape) * dtype.itemsize
    stored = info.file_size - f.tell()
    if need != stored:
        raise error(f"{what} declares shape {shape} {dtype} ({need:,} bytes) but holds {stored:,} bytes; the file "
                    "is corrupted")
    return need


def read_member(zf: zipfile.ZipFile, name: str, what: str, error: type = ValueError) -> np.ndarray:
    """The array in member `name` (".npy" included), allocated only once its shape is checked
    against the stored bytes, and filled in bounded chunks."""
    info = zf.getinfo(name)
    with zf.open(info) as f:
        shape, fortran, dtype = npy_meta(f, what, error)
        nbytes = check_data_size(f, info, shape, dtype, what, error)
        flat = np.empty(nbytes // dtype.itemsize, dtype)
        raw = flat.view(np.uint8)
        for start in range(0, nbytes, _CHUNK):
            want = min(_CHUNK, nbytes - start)
            chunk = f.read(want)  # a zip member reads on until `want` bytes or its end
            if len(chunk) != want:
                raise error(f"{what} is cut short; the file is truncated")
            raw[start:start + want] = np.frombuffer(chunk, np.uint8)
    return flat.reshape(shape, order="F" if fortran else "C")


def read_members(path: PathLike, error: type = ValueError, names: Optional[Iterable[str]] = None
                 ) -> dict[str, np.ndarray]:
    """Arrays by name (".npy" dropped) of the archive at `path`: all of them, or `names` (a missing
    one raises `error`); no allocation is larger than the file."""
    path = Path(path)
    with zipfile.ZipFile(path) as zf:
        check_stored(zf, path, error)
        present = [n[:-4] for n in zf.namelist() if n.endswith(".npy")]
        wanted = present if names is None else list(names)
        missing = sorted(set(wanted) - set(present))
        if missing:
            raise error(f"{path} lacks arrays {missing[:5]}")
        return {n: read_member(zf, n + ".npy", f"{path}: array {n!r}", error) for n in wanted}
