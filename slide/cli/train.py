"""`slide train`: resolve the configuration (preset <- --config file <- flags), train with periodic
evaluation and checkpoints into a run folder, or resume one."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from ..config import LSHConfig
from ..datasets.fingerprint import check_unchanged, fingerprint
from ..network import Network, TrainingDiverged, TrainingInterrupted
from ..paths import regular_file
from ..run_identity import check_checkpoint_belongs
from ..shape_defaults import preset_for_shape
from ..modes import MODES, mode_of
from ..settings import NETWORK, RUN, SKIPGRAM, TABLES, TEXT8, check_table, defaults, parse_assignment, \
    toml_limit
from .. import runs
from . import mpi_runs, signals, train_mpi, train_words
from .sources import resolve

_TYPES = {"int": int, "float": float, "str": str, "path": str}
_METAVARS = {"int": "N", "float": "X", "str": "NAME", "path": "PATH"}
_DATA_KEYS = ("dataset", "train_file", "test_file", "data_dir", "train_samples", "test_samples")
# What --resume may change: how long and on how many threads the run goes on, and what it prints.
RESUME_FLAGS = ("epochs", "threads")


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


def _read_toml(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    raw = regular_file(path, "config file").read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start}); TOML files are UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: {e}") from None
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{path}: {toml_limit(e)}") from None


def _given_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The run and [network] settings given on the command line, by flag or --set, each checked
    (messages name the flag). The same setting given twice is refused."""
    out: dict[str, Any] = {}
    for table in (RUN, NETWORK):
        for name, setting in table.items():
            value = getattr(args, name, None)
            if setting.flag is not None and value is not None:
                out[name] = setting.check(value, setting.flag)
    for section, name, value in _assignments(args, ("", "network")):
        if name in out:
            flag = (RUN.get(name) or NETWORK[name]).flag or f"--set {name}"
            raise ValueError(f"--set {section + '.' if section else ''}{name} and {flag} both set {name}; give one")
        out[name] = value
    return out


def _assignments(args: argparse.Namespace, sections: tuple[str, ...]) -> list[tuple[str, str, Any]]:
    """The --set assignments to the given sections ("" = the run's own settings), checked."""
    parsed = [parse_assignment(a) for a in getattr(args, "assignments", [])]
    return [p for p in parsed if p[0] in sections]


def resolve_config(args: argparse.Namespace) -> dict[str, Any]:
    """Preset of the dataset, then the TOML file, then command-line flags; every value checked
    against slide.settings, data paths made absolute."""
    file_cfg = _read_toml(args.config) if args.config else {}
    where = f"{args.config}: "
    top = check_table({k: v for k, v in file_cfg.items() if k not in TABLES}, RUN,
                      f"{where}") if file_cfg else {}
    unknown_tables = [k for k in TABLES if k in file_cfg and not isinstance(file_cfg[k], dict)]
    if unknown_tables:
        raise ValueError(f"{where}{unknown_tables[0]} must be a table ([{unknown_tables[0]}]), "
                         f"got {file_cfg[unknown_tables[0]]!r}")
    file_network = check_table(file_cfg.get("network", {}), NETWORK, f"{where}[network] ")
    file_text8 = check_table(file_cfg.get("text8", {}), TEXT8, f"{where}[text8] ")
    file_text8.update({name: value for _, name, value in _assignments(args, ("text8",))})
    flags = _given_flags(args)
    if flags.get("test_file") and not flags.get("train_file"):
        raise ValueError("--test FILE needs --train FILE (a named dataset brings its own test split)")
    if flags.get("train_file") and flags.get("dataset"):
        raise ValueError("--dataset and --train name two different sources of data; give one")
    cfg: dict[str, Any] = {"dataset": "default", "seed": 0}
    for source in (top, flags):
        if source.get("train_file"):
            cfg.pop("dataset", None)
        cfg.update({k: v for k, v in source.items() if k in RUN})
    if (cfg.get("early_stopping") or cfg.get("monitor")) and not cfg.get("validation_split"):
        raise ValueError("early_stopping and monitor (--early-stopping, --monitor) need validation_split "
                         "(--validation-split: the share of training points held out to judge epochs by)")
    if cfg.get("train_file") and not cfg.get("test_file"):
        raise ValueError("--train FILE needs --test FILE as well")
    for key in ("train_file", "test_file", "data_dir"):
        if cfg.get(key):
            cfg[key] = str(Path(cfg[key]).expanduser().resolve())
    from ..datasets import registry

    cfg["network"] = {**file_network, **{k: flags[k] for k in NETWORK if k in flags}}
    cfg["lsh"] = {**file_cfg.get("lsh", {}), **{name: value for _, name, value in _assignments(args, ("lsh",))}}
    if cfg["network"].get("dense") and cfg["network"].get("mode", "dense") != "dense":
        raise ValueError(f"dense (--dense) and mode {cfg['network']['mode']!r} (--mode) contradict each other; "
                         "give one")
    try:
        LSHConfig.from_dict({**registry.SLIDE_PRESET["lsh"], **cfg["lsh"]})
    except ValueError as e:
        raise ValueError(f"{where if args.config else ''}[lsh] {e}") from None
    if file_text8:
        cfg["text8"] = file_text8
    file_skipgram = check_table(file_cfg.get("skipgram", {}), SKIPGRAM, f"{where}[skipgram] ")
    file_skipgram.update({name: value for _, name, value in _assignments(args, ("skipgram",))})
    if file_skipgram:
        cfg["skipgram"] = file_skipgram
    for name, default in defaults(RUN).items():
        cfg.setdefault(name, default)
    if train_words.objective(cfg) == "skipgram":
        train_words.take_preset(cfg, registry.get(cfg["dataset"]).preset)
    elif cfg.get("skipgram"):
        raise ValueError(f"[skipgram] settings {sorted(cfg['skipgram'])} need text8.objective = \"skipgram\" "
                         "(the text8 dataset's default)")
    elif not cfg.get("train_file"):  # a user's files get theirs from the data's shape (apply_shape_preset)
        apply_preset(cfg, registry.get(cfg["dataset"]).preset)
    return cfg


