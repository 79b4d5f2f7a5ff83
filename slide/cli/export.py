"""`slide export MODEL --out vectors.txt [--binary]`: a Text8 model's word vectors (its input
embedding, one row per vocabulary word) in the word2vec format that gensim's
`KeyedVectors.load_word2vec_format` and word2vec.c's tools read."""

from __future__ import annotations

import argparse
import contextlib
import zipfile
from pathlib import Path
from typing import Union

from ..network import Network
from ..skipgram import SkipGram
from ..paths import refuse_overwriting_inputs
from .evaluate import model_path


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="write a Text8 model's word vectors in the word2vec format")
    p.add_argument("model", type=Path, help="a model file or run folder")
    p.add_argument("--out", type=Path, required=True, help="the word2vec file to write")
    p.add_argument("--binary", action="store_true", help="word2vec.c's binary format (default: text)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    model = model_path(args.model)
    refuse_overwriting_inputs(args.out, {"model file": model})
    words = load_word_model(model)
    words.save_word2vec(args.out, binary=args.binary)
    print(f"wrote {len(words.vocabulary):,} word vectors of {words.vector_size} dimensions to {args.out} "
          f"(word2vec {'binary' if args.binary else 'text'} format)")
    return 0


def load_word_model(path: Path) -> Union[Network, SkipGram]:
    """A skip-gram model, or a network trained on words; ValueError for a network without words."""
    with zipfile.ZipFile(path) if zipfile.is_zipfile(path) else contextlib.nullcontext() as zf:
        names = zf.namelist() if zf is not None else []
    if "word_vectors.npy" in names:
        return SkipGram.load(path, threads=1)
    net = Network.load(path, threads=1)
    if net.vocabulary is None:
        raise ValueError(f"{path} has no vocabulary: only a model trained on words (slide train --dataset text8) "
                         "has word vectors to export")
    return net
