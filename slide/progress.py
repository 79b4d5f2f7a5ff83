"""Training progress: a tqdm bar on a terminal; elsewhere (a log file, a pipe, a batch job) one
plain line every 10% of an epoch, because a bar's carriage-return frames turn a log into
megabytes of redraws."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def duration(seconds: float) -> str:
    """'6 ms', '2.5 s', '1,234.5 s': a small run's epochs and evaluations take milliseconds, which
    whole seconds or tenths print as '0s' (an evaluation budget spent on nothing, it seemed)."""
    return f"{seconds * 1000:,.0f} ms" if seconds < 1 else f"{seconds:,.1f} s"


class LineProgress:
    """The part of tqdm's interface training uses (update, set_postfix, close), as whole lines."""

    def __init__(self, total: int, desc: str, stream: TextIO, steps: int = 10) -> None:
        self.total, self.desc, self.stream = max(int(total), 1), desc, stream
        self.done, self.postfix, self.start = 0, {}, time.perf_counter()
        self._next = self.total / steps
        self._step = self.total / steps
        self._closed = False

    def update(self, n: int) -> None:
        self.done += n
        if self.done >= self._next and self.done < self.total:
            self._line()
            while self._next <= self.done:
                self._next += self._step

    def set_postfix(self, **values) -> None:
        self.postfix = values

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._line()

    def _line(self) -> None:
        seconds = time.perf_counter() - self.start
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items() if k != "samples_s")
        self.stream.write(f"{self.desc}: {100 * min(self.done, self.total) / self.total:3.0f}% "
                          f"({self.done:,}/{self.total:,} samples, {duration(seconds)}, "
                          f"{self.done / max(seconds, 1e-9):,.0f} samples/s{extra})\n")
        self.stream.flush()


def progress_bar(total: int, desc: str, enabled: bool, stream: Optional[TextIO] = None):
    """A progress display for `total` samples, or None when disabled."""
    if not enabled:
        return None
    stream = stream or sys.stderr
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return LineProgress(total, desc, stream)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="sample", unit_scale=True, leave=True, dynamic_ncols=True, file=stream)
