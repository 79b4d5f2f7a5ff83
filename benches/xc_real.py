"""Real small XC datasets (Bibtex, Delicious; Mulan's ARFF files, whose train/test split is the XC
repository's): slide with the settings `slide train` picks from the data's shape, against the tree
methods XC users pick (omikuji = Parabel/Bonsai, napkinXC = PLT), each with its defaults, same
threads. P@k, nDCG@k and PSP@k (A=0.55, B=1.5) on the whole test split; training seconds.

    pip install omikuji napkinxc
    python -m benches.xc_real --data-dir DIR      # DIR holds bibtex-{train,test}.arff + bibtex.xml, ...

The data is not in this repository (nor needed by the tests); Mulan's repository has it under
data/multi-label/{bibtex,delicious}. Writes benches/results/xc_real.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = ("bibtex", "delicious")
# Published P@1/3/5 on the XC split (Extreme Classification Repository tables).
PUBLISHED = {"bibtex": {"SLEEC": [0.6532, 0.3924, 0.2837], "FastXML": [0.6342, 0.3923, 0.2859],
                        "PfastreXML": [0.6347, 0.3972, 0.2964]},
             "delicious": {"SLEEC": [0.6759, 0.6197, 0.5678], "FastXML": [0.6913, 0.6372, 0.5845],
                           "PfastreXML": [0.6782, 0.6168, 0.5720]}}


def load(data_dir: Path, name: str):
    from slide.datasets import load_arff

    xml = data_dir / f"{name}.xml"
    train = load_arff(data_dir / f"{name}-train.arff", xml=xml)
    test = load_arff(data_dir / f"{name}-test.arff", xml=xml)
    return train, test


def run_slide(train, test, threads: int, seed: int):
    from .default_network import default_network

    net, cfg, why = default_network(train.X.shape[1], train.Y.shape[1], threads, seed)
    t0 = time.perf_counter()
    net.fit(train.X, train.Y, epochs=cfg["epochs"], batch_size=cfg["batch_size"],
            validation_split=cfg.get("validation_split") or 0.0, progress=False)
    seconds = time.perf_counter() - t0
    ids, _ = net.predict(test.X, k=5)
    return ids, seconds, {"settings": why}


def run_tree(name: str):
    def run(train, test, threads: int, seed: int):
        from .tree_baselines import TREES

        model = TREES[name](threads, seed)
        t0 = time.perf_counter()
        model.fit(train.X, train.Y)
        seconds = time.perf_counter() - t0
        return model.top_k(test.X, 5), seconds, {"hyper_param": model.hyper_param}
    return run


SYSTEMS = {"slide": run_slide, "omikuji": run_tree("omikuji"), "napkinxc": run_tree("napkinxc")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--systems", nargs="*", default=list(SYSTEMS), choices=list(SYSTEMS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from slide.metrics import inverse_propensities, xc_report

    report = {"environment": describe(args.threads), "protocol": __doc__.split("\n\n")[0], "results": {},
              "published": PUBLISHED}
    for name in args.datasets:
        train, test = load(args.data_dir, name)
        inv = inverse_propensities(train.Y)
        report["results"][name] = {"train": len(train), "test": len(test), "features": train.X.shape[1],
                                   "labels": train.Y.shape[1], "systems": {}}
        for system in args.systems:
            ids, seconds, notes = SYSTEMS[system](train, test, args.threads, args.seed)
            metrics = xc_report(ids, test.Y, inv)
            report["results"][name]["systems"][system] = {"train_seconds": round(seconds, 2), **notes,
                                                          **{k: round(v, 4) for k, v in metrics.items()}}
            print(f"{name:10s} {system:9s} train {seconds:6.1f}s  " +
                  "  ".join(f"{k} {metrics[k]:.4f}" for k in ("P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5")),
                  flush=True)
            RESULTS.mkdir(exist_ok=True)
            (RESULTS / "xc_real.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
