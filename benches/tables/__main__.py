"""python -m benches.tables [--check] [--list]: see benches/tables/__init__.py."""

from __future__ import annotations

import argparse
import sys

from . import BLOCKS, ROOT, pages, spans, stale, write


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benches.tables", description=__doc__)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 naming every stale block")
    ap.add_argument("--list", action="store_true", help="each block, its result files and the pages showing it")
    args = ap.parse_args(argv)
    if args.list:
        where: dict[str, list[str]] = {}
        for path in pages():
            for span in spans(path.read_text(), str(path)):
                where.setdefault(span.name, []).append(f"{path.relative_to(ROOT)}:{span.line}")
        for name, block in BLOCKS.items():
            print(f"{name}: {', '.join(block.sources)} -> {', '.join(where.get(name, ['(on no page)']))}")
        return 0
    if args.check:
        problems = stale()
        for p in problems:
            print(p, file=sys.stderr)
        if not problems:
            print("every generated table matches its result file")
        return 1 if problems else 0
    changed = write()
    for path in changed:
        print(f"rewrote {path.relative_to(ROOT)}")
    if not changed:
        print("every generated table was already current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
