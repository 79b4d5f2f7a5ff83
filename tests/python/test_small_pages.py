"""slide.small_pages: large copies on ordinary pages, used for the parameter snapshots validation
takes; they must behave as any NumPy array would."""

import io
import mmap
import pickle

import numpy as np
import pytest

import slide
from slide import small_pages
from slide.early_stopping import restore, snapshot

LARGE = (small_pages.HUGE_PAGE_ADVICE_FROM // 4 + 5, )  # float32 values just past NumPy's huge-page size


def _own_mapping(a):
    """Whether the memory under `a` (through its views) is an mmap of its own."""
    base = a.base
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def test_a_large_array_is_its_own_mapping_without_huge_pages():
    if not hasattr(mmap, "MADV_NOHUGEPAGE"):
        pytest.skip("this platform cannot ask for small pages")
    a = small_pages.empty(LARGE, np.float32)
    assert _own_mapping(a)
    assert a.shape == LARGE and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable


def test_a_small_array_is_an_ordinary_one():
    a = small_pages.empty((3, 4), np.int64)
    assert a.shape == (3, 4) and a.dtype == np.int64 and not _own_mapping(a)


@pytest.mark.parametrize("shape", [LARGE, (1000, 1100), (7,)])
def test_a_copy_holds_the_values_and_survives_pickle_and_npz(shape):
    values = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    c = small_pages.copy(values)
    np.testing.assert_array_equal(c, values)
    c[0] += 1  # writable, and its own memory
    assert c.reshape(-1)[0] != values.reshape(-1)[0]
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(c)), c)
    buffer = io.BytesIO()
    np.savez(buffer, c=c)
    buffer.seek(0)
    np.testing.assert_array_equal(np.load(buffer)["c"], c)


def test_a_snapshot_on_small_pages_restores_the_network_bit_for_bit():
    net = slide.Network(5000, 2000, hidden=[256], threads=1, seed=3)  # input weights 5 MB: past 4 MiB
    before = snapshot(net)
    assert any(_own_mapping(a) for a in before.values()) or not hasattr(mmap, "MADV_NOHUGEPAGE")
    w = net.weights()
    w["layers.0.weight"][...] += 1.0
    restore(net, before)
    for name, values in before.items():
        np.testing.assert_array_equal(net.weights()[name], values)
