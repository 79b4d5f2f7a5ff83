"""A network sharded over MPI ranks, on disk: a folder with one model file per rank and a
manifest. Each save goes to a new sub-folder, and the manifest (replaced atomically, last) names
the complete one, so a job killed while saving leaves the previous save whole. `reshard` rewrites
a save for another number of ranks, or as one single-process model file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..atomic_files import atomic_write
from ..file_schemas import SHARDED_MODEL_MANIFEST, check
from ..json_files import read_json
from ..no_follow import refuse_link
from ..model_file import ModelFileError, load_network, read_arrays, read_header, save_network, write_model
from .shards import shard_range


MANIFEST = "manifest.json"
FORMAT = "slide-sharded-model"
VERSION = 1


def shard_file(rank: int, ranks: int) -> str:
    return f"rank-{rank:05d}-of-{ranks:05d}.npz"


def is_sharded(path: Any) -> bool:
    """A folder with a manifest (any other folder is refused by the model-file reader, as such)."""
    return Path(path).is_dir() and (Path(path) / MANIFEST).is_file()


def read_manifest(path: Any) -> dict:
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder of a sharded model")
    at = folder / MANIFEST
    if not at.is_file():
        raise ModelFileError(f"{folder} has no {MANIFEST}: it is not a sharded slide model, or its first save was "
                             "interrupted before it finished")
    try:  # json_files: bounded, and a number too long or JSON nested too deep is a message naming the file
        m = read_json(at, "sharded-model manifest")
    except (OSError, ValueError) as e:
        raise ModelFileError(f"{at} is not readable JSON: {e}") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ModelFileError(f"{at} is not a slide sharded-model manifest")
    if m.get("version") != VERSION:
        raise ModelFileError(f"{at}: manifest version {m.get('version')!r}; this slide reads version {VERSION}")
    ranks, shards = m.get("ranks"), m.get("shards")
    if not isinstance(ranks, int) or ranks < 1 or not isinstance(shards, list) or len(shards) != ranks \
            or not isinstance(m.get("save"), str) or "/" in m["save"] or m["save"].startswith("."):
        raise ModelFileError(f"{at}: the manifest's ranks, shards or save entry is malformed")
    return check(m, SHARDED_MODEL_MANIFEST, str(at), error=ModelFileError)


def _shard_header(net: Any) -> dict:
    offset, rows = net.output_shard
    return {"rank": net.comm.rank, "ranks": net.comm.size, "offset": offset, "rows": rows}


def save_shards(net: Any, path: Any, *, include_optimizer: bool = True, extra: Optional[dict] = None) -> None:
    """Every rank writes its shard; rank 0 then points the manifest at this save. Collective."""
    comm = net.comm
    folder = Path(path)
    problem = None
    if comm.rank == 0:
        try:
            refuse_link(folder, "run folder")  # its saves, and the removal of old ones, would land elsewhere
            if folder.exists() and not folder.is_dir():
                raise ValueError(f"{folder} is a file; a model saved under MPI is a folder (one file per rank)")
            previous = read_manifest(folder)["save"] if (folder / MANIFEST).is_file() else None
            number = int(previous.split("-")[-1]) + 1 if previous and previous.split("-")[-1].isdigit() else 1
            save = f"save-{number:06d}"
            refuse_link(folder / save, "run folder")
            (folder / save).mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as e:
            problem, save = f"{type(e).__name__}: {e}", None
    problem, save = comm.broadcast((problem, save if comm.rank == 0 else None))
    if problem:
        raise ValueError(f"cannot save the sharded model to {folder}: {problem}")
    target = folder / save / shard_file(comm.rank, comm.size)
    error = None
    try:
        save_network(net, target, include_optimizer=include_optimizer,
                     extra={**(extra or {}), "shard": _shard_header(net)})
    except OSError as e:
        error = f"rank {comm.rank}: {e}"
    entries = comm.gather_objects(error or {**_shard_header(net), "file": target.name,
                                            "bytes": target.stat().st_size})
    failed = [e for e in entries if isinstance(e, str)]
    if failed:
        raise OSError(f"saving the sharded model to {folder} failed ({failed[0]}); the previous save stands")
    if comm.rank == 0:
        manifest = {"format": FORMAT, "version": VERSION, "ranks": comm.size, "output_dim": net.output_dim,
                    "save": save, "step": int(net._core.step), "shards": entries, "extra": extra or {}}
        atomic_write(folder / MANIFEST, lambda f: f.write(json.dumps(manifest, indent=1).encode()))
        for old in folder.glob("save-*"):  # earlier saves: the manifest no longer names them
            if old.is_dir() and old.name != save:
                shutil.rmtree(old, ignore_errors=True)
    comm.barrier()


def load_shards(cls, path: Any, comm: Any, *, threads: Optional[int] = None) -> Any:
    """This rank's shard of a sharded model; collective (a rank that cannot load stops them all)."""
    from .communicator import Communicator

    if comm is None:
        m = read_manifest(path)
        raise ModelFileError(f"{path} is a model sharded over {m['ranks']} MPI ranks: load it with comm= in a job of "
                             f"{m['ranks']} ranks, or make one file of it with `slide reshard {path} OUT --ranks 1`")
    comm = comm if isinstance(comm, Communicator) else Communicator(comm)
    error, net = None, None
    try:
        m = read_manifest(path)
        if m["ranks"] != comm.size:
            raise ModelFileError(f"{path} holds {m['ranks']} shards but this job has {comm.size} ranks; re-shard it "
                                 f"with `slide reshard {path} OUT --ranks {comm.size}`")
        file = Path(path) / m["save"] / shard_file(comm.rank, comm.size)
        header = read_header(file)
        saved = header["extra"].get("shard")
        net = load_network(cls, file, threads=threads, comm=comm, header=header)
        if saved != _shard_header(net):
            raise ModelFileError(f"{file} holds shard {saved}, not this rank's {_shard_header(net)}")
    except (ValueError, FileNotFoundError) as e:
        error = e
    problems = comm.gather_objects(None if error is None else f"{type(error).__name__}: {error}")
    if error is not None:
        raise error
    for r, p in enumerate(problems):
        if p:
            raise ModelFileError(f"rank {r} could not load its shard of {path}: {p}")
    return net


