"""The memory estimate made before allocation: it matches what a network really allocates, and a
configuration that cannot fit is refused with a MemoryError (exit code 2 from the CLI) instead of
being killed by the kernel half-way through."""

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import slide
from slide import memory


@pytest.mark.parametrize("lsh", [None, slide.LSHConfig(), slide.LSHConfig(batch_active=2048)])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_estimate_covers_what_the_network_holds(lsh, precision):
    net = slide.Network(20_000, 50_000, hidden=(64,), lsh=lsh, precision=precision, threads=2, seed=0)
    est = net.memory_estimate
    assert est["total"] == est["parameters"] + est["lsh"] + est["scratch"]
    held = net.memory_bytes  # parameters and LSH index as allocated
    assert est["parameters"] + est["lsh"] >= held
    assert est["parameters"] + est["lsh"] <= held * 1.02 + (1 << 20)


_RSS_PROBE = """
import resource, sys
import slide
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
net = slide.Network(135_909, 300_000, hidden=(128,), threads=2, seed=0)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(after - before, net.memory_estimate["total"])
"""


@pytest.mark.skipif(bool(os.environ.get("SLIDE_SANITIZED")),
                    reason="under ASan, its allocator and shadow memory decide what is resident; the normal "
                           "suite checks the estimate against the real allocator")
def test_estimate_bounds_the_resident_memory_a_network_takes():
    """The estimate is an upper bound on what construction makes resident, and not a loose one:
    the initialised weights alone are a quarter of the parameters (zeroed gradient and Adam pages
    the kernel may leave untouched until training writes them)."""
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE], capture_output=True, text=True, check=True,
                         cwd=Path.home())
    grown, estimate = map(int, out.stdout.split())
    assert 0.25 * estimate <= grown <= estimate + (64 << 20), f"RSS grew {grown:,} for an estimate of {estimate:,}"


def test_a_network_that_cannot_fit_is_refused_before_allocating():
    # 10M outputs x 2,048 hidden x 4 copies x 4 bytes = 328 GB: far beyond any test machine.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(MemoryError, match=r"needs about [\d.]+ GiB .* only [\d.]+ GiB is available"):
        slide.Network(1000, 10_000_000, hidden=(2048,), threads=1)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000, "nothing may be allocated first"


def test_a_cgroup_limit_below_meminfo_is_what_counts(monkeypatch, tmp_path):
    (tmp_path / "max").write_text(str(300 << 20) + "\n")
    (tmp_path / "current").write_text(str(100 << 20) + "\n")
    monkeypatch.setattr(memory, "_CGROUP_FILES", ((str(tmp_path / "max"), str(tmp_path / "current")),))
    room, source = memory.available_bytes()
    assert room == 200 << 20 and "cgroup" in source
    with pytest.raises(MemoryError, match="0.20 GiB is available .*cgroup"):
        slide.Network(100_000, 400_000, hidden=(64,), threads=1)  # ~0.5 GiB
    (tmp_path / "max").write_text("max\n")  # no limit: MemAvailable decides
    assert "MemAvailable" in memory.available_bytes()[1]


def test_memory_check_can_be_turned_into_a_warning(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: (10 << 20, "a test's 10 MiB"))
    with pytest.raises(MemoryError, match="a test's 10 MiB"):
        slide.Network(100_000, 100_000, hidden=(64,), threads=1)
    monkeypatch.setenv("SLIDE_MEMORY_CHECK", "0")
    with pytest.warns(UserWarning, match="SLIDE_MEMORY_CHECK=0 allocates anyway"):
        slide.Network(100_000, 100_000, hidden=(64,), threads=1)


def test_available_bytes_reads_this_machine():
    room, source = memory.available_bytes()
    assert room is not None and room > 0, source
    assert "MemAvailable" in source or "cgroup" in source


def test_cli_refuses_a_configuration_too_big_for_the_machine(tmp_path):
    config = tmp_path / "huge.toml"
    config.write_text("[network]\nhidden = [1000000]\n")  # the default data's features x 1M x 16 bytes: terabytes
    out = subprocess.run([sys.executable, "-m", "slide", "train", "--config", str(config), "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, cwd=Path.home(), timeout=300)
    assert out.returncode == 2, out.stderr
    assert "needs about" in out.stderr and "GiB is available" in out.stderr
