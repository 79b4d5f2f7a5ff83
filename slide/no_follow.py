"""Writing into a folder slide owns (a run folder, a shard folder, a cache) without ever following a
symbolic link out of it. A folder copied from anywhere may hold `metrics.jsonl -> ~/.bashrc`; a
plain open(..., "a") would append to the link's target. Files written whole go through
atomic_files, whose rename replaces a link instead of following it; the files opened in place
(appended to, truncated, locked) are opened here with O_NOFOLLOW, and checked to be regular files
before anything blocks on them (opening a FIFO for writing waits for a reader)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, Iterable, Union

PathLike = Union[str, "os.PathLike[str]"]


class LinkRefused(ValueError):
    """A file or folder slide would write is a symbolic link; the message names it and its target."""


def _link_message(path: Path, what: str) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return (f"{path} is a symbolic link (to {target}); slide never writes through a link out of its {what}: "
            f"remove the link, or replace it with a copy of the file")


def refuse_link(path: PathLike, what: str) -> None:
    """LinkRefused when `path` is a symbolic link (a dangling one included)."""
    path = Path(path)
    if path.is_symlink():
        raise LinkRefused(_link_message(path, what))


def refuse_links(folder: PathLike, names: Iterable[str], what: str) -> None:
    """LinkRefused naming the first of `folder`'s entries `names` that is a symbolic link."""
    for name in names:
        refuse_link(Path(folder) / name, what)


def open_no_follow(path: PathLike, flags: int, what: str, mode: int = 0o666) -> int:
    """os.open(path, flags) that refuses a symbolic link (LinkRefused) and anything but a regular
    file (ValueError), without blocking on a FIFO. Returns the descriptor, blocking as usual."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP or path.is_symlink():
            raise LinkRefused(_link_message(path, what)) from None
        if e.errno == errno.ENXIO:  # a FIFO opened for writing without a reader
            raise ValueError(f"{path} is a FIFO (named pipe); expected a regular file in the {what}") from None
        raise OSError(e.errno, f"cannot open {path}: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{path} is not a regular file; expected one in the {what}")
    os.set_blocking(fd, True)
    return fd


def append_text(path: PathLike, what: str) -> IO[str]:
    """`path` opened for appending text (created if missing), never through a link."""
    fd = open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, what)
    return os.fdopen(fd, "a")


def truncate_file(path: PathLike, size: int, what: str) -> None:
    """Cut `path` to `size` bytes and make that durable; never through a link."""
    fd = open_no_follow(path, os.O_WRONLY, what)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)
