"""Learning-rate schedules: a multiplier of the base rate as a function of training progress."""

from __future__ import annotations

import math
from typing import Callable, Union

Schedule = Union[str, Callable[[int, int], float]]


def lr_multiplier(schedule: Schedule, step: int, total_steps: int, warmup: float = 0.0) -> float:
    """Multiplier for optimizer step `step` (0-based) out of `total_steps`.

    "constant" keeps the rate; "linear" decays it linearly to 10%; "cosine" follows a half cosine
    to 10%; a callable gets (step, total_steps) and returns the multiplier. With `warmup` > 0 the
    first warmup x total_steps steps also rise linearly from 1/warmup_steps to 1.
    """
    warmup_steps = warmup * total_steps
    ramp = min(1.0, (step + 1) / warmup_steps) if warmup_steps >= 1 else 1.0
    return ramp * _schedule_multiplier(schedule, step, total_steps)


def check_warmup(warmup: float) -> None:
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float)) or not 0.0 <= warmup < 1.0:
        raise ValueError(f"lr_warmup must be a share of the steps in [0, 1), got {warmup!r}")


def _schedule_multiplier(schedule: Schedule, step: int, total_steps: int) -> float:
    if callable(schedule):
        return float(schedule(step, total_steps))
    progress = min(step / max(total_steps, 1), 1.0)
    if schedule == "constant":
        return 1.0
    if schedule == "linear":
        return 1.0 - 0.9 * progress
    if schedule == "cosine":
        return 0.1 + 0.45 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"lr_schedule must be 'constant', 'linear', 'cosine' or a callable, got {schedule!r}")


def check_schedule(schedule: Schedule) -> None:
    if not callable(schedule):
        lr_multiplier(schedule, 0, 1)
