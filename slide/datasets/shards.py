"""The binary shard format: a folder of CSR shards that reads back at disk speed, one shard at a
time, so data of any size trains with bounded memory.

    DIR/manifest.json     written last: the shards, their rows, sizes and CRC-32s, the data's
                          shape and the source file's size and modification time
    DIR/part-00000.shard  "SLIDESHD", a little-endian u64 header length, a JSON header (rows,
                          shape, arrays with dtype, count and offset, the payload's CRC-32), then
                          x_indptr (int64), x_indices (int32), x_data (float32), y_indptr (int64),
                          y_indices (int32), each 64-byte aligned

A folder without manifest.json is an unfinished conversion and is never read. Each shard is
written atomically; a shard whose size, header or CRC-32 disagrees with the manifest, or whose
CSR structure is not sound, is refused with a message naming the file.
"""

from __future__ import annotations

import json
import os
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Optional

import numpy as np
import scipy.sparse as sp

from ..atomic_files import atomic_write, fsync_files
from .folder_swap import build_folder, discard, swap_in
from ..file_schemas import SHARD_MANIFEST, check
from ..json_files import read_json
from ..schema import shown
from .synthetic import Split

MANIFEST = "manifest.json"
FORMAT = "slide-shards"
VERSION = 1
MAGIC = b"SLIDESHD"
ALIGN = 64
# (name, dtype) of a shard's arrays, in file order.
ARRAYS = (("x_indptr", "<i8"), ("x_indices", "<i4"), ("x_data", "<f4"), ("y_indptr", "<i8"), ("y_indices", "<i4"))
# Points per shard: ~40 MB of Amazon-670K-shaped data, so two buffered shards are a small fixed cost.
DEFAULT_SHARD_ROWS = 65_536


class ShardError(ValueError):
    """A shard folder or file that cannot be trusted; the message names it and says why."""


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def shard_name(index: int) -> str:
    return f"part-{index:05d}.shard"


def write_shard(path: Path, arrays: dict[str, np.ndarray], num_features: int, num_labels: int, *,
                sync: bool = True) -> dict:
    """Write one shard atomically; returns its manifest entry (file, rows, bytes, crc32)."""
    rows = len(arrays["x_indptr"]) - 1
    payload = [np.ascontiguousarray(arrays[name], dtype=dtype) for name, dtype in ARRAYS]
    crc = 0
    for a in payload:
        crc = zlib.crc32(memoryview(a).cast("B"), crc)
    layout, offset = [], 0
    for (name, dtype), a in zip(ARRAYS, payload):
        layout.append([name, dtype, int(a.size), offset])
        offset = _aligned(offset + a.nbytes)
    header = {"format": "slide-shard", "version": VERSION, "rows": rows, "num_features": int(num_features),
              "num_labels": int(num_labels), "arrays": layout, "payload_crc32": crc}
    head = json.dumps(header).encode()
    start = _aligned(len(MAGIC) + 8 + len(head))
    total = start + offset

    def write(f: BinaryIO) -> None:
        f.write(MAGIC + len(head).to_bytes(8, "little") + head)
        f.write(b"\0" * (start - f.tell()))
        for (_, _, _, off), a in zip(layout, payload):
            f.write(b"\0" * (start + off - f.tell()))
            f.write(memoryview(a).cast("B"))
        f.write(b"\0" * (total - f.tell()))

    atomic_write(path, write, sync=sync)
    return {"file": path.name, "rows": rows, "bytes": total, "crc32": crc}


def _csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """A CSR matrix over these (already checked) arrays as they are: int32 ids, int64 offsets, no copy."""
    m = sp.csr_matrix(shape, dtype=data.dtype)
    m.data, m.indices, m.indptr = data, indices, indptr
    return m


def arrays_to_split(arrays: dict[str, np.ndarray], num_features: int, num_labels: int) -> Split:
    rows = len(arrays["x_indptr"]) - 1
    ones = np.ones(len(arrays["y_indices"]), np.float32)
    return Split(_csr(arrays["x_data"], arrays["x_indices"], arrays["x_indptr"], (rows, num_features)),
                 _csr(ones, arrays["y_indices"], arrays["y_indptr"], (rows, num_labels)))


