"""Named datasets: where their files are looked for, what they should contain, where they come
from, and the hyperparameters that suit them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from ..modes import MODES
from .cache import user_cache_dir
from .errors import DatasetNotFoundError

PathLike = Union[str, Path]
XC_REPOSITORY = "http://manikvarma.org/downloads/XC/XMLRepository.html"

# The SLIDE paper's Amazon-670K configuration (lr raised for lazy Adam; see docs/benchmarks/baselines.md).
SLIDE_PRESET: dict[str, Any] = dict(hidden=[128], learning_rate=1e-3, batch_size=256, epochs=1,
                                    lsh=dict(family="dwta", k=6, l=50, bin_size=8, bucket_size=128,
                                             rehash_every=6400, rebuild_every=128_000))

# The batch-shared mode for outputs of 10^5-10^6 labels, measured on Amazon-670K-shaped catalogue
# data (docs/benchmarks/catalogue.md): hidden 128 at Adam's 1e-3 for 20 epochs; 2% of the training points
# held out pick the best epoch and the weight of the nearest neighbours' vote.
BATCH_PRESET: dict[str, Any] = dict(hidden=[128], learning_rate=1e-3, batch_size=256, epochs=20, validation_split=0.02, neighbours=10,
                                    lsh={**SLIDE_PRESET["lsh"], **MODES["batch"].lsh})


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    kind: str                    # "xc", "text8" or "synthetic"
    description: str
    train_files: tuple[str, ...] = ()  # candidate names inside <data dir>/<name>/, first found wins
    test_files: tuple[str, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    preset: dict[str, Any] = field(default_factory=dict)


def _xc_names(*stems: str) -> tuple[str, ...]:
    return tuple(f"{s}{ext}" for s in stems for ext in ("", ".gz"))


def _xc_dataset(name: str, description: str, slide_prefix: str, folder: str, **stats: Any) -> DatasetInfo:
    """An Extreme Classification Repository dataset: train/test files under the names the repository
    and the original SLIDE code use."""
    return DatasetInfo(
        name, "xc", f"{description} (bag-of-words features)",
        train_files=_xc_names("train.txt", f"{slide_prefix}_train.txt", f"{folder}/train.txt"),
        test_files=_xc_names("test.txt", f"{slide_prefix}_test.txt", f"{folder}/test.txt"),
        stats=stats, source=f"{XC_REPOSITORY} ({folder}, BoW features)", preset=SLIDE_PRESET)


DATASETS: dict[str, DatasetInfo] = {
    "default": DatasetInfo(
        "default", "synthetic", "small generated problem: 5,000 features, 10,000 labels, 20,000 points (seconds)",
        stats=dict(features=5_000, labels=10_000, train=18_000, test=2_000),
        preset=dict(hidden=[128], learning_rate=1e-3, batch_size=128, epochs=5,
                    lsh=dict(k=3, l=50, rehash_every=2000, rebuild_every=20_000))),
    "synthetic-amazon670k": DatasetInfo(
        "synthetic-amazon670k", "synthetic",
        "generated data of Amazon-670K's exact shape (135,909 features, 670,091 labels, ~75 nnz, ~5.45 labels)",
        stats=dict(features=135_909, labels=670_091, train=490_449, test=153_025),
        preset=SLIDE_PRESET),
    "catalogue-amazon670k": DatasetInfo(
        "catalogue-amazon670k", "synthetic",
        "generated data of Amazon-670K's shape and long label tail (~4 points per label), labels in topics, "
        "generic TF-IDF words (it favours the neighbours' vote; real accuracy: benches.real_suite)",
        stats=dict(features=135_909, labels=670_091, train=490_449, test=153_025),
        preset=BATCH_PRESET),
    "amazon670k": _xc_dataset("amazon670k", "Amazon-670K product-to-product recommendation", "amazon", "Amazon-670K",
                              features=135_909, labels=670_091, train=490_449, test=153_025, labels_per_point=5.45,
                              nnz_per_point=75),
    "wikilsh325k": _xc_dataset("wikilsh325k", "WikiLSHTC-325K Wikipedia categories", "wikiLSHTC", "WikiLSHTC-325K",
                               features=1_617_899, labels=325_056, train=1_778_351, test=587_084,
                               labels_per_point=3.19, nnz_per_point=42),
    "delicious200k": _xc_dataset("delicious200k", "Delicious-200K social bookmarking tags", "deliciousLarge",
                                 "Delicious-200K", features=782_585, labels=205_443, train=196_606, test=100_095,
                                 labels_per_point=75.54, nnz_per_point=300),
    "text8": DatasetInfo(
        "text8", "text8", "Text8 (first 10^8 bytes of Wikipedia), word2vec-style: centre word -> context words",
        train_files=("text8", "text8.txt", "text8.gz"),
        stats=dict(words=17_005_207, vocabulary_min_count_1=253_854),
        source="http://mattmahoney.net/dc/text8.zip (unzip to a file named text8)",
        # Skip-gram with negative sampling at word2vec's settings (gensim's defaults); the softmax
        # objective (text8.objective = "softmax") trains the network and LSH settings, SLIDE's.
        preset=dict(hidden=[128], learning_rate=1e-3, batch_size=256, epochs=5,
                    lsh=dict(family="dwta", k=6, l=50),
                    text8=dict(objective="skipgram", min_count=5, window=5, subsample=1e-3))),
}


def data_dir(explicit: Optional[PathLike] = None) -> Path:
    """--data-dir, then $SLIDE_DATA, then the per-user cache dir (~/.cache/slide/data)."""
    if explicit is not None:
        return Path(explicit).expanduser()
    if os.environ.get("SLIDE_DATA"):
        return Path(os.environ["SLIDE_DATA"]).expanduser()
    return user_cache_dir() / "data"


def get(name: str) -> DatasetInfo:
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}") from None


def locate(info: DatasetInfo, root: Path) -> tuple[Path, Optional[Path]]:
    """The dataset's train (and test) file under root/<name>/ or root/, or one clear error."""

    def find(candidates: tuple[str, ...]) -> Optional[Path]:
        for folder in (root / info.name, root):
            for c in candidates:
                if (folder / c).is_file():
                    return folder / c
        return None

    train = find(info.train_files)
    test = find(info.test_files) if info.test_files else None
    if train is None or (info.test_files and test is None):
        wanted = info.train_files + info.test_files
        raise DatasetNotFoundError(
            f"dataset {info.name!r} not found. Looked in {root / info.name} and {root} for "
            f"{' / '.join(wanted[:4])} ...\n"
            f"  Get it from: {info.source}\n"
            f"  Put the files in {root / info.name}/ (or pass --data-dir DIR, or set SLIDE_DATA).\n"
            f"  No data at hand? `slide train --dataset synthetic-amazon670k` trains on generated data of the same shape.")
    return train, test
