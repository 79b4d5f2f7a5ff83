"""The memory a batch size needs, checked when training starts: a network's own estimate is made
when it is built, before any batch size is known (for batches of up to ESTIMATE_BATCH), but the
batch workspace of a batch-shared or dense output layer grows with the batch (its logits are batch
x 8,192 floats a chunk), so a batch of a million would pass that check and then fail in the engine
with std::bad_alloc. Larger batches are checked here, against what is still free, before a step."""

from __future__ import annotations

from typing import Any

from . import memory
from ._core import estimate_memory
from .model.engine_config import engine_config

ESTIMATE_BATCH = 1024  # the batch size a network's own estimate allows for (fit's default is 128)


def check_batch_fits(net: Any, batch_size: int, rows: int) -> None:
    """MemoryError (unless SLIDE_MEMORY_CHECK=0) when training `net` on `rows` rows in batches of
    `batch_size` needs more workspace than is available now. The engine sizes the workspace by the
    rows a step really has, so a batch size above the data's rows costs only those; each larger
    step is checked once."""
    step = min(int(batch_size), int(rows))
    if step <= getattr(net, "_batch_memory_checked", ESTIMATE_BATCH):
        return
    config = engine_config(net)
    # The workspace alone: the network's arrays are allocated already, so free memory counts them.
    one, full = estimate_memory(config, 1), estimate_memory(config, step)
    need = {k: max(0, int(full[k]) - int(one[k])) for k in ("parameters", "lsh", "scratch", "total")}
    what = f"training in batches of {batch_size:,}" + (f" ({step:,} rows at once here)" if step < batch_size else "")
    memory.check_fits(need, what + ", the output layer's workspace for a step,",
                      announce=net.comm is None or net.comm.rank == 0,
                      advice="Use a smaller batch size (--batch-size, fit's batch_size)")
    net._batch_memory_checked = step
