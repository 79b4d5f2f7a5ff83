"""Binary caches beside parsed text files: loading one takes a fraction of a second, and it is
ignored (and rewritten) as soon as the source changes (`source_identity`). Extreme
Classification files are cached as a shard folder (`<file>.shards/`, the format training streams
from); a text8 corpus's token ids as one `.npz`."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..atomic_files import atomic_write

log = logging.getLogger("slide")

CACHE_FORMAT = "slide-data-cache"
CACHE_VERSION = 1


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "slide"


def source_identity(source: Path) -> dict:
    """What a cache must match to stand for `source`: its size, a hash of its first and last MiB (the
    content fingerprint a resumed run checks), and its inode, modification and change times. `cp -p`
    and `touch -r` restore the modification time but not the change time, which no user tool sets,
    so an edit anywhere is noticed, and the hash catches it where change times are coarse or not
    kept. Cost: one stat and 2 MiB read and hashed per load (a few ms), the same for a 1 GB file as
    for a 3 MB one; a full hash would cost about as much as parsing again."""
    from .fingerprint import fingerprint

    st = source.stat()
    return {"size": st.st_size, "sample_sha256": fingerprint(source)["sample_sha256"], "inode": st.st_ino,
            "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def _fingerprint(source: Path, kind: str) -> dict:
    return {"format": CACHE_FORMAT, "version": CACHE_VERSION, "kind": kind, **source_identity(source)}


def cache_path(source: Path, kind: str, cache_dir: Optional[Path]) -> Path:
    """Beside the source when that folder is writable, else in the cache dir under a hashed name."""
    name = f"{source.name}.{kind}.slidecache.npz"
    if cache_dir is None and os.access(source.parent, os.W_OK):
        return source.parent / name
    digest = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:16]
    return (cache_dir or user_cache_dir()) / f"{digest}-{name}"


def load_cached(source: Path, kind: str, cache_dir: Optional[Path],
                damage: Optional[Callable[[dict], Optional[str]]] = None) -> Optional[dict]:
    """The cached arrays of `source`, or None (parse it) when there are none, they are stale, or
    the cache is damaged: unreadable, a member larger than the file (a zip bomb), or arrays that
    `damage` finds fault with (it returns why, or None)."""
    path = cache_path(source, kind, cache_dir)
    if not path.exists():
        return None
    try:
        size = path.stat().st_size
        with zipfile.ZipFile(path) as zf:  # np.savez stores members: none can hold more than the file
            big = [i.filename for i in zf.infolist() if i.file_size > size]
        if big:
            raise ValueError(f"its member {big[0]} would inflate beyond the file's {size:,} bytes")
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(z["__header__"].tobytes())
            if header != _fingerprint(source, kind):
                log.info("cache %s is stale; re-parsing %s", path, source)
                return None
            arrays = {k: z[k] for k in z.files if k != "__header__"}
        why = damage(arrays) if damage is not None else None
        if why:
            raise ValueError(why)
        return arrays
    except Exception as e:  # a damaged cache is only a slower load, never an error
        log.warning("ignoring the damaged cache %s (%s); parsing %s again", path, e, source)
        return None


def store_cached(source: Path, kind: str, cache_dir: Optional[Path], arrays: dict) -> None:
    path = cache_path(source, kind, cache_dir)
    header = np.frombuffer(json.dumps(_fingerprint(source, kind)).encode(), np.uint8)
    try:
        atomic_write(path, lambda f: np.savez(f, __header__=header, **arrays))
    except OSError as e:
        log.warning("could not write the cache %s (%s); the next load parses again", path, e)


def shard_cache_path(source: Path, cache_dir: Optional[Path]) -> Path:
    """`<file>.shards` beside the source when that folder is writable, else in the cache dir."""
    name = f"{source.name}.shards"
    if cache_dir is None and os.access(source.parent, os.W_OK):
        return source.parent / name
    digest = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:16]
    return (cache_dir or user_cache_dir()) / f"{digest}-{name}"


def _same_source(folder_source: Optional[dict], source: Path) -> bool:
    if not isinstance(folder_source, dict):
        return False
    identity = source_identity(source)
    return all(folder_source.get(k) == v for k, v in identity.items())


def fresh_shards(source: Path, cache_dir: Optional[Path]):
    """The source's shard folder when it exists, is whole and matches the source; else None."""
    from .shards import ShardError, ShardFolder

    path = shard_cache_path(source, cache_dir)
    if not (path / "manifest.json").exists():
        return None
    try:
        folder = ShardFolder.open(path)
    except (ShardError, OSError) as e:
        log.warning("ignoring the unreadable shard cache %s (%s)", path, e)
        return None
    if not _same_source(folder.source, source):
        log.info("shard cache %s is stale; converting %s again", path, source)
        return None
    return folder
