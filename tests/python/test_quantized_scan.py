"""The int8 scan with fp32 rescoring (train/quantized_scan.h) against exact top-k: it may only
ever be faster, never different."""

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide import _core

quantized_top_k = _core.testing.quantized_top_k


def _exact_top_k(weight, bias, hidden, k):
    scores = hidden.astype(np.float64) @ weight.T.astype(np.float64) + bias
    ids = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return ids, np.take_along_axis(scores, ids, axis=1)


@pytest.mark.parametrize("rows,width,samples,k", [(1, 8, 1, 1), (700, 64, 5, 5), (1500, 100, 17, 3),
                                                  (2049, 128, 33, 10), (600, 200, 2, 600)])
def test_random_layers_give_the_exact_top_k(rows, width, samples, k):
    """Continuous random weights (ties improbable) over several 512-row passes, odd widths padded
    to the kernel's step, and k from 1 to every row."""
    rng = np.random.default_rng(rows + width + samples + k)
    weight = rng.standard_normal((rows, width)).astype(np.float32)
    bias = rng.standard_normal(rows).astype(np.float32)
    hidden = np.maximum(rng.standard_normal((samples, width)), 0).astype(np.float32)
    ids, scores = quantized_top_k(weight, bias, hidden, k)
    want_ids, want_scores = _exact_top_k(weight, bias, hidden, k)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-4)


def test_near_ties_among_thousands_of_rows_are_resolved_exactly():
    """Rows that differ by less than the int8 rounding: the scan must keep every one of them."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal(128).astype(np.float32)
    weight = (base + 1e-3 * rng.standard_normal((5000, 128))).astype(np.float32)
    bias = np.zeros(5000, np.float32)
    hidden = np.abs(rng.standard_normal((8, 128))).astype(np.float32)
    ids, _ = quantized_top_k(weight, bias, hidden, 5)
    np.testing.assert_array_equal(ids, _exact_top_k(weight, bias, hidden, 5)[0])


def test_a_row_whose_int8_score_is_off_by_almost_the_whole_bound_still_wins():
    """Row A's weights are all 127 and the sample's values 0.49 steps above the grid (they round
    down to 0), so its int8 score misses 96% of the worst-case bound |w|_1 step / 2; row B is
    represented exactly and scores higher in int8. A wins in exact arithmetic: a bound any tighter
    than the true one (half of its weight term, say) drops A."""
    width = 128
    hidden = np.full((1, width), 0.49, np.float32)
    hidden[0, 0] = 63.0  # the sample's largest value: the quantization step is exactly 1
    a = np.full(width, 127.0, np.float32)
    a[0] = 0.0
    b = np.zeros(width, np.float32)
    b[0] = 127.0
    rng = np.random.default_rng(0)
    filler = rng.uniform(-1, 1, (3000, width)).astype(np.float32)
    weight = np.vstack([filler, a, b]).astype(np.float32)
    bias = np.concatenate([np.full(3000, -1e4, np.float32), [200.0, 0.0]]).astype(np.float32)
    assert _exact_top_k(weight, bias, hidden, 2)[0][0].tolist() == [3000, 3001]  # A 8103.0, B 8001.0
    ids, _ = quantized_top_k(weight, bias, hidden, 1)
    assert ids.tolist() == [[3000]]


def test_negative_or_non_finite_hidden_values_are_declined():
    """The bound needs hidden values in [0, inf): anything else goes back to the fp32 scan."""
    weight, bias = np.ones((10, 64), np.float32), np.zeros(10, np.float32)
    for bad in (-1.0, np.nan, np.inf):
        hidden = np.ones((2, 64), np.float32)
        hidden[1, 5] = bad
        assert quantized_top_k(weight, bias, hidden, 3) is None
    weight[3, 3] = np.nan
    assert quantized_top_k(weight, bias, np.ones((2, 64), np.float32), 3) is None


def test_all_zero_samples_and_rows_rank_by_bias():
    weight = np.zeros((600, 64), np.float32)
    weight[:300] = 1.0
    bias = np.arange(600, dtype=np.float32)
    ids, scores = quantized_top_k(weight, bias, np.zeros((3, 64), np.float32), 4)
    assert ids.tolist() == [[599, 598, 597, 596]] * 3
    assert scores.tolist() == [[599.0, 598.0, 597.0, 596.0]] * 3


def _assert_the_fp32_top_k(ids, scores, fp32_ids, fp32_scores, tolerance=1e-5):
    """The int8 scan's answer is the fp32 GEMM's up to the rounding of sums taken in another order:
    the same scores position by position, and another label only where fp32 itself scores that
    label within the rounding of the one it put there (a near-tie, where either order is the
    top-k). fp32_ids/fp32_scores rank a few more than k, so a tie at the k-th place is seen."""
    k = ids.shape[1]
    np.testing.assert_allclose(scores, fp32_scores[:, :k], rtol=tolerance, atol=tolerance)
    for row, place in zip(*np.nonzero(ids != fp32_ids[:, :k])):
        tied = np.isclose(fp32_scores[row], fp32_scores[row, place], rtol=tolerance, atol=tolerance)
        assert ids[row, place] in fp32_ids[row][tied], (
            f"sample {row}, place {place}: label {ids[row, place]} is not among fp32's near-ties "
            f"{fp32_ids[row][tied].tolist()} at score {fp32_scores[row, place]}")
    assert all(len(set(labels)) == k for labels in ids.tolist()), "a label appears twice in one top-k"


def test_a_trained_network_predicts_the_same_labels_with_either_scan():
    """Dense prediction through the network: the int8 scan (the default from 4,096 outputs and 64
    samples) returns the fp32 GEMM's labels and scores."""
    rng = np.random.default_rng(3)
    X = sp.random(400, 300, density=0.05, format="csr", random_state=3, dtype=np.float32)
    Y = sp.csr_matrix((np.ones(400, np.float32), (np.arange(400), rng.integers(0, 5000, 400))), shape=(400, 5000))
    net = slide.Network(input_dim=300, output_dim=5000, hidden=(64,), threads=2, seed=3)
    net.fit(X, Y, epochs=2)
    c = net._core
    fp32 = c.predict(X.indptr, X.indices, X.data, 10, True, False, "fp32")
    for scan in ("int8", "auto"):
        ids, scores = c.predict(X.indptr, X.indices, X.data, 5, True, False, scan)
        _assert_the_fp32_top_k(ids, scores, *fp32)


