"""Writing a file so that a crash, a kill or a full disk never leaves it half-written: the data
goes to a temporary file in the same folder, is flushed and fsynced, and only then renamed over
the target (rename is atomic on POSIX); the folder is fsynced so the rename itself survives a
power cut. On any failure the temporary file is removed and the previous file is untouched."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

from .paths import output_file


def atomic_write(path: Path, write: Callable[[BinaryIO], object], *, sync: bool = True) -> None:
    """Run write(file) on a temporary file beside `path`, fsync it, then rename it over `path`.

    ``sync=False`` leaves the fsyncs to the caller (`fsync_files`), for files that are trusted only
    once a later file, written with sync, says they are complete. Raises OSError (same errno)
    naming `path`, what went wrong and that the previous file, if any, is unchanged.
    """
    path = output_file(path, "output")
    tmp, replaced = None, False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would make every saved file private
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp, replaced = None, True
        if sync:
            fsync_folder(path.parent)
    except OSError as e:
        if replaced:
            previous = "the new file is in place but its folder could not be synced"
        else:
            previous = "the previous file is unchanged" if path.exists() else "no file was written"
        raise OSError(e.errno, f"could not write {path}: {e.strerror or e}; {previous}") from e
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def atomic_link(source: Path, path: Path) -> bool:
    """Make `path` a hard link to `source` (which must stay unchanged: its files are replaced, never
    rewritten), atomically as `atomic_write` writes: the link is made under a temporary name and
    renamed over `path`, and the folder fsynced. False, with `path` untouched, where the file
    system has no hard links, `source` is on another one, or `source` is not a regular file (a
    symbolic link, say, out of a folder copied from elsewhere): the caller writes the bytes instead."""
    path = output_file(path, "output")
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        if not stat.S_ISREG(os.lstat(source).st_mode):
            return False
        os.link(source, tmp, follow_symlinks=False)
    except OSError:
        return False
    try:
        os.replace(tmp, path)
        fsync_folder(path.parent)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OSError(e.errno, f"could not write {path}: {e.strerror or e}") from e
    return True


def fsync_files(paths: "list[Path]") -> None:
    """Flush files (and their folders) written with ``sync=False`` to the disk."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for folder in {Path(p).parent for p in paths}:
        fsync_folder(folder)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_folder(folder: Path) -> None:
    """fsync a folder, so that the renames in it survive a power cut."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary files that a killed `atomic_write` left in `folder` (a SIGKILL gives
    no chance to clean up; at full size each is as large as a checkpoint). Call it only when no
    other process writes into `folder`."""
    removed = []
    for tmp in Path(folder).glob(".*.tmp"):
        try:
            tmp.unlink()
            removed.append(tmp)
        except OSError:
            pass
    return removed
