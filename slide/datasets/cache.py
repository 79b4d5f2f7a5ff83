"""Binary caches beside parsed text files: loading one takes a fraction of a second, and it is
ignored (and rewritten) as soon as the source's size or modification time changes. Extreme
Classification files are cached as a shard folder (`<file>.shards/`, the format training streams
from); a text8 corpus's token ids as one `.npz`."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Optional

import numpy as np

from ..atomic_files import atomic_write

log = logging.getLogger("slide")

CACHE_FORMAT = "slide-data-cache"
CACHE_VERSION = 1


def user_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "slide"


def _fingerprint(source: Path, kind: str) -> dict:
    st = source.stat()
    return {"format": CACHE_FORMAT, "version": CACHE_VERSION, "kind": kind, "size": st.st_size,
            "mtime_ns": st.st_mtime_ns}


def cache_path(source: Path, kind: str, cache_dir: Optional[Path]) -> Path:
    """Beside the source when that folder is writable, else in the cache dir under a hashed name."""
    name = f"{source.name}.{kind}.slidecache.npz"
    if cache_dir is None and os.access(source.parent, os.W_OK):
        return source.parent / name
    digest = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:16]
    return (cache_dir or user_cache_dir()) / f"{digest}-{name}"


def load_cached(source: Path, kind: str, cache_dir: Optional[Path]) -> Optional[dict]:
    path = cache_path(source, kind, cache_dir)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(z["__header__"].tobytes())
            if header != _fingerprint(source, kind):
                log.info("cache %s is stale; re-parsing %s", path, source)
                return None
            return {k: z[k] for k in z.files if k != "__header__"}
    except Exception as e:  # a damaged cache is only a slower load, never an error
        log.warning("ignoring unreadable cache %s (%s)", path, e)
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
    st = source.stat()
    return bool(folder_source) and folder_source.get("size") == st.st_size \
        and folder_source.get("mtime_ns") == st.st_mtime_ns


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
