"""The declared schemas of the JSON slide writes and reads back: a run folder's config.json, each
metrics.jsonl record, a checkpoint's training position, a shard folder's manifest.json and a
model file's header. Everything read from one of those files is checked here before any code
uses it (slide.schema says how), so a damaged or hostile file is a message naming the file and
the field, never a crash, a hang or a silently wrong run.

Files that a newer slide may add keys to (config.json, metrics records, manifests, the model
header) accept unknown keys; the keys this slide reads are checked whatever else is there."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Type

from ._inputs import MAX_DIM
from .schema import (Anything, Bool, FromSetting, Int, ListOf, MapOf, Mismatch, Nullable, Number, Record, Schema,
                     Str, table, validate)
from .settings import LSH, MAX_SEED, NETWORK, RUN, SKIPGRAM, TEXT8

_COUNT = Int(0, 2**62)  # rows, samples, bytes: far beyond any real run, and still exact in int64
_SECONDS = Number(0)


def _plain_name(name: str) -> bool:
    """A file name inside its folder: no separators, no "." or "..", no NUL (a manifest names no other file)."""
    return PurePosixPath(name).name == name and "\\" not in name and name not in (".", "..") and "\0" not in name


# ----------------------------------------------------------------------------- config.json

_FINGERPRINT = Record(required={"path": Str(), "size": _COUNT, "sample_sha256": Str()}, extra=True,
                      what="a data file's fingerprint (path, size, sample_sha256)")

RUN_CONFIG = Record(
    required={"seed": FromSetting(RUN["seed"]), "epochs": FromSetting(RUN["epochs"])},
    optional={**{name: Nullable(FromSetting(s)) for name, s in RUN.items() if name not in ("seed", "epochs")},
              "network": table(NETWORK), "lsh": table(LSH), "text8": table(TEXT8), "skipgram": table(SKIPGRAM),
              "resolved_threads": Int(1, 1024), "ranks": Int(1, 1 << 20),
              "data_files": ListOf(_FINGERPRINT, max_len=1000)},
    extra=True, what="a JSON object of the run's settings")


def check_run_config(cfg: Any, where: str) -> dict:
    """A run's config.json, checked: the declared fields, and what a run of its kind needs."""
    cfg = validate(cfg, RUN_CONFIG, where)
    if "skipgram" not in cfg:  # a network run: what `--resume` and `slide evaluate` read
        for key in ("batch_size", "network", "lsh", "eval_samples", "checkpoint_every"):
            if cfg.get(key) is None:
                raise ValueError(f"{where}: field {key}: missing (a network run's config.json always holds it)")
    missing = [k for k in SKIPGRAM if k not in cfg.get("skipgram", SKIPGRAM)]
    if missing:  # train_words writes every one of them
        raise ValueError(f"{where}: field skipgram.{missing[0]}: missing")
    if cfg.get("train_file") and not cfg.get("test_file"):
        raise ValueError(f"{where}: field test_file: missing (train_file {cfg['train_file']!r} needs its test file)")
    return cfg


# ----------------------------------------------------------------------------- metrics.jsonl

_METRIC_PREFIXES = ("P@", "nDCG@", "PSP@", "val_")


class _MetricsRecord(Record):
    """A record of metrics.jsonl: its declared fields, and every score (P@k, nDCG@k, PSP@k, val_*)
    a number, since `slide info` and the plot do arithmetic on them."""

    def check(self, value: Any, field: str) -> dict:
        out = super().check(value, field)
        for key, v in out.items():
            if key.startswith(_METRIC_PREFIXES) and key != "val_points":
                Number(finite=False).check(v, key)
        return out


METRICS_RECORD = _MetricsRecord(
    required={"kind": Str()},
    optional={"epoch": Int(0), "samples": _COUNT, "wall_seconds": _SECONDS,
              "train_loss": Nullable(Number(finite=False)),
              "test_points": _COUNT, "val_points": _COUNT, "train_seconds": _SECONDS, "eval_seconds": _SECONDS,
              "checkpoint_seconds": _SECONDS, "model_seconds": _SECONDS, "seconds": _SECONDS,
              "evaluations": _COUNT, "checkpoints": _COUNT, "loss": Number(finite=False),
              "words_per_second": Number(0, finite=False), "words": _COUNT, "ranks": Int(1),
              "learning_rate": Number(finite=False), "best_epoch": Nullable(Int(0))},
    extra=True, what="a JSON object with a \"kind\"")


# ----------------------------------------------------------------------------- a checkpoint's position

_BEST_TRACKER = Record(optional={"monitor": Str(), "patience": Nullable(Int(1)), "best": Nullable(Number()),
                                 "best_at": Nullable(Int(0)), "since_best": Int(0)},
                       what="the validation tracker's state (monitor, patience, best, best_at, since_best)")

_EPOCH_AVERAGE = Record(required={"first": Int(1, RUN["epochs"].maximum), "epochs": Int(0, RUN["epochs"].maximum),
                                  "best_is_mean": Bool()},
                        what="the epoch average's state (first, epochs, best_is_mean)")

