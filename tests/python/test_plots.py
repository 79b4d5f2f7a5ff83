"""The run folder's plot: matplotlib is imported only when a plot is drawn, so the import must not
turn a Ctrl-C or SIGTERM into a crash: both are held until it ends, then acted on."""

import os
import signal

import pytest

from slide.plots import interrupts_deferred, plot_progress


@pytest.fixture
def interrupt_handlers():
    """SIGINT and SIGTERM both raising KeyboardInterrupt, as in `slide train` (whatever the process
    started with: a job started in the background with `&` ignores SIGINT), put back afterwards."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, signal.default_int_handler)
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_inside_the_block_is_raised_when_it_ends(sig, interrupt_handlers):
    reached_end = False
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), sig)
            reached_end = True
    assert reached_end
    for handled in (signal.SIGINT, signal.SIGTERM):  # the handlers are back
        assert signal.getsignal(handled) is signal.default_int_handler


def test_an_interrupt_the_process_ignores_stays_ignored(interrupt_handlers):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with interrupts_deferred():
        os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


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
