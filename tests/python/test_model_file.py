"""Model and checkpoint files under attack: flipped bytes, truncation, lying headers, pickles that
would run code, and saves that fail (disk full, file size limit, permission denied). A file either
loads to exactly the saved model or is refused with a clear error; a failed save leaves the
previous file byte-for-byte intact."""

import errno
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

import slide
from slide import runs
from slide.datasets import make_train_test


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    train, _ = make_train_test(600, 10, 300, 500, seed=2, avg_nnz=10, avg_labels=2)
    net = slide.Network(300, 500, hidden=(8,), lsh=slide.LSHConfig(k=2, l=3), threads=1, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=50, progress=False)
    path = tmp_path_factory.mktemp("model") / "m.npz"
    net.save(path)
    return path, {k: v.copy() for k, v in net.weights().items() if not k.endswith("_grad")}


def _load_or_refuse(path: Path, reference: dict) -> str:
    """'refused' (a clear ValueError) or 'identical'; anything else fails the test."""
    try:
        net = slide.Network.load(path)
    except ValueError as e:
        assert str(path) in str(e), e
        return "refused"
    for name, w in reference.items():
        np.testing.assert_array_equal(net.weights()[name], w, err_msg=f"{name} loaded silently wrong")
    return "identical"


def test_every_flipped_byte_is_refused_or_harmless(saved, tmp_path):
    path, reference = saved
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(0)
    positions = np.unique(np.concatenate([rng.integers(0, len(data), 300), np.arange(200),
                                          len(data) - 1 - np.arange(200)]))
    outcomes = {"refused": 0, "identical": 0}
    bad = tmp_path / "flipped.npz"
    for pos in positions:
        flipped = bytearray(data)
        flipped[pos] ^= 1 << int(rng.integers(0, 8))
        bad.write_bytes(flipped)
        outcomes[_load_or_refuse(bad, reference)] += 1
    assert outcomes["refused"] > len(positions) // 2, outcomes  # most bytes matter


def test_every_truncation_is_refused(saved, tmp_path):
    path, reference = saved
    data = path.read_bytes()
    bad = tmp_path / "cut.npz"
    for size in sorted({0, 1, 4, 30, 100, *np.linspace(0, len(data) - 1, 60).astype(int)}):
        bad.write_bytes(data[:size])
        assert _load_or_refuse(bad, reference) == "refused", size