# slide.runs.Position's fields (a test holds the two to each other). Counts that index data must
# be in range: a negative row is a loop that never advances.
POSITION = Record(
    required={"epoch": Int(0, RUN["epochs"].maximum), "segment": Int(0, 2**31), "row": _COUNT, "samples": _COUNT},
    optional={"wall_seconds": _SECONDS, "since_eval": _COUNT, "loss_since_eval": Number(),
              "labelled_since_eval": _COUNT,
              "metrics_bytes": Nullable(_COUNT), "best": Nullable(_BEST_TRACKER), "stopped_early": Bool(),
              "average": Nullable(_EPOCH_AVERAGE),
              "eval_seconds": _SECONDS, "evaluations": _COUNT, "checkpoint_seconds": _SECONDS, "checkpoints": _COUNT,
              "steps": Nullable(_COUNT)},
    what="a training position (epoch, segment, row, samples, ...)")


# ----------------------------------------------------------------------------- a shard folder's manifest.json

_SHARD_ENTRY = Record(required={"file": Str(test=_plain_name, what="a file name inside the folder"),
                                "rows": _COUNT, "bytes": _COUNT, "crc32": Int(0, 2**32 - 1)},
                      extra=True, what="a shard entry (file, rows, bytes, crc32)")

SHARD_MANIFEST = Record(
    required={"format": Str(), "version": Int(), "num_points": _COUNT, "num_features": Int(0, MAX_DIM),
              "num_labels": Int(0, MAX_DIM), "shards": ListOf(_SHARD_ENTRY)},
    optional={"shard_rows": Int(1), "source": Nullable(MapOf(Anything(), what="a JSON object"))},
    extra=True, what="a JSON object (a shard manifest)")


# ----------------------------------------------------------------------------- a sharded model's manifest.json

_PLAIN_NAME = Str(test=_plain_name, what="a file name inside the folder")

# What slide.distributed.checkpoint.save_shards writes (an MPI run's checkpoint/ and model/).
SHARDED_MODEL_MANIFEST = Record(
    required={"format": Str(), "version": Int(), "ranks": Int(1, 1 << 20), "save": _PLAIN_NAME,
              "shards": ListOf(Record(required={"rank": Int(0, 1 << 20), "ranks": Int(1, 1 << 20), "offset": _COUNT,
                                                "rows": _COUNT, "file": _PLAIN_NAME, "bytes": _COUNT},
                                      extra=True, what="a shard entry (rank, ranks, offset, rows, file, bytes)"))},
    optional={"output_dim": Int(1, MAX_DIM), "step": _COUNT, "extra": MapOf(Anything(), what="a JSON object")},
    extra=True, what="a JSON object (a sharded-model manifest)")


# ----------------------------------------------------------------------------- a model file's header

_TYPED = {"str": Str(), "float": Number(), "int": Int(), "bool": Bool(), "sizes": Anything()}


def _typed(setting: Any) -> Schema:
    """The JSON type of a setting, its range left to slide.Network, which checks it and says so:
    the Python API accepts values the command line's ranges do not, and files keep them."""
    return _TYPED[setting.kind]


_LSH_TABLE = Nullable(table(LSH))

# What Network.get_config writes and Network.from_config reads back.
MODEL_CONFIG = Record(
    required={"input_dim": Int(1, MAX_DIM), "output_dim": Int(1, MAX_DIM),
              "hidden": ListOf(Int(1, MAX_DIM), max_len=1024, what="a list of layer sizes (integers >= 1)")},
    optional={**{name: _typed(s) for name, s in NETWORK.items() if name not in ("hidden", "dense", "mode")},
              "mode": Nullable(Str()), "lsh": _LSH_TABLE, "hidden_lsh": Nullable(ListOf(_LSH_TABLE, max_len=1024)),
              "lr_schedule_steps": Nullable(Int(1)), "threads": Nullable(Int(1, 1024)), "seed": Int(0, MAX_SEED)},
    what="a network configuration (Network.get_config)")

MODEL_COUNTERS = Record(optional={"step": _COUNT, "rng": ListOf(Anything(), max_len=1024)}, extra=True,
                        what="the training counters (step, rng, ...)")

_OBJECT = MapOf(Anything(), what="a JSON object")
MODEL_HEADER = Record(
    required={"config": _OBJECT, "counters": _OBJECT, "include_optimizer": Bool(), "extra": _OBJECT,
              "checksums": MapOf(Str(), what="a JSON object of checksums")},
    optional={"rebuild_tables": Bool()},
    extra=True, what="a model file header")


def check_model_header(header: Any, path: str, error: Type[ValueError]) -> dict:
    """A model file's header, checked: its own fields, the network configuration load_network
    builds from, and the counters it restores (each part's messages say which it is)."""
    header = validate(header, MODEL_HEADER, path, error=error)
    header["config"] = validate(header["config"], MODEL_CONFIG, f"{path}: the header's model configuration is "
                                "malformed", error=error, field="config")
    header["counters"] = validate(header["counters"], MODEL_COUNTERS, f"{path}: the header's training counters "
                                  "are malformed", error=error, field="counters")
    return header


def check(value: Any, schema: Schema, where: str, *, error: Type[ValueError] = ValueError, field: str = "") -> Any:
    """validate(), re-exported so callers need one import for a file's schema and its check."""
    return validate(value, schema, where, error=error, field=field)


__all__ = ["RUN_CONFIG", "METRICS_RECORD", "POSITION", "SHARD_MANIFEST", "SHARDED_MODEL_MANIFEST", "MODEL_CONFIG",
           "MODEL_COUNTERS", "MODEL_HEADER", "check_model_header",
           "check_run_config", "check", "Mismatch"]
