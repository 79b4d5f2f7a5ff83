"""benches.compare.turns: children started together train one at a time, in turns, each until it
ends; their results come back by name, and a child that fails is named."""

import json
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))

from benches.compare.turns import run_in_turns  # noqa: E402

# A child that "trains" `pieces` pieces of busy work, each after waiting for its turn, and reports
# the wall-clock interval of each piece.
CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
from benches.compare.turns import wait_for_turn
pieces, seconds = {pieces}, {seconds}
spans = []
for _ in range(pieces):
    wait_for_turn()
    start = time.time()
    while time.time() - start < seconds:
        pass
    spans.append((start, time.time()))
print("a stray line on stdout is not a turn", flush=True)
if {fail}:
    sys.exit(3)
print(json.dumps({{"spans": spans}}))
"""


def child(pieces: int, seconds: float = 0.02, fail: bool = False) -> list[str]:
    return [sys.executable, "-c", CHILD.format(root=str(ROOT), pieces=pieces, seconds=seconds, fail=fail)]


def test_children_take_turns_and_never_overlap():
    results = run_in_turns({"a": child(5), "b": child(3), "c": child(1)}, ROOT)
    assert sorted(results) == ["a", "b", "c"]
    assert [len(results[n]["spans"]) for n in "abc"] == [5, 3, 1]
    spans = sorted((s, e, name) for name in results for s, e in results[name]["spans"])
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        assert start >= end, "two children trained at the same time"
    # round the children in order: a, b, c, a, b, a, b, a, a
    assert [name for _, _, name in spans] == list("abcabab") + ["a", "a"]


def test_a_child_that_fails_is_named_and_the_others_are_stopped():
    started = time.time()
    with pytest.raises(SystemExit, match="broken failed"):
        run_in_turns({"ok": child(100, seconds=0.05), "broken": child(1, fail=True)}, ROOT)
    assert time.time() - started < 4  # "ok" did not go on to train its 5 seconds


def test_a_child_without_a_result_is_a_failure():
    silent = [sys.executable, "-c", "pass"]
    with pytest.raises(SystemExit, match="silent failed"):
        run_in_turns({"silent": silent}, ROOT)


def test_results_are_the_last_line_as_json():
    results = run_in_turns({"a": child(2)}, ROOT)
    assert json.dumps(results["a"]).startswith('{"spans"')
