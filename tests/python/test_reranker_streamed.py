"""The shortlist re-ranker trained from a shard folder (`slide.datasets.Stream`), as streamed runs
train it: from several shards, Adagrad passes equal to passes over the same rows in memory in the
same order; from one shard, the squared hinge memory solves; either way skipping the rows held out
for validation; and `fit`, `slide train --stream` and model files carry it."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide._inputs import as_features
from slide.cli import main
from slide.datasets import Stream, make_catalogue, write_xc
from slide.datasets.shards import write_split
from slide.reranker import HINGE_SHORTLIST_FACTOR, ShortlistReranker


def _data(n=500, seed=1):
    return make_catalogue(n, 300, 150, seed=seed, avg_words=15, avg_labels=2)


def _network(**kw):
    return slide.Network(300, 150, hidden=[16], threads=1, seed=2, neighbours=0, rerank=6, **kw)


def _in_memory_oracle(net, X, Y, rows, epochs):
    """What the streamed re-ranker must equal: passes over `rows` of the whole data in that order,
    each point's shortlist the network's top `rerank` labels."""
    oracle = ShortlistReranker(net.input_dim, net.output_dim, net.rerank)
    X = as_features(X, net.input_dim)  # indices sorted in each row, as fit_reranker takes them
    candidates = net.ranks.top_k(net, X, net.rerank, True)[0]
    losses = [oracle.train_pass(X, Y, candidates, rows, threads=1) for _ in range(epochs)]
    return oracle, losses


@pytest.mark.parametrize("held", [np.array([], np.int64), np.array([0, 69, 70, 71, 250, 499])])
def test_streamed_reranker_equals_in_memory_passes_over_the_same_rows(tmp_path, held):
    d = _data()
    net = _network()
    net.fit(d.X, d.Y, epochs=1, progress=False)
    stream = Stream(write_split(tmp_path / "s", d, shard_rows=70).path, shuffle=False)  # 8 shards, the last short
    if held.size:
        stream.hold_out(held)
    losses = net.fit_reranker(stream, epochs=2)
    rows = np.setdiff1d(np.arange(len(d)), held)
    oracle, want = _in_memory_oracle(net, d.X, d.Y, rows, epochs=2)
    np.testing.assert_array_equal(net.reranker.slots, oracle.slots)
    np.testing.assert_array_equal(net.reranker.bias, oracle.bias)
    assert losses == pytest.approx(want, rel=1e-6)
    assert losses[1] < losses[0]


@pytest.mark.parametrize("held", [np.array([], np.int64), np.array([0, 69, 250, 499])])
def test_a_stream_of_one_shard_solves_what_memory_solves(tmp_path, held):
    d = _data()
    net = _network()
    net.fit(d.X, d.Y, epochs=1, progress=False)
    rows = np.setdiff1d(np.arange(len(d)), held)
    net.fit_reranker(d.X[rows], d.Y[rows])
    in_memory = net.reranker
    stream = Stream(write_split(tmp_path / "s", d, shard_rows=1000).path, seed=3)
    if held.size:
        stream.hold_out(held)
    losses = net.fit_reranker(stream, epochs=2)
    assert net.reranker.trained_on == in_memory.trained_on == HINGE_SHORTLIST_FACTOR * net.rerank
    np.testing.assert_array_equal(net.reranker.slots, in_memory.slots)
    np.testing.assert_array_equal(net.reranker.bias, in_memory.bias)
    assert len(losses) == 1 and np.all(in_memory.slots[:, 1] == 0)  # no Adagrad sums: the hinge solved it


def test_a_shuffled_stream_trains_a_reranker_that_ranks_like_the_in_memory_one(tmp_path):
    d, test = _data(), _data(200, seed=5)
    net = _network()
    net.fit(d.X, d.Y, epochs=3, progress=False)
    net.fit_reranker(d.X, d.Y)
    in_memory = net.evaluate(test.X, test.Y)["P@1"]
    net.fit_reranker(Stream(write_split(tmp_path / "s", d, shard_rows=90).path, seed=4))
    streamed = net.evaluate(test.X, test.Y)["P@1"]
    assert abs(streamed - in_memory) <= 0.03, (streamed, in_memory)


def test_fit_on_a_stream_trains_the_reranker_and_picks_its_weight_on_validation(tmp_path):
    d, val = _data(), _data(150, seed=7)
    stream = Stream(write_split(tmp_path / "s", d, shard_rows=100).path)
    net = _network(neighbour_weight=1.0)
    net.neighbours = 5  # the vote needs points in memory: a stream has none, and training says so
    net.fit(stream, epochs=2, validation_data=(val.X, val.Y), progress=False)
    assert net.memory is None and net.reranker is not None and net.reranker.shortlist == 6
    assert net.rerank_weight in slide.reranker.WEIGHTS or net.weight_choice.learned  # learned: off the grid
    assert net.weight_choice.grid[1] in slide.reranker.WEIGHTS
    saved = tmp_path / "model.npz"
    net.save(saved)
    again = slide.Network.load(saved)
    np.testing.assert_array_equal(again.reranker.slots[:, 0], net.reranker.slots[:, 0])
    np.testing.assert_array_equal(again.predict(val.X, k=3)[0], net.predict(val.X, k=3)[0])


def test_fit_reranker_refuses_what_it_cannot_train_on(tmp_path):
    d = _data()
    net = _network()
    net.fit(d.X, d.Y, epochs=1, progress=False)
    stream = Stream(write_split(tmp_path / "s", d, shard_rows=100).path)
    with pytest.raises(ValueError, match="without Y"):
        net.fit_reranker(stream, d.Y)
    with pytest.raises(ValueError, match="needs Y"):
        net.fit_reranker(d.X)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        net.fit_reranker(stream, epochs=0)
    other = _data()
    wide = sp.hstack([other.X, sp.csr_matrix((len(other), 5), dtype=np.float32)]).tocsr()
    folder = write_split(tmp_path / "wide", slide.datasets.Split(wide, other.Y), shard_rows=100)
    with pytest.raises(ValueError, match="305 features"):
        net.fit_reranker(Stream(folder.path))


def test_slide_train_streamed_writes_a_model_with_its_reranker(tmp_path, capsys):
    d = _data(600, seed=3)
    write_xc(tmp_path / "train.txt", d.X[:500], d.Y[:500])
    write_xc(tmp_path / "test.txt", d.X[500:], d.Y[500:])
    code = main(["train", "--train", str(tmp_path / "train.txt"), "--stream", "--test", str(tmp_path / "test.txt"),
                 "--epochs", "1", "--rerank", "5", "--neighbours", "0", "--validation-split", "0.1",
                 "--out", str(tmp_path / "run"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "streamed from" in out and "predictions re-rank the network's 5 best labels" in out
    # 500 points convert into one shard: the squared hinge on lists of 4 x 5
    assert ("after the last epoch: training the re-ranker (each label's squared hinge solved on each point's 20 "
            "best labels by the network, found by a scan of its") in out and "with BF16 products where the CPU has AVX-512 BF16" in out
    final = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()][-1]
    assert final["kind"] == "final" and final["fusion_weights_kept"] in ("grid", "learned")
    assert final["rerank_weight"] in slide.reranker.WEIGHTS or final["fusion_weights_kept"] == "learned"
    assert final["fusion_seconds"] > 0
    model = slide.Network.load(tmp_path / "run" / "model.npz")
    assert model.reranker is not None and model.reranker.shortlist == 5 and model.reranker.trained_on == 20
