"""Property-based tests (Hypothesis) of the Python API's argument handling: whatever a user passes,
the result is exactly what a simple reference reads from it, or a ValueError; never another
exception, a crash, or silently different data."""

import warnings

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import slide
from slide._inputs import as_features, as_labels

OUT = 12
label_value = st.one_of(st.integers(-3, OUT + 3), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                        st.booleans(), st.text(max_size=2), st.none())
row = st.one_of(label_value, st.lists(label_value, max_size=4), st.lists(st.lists(st.integers(0, OUT - 1),
                                                                                   max_size=2), max_size=2))


def reference_labels(Y, n_rows):
    """Rows of sorted unique ids, or None where the input is not a valid label list."""
    if len(Y) != n_rows:
        return None
    out = []
    for r in Y:
        items = r if isinstance(r, list) else [r]
        ids = []
        for v in items:
            if isinstance(v, bool) or isinstance(v, list) or v is None or isinstance(v, str):
                return None
            if isinstance(v, float):
                if not np.isfinite(v) or v != int(v):
                    return None
                v = int(v)
            if not 0 <= v < OUT:
                return None
            ids.append(int(v))
        out.append(sorted(set(ids)))
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(row, max_size=6), st.integers(0, 6))
def test_label_lists_are_read_exactly_or_refused(Y, n_rows):
    expected = reference_labels(Y, n_rows)
    try:
        got = as_labels(Y, OUT, n_rows)
    except ValueError:
        assert expected is None, (Y, expected)
        return
    assert expected is not None, Y
    assert [sorted(got[i].indices.tolist()) for i in range(n_rows)] == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 8), st.integers(1, 9), st.data())
def test_csr_features_with_any_index_arrays_are_read_exactly_or_refused(rows, cols, data):
    nnz = data.draw(st.integers(0, 12))
    indptr = np.array(data.draw(st.lists(st.integers(-2, nnz + 2), min_size=rows + 1, max_size=rows + 1)),
                      np.int64)
    if data.draw(st.booleans()):  # often a valid structure, so the exact comparison runs too
        indptr = np.sort(np.clip(indptr, 0, nnz))
        indptr[0], indptr[-1] = 0, nnz
    indices = np.array(data.draw(st.lists(st.integers(-1, cols), min_size=nnz, max_size=nnz)), np.int32)
    values = np.array(data.draw(st.lists(st.floats(-5, 5, width=32) | st.just(float("nan")), min_size=nnz,
                                         max_size=nnz)), np.float32)
    X = sp.csr_matrix((1, 1))
    X.indptr, X.indices, X.data, X._shape = indptr, indices, values, (rows, cols)
    valid = (indptr[0] == 0 and indptr[-1] == nnz and np.all(np.diff(indptr) >= 0)
             and np.all((indices >= 0) & (indices < cols)) and np.all(np.isfinite(values)))
    try:
        got = as_features(X, cols)
    except ValueError:
        assert not valid
        return
    assert valid
    dense = np.zeros((rows, cols), np.float64)
    for r in range(rows):
        for q in range(indptr[r], indptr[r + 1]):
            dense[r, indices[q]] += values[q]
    np.testing.assert_allclose(got.toarray(), dense, rtol=1e-6, atol=1e-6)


anything = st.one_of(st.integers(-2**70, 2**70), st.floats(), st.text(max_size=3), st.none(), st.booleans(),
                     st.lists(st.integers(-3, 70), max_size=3), st.tuples(st.integers(-3, 70)))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["input_dim", "output_dim", "hidden", "learning_rate", "threads", "seed",
                                        "beta1", "beta2", "eps", "optimizer", "precision", "lr_schedule"]),
                       anything, max_size=3))
def test_any_constructor_arguments_build_a_network_or_raise_value_error(kwargs):
    args = {"input_dim": 20, "output_dim": 30, "hidden": (8,), "lsh": None, "threads": 1, **kwargs}
    try:
        with warnings.catch_warnings():  # large thread counts warn; this test is about errors
            warnings.simplefilter("ignore")
            net = slide.Network(**args)
    except (ValueError, MemoryError):
        return
    assert net.input_dim >= 1 and net.output_dim >= 1 and all(h >= 1 for h in net.hidden)


lsh_field = st.sampled_from(["k", "l", "range_bits", "bin_size", "bucket_size", "min_active", "max_active",
                             "batch_active", "rehash_every", "rebuild_every", "rehash_min_updates",
                             "schedule_growth", "simhash_density", "family", "bucket_policy", "minhash_topk",
                             "batch_negatives", "late_min_active", "late_after"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(lsh_field, anything, max_size=3))
def test_any_lsh_settings_build_a_network_or_raise_value_error(kwargs):
    try:
        lsh = slide.LSHConfig(**kwargs)
        slide.Network(20, 30, hidden=(8,), lsh=lsh, threads=1)
    except (ValueError, MemoryError):
        pass


def test_the_package_ships_its_type_hints():
    from pathlib import Path

    assert (Path(slide.__file__).parent / "py.typed").is_file(), "type checkers read slide's hints only with py.typed"
