"""One call at a time per network: the engine's per-thread scratch is shared across calls."""

from __future__ import annotations

import functools


def one_call_at_a_time(method):
    """Refuse a call from a second Python thread while one is running: the worker threads' scratch
    is shared across calls, so two at once would corrupt memory. The same thread may re-enter (a
    `fit` callback may call `predict`)."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(f"Network.{method.__name__} was called while another thread runs "
                               f"Network.{self._busy_with} on the same network; a Network runs one call at a "
                               "time: wait for that call, or give each thread its own Network")
        outermost = self._busy_with is None
        if outermost:
            self._busy_with = method.__name__
        try:
            return method(self, *args, **kwargs)
        finally:
            if outermost:
                self._busy_with = None
            self._busy.release()

    return guarded
