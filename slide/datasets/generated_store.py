"""Generated data sets kept on disk, so a run that asks for the same one again reads it instead of
drawing it again: drawing catalogue-amazon670k at its full size (643,474 points) takes most of a
minute, reading its shards back a few seconds. A set is a pair of shard folders (the format
training streams from, CRC-checked) under DATA_DIR/generated/, named by the generator, the sizes
and the seed; GENERATOR_VERSION is part of the name and must change whenever a generator's output
for a seed does. A copy that is missing, unfinished or damaged is drawn again; one that cannot be
written (a read-only or full disk) costs only the time, never the run."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from .shards import ShardError, ShardFolder, write_split
from .synthetic import Split

log = logging.getLogger("slide")

GENERATOR_VERSION = 1


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
    try:
        if folder.exists():
            shutil.rmtree(folder)  # only ever our own folder: its name is ours under generated/
        for part, split in (("train", train), ("test", test)):
            write_split(folder / part, split, source=identity)
    except OSError as e:
        log.warning("could not keep %s in %s (%s); it will be drawn again next time", name, folder, e)
    return (train, test), False