def test_the_scan_is_a_checked_choice():
    net = slide.Network(input_dim=10, output_dim=20, hidden=(8,), threads=1)
    X = sp.csr_matrix(np.ones((2, 10), np.float32))
    with pytest.raises(ValueError, match="scan must be"):
        net._core.predict(X.indptr, X.indices, X.data, 3, True, False, "int4")
    with pytest.raises(ValueError, match="normaliser needs the fp32 scan"):
        net._core.predict(X.indptr, X.indices, X.data, 3, True, True, "int8")


@pytest.fixture
def wide_network():
    """Wide enough (and predicted on enough samples) for predict to take the int8 scan by itself."""
    rng = np.random.default_rng(11)
    X = sp.random(300, 200, density=0.05, format="csr", dtype=np.float32, random_state=rng)
    Y = sp.csr_matrix((np.ones(300, np.float32), rng.integers(0, 5000, 300), np.arange(301)), shape=(300, 5000))
    net = slide.Network(200, 5000, hidden=16, mode="batch", threads=2, seed=0)
    net.fit(X, Y, epochs=1, progress=False)
    return net, X, Y


def _fp32(net, X, k=10):
    return net._core.predict(X.indptr, X.indices, X.data, k, True, False, "fp32")


def test_the_quantized_layer_is_kept_while_the_weights_are_unchanged(wide_network):
    net, X, _ = wide_network
    cache = net._scan_cache
    first = net.predict(X, k=5, use_neighbours=False)
    assert (cache.misses, cache.hits) == (1, 0)
    again = net.predict(X, k=5, use_neighbours=False)
    assert (cache.misses, cache.hits) == (1, 1)
    np.testing.assert_array_equal(first[0], again[0])
    _assert_the_fp32_top_k(*first, *_fp32(net, X))


def test_training_and_writes_into_the_weights_make_it_again(wide_network):
    net, X, Y = wide_network
    net.predict(X, k=5, use_neighbours=False)
    net.partial_fit(X[:64], Y[:64])
    ids, scores = net.predict(X, k=5, use_neighbours=False)
    assert net._scan_cache.misses == 2
    _assert_the_fp32_top_k(ids, scores, *_fp32(net, X))
    # A user's write into one weight, through the writable views weights() hands out: the copy
    # made before it must not be used. The row becomes every sample's best.
    W = net.weights()["layers.0.weight"]
    W[1234] = 100.0
    ids, scores = net.predict(X, k=5, use_neighbours=False)
    assert net._scan_cache.misses == 3 and (ids[:, 0] == 1234).all()
    _assert_the_fp32_top_k(ids, scores, *_fp32(net, X))


def test_the_weights_fingerprint_sees_a_single_bit():
    net = slide.Network(50, 4096, hidden=8, mode="batch", threads=1, seed=0)
    X = sp.random(64, 50, density=0.2, format="csr", dtype=np.float32, random_state=np.random.default_rng(1))
    net.predict(X, use_neighbours=False)
    W = net.weights()["layers.0.weight"]
    bits = W.view(np.uint32)
    bits[4095, 7] ^= 1  # the last row's last weight, one ulp
    net.predict(X, use_neighbours=False)
    assert net._scan_cache.misses == 2
