"""`Network.partial_fit`: one pass over a piece of data, in its order, continuing where training
stands; the pieces add up to the vote's memory."""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from ..callbacks import CallbackList
from ..model.checks import check_int
from ..model.errors import TrainingInterrupted
from ..neighbours import NeighbourMemory
from .loop import TrainingLoop
from .position import Position
from .sources import in_memory_source

log = logging.getLogger("slide")


def partial_fit(net: Any, X: Any, Y: Any, *, batch_size: int = 128, callbacks: Optional[Sequence[Any]] = None) -> Any:
    """Train `net` on one pass over X, Y (see `Network.partial_fit`); returns `net`."""
    check_int("batch_size", batch_size, 1)
    if net.lr_schedule_steps is None and (net.lr_schedule != "constant" or net.lr_warmup):
        raise ValueError(f"partial_fit with lr_schedule={net.lr_schedule!r} (or lr_warmup) needs "
                         "lr_schedule_steps: the number of optimizer steps the schedule spans across calls")
    hooks = CallbackList(callbacks)
    data = net.ranks.on_every_rank(net.prepare, X, Y)
    if net.ranks.total(len(data)) == 0:
        raise ValueError("X has no rows to train on")
    rank_batch, steps = net.ranks.rank_batches(len(data), batch_size)
    on_batch = (lambda step, logs: hooks.call("on_batch_end", net, step, logs)) if hooks.wants_batches() else None
    loop = TrainingLoop(net, in_memory_source(data, net.seed, shuffle=False), epochs=1, batch_size=rank_batch,
                        segment_steps=steps, progress=False, on_batch=on_batch)
    hooks.call("on_train_begin", net)
    net.interrupted = False
    try:
        for _ in loop.run(Position()):
            pass
    except TrainingInterrupted:
        net.interrupted = True
        log.warning("partial_fit interrupted by the user; the model is intact")
    if net.neighbours and net.comm is None:  # the pieces add up to the memory of everything trained on
        net.memory = net.memory.extended(data.X, data.Y) if net.memory else NeighbourMemory(data.X, data.Y)
    hooks.call("on_train_end", net, None)
    return net
