"""Replacing a whole folder (a shard folder, a data cache) so that its previous content survives
until the new one is complete. The new folder is built beside the old one, under a hidden name of
this process's own; only when it is finished is it swapped in by rename (atomically, where the
kernel can exchange two names) and the old one deleted. A failure midway (a full disk, a
malformed line, Ctrl-C) deletes the partial build and leaves the old folder as it was; a build
left by a killed process is deleted by the next one that builds beside it."""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import shutil
import tempfile
import uuid
from pathlib import Path

log = logging.getLogger("slide")

_BUILD = "build"
_OLD = "old"
_RENAME_EXCHANGE = 2  # linux/fs.h


def _sibling_prefix(target: Path, kind: str) -> str:
    return f".{target.name}.{kind}-"


def build_folder(target: Path) -> Path:
    """A new empty folder beside `target` to build its replacement in."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_siblings(target)
    return Path(tempfile.mkdtemp(prefix=f"{_sibling_prefix(target, _BUILD)}{os.getpid()}-", dir=target.parent))


def remove_tree(path: Path) -> None:
    """Delete `path`: a link or a file is unlinked (its target stays), a folder deleted whole."""
    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)  # never follows the links inside


def discard(build: Path) -> None:
    """Delete a build that will not be used; what cannot be deleted is logged, never raised."""
    try:
        remove_tree(build)
    except OSError as e:
        log.warning("could not delete the unfinished %s (%s)", build, e)


def swap_in(build: Path, target: Path) -> None:
    """Put the finished folder `build` at `target`, then delete what was there (a folder, or a
    link, whose target is left alone). If it cannot, `target` is as it was and OSError says why."""
    if not os.path.lexists(target):
        os.rename(build, target)
        return
    if target.is_dir() and not target.is_symlink() and _exchange(build, target):
        discard(build)  # now the old folder, under the build's name
        return
    old = target.with_name(f"{_sibling_prefix(target, _OLD)}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    os.rename(target, old)
    try:
        os.rename(build, target)
    except OSError:
        os.rename(old, target)
        raise
    discard(old)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names in one step (Linux renameat2); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd = -100
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0


def remove_stale_siblings(target: Path) -> None:
    """Delete the builds and old folders beside `target` whose process is gone."""
    for kind in (_BUILD, _OLD):
        for stale in target.parent.glob(glob.escape(_sibling_prefix(target, kind)) + "*"):
            pid = stale.name[len(_sibling_prefix(target, kind)):].split("-", 1)[0]
            if not process_alive(pid):
                discard(stale)


def process_alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # another user's live process
        return True
    return True
