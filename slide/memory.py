"""How much memory a network will take, and whether this machine has it, checked before anything
is allocated: a configuration that cannot fit fails with a MemoryError that says why, instead of
the kernel's OOM killer ending the process half-way through allocating."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Optional

log = logging.getLogger("slide.memory")  # the CLI shows its INFO lines: the estimate before allocation

_CGROUP_FILES = (  # (limit, usage): cgroup v2, then v1
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _read_int(path: str) -> Optional[int]:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" = no limit


def _address_space_room() -> Optional[int]:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return max(0, soft - int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_bytes() -> tuple[Optional[int], str]:
    """Memory this process can still take: MemAvailable from /proc/meminfo, lowered to the
    address-space limit and the cgroup's remaining limit when there are any. (None, reason) when
    none can be read."""
    best, source = None, "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                best, source = int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
                break
    except (OSError, ValueError, IndexError):
        pass
    address_room = _address_space_room()
    if address_room is not None and (best is None or address_room < best):
        best, source = address_room, "the address-space limit (ulimit -v / prlimit --as) less what is mapped"
    for limit_file, usage_file in _CGROUP_FILES:
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and usage is not None and limit < 1 << 60:
            room = max(0, limit - usage)
            if best is None or room < best:
                best, source = room, f"the cgroup limit in {limit_file} less current usage"
            break
    return best, source


def skipgram_estimate(vocab: int, dim: int, threads: int) -> dict:
    """Bytes a skip-gram model takes (slide.SkipGram), in check_fits's terms: its two float32
    vector tables; per word, the engine's counts, alias table and construction scratch (about 50
    bytes) and the Python vocabulary (a str and a dict entry, about 200); per thread, a few vectors."""
    parameters = 2 * vocab * dim * 4
    scratch = vocab * 256 + threads * dim * 16
    return {"parameters": parameters, "lsh": 0, "scratch": scratch, "total": parameters + scratch}


def check_fits(estimate: dict, what: str, *, announce: bool = True, advice: Optional[str] = None) -> None:
    """Log the estimate (unless not `announce`: an MPI rank other than 0, so a job logs it once);
    raise MemoryError if it exceeds what is available. SLIDE_MEMORY_CHECK=0 turns the refusal into
    a warning (for machines that rely on swap or overcommit). `advice` replaces the network's
    remedies in the message."""
    gib = 2**30
    total = estimate["total"]
    if announce:
        log.info("%s needs about %.2f GiB (parameters %.2f, LSH tables %.2f, scratch %.2f)", what, total / gib,
                 estimate["parameters"] / gib, estimate["lsh"] / gib, estimate["scratch"] / gib)
    room, source = available_bytes()
    if room is None or total <= room:
        return
    message = (f"{what} needs about {total / gib:.2f} GiB (parameters {estimate['parameters'] / gib:.2f}, "
               f"LSH tables {estimate['lsh'] / gib:.2f}, scratch {estimate['scratch'] / gib:.2f}) but only "
               f"{room / gib:.2f} GiB is available ({source}). " + (advice or "Use fewer output neurons, a "
               "narrower hidden layer, fewer LSH tables (lsh.l), fewer threads or optimizer='sgd'") +
               "; SLIDE_MEMORY_CHECK=0 allocates anyway.")
    if os.environ.get("SLIDE_MEMORY_CHECK", "1") == "0":
        warnings.warn(message, stacklevel=3)
        return
    raise MemoryError(message)
