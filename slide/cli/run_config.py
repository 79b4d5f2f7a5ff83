"""A `slide train` run's configuration: the dataset's preset, then the --config TOML file, then
the command line's flags and --set assignments, each value checked against slide.settings; and
the network it describes. Shared by one process's runs and MPI runs (train.py, train_mpi.py)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ..config import LSHConfig
from ..epoch_average import NO_AVERAGING
from ..modes import MODES, mode_of
from ..network import Network
from ..paths import regular_file
from ..settings import NETWORK, RUN, SKIPGRAM, TABLES, TEXT8, check_table, defaults, parse_assignment, \
    toml_limit
from ..shape_defaults import held_out_settings, preset_for_shape
from . import train_words

# What --resume may change: how long and on how many threads the run goes on, and what it prints.
RESUME_FLAGS = ("epochs", "threads")


def read_toml(path: Path) -> dict:
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


def given_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The run and [network] settings given on the command line, by flag or --set, each checked
    (messages name the flag). The same setting given twice is refused."""
    out: dict[str, Any] = {}
    for table in (RUN, NETWORK):
        for name, setting in table.items():
            value = getattr(args, name, None)
            if setting.flag is not None and value is not None:
                out[name] = setting.check(value, setting.flag)
    for section, name, value in assignments(args, ("", "network")):
        if name in out:
            flag = (RUN.get(name) or NETWORK[name]).flag or f"--set {name}"
            raise ValueError(f"--set {section + '.' if section else ''}{name} and {flag} both set {name}; give one")
        out[name] = value
    return out


def assignments(args: argparse.Namespace, sections: tuple[str, ...]) -> list[tuple[str, str, Any]]:
    """The --set assignments to the given sections ("" = the run's own settings), checked."""
    parsed = [parse_assignment(a) for a in getattr(args, "assignments", [])]
    return [p for p in parsed if p[0] in sections]


def resolve_config(args: argparse.Namespace) -> dict[str, Any]:
    """Preset of the dataset, then the TOML file, then command-line flags; every value checked
    against slide.settings, data paths made absolute."""
    file_cfg = read_toml(args.config) if args.config else {}
    where = f"{args.config}: "
    top = check_table({k: v for k, v in file_cfg.items() if k not in TABLES}, RUN,
                      f"{where}") if file_cfg else {}
    unknown_tables = [k for k in TABLES if k in file_cfg and not isinstance(file_cfg[k], dict)]
    if unknown_tables:
        raise ValueError(f"{where}{unknown_tables[0]} must be a table ([{unknown_tables[0]}]), "
                         f"got {file_cfg[unknown_tables[0]]!r}")
    file_network = check_table(file_cfg.get("network", {}), NETWORK, f"{where}[network] ")
    file_text8 = check_table(file_cfg.get("text8", {}), TEXT8, f"{where}[text8] ")
    file_text8.update({name: value for _, name, value in assignments(args, ("text8",))})
    flags = given_flags(args)
    if flags.get("test_file") and not flags.get("train_file"):
        raise ValueError("--test FILE needs --train FILE (a named dataset brings its own test split)")
    if flags.get("train_file") and flags.get("dataset"):
        raise ValueError("--dataset and --train name two different sources of data; give one")
    cfg: dict[str, Any] = {"dataset": "default", "seed": 0}
    for source in (top, flags):
        if source.get("train_file"):
            cfg.pop("dataset", None)
        cfg.update({k: v for k, v in source.items() if k in RUN})
    if cfg.get("train_file") and not cfg.get("test_file"):
        raise ValueError("--train FILE needs --test FILE as well")
    for key in ("train_file", "test_file", "data_dir"):
        if cfg.get(key):
            cfg[key] = str(Path(cfg[key]).expanduser().resolve())
    from ..datasets import registry

    cfg["network"] = {**file_network, **{k: flags[k] for k in NETWORK if k in flags}}
    cfg["lsh"] = {**file_cfg.get("lsh", {}), **{name: value for _, name, value in assignments(args, ("lsh",))}}
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
    file_skipgram.update({name: value for _, name, value in assignments(args, ("skipgram",))})
    if file_skipgram:
        cfg["skipgram"] = file_skipgram
    for name, default in defaults(RUN).items():
        cfg.setdefault(name, default)
    if train_words.objective(cfg) == "skipgram":
        train_words.take_preset(cfg, registry.get(cfg["dataset"]).preset)
        check_validation(cfg)
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
    for key, value in held_out_settings(preset, cfg.get("validation_split")).items():
        if cfg.get(key) is None:
            cfg[key] = value
    check_validation(cfg)


def check_validation(cfg: dict) -> None:
    """Early stopping and a monitor need held-out points: checked once the preset (a named
    dataset's, or for a user's files the one their shape picks) has said whether it holds some out."""
    if (cfg.get("early_stopping") or cfg.get("monitor") or cfg.get("averaging") not in (None, NO_AVERAGING)) \
            and not cfg.get("validation_split"):
        raise ValueError("early_stopping, monitor and averaging (--early-stopping, --monitor, --averaging) need "
                         "validation_split "
                         "(--validation-split: the share of training points held out to judge epochs by)")


def apply_shape_preset(cfg: dict, source) -> None:
    """For a user's own files: the preset that fits the data's shape (slide.shape_defaults), said."""
    preset, why = preset_for_shape(source.input_dim, source.output_dim, getattr(source, "train_points", None),
                                   getattr(source, "points_a_label", None))
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


def refuse_changes_on_resume(args: argparse.Namespace) -> None:
    ignored = [s.flag for table in (RUN, NETWORK) for s in table.values()
               if s.flag and s.name not in RESUME_FLAGS and getattr(args, s.name, None) is not None]
    ignored += [flag for flag, given in (("--config", args.config), ("--out", args.out),
                                          ("--overwrite", args.overwrite), ("--set", args.assignments)) if given]
    if ignored:
        raise ValueError(f"--resume continues {args.resume} with the settings it started with; "
                         f"{', '.join(ignored)} cannot change them (only --epochs and --threads can). "
                         "Start a new run with --out to train differently")


def default_run_dir(title: str) -> Path:
    base = Path("slide-runs") / f"{title}-{time.strftime('%Y%m%d-%H%M%S')}"
    candidate, n = base, 1
    while candidate.exists():  # two runs started within one second
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate
