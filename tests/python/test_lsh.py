"""LSH quality against the exact oracle (true top-k by inner product), and table invariants."""

import numpy as np
import pytest

import slide
from slide import _core

FAMILIES = {
    "dwta": dict(family="dwta", k=3, l=50),
    "wta": dict(family="wta", k=3, l=50),
    "simhash": dict(family="simhash", k=8, l=50),
    "minhash": dict(family="minhash", k=3, l=50),
}


@pytest.fixture(scope="module")
def neurons_and_queries():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((10_000, 128)).astype(np.float32)
    Q = np.maximum(rng.standard_normal((300, 128)), 0).astype(np.float32)  # ReLU-like queries
    top10 = np.argsort(-(Q @ W.T), axis=1)[:, :10]
    return W, Q, top10


@pytest.mark.parametrize("name", list(FAMILIES))
def test_recall_of_true_top10_beats_random_sets(name, neurons_and_queries):
    W, Q, top10 = neurons_and_queries
    index = _core.LshIndex(slide.LSHConfig(**FAMILIES[name]).to_core(), W, 7)
    retrieved = index.query(Q)
    sizes = np.array([len(r) for r in retrieved])
    recall = np.mean([np.isin(top10[i], retrieved[i]).mean() for i in range(len(Q))])
    random_recall = sizes.mean() / W.shape[0]  # expected recall of a random set of equal size
    assert 0 < sizes.mean() < 0.5 * W.shape[0], f"{name}: retrieves {sizes.mean():.0f} of {W.shape[0]}"
    assert recall >= 1.7 * random_recall + 0.05, f"{name}: recall {recall:.3f} vs random {random_recall:.3f}"


@pytest.mark.parametrize("name", list(FAMILIES))
def test_hashing_is_deterministic_and_in_range(name, neurons_and_queries):
    W, Q, _ = neurons_and_queries
    cfg = slide.LSHConfig(**FAMILIES[name]).to_core()
    a = _core.LshIndex(cfg, W[:500], 3).buckets(Q)
    b = _core.LshIndex(cfg, W[:500], 3).buckets(Q)
    c = _core.LshIndex(cfg, W[:500], 4).buckets(Q)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any(), "a different seed must draw different hash functions"
    assert a.max() < 2 ** cfg.effective_range_bits
    # identical vectors land in identical buckets; a scaled vector too, for the rank-based families
    if name != "simhash":
        np.testing.assert_array_equal(_core.LshIndex(cfg, W[:10], 3).buckets(Q[:5] * 3.0),
                                      _core.LshIndex(cfg, W[:10], 3).buckets(Q[:5]))


def test_dwta_handles_all_zero_and_sparse_vectors():
    cfg = slide.LSHConfig(family="dwta", k=4, l=20).to_core()
    W = np.random.default_rng(1).standard_normal((100, 64)).astype(np.float32)
    index = _core.LshIndex(cfg, W, 1)
    q = np.zeros((3, 64), np.float32)
    q[1, 5] = 1.0
    q[2, ::9] = 2.0
    b = index.buckets(q)
    assert b.shape == (3, 20) and b.max() < 2 ** cfg.effective_range_bits


@pytest.mark.parametrize("policy", ["fifo", "reservoir"])
def test_bucket_size_bounds_storage(policy):
    W = np.random.default_rng(2).standard_normal((5000, 32)).astype(np.float32)
    cfg = slide.LSHConfig(family="simhash", k=2, l=4, bucket_size=16, bucket_policy=policy).to_core()
    index = _core.LshIndex(cfg, W, 1)
    assert index.stored == 4 * 4 * 16  # 4 tables x 4 buckets, every bucket full at 16
    Q = np.random.default_rng(3).standard_normal((20, 32)).astype(np.float32)
    assert all(len(r) <= 4 * 16 for r in index.query(Q))


def test_unbounded_buckets_store_every_neuron_once_per_table():
    W = np.random.default_rng(2).standard_normal((3000, 32)).astype(np.float32)
    index = _core.LshIndex(slide.LSHConfig(k=4, l=7, bucket_size=10**6).to_core(), W, 1)
    assert index.stored == 3000 * 7


@pytest.mark.parametrize("bad, match", [
    (dict(l=0), "LSHConfig.l must be >= 1"),
    (dict(k=0), "LSHConfig.k must be >= 1"),
    (dict(k=11, bin_size=8), "<= 32"),
    (dict(family="simhash", k=33), "<= 32"),
    (dict(range_bits=30), "range_bits"),
    (dict(bucket_size=0), "bucket_size"),
    (dict(rehash_every=0), "rehash_every"),
    (dict(schedule_growth=0.5), "schedule_growth"),
    (dict(rehash_min_updates=0), "rehash_min_updates"),
    (dict(batch_negatives=-1), "batch_negatives"),
    (dict(bin_size=256), "bin_size"),
])
def test_nonsense_lsh_settings_are_value_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        slide.Network(100, 1000, hidden=(32,), lsh=slide.LSHConfig(**bad), threads=1)


def test_lsh_config_rejects_unknown_names():
    with pytest.raises(ValueError, match="family"):
        slide.LSHConfig(family="lsh-magic")
    with pytest.raises(ValueError, match="bucket_policy"):
        slide.LSHConfig(bucket_policy="lru")
    with pytest.raises(ValueError, match="integer"):
        slide.LSHConfig(k=2.5)


def _train_stream(lsh, threads=1):
    from slide.datasets import make_train_test

    train, test = make_train_test(6000, 1000, 2000, 20_000, seed=5, avg_nnz=30, avg_labels=4)
    # neighbours=0: what the negatives teach the network, without the training points' vote on top
    net = slide.Network(2000, 20_000, hidden=(64,), lsh=lsh, threads=threads, seed=0, learning_rate=2e-3,
                        neighbours=0)
    history = net.fit(train.X, train.Y, epochs=3, batch_size=128, progress=False)
    return net, history, test


def test_batch_negatives_are_scored_and_keep_popular_labels_down():
    with_pool, h_pool, test = _train_stream(slide.LSHConfig(k=6, l=20, batch_negatives=64))
    without, h_none, _ = _train_stream(slide.LSHConfig(k=6, l=20, batch_negatives=0))
    assert h_pool[-1]["active_per_sample"] > h_none[-1]["active_per_sample"] + 30
    p_pool, p_none = with_pool.evaluate(test.X, test.Y)["P@1"], without.evaluate(test.X, test.Y)["P@1"]
    assert p_pool > p_none + 0.05, (p_pool, p_none)
    # without the pool the exact top-1 collapses onto a few popular labels
    assert len(np.unique(without.predict(test.X, k=1)[0])) < len(np.unique(with_pool.predict(test.X, k=1)[0]))


def test_rehash_min_updates_rehashes_fewer_neurons():
    counts = {}
    for m in (1, 4):
        net, _, _ = _train_stream(slide.LSHConfig(k=6, l=20, rehash_every=1000, rehash_min_updates=m))
        stats = net.table_stats()["layers.0"]
        assert stats["rehashes"] > 0
        counts[m] = stats["rehashed_neurons"]
    assert counts[4] < counts[1]


def test_schedule_growth_stretches_the_intervals():
    net, _, _ = _train_stream(slide.LSHConfig(k=6, l=20, rehash_every=500, rebuild_every=4000, schedule_growth=1.5))
    stats = net.table_stats()["layers.0"]
    assert stats["rehashes"] >= 2 and stats["generation"] >= 2
    assert stats["rehash_interval"] > 500 and stats["rebuild_interval"] > 4000


@pytest.mark.filterwarnings("ignore:threads=3 is more than:RuntimeWarning")
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_building_the_tables_hashes_every_neuron_once_whatever_the_threads(threads):
    net = slide.Network(300, 2000, hidden=(16,), threads=threads, lsh=slide.LSHConfig(k=3, l=8))
    assert net.table_stats()["layers.0"]["rehashed_neurons"] == 2000  # counted per thread, summed once