def _rewrite(path: Path, out: Path, replace: dict) -> None:
    """Copy a model file with some members replaced by raw .npy bytes."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, replace.get(name, src.read(name)))


class _RunsCode:
    def __reduce__(self):
        return (os.system, (f"touch {_RunsCode.marker}",))


def test_a_pickle_in_the_file_is_never_executed(saved, tmp_path):
    path, _ = saved
    _RunsCode.marker = tmp_path / "pwned"
    evil = io.BytesIO()
    np.save(evil, np.array([_RunsCode()], dtype=object), allow_pickle=True)
    for member in ("layers.0.bias.npy", "__slide_header__.npy"):
        bad = tmp_path / f"evil-{member}.npz"
        _rewrite(path, bad, {member: evil.getvalue()})
        with pytest.raises(ValueError, match=str(bad)):
            slide.Network.load(bad)
    with pytest.raises(ValueError, match="Python objects"):
        slide.model_file.read_header(bad)  # the header member was the last one replaced
    raw = tmp_path / "raw-pickle.npz"
    raw.write_bytes(pickle.dumps(_RunsCode()))
    with pytest.raises(ValueError):
        slide.Network.load(raw)
    assert not _RunsCode.marker.exists()


def _npy_header(shape, dtype="<f4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def test_a_header_that_lies_about_an_arrays_size_is_refused_before_allocating(saved, tmp_path):
    path, _ = saved
    cases = {
        "huge": _npy_header((10**12, 8)) + b"\0" * 64,
        "short": _npy_header((500,)) + b"\0" * 12,
        "long": _npy_header((500,)) + b"\0" * 2004,
        "dtype": _npy_header((500,), "<f8") + b"\0" * 4000,
    }
    for what, payload in cases.items():
        bad = tmp_path / f"{what}.npz"
        _rewrite(path, bad, {"layers.0.bias.npy": payload})
        with pytest.raises(ValueError, match="layers.0.bias"):
            slide.Network.load(bad)


def _with_header(path: Path, out: Path, change) -> None:
    with zipfile.ZipFile(path) as z:
        header = json.loads(np.load(io.BytesIO(z.read("__slide_header__.npy"))).tobytes())
    change(header)
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(header).encode(), np.uint8))
    _rewrite(path, out, {"__slide_header__.npy": buf.getvalue()})


@pytest.mark.parametrize("change, message", [
    (lambda h: h.update(version="2"), "format version"),
    (lambda h: h.update(version=99), "newer slide"),
    (lambda h: h.update(format="pytorch"), "not a slide model file"),
    (lambda h: h.pop("checksums"), "checksums"),
    # A header that claims the old format must not switch verification off (it skipped every CRC).
    (lambda h: (h.update(version=1), h.pop("checksums")), "model format 1 has no checksums"),
    (lambda h: h.update(version=1), "model format 1 has no checksums"),
    (lambda h: h.update(config=[1, 2]), "'config'"),
    (lambda h: h["config"].update(hidden="many"), "configuration is malformed|hidden"),
    (lambda h: h["config"].update(bogus=1), "configuration is malformed"),
    (lambda h: h.update(counters={"rng": "x"}), "counters are malformed"),
    (lambda h: h["checksums"].update({"layers.0.bias": "00000000"}), "fails its checksum"),
])
def test_a_malformed_header_is_refused_clearly(saved, tmp_path, change, message):
    path, _ = saved
    bad = tmp_path / "h.npz"
    _with_header(path, bad, change)
    with pytest.raises(ValueError, match=message):
        slide.Network.load(bad)


def test_a_zero_crc_file_is_still_caught_by_the_slide_checksum(saved, tmp_path):
    """Rewriting an array's bytes together with a fresh zip CRC defeats zip's check, not ours."""
    path, _ = saved
    with zipfile.ZipFile(path) as z:
        member = bytearray(z.read("layers.0.weight.npy"))
    member[-1] ^= 0x40
    bad = tmp_path / "recrc.npz"
    _rewrite(path, bad, {"layers.0.weight.npy": bytes(member)})
    with pytest.raises(ValueError, match="layers.0.weight.*checksum"):
        slide.Network.load(bad)


# ----------------------------------------------------------------------------- failing saves
def _small_net():
    return slide.Network(300, 500, hidden=(8,), lsh=slide.LSHConfig(k=2, l=3), threads=1, seed=0)


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EACCES, errno.EDQUOT, errno.EIO])
@pytest.mark.parametrize("stage", ["mkstemp", "write", "fsync", "replace"])
def test_an_injected_write_error_keeps_the_previous_file_and_says_what_happened(tmp_path, monkeypatch, failure,
                                                                                stage):
    net = _small_net()
    path = tmp_path / "m.npz"
    net.save(path)
    before = path.read_bytes()
    net.learning_rate = 0.5  # the new file would differ

    def fail(*a, **k):
        raise OSError(failure, os.strerror(failure))

    targets = {"mkstemp": (tempfile, "mkstemp"), "write": (np, "savez"), "fsync": (os, "fsync"),
               "replace": (os, "replace")}
    monkeypatch.setattr(*targets[stage], fail)
    with pytest.raises(OSError) as info:
        net.save(path)
    monkeypatch.undo()
    assert info.value.errno == failure
    assert str(path) in str(info.value) and os.strerror(failure) in str(info.value)
    assert "the previous file is unchanged" in str(info.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # no temporary file left behind


def test_a_file_size_limit_fails_the_save_cleanly(tmp_path):
    """A real kernel write error (EFBIG under RLIMIT_FSIZE) in a child process."""
    script = f"""
import resource, signal, errno, sys
import slide
net = slide.Network(300, 500, hidden=(8,), lsh=slide.LSHConfig(k=2, l=3), threads=1, seed=0)
net.save({str(tmp_path / 'm.npz')!r})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
try:
    net.save({str(tmp_path / 'm.npz')!r})
