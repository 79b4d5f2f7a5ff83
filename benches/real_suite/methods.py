"""The methods the suite runs, each as a user would with its defaults, at the same thread count:

- slide:         `slide train --train F --test F` (no other flag but --threads/--seed/--out/--quiet).
- slide-network: the same with --neighbours 0 --rerank 0 --label-tree 0: the network alone, without the
                 vote, the shortlist re-ranker or the label tree (shown; MPI runs add the re-ranker,
                 streamed runs the re-ranker and, from one shard, the tree; neither the vote).
- slide-stream:  the same as slide with --stream (large sets only): what a streamed run predicts, the
                 network with the re-ranker or the label tree, without the vote (it needs the points
                 in memory), which the issue's "network alone (no vote)" target judges. The suite's
                 files convert into one shard each (up to 65,536 points), beside the file, so the
                 re-ranker and the tree are solved as in memory; a stream of several shards has no
                 tree, and MPI runs have none.
- omikuji:       omikuji's default hyper-parameters (Parabel-like trees of linear classifiers).
- napkinxc:      napkinXC's PLT with its defaults.
- torch-sampled: PyTorch sampled softmax (EmbeddingBag -> 128 ReLU -> output rows; the batch's true
                 labels plus 4,096 shared uniform negatives; Adam 1e-3, batch 256, 5 epochs), large sets only.

Each returns top-5 label ids for the test points and its seconds: `train_seconds` is what training
costs (for slide: training, the evaluations that pick the best epoch, checkpoints, and after the
last epoch the vote's memory, the re-ranker, the label tree and the search for their weights; not
loading the files or the final test evaluation), `predict_seconds` ranking the test set."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

K = 5
TORCH_EPOCHS = 5


def run_slide(folder: Path, train, test, threads: int, seed: int, work: Path, extra: tuple = ()) -> dict:
    import slide
    from slide.runs import read_metrics

    run = work / "run"
    t0 = time.perf_counter()
    cli = subprocess.run([sys.executable, "-m", "slide", "train", "--train", str(folder / "train.txt"),
                          "--test", str(folder / "test.txt"), "--threads", str(threads), "--seed", str(seed),
                          "--out", str(run), "--quiet", *extra], capture_output=True, text=True, cwd=work)
    wall = time.perf_counter() - t0
    if cli.returncode:
        raise RuntimeError(f"slide train failed ({cli.returncode}): {cli.stderr[-2000:]}")
    final = [r for r in read_metrics(run) if r["kind"] == "final"][-1]
    net = slide.Network.load(run / "model.npz")
    t1 = time.perf_counter()
    ids, _ = net.predict(test.X, k=K)
    predict = time.perf_counter() - t1
    cost = final["train_seconds"] + final["eval_seconds"] + final["checkpoint_seconds"] + final.get("fusion_seconds", 0)
    return {"ids": ids, "train_seconds": cost, "predict_seconds": predict, "cli_wall_seconds": wall,
            "time_split": {k: final.get(k, 0) for k in ("train_seconds", "eval_seconds", "checkpoint_seconds",
                                                      "fusion_seconds")},
            "outside_training_share": round(1 - final["train_seconds"] / wall, 4),
            "network": str(net), "flags": list(extra), "stdout_tail": cli.stdout.strip().splitlines()[-4:]}


def run_tree(name: str):
    def run(folder: Path, train, test, threads: int, seed: int, work: Path) -> dict:
        from ..tree_baselines import TREES

        model = TREES[name](threads, seed)
        t0 = time.perf_counter()
        model.fit(train.X, train.Y)
        seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        ids = model.top_k(test.X, K)
        return {"ids": ids, "train_seconds": seconds, "predict_seconds": time.perf_counter() - t1,
                "hyper_param": model.hyper_param}
    return run


def run_torch_sampled(folder: Path, train, test, threads: int, seed: int, work: Path) -> dict:
    from ..compare.torch_systems import TorchSystem

    system = TorchSystem({"Xtr": train.X, "Ytr": train.Y}, "sampled", threads, batch_size=256, lr=1e-3)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for _ in range(TORCH_EPOCHS):
        system.train(rng.permutation(train.X.shape[0]))
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    ids = system.top_k(test.X, K)
    return {"ids": ids, "train_seconds": seconds, "predict_seconds": time.perf_counter() - t1,
            "hyper_param": f"hidden 128, 4,096 shared uniform negatives, Adam 1e-3, batch 256, {TORCH_EPOCHS} epochs"}


METHODS = {
    "slide": run_slide,
    "slide-network": lambda *a: run_slide(*a, extra=("--neighbours", "0", "--rerank", "0", "--label-tree", "0")),
    "slide-stream": lambda *a: run_slide(*a, extra=("--stream",)),
    "omikuji": run_tree("omikuji"),
    "napkinxc": run_tree("napkinxc"),
    "torch-sampled": run_torch_sampled,
}
