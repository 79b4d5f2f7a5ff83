"""Text8-style corpora trained as SLIDE did: the input is the one-hot centre word, the labels are
the distinct context words within a (randomly reduced) window. Frequent words are subsampled as in
word2vec. Samples are generated in C++ for any range of positions, so an epoch streams in chunks
and the 17M-word corpus is never expanded into per-sample Python objects."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Union

import numpy as np
import scipy.sparse as sp

from .._core import corpus_samples, tokenize_corpus
from ..paths import regular_file
from .cache import load_cached, store_cached
from .synthetic import Split
from .text_bytes import check_byte_text
from .xc_files import read_bytes

PathLike = Union[str, Path]


@dataclass
class Text8Corpus:
    """A tokenised corpus with its vocabulary and a held-out tail for evaluation.

    Attributes:
        words: id -> word, most frequent first.
        counts: id -> occurrences in the corpus.
        ids: the corpus as word ids (out-of-vocabulary words dropped, as word2vec does).
        train_end: positions [0, train_end) are for training, the rest is held out.
        window, subsample: sample generation settings (see `samples`).
    """

    words: list[str]
    counts: np.ndarray
    ids: np.ndarray
    train_end: int
    window: int = 2
    subsample: float = 1e-4

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def samples(self, begin: int, end: int, seed: int = 0) -> Split:
        """Samples whose centre words sit at positions [begin, end): X one-hot (vocab wide), Y the
        context words. Deterministic in (seed, position)."""
        d = corpus_samples(self.ids, self.counts, int(begin), int(end), int(self.window), float(self.subsample),
                                 int(seed))
        n, v = len(d["positions"]), self.vocab_size
        X = sp.csr_matrix((np.ones(len(d["x_indices"]), np.float32), d["x_indices"], d["x_indptr"]), shape=(n, v))
        Y = sp.csr_matrix((np.ones(len(d["y_indices"]), np.float32), d["y_indices"], d["y_indptr"]), shape=(n, v))
        return Split(X, Y)

    def train_chunks(self, chunk_words: int = 1_000_000, seed: int = 0) -> Iterator[Split]:
        """The training range as consecutive chunks of `chunk_words` positions."""
        for begin in range(0, self.train_end, chunk_words):
            yield self.samples(begin, min(begin + chunk_words, self.train_end), seed=seed)

    def test_split(self, max_points: Optional[int] = None, seed: int = 0) -> Split:
        split = self.samples(self.train_end, len(self.ids), seed=seed)
        if max_points is not None and len(split) > max_points:
            rows = np.sort(np.random.default_rng(seed).choice(len(split), max_points, replace=False))
            split = Split(split.X[rows], split.Y[rows])
        return split


def load_text8(path: PathLike, *, min_count: int = 1, max_vocab: int = 0, window: int = 2, subsample: float = 1e-4,
               test_fraction: float = 0.01, cache: bool = True) -> Text8Corpus:
    """Read a whitespace-separated corpus (Text8, optionally .gz) and build its vocabulary.

    Args:
        min_count: words seen fewer times are dropped (1 keeps all: 253,855 words on Text8).
        max_vocab: keep at most this many of the most frequent words (0 = no cap).
        window: maximum distance of a context word; each sample draws its own window in [1, window].
        subsample: word2vec's subsampling threshold t (0 keeps every word).
        test_fraction: the tail of the corpus held out for evaluation.
    """
    path = regular_file(path, "corpus file")
    for name, value, ok in (("min_count", min_count, min_count >= 1), ("max_vocab", max_vocab, max_vocab >= 0),
                            ("window", window, window >= 1), ("subsample", subsample, subsample >= 0),
                            ("test_fraction", test_fraction, 0 <= test_fraction < 1)):
        if not ok:
            raise ValueError(f"{name} out of range: {value!r}")
    kind = f"text8-{min_count}-{max_vocab}"
    arrays = load_cached(path, kind, None, lambda a: _cache_damage(a, min_count, max_vocab)) if cache else None
    if arrays is None:
        text = read_bytes(path)
        check_byte_text(path, text)
        d = tokenize_corpus(text, int(min_count), int(max_vocab))
        arrays = {"words": np.array(d["words"], dtype=bytes) if d["words"] else np.zeros(0, "S1"),
                  "counts": np.asarray(d["counts"]), "ids": np.asarray(d["ids"])}
        if cache:
            store_cached(path, kind, None, arrays)
    # bytes that are not UTF-8 stay distinct (lone surrogates), so two such words never merge
    words = [w.decode("utf-8", "surrogateescape") for w in arrays["words"].tolist()]
    ids = np.ascontiguousarray(arrays["ids"], dtype=np.int32)
    if len(words) == 0 or len(ids) < 2:
        raise ValueError(f"{path}: the corpus has too few words to train on (vocabulary {len(words)}, {len(ids)} words)")
    train_end = max(1, int(round(len(ids) * (1 - test_fraction))))
    return Text8Corpus(words, np.ascontiguousarray(arrays["counts"], np.int64), ids, train_end, window, subsample)


_NOT_IN_A_WORD = re.compile(rb"[\x00 \t\n\r]")


def _cache_damage(arrays: dict, min_count: int, max_vocab: int) -> Optional[str]:
    """Why cached text8 arrays cannot be what tokenising gives (None when they can): the engine
    indexes with the ids and sizes tables by the counts, so a damaged cache must never reach it."""
    missing = sorted({"words", "counts", "ids"} - set(arrays))
    if missing:
        return f"it has no {missing[0]!r} array"
    words, counts, ids = arrays["words"], arrays["counts"], arrays["ids"]
    if words.ndim != 1 or words.dtype.kind != "S":
        return f"words is {words.dtype} of shape {words.shape}, not a list of byte strings"
    for name, a in (("counts", counts), ("ids", ids)):
        if a.ndim != 1 or a.dtype.kind not in "iu":
            return f"{name} is {a.dtype} of shape {a.shape}, not a 1-D integer array"
    if len(counts) != len(words) or (max_vocab and len(words) > max_vocab):
        return f"{len(counts):,} counts for {len(words):,} words"
    if ids.size and (ids.min() < 0 or ids.max() >= len(words)):
        return f"a word id outside [0, {len(words):,})"
    if not np.array_equal(np.bincount(ids, minlength=len(words)), counts) or (counts.size and counts.min() < min_count) \
            or np.any(np.diff(counts) > 0):
        return "the counts disagree with the corpus they count"
    listed = words.tolist()
    if len(set(listed)) != len(listed) or (listed and min(map(len, listed)) == 0) or \
            _NOT_IN_A_WORD.search(b"".join(listed)):
        return "a word is empty, repeated or holds whitespace or a NUL byte"
    return None
