"""Running a producer one or more items ahead on a background thread, so reading and decoding the
next piece of data overlaps the work on the current one (the heavy calls release the GIL)."""

from __future__ import annotations

import queue
import threading
from typing import Iterator, TypeVar

T = TypeVar("T")

_DONE = object()


def prefetched(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """Yield `items` in order while a background thread produces up to `depth` items ahead. An
    exception in the producer is raised here, at the item it failed on; closing the generator early
    (a break, an exception, Ctrl-C) stops the producer without waiting for the rest."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    ready: "queue.Queue[object]" = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        ready.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ready.put((_DONE, None))
        except BaseException as e:  # handed to the consumer, which raises it
            ready.put((_DONE, e))

    worker = threading.Thread(target=produce, name="slide-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item, error = ready.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting on a full queue
            try:
                ready.get_nowait()
            except queue.Empty:
                pass
            worker.join(timeout=0.05)
