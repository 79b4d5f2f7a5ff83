"""`slide train`: resolve the configuration (preset <- --config file <- flags), train with periodic
evaluation and checkpoints into a run folder, or resume one."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from ..datasets.fingerprint import check_unchanged, fingerprint
from ..epoch_average import NO_AVERAGING
from ..model.checks import ranks_for
from ..network import TrainingDiverged, TrainingInterrupted
from ..prediction.methods import fusion_monitor
from ..run_identity import check_checkpoint_belongs
from ..settings import NETWORK, RUN
from .. import runs
from . import mpi_runs, run_config, signals, train_mpi, train_words
from .run_config import apply_preset, apply_shape_preset, build_network, resolve_config  # noqa: F401 (public here)
from .sources import resolve

_TYPES = {"int": int, "float": float, "str": str, "path": str}
_METAVARS = {"int": "N", "float": "X", "str": "NAME", "path": "PATH"}
_DATA_KEYS = ("dataset", "train_file", "test_file", "data_dir", "train_samples", "test_samples")


def add_parser(sub) -> None:
    t = sub.add_parser("train", help="train a network and report P@1/3/5",
                       description="Train on a named dataset, on your own pair of files, or (default) on a small "
                                   "built-in problem. Results go to a run folder.")
    data = t.add_argument_group("data")
    run = t.add_argument_group("training")
    run.add_argument("--config", type=Path, help="a TOML file with any of these settings and [network], [lsh] tables")
    for setting in (*RUN.values(), *NETWORK.values()):
        if setting.flag is None:
            continue
        group = data if setting.name in _DATA_KEYS else run
        if setting.kind == "bool":
            group.add_argument(setting.flag, dest=setting.name, action="store_true", default=None, help=setting.doc)
        else:
            group.add_argument(setting.flag, dest=setting.name, type=_TYPES[setting.kind],
                               choices=setting.choices or None, help=setting.doc,
                               metavar=None if setting.choices else _METAVARS[setting.kind])
    run.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                     help="any setting of the tables in `python -m slide.settings`, e.g. --set lsh.k=4, "
                          "--set network.hidden=[256,128], --set eval_samples=500 (repeatable)")
    run.add_argument("--out", type=Path, help="the run folder (default: ./slide-runs/<dataset>-<time>)")
    run.add_argument("--overwrite", action="store_true", help="start afresh in an --out folder that holds a run")
    run.add_argument("--resume", type=Path, metavar="RUN_DIR",
                     help="continue the run in RUN_DIR with its own settings (only --epochs and --threads may change)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(handler=main)




















def main(args: argparse.Namespace) -> int:
    if train_mpi.mpi_ranks() > 1:  # started by mpirun -n N: one network over the job's ranks
        return train_mpi.main(args)
    with contextlib.ExitStack() as hold:  # the run folder's lock (run_lock), held until the command ends
        return _train(args, hold)


def _train(args: argparse.Namespace, hold: contextlib.ExitStack) -> int:
    if args.resume:
        cfg, run_dir, source, net, pos = _resumed(args, hold)
    else:
        started = _started(args, hold)
        if isinstance(started, int):
            return started  # skip-gram word vectors: train_words trained them and reported
        cfg, run_dir, source, net, pos = started
    stream = source.make_stream(net, cfg["seed"])
    eval_every = cfg.get("eval_every") or max(cfg["batch_size"], stream.samples_per_epoch // 4)
    print(f"{net}, {net.memory_bytes / 2**30:.2f} GiB; run folder {run_dir}", flush=True)
    settings = runs.RunSettings(epochs=cfg["epochs"], batch_size=cfg["batch_size"], eval_every=eval_every,
                                eval_samples=cfg["eval_samples"], checkpoint_every=cfg["checkpoint_every"],
                                final_eval_samples=cfg.get("final_eval_samples"),
                                on_divergence=cfg.get("on_divergence", "stop"), progress=not args.quiet,
                                early_stopping=cfg.get("early_stopping"), monitor=cfg.get("monitor", "P@1"),
                                averaging=cfg.get("averaging") or NO_AVERAGING,
                                # runs from before these settings existed resume with their defaults
                                eval_budget=cfg.get("eval_budget", RUN["eval_budget"].default),
                                end_checkpoint_after=_end_checkpoint_after(cfg),
                                final_model_optimizer=cfg.get("final_model_optimizer", False))
    try:
        final = runs.run(net, stream, source.test, run_dir, settings, pos, title=source.title,
                         validation=source.validation, memory=source.memory)
    except TrainingInterrupted:
        print(f"\n{signals.what_stopped()}: checkpoint saved; continue with `slide train --resume {run_dir}`",
              file=sys.stderr)
        return signals.exit_code()
    except TrainingDiverged as e:
        print(f"slide: error: {e}", file=sys.stderr)
        return 3
    monitor = fusion_monitor(ranks_for(None, net.output_dim))
    picked = f" (the best on validation, {monitor})" if source.validation else ""
    if final.get("fusion_weights_kept") == "learned":
        picked = f" (learned on validation by logistic regression, which beat the grid's pick there by {monitor})"
    if final.get("neighbour_weight") is not None:
        print(f"predictions fuse the {net.neighbours} nearest training points' labels, weight "
              f"{final['neighbour_weight']:g}{picked}", flush=True)
    if final.get("rerank_weight") is not None and net.reranker is not None:
        print(f"predictions re-rank the network's {net.rerank} best labels with per-label linear classifiers, "
              f"weight {final['rerank_weight']:g}{_c_of(final)}{picked}", flush=True)
    elif final.get("rerank_weight") is not None and net.tree is not None:
        print(f"predictions re-score each candidate with the label tree's per-label classifiers in the re-ranker's "
              f"place, weight {final['rerank_weight']:g}{picked}", flush=True)
    if final.get("tree_weight") is not None:
        print(f"predictions add the label tree's log-probability of each candidate (the network's, the vote's and "
              f"the tree's beam's), weight {final['tree_weight']:g}{picked}", flush=True)
    if final.get("best_epoch") is not None:
        what = f"epoch {final['best_epoch']}" if final.get("averaged_from") is None else \
            f"the mean of epochs {final['averaged_from']} to {final['best_epoch']}"
        print(f"final model: {what}, the best on validation ({settings.monitor})", flush=True)
    print("test (exact, {:,} points): ".format(final["test_points"]) +
          ", ".join(f"{k} {final[k]:.4f}" for k in final if k.startswith("P@")), flush=True)
    print(f"saved {run_dir / runs.MODEL}")
    print(_time_report(final), flush=True)
    return 0


def _resumed(args: argparse.Namespace, hold: contextlib.ExitStack) -> tuple:
    """The run folder's config, data, and network at its last checkpoint (or at its start)."""
    run_config.refuse_changes_on_resume(args)
    run_dir = args.resume
    hold.enter_context(runs.lock_run_dir(run_dir))
    cfg = runs.read_config(run_dir)
    mpi_runs.refuse_mpi_run(run_dir, cfg)
    if train_words.objective(cfg) == "skipgram":
        raise ValueError(f"{run_dir} trained skip-gram word vectors, whose learning rate falls over the whole "
                         "run; such a run does not resume: start it again (its model.npz holds the vectors "
                         "trained before it stopped)")
    flags = run_config.given_flags(args)
    if "epochs" in flags:
        cfg["epochs"] = flags["epochs"]
    check_unchanged(cfg.get("data_files", []))
    source = resolve(cfg)
    if (run_dir / runs.CHECKPOINT).exists():
        check_checkpoint_belongs(run_dir, run_dir / runs.CHECKPOINT, run_dir / runs.CONFIG, cfg,
                                 input_dim=source.input_dim, output_dim=source.output_dim)
        net, pos = runs.load_checkpoint(run_dir, threads=flags.get("threads"))
        print(f"resuming {run_dir} at epoch {pos.epoch + 1}, {pos.samples:,} samples trained", flush=True)
    else:  # killed before its first checkpoint, or too short to write one: the seed reproduces the start exactly
        if "threads" in flags:
            cfg["threads"] = flags["threads"]
        net, pos = build_network(cfg, source), None
        print(f"{run_dir} has no checkpoint (a run writes its first after checkpoint_every, "
              f"{cfg['checkpoint_every']:g} s, or at its end after end_checkpoint_after, "
              f"{_end_checkpoint_after(cfg):g} s); starting its run from the beginning", flush=True)
    if "epochs" in flags:  # the run now plans this many: `slide info` and later resumes go by it
        runs.write_config(run_dir, {**runs.read_config(run_dir), "epochs": flags["epochs"]})
    return cfg, run_dir, source, net, pos


