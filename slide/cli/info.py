"""`slide info RUN_DIR`: what a run folder holds, read without loading the model: its settings,
its progress and best scores, where its time went, and its files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .. import runs
from ..distributed.checkpoint import is_sharded, read_manifest
from ..model_file import read_header
from ..plots import plot_progress
from . import train_mpi


def add_parser(sub) -> None:
    i = sub.add_parser("info", help="summarise a run folder: settings, scores, time, files")
    i.add_argument("run", type=Path, help="a run folder written by `slide train`")
    i.add_argument("--json", action="store_true", help="print the summary as JSON")
    i.add_argument("--plot", action="store_true",
                   help=f"also draw RUN/{runs.PLOT} (test P@1 and loss against time) from its metrics; "
                        f"slide train draws it itself for runs that train {runs.PLOT_AFTER_SECONDS:g} s or more")
    i.set_defaults(handler=main)


def summarise(run_dir: Path) -> dict[str, Any]:
    """The run's settings, progress, best and final scores, time and files, as one dict."""
    cfg = runs.read_config(run_dir)  # FileNotFoundError naming the folder when it is not a run
    records = runs.read_metrics(run_dir)
    if "skipgram" in cfg:
        return _skipgram_summary(run_dir, cfg, records)
    scored = [r for r in records if "P@1" in r and r["kind"] != "final"]
    final = next((r for r in reversed(records) if r["kind"] == "final"), None)
    epochs = [r for r in records if r["kind"] == "epoch"]
    summary: dict[str, Any] = {
        "run": str(run_dir),
        "data": cfg.get("dataset") or cfg.get("train_file"),
        "network": cfg.get("network", {}),
        "lsh": None if cfg.get("network", {}).get("dense") else cfg.get("lsh"),
        "epochs": {"planned": cfg.get("epochs"), "done": len(epochs)},
        "ranks": cfg.get("ranks"),  # an MPI run's; its records count no samples (None)
        "samples_trained": epochs[-1].get("samples") if epochs else 0,
        "best_test_P@1": max((r["P@1"] for r in scored), default=None),
        "final": {k: v for k, v in final.items() if k.startswith(("P@", "nDCG@", "PSP@"))} if final else None,
        "state": "finished" if final else ("stopped early" if any(r["kind"] == "early_stop" for r in records)
                                           else "in progress or stopped; resume with `slide train --resume`"),
    }
    times = ("train_seconds", "eval_seconds", "checkpoint_seconds")
    if final and all(k in final for k in times):
        summary["seconds"] = {k: final[k] for k in times}
    files = {}
    for name in (runs.CHECKPOINT, runs.MODEL, runs.BEST):
        path = run_dir / name
        if path.exists():
            header = read_header(path)
            files[name] = {"bytes": path.stat().st_size, "with_optimizer_state": header["include_optimizer"],
                           "optimizer_steps": header["counters"].get("step")}
    for name in (train_mpi.CHECKPOINT, train_mpi.MODEL):
        if is_sharded(run_dir / name):
            files[name] = _sharded_summary(run_dir / name)
    summary["files"] = files
    return summary


def _sharded_summary(folder: Path) -> dict[str, Any]:
    """An MPI run's checkpoint/ or model/ folder, from its manifest (checked by read_manifest)."""
    m = read_manifest(folder)
    return {"bytes": sum(s["bytes"] for s in m["shards"]), "ranks": m["ranks"], "optimizer_steps": m.get("step"),
            "with_optimizer_state": None}


def _skipgram_summary(run_dir: Path, cfg: dict[str, Any], records: list[dict]) -> dict[str, Any]:
    epochs = [r for r in records if r["kind"] == "epoch"]
    final = next((r for r in reversed(records) if r["kind"] == "final"), None)
    model = run_dir / runs.MODEL
    return {"run": str(run_dir), "data": cfg.get("dataset"), "objective": "skipgram", "skipgram": cfg["skipgram"],
            "text8": cfg.get("text8", {}), "epochs": {"planned": cfg.get("epochs"), "done": len(epochs)},
            "words_per_second": final.get("words_per_second") if final else None,
            "loss": epochs[-1].get("loss") if epochs else None,
            "state": "finished" if final else "stopped (skip-gram runs do not resume; train again)",
            "files": {runs.MODEL: {"bytes": model.stat().st_size}} if model.exists() else {}}


def _text(s: dict[str, Any]) -> str:
    if s.get("objective") == "skipgram":
        sg = s["skipgram"]
        lines = [f"run {s['run']}: {s['state']}",
                 f"data: {s['data']}; skip-gram word vectors: dim {sg['dim']}, {sg['negatives']} negatives, "
                 f"lr {sg['learning_rate']} falling to {sg['min_learning_rate']}",
                 f"epochs: {s['epochs']['done']} of {s['epochs']['planned']}"
                 + (f", loss {s['loss']:.4f} per pair" if s["loss"] is not None else "")]
        if s["words_per_second"]:
            lines.append(f"speed: {s['words_per_second']:,.0f} words/s")
        lines += [f"{name}: {f['bytes'] / 2**20:,.1f} MiB" for name, f in s["files"].items()]
        return "\n".join(lines)
    net = s["network"]
    mode = "dense" if net.get("dense") else net.get("mode") or (
        "batch" if (s["lsh"] or {}).get("batch_active", 0) > 0 else "sample")
    lines = [f"run {s['run']}: {s['state']}",
             f"data: {s['data']}; network: hidden {net.get('hidden')}, mode {mode}, "
             f"{net.get('optimizer')} lr {net.get('learning_rate')}",
             f"epochs: {s['epochs']['done']} of {s['epochs']['planned']}"
             + (f", {s['samples_trained']:,} samples" if s["samples_trained"] is not None else "")
             + (f", trained over {s['ranks']} MPI ranks" if s.get("ranks") else "")]
    if s["best_test_P@1"] is not None:
        lines.append(f"best test P@1 during training: {s['best_test_P@1']:.4f}")
    if s["final"]:
        lines.append("final: " + ", ".join(f"{k} {v:.4f}" for k, v in s["final"].items()))
    if "seconds" in s:
        sec = s["seconds"]
        lines.append(f"time: training {sec['train_seconds']:,.1f}s, evaluation {sec['eval_seconds']:,.1f}s, "
                     f"checkpoints {sec['checkpoint_seconds']:,.1f}s")
    for name, f in s["files"].items():
        lines.append(f"{name}: {f['bytes'] / 2**20:,.1f} MiB"
                     + (f", sharded over {f['ranks']} ranks" if f.get("ranks") else "")
                     + (f", {f['optimizer_steps']:,} optimizer steps" if f["optimizer_steps"] is not None else "")
                     + (", with optimizer state" if f["with_optimizer_state"] else ""))
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if not args.run.is_dir():
        raise FileNotFoundError(f"{args.run} is not a folder; `slide info` reads a run folder from `slide train`")
    s = summarise(args.run)
    print(json.dumps(s, indent=2) if args.json else _text(s))
    if args.plot:
        title = Path(str(s.get("data") or args.run.name)).name
        if not plot_progress(runs.read_metrics(args.run), args.run / runs.PLOT, title):
            raise ValueError(f"{args.run}: no {runs.PLOT}: its metrics hold no timed test score yet (MPI runs' "
                             "records have no time) or matplotlib is not installed")
        print(f"drew {args.run / runs.PLOT}")
    return 0
