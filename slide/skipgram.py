"""Word vectors by skip-gram with negative sampling (word2vec's SGNS), trained in C++ straight from a
corpus's word ids (slide._core.SkipGram: per-pair logistic steps on the centre word and
`negatives` words drawn from unigram^0.75, plain SGD whose rate falls linearly over the whole
run, frequent words subsampled, HOGWILD threads).

For text8-style data this is what slide trains by default (`slide train --dataset text8`): the
softmax over the vocabulary that SLIDE's formulation trains, LSH-sampled or not, costs hundreds of
rows per sample where a pair here costs six, and gives worse vectors (docs/benchmarks/word-vectors.md).
"""

from __future__ import annotations

import json
import os
import time
import zlib
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import memory
from ._core import SkipGram as SkipGramEngine
from .atomic_files import atomic_write
from .datasets.text8 import Text8Corpus
from .paths import regular_file
from .datasets.registry import DATASETS
from .progress import progress_bar
from .settings import SKIPGRAM, defaults
from .skipgram_file import read_skipgram_file
from .word_vectors import (VOCABULARY_ARRAY, WordVectorLookup, check_vocabulary, vocabulary_from_array,
                           vocabulary_to_array)

PathLike = Union[str, "os.PathLike[str]"]
FORMAT = "slide-skipgram"
FORMAT_VERSION = 1
# The defaults: [skipgram]'s in the settings table, window and subsample from the text8 preset.
_S = defaults(SKIPGRAM)
_T = DATASETS["text8"].preset["text8"]
_CHUNK_WORDS = 1_000_000  # words per engine call: Ctrl-C and the progress bar act between calls


