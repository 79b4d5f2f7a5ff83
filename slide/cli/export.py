"""`slide export MODEL --out vectors.txt [--binary]`: a Text8 model's word vectors (its input
embedding, one row per vocabulary word) in the word2vec format that gensim's
`KeyedVectors.load_word2vec_format` and word2vec.c's tools read."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..network import Network
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
    net = Network.load(model, threads=1)
    if net.vocabulary is None:
        raise ValueError(f"{model} has no vocabulary: only a model trained on words (slide train --dataset text8) "
                         "has word vectors to export")
    net.save_word2vec(args.out, binary=args.binary)
    print(f"wrote {net.input_dim:,} word vectors of {net.hidden[0]} dimensions to {args.out} "
          f"(word2vec {'binary' if args.binary else 'text'} format)")
    return 0
