"""The re-ranker scores only the labels it trained on (slide.reranker.OUTSIDE_SCORE): a candidate
outside the network's top `trained_on` labels (a voted label the network ranks low, or a rank
beyond them when k asks for more) scores -1, every other candidate its classifier's score; model
files keep `trained_on`, files written before it load trusting the shortlist only, and hostile
values are refused."""

import numpy as np
import pytest

import slide
from slide.model_file import ModelFileError
from slide.prediction.fused import VotedNetwork
from slide.reranker import HINGE_SHORTLIST_FACTOR, OUTSIDE_SCORE, ShortlistReranker

from .test_reranker import RERANK as SHORTLIST
from .test_reranker import reranked, tampered


@pytest.fixture(scope="module")
def voted(tmp_path_factory):
    return reranked(tmp_path_factory.mktemp("domain"), neighbours=10)


def test_in_memory_training_records_the_width_of_its_lists(voted):
    net, _, _ = voted
    assert net.memory is not None and net.reranker is not None
    assert net.reranker.trained_on == HINGE_SHORTLIST_FACTOR * SHORTLIST


@pytest.mark.parametrize("k", [5, 4 * SHORTLIST + 15])
def test_candidates_outside_the_trained_lists_score_the_negative_target(voted, k):
    net, _, test = voted
    # Composed whatever weights validation picked, so that both the vote and the re-ranker take part
    fusion, _ = VotedNetwork(net, net.memory, net.neighbours, net.reranker).fusion(test.X, k, True)
    known = net.ranks.top_k(net, test.X, net.reranker.trained_on, True)[0]
    inside = np.array([label in known[row] for row, label in zip(fusion.rows, fusion.ids)])
    # Both kinds occur, so each half of the rule is exercised
    assert inside.sum() > 100 and (~inside).sum() > 100
    assert np.all(fusion.rerank[~inside] == np.float32(OUTSIDE_SCORE))
    scored = net.reranker.scores(test.X, fusion.rows[inside], fusion.ids[inside])
    assert np.array_equal(fusion.rerank[inside], scored)
    # The classifiers' own scores outside their lists are not -1: the rule, not the model, decides
    assert not np.all(net.reranker.scores(test.X, fusion.rows[~inside], fusion.ids[~inside]) == OUTSIDE_SCORE)


def test_a_model_file_keeps_trained_on(voted):
    net, path, test = voted
    back = slide.Network.load(path)
    assert back.reranker.trained_on == net.reranker.trained_on
    assert np.array_equal(back.predict(test.X, k=5)[0], net.predict(test.X, k=5)[0])


def test_a_file_from_before_trained_on_trusts_the_shortlist_only(voted, tmp_path):
    _, path, _ = voted
    old = slide.Network.load(tampered(path, tmp_path / "old.npz", lambda a: a.pop("reranker.trained_on")))
    assert old.reranker.trained_on == old.reranker.shortlist == SHORTLIST


@pytest.mark.parametrize("value", [np.array([SHORTLIST - 1]), np.array([9001]), np.array([40, 40])])
def test_a_hostile_trained_on_is_refused(voted, tmp_path, value):
    _, path, _ = voted
    bad = tampered(path, tmp_path / "bad.npz", lambda a: a.update({"reranker.trained_on": value.astype(np.int64)}))
    with pytest.raises(ModelFileError, match="reranker.trained_on must be one count in") as e:
        slide.Network.load(bad)
    assert str(bad) in str(e.value)


def test_trained_on_below_the_shortlist_is_refused():
    with pytest.raises(ValueError, match="trained_on must be in"):
        ShortlistReranker(10, 20, shortlist=5, trained_on=4)
    assert ShortlistReranker(10, 20, shortlist=5).trained_on == 5