class SkipGram(WordVectorLookup):
    """Skip-gram word vectors over a fixed vocabulary.

    Args:
        vocabulary: the words, one per id (as `Text8Corpus.words`); no spaces, tabs or line breaks.
        counts: each word's number of occurrences (subsampling and the negatives' distribution).
        dim: vector size.
        window: context words on each side of the centre at most (each centre draws its own reach
            in 1..window, as word2vec).
        negatives: negative words per pair.
        subsample: word2vec's t (frequent words are dropped with probability 1 - (sqrt(f/t)+1) t/f);
            0 keeps every word.
        learning_rate, min_learning_rate: the rate falls linearly from one to the other over all the
            words of a `fit` call's epochs.
        threads: worker threads (HOGWILD); default: the CPUs this process may use.
        seed: seeds the initial vectors and every draw; with ``threads=1`` training is
            reproducible bit for bit.
    """

    def __init__(self, vocabulary: Sequence[str], counts, dim: int = _S["dim"], *, window: int = _T["window"],
                 negatives: int = _S["negatives"], subsample: float = _T["subsample"],
                 learning_rate: float = _S["learning_rate"], min_learning_rate: float = _S["min_learning_rate"],
                 threads: Optional[int] = None, seed: int = 0) -> None:
        from .model.arguments import default_threads

        counts = np.asarray(counts)
        if counts.ndim != 1 or counts.dtype.kind not in "iu" or (counts < 0).any():
            raise ValueError("counts must be a 1-D array of non-negative integers, one per vocabulary word")
        words = check_vocabulary(vocabulary, len(counts))
        for name, value, low in (("dim", dim, 1), ("window", window, 1), ("negatives", negatives, 0),
                                 ("seed", seed, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        for name, value in (("subsample", subsample), ("learning_rate", learning_rate),
                            ("min_learning_rate", min_learning_rate)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {learning_rate!r}")
        threads = default_threads() if threads is None else threads
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not 1 <= threads <= 1024:
            raise ValueError(f"threads must be an integer in [1, 1024], got {threads!r}")
        self.dim, self.window, self.negatives = int(dim), int(window), int(negatives)
        self.subsample, self.learning_rate, self.min_learning_rate = float(subsample), float(learning_rate), \
            float(min_learning_rate)
        self.threads, self.seed = int(threads), int(seed)
        self.counts = counts.astype(np.int64)
        self.passes = 0  # passes over data so far: each draws afresh
        memory.check_fits(memory.skipgram_estimate(len(words), self.dim, self.threads),
                          f"a skip-gram model of {len(words):,} words x {self.dim:,}",
                          advice="Use a smaller skipgram.dim or vocabulary (text8.max_vocab, text8.min_count)")
        self._core = SkipGramEngine(self.counts, self.dim, self.seed)
        self._set_vocabulary(words)

    @classmethod
    def from_corpus(cls, corpus: Text8Corpus, dim: int = _S["dim"], **settings: Any) -> "SkipGram":
        """A model over `corpus`'s vocabulary and counts (`slide.datasets.load_text8`)."""
        return cls(corpus.words, corpus.counts, dim, **settings)

    @property
    def vocabulary(self) -> list[str]:
        return list(self._vocabulary)

    def _word_matrix(self) -> np.ndarray:
        return self._core.word_vectors

    def embeddings(self) -> np.ndarray:
        """A copy of the word vectors, (vocabulary, dim) float32."""
        return np.array(self._core.word_vectors, copy=True)

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim, "window": self.window, "negatives": self.negatives, "subsample": self.subsample,
                "learning_rate": self.learning_rate, "min_learning_rate": self.min_learning_rate,
                "threads": self.threads, "seed": self.seed}

    def fit(self, corpus: Union[Text8Corpus, np.ndarray], epochs: int = 5, *, progress: bool = True,
            on_epoch: Optional[Callable[[dict[str, float]], Any]] = None) -> list[dict[str, float]]:
        """Train on the corpus's training range (a `Text8Corpus`) or on an array of word ids,
        `epochs` times; the rate falls linearly from ``learning_rate`` to ``min_learning_rate``
        over the whole call. Returns one record per epoch: words, pairs, mean loss per pair
        (the pair's and its negatives' logistic losses), seconds and words/s; `on_epoch` gets each
        record as its epoch ends. Ctrl-C stops within a second or so, with the vectors intact, and
        raises KeyboardInterrupt. A NaN or infinite loss or vector (a learning rate too high)
        raises slide.network.TrainingDiverged after the chunk of words it appeared in."""
        if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
            raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
        if isinstance(corpus, Text8Corpus):
            if corpus.vocab_size != len(self._vocabulary):
                raise ValueError(f"the corpus has a vocabulary of {corpus.vocab_size:,} words; this model has "
                                 f"{len(self._vocabulary):,}")
            ids, end = corpus.ids, corpus.train_end
        else:
            ids = np.ascontiguousarray(corpus, dtype=np.int32) if np.asarray(corpus).dtype.kind in "iu" else None
            if ids is None or ids.ndim != 1:
                raise ValueError("corpus must be a Text8Corpus or a 1-D array of word ids")
            if ids.size and (ids.min() < 0 or ids.max() >= len(self._vocabulary)):
                raise ValueError(f"word ids must lie in [0, {len(self._vocabulary):,})")
            end = ids.size
        total = end * epochs
        history = []
        for epoch in range(epochs):
            t0 = time.perf_counter()
            sums = {"words": 0, "pairs": 0, "loss": 0.0}
            bar = progress_bar(end, f"epoch {epoch + 1}/{epochs}", progress)
            try:
                for begin in range(0, end, _CHUNK_WORDS):
                    stop = min(begin + _CHUNK_WORDS, end)
                    done = epoch * end + begin
                    rate = lambda at: self.learning_rate + (self.min_learning_rate - self.learning_rate) * at / total  # noqa: E731
                    out = self._core.train(ids, begin, stop, rate(done), rate(done + stop - begin), self.window,
                                           self.negatives, self.subsample, self.threads, self.passes)
                    self.passes += 1
                    self._check_finite(out["loss"], epoch, stop, rate(done + stop - begin))
                    for key in sums:
                        sums[key] += out[key]
                    if bar is not None:
                        bar.update(stop - begin)
            finally:
                if bar is not None:
                    bar.close()
            seconds = time.perf_counter() - t0
            history.append({"epoch": epoch + 1, "words": sums["words"], "pairs": sums["pairs"],
                            "loss": sums["loss"] / max(sums["pairs"], 1), "seconds": seconds,
                            "words_per_second": sums["words"] / max(seconds, 1e-9)})
            if on_epoch is not None:
                on_epoch(history[-1])
        return history

    def _check_finite(self, loss: float, epoch: int, words: int, rate: float) -> None:
        """TrainingDiverged once a chunk left a NaN/inf loss or vector: SGD cannot recover from one,
        and every later step spreads it. Summing a matrix finds one at memory speed (about 10 ms per
        10^7 floats, under 2% of the chunk's training) without an array of flags."""
        from .model.errors import TrainingDiverged

        with np.errstate(over="ignore", invalid="ignore"):
            finite = bool(np.isfinite(loss)) and all(np.isfinite(m.sum()) for m in
                                                     (self._core.word_vectors, self._core.context_vectors))
        if not finite:
            raise TrainingDiverged(f"skip-gram training diverged: non-finite (NaN or infinite) loss or vectors after "
                                   f"{words:,} words of epoch {epoch + 1} at learning rate {rate:g}; the vectors are "
                                   "lost: train again with a lower learning rate", words)

    # ----------------------------------------------------------------- persistence
    def save(self, path: PathLike) -> None:
        """Write the model atomically: a NumPy .npz of plain arrays (vectors, counts, vocabulary)
        and a JSON header with a CRC-32 of each; loading runs no code and refuses damaged files."""
        arrays = {"word_vectors": self._core.word_vectors, "context_vectors": self._core.context_vectors,
                  "counts": self.counts, VOCABULARY_ARRAY: vocabulary_to_array(self._vocabulary)}
        header = {"format": FORMAT, "version": FORMAT_VERSION, "config": self.get_config(), "passes": self.passes,
                  "checksums": {k: _crc32(v) for k, v in arrays.items()}}
        arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
        atomic_write(Path(path), lambda f: np.savez(f, **arrays))

    @classmethod
    def load(cls, path: PathLike, *, threads: Optional[int] = None) -> "SkipGram":
        path = regular_file(path, "skip-gram model file")
        # Checked header, and arrays whose shapes match its config: the model built below
        # allocates no more than the vectors the file holds.
        header, arrays = read_skipgram_file(path, FORMAT, FORMAT_VERSION, _S["dim"])
        for name, a in arrays.items():
            if header["checksums"][name] != _crc32(a):
                raise ValueError(f"{path}: array {name!r} fails its checksum; the file is corrupted")
        config = dict(header["config"])
        if threads is not None:
            config["threads"] = threads
        try:
            words = vocabulary_from_array(arrays[VOCABULARY_ARRAY], len(arrays["counts"]))
            model = cls(words, arrays["counts"], **config)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: the model's settings or vocabulary are malformed: {e}") from None
        for name in ("word_vectors", "context_vectors"):
            target = getattr(model._core, name)
            if arrays[name].shape != target.shape or arrays[name].dtype != target.dtype:
                raise ValueError(f"{path}: {name} has shape {arrays[name].shape}, expected {target.shape}")
            target[...] = arrays[name]
        model.passes = header["passes"]
        return model

    def __repr__(self) -> str:
        return (f"SkipGram({len(self._vocabulary):,} words x {self.dim}, window {self.window}, "
                f"{self.negatives} negatives, subsample {self.subsample:g}, threads={self.threads})")


def _crc32(a: np.ndarray) -> str:
    return f"{zlib.crc32(np.ascontiguousarray(a)):08x}"
