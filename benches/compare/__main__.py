"""slide against the baselines users would otherwise run, side by side in one run on the same
generated Amazon-670K-shaped data (135,909 -> 128 -> 670,091), same threads, same batch size:

    pip install ".[baselines]"     # tensorflow-cpu and torch, never needed by the tests
    python -m benches.compare [--budget 120] [--systems slide-fp32 torch-sampled ...]

Systems: slide-default (what `slide train --train FILE --test FILE` picks for the data's shape:
the batch-shared mode with the nearest neighbours' vote, its weight picked at each checkpoint on
the 2% of the training points it holds out), slide-batch, slide-batch-bf16 (batch-shared LSH active set as GEMMs), slide-batch-uniform
(the same with one LSH candidate: uniform negatives only, the ablation), slide-batch-wide (hidden
256 at learning rate 1e-2 whatever --lr says), slide-fp32, slide-bf16
(SLIDE's per-sample LSH sampling), slide-dense (full softmax), tf-full (TensorFlow full
softmax, the SLIDE paper's baseline), torch-full, torch-sampled (4,096 shared random negatives per
batch). Each trains in its own process (so peak RSS is its own) for `--budget` seconds of training
time or `--max-epochs`, is evaluated exactly at evenly spaced checkpoints on a 2,000-point slice of
the shuffled test set and at the end on all of it. Writes benches/results/compare/<system>.json,
compare.json, compare.md and compare_p1.png.

`--cluster-size N` generates labels in clusters of N near-duplicates (siblings share
`--cluster-share` of their signature, default half), the structure hard negatives exist for; its
results go to benches/results/compare-clustered/.

`--generator catalogue` uses `slide.datasets.catalogue_amazon670k` instead: the same shape with
Amazon-670K's long label tail (~4 points per label over the full training set, most labels seen
once or never in 100k points), labels that come in topics and generic TF-IDF words, on which no
method is near P@1 0.9. Its systems add the tree methods XC users pick, `omikuji` and `napkinxc`
(each trains once on everything: one point on the timeline). Results go to
benches/results/compare-catalogue/. Every result has P@1/3/5 and PSP@1/3/5 (A=0.6, B=2.6, the XC
repository's Amazon propensity model).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .protocol import add_run_arguments

RESULTS = Path(__file__).resolve().parents[1] / "results" / "compare"
TREE_SYSTEMS = ["omikuji", "napkinxc"]
SYSTEMS = ["slide-default", "slide-batch", "slide-batch-bf16", "slide-batch-uniform", "slide-batch-wide", "slide-fp32", "slide-bf16", "torch-sampled",
           "torch-full", "tf-full", "slide-dense"]


def make_system(name: str, data: dict, args):
    if name == "slide-default":
        from .slide_system import SlideDefaultSystem

        return SlideDefaultSystem(data, args.threads, args.batch_size)
    if name.startswith("slide-"):
        from .slide_system import SlideSystem

        return SlideSystem(data, name.split("-", 1)[1], args.threads, args.batch_size, args.lr)
    if name.startswith("torch-"):
        from .torch_systems import TorchSystem

        return TorchSystem(data, name.split("-", 1)[1], args.threads, args.batch_size, args.lr)
    if name in TREE_SYSTEMS:
        from ..tree_baselines import TREES

        return TREES[name](args.threads)
    if name == "tf-full":
        from .tf_system import TensorFlowSystem

        return TensorFlowSystem(data, "full", args.threads, args.batch_size, args.lr)
    raise SystemExit(f"unknown system {name!r}; known: {SYSTEMS + TREE_SYSTEMS}")


def child(args) -> None:
    from .protocol import load, run

    data = load(Path(args.data))
    t0 = time.perf_counter()
    system = make_system(args.child, data, args)
    build = time.perf_counter() - t0
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    result = run(system, data, batch_size=args.batch_size, budget_seconds=args.budget, max_epochs=args.max_epochs,
                 checkpoints=args.checkpoints, checkpoint_test_points=args.checkpoint_test, log=log)
    print(json.dumps({"system": args.child, "build_seconds": build, **result}))


def table(results: dict, tf_rate: float | None) -> str:
    lines = ["| system | samples/s | vs TF | s/epoch | epochs | best P@1 (2k slice) | final P@1 / P@3 / P@5 (10k) "
             "| final PSP@1 / PSP@3 / PSP@5 | peak RSS |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        best = max((c["P@1"] for c in r["timeline"]), default=float("nan"))
        f = r["final"]
        ratio = f"{r['samples_per_second'] / tf_rate:.1f}x" if tf_rate else "-"
        lines.append(f"| {name} | {r['samples_per_second']:,.0f} | {ratio} | {r['seconds_per_epoch']:,.1f} | "
                     f"{r['epochs']:.2f} | {best:.4f} | {f['P@1']:.4f} / {f['P@3']:.4f} / {f['P@5']:.4f} | "
                     + (f"{f['PSP@1']:.4f} / {f['PSP@3']:.4f} / {f['PSP@5']:.4f} | " if "PSP@1" in f else "- | ") +
                     f"{r['peak_rss_bytes'] / 2**30:.2f} GiB |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    for name, r in results.items():
        t = [c["train_seconds"] for c in r["timeline"]]
        ax.plot(t, [c["P@1"] for c in r["timeline"]], "o-", label=name)
    ax.set_xlabel("training wall-clock time (s, evaluation excluded)")
    ax.set_ylabel("test P@1 (2,000 shuffled test points)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", nargs="*", help="default: the slide and deep-learning systems; with "
                    "--generator catalogue, the tree methods too")
    add_run_arguments(ap, checkpoints=6)
    ap.add_argument("--generator", choices=["clean", "catalogue"], default="clean",
                    help="clean: synthetic_amazon670k (every label its own signature); catalogue: catalogue_amazon670k")
    ap.add_argument("--cluster-size", type=int, default=1, help="labels per cluster of near-duplicates")
    ap.add_argument("--cluster-share", type=float, default=0.5, help="share of a label's signature from its cluster")
    ap.add_argument("--results", type=Path, help="folder for the results (default: benches/results/compare, "
                    "compare-clustered or compare-catalogue by the data)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0

    from ..environment import describe
    from .runner import generated_data, run_system

    if args.generator == "catalogue":
        if args.cluster_size != 1:
            raise SystemExit("--cluster-size belongs to the clean generator, not --generator catalogue")
        out, generator_kwargs = RESULTS.with_name("compare-catalogue"), {"generator": "catalogue"}
        title = "Amazon-670K-shaped catalogue data (long tail, topics): P@1 against training time, 2 threads"
    else:
        out = RESULTS if args.cluster_size == 1 else RESULTS.with_name("compare-clustered")
        generator_kwargs = {"cluster_size": args.cluster_size, "cluster_share": args.cluster_share}
        title = "Amazon-670K-shaped data: P@1 against training time, 2 threads"
    out = args.results or out
    args.systems = args.systems or (SYSTEMS + TREE_SYSTEMS if args.generator == "catalogue" else SYSTEMS)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    with generated_data(args.train, args.test, **generator_kwargs) as data_dir:
        for name in args.systems:
            print(f"{name}:", flush=True)
            result = run_system(name, data_dir, threads=args.threads, batch_size=args.batch_size, lr=args.lr,
                                budget=args.budget, max_epochs=args.max_epochs, checkpoints=args.checkpoints,
                                checkpoint_test=args.checkpoint_test)
            if result is None:
                continue
            results[name] = result
            (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
            f = result["final"]
            print(f"  {result['samples_per_second']:,.0f} samples/s, final P@1 {f['P@1']:.4f}, "
                  f"peak RSS {result['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
    tf_rate = results.get("tf-full", {}).get("samples_per_second")
    md = table(results, tf_rate)
    report = {"benchmark": "compare", "environment": describe(args.threads),
              "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("child", "data")}, "results": results}
    (out / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "compare.md").write_text(md)
    plot(results, out / "compare_p1.png", title)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
