"""Where a run's data comes from: a registry name or a pair of files, resolved to a training stream
and a test split."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..datasets import registry
from ..datasets.catalogue import catalogue_amazon670k
from ..datasets.generated_store import stored_generated
from ..datasets.synthetic import Split, small_default, synthetic_amazon670k
from ..datasets.text8 import load_text8
from ..datasets.arff import load_arff
from ..datasets.shards import MANIFEST, ShardFolder
from ..datasets.stream import Stream
from ..datasets.xc_files import load_xc, stream_shards
from ..early_stopping import held_out_rows
from ..network import Network
from ..memory import available_bytes
from ..paths import regular_file
from ..reranker import points_per_label_of
from ..runs import TrainingSource, in_memory_source, streamed_source
from ..shape_defaults import preset_for_shape

log = logging.getLogger("slide")

# Named generated datasets, by the functions that make them (train and test sizes from the CLI).
GENERATED = {"synthetic-amazon670k": synthetic_amazon670k, "catalogue-amazon670k": catalogue_amazon670k}


@dataclass
class Source:
    title: str
    input_dim: int
    output_dim: int
    test: Split
    make_stream: Any  # (Network, seed) -> runs.TrainingSource
    preset: dict
    files: tuple[Path, ...] = ()  # the data files read (generated data has none)
    validation: Optional[Split] = None  # held out from the training data (validation_split)
    # the training points whose labels vote in predictions (neighbours) and that train the re-ranker
    # (rerank); a streamed run's Stream trains the re-ranker only
    memory: "Split | Stream | None" = None
    vocabulary: Optional[list[str]] = None  # the word of each input feature (text8)
    train_points: Optional[int] = None  # training points an epoch passes over (None: a word corpus)
    # training points a label, over the labels with any; None: not counted (a stream of several
    # shards, which trains no label tree)
    points_a_label: Optional[float] = None


def shuffled(split: Split, seed: int) -> Split:
    """Test files are often sorted by label: shuffle so prefixes and samples are representative."""
    rows = np.random.default_rng(seed).permutation(len(split))
    return Split(split.X[rows], split.Y[rows])


def limit(split: Split, n: Optional[int]) -> Split:
    return split if n is None else Split(split.X[:n], split.Y[:n])


def identifying_files(*paths: Path) -> tuple[Path, ...]:
    """The files that identify the data a run reads: a file itself, or a shard folder's manifest
    (which holds every shard's CRC-32)."""
    return tuple(p / MANIFEST if p.is_dir() else p for p in paths)


def load_file(path: Path) -> Split:
    """A data file: multi-label ARFF (Mulan/MEKA) by its name, else Extreme Classification format
    (or a shard folder of it)."""
    arff = path.name.lower().endswith((".arff", ".arff.gz"))
    return load_arff(path) if arff else load_xc(path)


def resolve(cfg: dict) -> Source:
    """cfg holds dataset or train_file/test_file, data_dir, train_samples, test_samples, seed."""
    t0 = time.perf_counter()
    seed = cfg.get("seed", 0)
    origin = ""  # where a generated set came from
    if cfg.get("train_file"):
        if not cfg.get("test_file"):
            raise ValueError("--train FILE needs --test FILE as well")
        if should_stream(cfg):
            return _streamed_source(cfg, t0)
        train, test = load_file(Path(cfg["train_file"])), load_file(Path(cfg["test_file"]))
        files = identifying_files(Path(cfg["train_file"]), Path(cfg["test_file"]))
        if train.X.shape[1] != test.X.shape[1] or train.Y.shape[1] != test.Y.shape[1]:
            raise ValueError(f"{cfg['train_file']} and {cfg['test_file']} disagree on the number of features or labels "
                             f"({train.X.shape[1]} x {train.Y.shape[1]} vs {test.X.shape[1]} x {test.Y.shape[1]})")
        title, preset = f"{Path(cfg['train_file']).name}", registry.SLIDE_PRESET
        if cfg.get("validation_split") is None:  # the data's shape decides, as for the other settings
            cfg["validation_split"] = preset_for_shape(train.X.shape[1], train.Y.shape[1])[0].get("validation_split")
    else:
        info = registry.get(cfg.get("dataset", "default"))
        title, preset, files = info.name, info.preset, ()
        if info.kind == "text8":
            return _text8_source(info, cfg, t0)
        if info.name == "default":
            train, test = small_default(seed=seed)
        elif info.name in GENERATED:
            (train, test), stored = stored_generated(
                registry.data_dir(cfg.get("data_dir")), info.name, GENERATED[info.name],
                n_train=cfg.get("train_samples") or info.stats["train"],
                n_test=cfg.get("test_samples") or info.stats["test"], seed=seed)
            origin = " (read from the data dir's generated/)" if stored else " (drawn, and kept in the data dir)"
        else:
            train_path, test_path = registry.locate(info, registry.data_dir(cfg.get("data_dir")))
            files = (train_path, test_path)
            train, test = load_xc(train_path), load_xc(test_path)
    train = limit(train, cfg.get("train_samples"))
    test = limit(shuffled(test, seed), cfg.get("test_samples"))
    validation = None
    if cfg.get("validation_split"):
        kept, held = held_out_rows(len(train), cfg["validation_split"], seed)
        train, validation = Split(train.X[kept], train.Y[kept]), Split(train.X[held], train.Y[held])
    print(f"data: {title}{origin}, {len(train):,} train / {len(test):,} test points"
          + (f" / {len(validation):,} held out for validation" if validation else "")
          + f", {train.X.shape[1]:,} features, {train.Y.shape[1]:,} labels ({time.perf_counter() - t0:.1f}s)",
          flush=True)
    return Source(title, train.X.shape[1], train.Y.shape[1], test,
                  lambda net, s: in_memory_source(net, train, s, shuffle=cfg.get("shuffle", True)), preset, files,
                  validation, memory=train, train_points=len(train),
                  points_a_label=points_per_label_of(train.Y))


# Bytes in memory per byte of XC text while it is parsed and prepared for training (the text
# itself, the parsed CSR arrays and the engine's copy), and per byte of shards.
TEXT_EXPANSION = 2.5
SHARD_EXPANSION = 3.0
GZIP_RATIO = 5.0  # a typical XC text's compression; gzip cannot say its size without reading it


def in_memory_estimate(path: Path) -> int:
    """What loading `path` (file or shard folder) for training would take, roughly."""
    if path.is_dir():
        return int(ShardFolder.open(path).payload_bytes * SHARD_EXPANSION)
    size = regular_file(path, "data file").stat().st_size  # never open a FIFO or device to peek at it
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    return int(size * TEXT_EXPANSION * (GZIP_RATIO if gz else 1.0))


def should_stream(cfg: dict) -> bool:
    """--stream, or training data that would take more than half the memory available."""
    if cfg.get("stream"):
        return True
    path = Path(cfg["train_file"])
    if path.name.lower().endswith((".arff", ".arff.gz")):
        return False
    need = in_memory_estimate(path)
    room, where = available_bytes()
    if room is not None and need > room / 2:
        cfg["stream"] = True  # recorded in the run's config, so a resume streams the same way
        print(f"streaming the training data: loaded, it would take about {need / 2**30:.1f} GiB of the "
              f"{room / 2**30:.1f} GiB available ({where})", flush=True)
        return True
    return False


def _streamed_source(cfg: dict, t0: float) -> Source:
    """Training data streamed from shards (a folder, or a file converted once beside itself); the
    test file is loaded. A validation split holds out at most eval_samples points, gathered from
    the shards; the nearest-neighbour vote needs the training points in memory and is off."""
    train_path, test_path = Path(cfg["train_file"]), Path(cfg["test_file"])
    if train_path.name.lower().endswith((".arff", ".arff.gz")):
        raise ValueError(f"{train_path}: ARFF files are loaded, not streamed; convert them to the Extreme "
                         "Classification format to stream")
    if cfg.get("train_samples"):
        raise ValueError("train_samples (--train-samples) selects points of data in memory; a streamed run trains "
                         "on the whole folder")
    folder = stream_shards(train_path)
    test = load_file(test_path)
    if folder.num_features != test.X.shape[1] or folder.num_labels != test.Y.shape[1]:
        raise ValueError(f"{train_path} and {test_path} disagree on the number of features or labels "
                         f"({folder.num_features} x {folder.num_labels} vs {test.X.shape[1]} x {test.Y.shape[1]})")
    seed = cfg.get("seed", 0)
    stream = Stream(folder.path, shuffle=cfg.get("shuffle", True), seed=seed)
    if cfg.get("validation_split") is None:
        cfg["validation_split"] = preset_for_shape(folder.num_features, folder.num_labels)[0].get("validation_split")
    validation = None
    if cfg.get("validation_split"):
        held = held_out_rows(folder.num_points, cfg["validation_split"], seed)[1]
        cap = cfg.get("eval_samples") or len(held)
        validation = stream.hold_out(held[np.sort(np.random.default_rng([seed, 1]).permutation(len(held))[:cap])])
    test = limit(shuffled(test, seed), cfg.get("test_samples"))
    files = identifying_files(train_path, test_path)
    print(f"data: {train_path.name}, streamed from {len(folder)} shards in {folder.path}: "
          f"{stream.samples_per_epoch:,} train / {len(test):,} test points"
          + (f" / {len(validation):,} held out for validation" if validation else "")
          + f", {folder.num_features:,} features, {folder.num_labels:,} labels ({time.perf_counter() - t0:.1f}s); "
          "no nearest-neighbour vote (it needs the training points in memory)", flush=True)
    every_point = stream.one_shard_points()
    return Source(train_path.name, folder.num_features, folder.num_labels, test,
                  lambda net, s: streamed_source(net, stream, cfg["batch_size"]), registry.SLIDE_PRESET, files,
                  validation, memory=stream, train_points=stream.samples_per_epoch,
                  points_a_label=None if every_point is None else points_per_label_of(every_point.Y))


def _text8_source(info, cfg: dict, t0: float) -> Source:
    if cfg.get("validation_split"):
        raise ValueError("validation_split is for Extreme Classification data; text8 holds out its last 1% already")
    corpus_path, _ = registry.locate(info, registry.data_dir(cfg.get("data_dir")))
    opts = {**info.preset.get("text8", {}), **cfg.get("text8", {})}
    opts.pop("objective", None)  # "softmax" here: skip-gram runs train in cli/train_words.py
    corpus = load_text8(corpus_path, **opts)
    test = corpus.test_split(max_points=cfg.get("test_samples") or 10_000, seed=cfg.get("seed", 0))
    chunk = 1_000_000
    limit = cfg.get("train_samples")

    def make_stream(net: Network, seed: int) -> TrainingSource:
        def segments(epoch: int, start: int = 0):
            end = corpus.train_end if limit is None else min(corpus.train_end, limit)
            for index, begin in enumerate(range(0, end, chunk)):
                if index < start:
                    continue
                split = corpus.samples(begin, min(begin + chunk, end), seed=seed + 7919 * epoch)
                data = net.prepare(split.X, split.Y)
                yield data, np.random.default_rng([seed, epoch, index]).permutation(len(data))

        return TrainingSource(segments, corpus.train_end if limit is None else min(corpus.train_end, limit))

    print(f"data: text8, {len(corpus.ids):,} words, vocabulary {corpus.vocab_size:,}, {len(test):,} test samples "
          f"({time.perf_counter() - t0:.1f}s)", flush=True)
    return Source("text8", corpus.vocab_size, corpus.vocab_size, test, make_stream, info.preset, (corpus_path,),
                  vocabulary=corpus.words)