def apply_preset(cfg: dict, preset: dict) -> None:
    """Fill in every network, LSH and schedule setting the user left unset: from `preset`, else
    from the settings table. A mode the user named sets its LSH settings over the preset's (and
    under the user's own [lsh] settings); otherwise the preset's LSH settings decide the mode."""
    given = cfg["network"]
    table_defaults = {k: v for k, v in defaults(NETWORK).items() if k != "mode"}
    cfg["network"] = {**table_defaults, "dense": False, **{k: v for k, v in preset.items() if k in NETWORK},
                      **given}
    mode = given.get("mode")
    if mode == "dense":
        cfg["network"]["dense"] = True
    elif mode is not None and not given.get("dense"):  # a mode the user names wins over a preset's dense output
        cfg["network"]["dense"] = False
    mode_lsh = MODES[mode].lsh if mode else None
    cfg["lsh"] = {**preset["lsh"], **(mode_lsh or {}), **cfg["lsh"]}
    cfg.setdefault("epochs", preset["epochs"])
    cfg.setdefault("batch_size", preset["batch_size"])
    if cfg.get("validation_split") is None and preset.get("validation_split"):
        cfg["validation_split"] = preset["validation_split"]


def apply_shape_preset(cfg: dict, source) -> None:
    """For a user's own files: the preset that fits the data's shape (slide.shape_defaults), said."""
    preset, why = preset_for_shape(source.input_dim, source.output_dim)
    apply_preset(cfg, preset)
    print(f"settings from the data's shape: {why} (flags and --config override any of them)", flush=True)


def build_network(cfg: dict, source, comm: Any = None) -> Network:
    net_cfg = check_table(cfg["network"], NETWORK, "[network] ")
    lsh = None if net_cfg.get("dense") else LSHConfig.from_dict(cfg["lsh"])
    if net_cfg.get("mode", mode_of(lsh)) != mode_of(lsh):
        cause = ("dense output (network.dense = true)" if lsh is None else
                 f"the [lsh] settings (lsh.batch_active = {lsh.batch_active})")
        raise ValueError(f"[network] mode {net_cfg['mode']!r} contradicts {cause}, which trains in mode "
                         f"{mode_of(lsh)!r}; change one of them")
    options = {k: v for k, v in net_cfg.items() if k not in ("dense", "hidden", "mode")}
    net = Network(source.input_dim, source.output_dim, hidden=tuple(net_cfg["hidden"]), lsh=lsh,
                  threads=cfg.get("threads"), seed=cfg["seed"], comm=comm, **options)
    net.vocabulary = getattr(source, "vocabulary", None)  # a text8 model's words travel with it
    return net


def _refuse_changes_on_resume(args: argparse.Namespace) -> None:
    ignored = [s.flag for table in (RUN, NETWORK) for s in table.values()
               if s.flag and s.name not in RESUME_FLAGS and getattr(args, s.name, None) is not None]
    ignored += [flag for flag, given in (("--config", args.config), ("--out", args.out),
                                          ("--overwrite", args.overwrite), ("--set", args.assignments)) if given]
    if ignored:
        raise ValueError(f"--resume continues {args.resume} with the settings it started with; "
                         f"{', '.join(ignored)} cannot change them (only --epochs and --threads can). "
                         "Start a new run with --out to train differently")


def _default_run_dir(title: str) -> Path:
    base = Path("slide-runs") / f"{title}-{time.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = base, 1
    while candidate.exists():  # two runs started within one second
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def main(args: argparse.Namespace) -> int:
    if train_mpi.mpi_ranks() > 1:  # started by mpirun -n N: one network over the job's ranks
        return train_mpi.main(args)
    with contextlib.ExitStack() as hold:  # the run folder's lock (run_lock), held until the command ends
        return _train(args, hold)


