"""What identifies a data file a run trained on: its absolute path, size and a hash of its first
and last MiB (cheap on a multi-GB file, and it survives a copy that changes the modification
time). A resumed run refuses files that no longer match."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable

from ..paths import regular_file

_SAMPLE = 1 << 20


def fingerprint(path: Path) -> dict:
    path = regular_file(path, "data file").resolve()
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        digest.update(f.read(_SAMPLE))
        if size > _SAMPLE:
            f.seek(max(_SAMPLE, size - _SAMPLE))
            digest.update(f.read(_SAMPLE))
    return {"path": str(path), "size": size, "sample_sha256": digest.hexdigest()}


def check_unchanged(saved: Iterable[dict]) -> None:
    """ValueError naming the first file that is not the one the run started with."""
    for old in saved:
        try:
            new = fingerprint(Path(old["path"]))
        except FileNotFoundError:
            raise FileNotFoundError(f"{old['path']}, a data file of this run, is gone; restore it to resume") from None
        if new["size"] != old["size"]:
            what = f"its size was {old['size']:,} bytes and is now {new['size']:,}"
        elif new["sample_sha256"] != old["sample_sha256"]:
            what = "its content differs"
        else:
            continue
        raise ValueError(f"{old['path']} has changed since the run started ({what}); a resumed run trains on the "
                         "data it started with. Restore the file, or start a new run")
