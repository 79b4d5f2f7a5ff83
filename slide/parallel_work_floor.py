"""The work below which a training step runs on one thread (cpp/train/step_team.h).

A training step opens a dozen or so short OpenMP regions. On a quiet machine their forks and joins
cost little; where another process holds one of the cores, a join can wait a whole scheduler slice
for a thread that was descheduled. So a step whose batch costs fewer multiply-adds in its forward
pass than the floor runs on one thread, whatever `threads` says, as BLAS libraries run a small
product on one thread. The default, 100,000, is where one thread stops
being as fast as two on a quiet machine (on Medical's network, by script: 60,000 took 0.98x the
split time on one thread, 120,000 1.05x, 240,000 1.3x): below it one thread costs nothing there,
and beside busy processes it is many times faster (`python -m benches.step_team`,
docs/benchmarks/engine.md). Every set of the real suite trains above it.

On a shared machine whose other jobs keep the cores busy, a higher floor trades some of the quiet
machine's speed for steadiness: the environment variable SLIDE_PARALLEL_WORK_FLOOR, read when
slide is imported, sets the floor for the process (0 splits every step, as slide did before it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType
from typing import Optional

VARIABLE = "SLIDE_PARALLEL_WORK_FLOOR"
MAX_FLOOR = 2**63 - 1  # the engine counts work in signed 64-bit integers


def floor_from_environment(environ: Mapping[str, str] = os.environ) -> Optional[int]:
    """The floor the environment asks for, or None when it sets none; ValueError if it is not a
    whole number from 0 to MAX_FLOOR in ASCII digits."""
    value = environ.get(VARIABLE, "").strip()
    if not value:
        return None
    floor = int(value) if value.isascii() and value.isdigit() else -1  # no sign, "1_000" or "1e6"
    if not 0 <= floor <= MAX_FLOOR:
        raise ValueError(f"{VARIABLE}={environ[VARIABLE]!r}: expected a whole number of multiply-adds from 0 to "
                         f"{MAX_FLOOR} (0 splits every training step over the threads)")
    return floor


def apply_environment(core: ModuleType) -> None:
    """Sets the engine's floor from the environment, if it sets one."""
    floor = floor_from_environment()
    if floor is not None:
        core.set_parallel_work_floor(floor)
