"""A generator of extreme-classification data with Amazon-670K's shape and label tail: a catalogue
of topics. It is not a stand-in for real data's accuracy: it ranks methods differently from the
real sets with many labels (the nearest neighbours' vote alone reaches P@1 0.50 on it and the network
alone 0.22, while on the real-data suite's Debian sets the vote adds about 0.01 and the tree methods
lead), so accuracy is judged on the real-data suite (benches.real_suite) and this generator serves
speed, memory and scale at the real shape.

`make_extreme_classification` gives every label its own clean feature signature, so every method
reaches P@1 ~0.9 on it. Real XC data (Amazon-670K: product descriptions -> co-purchased products)
is different in four ways, each of which this model copies:

* **A long label tail.** Label popularity is a power law over a random ranking (exponent 0.6), so
  at Amazon-670K's size (490,449 points, 5.45 labels each: 3.99 points per label on average) about
  80% of the labels that occur have five points or fewer while the most popular has ~2,000; at
  100k training points half the labels are never seen.
* **Labels that come together.** Labels belong to small topics (20 labels: a product line). A
  point's first label is drawn by popularity; each further one comes from the same topic with
  probability 0.9, as co-purchased products do, and repeats are drawn again.
* **Generic words.** A point's words are a mix: 25% from its labels' identifying words (12 per
  label, half from its topic's vocabulary), 45% from its topic's vocabulary (specific to the
  topic) and 30% from the whole corpus (Zipf: common words and rare, high-IDF noise alike).
* **TF-IDF rows.** Values are term counts times a smoothed inverse document frequency, L2-normalised.

So siblings in a topic look alike (the hard negatives LSH is meant to find) and rare labels can
barely be learned, unlike on the clean generator. Everything is a function of the seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from .synthetic import AMAZON670K_SHAPE, Split, split_at, unit_rows


def _zipf_cdf(n: int, power: float, offset: float) -> np.ndarray:
    w = 1.0 / np.arange(offset, n + offset, dtype=np.float64) ** power
    c = np.cumsum(w)
    return c / c[-1]


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, u), len(cdf) - 1)


def _check_positive(**values) -> None:
    for name, v in values.items():
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")


def _check_shares(n_labels: int, avg_words: float, avg_labels: float, same_topic: float,
                  word_mix: tuple[float, float, float]) -> None:
    if not 1.0 <= avg_labels <= n_labels:
        raise ValueError(f"avg_labels must be in [1, n_labels], got {avg_labels}")
    if not avg_words >= 1.0:
        raise ValueError(f"avg_words must be at least 1, got {avg_words}")
    if not 0.0 <= same_topic <= 1.0:
        raise ValueError(f"same_topic must be in [0, 1], got {same_topic}")
    if len(word_mix) != 3 or min(word_mix) < 0 or not np.isclose(sum(word_mix), 1.0):
        raise ValueError(f"word_mix must be three non-negative shares summing to 1, got {word_mix!r}")


def _label_slots(rng: np.random.Generator, n_labels: int, topic_size: int, n_topics: int, label_power: float
                 ) -> tuple[np.ndarray, ...]:
    """Labels sorted by topic into slots: (label of each slot, topic of each slot, popularity CDF
    over slots, popularity below each topic's first slot, each topic's total popularity)."""
    label_of_slot = rng.permutation(n_labels).astype(np.int32)
    topic_of_slot = np.arange(n_labels) // topic_size
    popularity = 1.0 / np.arange(1, n_labels + 1, dtype=np.float64)[rng.permutation(n_labels)] ** label_power
    slot_cdf = np.cumsum(popularity)
    topic_start = np.arange(n_topics) * topic_size
    topic_end = np.minimum(topic_start + topic_size, n_labels)
    below = np.concatenate([[0.0], slot_cdf])[topic_start]
    within = slot_cdf[topic_end - 1] - below
    return label_of_slot, topic_of_slot, slot_cdf, below, within


def _build(
    n_features: int,
    n_labels: int,
    *,
    avg_words: float = 85.0,
    avg_labels: float = 5.45,
    topic_size: int = 20,
    same_topic: float = 0.9,
    label_power: float = 0.6,
    topic_words: int = 400,
    topic_word_power: float = 0.0,
    label_words: int = 12,
    word_mix: tuple[float, float, float] = (0.25, 0.45, 0.30),
    seed: int = 0,
) -> "tuple[_Catalogue, np.random.Generator]":
    """The catalogue (topics, labels and their words), and the generator that goes on to draw its points.

    Args:
        avg_words: mean word occurrences per point; repeated words merge into one nonzero, so
            rows have fewer nonzeros (85 words give Amazon-670K's ~75).
        avg_labels: mean labels per point (1 + Poisson(avg_labels - 1)).
        topic_size: labels per topic.
        same_topic: chance that each label after a point's first comes from the first one's topic.
        label_power: exponent of the label popularity power law (lower = flatter, longer tail).
        topic_words: size of each topic's vocabulary.
        topic_word_power: Zipf exponent by which topics draw their vocabulary from the corpus's
            words (1: like the corpus, sharing its common words; 0: uniformly, so a topic's words
            are specific to it).
        label_words: words that identify one label (drawn from its topic's vocabulary and the corpus).
        word_mix: shares of a point's words drawn from its labels' words, its topic's vocabulary and
            the whole corpus.
    """
    _check_positive(n_features=n_features, n_labels=n_labels, topic_size=topic_size, topic_words=topic_words,
                    label_words=label_words)
    _check_shares(n_labels, avg_words, avg_labels, same_topic, word_mix)
    rng = np.random.default_rng(seed)
    topic_size = min(int(topic_size), n_labels)
    topic_words = min(int(topic_words), n_features)
    n_topics = -(-n_labels // topic_size)

    # Corpus word frequencies (Zipf); topics' vocabularies and labels' words are drawn from them.
    word_by_rank = rng.permutation(n_features).astype(np.int32)
    word_cdf = _zipf_cdf(n_features, 1.0, 20.0)
    corpus_words = lambda size: word_by_rank[_draw(word_cdf, rng.random(size))]  # noqa: E731
    topic_vocab = word_by_rank[_draw(_zipf_cdf(n_features, topic_word_power, 20.0), rng.random((n_topics, topic_words)))]
    vocab_cdf = _zipf_cdf(topic_words, 0.8, 5.0)  # a topic's own words are Zipf-distributed too

    # Labels sorted by topic (label id order is random); popularity is a power law over a random
    # ranking, so a topic holds head and tail labels alike.
    label_of_slot, topic_of_slot, slot_cdf, below, within = _label_slots(rng, n_labels, topic_size, n_topics,
                                                                         label_power)

    # Each label's identifying words: half from its topic's vocabulary, half from the corpus.
    from_topic = rng.random((n_labels, label_words)) < 0.5
    own = np.where(from_topic, topic_vocab[topic_of_slot[:, None], _draw(vocab_cdf, rng.random((n_labels, label_words)))],
                   corpus_words((n_labels, label_words)))

    model = _Catalogue(n_features, n_labels, avg_words, avg_labels, same_topic, label_words, word_mix, word_by_rank,
                       word_cdf, topic_vocab, vocab_cdf, label_of_slot, topic_of_slot, slot_cdf, below, within, own)
    return model, rng


def make_catalogue(n_samples: int, n_features: int, n_labels: int, *, seed: int = 0, **kwargs) -> Split:
    """Generate `n_samples` points (features CSR float32 TF-IDF rows, labels CSR) of a catalogue
    drawn with `seed`; the keyword arguments are `catalogue_chunks`'."""
    _check_positive(n_samples=n_samples)
    model, rng = _build(n_features, n_labels, seed=seed, **kwargs)
    return model.sample(n_samples, rng)


def catalogue_chunks(n_samples: int, n_features: int, n_labels: int, *, chunk: int, seed: int = 0, **kwargs
                     ) -> Iterator[Split]:
    """`n_samples` points of one catalogue (the one `make_catalogue` draws with this seed) in
    blocks of `chunk`, for data larger than memory. A single block equals `make_catalogue`'s
    points; with more, TF-IDF weights come from each block's own document frequencies."""
    _check_positive(n_samples=n_samples, chunk=chunk)
    model, rng = _build(n_features, n_labels, seed=seed, **kwargs)
    for start in range(0, n_samples, chunk):
        yield model.sample(min(chunk, n_samples - start), rng)


@dataclass(frozen=True)
class _Catalogue:
    n_features: int
    n_labels: int
    avg_words: float
    avg_labels: float
    same_topic: float
    label_words: int
    word_mix: tuple
    word_by_rank: np.ndarray
    word_cdf: np.ndarray
    topic_vocab: np.ndarray
    vocab_cdf: np.ndarray
    label_of_slot: np.ndarray
    topic_of_slot: np.ndarray
    slot_cdf: np.ndarray
    below: np.ndarray
    within: np.ndarray
    own: np.ndarray

    def sample(self, n_samples: int, rng: np.random.Generator) -> Split:
        n_features, n_labels, avg_words, avg_labels = self.n_features, self.n_labels, self.avg_words, self.avg_labels
        same_topic, label_words, word_mix, word_by_rank = self.same_topic, self.label_words, self.word_mix, self.word_by_rank
        word_cdf, topic_vocab, vocab_cdf, label_of_slot = self.word_cdf, self.topic_vocab, self.vocab_cdf, self.label_of_slot
        topic_of_slot, slot_cdf, below, within, own = self.topic_of_slot, self.slot_cdf, self.below, self.within, self.own
        total_pop = slot_cdf[-1]
        corpus_words = lambda size: word_by_rank[_draw(word_cdf, rng.random(size))]  # noqa: E731
        # Labels per point: the first by popularity, the rest from its topic or, sometimes, anywhere.
        counts = np.minimum(1 + rng.poisson(avg_labels - 1.0, size=n_samples), n_labels)
        first = _draw(slot_cdf, rng.random(n_samples) * total_pop)
        topic = topic_of_slot[first]
        rows = np.repeat(np.arange(n_samples), counts - 1)
        topic_of_extra = topic[rows]

        def draw_extra(which: np.ndarray) -> np.ndarray:
            t = topic_of_extra[which]
            u = rng.random(which.size)
            target = np.where(rng.random(which.size) < same_topic, below[t] + u * within[t], u * total_pop)
            return _draw(slot_cdf, target)

        rest = draw_extra(np.arange(rows.size))
        for _ in range(8):  # draw again the labels a point already has, so avg_labels holds after merging
            key = np.concatenate([np.arange(n_samples), rows]) * np.int64(n_labels) + np.concatenate([first, rest])
            _, keep = np.unique(key, return_index=True)
            repeated = np.setdiff1d(np.arange(key.size), keep) - n_samples  # first labels are never repeats
            if repeated.size == 0:
                break
            rest[repeated] = draw_extra(repeated)
        slots = np.concatenate([first, rest])
        label_rows = np.concatenate([np.arange(n_samples), rows])
        Y = sp.csr_matrix((np.ones(slots.size, np.float32), (label_rows, label_of_slot[slots])),
                          shape=(n_samples, n_labels))
        Y.sum_duplicates()
        Y.data[:] = 1.0

        # Words: each point's length is Poisson(avg_words), split by word_mix.
        length = np.maximum(1, rng.poisson(avg_words, size=n_samples))
        n_label_w = rng.binomial(length, word_mix[0])
        n_topic_w = rng.binomial(length - n_label_w, word_mix[1] / max(1e-12, word_mix[1] + word_mix[2]))
        n_corpus_w = length - n_label_w - n_topic_w
        # Label words: from a uniformly chosen label of the point, a random one of its words.
        lw_rows = np.repeat(np.arange(n_samples), n_label_w)
        start = np.concatenate([[0], np.cumsum(counts - 1)])  # where each point's extra labels begin in `rest`
        pick = (rng.random(lw_rows.size) * counts[lw_rows]).astype(np.int64)
        lw_slot = slots[np.where(pick == 0, lw_rows, n_samples + start[lw_rows] + pick - 1)]
        lw = own[lw_slot, rng.integers(0, label_words, size=lw_rows.size)]
        tw_rows = np.repeat(np.arange(n_samples), n_topic_w)
        tw = topic_vocab[topic[tw_rows], _draw(vocab_cdf, rng.random(tw_rows.size))]
        cw_rows = np.repeat(np.arange(n_samples), n_corpus_w)
        cw = corpus_words(cw_rows.size)

        all_rows = np.concatenate([lw_rows, tw_rows, cw_rows])
        X = sp.csr_matrix((np.ones(all_rows.size, np.float32), (all_rows, np.concatenate([lw, tw, cw]))),
                          shape=(n_samples, n_features), dtype=np.float32)
        X.sum_duplicates()  # term counts
        df = np.bincount(X.indices, minlength=n_features)
        idf = np.log((1.0 + n_samples) / (1.0 + df)).astype(np.float32) + 1.0
        X.data *= idf[X.indices]
        return Split(unit_rows(X), Y)


def catalogue_amazon670k(n_train: int = AMAZON670K_SHAPE["n_train"], n_test: int = AMAZON670K_SHAPE["n_test"], *,
                         seed: int = 0, **kwargs) -> tuple[Split, Split]:
    """Catalogue data of Amazon-670K's exact shape and statistics (135,909 features, 670,091 labels,
    ~75 nonzeros, ~5.45 labels per point, ~3.99 points per label over the full 490,449 training
    points), split into training and test points. Other keyword arguments go to `make_catalogue`."""
    s = AMAZON670K_SHAPE
    return split_at(make_catalogue(n_train + n_test, s["n_features"], s["n_labels"], avg_labels=s["avg_labels"],
                                   seed=seed, **kwargs), n_train)
