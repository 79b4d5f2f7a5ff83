"""benches.torch_layer's verdicts on hand-made timelines: the time shares against sampled
softmax's last and best P@1, and the lowest margin at equal time read at either curve's checkpoints."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))

from benches.torch_layer.verdicts import p1_at, verdicts  # noqa: E402


def system(points, samples_per_second=1000.0):
    return {"samples_per_second": samples_per_second, "train_seconds": points[-1][0],
            "timeline": [{"train_seconds": t, "P@1": p} for t, p in points]}


def test_shares_of_sampled_softmax_time_to_its_last_and_its_best_p1():
    ext = system([(10, 0.5), (20, 0.8), (30, 0.9), (40, 0.95)], 3000)
    sampled = system([(10, 0.4), (20, 0.7), (30, 0.92), (40, 0.85), (50, 0.8)])
    full = system([(25, 0.1), (50, 0.2)], 10)
    v = verdicts({"extreme": ext, "sampled": sampled, "full": full})
    assert v["samples_per_second_vs_full"] == 300
    assert (v["sampled_final_p1"], v["seconds_to_sampled_final_p1"], v["time_share_of_sampled"]) == (0.8, 20, 0.4)
    assert (v["sampled_peak_p1"], v["seconds_to_sampled_peak_p1"], v["time_share_of_sampled_peak"]) == (0.92, 40, 0.8)
    assert v["lowest_margin_at_equal_time"] == pytest.approx(-0.02)
    assert (v["lowest_margin_seconds"], v["lowest_margin_against"]) == (30, "sampled")


def test_the_margin_is_read_at_the_other_curves_checkpoints_too():
    # ExtremeOutput is ahead at each of its own checkpoints, behind at sampled softmax's only one
    # inside its span: at 15 s it is at 0.55 (between 0.5 and 0.6), sampled softmax at 0.7
    ext = system([(10, 0.5), (20, 0.6)])
    sampled = system([(5, 0.1), (15, 0.7), (25, 0.75)])
    v = verdicts({"extreme": ext, "sampled": sampled})
    assert v["lowest_margin_at_equal_time"] == pytest.approx(-0.15)
    assert v["lowest_margin_seconds"] == 15
    assert "samples_per_second_vs_full" not in v


def test_a_goal_never_reached_and_curves_that_never_overlap():
    v = verdicts({"extreme": system([(1, 0.1), (2, 0.2)]), "sampled": system([(3, 0.5), (4, 0.6)])})
    assert v["seconds_to_sampled_final_p1"] is None and v["time_share_of_sampled"] is None
    assert v["lowest_margin_at_equal_time"] is None and "lowest_margin_seconds" not in v


def test_p1_is_interpolated_inside_a_timeline_only():
    timeline = system([(10, 0.2), (20, 0.4)])["timeline"]
    assert p1_at(timeline, 15) == pytest.approx(0.3)
    assert p1_at(timeline, 9.9) is None and p1_at(timeline, 20.1) is None


def test_the_lowest_margin_is_split_at_the_first_peak_with_its_standard_error():
    # sampled softmax peaks at 30 s, ExtremeOutput at 20 s: up to 20 s ExtremeOutput is behind by
    # at most 0.01 (at 10 s); after it, it over-fits and falls 0.05 behind at 40 s
    ext = system([(10, 0.80), (20, 0.92), (30, 0.90), (40, 0.85)])
    sampled = system([(10, 0.81), (20, 0.91), (30, 0.93), (40, 0.90)])
    v = verdicts({"extreme": ext, "sampled": sampled}, test_points=2000)
    assert v["lowest_margin_before_peak_at_equal_time"] == pytest.approx(-0.01)
    assert v["lowest_margin_before_peak_seconds"] == 10
    assert v["lowest_margin_after_peak_at_equal_time"] == pytest.approx(-0.05)
    assert v["lowest_margin_after_peak_seconds"] == 40
    assert v["lowest_margin_at_equal_time"] == pytest.approx(-0.05)
    assert v["lowest_margin_standard_error"] == pytest.approx(((0.85 * 0.15 + 0.9 * 0.1) / 2000) ** 0.5, abs=1e-4)
    assert v["lowest_margin_before_peak_standard_error"] == pytest.approx(
        ((0.8 * 0.2 + 0.81 * 0.19) / 2000) ** 0.5, abs=1e-4)
    assert "lowest_margin_standard_error" not in verdicts({"extreme": ext, "sampled": sampled})


def test_the_table_says_where_the_margin_is_lowest_before_and_after_the_peak():
    from benches.tables.baselines import _torch_layer_verdicts

    ext = system([(10, 0.80), (20, 0.92), (30, 0.90)])
    sampled = system([(10, 0.81), (20, 0.91), (30, 0.93)])
    line = _torch_layer_verdicts(verdicts({"extreme": ext, "sampled": sampled}, test_points=2000))
    assert "up to the first peak -0.0100 (standard error 0.013) against sampled softmax at 10.0 s" in line
    assert "after it -0.0300 (standard error 0.009) against sampled softmax at 30.0 s" in line
    # two test points of 5,000 below: the sign shows
    ext = system([(10, 0.9308), (20, 0.9350)])
    sampled = system([(10, 0.9312), (20, 0.9300)])
    line = _torch_layer_verdicts(verdicts({"extreme": ext, "sampled": sampled}, test_points=5000))
    assert "at equal training time is -0.0004 (standard error" in line
