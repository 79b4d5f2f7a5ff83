"""The model file: a NumPy .npz archive of plain arrays plus a JSON header. Nothing is pickled,
so loading a file never runs code; writes go to a temporary file that is fsynced and renamed."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

import numpy as np

from ._version import __version__

if TYPE_CHECKING:
    from .network import Network

FORMAT = "slide-model"
FORMAT_VERSION = 1
_HEADER = "__slide_header__"
PathLike = Union[str, "os.PathLike[str]"]


def _skip(name: str, include_optimizer: bool) -> bool:
    if name.endswith("_grad"):
        return True  # gradient buffers are zero at every batch boundary
    return not include_optimizer and "adam_" in name


def save_network(net: "Network", path: PathLike, *, include_optimizer: bool = True,
                 extra: Optional[dict] = None) -> None:
    """Write `net` (and `extra`, JSON-serialisable, e.g. a training loop's position) to one file."""
    path = Path(path)
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "slide_version": __version__,
        "config": net.get_config(),
        "counters": net._core.counters(),
        "include_optimizer": include_optimizer,
        "extra": extra or {},
    }
    arrays = {k: v for k, v in net.weights().items() if not _skip(k, include_optimizer)}
    arrays[_HEADER] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    atomic_write(path, lambda f: np.savez(f, **arrays))


def atomic_write(path: Path, write) -> None:
    """Run write(file) on a temporary file beside `path`, fsync it, then rename it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_header(path: PathLike) -> dict:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model file at {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            if _HEADER not in z.files:
                raise ValueError(f"{path} is not a slide model file (no header)")
            header = json.loads(z[_HEADER].tobytes().decode())
    except (zipfile.BadZipFile, OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not a readable slide model file (truncated or corrupted): {e}") from None
    if header.get("format") != FORMAT:
        raise ValueError(f"{path} is not a slide model file")
    if int(header.get("version", 0)) > FORMAT_VERSION:
        raise ValueError(f"{path} was written by a newer slide (model format {header['version']}, this slide "
                         f"reads up to {FORMAT_VERSION}); upgrade slide to load it")
    return header


def load_network(cls, path: PathLike, *, threads: Optional[int] = None) -> "Network":
    header = read_header(path)
    overrides = {"threads": threads} if threads is not None else {}
    net = cls.from_config(header["config"], **overrides)
    state = net.weights()
    try:
        with np.load(path, allow_pickle=False) as z:
            for name in z.files:
                if name == _HEADER:
                    continue
                if name not in state:
                    raise ValueError(f"{path}: array {name!r} does not belong to this model's configuration")
                data = z[name]
                if data.shape != state[name].shape or data.dtype != state[name].dtype:
                    raise ValueError(f"{path}: array {name!r} has shape {data.shape} {data.dtype}, expected "
                                     f"{state[name].shape} {state[name].dtype}")
                np.copyto(state[name], data)
            missing = [n for n in state if not _skip(n, header["include_optimizer"]) and n not in z.files]
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise ValueError(f"{path} is truncated or corrupted: {e}") from None
    if missing:
        raise ValueError(f"{path} lacks arrays {missing[:5]}")
    counters = dict(header["counters"])
    saved, fresh = counters["rng"], net._core.counters()["rng"]
    # A different thread count keeps the saved generators it can and seeds the rest afresh.
    counters["rng"] = [saved[t] if t < len(saved) else fresh[t] for t in range(net.threads)]
    net._core.set_counters(counters)
    return net