except OSError as e:
    print(e.errno == errno.EFBIG, e)
    sys.exit(0)
sys.exit(1)
"""
    # Never from the source tree, which has no compiled extension.
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=os.path.expanduser("~"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("True") and "the previous file is unchanged" in out.stdout
    assert slide.Network.load(tmp_path / "m.npz").output_dim == 500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]


@pytest.fixture
def tiny_filesystem(tmp_path):
    """A real 1.5 MiB tmpfs (needs root; skipped where mounting is not allowed)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1536k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_stops_the_run_with_the_previous_checkpoint_intact(tiny_filesystem):
    train, test = make_train_test(1200, 100, 300, 2000, seed=2, avg_nnz=10, avg_labels=2)
    net = slide.Network(300, 2000, hidden=(32,), lsh=slide.LSHConfig(k=2, l=3), threads=1, seed=0)
    # A checkpoint is ~1 MiB: the first fits, the second (written beside the first) cannot.
    settings = runs.RunSettings(epochs=3, batch_size=100, eval_every=10**9, eval_samples=50, checkpoint_every=0.0,
                                progress=False)
    with pytest.raises(OSError) as info:
        runs.run(net, runs.in_memory_source(net, train, seed=0), test, tiny_filesystem, settings)
    assert info.value.errno == errno.ENOSPC
    assert "checkpoint.npz" in str(info.value) and "No space left on device" in str(info.value)
    leftovers = sorted(p.name for p in tiny_filesystem.iterdir())
    assert not [n for n in leftovers if n.endswith(".tmp")], leftovers
    resumed, pos = runs.load_checkpoint(tiny_filesystem)  # the previous one: complete and loadable
    assert pos.samples == 1200


def test_permission_denied_on_a_read_only_folder(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions; the injected EACCES test covers this path")
    net = _small_net()
    (tmp_path / "ro").mkdir()
    net.save(tmp_path / "ro" / "m.npz")
    before = (tmp_path / "ro" / "m.npz").read_bytes()
    os.chmod(tmp_path / "ro", 0o555)
    try:
        with pytest.raises(OSError, match="Permission denied.*the previous file is unchanged"):
            net.save(tmp_path / "ro" / "m.npz")
    finally:
        os.chmod(tmp_path / "ro", 0o755)
    assert (tmp_path / "ro" / "m.npz").read_bytes() == before


def test_saved_files_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        _small_net().save(tmp_path / "m.npz")
    finally:
        os.umask(old)
    assert (tmp_path / "m.npz").stat().st_mode & 0o777 == 0o644  # not mkstemp's private 0600


def test_a_file_saved_with_other_parameters_rebuilds_its_tables_from_them(tmp_path, small_problem):
    """save_network(parameters=...) writes a model of those parameters (best.npz of a run): loading
    it gives the network that restoring them in place gives, LSH tables included."""
    from slide.early_stopping import restore, snapshot
    from slide.model_file import save_network

    train, test = small_problem
    net = slide.Network(train.X.shape[1], train.Y.shape[1], hidden=(16,), lsh=slide.LSHConfig(k=3, l=6),
                        neighbours=0, threads=1, seed=3)
    net.fit(train.X[:1000], train.Y[:1000], epochs=1, batch_size=64, progress=False)
    earlier = snapshot(net)
    net.fit(train.X[1000:2000], train.Y[1000:2000], epochs=1, batch_size=64, progress=False)
    save_network(net, tmp_path / "best.npz", include_optimizer=False, parameters=earlier)
    with pytest.raises(ValueError, match="do not belong to this network"):
        save_network(net, tmp_path / "other.npz", parameters={"no.such.weight": earlier[next(iter(earlier))]})
    loaded = slide.Network.load(tmp_path / "best.npz")
    restore(net, earlier)
    for name in [*earlier, *(name for name in net.weights() if ".lsh." in name)]:
        np.testing.assert_array_equal(loaded.weights()[name], net.weights()[name], err_msg=name)
    X = test.X[:50]
    np.testing.assert_array_equal(loaded.predict(X, mode="sparse")[0], net.predict(X, mode="sparse")[0])