def _check_csr(path: Path, what: str, indptr: np.ndarray, indices: np.ndarray, dim: int) -> None:
    if indptr[0] != 0 or indptr[-1] != len(indices) or (len(indptr) > 1 and np.any(np.diff(indptr) < 0)):
        raise ShardError(f"{path}: the {what} offsets are not a valid CSR structure")
    if len(indices) and (indices.min() < 0 or indices.max() >= dim):
        raise ShardError(f"{path}: a {what} id lies outside [0, {dim})")


@dataclass(frozen=True)
class ShardFolder:
    """A finished conversion: its manifest, read and checked, and the shards it lists."""

    path: Path
    num_points: int
    num_features: int
    num_labels: int
    shards: tuple[dict, ...]
    source: Optional[dict]

    @classmethod
    def open(cls, path: "os.PathLike[str] | str") -> "ShardFolder":
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"no shard folder at {path}")
        manifest = path / MANIFEST
        if not manifest.exists() and not any(path.glob("part-*.shard")):
            raise ShardError(f"{path} is a directory without a shard manifest; expected a data file, or a shard "
                             "folder written by `slide data convert`")
        if not manifest.exists():
            raise ShardError(f"{path} holds no finished conversion ({MANIFEST} is missing: the conversion was "
                             "interrupted or never ran); run `slide data convert` again")
        try:  # never blocks on a FIFO, never reads a manifest of any size whole (json_files)
            m = read_json(manifest, "shard manifest")
        except ValueError as e:
            raise ShardError(f"{e}; the manifest is damaged or not slide's: convert the data again") from None
        try:
            if not isinstance(m, dict) or m.get("format") != FORMAT:
                raise ShardError(f"{manifest} is not a slide shard manifest (expected a JSON object of format "
                                 f"{FORMAT!r})")
            if m.get("version") != VERSION:
                raise ShardError(f"{manifest} is version {shown(m.get('version'))} of the shard format; this slide "
                                 f"reads version {VERSION}: convert the data again")
            m = check(m, SHARD_MANIFEST, str(manifest), error=ShardError)  # types and ranges of every field
            shards = tuple({"file": str(s["file"]), "rows": int(s["rows"]), "bytes": int(s["bytes"]),
                            "crc32": int(s["crc32"])} for s in m["shards"])
            folder = cls(path, int(m["num_points"]), int(m["num_features"]), int(m["num_labels"]), shards,
                         m.get("source"))
        except (ValueError, KeyError, TypeError) as e:
            if isinstance(e, ShardError):
                raise
            raise ShardError(f"{manifest} is damaged ({e}); convert the data again") from None
        if sum(s["rows"] for s in shards) != folder.num_points:
            raise ShardError(f"{manifest}: its shards hold {sum(s['rows'] for s in shards):,} points, not the "
                             f"{folder.num_points:,} it promises")
        for s in shards:
            file = path / s["file"]
            if Path(s["file"]).name != s["file"] or not file.is_file():
                raise ShardError(f"{file} is missing; convert the data again")
            if file.stat().st_size != s["bytes"]:
                raise ShardError(f"{file} has {file.stat().st_size:,} bytes, the manifest says {s['bytes']:,} "
                                 "(truncated or replaced); convert the data again")
        return folder

    def __len__(self) -> int:
        return len(self.shards)

    @property
    def payload_bytes(self) -> int:
        return sum(s["bytes"] for s in self.shards)

    def read_arrays(self, index: int) -> dict[str, np.ndarray]:
        """Shard `index`'s arrays, read into memory and verified (size, header, CRC-32, structure)."""
        entry = self.shards[index]
        path = self.path / entry["file"]
        with open(path, "rb") as f:
            buf = np.empty(entry["bytes"], np.uint8)
            if f.readinto(memoryview(buf)) != entry["bytes"] or f.read(1):
                raise ShardError(f"{path} changed size while it was read")
        if bytes(buf[:len(MAGIC)]) != MAGIC:
            raise ShardError(f"{path} is not a slide shard (bad magic number)")
        head_len = int.from_bytes(bytes(buf[8:16]), "little")
        try:
            header = json.loads(bytes(buf[16:16 + head_len]))
            start = _aligned(16 + head_len)
            arrays: dict[str, np.ndarray] = {}
            if len(header["arrays"]) != len(ARRAYS):
                raise ValueError(f"{len(header['arrays'])} arrays where {len(ARRAYS)} belong")
            for (name, dtype), (got, got_dtype, count, offset) in zip(ARRAYS, header["arrays"]):
                if (got, got_dtype) != (name, dtype):
                    raise ValueError(f"array {got} of {got_dtype} where {name} of {dtype} belongs")
                nbytes = count * np.dtype(dtype).itemsize
                if count < 0 or start + offset + nbytes > len(buf):
                    raise ValueError(f"array {name} runs past the end of the file")
                arrays[name] = buf[start + offset:start + offset + nbytes].view(dtype)
        except (ValueError, KeyError, TypeError, RecursionError) as e:  # RecursionError: JSON nested too deeply
            raise ShardError(f"{path}: damaged header ({e})") from None
        if (header.get("rows"), header.get("num_features"), header.get("num_labels")) != \
                (entry["rows"], self.num_features, self.num_labels):
            raise ShardError(f"{path}: its header ({header.get('rows')} rows of {header.get('num_features')} "
                             f"features, {header.get('num_labels')} labels) disagrees with {MANIFEST}")
        crc = 0
        for name, _ in ARRAYS:
            crc = zlib.crc32(memoryview(arrays[name]).cast("B"), crc)
        if crc != entry["crc32"] or crc != header.get("payload_crc32"):
            raise ShardError(f"{path} is corrupted (CRC-32 {crc:08x}, expected {entry['crc32']:08x}); "
                             "convert the data again")
        if len(arrays["x_indptr"]) != entry["rows"] + 1 or len(arrays["y_indptr"]) != entry["rows"] + 1 \
                or len(arrays["x_indices"]) != len(arrays["x_data"]):
            raise ShardError(f"{path}: its arrays' lengths do not fit {entry['rows']} rows")
        _check_csr(path, "feature", arrays["x_indptr"], arrays["x_indices"], self.num_features)
        _check_csr(path, "label", arrays["y_indptr"], arrays["y_indices"], self.num_labels)
        if not np.all(np.isfinite(arrays["x_data"])):
            raise ShardError(f"{path}: a feature value is NaN or infinite")
        return arrays

    def read(self, index: int) -> Split:
        return arrays_to_split(self.read_arrays(index), self.num_features, self.num_labels)

    def load(self) -> Split:
        """Every shard, in order, as one in-memory split."""
        parts = [self.read_arrays(i) for i in range(len(self))]
        if not parts:
            return arrays_to_split(empty_arrays(), self.num_features, self.num_labels)
        return arrays_to_split(concatenate(parts), self.num_features, self.num_labels)


