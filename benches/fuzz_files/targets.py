"""What a case does with a mutated file: write it as an attacker would (checksums recomputed), then
use it the ways slide does: load, predict exactly and by LSH, evaluate, train on, save again and
unpickle (models); resume, inspect and evaluate (run folders); open, read and stream (shard
folders); load and query (skip-gram models). Each returns what it did, for the case's record."""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import random
import shutil
import zipfile
from pathlib import Path

import numpy as np

import slide
from slide import cli
from slide.datasets.shards import ShardFolder, write_shard
from slide.datasets.stream import Stream
from slide.model_file import read_arrays, read_header, write_model
from slide.network import _network_from_bytes

from .mutate import DEEP, dumps, mutate_array, mutate_json

BOMB_BYTES = 64 << 20
CLI_OK = (0, 2, 3)  # success, a refused input, a diverged run (docs/cli.md: exit codes)


class CliFailure(Exception):
    """The CLI exited with a code it never documents, or printed a traceback."""


def quiet_cli(argv: list[str]) -> int:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    if code not in CLI_OK or "Traceback" in err.getvalue():
        raise CliFailure(f"exit {code}: {err.getvalue()[-1500:]}")
    return code


def mutated_model(rng: random.Random, source: Path, out: Path) -> str:
    """`source` with 1-3 changes to its arrays or header and every checksum recomputed (or, now and
    then, a member whose stored bytes contradict their own .npy header, or a deflated member)."""
    header, arrays = read_header(source), read_arrays(source)
    header.pop("checksums")
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if rng.random() < 0.3:
            header = mutate_json(rng, header)
            done.append("header")
            continue
        name = rng.choice(sorted(arrays))
        op = rng.random()
        if op < 0.05:
            del arrays[name]
            done.append(f"drop {name}")
        elif op < 0.08:
            arrays[name + rng.choice(("", "x", ".lsh.ids"))] = arrays[rng.choice(sorted(arrays))]
            done.append(f"add beside {name}")
        else:
            arrays[name] = mutate_array(rng, arrays[name], arrays[name].shape)
            done.append(name)
    if not isinstance(header, dict):
        header = {"value": header}
    write_model(out, header, arrays)
    if DEEP in json.dumps(header):
        _rewrite_members(out, {"__slide_header__.npy": _npy_bytes(np.frombuffer(dumps(header).encode(), np.uint8))})
    if rng.random() < 0.05:
        _rewrite_member(rng, out, arrays)
        done.append("member rewritten raw")
    return ", ".join(done)


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def _rewrite_members(path: Path, members: dict[str, bytes], deflated: tuple = ()) -> None:
    with zipfile.ZipFile(path) as src:
        old = {n: src.read(n) for n in src.namelist()}
    with zipfile.ZipFile(path, "w") as dst:
        for n, data in {**old, **members}.items():
            dst.writestr(n, data, compress_type=zipfile.ZIP_DEFLATED if n in deflated else zipfile.ZIP_STORED)


