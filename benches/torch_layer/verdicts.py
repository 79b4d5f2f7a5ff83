"""The layer issue's targets, judged from a run's timelines (so a result file is judged by the same
code that renders it): ExtremeOutput's samples/s against the full softmax's; the training time it
takes to reach the P@1 sampled softmax ends with (and, since that last value can be past sampled
softmax's peak, the time to reach its peak too); and its lowest P@1 margin over either at equal
training time, read at every checkpoint of either curve where both have one on each side."""

from __future__ import annotations

from typing import Optional

import numpy as np


def p1_at(timeline: list, t: float) -> Optional[float]:
    """A system's checkpoint P@1 at training time t, linear between its checkpoints; None outside them."""
    times = [c["train_seconds"] for c in timeline]
    if not times or t < times[0] or t > times[-1]:
        return None
    return float(np.interp(t, times, [c["P@1"] for c in timeline]))


def _time_to(timeline: list, goal: float) -> Optional[float]:
    return next((c["train_seconds"] for c in timeline if c["P@1"] >= goal), None)


def verdicts(results: dict) -> dict:
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
    lowest = None
    for name, other in (("sampled", sampled), ("full", full)):
        if not other:
            continue
        times = sorted({c["train_seconds"] for c in ext["timeline"] + other["timeline"]})
        for t in times:
            mine, theirs = p1_at(ext["timeline"], t), p1_at(other["timeline"], t)
            if mine is not None and theirs is not None and (lowest is None or mine - theirs < lowest[0]):
                lowest = (mine - theirs, t, name)
    out["lowest_margin_at_equal_time"] = None if lowest is None else round(lowest[0], 4)
    if lowest is not None:
        out["lowest_margin_seconds"], out["lowest_margin_against"] = lowest[1], lowest[2]
    return out
