"""Systems that train in turns: each in its own child process (so its peak RSS is its own), but
only one of them training at any moment, a piece at a time, round the children in order. This host
is shared and its speed moves by a third from one minute to the next; trained one after another,
two systems met different hosts and their per-second comparison measured the host. In turns, a
slow spell slows every system alike, and the ratios hold within one run.

The child runs `benches.compare.protocol.run` with `pause=wait_for_turn`: before each piece of
training (outside its training clock) it writes TURN on its stdout and waits for a line on its
stdin. Everything else it reports goes to stderr, except the last line of stdout: its result, as
JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TURN = "turn"
GO = "go"


def wait_for_turn() -> None:
    """In a child: hand the CPU back to the parent and wait until it is this child's turn."""
    print(TURN, flush=True)
    if sys.stdin.readline().strip() != GO:
        raise SystemExit("the parent of this turn-taking run went away")


def run_in_turns(commands: dict[str, list[str]], cwd: Path) -> dict[str, dict]:
    """Start every command, then give each in turn one piece of training until all have ended.
    Returns each one's result (the JSON on the last line of its stdout); SystemExit names a child
    that failed."""
    children = {name: subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=cwd)
                for name, cmd in commands.items()}
    results: dict[str, dict] = {}
    try:
        # each child's first TURN line says it is built and ready; none trains before all are
        waiting = [name for name in children if _until_turn(name, children[name], results)]
        while waiting:
            waiting = [name for name in waiting if _go(name, children[name], results)]
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
            child.wait()
    return results


def _go(name: str, child: subprocess.Popen, results: dict) -> bool:
    child.stdin.write(GO + "\n")
    child.stdin.flush()
    return _until_turn(name, child, results)


def _until_turn(name: str, child: subprocess.Popen, results: dict) -> bool:
    """Read the child's stdout up to its next TURN (True) or its end (False, its result kept)."""
    last = None
    for line in child.stdout:
        if line.strip() == TURN:
            return True
        last = line
    if child.wait() != 0:
        raise SystemExit(f"{name} failed (exit {child.returncode}); see its output above")
    if last is None:
        raise SystemExit(f"{name} failed: it ended without writing its result")
    results[name] = json.loads(last)
    return False