def empty_arrays() -> dict[str, np.ndarray]:
    return {name: np.zeros(1 if name.endswith("indptr") else 0, dtype) for name, dtype in ARRAYS}


def concatenate(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """CSR arrays of consecutive row blocks joined into one block."""
    out = {}
    for kind in ("x", "y"):
        offsets = np.cumsum([0] + [p[f"{kind}_indptr"][-1] for p in parts[:-1]])
        out[f"{kind}_indptr"] = np.concatenate([parts[0][f"{kind}_indptr"][:1]] +
                                               [p[f"{kind}_indptr"][1:] + o for p, o in zip(parts, offsets)])
        out[f"{kind}_indices"] = np.concatenate([p[f"{kind}_indices"] for p in parts])
    out["x_data"] = np.concatenate([p["x_data"] for p in parts])
    return out


def take_rows(arrays: dict[str, np.ndarray], start: int, stop: int) -> dict[str, np.ndarray]:
    """Rows [start, stop) of a CSR block, as a block of its own."""
    out = {}
    for kind in ("x", "y"):
        indptr = arrays[f"{kind}_indptr"]
        lo, hi = indptr[start], indptr[stop]
        out[f"{kind}_indptr"] = indptr[start:stop + 1] - lo
        out[f"{kind}_indices"] = arrays[f"{kind}_indices"][lo:hi]
        if kind == "x":
            out["x_data"] = arrays["x_data"][lo:hi]
    return out


class ShardWriter:
    """Writes a shard folder: shards as rows arrive (each `shard_rows` points, the last smaller),
    then the manifest. They are written into a new folder beside `path` (folder_swap), which
    `finish` swaps in: a previous conversion at `path` stays whole and readable until then, and is
    never lost to a conversion that fails. `abort` (or leaving a `with` block by an exception)
    deletes the partial build."""

    def __init__(self, path: Path, num_features: int, num_labels: int, *, shard_rows: int = DEFAULT_SHARD_ROWS,
                 source: Optional[dict] = None) -> None:
        if shard_rows < 1:
            raise ValueError(f"shard_rows must be at least 1, got {shard_rows}")
        self.path, self.num_features, self.num_labels = Path(path), num_features, num_labels
        self.shard_rows, self.source = shard_rows, source
        self.entries: list[dict] = []
        self.pending: list[dict[str, np.ndarray]] = []
        self.pending_rows = 0
        # Shards are written on a thread of their own, one at a time, while the next one fills; they
        # are flushed to disk all at once before the manifest, which alone makes them trusted.
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="slide-shard-writer")
        self._writing: Optional[Future] = None
        check_folder(self.path)
        self.build = build_folder(self.path)

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is not None:
            self.abort()

    def abort(self) -> None:
        """Stop writing and delete the partial build; what was at `path` stays as it was."""
        self._writer.shutdown(wait=True)
        discard(self.build)

    def add(self, arrays: dict[str, np.ndarray]) -> None:
        """Append a block of rows; full shards are written now."""
        rows = len(arrays["x_indptr"]) - 1
        if rows == 0:
            return
        self.pending.append(arrays)
        self.pending_rows += rows
        if self.pending_rows >= self.shard_rows:
            block = concatenate(self.pending)
            start = 0
            while self.pending_rows - start >= self.shard_rows:
                self._write(take_rows(block, start, start + self.shard_rows))
                start += self.shard_rows
            rest = self.pending_rows - start
            self.pending = [take_rows(block, start, self.pending_rows)] if rest else []
            self.pending_rows = rest

    def _write(self, arrays: dict[str, np.ndarray]) -> None:
        self._wait()
        name = shard_name(len(self.entries))
        self._writing = self._writer.submit(write_shard, self.build / name, arrays, self.num_features,
                                            self.num_labels, sync=False)

    def _wait(self) -> None:
        if self._writing is not None:
            writing, self._writing = self._writing, None
            self.entries.append(writing.result())

    def finish(self) -> ShardFolder:
        if self.pending_rows:
            self._write(concatenate(self.pending))
            self.pending, self.pending_rows = [], 0
        self._wait()
        self._writer.shutdown()
        fsync_files([self.build / e["file"] for e in self.entries])
        manifest: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "num_points": sum(e["rows"] for e in self.entries),
            "num_features": int(self.num_features), "num_labels": int(self.num_labels),
            "shard_rows": self.shard_rows, "shards": self.entries, "source": self.source}
        payload = (json.dumps(manifest, indent=1) + "\n").encode()
        atomic_write(self.build / MANIFEST, lambda f: f.write(payload))
        swap_in(self.build, self.path)
        return ShardFolder.open(self.path)