def _started(args: argparse.Namespace, hold: contextlib.ExitStack):
    """A new run's config, folder, data and network; or, for skip-gram word vectors (which
    train_words runs whole), that run's exit code."""
    cfg = resolve_config(args)
    run_dir = args.out
    if run_dir is not None:
        hold.enter_context(runs.create_run_dir(run_dir, overwrite=args.overwrite))  # before any data is read
    if train_words.objective(cfg) == "skipgram":
        if run_dir is None:
            run_dir = run_config.default_run_dir(cfg["dataset"])
            hold.enter_context(runs.create_run_dir(run_dir))
        return train_words.main(cfg, run_dir, quiet=args.quiet)
    source = resolve(cfg)
    if cfg.get("train_file"):
        apply_shape_preset(cfg, source)
    net = build_network(cfg, source)
    if run_dir is None:
        run_dir = run_config.default_run_dir(source.title)
        hold.enter_context(runs.create_run_dir(run_dir))
    cfg["resolved_threads"] = net.threads
    cfg["data_files"] = [fingerprint(p) for p in source.files]
    runs.write_config(run_dir, cfg)
    return cfg, run_dir, source, net, None


def _c_of(final: dict) -> str:
    """The squared hinge's C the re-ranker was solved at, where the run recorded it."""
    return "" if final.get("rerank_c") is None else f", C {final['rerank_c']:g}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _time_report(final: dict) -> str:
    """Where the run's time went: training, and what it spent besides."""
    train, ev, ck, end = (final["train_seconds"], final["eval_seconds"], final["checkpoint_seconds"],
                          final["model_seconds"])
    fusion = final["fusion_seconds"]
    total = train + ev + ck + fusion + end
    share = lambda x: f"{x / total:.0%}" if total > 0 else "-"  # noqa: E731
    after = f"vote and re-ranker {fusion:,.1f}s ({share(fusion)}), " if fusion > 0 else ""
    return (f"time: training {train:,.1f}s ({share(train)}), evaluation during training {ev:,.1f}s "
            f"({_count(final['evaluations'], 'run')}, {share(ev)}), checkpoints {ck:,.1f}s ({final['checkpoints']} "
            f"written, {share(ck)}), {after}final evaluation and model.npz {end:,.1f}s ({share(end)})")


def _end_checkpoint_after(cfg: dict) -> float:
    return cfg.get("end_checkpoint_after", RUN["end_checkpoint_after"].default)  # runs from before it existed
