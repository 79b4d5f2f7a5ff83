"""A model file's LSH arrays (codes, insertion order, bucket offsets, bucket ids) and training
counters are read straight into the engine, which later indexes memory with them. A file with
valid checksums can still hold any numbers (anyone can recompute a CRC), so the engine checks
every restored array before it trusts one: a hostile file is refused with a message naming the
file and the array, through every path that loads one (Network.load, unpickling, the CLI's
sparse predict and a resumed run)."""

import pickle

import numpy as np
import pytest

import slide
from slide.datasets import make_train_test
from slide.datasets.xc_files import write_xc
from slide.model_file import ModelFileError, read_arrays, read_header, write_model
from slide.network import _network_from_bytes

from .test_cli import FAST, run

LAYER = "layers.0."  # the sampled output layer of a network with one hidden layer
UINT32_MAX = 0xFFFFFFFF


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    train, test = make_train_test(600, 50, 300, 500, seed=2, avg_nnz=10, avg_labels=2)
    net = slide.Network(300, 500, hidden=(8,), lsh=slide.LSHConfig(k=2, l=3), threads=1, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=50, progress=False)
    folder = tmp_path_factory.mktemp("model")
    net.save(folder / "m.npz")
    write_xc(folder / "test.txt", test.X, test.Y)
    return folder / "m.npz", train


def _tampered(path, out, change_arrays=None, change_header=None):
    """A copy of the model file with arrays or header changed and every checksum recomputed, as an
    attacker would write it: only the engine's own checks can catch it."""
    header, arrays = read_header(path), read_arrays(path)
    header.pop("checksums")
    if change_arrays:
        change_arrays(arrays)
    if change_header:
        change_header(header)
    write_model(out, header, arrays)
    return out


def _set(name, index, value):
    def change(arrays):
        arrays[LAYER + name][index] = value
    return change


def _offsets_decreasing(arrays):
    off = arrays[LAYER + "lsh.offsets"]
    b = int(np.argmax(np.diff(off[0]) > 0))  # a non-empty bucket: make its end fall below its start
    off[0, b + 1] = off[0, b] - 1 if off[0, b] > 0 else UINT32_MAX


def _offsets_overfull(arrays):
    arrays[LAYER + "lsh.offsets"][1, -1] = 501  # the table stores more ids than the layer has neurons


def _offsets_not_from_zero(arrays):
    arrays[LAYER + "lsh.offsets"][2, 0] = 7


def _bucket_over_capacity(arrays):
    off = arrays[LAYER + "lsh.offsets"]
    off[0, 1:] = 500  # every id in bucket 0: far over the bucket size (128)
    off[0, 0] = 0


def _order_duplicate(arrays):
    order = arrays[LAYER + "lsh.order"]
    order[1] = order[0]


TAMPERINGS = {
    "ids far out of range": (_set("lsh.ids", (0, 0), UINT32_MAX), "lsh.ids"),
    "ids just out of range": (_set("lsh.ids", (1, 3), 1000), "lsh.ids"),
    "ids one past the end": (_set("lsh.ids", (2, 0), 500), "lsh.ids"),
    "offsets decreasing": (_offsets_decreasing, "lsh.offsets"),
    "offsets past the ids": (_offsets_overfull, "lsh.offsets"),
    "offsets not from zero": (_offsets_not_from_zero, "lsh.offsets"),
    "a bucket over its capacity": (_bucket_over_capacity, "lsh.offsets"),
    "codes far out of range": (_set("lsh.codes", (0, 5), UINT32_MAX), "lsh.codes"),
    "codes one past the buckets": (_set("lsh.codes", (2, 499), 64), "lsh.codes"),
    "order out of range": (_set("lsh.order", 7, 500), "lsh.order"),
    "order with a repeat": (_order_duplicate, "lsh.order"),
}


def _counter(key, value):
    def change(header):
        header["counters"]["layers.0"][key] = value
    return change


def _top_counter(key, value):
    def change(header):
        header["counters"][key] = value
    return change


COUNTERS = {
    "negative generation": (_counter("generation", -1), "generation"),
    "zero rehash interval": (_counter("rehash_interval", 0), "rehash"),
    "negative rebuild interval": (_counter("rebuild_interval", -5), "rebuild"),
    "since-rehash at the int64 edge": (_counter("since_rehash", 2 ** 63 - 1), "since the last rehash"),
    "negative since-rebuild": (_counter("since_rebuild", -100), "since the last rehash/rebuild"),
    "step at the int64 edge": (_top_counter("step", 2 ** 63 - 1), "step"),
    "negative samples seen": (_top_counter("samples_seen", -1), "samples_seen"),
}


@pytest.mark.parametrize("case", sorted(TAMPERINGS))
def test_a_hostile_lsh_array_is_refused_by_load_and_by_unpickling(saved, tmp_path, case):
    path, _ = saved
    change, array = TAMPERINGS[case]
    bad = _tampered(path, tmp_path / "bad.npz", change_arrays=change)
    with pytest.raises(ModelFileError, match=f"{bad}.*{LAYER}{array}"):
        slide.Network.load(bad)
    # A pickled Network is the model file's bytes behind _network_from_bytes: forge one around the file.
    with pytest.raises(ValueError, match=f"{LAYER}{array}"):
        pickle.loads(pickle.dumps(_PickledNetwork(bad.read_bytes())))


