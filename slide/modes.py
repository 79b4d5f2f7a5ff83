"""The named ways the output layer trains. A mode is a name for LSH settings (or for none: dense);
`Network(mode=...)`, `slide train --mode` and run.toml's `network.mode` all resolve through here,
and a network's mode is read back from its LSH settings, so the two cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .config import LSHConfig
from .settings import NETWORK


@dataclass(frozen=True)
class TrainingMode:
    name: str
    doc: str
    lsh: Optional[dict[str, Any]]  # what the mode sets on top of LSHConfig's defaults; None: dense

    def lsh_config(self, **overrides: Any) -> Optional[LSHConfig]:
        """The mode's LSH settings with `overrides` on top (None for the dense mode)."""
        if self.lsh is None:
            return None
        return LSHConfig(**{**self.lsh, **overrides})


# batch: measured fastest and most accurate on Amazon-670K-shaped data (docs/benchmarks/baselines.md): 1,024
# LSH candidates cover the batch's hard negatives, 6,000 neurons in all make the GEMMs efficient,
# and rehashing every 25,600 samples keeps table upkeep off the critical path. The intervals then
# double after each use (SLIDE's decaying schedule): upkeep was 27% of slide.torch.ExtremeOutput's
# step at 670,091 outputs. On the real suite's widest sets it changes little (the network alone, two
# runs each side by side: debian-deps 2.07-2.24 s an epoch against 2.13-2.23 s, P@1 / P@5
# 0.661-0.663 / 0.329-0.333 against 0.662-0.663 / 0.333-0.334; debian-rdeps 1.19-1.21 s against
# 1.26-1.36 s, 0.187 / 0.079 against 0.184 / 0.077).
MODES: dict[str, TrainingMode] = {
    "batch": TrainingMode(
        "batch", "the batch shares one active set: its labels, the LSH candidates its samples retrieved most "
        "often and random neurons, trained as matrix products",
        dict(batch_active=1024, min_active=6000, rehash_every=25_600, schedule_growth=2.0)),
    "sample": TrainingMode(
        "sample", "SLIDE: each sample trains on its own LSH-retrieved active set", dict(batch_active=0)),
    "dense": TrainingMode("dense", "full softmax over every output", None),
}
DEFAULT_MODE: str = NETWORK["mode"].default


def check_mode(mode: Any) -> TrainingMode:
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return MODES[mode]


def mode_of(lsh: Optional[LSHConfig]) -> str:
    """The mode that LSH settings train in."""
    if lsh is None:
        return "dense"
    return "batch" if lsh.batch_active > 0 else "sample"
