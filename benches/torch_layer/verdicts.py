"""The layer issue's targets, judged from a run's timelines (so a result file is judged by the same
code that renders it): ExtremeOutput's samples/s against the full softmax's; the training time it
takes to reach the P@1 sampled softmax ends with (and, since that last value can be past sampled
softmax's peak, the time to reach its peak too); and its lowest P@1 margin over either at equal
training time, read at every checkpoint of either curve where both have one on each side.

The lowest margin is also given twice more, to say what kind of shortfall it is: read only up to
the first of the two curves' peaks (learning slower) and only after it (one of them over-fitting
sooner: the faster system reaches its later epochs at an earlier time). With the number of test
points a checkpoint scores, each margin carries its standard error (two independent binomial
proportions; the systems score the same points, so this overstates it a little)."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np


def p1_at(timeline: list, t: float) -> Optional[float]:
    """A system's checkpoint P@1 at training time t, linear between its checkpoints; None outside them."""
    times = [c["train_seconds"] for c in timeline]
    if not times or t < times[0] or t > times[-1]:
        return None
    return float(np.interp(t, times, [c["P@1"] for c in timeline]))


def peak_seconds(timeline: list) -> float:
    """The training time of a curve's first best checkpoint."""
    best = max(c["P@1"] for c in timeline)
    return next(c["train_seconds"] for c in timeline if c["P@1"] == best)


def margin_standard_error(p: float, q: float, test_points: int) -> float:
    return math.sqrt((p * (1 - p) + q * (1 - q)) / test_points)


def _time_to(timeline: list, goal: float) -> Optional[float]:
    return next((c["train_seconds"] for c in timeline if c["P@1"] >= goal), None)


def _margins(ext: list, other: list) -> list[tuple[float, float, float, float]]:
    """(margin, time, ExtremeOutput's P@1, the other's) at every checkpoint time inside both curves."""
    out = []
    for t in sorted({c["train_seconds"] for c in ext + other}):
        mine, theirs = p1_at(ext, t), p1_at(other, t)
        if mine is not None and theirs is not None:
            out.append((mine - theirs, t, mine, theirs))
    return out


def verdicts(results: dict, test_points: Optional[int] = None) -> dict:
    """The targets' figures from `results` (system -> its result with a timeline); `test_points`,
    the test points each checkpoint scores, adds the margins' standard errors."""
    ext, sampled, full = results["extreme"], results.get("sampled"), results.get("full")
    out: dict = {}
    if full:
        out["samples_per_second_vs_full"] = round(ext["samples_per_second"] / full["samples_per_second"], 2)
    if sampled:
        for what, goal in (("final", sampled["timeline"][-1]["P@1"]),
                           ("peak", max(c["P@1"] for c in sampled["timeline"]))):
            reached = _time_to(ext["timeline"], goal)
            out[f"sampled_{what}_p1"] = goal
            out[f"seconds_to_sampled_{what}_p1"] = reached
            out[f"time_share_of_sampled_{what}" if what == "peak" else "time_share_of_sampled"] = (
                None if reached is None else round(reached / sampled["train_seconds"], 3))
    lowest: dict[str, Optional[tuple]] = {"": None, "_before_peak": None, "_after_peak": None}
    for name, other in (("sampled", sampled), ("full", full)):
        if not other:
            continue
        first_peak = min(peak_seconds(ext["timeline"]), peak_seconds(other["timeline"]))
        for margin, t, mine, theirs in _margins(ext["timeline"], other["timeline"]):
            for part in ("", "_before_peak" if t <= first_peak else "_after_peak"):
                if lowest[part] is None or margin < lowest[part][0]:
                    lowest[part] = (margin, t, name, mine, theirs)
    for part, found in lowest.items():
        key = f"lowest_margin{part}_at_equal_time"
        out[key] = None if found is None else round(found[0], 4)
        if found is None:
            continue
        out[f"lowest_margin{part}_seconds"], out[f"lowest_margin{part}_against"] = found[1], found[2]
        if test_points:
            out[f"lowest_margin{part}_standard_error"] = round(margin_standard_error(found[3], found[4], test_points), 4)
    return out
