"""Whether a run folder's checkpoint belongs to its config.json. `--resume` builds nothing from
config.json when a checkpoint is there: the network comes from the checkpoint. One copied in from
another run (`cp other/checkpoint.npz run/`) would train a different network from the one
config.json, `slide info` and the data say, without a word; so the two are compared first."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

from .config import LSHConfig
from .model_file import read_header

# Settings a run's own checkpoint may hold differently from config.json: the neighbour weight is
# tuned at the end of a run, threads change with `--resume --threads`, and the learning rate is
# lowered by divergence back-offs (checked on its own, in _learning_rate_differs).
_MAY_CHANGE = ("neighbour_weight", "rerank_weight", "threads", "learning_rate")


def expected_network(cfg: dict, input_dim: int, output_dim: int) -> dict[str, Any]:
    """The network config.json describes, in Network.get_config's terms, as far as it says."""
    network = cfg.get("network") if isinstance(cfg.get("network"), dict) else {}
    expected: dict[str, Any] = {"input_dim": input_dim, "output_dim": output_dim}
    if "hidden" in network:
        hidden = network["hidden"]
        expected["hidden"] = list(hidden) if isinstance(hidden, (list, tuple)) else hidden
    if network.get("dense"):
        expected["lsh"] = None
    elif isinstance(cfg.get("lsh"), dict):
        expected["lsh"] = LSHConfig.from_dict(cfg["lsh"]).to_dict()
    expected.update({k: v for k, v in network.items() if k not in ("dense", "hidden", "mode", *_MAY_CHANGE)})
    if "seed" in cfg:
        expected["seed"] = cfg["seed"]
    return expected


def first_difference(saved: dict, cfg: dict, *, input_dim: int, output_dim: int
                     ) -> Optional[tuple[str, Any, Any]]:
    """(setting, the checkpoint's value, config.json's) for the first setting on which a
    checkpoint's network config `saved` and the run's config `cfg` disagree; None when they agree."""
    for name, want in expected_network(cfg, input_dim, output_dim).items():
        got = saved.get(name)
        if name == "lsh" and isinstance(got, dict) and isinstance(want, dict):
            for key in want:
                if got.get(key) != want[key]:
                    return f"lsh.{key}", got.get(key), want[key]
        elif got != want:
            return name, got, want
    network = cfg.get("network") if isinstance(cfg.get("network"), dict) else {}
    if "learning_rate" in network and _learning_rate_differs(saved.get("learning_rate"), network["learning_rate"]):
        return "learning_rate", saved.get("learning_rate"), network["learning_rate"]
    return None


def _learning_rate_differs(saved: Any, configured: Any) -> bool:
    """Whether `saved` is not `configured` lowered by up to the run's divergence back-offs."""
    from .runs import RunSettings

    if not all(isinstance(x, (int, float)) for x in (saved, configured)):
        return saved != configured
    return not any(math.isclose(saved, configured * RunSettings.backoff_factor ** n, rel_tol=1e-9)
                   for n in range(RunSettings.max_backoffs + 1))


def check_checkpoint_belongs(run_dir: Path, checkpoint: Path, config: Path, cfg: dict, *, input_dim: int,
                             output_dim: int) -> None:
    """ValueError naming both files and the first differing setting when `checkpoint` holds
    another network than `config` (the run's config.json, read into `cfg`) and the data say."""
    saved = read_header(checkpoint)["config"]  # its own errors name the checkpoint
    try:
        difference = first_difference(saved, cfg, input_dim=input_dim, output_dim=output_dim)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{config} and {checkpoint} cannot be compared: {e}") from None
    if difference is not None:
        name, got, want = difference
        raise ValueError(f"{checkpoint} does not belong to the run in {run_dir}: its network has {name} = {got!r}, "
                         f"where {config} (and the data) say {want!r}; was it copied from another run? Resume the "
                         "run it came from, or remove it to start this run from the beginning")