def check_folder(path: Path) -> None:
    """ValueError unless `path` may be replaced by a new conversion: new, empty, a previous
    conversion, or a link (which is replaced; its target is never written). A folder holding
    anything else is refused: a conversion never deletes a user's files."""
    if path.is_symlink():
        return
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} is a file; the shards need a folder")
    if path.is_dir():
        ours = lambda p: p.name == MANIFEST or (p.name.startswith("part-") and p.name.endswith(".shard")) \
            or (p.name.startswith(".") and p.name.endswith(".tmp"))  # noqa: E731
        others = [p.name for p in path.iterdir() if not ours(p)]
        if others:
            raise ValueError(f"{path} holds files that are not shards ({', '.join(sorted(others)[:3])}); convert "
                             "into a new or empty folder")


def write_split(path: Path, split: Split, *, shard_rows: int = DEFAULT_SHARD_ROWS,
                source: Optional[dict] = None) -> ShardFolder:
    """An in-memory split as a shard folder."""
    X, Y = sp.csr_matrix(split.X), sp.csr_matrix(split.Y)
    with ShardWriter(path, X.shape[1], Y.shape[1], shard_rows=shard_rows, source=source) as writer:
        for start in range(0, X.shape[0], shard_rows):
            stop = min(start + shard_rows, X.shape[0])
            x, y = X[start:stop], Y[start:stop]
            writer.add({"x_indptr": x.indptr, "x_indices": x.indices, "x_data": x.data, "y_indptr": y.indptr,
                        "y_indices": y.indices})
        return writer.finish()
