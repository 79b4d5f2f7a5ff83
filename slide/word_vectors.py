"""Word vectors: the vocabulary a network's input features stand for, the cosine neighbours of a
word, and the word2vec file format (text or binary, as word2vec.c writes them and gensim's
`KeyedVectors.load_word2vec_format` reads them)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from .atomic_files import atomic_write
from .paths import regular_file

PathLike = Union[str, "os.PathLike[str]"]
# Stored in the model file as the words' UTF-8 bytes, one word per line.
VOCABULARY_ARRAY = "vocabulary.utf8"
# What separates words in a corpus (slide's tokenizer) and in the word2vec format, so no word has it.
SEPARATORS = frozenset(" \n\r\t")
# Bytes that are not UTF-8 (a corpus may hold some) travel as lone surrogates and back unchanged.
_BYTES = "surrogateescape"


def check_vocabulary(words: Sequence[str], size: int) -> list[str]:
    """`words` as a list, if it names each of `size` input features once with a word the word2vec
    format can hold (non-empty, no whitespace); ValueError naming the first bad word otherwise."""
    if isinstance(words, (str, bytes)):
        raise ValueError("vocabulary must be a sequence of words, not one string")
    words = list(words)
    if len(words) != size:
        raise ValueError(f"vocabulary has {len(words):,} words for {size:,} word ids (a network's input features, "
                         "a skip-gram model's counts): one word each")
    seen: dict[str, int] = {}
    for i, w in enumerate(words):
        if not isinstance(w, str) or not w or not SEPARATORS.isdisjoint(w):
            raise ValueError(f"vocabulary word {i:,} is {w!r}: words must be non-empty strings without spaces, "
                             "tabs or line breaks")
        if w in seen:
            raise ValueError(f"vocabulary word {i:,} ({w!r}) repeats word {seen[w]:,}")
        seen[w] = i
    return words


def vocabulary_to_array(words: Sequence[str]) -> np.ndarray:
    return np.frombuffer("\n".join(words).encode("utf-8", _BYTES), dtype=np.uint8)


def vocabulary_from_array(data: np.ndarray, size: int) -> list[str]:
    text = data.tobytes().decode("utf-8", _BYTES)
    return check_vocabulary(text.split("\n") if text else [], size)


def most_similar(vectors: np.ndarray, query: np.ndarray, topn: int, exclude: Sequence[int] = ()
                 ) -> list[tuple[int, float]]:
    """(row, cosine similarity) of the `topn` rows of `vectors` most similar to `query`, best first,
    leaving out the rows in `exclude`; exact, over every row. Zero rows have similarity 0."""
    norms = np.linalg.norm(vectors, axis=1)
    q = np.asarray(query, dtype=np.float64)
    qn = float(np.linalg.norm(q))
    sims = (vectors @ q) / np.maximum(norms * qn, np.finfo(np.float32).tiny)
    sims[list(exclude)] = -np.inf
    topn = min(topn, len(sims) - len(set(exclude)))
    if topn <= 0:
        return []
    top = np.argpartition(-sims, topn - 1)[:topn]
    top = top[np.lexsort((top, -sims[top]))]  # best first, ties by row
    return [(int(i), float(sims[i])) for i in top]


def write_word2vec(path: PathLike, words: Sequence[str], vectors: np.ndarray, *, binary: bool = False) -> None:
    """Write `vectors` (one float32 row per word) in the word2vec format, atomically: a header line
    "<words> <dimension>", then per word "word v1 ... vd" (text, each value printed exactly enough
    to read back the same float32) or "word " and d little-endian float32s and a newline (binary)."""
    vectors = np.ascontiguousarray(vectors, dtype="<f4")
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise ValueError(f"{len(words):,} words need a ({len(words):,}, dimension) array, got {vectors.shape}")
    header = f"{vectors.shape[0]} {vectors.shape[1]}\n".encode()

    def write(f) -> None:
        f.write(header)
        block = 4096  # rows formatted per write: bounded memory for any vocabulary
        for start in range(0, len(words), block):
            rows = vectors[start:start + block]
            if binary:
                f.write(b"".join(w.encode("utf-8", _BYTES) + b" " + r.tobytes() + b"\n"
                                 for w, r in zip(words[start:start + block], rows)))
            else:
                f.write("".join(w + " " + " ".join(map(_exact, r.tolist())) + "\n"
                                for w, r in zip(words[start:start + block], rows)).encode("utf-8", _BYTES))

    atomic_write(Path(path), write)


def _exact(x: float) -> str:
    return f"{x:.9g}"  # nine significant digits read back as the same float32


def read_word2vec(path: PathLike, *, binary: bool = False) -> tuple[list[str], np.ndarray]:
    """(words, float32 vectors) from a word2vec file; ValueError naming the file and line (or word)
    where it departs from the format."""
    path = regular_file(path, "word2vec file")
    with open(path, "rb") as f:
        first = f.readline()
        try:
            count, dim = (int(v) for v in first.split())
            if count < 0 or dim < 1:
                raise ValueError
        except ValueError:
            raise ValueError(f"{path}, line 1: expected the header '<words> <dimension>', got {first[:80]!r}") from None
        if binary:
            _check_not_text(f, path, dim)
        # Each word read takes at least a space and its floats (binary) or a separator and a digit
        # per value (text), so the file's size bounds the rows; a header promising more sizes no
        # array and fails at the line where the file ends.
        least, size = 4 * dim + 1 if binary else 2 * dim, os.fstat(f.fileno()).st_size
        words, vectors = [], np.empty((min(count, (size - len(first)) // least), dim), np.float32)
        for i in range(count):
            if binary:
                word = _read_binary_word(f, path, i)
                raw = f.read(4 * dim) if 4 * dim <= size - f.tell() else b""  # read(n) allocates n first
                if len(raw) != 4 * dim:
                    raise ValueError(f"{path}: word {i + 1:,} ({word!r}) is cut short; expected {dim} float32s")
                row = np.frombuffer(raw, "<f4")
            else:
                line = f.readline()
                parts = line.decode("utf-8", _BYTES).rstrip("\r\n").rstrip(" ").split(" ")
                if len(parts) != dim + 1:
                    raise ValueError(f"{path}, line {i + 2:,}: expected a word and {dim} numbers, got "
                                     f"{len(parts)} fields" + (_binary_hint(line) if line else " (the file ends "
                                                               "early)"))
                word = parts[0]
                try:
                    row = np.array(parts[1:], dtype=np.float32)
                except ValueError:
                    raise ValueError(f"{path}, line {i + 2:,}: a value of {word!r} is not a number"
                                     + _binary_hint(line)) from None
            if i == len(vectors):  # cannot happen: a record shorter than `least` fails to parse
                raise ValueError(f"{path}: word {i + 1:,} lies beyond the file's end")
            vectors[i] = row
            words.append(word)
    return words, vectors


def _check_not_text(f, path: Path, dim: int) -> None:
    """ValueError when the first record of a file about to be read as binary reads as a word and
    `dim` numbers: a text file, whose digits the binary reader would return as floats."""
    start = f.tell()
    line = f.readline(32 * dim + (1 << 16) + 2)  # a text first record whole, a longest word's worth
    f.seek(start)
    fields = line.rstrip(b"\r\n").rstrip(b" ").split(b" ")
    try:
        is_text = len(fields) == dim + 1 and all(isinstance(float(v), float) for v in fields[1:])
    except ValueError:  # a field that is no number
        is_text = False
    if is_text:
        raise ValueError(f"{path}: line 2 reads as a word and {dim} numbers: this is a text word2vec file; read it "
                         "with binary=False")


def _binary_hint(line: bytes) -> str:
    """A hint for a text line that fails to parse: control bytes (not tab or line ends) or bytes
    that are not UTF-8 are what a binary file's floats look like (a word may hold either, so only
    a hint)."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return " (if this is a binary word2vec file, read it with binary=True)"
    return " (if this is a binary word2vec file, read it with binary=True)" \
        if any(b < 32 and b not in b"\t\r\n" for b in line) else ""


