"""The `slide` command line.

Exit codes: 0 success, 2 usage, data or file errors (with a message, no traceback), 3 training diverged
(NaN/inf; the last good checkpoint is kept), 130 after Ctrl-C and 143 after SIGTERM (a checkpoint is
saved first when training).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, Sequence

from .._version import __version__
from . import data, evaluate, export, info, predict, reshard, signals, train


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="slide", description="Train LSH-sampled extreme classifiers on CPUs.")
    p.add_argument("--version", action="version", version=f"slide {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for command in (train, evaluate, predict, export, info, data, reshard):
        command.add_parser(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="slide: %(message)s")
    logging.getLogger("slide.memory").setLevel(logging.INFO)  # the memory estimate, before allocating
    args = build_parser().parse_args(argv)
    signals.handle_sigterm()
    try:
        return args.handler(args)
    except (ValueError, OSError, MemoryError) as e:  # bad input, an unreadable/unwritable file, too little RAM
        print(f"slide: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{signals.what_stopped()}", file=sys.stderr)
        return signals.exit_code()


if __name__ == "__main__":
    sys.exit(main())
