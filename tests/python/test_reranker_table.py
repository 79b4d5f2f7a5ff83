"""The re-ranker's hashed table is sized from the (label, feature) pairs its problem could make
(slide.reranker.table_bits): at most 2^BITS slots, 2^PAIR_SLOT_BITS a pair below that, never fewer
than 2^MIN_BITS; model files keep whatever size they were trained with."""

import numpy as np
import pytest

import slide
from slide.datasets import make_train_test
from slide.reranker import BITS, MIN_BITS, PAIR_SLOT_BITS, ShortlistReranker, table_bits


@pytest.mark.parametrize("features, labels, bits", [
    (499, 374, 22),        # Corel5k: 186,626 pairs -> 2^18 -> 16 slots a pair
    (500, 983, 23),        # Delicious
    (1 << 10, 1 << 10, 24),  # 2^20 pairs: 2^24, the cap
    (400, 9000, 24),       # more pairs than the cap allows 16 slots for
    (30, 20, 20),          # 600 pairs: the floor
    (1, 1, 20),
])
def test_table_bits_follow_the_pairs(features, labels, bits):
    assert table_bits(features, labels) == bits
    assert MIN_BITS <= bits <= BITS
    assert ShortlistReranker(features, labels, shortlist=1).slots.shape == (1 << bits, 2)
    assert ShortlistReranker(features, labels, shortlist=1, bits=12).slots.shape == (1 << 12, 2)


def test_every_pair_has_its_slots_below_the_cap():
    for pairs_bits in range(0, BITS - PAIR_SLOT_BITS + 1):
        bits = table_bits(1 << pairs_bits, 1)
        assert bits == max(MIN_BITS, pairs_bits + PAIR_SLOT_BITS)


def test_a_small_problem_trains_and_saves_a_small_table(tmp_path):
    train, test = make_train_test(900, 200, 600, 300, seed=2, avg_nnz=12, avg_labels=2)
    net = slide.Network(600, 300, hidden=(16,), rerank=5, threads=2, seed=0)
    net.fit(train.X, train.Y, epochs=2, batch_size=64, validation_split=0.1, progress=False)
    assert net.reranker.bits == table_bits(600, 300) == 22 < BITS
    assert np.any(net.reranker.slots[:, 0] != 0)
    net.save(tmp_path / "m.npz")
    back = slide.Network.load(tmp_path / "m.npz")
    assert back.reranker.bits == 22
    np.testing.assert_array_equal(back.reranker.slots[:, 0], net.reranker.slots[:, 0])
    assert np.array_equal(back.predict(test.X, k=5)[0], net.predict(test.X, k=5)[0])
