"""Checks on paths a user hands slide, made before anything opens them: opening a FIFO blocks
forever, a directory gives a misleading "no such file", and writing an output over an input loses
the user's data."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Union

PathLike = Union[str, "os.PathLike[str]"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def regular_file(path: PathLike, what: str) -> Path:
    """`path` as a Path once it is known to name a regular file (symlinks followed).

    Raises FileNotFoundError when nothing is there and ValueError naming what is there instead
    (a directory, a FIFO, a device), so no caller ever blocks on or misreads one.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"no {what} at {path}") from None
    except OSError as e:
        raise OSError(e.errno, f"cannot read the {what} {path}: {e.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise ValueError(f"{path} is {kind}; expected a {what} (a regular file)")
    return path


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether a and b name one file (hard and symbolic links included); false when either is missing."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_overwriting_inputs(out: PathLike, inputs: dict[str, PathLike]) -> None:
    """ValueError when the output path names one of the inputs ({description: path})."""
    for what, path in inputs.items():
        if same_file(out, path):
            raise ValueError(f"refusing to write the output to {out}: it is the {what} ({path}); choose another "
                             "--out")


def output_file(path: PathLike, what: str) -> Path:
    """`path` as a Path for a file about to be (re)written; ValueError when something other than a
    regular file is there (a rename would silently replace a FIFO or a device with a file)."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return path  # nothing there (or unreadable): the write itself reports what goes wrong
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise ValueError(f"cannot write the {what} to {path}: it is {kind}")
    return path