def reshard(path: Any, out: Any, ranks: int) -> Path:
    """Rewrite the sharded model in `path` for `ranks` ranks into the new path `out` (a folder), or
    with ranks=1 into one single-process model file. The output layer's rows (weights, bias,
    optimizer state) are split anew; its LSH tables are built again when the result is loaded."""
    out = Path(out)
    if out.exists():
        raise ValueError(f"{out} exists; reshard writes a new path and never over an existing one")
    if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
        raise ValueError(f"ranks must be a positive integer, got {ranks!r}")
    m = read_manifest(path)
    files = [Path(path) / m["save"] / shard_file(r, m["ranks"]) for r in range(m["ranks"])]
    headers = [read_header(f) for f in files]
    config = headers[0]["config"]
    layer = f"layers.{len(config['hidden']) - 1}."
    parts = [read_arrays(f) for f in files]
    for f, h in zip(files, headers):
        if h["config"] != config:
            raise ModelFileError(f"{f}: its configuration differs from rank 0's; the save is inconsistent")
    whole = {k: v for k, v in parts[0].items() if not k.startswith(layer)}
    for name in parts[0]:
        if name.startswith(layer) and ".lsh." not in name:
            whole[name] = np.concatenate([p[name] for p in parts], axis=0)
    output_dim = int(config["output_dim"])
    if whole[layer + "weight"].shape[0] != output_dim:
        raise ModelFileError(f"{path}: the shards hold {whole[layer + 'weight'].shape[0]} output rows, not {output_dim}")
    base = {k: v for k, v in headers[0].items() if k != "checksums"}
    base["extra"] = {k: v for k, v in base["extra"].items() if k != "shard"}
    base["rebuild_tables"] = True
    if ranks == 1:
        write_model(out, base, whole)
        return out
    save = "save-000001"
    (out / save).mkdir(parents=True)
    entries = []
    for r in range(ranks):
        offset, rows = shard_range(output_dim, ranks, r)
        arrays = {k: (v[offset:offset + rows] if k.startswith(layer) else v) for k, v in whole.items()}
        shard = {"rank": r, "ranks": ranks, "offset": offset, "rows": rows}
        write_model(out / save / shard_file(r, ranks), {**base, "extra": {**base["extra"], "shard": shard}}, arrays)
        entries.append({**shard, "file": shard_file(r, ranks), "bytes": (out / save / shard_file(r, ranks)).stat().st_size})
    manifest = {**m, "ranks": ranks, "save": save, "shards": entries}
    atomic_write(out / MANIFEST, lambda f: f.write(json.dumps(manifest, indent=1).encode()))
    return out
