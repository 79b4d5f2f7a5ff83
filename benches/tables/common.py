"""What every renderer shares: reading a result file, the provenance line under each table, and
number formats. A renderer takes the parsed JSON of its result file(s) and returns markdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benches" / "results"
GIB = 2 ** 30


def load(name: str) -> Any:
    """The parsed result file benches/results/NAME (NAME may name a subfolder's file)."""
    return json.loads((RESULTS / name).read_text())


def environment(result: dict) -> dict:
    """The run's environment: the `environment` member, or the top level for the files that keep it there."""
    return result.get("environment", result)


def commit(env: dict) -> str:
    sha = str(env.get("commit", "unknown"))
    if sha.endswith("-dirty"):
        return f"`{sha[:10]}` plus uncommitted changes (not yet rerun from a clean tree)"
    return f"`{sha[:10]}`"


def source(name: str, result: dict, *, threads: bool = True, extra: str = "") -> str:
    """One line naming the result file and what the run recorded about itself."""
    env = environment(result)
    parts = [f"commit {commit(env)}"]
    if env.get("simd_level"):
        parts.append(f"{env['simd_level']} kernels")
    if threads and env.get("threads"):
        parts.append(f"{env['threads']} thread{'s' if env['threads'] != 1 else ''}")
    return f"From `benches/results/{name}`: " + ", ".join(parts) + (f"; {extra}" if extra else "") + "."


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def integer(x: float) -> str:
    return f"{x:,.0f}"


def fixed(x: float, digits: int) -> str:
    return f"{x:,.{digits}f}"


def ratio(x: float) -> str:
    """A speed ratio: two decimals near 1, one above 10."""
    return f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


def gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:.2f} GiB"


def percent(share: float, digits: int = 1) -> str:
    return f"{100 * share:.{digits}f}%"
