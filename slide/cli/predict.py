"""`slide predict MODEL FILE -k 5`: the top-k labels of every point of FILE, one line per point:
`id:score id:score ...` (scores are logits). FILE is read and answered a piece at a time, so it
may be larger than memory; the output appears atomically when every point is done."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..datasets.pieces import read_pieces
from ..atomic_files import atomic_write
from ..network import Network
from ..paths import refuse_overwriting_inputs
from .evaluate import model_path


def add_parser(sub) -> None:
    p = sub.add_parser("predict", help="write the top-k labels of every point of a file")
    p.add_argument("model", type=Path, help="a model file or run folder")
    p.add_argument("file", type=Path, help="points in Extreme Classification format (labels may be empty)")
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--out", type=Path, help="output file (default: FILE.topK.txt; '-' for stdout)")
    p.add_argument("--mode", choices=["dense", "sparse"], default="dense")
    p.add_argument("--threads", type=int)
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    model = model_path(args.model)
    out = None if str(args.out) == "-" else args.out or args.file.with_name(f"{args.file.name}.top{args.k}.txt")
    if out is not None:  # before any work: an output never lands on an input
        refuse_overwriting_inputs(out, {"input data file": args.file, "model file": model})
    net = Network.load(model, threads=args.threads)
    points = 0

    def write(f) -> None:
        nonlocal points
        for piece in read_pieces(args.file):
            if piece.X.shape[1] != net.input_dim:
                raise ValueError(f"{args.file} has {piece.X.shape[1]:,} features but the model expects "
                                 f"{net.input_dim:,}")
            ids, scores = net.predict(piece.X, k=args.k, mode=args.mode)
            lines = [" ".join(f"{i}:{s:.6g}" for i, s in zip(row_ids, row_scores) if i >= 0)
                     for row_ids, row_scores in zip(ids, scores)]
            if lines:
                f.write(("\n".join(lines) + "\n").encode())
            points += len(lines)

    if out is None:
        write(sys.stdout.buffer)
        sys.stdout.flush()
        return 0
    atomic_write(out, write)
    print(f"wrote the top {args.k} labels of {points:,} points to {out}")
    return 0
