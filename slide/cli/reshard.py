"""`slide reshard MODEL OUT --ranks M`: a model saved under MPI, rewritten for M ranks, or with
--ranks 1 as one model file that `slide predict`, `slide evaluate` and `Network.load` read."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..distributed.checkpoint import read_manifest, reshard


def add_parser(sub) -> None:
    r = sub.add_parser("reshard", help="re-split a model saved under MPI for another number of ranks",
                       description="Rewrite a sharded model folder (a run's model/ or checkpoint/ under mpirun) for "
                                   "another number of ranks, or with --ranks 1 as one single-process model file.")
    r.add_argument("model", type=Path, help="the sharded model folder")
    r.add_argument("out", type=Path, help="the new folder (or, with --ranks 1, the new .npz file); must not exist")
    r.add_argument("--ranks", type=int, required=True, help="ranks of the job that will load it (1: one file)")
    r.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    before = read_manifest(args.model)["ranks"]
    out = reshard(args.model, args.out, args.ranks)
    print(f"{args.model} ({before} shards) -> {out} " + ("(one model file)" if args.ranks == 1 else f"({args.ranks} shards)"))
    return 0