class _PickledNetwork:
    """Pickles exactly as a Network whose model file holds `data`."""

    def __init__(self, data):
        self.data = data

    def __reduce__(self):
        return _network_from_bytes, (slide.Network, self.data)


@pytest.mark.parametrize("case", sorted(COUNTERS))
def test_hostile_training_counters_are_refused(saved, tmp_path, case):
    path, _ = saved
    change, what = COUNTERS[case]
    bad = _tampered(path, tmp_path / "bad.npz", change_header=change)
    with pytest.raises(ModelFileError, match=what):
        slide.Network.load(bad)


def test_an_untouched_round_trip_still_loads_and_trains_through_a_rehash(saved, tmp_path):
    """The checks accept everything the engine itself writes, including after rehashes."""
    path, train = saved
    again = _tampered(path, tmp_path / "same.npz")
    net = slide.Network.load(again)
    net.fit(train.X, train.Y, epochs=2, batch_size=50, progress=False)  # 1,200 samples: rehashes run
    net.save(tmp_path / "trained.npz")
    slide.Network.load(tmp_path / "trained.npz")


@pytest.mark.parametrize("case", ["ids far out of range", "ids just out of range", "offsets decreasing"])
def test_sparse_predict_on_a_hostile_file_exits_2_naming_the_array(saved, tmp_path, case):
    path, _ = saved
    bad = _tampered(path, tmp_path / "bad.npz", change_arrays=TAMPERINGS[case][0])
    r = run("predict", bad, path.parent / "test.txt", "--mode", "sparse", "--out", tmp_path / "top.txt")
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and f"{LAYER}{TAMPERINGS[case][1]}" in r.stderr, r.stderr
    assert not (tmp_path / "top.txt").exists()


@pytest.mark.parametrize("case", ["ids far out of range", "codes far out of range", "order with a repeat"])
def test_resume_from_a_crafted_checkpoint_exits_2(tmp_path_factory, tmp_path, case):
    out = tmp_path_factory.mktemp("runs") / "r"
    r = run("train", *FAST, "--train-samples", "1500", "--test-samples", "200", "--epochs", "1", "--out", out,
            "--set", "end_checkpoint_after=0")
    assert r.returncode == 0, r.stderr
    checkpoint = out / "checkpoint.npz"
    assert "lsh.ids" in str(read_header(checkpoint)["checksums"]), "the default run must be a sampled network"
    _tampered(checkpoint, checkpoint, change_arrays=TAMPERINGS[case][0])
    r = run("train", "--resume", out, "--epochs", "2", "--quiet")
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and f"{LAYER}{TAMPERINGS[case][1]}" in r.stderr, r.stderr


# ----------------------------------------------------------------------------- the neighbours' memory
# Its CSR arrays go to scipy's compiled routines, which trust them as the engine trusts its tables
# (the file fuzzer found out-of-bounds reads and heap corruption there under ASan).
def _memory_offsets_fall(arrays):
    arrays["neighbours.points.indptr"][3] = arrays["neighbours.points.indptr"][2] - 1


def _memory_offsets_overrun(arrays):
    arrays["neighbours.labels.indptr"][-1] += 10


def _memory_rows_disagree(arrays):
    arrays["neighbours.labels.indptr"] = arrays["neighbours.labels.indptr"][:-1].copy()


def _memory_id_out_of_range(arrays):
    arrays["neighbours.points.indices"][0] = 300


def _memory_negative_id(arrays):
    arrays["neighbours.labels.indices"][0] = -1


MEMORY = {"points' offsets fall": _memory_offsets_fall, "labels' offsets overrun": _memory_offsets_overrun,
          "labels for fewer rows": _memory_rows_disagree, "a feature id out of range": _memory_id_out_of_range,
          "a negative label id": _memory_negative_id}


@pytest.fixture(scope="module")
def saved_with_memory(saved, tmp_path_factory):
    _, train = saved
    net = slide.Network(300, 500, hidden=(8,), lsh=slide.LSHConfig(k=2, l=3), neighbours=5, threads=1, seed=0)
    net.fit(train.X, train.Y, epochs=1, batch_size=50, progress=False)
    path = tmp_path_factory.mktemp("memory") / "m.npz"
    net.save(path)
    assert "neighbours.points.indptr" in read_arrays(path)
    return path


@pytest.mark.parametrize("case", sorted(MEMORY))
def test_a_hostile_neighbour_memory_is_refused_before_scipy_sees_it(saved_with_memory, tmp_path, case):
    bad = _tampered(saved_with_memory, tmp_path / "bad.npz", change_arrays=MEMORY[case])
    with pytest.raises(ModelFileError, match=f"{bad}.*neighbour memory.*neighbours\\.(points|labels)"):
        slide.Network.load(bad)