def _train(args: argparse.Namespace, hold: contextlib.ExitStack) -> int:
    if args.resume:
        _refuse_changes_on_resume(args)
        run_dir = args.resume
        hold.enter_context(runs.lock_run_dir(run_dir))
        cfg = runs.read_config(run_dir)
        mpi_runs.refuse_mpi_run(run_dir, cfg)
        if train_words.objective(cfg) == "skipgram":
            raise ValueError(f"{run_dir} trained skip-gram word vectors, whose learning rate falls over the whole "
                             "run; such a run does not resume: start it again (its model.npz holds the vectors "
                             "trained before it stopped)")
        flags = _given_flags(args)
        if "epochs" in flags:
            cfg["epochs"] = flags["epochs"]
        check_unchanged(cfg.get("data_files", []))
        source = resolve(cfg)
        if (run_dir / runs.CHECKPOINT).exists():
            check_checkpoint_belongs(run_dir, run_dir / runs.CHECKPOINT, run_dir / runs.CONFIG, cfg,
                                     input_dim=source.input_dim, output_dim=source.output_dim)
            net, pos = runs.load_checkpoint(run_dir, threads=flags.get("threads"))
            print(f"resuming {run_dir} at epoch {pos.epoch + 1}, {pos.samples:,} samples trained", flush=True)
        else:  # killed before its first checkpoint: the seed reproduces the start exactly
            if "threads" in flags:
                cfg["threads"] = flags["threads"]
            net, pos = build_network(cfg, source), None
            print(f"{run_dir} has no checkpoint yet; starting its run from the beginning", flush=True)
        if "epochs" in flags:  # the run now plans this many: `slide info` and later resumes go by it
            runs.write_config(run_dir, {**runs.read_config(run_dir), "epochs": flags["epochs"]})
    else:
        cfg = resolve_config(args)
        run_dir = args.out
        if run_dir is not None:
            hold.enter_context(runs.create_run_dir(run_dir, overwrite=args.overwrite))  # before any data is read
        if train_words.objective(cfg) == "skipgram":
            if run_dir is None:
                run_dir = _default_run_dir(cfg["dataset"])
                hold.enter_context(runs.create_run_dir(run_dir))
            return train_words.main(cfg, run_dir, quiet=args.quiet)
        source = resolve(cfg)
        if cfg.get("train_file"):
            apply_shape_preset(cfg, source)
        net = build_network(cfg, source)
        if run_dir is None:
            run_dir = _default_run_dir(source.title)
            hold.enter_context(runs.create_run_dir(run_dir))
        cfg["resolved_threads"] = net.threads
        cfg["data_files"] = [fingerprint(p) for p in source.files]
        runs.write_config(run_dir, cfg)
        pos = None
    stream = source.make_stream(net, cfg["seed"])
    eval_every = cfg.get("eval_every") or max(cfg["batch_size"], stream.samples_per_epoch // 4)
    print(f"{net}, {net.memory_bytes / 2**30:.2f} GiB; run folder {run_dir}", flush=True)
    settings = runs.RunSettings(epochs=cfg["epochs"], batch_size=cfg["batch_size"], eval_every=eval_every,
                                eval_samples=cfg["eval_samples"], checkpoint_every=cfg["checkpoint_every"],
                                final_eval_samples=cfg.get("final_eval_samples"),
                                on_divergence=cfg.get("on_divergence", "stop"), progress=not args.quiet,
                                early_stopping=cfg.get("early_stopping"), monitor=cfg.get("monitor", "P@1"),
                                # runs from before these settings existed resume with their defaults
                                eval_budget=cfg.get("eval_budget", RUN["eval_budget"].default),
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
    if final.get("neighbour_weight") is not None:
        print(f"predictions fuse the {net.neighbours} nearest training points' labels, weight "
              f"{final['neighbour_weight']:g}" + (" (the best on validation)" if source.validation else ""), flush=True)
    if final.get("best_epoch") is not None:
        print(f"final model: epoch {final['best_epoch']}, the best on validation ({settings.monitor})", flush=True)
    print("test (exact, {:,} points): ".format(final["test_points"]) +
          ", ".join(f"{k} {final[k]:.4f}" for k in final if k.startswith("P@")), flush=True)
    print(f"saved {run_dir / runs.MODEL}")
    print(_time_report(final), flush=True)
    return 0


def _time_report(final: dict) -> str:
    """Where the run's time went: training, and what it spent besides."""
    train, ev, ck, end = (final["train_seconds"], final["eval_seconds"], final["checkpoint_seconds"],
                          final["model_seconds"])
    total = train + ev + ck + end
    share = lambda x: f"{x / total:.0%}" if total > 0 else "-"  # noqa: E731
    return (f"time: training {train:,.1f}s ({share(train)}), evaluation during training {ev:,.1f}s "
            f"({final['evaluations'] - 1} run, {share(ev)}), checkpoints {ck:,.1f}s ({final['checkpoints']} "
            f"written, {share(ck)}), final evaluation and model.npz {end:,.1f}s ({share(end)})")
