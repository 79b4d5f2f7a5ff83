"""SIGTERM, which schedulers, `timeout` and container stops send, is handled like Ctrl-C: it
raises KeyboardInterrupt at the next Python instruction (between training batches), so `slide
train` saves its checkpoint and exits; the exit code (128 + signal) says which signal it was."""

from __future__ import annotations

import signal
import threading
from typing import Optional

_received: Optional[int] = None


def handle_sigterm() -> None:
    global _received
    _received = None
    if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame) -> None:
    global _received
    _received = signum
    raise KeyboardInterrupt


def what_stopped() -> str:
    return "terminated (SIGTERM)" if _received == signal.SIGTERM else "interrupted"


def exit_code() -> int:
    return 128 + (_received or signal.SIGINT)
