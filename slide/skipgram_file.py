"""A skip-gram model file (slide.SkipGram.save) read as untrusted: its members read bounded by the
file's size (slide.npz_members), its JSON header checked against a schema, and its arrays' types
and shapes against the header's config, so that the engine allocates only for vectors the file
actually holds and every refusal names the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .npz_members import read_members
from .word_vectors import VOCABULARY_ARRAY

ARRAYS = ("word_vectors", "context_vectors", "counts", VOCABULARY_ARRAY)
CONFIG_KEYS = frozenset({"dim", "window", "negatives", "subsample", "learning_rate", "min_learning_rate", "threads",
                         "seed"})
# What zipfile and the .npy parser raise on damaged bytes besides ValueError.
_DAMAGED = (OSError, EOFError, NotImplementedError, RuntimeError, ValueError, RecursionError, OverflowError,
            KeyError)


def read_skipgram_file(path: Path, fmt: str, version: int, default_dim: int) -> tuple[dict, dict[str, np.ndarray]]:
    """(header, arrays) of the skip-gram file at `path`, each checked; ValueError naming the file
    and what is wrong otherwise."""
    try:
        arrays = read_members(path, ValueError, ("header", *ARRAYS))
    except _DAMAGED as e:
        if isinstance(e, ValueError) and str(e).startswith(str(path)):
            raise
        raise ValueError(f"{path} is not a readable slide skip-gram model file: {type(e).__name__}: {e}") from None
    header = _header(path, arrays.pop("header"), fmt, version)
    _check_arrays(path, arrays, header["config"].get("dim", default_dim))
    return header, arrays


def _header(path: Path, raw: np.ndarray, fmt: str, version: int) -> dict[str, Any]:
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(f"{path}: the header is not JSON text ({type(e).__name__}: {str(e)[:100]})") from None
    if not isinstance(header, dict) or header.get("format") != fmt:
        raise ValueError(f"{path} is not a slide skip-gram model file")
    if header.get("version") != version:
        raise ValueError(f"{path}: skip-gram format {header.get('version')!r}; this slide reads version {version}")
    config = header.get("config")
    if not isinstance(config, dict):
        raise ValueError(f"{path}: the header's 'config' must be a table of settings, got {_kind(config)}")
    unknown = sorted(set(config) - CONFIG_KEYS)
    if unknown:
        raise ValueError(f"{path}: the header's 'config' has unknown settings {unknown[:5]}; known: "
                         f"{sorted(CONFIG_KEYS)}")
    passes = header.setdefault("passes", 0)
    if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
        raise ValueError(f"{path}: the header's 'passes' must be an integer >= 0, got {_kind(passes)}")
    checksums = header.get("checksums")
    if not isinstance(checksums, dict) or not all(isinstance(checksums.get(n), str) for n in ARRAYS):
        raise ValueError(f"{path}: the header's 'checksums' must map each of {list(ARRAYS)} to its CRC-32, got "
                         f"{_kind(checksums)}")
    return header


def _check_arrays(path: Path, arrays: dict[str, np.ndarray], dim: Any) -> None:
    """Types and shapes, checked before the checksums are computed and before the engine sizes its
    vectors from the config: `dim` must describe the vectors stored here."""
    counts, vocabulary = arrays["counts"], arrays[VOCABULARY_ARRAY]
    if counts.ndim != 1 or counts.dtype.kind not in "iu":
        raise ValueError(f"{path}: array 'counts' is {counts.dtype} of shape {counts.shape}, expected 1-D integers")
    if vocabulary.ndim != 1 or vocabulary.dtype != np.uint8:
        raise ValueError(f"{path}: array {VOCABULARY_ARRAY!r} is {vocabulary.dtype} of shape {vocabulary.shape}, "
                         "expected 1-D uint8 (UTF-8 text)")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise ValueError(f"{path}: the header's config 'dim' must be an integer, got {_kind(dim)}")
    for name in ("word_vectors", "context_vectors"):
        a = arrays[name]
        if a.dtype != np.float32 or a.shape != (len(counts), dim):
            raise ValueError(f"{path}: array {name!r} is {a.dtype} of shape {a.shape}, but the header's config "
                             f"(dim {dim:,}) and its {len(counts):,} word counts need float32 of shape ({len(counts):,}, "
                             f"{dim:,})")


def _kind(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
