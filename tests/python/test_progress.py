"""Progress goes to a terminal as a tqdm bar and anywhere else as a few whole lines."""

import io
import re

from slide.progress import LineProgress, duration, progress_bar

from .test_cli import run


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_file_gets_one_line_per_tenth_and_no_carriage_returns():
    out = io.StringIO()
    bar = progress_bar(18_000, "epoch 1/5", True, stream=out)
    assert isinstance(bar, LineProgress)
    for _ in range(18_000 // 128 + 1):
        bar.update(128)
        bar.set_postfix(loss="3.9", active="900", samples_s="1")
    bar.close()
    text = out.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and 9 <= len(lines) <= 11
    assert re.match(r"epoch 1/5:  1[01]% \(", lines[0]) and lines[-1].startswith("epoch 1/5: 100% (18,")
    assert "loss 3.9, active 900)" in lines[-1] and "samples_s" not in text


def test_durations_below_a_second_are_shown_in_milliseconds():
    assert [duration(s) for s in (0.0042, 0.999, 2.46, 1234.5)] == ["4 ms", "999 ms", "2.5 s", "1,234.5 s"]
    out = io.StringIO()
    bar = progress_bar(1_000, "epoch 1/1", True, stream=out)
    bar.update(500)
    assert re.search(r"\(500/1,000 samples, \d+ ms, ", out.getvalue())  # not "0.0s"


def test_a_terminal_gets_a_bar_and_disabled_gets_nothing():
    assert not isinstance(progress_bar(10, "x", True, stream=_Terminal()), LineProgress)
    assert progress_bar(10, "x", False) is None


def test_slide_train_into_a_pipe_writes_lines(tmp_path):
    r = run("train", "--threads", "2", "--epochs", "1", "--train-samples", "4000", "--out", tmp_path / "r")
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "epoch 1/1: 100% (4,000/4,000 samples" in r.stderr
    assert len(r.stderr.splitlines()) < 20
