"""The memory estimate made before allocation: it matches what a network really allocates, and a
configuration that cannot fit is refused with a MemoryError (exit code 2 from the CLI) instead of
being killed by the kernel half-way through."""

import ctypes
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


def test_estimate_counts_the_scans_bf16_copy_of_the_output_layer():
    """Under matmul="bf16" the network keeps the exact scan's BF16 copy of its output layer once a
    scan has run (train/inference.cpp): 2 bytes a weight, rows padded to 16 values."""
    shape = dict(hidden=(70,), mode="dense", threads=2, seed=0)
    fp32 = slide.Network(2_000, 9_000, matmul="fp32", **shape).memory_estimate
    bf16 = slide.Network(2_000, 9_000, matmul="bf16", **shape).memory_estimate
    assert bf16["scratch"] - fp32["scratch"] == 9_000 * 80 * 2
    assert bf16["parameters"] == fp32["parameters"]


_ALLOCATION_PROBE = """
import ctypes, resource
import slide

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2

def allocated():  # bytes malloc has handed out: its heap in use plus its mmap'd blocks
    info = mallinfo2()
    return info.uordblks + info.hblkhd

def peak_resident():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

allocated_before, resident_before = allocated(), peak_resident()
net = slide.Network(135_909, 300_000, hidden=(128,), threads=2, seed=0)
print(allocated() - allocated_before, peak_resident() - resident_before, net.memory_estimate["total"])
"""


def _has_mallinfo2() -> bool:
    try:
        ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return False
    return True


@pytest.mark.skipif(bool(os.environ.get("SLIDE_SANITIZED")),
                    reason="under ASan, its allocator and shadow memory decide what is allocated and resident; "
                           "the normal suite checks the estimate against the real allocator")
@pytest.mark.skipif(not _has_mallinfo2(), reason="needs glibc's mallinfo2 (glibc 2.33 or newer) to count allocations")
def test_estimate_bounds_what_constructing_a_network_allocates():
    """The estimate bounds what construction allocates, and tightly (within 10%); what becomes resident
    never exceeds it. Residency has no lower bound here: the kernel may leave zeroed pages unbacked
    or take them back (transparent huge pages' shrink_underused splits zero-filled huge pages under
    memory pressure), so the allocator's own count is the measure of what the network takes."""
    out = subprocess.run([sys.executable, "-c", _ALLOCATION_PROBE], capture_output=True, text=True, check=True,
                         cwd=Path.home())
    allocated, resident, estimate = map(int, out.stdout.split())
    assert 0.9 * estimate <= allocated <= estimate, f"allocated {allocated:,} for an estimate of {estimate:,}"
    assert resident <= estimate + (64 << 20), f"resident memory grew {resident:,} for an estimate of {estimate:,}"


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
