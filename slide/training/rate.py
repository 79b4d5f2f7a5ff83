"""The learning rate of each step: the network's base rate times its schedule's multiplier."""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..schedules import lr_multiplier


def rate_schedule(net: Any, steps_of_call: Optional[int]) -> Callable[[int], Callable[[int], float]]:
    """first step -> (batch index -> rate), for a piece of training that starts `first` steps into
    its call of `steps_of_call` steps. With `net.lr_schedule_steps` one schedule runs over the
    network's whole life instead (its own step counter, across calls and save/load); without a
    known length (partial_fit, a one-pass iterator) the schedule is constant. The base rate is
    read when a batch starts, so lowering `net.learning_rate` (a run's back-off) takes effect."""

    def from_step(first: int) -> Callable[[int], float]:
        if net.lr_schedule_steps is not None:
            start, total = net._core.step, net.lr_schedule_steps
        else:
            start, total = first, steps_of_call or 1
        return lambda b: net.learning_rate * lr_multiplier(net.lr_schedule, start + b, total, net.lr_warmup)

    return from_step
