"""Generated data sets kept on disk, so a run that asks for the same one again reads it instead of
drawing it again: drawing catalogue-amazon670k at its full size (643,474 points) takes most of a
minute, reading its shards back a few seconds. A set is a pair of shard folders (the format
training streams from, CRC-checked) under DATA_DIR/generated/, named by the generator, the sizes
and the seed; GENERATOR_VERSION is part of the name and must change whenever a generator's output
for a seed does (once the new copy is stored, the older versions' copies of the set are deleted).
A copy that is missing, unfinished or damaged is drawn again; one that cannot be written (a
read-only or full disk) costs only the time, never the run."""

from __future__ import annotations

import glob
import logging
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from .folder_swap import discard, process_alive, remove_tree
from .shards import ShardError, ShardFolder, write_split
from .synthetic import Split

log = logging.getLogger("slide")

# 2: unit_rows keeps each row's entries in the order drawn (sorted) instead of a diagonal product's
# order; the same values at the same places.
GENERATOR_VERSION = 2


def stored_generated(root: Path, name: str, make: Callable[..., tuple[Split, Split]], *, n_train: int, n_test: int,
                     seed: int) -> tuple[tuple[Split, Split], bool]:
    """`make(n_train=, n_test=, seed=)`'s (train, test), from DATA_DIR/generated/ when a copy is
    there, else drawn and stored. Returns them and whether they were read from the store."""
    # NumPy's version too: its Generator streams may change between releases.
    identity = {"generated": name, "n_train": int(n_train), "n_test": int(n_test), "seed": int(seed),
                "generator_version": GENERATOR_VERSION, "numpy": np.__version__}
    folder = Path(root) / "generated" / f"{name}-{n_train}-{n_test}-seed{seed}-v{GENERATOR_VERSION}"
    try:
        parts = [ShardFolder.open(folder / part) for part in ("train", "test")]
        if all(p.source == identity for p in parts):
            return (parts[0].load(), parts[1].load()), True
        log.info("%s holds other data than %s; drawing it again", folder, identity)
    except FileNotFoundError:
        pass
    except ShardError as e:
        log.warning("the stored copy of %s is unusable (%s); drawing it again", name, e)
    train, test = make(n_train=n_train, n_test=n_test, seed=seed)
    _store(folder, {"train": train, "test": test}, identity)
    return (train, test), False


def _store(folder: Path, parts: dict[str, Split], identity: dict) -> None:
    """Written beside `folder` under this process's own name and renamed into place, so runs drawing
    the same set at once never write into each other's files, and a run killed mid-write leaves
    no folder that looks finished (its leftovers are removed by the next run that stores)."""
    pending = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    try:
        for stale in folder.parent.glob(f"{glob.escape(folder.name)}.tmp-*"):
            if not process_alive(stale.name.rsplit("-", 1)[-1]):
                shutil.rmtree(stale, ignore_errors=True)
        if os.path.lexists(folder):
            remove_tree(folder)  # unusable (checked above); the name is ours under generated/
        discard(pending)  # a link left here is removed, never written through
        for part, split in parts.items():
            write_split(pending / part, split, source=identity)
        try:
            pending.rename(folder)
        except OSError:  # another run stored the same set first: theirs is as good
            if not folder.is_dir():
                raise
            shutil.rmtree(pending, ignore_errors=True)
        _drop_older_versions(folder)
    except (OSError, ShardError) as e:
        shutil.rmtree(pending, ignore_errors=True)
        log.warning("could not keep %s (%s); it will be drawn again next time", folder, e)


def _drop_older_versions(folder: Path) -> None:
    """Delete the copies of the same set that earlier generator versions stored (`folder`'s name
    ending in -v1, -v2, ... below GENERATOR_VERSION): nothing reads them again, and a full-size
    catalogue-amazon670k copy is 412 MB. What cannot be deleted is logged, never raised."""
    stem = folder.name[:-len(f"-v{GENERATOR_VERSION}")]
    for version in range(1, GENERATOR_VERSION):
        older = folder.with_name(f"{stem}-v{version}")
        if os.path.lexists(older):
            discard(older)