def _read_binary_word(f, path: Path, i: int) -> str:
    chars = bytearray()
    while True:
        c = f.read(1)
        if not c:
            raise ValueError(f"{path}: the file ends before word {i + 1:,}")
        if c == b" ":
            break
        if c != b"\n" or chars:  # the newline after the previous vector
            chars += c
        if len(chars) > 1 << 16:
            raise ValueError(f"{path}: word {i + 1:,} runs past 64 KiB without a space; not a word2vec binary file")
    return chars.decode("utf-8", _BYTES)


class WordVectorLookup:
    """Word-vector lookups for a model whose `_word_matrix()` has one row per vocabulary word:
    `get_word_vector`, `most_similar` and `save_word2vec`. The model calls `_set_vocabulary`."""

    _vocabulary: Optional[list[str]]
    _word_ids: Optional[dict[str, int]]

    def _word_matrix(self) -> np.ndarray:
        raise NotImplementedError

    def _set_vocabulary(self, words: Optional[list[str]]) -> None:
        self._vocabulary = words
        self._word_ids = None if words is None else {w: i for i, w in enumerate(words)}

    def _need_vocabulary(self) -> list[str]:
        if self._vocabulary is None:
            raise ValueError("this network has no vocabulary (set net.vocabulary to the word of each input feature)")
        return self._vocabulary

    def _word_id(self, word: str) -> int:
        self._need_vocabulary()
        try:
            return self._word_ids[word]
        except (KeyError, TypeError):
            raise KeyError(f"{word!r} is not in the vocabulary ({len(self._vocabulary):,} words)") from None

    @property
    def vector_size(self) -> int:
        """The number of values in each word vector."""
        return int(self._word_matrix().shape[1])

    def get_word_vector(self, word: str) -> np.ndarray:
        """The vector of `word` (a copy). KeyError for a word outside the vocabulary."""
        return np.array(self._word_matrix()[self._word_id(word)], copy=True)

    def most_similar(self, word: Union[str, np.ndarray], topn: int = 10) -> list[tuple[str, float]]:
        """The `topn` vocabulary words whose vectors have the highest cosine similarity to
        `word`'s (leaving the word itself out) or to a vector, best first, as (word, similarity):
        exact, over the whole vocabulary, as gensim's ``KeyedVectors.most_similar`` ranks them."""
        if isinstance(topn, bool) or not isinstance(topn, (int, np.integer)) or topn < 1:
            raise ValueError(f"topn must be >= 1, got {topn!r}")
        vectors = self._word_matrix()
        if isinstance(word, str):
            exclude = [self._word_id(word)]
            query = vectors[exclude[0]]
        else:
            self._need_vocabulary()
            query = np.asarray(word, dtype=np.float32)
            if query.shape != (vectors.shape[1],):
                raise ValueError(f"a query vector must have {vectors.shape[1]} values, got shape {query.shape}")
            exclude = []
        words = self._need_vocabulary()
        return [(words[i], s) for i, s in most_similar(vectors, query, int(topn), exclude)]

    def save_word2vec(self, path: PathLike, *, binary: bool = False) -> None:
        """Write the word vectors with the vocabulary in the word2vec format, atomically: text by
        default, word2vec.c's binary with ``binary=True``; gensim reads either with
        ``KeyedVectors.load_word2vec_format(path, binary=...)``."""
        write_word2vec(path, self._need_vocabulary(), self._word_matrix(), binary=binary)


class InputVocabulary(WordVectorLookup):
    """Word vectors from a network's input embedding: one row per input feature, `vocabulary`
    naming each feature's word (`slide.Network`)."""

    input_dim: int

    @property
    def vocabulary(self) -> Optional[list[str]]:
        """The word each input feature stands for (feature i is ``vocabulary[i]``), or None. `slide
        train --dataset text8` sets it; set it yourself for a model trained on your own one-hot
        words. Saved in the model file; the word-vector methods (`get_word_vector`, `most_similar`,
        `save_word2vec`, from `slide.word_vectors.WordVectorLookup`) need it."""
        return None if self._vocabulary is None else list(self._vocabulary)

    @vocabulary.setter
    def vocabulary(self, words: Optional[Sequence[str]]) -> None:
        self._set_vocabulary(None if words is None else check_vocabulary(words, self.input_dim))

    def _word_matrix(self) -> np.ndarray:
        return self.weights()["input.weight"]  # type: ignore[attr-defined]

