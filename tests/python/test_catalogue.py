"""The catalogue generator: published XC statistics (labels and nonzeros per point, points per label,
a long tail), labels that come in topics, TF-IDF rows, determinism and argument errors."""

import numpy as np
import pytest

from slide.datasets import make_catalogue


def _cooccurring(Y) -> np.ndarray:
    """For each label, how many other labels share a point with it."""
    Yb = (Y != 0).astype(np.int32)
    co = (Yb.T @ Yb).tocsr()
    co.setdiag(0)
    co.eliminate_zeros()
    return np.diff(co.indptr)


def test_deterministic_shaped_and_normalised():
    a = make_catalogue(3000, 20_000, 30_000, seed=3)
    b = make_catalogue(3000, 20_000, 30_000, seed=3)
    c = make_catalogue(3000, 20_000, 30_000, seed=4)
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0
    assert (a.X != c.X).nnz > 0
    assert a.X.shape == (3000, 20_000) and a.Y.shape == (3000, 30_000) and a.X.dtype == np.float32
    np.testing.assert_allclose(np.sqrt(a.X.multiply(a.X).sum(axis=1)).A.ravel(), 1.0, rtol=1e-4)
    assert a.X.data.min() > 0


def test_amazon_statistics_hold_after_merging_repeats():
    # Amazon-670K's proportions scaled down: ~3.99 training points per label.
    d = make_catalogue(30_000, 30_000, 41_000, seed=0)
    labels_per_point = d.Y.getnnz(axis=1).mean()
    assert 5.2 <= labels_per_point <= 5.6, labels_per_point  # 5.45 published
    nnz = d.X.getnnz(axis=1).mean()
    assert 68 <= nnz <= 80, nnz  # ~75 published
    freq = np.asarray((d.Y != 0).sum(axis=0)).ravel()
    assert 3.6 <= freq.mean() <= 4.2, freq.mean()  # 3.99 published
    seen = freq[freq > 0]
    assert (seen <= 5).mean() > 0.6  # most labels have a handful of points
    assert seen.max() > 40 * seen.mean()  # and a few are popular


def test_labels_of_a_point_come_from_its_topic():
    together = make_catalogue(5000, 5_000, 2_000, topic_size=5, same_topic=1.0, seed=1)
    anywhere = make_catalogue(5000, 5_000, 2_000, topic_size=5, same_topic=0.0, seed=1)
    assert _cooccurring(together.Y).max() <= 4  # only its topic's other 4 labels
    assert np.median(_cooccurring(anywhere.Y)) > 10


def test_words_carry_the_labels_only_as_much_as_word_mix_says():
    """A label's words: with all words from labels, points sharing a label share many words; with
    none, no more than any two points of one topic do."""
    def shared_words(mix):
        d = make_catalogue(4000, 20_000, 400, avg_labels=1.0, topic_size=400, word_mix=mix, seed=2)
        labels = d.Y.indices
        first = {}
        same, other = [], []
        Xb = (d.X != 0).astype(np.int32).tocsr()
        for i, label in enumerate(labels[:2000]):
            if label in first:
                same.append(Xb[i].multiply(Xb[first[label]]).sum())
                other.append(Xb[i].multiply(Xb[i - 1]).sum())
            else:
                first[label] = i
        return np.mean(same) - np.mean(other)

    assert shared_words((1.0, 0.0, 0.0)) > 5
    assert abs(shared_words((0.0, 0.5, 0.5))) < 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(topic_size=0), "topic_size"),
    (dict(label_words=2.5), "label_words"),
    (dict(same_topic=1.5), "same_topic"),
    (dict(avg_labels=0.5), "avg_labels"),
    (dict(avg_words=0), "avg_words"),
    (dict(word_mix=(0.5, 0.5, 0.5)), "word_mix"),
    (dict(word_mix=(1.0, 0.0)), "word_mix"),
])
def test_bad_arguments_name_the_setting(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_catalogue(10, 100, 30, **kwargs)


def test_amazon_shaped_catalogue_is_a_named_dataset():
    from slide.cli.sources import GENERATED
    from slide.datasets import catalogue_amazon670k
    from slide.datasets.registry import DATASETS

    train, test = catalogue_amazon670k(n_train=2000, n_test=500, seed=5)
    assert train.X.shape == (2000, 135_909) and test.Y.shape == (500, 670_091)
    generated = {name for name, info in DATASETS.items() if info.kind == "synthetic" and name != "default"}
    assert generated == set(GENERATED) and "catalogue-amazon670k" in generated
