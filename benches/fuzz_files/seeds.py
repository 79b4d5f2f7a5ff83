"""The well-formed files each case starts from, made once per worker: model files of three kinds
of network, a finished run folder (config, metrics, checkpoint), a shard folder and a skip-gram
model. Small, so a case costs milliseconds; shaped like the real ones (LSH tables with several
buckets, a neighbour memory, a vocabulary)."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import slide
from slide import cli
from slide.datasets import make_train_test
from slide.datasets.shards import write_split
from slide.datasets.xc_files import write_xc

FEATURES, LABELS = 300, 500
RUN_LABELS = 9_000  # above the 8,192 at which the CLI's default network samples its output by LSH
RUN_TOML = "epochs = 1\nbatch_size = 64\n[network]\nhidden = [8]\n[lsh]\nl = 8\nrehash_every = 64\nrebuild_every = 256\n"


@dataclass
class Seeds:
    folder: Path
    models: dict[str, Path]
    run: Path
    run_test: Path
    shards: Path
    skipgram: Path
    test_points: object  # a Split the loaded models predict on and train with


def _networks() -> dict[str, slide.Network]:
    lsh = slide.LSHConfig(k=2, l=3, rehash_every=64, rebuild_every=256)
    return {
        "lsh_vote": slide.Network(FEATURES, LABELS, hidden=(8,), lsh=lsh, neighbours=5, threads=1, seed=0),
        "dense_deep": slide.Network(FEATURES, LABELS, hidden=(8, 6), lsh=None, threads=1, seed=1),
        "bf16_batch": slide.Network(FEATURES, LABELS, hidden=(8,), precision="bf16", threads=1, seed=2,
                                    lsh=slide.LSHConfig(k=3, l=4, batch_active=64, min_active=100, rehash_every=64,
                                                        rebuild_every=256)),
    }


def make_seeds(folder: Path) -> Seeds:
    folder.mkdir(parents=True, exist_ok=True)
    train, test = make_train_test(400, 60, FEATURES, LABELS, seed=1, avg_nnz=10, avg_labels=2)
    models = {}
    for name, net in _networks().items():
        net.fit(train.X, train.Y, epochs=1, batch_size=50, progress=False)
        models[name] = folder / f"{name}.npz"
        net.save(models[name])
    shards = folder / "shards"
    if not shards.exists():
        write_split(shards, train, shard_rows=150)
    return Seeds(folder, models, *_run_folder(folder), shards, _skipgram(folder), test)


def _run_folder(folder: Path) -> tuple[Path, Path]:
    run = folder / "run"
    train, test = make_train_test(400, 60, FEATURES, RUN_LABELS, seed=2, avg_nnz=10, avg_labels=2)
    write_xc(folder / "run_train.txt", train.X, train.Y)
    write_xc(folder / "run_test.txt", test.X, test.Y)
    (folder / "run.toml").write_text(RUN_TOML)
    if not (run / "model.npz").exists():
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(["train", "--quiet", "--threads", "1", "--train", str(folder / "run_train.txt"),
                             "--test", str(folder / "run_test.txt"), "--config", str(folder / "run.toml"),
                             "--out", str(run), "--overwrite"])
        if code != 0:
            raise RuntimeError("could not train the seed run folder")
    return run, folder / "run_test.txt"


def _skipgram(folder: Path) -> Path:
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(60)]
    model = slide.SkipGram(words, rng.integers(1, 50, len(words)), dim=8, threads=1, seed=0)
    model.fit(rng.integers(0, len(words), 3_000).astype(np.int32), epochs=1, progress=False)
    path = folder / "skipgram.npz"
    model.save(path)
    return path
