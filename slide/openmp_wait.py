"""How long slide's OpenMP threads spin at the end of a parallel region before they sleep.

A training step runs several short parallel regions, and libgomp's default is to spin 300,000
times at each barrier before sleeping. On a quiet machine that hides the wake-up latency; on a
machine where another process also wants the cores (a shared server, two jobs at once) a spinning
thread holds a core the thread with the remaining work needs, so every barrier waits for a
scheduler slice. SPIN_COUNT is the compromise measured in benches/openmp_wait.py (2 cores): beside
two busy processes libgomp's default trained 3.3-7.6x slower than SPIN_COUNT, and on the quiet
machine the two took the same time within the runs' spread; shorter waits cost the quiet machine
(the passive policy 1.6x on Enron's tiny steps, a spin count of 1,000 1.1x on debian-deps).

libgomp reads its settings once, when it is loaded, so they are set around the first import of
the engine and then the environment is put back: other libraries' OpenMP runtimes and the
process's children see the user's environment, not slide's. A user who sets OMP_WAIT_POLICY or
GOMP_SPINCOUNT keeps their choice. When another library loaded its libgomp first (PyTorch's
wheels ship one under the same name, so `import torch` before `import slide` does), the engine
shares that runtime and its settings: set GOMP_SPINCOUNT before starting Python to choose them.
"""

from __future__ import annotations

import os
from importlib import import_module
from types import ModuleType

SPIN_COUNT = 10_000
USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def import_engine() -> ModuleType:
    """slide._core, its OpenMP runtime loaded with slide's spin count unless the user set one."""
    if any(name in os.environ for name in USER_SETTINGS):
        return import_module("slide._core")
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    try:
        return import_module("slide._core")
    finally:
        del os.environ["GOMP_SPINCOUNT"]
