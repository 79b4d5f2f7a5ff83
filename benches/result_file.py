"""A benchmark's result: written as indented JSON (its folder made if needed) and echoed without
the environment block, which only the file needs."""

from __future__ import annotations

import json
from pathlib import Path


def write_result(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "environment"}, indent=2))
