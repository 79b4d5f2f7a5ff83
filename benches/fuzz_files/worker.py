"""Runs fuzz cases [start, start + count) in this process, one JSON line before and after each
(benches.case_runner): outcome "ok" (the file was used), "refused" (a documented error: ValueError,
OSError, MemoryError, TrainingDiverged, or CLI exit 2/3) or "traceback" (anything else). Each
record carries the process's peak resident memory so far."""

from __future__ import annotations

import random
import resource
import shutil
import time
import traceback
import warnings
from pathlib import Path

import slide

from ..case_runner import serve_cases
from .seeds import make_seeds
from .targets import KINDS, CliFailure

EXPECTED = (ValueError, OSError, MemoryError, slide.TrainingDiverged)


def pick_kind(rng: random.Random) -> str:
    return rng.choices(sorted(KINDS), weights=[KINDS[k][1] for k in sorted(KINDS)])[0]


def run_case(index: int, seed: int, tmp: Path, seeds) -> dict:
    rng = random.Random(seed * 1_000_003 + index)
    kind = pick_kind(rng)
    work = tmp / f"case{index}"
    work.mkdir()
    record = {"case": index, "kind": kind, "outcome": "ok"}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            record["what"] = KINDS[kind][0](rng, seeds, work)
    except EXPECTED as e:
        record.update(outcome="refused", error=f"{type(e).__name__}: {e}"[:300])
    except CliFailure as e:
        record.update(outcome="traceback", error=str(e))
    except BaseException as e:  # noqa: BLE001 - what escaped is the finding
        record.update(outcome="traceback", error="".join(traceback.format_exception(e))[-1500:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record["seconds"] = round(time.perf_counter() - t0, 4)
    record["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return record


def main() -> None:
    serve_cases(lambda tmp, seed: make_seeds(tmp / "seeds"), run_case)


if __name__ == "__main__":
    main()
