"""The run folder's plot: matplotlib is imported only when a plot is drawn, so the import must not
turn a Ctrl-C or SIGTERM into a crash: both are held until it ends, then acted on."""

import os
import signal

import pytest

from slide.plots import interrupts_deferred, plot_progress


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_inside_the_block_is_raised_when_it_ends(sig):
    reached_end = False
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as slide train's handler does: KeyboardInterrupt
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts_deferred():
                os.kill(os.getpid(), sig)
                reached_end = True
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert reached_end
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers are back


def test_no_interrupt_means_nothing_raised_and_handlers_restored():
    before = signal.getsignal(signal.SIGINT)
    with interrupts_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is before


def test_plot_is_written_from_timed_scores_only(tmp_path):
    path = tmp_path / "progress.png"
    assert not plot_progress([{"kind": "epoch", "P@1": 0.5}], path)  # MPI records: no time
    assert plot_progress([{"kind": "epoch", "P@1": 0.5, "wall_seconds": 1.0, "train_loss": 2.0},
                          {"kind": "final", "P@1": 0.6, "wall_seconds": 2.0, "val_P@1": 0.55}], path, "t")
    assert path.read_bytes()[:4] == b"\x89PNG"
