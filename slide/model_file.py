"""The model file: a NumPy .npz archive of plain arrays plus a JSON header. Nothing is pickled,
so loading a file never runs code; writes go to a temporary file that is fsynced and renamed.
The header carries a CRC-32 of every array, checked on load, so a file damaged on disk or in
transit is refused rather than loaded with silently wrong weights."""

from __future__ import annotations

import json
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from ._version import __version__
from .atomic_files import atomic_write
from .file_schemas import check_model_header
from .neighbours import NeighbourMemory
from .npz_members import check_data_size, check_stored, npy_meta, read_members
from .optimizers import is_optimizer_state
from .paths import regular_file
from .label_tree import LabelForest, forest_array_names
from .reranker import ShortlistReranker
from .settings import NETWORK
from .word_vectors import VOCABULARY_ARRAY, vocabulary_from_array, vocabulary_to_array

# The neighbour memory's arrays (slide.neighbours.NeighbourMemory.to_arrays) and their types.
_MEMORY_ARRAYS = {"neighbours.points.indptr": np.dtype(np.int64), "neighbours.points.indices": np.dtype(np.int32),
                  "neighbours.points.data": np.dtype(np.float32), "neighbours.labels.indptr": np.dtype(np.int64),
                  "neighbours.labels.indices": np.dtype(np.int32)}
# The re-ranker's arrays (slide.reranker.ShortlistReranker.to_arrays) and their types.
_RERANKER_ARRAYS = {"reranker.weights": np.dtype(np.float32), "reranker.bias": np.dtype(np.float32),
                    "reranker.shortlist": np.dtype(np.int64), "reranker.trained_on": np.dtype(np.int64)}
# A label tree's arrays (slide.label_tree.LabelTree.to_arrays) and their types, for each tree a
# network may hold (slide.label_tree.LabelForest.to_arrays: the first tree's named "tree.*").
_TREE_TYPES = {"children": np.int64, "leaf_indptr": np.int64, "leaf_labels": np.int64, "weights.indptr": np.int64,
               "weights.indices": np.int32, "weights.values": np.float32, "bias": np.float32}
_TREE_ARRAYS = {name: np.dtype(_TREE_TYPES[name.split(".", 1)[1]])
                for name in forest_array_names(int(NETWORK["label_trees"].maximum))}
# Arrays a part may lack: files written before they were kept (ShortlistReranker.from_arrays says how).
_OPTIONAL_ARRAYS = frozenset({"reranker.trained_on"})
# Arrays whose size the configuration does not fix: read whole, by their type.
_WHOLE_ARRAYS = {**_MEMORY_ARRAYS, **_RERANKER_ARRAYS, **_TREE_ARRAYS, VOCABULARY_ARRAY: np.dtype(np.uint8)}


FORMAT = "slide-model"
FORMAT_VERSION = 2  # 2 added per-array checksums
MIN_FORMAT_VERSION = 2  # every array is verified: no header can switch its checksums off
_HEADER = "__slide_header__"
_MAX_HEADER_BYTES = 1 << 24
# What zipfile, zlib and json raise on damaged bytes (a flipped compression-method byte gives
# NotImplementedError, an "encrypted" flag RuntimeError, a bad offset ValueError or struct.error).
_DAMAGED_ZIP = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError, RuntimeError,
                ValueError, UnicodeDecodeError, RecursionError, zlib.error, struct.error, OverflowError)
PathLike = Union[str, "os.PathLike[str]"]


class ModelFileError(ValueError):
    """A model file that slide refuses to load; the message names the file and what is wrong."""


def _skip(name: str, include_optimizer: bool) -> bool:
    if name.endswith("_grad"):
        return True  # gradient buffers are zero at every batch boundary
    return not include_optimizer and is_optimizer_state(name)


def save_network(net: Any, path: PathLike, *, include_optimizer: bool = True,
                 extra: Optional[dict] = None, parameters: Optional[dict[str, np.ndarray]] = None) -> None:
    """Write `net` (and `extra`, JSON-serialisable, e.g. a training loop's position) to one file.
    `parameters` (weights and biases by name, as early_stopping.snapshot gives) replace the
    network's own; its LSH tables then do not belong to them, so loading rebuilds the tables."""
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
    if parameters is not None:
        unknown = sorted(set(parameters) - set(arrays))
        if unknown:
            raise ValueError(f"parameters {unknown[:5]} do not belong to this network")
        arrays.update(parameters)
        header["rebuild_tables"] = True
    if net.memory is not None:
        arrays.update(net.memory.to_arrays())
    if net.reranker is not None:
        arrays.update(net.reranker.to_arrays())
    if net.tree is not None:
        arrays.update(net.tree.to_arrays())
    if net.vocabulary is not None:
        arrays[VOCABULARY_ARRAY] = vocabulary_to_array(net.vocabulary)
    write_model(path, header, arrays)