def _rewrite_member(rng: random.Random, path: Path, arrays: dict) -> None:
    """Rewrite one member deflated, or with a .npy header that lies about its shape."""
    name = rng.choice(sorted(arrays))
    a = arrays[name]
    buf = io.BytesIO()
    shape = a.shape
    if rng.random() < 0.5:  # a header that promises far more (or less) than the bytes behind it
        shape = (rng.choice((a.size * 1000, 2 ** 31, 2 ** 40, 0)),) + a.shape[1:]
    np.lib.format.write_array_header_1_0(buf, {"descr": np.lib.format.dtype_to_descr(a.dtype),
                                               "fortran_order": False, "shape": shape})
    raw = buf.getvalue() + np.ascontiguousarray(a).tobytes()
    if rng.random() < 0.2:  # a compression bomb: 64 MiB of zeros in about 64 KiB
        buf = io.BytesIO()
        np.save(buf, np.zeros(BOMB_BYTES // a.dtype.itemsize, a.dtype))
        raw = buf.getvalue()
    _rewrite_members(path, {name + ".npy": raw}, deflated=(name + ".npy",) if rng.random() < 0.5 else ())


def use_model(path: Path, test) -> str:
    net = slide.Network.load(path)
    net.predict(test.X, k=3)
    if net.lsh is not None:
        net.predict(test.X, k=3, mode="sparse")
    net.evaluate(test.X, test.Y)
    net.partial_fit(test.X, test.Y)  # one epoch of 60 points: the rehash and rebuild schedule runs
    net.save(path.with_suffix(".again.npz"))
    forged = type("Forged", (), {"__reduce__": lambda self: (_network_from_bytes, (slide.Network,
                                                                                   path.read_bytes()))})
    pickle.loads(pickle.dumps(forged()))
    return "loaded and used"


def model_case(rng: random.Random, seeds, work: Path) -> str:
    kind = rng.choice(sorted(seeds.models))
    path = work / "m.npz"
    what = mutated_model(rng, seeds.models[kind], path)
    use_model(path, seeds.test_points)
    return f"{kind}: {what}"


def run_case(rng: random.Random, seeds, work: Path) -> str:
    run = work / "run"
    shutil.copytree(seeds.run, run)
    target = rng.choice(("checkpoint.npz", "checkpoint.npz", "config.json", "metrics.jsonl", "model.npz"))
    if target.endswith(".npz"):
        what = mutated_model(rng, seeds.run / target, run / target)
    elif target == "config.json":
        (run / target).write_text(dumps(mutate_json(rng, json.loads((seeds.run / target).read_text()))))
        what = "config"
    else:
        lines = (seeds.run / target).read_text().splitlines()
        i = rng.randrange(len(lines))
        lines[i] = dumps(mutate_json(rng, json.loads(lines[i]))) if rng.random() < 0.8 else "[1]"
        (run / target).write_text("\n".join(lines) + "\n")
        what = f"metrics line {i}"
    codes = [quiet_cli(["info", str(run)]), quiet_cli(["info", str(run), "--json"]),
             quiet_cli(["evaluate", str(run), "--test", str(seeds.run_test), "--threads", "1"]),
             quiet_cli(["train", "--resume", str(run), "--epochs", "2", "--quiet", "--threads", "1"])]
    if any(codes):
        raise ValueError(f"{target}: {what}: info, info --json, evaluate and resume exited {codes}")
    return f"{target}: {what}"


def shard_case(rng: random.Random, seeds, work: Path) -> str:
    folder = work / "shards"
    shutil.copytree(seeds.shards, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    if rng.random() < 0.3:
        manifest = mutate_json(rng, manifest)
        what = "manifest"
    else:
        entry = rng.choice(manifest["shards"])
        arrays = ShardFolder.open(seeds.shards).read_arrays(manifest["shards"].index(entry))
        name = rng.choice(sorted(arrays))
        arrays[name] = mutate_array(rng, arrays[name], (manifest["num_features"], manifest["num_labels"]))
        written = write_shard(folder / entry["file"], arrays, manifest["num_features"], manifest["num_labels"])
        entry.update(written)  # the manifest agrees with the new shard: only the content checks remain
        manifest["num_points"] = sum(s["rows"] for s in manifest["shards"])
        what = f"{entry['file']}: {name}"
    (folder / "manifest.json").write_text(dumps(manifest))
    shards = ShardFolder.open(folder)
    shards.load()
    for segment in Stream(folder, shuffle=True, seed=0).segments(0, batch_size=32):
        len(segment.order)
    quiet_cli(["data", "check", str(folder)])
    return what


def skipgram_case(rng: random.Random, seeds, work: Path) -> str:
    path = work / "sg.npz"
    with np.load(seeds.skipgram, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("header").tobytes())
    checksums = header.pop("checksums")
    if rng.random() < 0.3:
        header = mutate_json(rng, header)
        what = "header"
    else:
        name = rng.choice(sorted(arrays))
        arrays[name] = mutate_array(rng, arrays[name], arrays[name].shape)
        what = name
    from slide.model_file import _crc32  # the checksum the skip-gram file shares with model files
    if isinstance(header, dict):
        header["checksums"] = {**checksums, **{k: _crc32(v) for k, v in arrays.items()}}
    arrays["header"] = np.frombuffer(dumps(header).encode(), np.uint8)
    np.savez(path, **arrays)
    model = slide.SkipGram.load(path)
    model.most_similar(model.vocabulary[0], topn=3)
    quiet_cli(["export", str(path), "--out", str(work / "vectors.txt")])
    return what


KINDS = {"model": (model_case, 0.6), "run": (run_case, 0.05), "shards": (shard_case, 0.2),
         "skipgram": (skipgram_case, 0.15)}
