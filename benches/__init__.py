"""Benchmarks, run from the repository's root as `python -m benches.NAME` against the installed
slide. The source tree's slide/ holds no compiled engine after `pip install .`, and the root comes
first on sys.path, so it would shadow the installed package: the root leaves sys.path then (this
package's own modules are found through its __path__, not sys.path)."""

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if not any((_ROOT / "slide").glob("_core*")):
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _ROOT]