def write_model(path: PathLike, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write `arrays` and `header` (given its checksums here) as a model file, atomically."""
    header = {**header, "checksums": {k: _crc32(v) for k, v in arrays.items()}}
    arrays = {**arrays, _HEADER: np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)}
    atomic_write(Path(path), lambda f: np.savez(f, **arrays))


def read_arrays(path: PathLike) -> dict[str, np.ndarray]:
    """Every array of a model file (the header left out), each checked against its checksum."""
    header = read_header(path)
    try:  # not np.load: it sizes each array from the member's .npy header before reading a byte
        arrays = {k: v for k, v in read_members(path, ModelFileError).items() if k != _HEADER}
    except _DAMAGED_ZIP as e:
        raise ModelFileError(f"{path} is truncated or corrupted: {type(e).__name__}: {e}") from None
    for name, a in arrays.items():
        if header["checksums"].get(name) != _crc32(a):
            raise ModelFileError(f"{path}: array {name!r} fails its checksum; the file is corrupted")
    return arrays


def _crc32(a: np.ndarray) -> str:
    return f"{zlib.crc32(np.ascontiguousarray(a)):08x}"


def read_header(path: PathLike) -> dict:
    """The JSON header of a model file, checked for format and version."""
    path = regular_file(path, "model file")
    try:
        with zipfile.ZipFile(path) as zf:
            check_stored(zf, path, ModelFileError)
            if _HEADER + ".npy" not in zf.namelist():
                if "header.npy" in zf.namelist() and "word_vectors.npy" in zf.namelist():
                    raise ModelFileError(f"{path} holds skip-gram word vectors, not a network: `slide export` "
                                         "writes them out, slide.SkipGram.load reads them")
                raise ModelFileError(f"{path} is not a slide model file (no header)")
            with zf.open(_HEADER + ".npy") as f:
                raw = _read_header_bytes(f, f"{path}: the header")
        header = json.loads(raw.decode())
    except ModelFileError:
        raise
    except _DAMAGED_ZIP as e:
        raise ModelFileError(f"{path} is not a readable slide model file (truncated or corrupted): {e}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ModelFileError(f"{path} is not a slide model file")
    version = header.get("version")
    if not isinstance(version, int) or version < 1:
        raise ModelFileError(f"{path}: the header's format version {version!r} is not a positive integer")
    if version < MIN_FORMAT_VERSION:
        raise ModelFileError(f"{path}: model format {version} has no checksums; this slide reads only verified "
                             f"files (format {MIN_FORMAT_VERSION} to {FORMAT_VERSION})")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"{path} was written by a newer slide (model format {version}, this slide "
                         f"reads up to {FORMAT_VERSION}); upgrade slide to load it")
    for key, kind in (("config", dict), ("counters", dict), ("include_optimizer", bool), ("extra", dict)):
        if not isinstance(header.get(key), kind):
            raise ModelFileError(f"{path}: the header's {key!r} is missing or not a {kind.__name__}; the file is corrupted")
    if not isinstance(header.get("checksums"), dict):
        raise ModelFileError(f"{path}: the header lacks its array checksums; the file is corrupted")
    return check_model_header(header, str(path), ModelFileError)  # every field load_network reads


def load_network(cls, path: PathLike, *, threads: Optional[int] = None, comm=None,
                 header: Optional[dict] = None) -> Any:
    """The network in `path`; with `comm`, a rank's shard of a sharded model (slide.distributed)."""
    path = Path(path)
    header = header or read_header(path)
    overrides = {"threads": threads} if threads is not None else {}
    if comm is not None:
        overrides["comm"] = comm
    _check_weights_fit_file(path, header["config"], sharded=comm is not None)
    # A file from before neighbour_space (its vote's weight was picked in the input space) votes there.
    config = {"neighbour_space": "input", **header["config"]} if isinstance(header["config"], dict) else header["config"]
    try:
        net = cls.from_config(config, **overrides)
    except (TypeError, KeyError, AttributeError, ValueError) as e:  # a value Network refuses, named by it
        raise ModelFileError(f"{path}: the header's model configuration is malformed: {e}") from None
    state = net.weights()
    whole, names = _read_arrays_into(path, state, header["checksums"])
    # A re-sharded file leaves its LSH tables out: they are built again for the new blocks of rows.
    missing = [n for n in state if not _skip(n, header["include_optimizer"]) and n not in names
               and not (header.get("rebuild_tables") is True and ".lsh." in n)]
    if missing:
        raise ModelFileError(f"{path} lacks arrays {missing[:5]}")
    _attach_memory_and_vocabulary(net, path, whole)
    net._core.sync_low_precision()  # BF16 weight copies follow the loaded fp32 weights
    _restore_counters(net, path, header["counters"])
    if header.get("rebuild_tables") is True:  # saved with parameters its tables were not built from
        net._core.rebuild_tables()  # after the counters: as restoring them in place would, a new generation
    return net


def _read_arrays_into(path: Path, state: dict[str, np.ndarray], checksums: dict
                      ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read every array of the file into the network's own (`state`), each checked against its
    checksum; returns the arrays that are not the network's (memory, vocabulary) and every name read."""
    whole: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            check_stored(zf, path, ModelFileError)  # so no member inflates beyond the file's size
            names = [n[:-4] for n in zf.namelist() if n.endswith(".npy") and n != _HEADER + ".npy"]
            for name in names:
                if name in _WHOLE_ARRAYS:
                    with zf.open(name + ".npy") as f:
                        whole[name] = _read_whole(f, zf.getinfo(name + ".npy"), _WHOLE_ARRAYS[name],
                                                  f"{path}: array {name!r}")
                    crc = _crc32(whole[name])
                elif name not in state:
                    raise ModelFileError(f"{path}: array {name!r} does not belong to this model's configuration")
                else:
                    with zf.open(name + ".npy") as f:
                        crc = _read_into(f, state[name], f"{path}: array {name!r}")
                if checksums.get(name) != crc:
                    raise ModelFileError(f"{path}: array {name!r} fails its checksum; the file is corrupted")
    except ModelFileError:
        raise
    except _DAMAGED_ZIP as e:
        raise ModelFileError(f"{path} is truncated or corrupted: {type(e).__name__}: {e}") from None
    return whole, names


def _attach_memory_and_vocabulary(net: Any, path: Path, whole: dict[str, np.ndarray]) -> None:
    vocabulary = whole.get(VOCABULARY_ARRAY)
    memory = _optional_part(net, path, whole, _MEMORY_ARRAYS, "the neighbour memory", NeighbourMemory.from_arrays)
    if memory is not None:
        net.memory = memory
    reranker = _optional_part(net, path, whole, _RERANKER_ARRAYS, "the re-ranker", ShortlistReranker.from_arrays)
    if reranker is not None:
        net.reranker = reranker
    trees = {k: v for k, v in whole.items() if k in _TREE_ARRAYS}
    if trees:
        try:
            net.tree = LabelForest.from_arrays(trees, net.input_dim, net.output_dim)
        except ValueError as e:
            raise ModelFileError(f"{path}: the label trees are malformed: {e}") from None
    if vocabulary is not None:
        try:
            net.vocabulary = vocabulary_from_array(vocabulary, net.input_dim)
        except ValueError as e:
            raise ModelFileError(f"{path}: the vocabulary is malformed: {e}") from None


def _optional_part(net: Any, path: Path, whole: dict[str, np.ndarray], names: dict, what: str, build) -> Any:
    """The part of the model that `names` hold (the memory, the re-ranker), built by `build`; None
    when the file has none of them. ModelFileError naming the file when some are missing or wrong."""
    arrays = {k: v for k, v in whole.items() if k in names}
    if not arrays:
        return None
    missing = set(names) - _OPTIONAL_ARRAYS - set(arrays)
    if missing:
        raise ModelFileError(f"{path}: {what} lacks arrays {sorted(missing)}")
    try:
        return build(arrays, net.input_dim, net.output_dim)
    except ValueError as e:
        raise ModelFileError(f"{path}: {what} is malformed: {e}") from None


def _restore_counters(net: Any, path: Path, saved_counters: dict) -> None:
    counters = dict(saved_counters)
    try:
        saved, fresh = list(counters["rng"]), net._core.counters()["rng"]
        # A different thread count keeps the saved generators it can and seeds the rest afresh.
        counters["rng"] = [saved[t] if t < len(saved) else fresh[t] for t in range(net.threads)]
        net._core.set_counters(counters)
    except ValueError as e:  # the engine refused the restored LSH tables or counters, naming the array
        raise ModelFileError(f"{path}: {e}; the file is corrupted or was not written by slide") from None
    except (TypeError, KeyError, RuntimeError) as e:
        raise ModelFileError(f"{path}: the header's training counters are malformed: {e}") from None


def _check_weights_fit_file(path: Path, config: dict, *, sharded: bool) -> None:
    """ModelFileError when the file is too small to hold the float32 weights its config implies:
    building the network would allocate them (and their optimizer state) from the header's numbers
    alone. A shard's output rows are a share of output_dim, so a sharded file's are left out."""
    try:
        dims = [int(config["input_dim"]), *(int(h) for h in config["hidden"])]
        output = 0 if sharded else int(config["output_dim"])
    except (TypeError, KeyError, ValueError):
        return  # a malformed config: building the network names what is wrong, before allocating
    need = 4 * (sum(a * b + b for a, b in zip(dims, dims[1:])) + dims[-1] * output + output)
    size = path.stat().st_size
    if need > size:
        raise ModelFileError(f"{path}: the header's configuration (input_dim {dims[0]:,}, hidden {dims[1:]}, output_dim "
                             f"{config['output_dim']}) needs {need:,} bytes of weights, but the file has {size:,}; "
                             "refusing to allocate for it (the header is damaged or forged)")


def _read_whole(f, info: zipfile.ZipInfo, dtype: np.dtype, what: str) -> np.ndarray:
    """A 1-D member of `dtype` read whole (the neighbour memory, whose size the config does not
    fix), once its shape is checked against the bytes the member stores."""
    shape, fortran, got = npy_meta(f, what, ModelFileError)
    if got != dtype or len(shape) != 1:
        raise ModelFileError(f"{what} has shape {shape} {got}, expected a 1-D {np.dtype(dtype)} array")
    check_data_size(f, info, shape, got, what, ModelFileError)
    data = f.read(shape[0] * got.itemsize)
    if len(data) != shape[0] * got.itemsize:
        raise ModelFileError(f"{what} is cut short; the file is truncated")
    return np.frombuffer(data, dtype=got).copy()


def _read_header_bytes(f, what: str) -> bytes:
    shape, fortran, dtype = npy_meta(f, what, ModelFileError)
    if dtype != np.uint8 or len(shape) != 1 or shape[0] > _MAX_HEADER_BYTES:
        raise ModelFileError(f"{what} is not a JSON header (shape {shape} {dtype})")
    data = f.read(shape[0])
    if len(data) != shape[0]:
        raise ModelFileError(f"{what} is cut short; the file is truncated")
    return data


def _read_into(f, target: np.ndarray, what: str) -> str:
    """Read one .npy member into `target` (possibly a strided view) in bounded chunks, after
    checking its declared shape and dtype, so a lying header cannot make us allocate or overrun;
    returns the data's CRC-32 as the writer computed it."""
    shape, fortran, dtype = npy_meta(f, what, ModelFileError)
    if shape != target.shape or dtype != target.dtype or (fortran and target.ndim > 1):
        raise ModelFileError(f"{what} has shape {shape} {dtype}, expected {target.shape} {target.dtype}")
    flat = target.reshape(target.shape[0], -1) if target.ndim > 1 else target.reshape(-1, 1)
    row_bytes = flat.shape[1] * dtype.itemsize
    step = max(1, (16 << 20) // max(row_bytes, 1))
    crc = 0
    for r in range(0, flat.shape[0], step):
        want = min(step, flat.shape[0] - r) * row_bytes
        chunk = f.read(want)
        if len(chunk) != want:
            raise ModelFileError(f"{what} is cut short; the file is truncated")
        crc = zlib.crc32(chunk, crc)
        flat[r:r + step] = np.frombuffer(chunk, dtype=dtype).reshape(-1, flat.shape[1])
    if f.read(1):
        raise ModelFileError(f"{what} holds more data than its shape; the file is corrupted")
    return f"{crc:08x}"


def network_to_bytes(net: Any) -> bytes:
    """The model file's bytes (optimizer state included): what pickling a Network stores, so a
    pickle holds the same checked, code-free format as a saved model."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npz"
        save_network(net, path, include_optimizer=True)
        return path.read_bytes()


def network_from_bytes(cls, data: bytes) -> Any:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.npz"
        path.write_bytes(data)
        return load_network(cls, path)
