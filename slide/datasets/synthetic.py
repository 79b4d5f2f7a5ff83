"""A generator of learnable extreme-classification problems of any shape.

Each label owns a random "signature" of features; a sample draws its labels from a power-law
popularity (a few head labels, a long tail, as in Amazon-670K) and its features mostly from its
labels' signatures, plus background features drawn by a Zipf-like feature popularity. Rows are
L2-normalised, like TF-IDF inputs. Everything is a function of the seed.

Labels can also come in clusters of near-duplicates (``cluster_size > 1``), as products of one kind
do in a real catalogue: siblings share part of their signature, so telling them apart needs the
siblings as negatives, which uniformly drawn negatives almost never are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

# Amazon-670K (Extreme Classification Repository): features, labels, train, test, labels/point, nnz/point.
AMAZON670K_SHAPE = dict(n_features=135_909, n_labels=670_091, n_train=490_449, n_test=153_025,
                        avg_labels=5.45, avg_nnz=75.0)


@dataclass
class Split:
    """Features and labels of one split."""

    X: sp.csr_matrix
    Y: sp.csr_matrix

    def __len__(self) -> int:
        return self.X.shape[0]


def make_extreme_classification(
    n_samples: int,
    n_features: int,
    n_labels: int,
    *,
    avg_nnz: float = 75.0,
    avg_labels: float = 5.45,
    label_power: float = 1.0,
    signature_size: int = 24,
    background: float = 0.2,
    cluster_size: int = 1,
    cluster_share: float = 0.5,
    seed: int = 0,
) -> Split:
    """Generate `n_samples` points (features CSR float32, labels CSR).

    Args:
        avg_nnz: target mean nonzeros per row (duplicates merge, so the result is slightly lower).
        avg_labels: mean labels per point (1 + Poisson(avg_labels - 1)).
        label_power: exponent of the label popularity power law (higher = heavier head).
        signature_size: features that characterise each label.
        background: share of a row's features drawn at random instead of from its labels.
        cluster_size: labels per cluster of near-duplicates (1: every label is independent).
        cluster_share: share of a clustered label's signature taken from its cluster's, spread
            evenly over the signature so every window a sample draws holds both kinds.
    """
    _check_generator_arguments(n_samples, n_features, n_labels, avg_nnz, avg_labels, background, cluster_size,
                               cluster_share)
    rng = np.random.default_rng(seed)
    signature_size = int(min(signature_size, n_features))
    # Label popularity: power law over a random ranking of the labels.
    rank_weight = 1.0 / np.arange(10, n_labels + 10, dtype=np.float64) ** label_power
    label_by_rank = rng.permutation(n_labels)
    cdf = np.cumsum(rank_weight)
    cdf /= cdf[-1]
    draw_features = _feature_sampler(rng, n_features)
    signatures, sig_weights = _signatures(rng, draw_features, n_labels, signature_size, cluster_size, cluster_share)

    labels, label_rows, Y = _draw_labels(rng, label_by_rank, cdf, avg_labels, n_samples)
    total = labels.size

    # Features from the labels' signatures: a contiguous window (no repeats) from a random start.
    per_label = max(1, int(round(avg_nnz * (1.0 - background) / avg_labels)))
    per_label = min(per_label, signature_size)
    starts = rng.integers(0, signature_size, size=total)
    cols = (starts[:, None] + np.arange(per_label)[None, :]) % signature_size
    sig_feats = signatures[labels[:, None], cols].ravel()
    sig_vals = sig_weights[labels[:, None], cols].ravel()
    sig_rows = np.repeat(label_rows, per_label)
    # Background features.
    n_bg = rng.poisson(avg_nnz * background, size=n_samples)
    bg_rows = np.repeat(np.arange(n_samples), n_bg)
    bg_feats = draw_features(int(n_bg.sum()))
    bg_vals = rng.gamma(1.0, 0.5, size=bg_feats.size).astype(np.float32)

    rows = np.concatenate([sig_rows, bg_rows])
    X = sp.csr_matrix((np.concatenate([sig_vals, bg_vals]), (rows, np.concatenate([sig_feats, bg_feats]))),
                      shape=(n_samples, n_features), dtype=np.float32)
    X.sum_duplicates()
    return Split(unit_rows(X), Y)


def _draw_labels(rng: np.random.Generator, label_by_rank: np.ndarray, cdf: np.ndarray, avg_labels: float,
                 n_samples: int) -> tuple[np.ndarray, np.ndarray, sp.csr_matrix]:
    """Each point's labels (1 + Poisson(avg_labels - 1) of them, by popularity): the label drawn
    for each (point, slot), its point, and the label matrix (duplicates merged)."""
    n_labels = label_by_rank.size
    counts = np.minimum(1 + rng.poisson(avg_labels - 1.0, size=n_samples), n_labels)
    total = int(counts.sum())
    labels = label_by_rank[np.minimum(np.searchsorted(cdf, rng.random(total)), n_labels - 1)].astype(np.int32)
    label_rows = np.repeat(np.arange(n_samples), counts)
    Y = sp.csr_matrix((np.ones(total, np.float32), (label_rows, labels)), shape=(n_samples, n_labels))
    Y.sum_duplicates()
    Y.data[:] = 1.0
    return labels, label_rows, Y


def _check_generator_arguments(n_samples, n_features, n_labels, avg_nnz, avg_labels, background, cluster_size,
                               cluster_share) -> None:
    for name, v in (("n_samples", n_samples), ("n_features", n_features), ("n_labels", n_labels)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not 1.0 <= avg_labels <= n_labels:
        raise ValueError(f"avg_labels must be in [1, n_labels], got {avg_labels}")
    if not 1.0 <= avg_nnz <= n_features:
        raise ValueError(f"avg_nnz must be in [1, n_features], got {avg_nnz}")
    if not 0.0 <= background < 1.0:
        raise ValueError(f"background must be in [0, 1), got {background}")
    if int(cluster_size) != cluster_size or not 1 <= cluster_size <= n_labels:
        raise ValueError(f"cluster_size must be an integer in [1, n_labels], got {cluster_size!r}")
    if not 0.0 <= cluster_share < 1.0:
        raise ValueError(f"cluster_share must be in [0, 1), got {cluster_share}")


def _feature_sampler(rng: np.random.Generator, n_features: int):
    """size -> features drawn by a Zipf-like popularity, used for signatures and background noise alike."""
    feat_weight = 1.0 / np.arange(50, n_features + 50, dtype=np.float64) ** 0.8
    feat_by_rank = rng.permutation(n_features).astype(np.int32)
    feat_cdf = np.cumsum(feat_weight)
    feat_cdf /= feat_cdf[-1]
    return lambda size: feat_by_rank[np.minimum(np.searchsorted(feat_cdf, rng.random(size)), n_features - 1)]


def _signatures(rng: np.random.Generator, draw_features, n_labels: int, signature_size: int, cluster_size: int,
                cluster_share: float) -> tuple[np.ndarray, np.ndarray]:
    """Each label's characteristic features and their weights; a clustered label shares part of
    its cluster's, spread evenly over the signature."""
    signatures = draw_features((n_labels, signature_size))
    sig_weights = rng.gamma(2.0, 1.0, size=(n_labels, signature_size)).astype(np.float32)
    if cluster_size > 1:
        cluster_of = rng.permutation(n_labels) // int(cluster_size)
        cluster_signatures = draw_features((int(cluster_of.max()) + 1, signature_size))
        j = np.arange(signature_size)
        shared = np.floor((j + 1) * cluster_share) > np.floor(j * cluster_share)
        signatures[:, shared] = cluster_signatures[cluster_of][:, shared]
    return signatures, sig_weights


def unit_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """X with every row scaled to unit L2 norm: float32 values, each row's entries in X's order
    where X is canonical (sorted, no duplicates; slide's checked inputs are), else sorted with
    duplicates summed, in arrays of its own, its index arrays of one dtype as scipy picks it for
    the size (scipy's compiled routines take no mix).

    Each value is scaled in place of a product by a diagonal matrix, which reordered every row and
    took 0.46 s where this takes 0.007 s (debian-deps' 48,106 training points, which the fusion
    normalises several times). The values are the same: each row's float32 sum of squares, its
    float32 scale, one product each."""
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    data = X.data.astype(np.float32, copy=False)
    squares = sp.csr_matrix((data * data, X.indices, X.indptr), shape=X.shape)
    scale = (1.0 / np.maximum(np.sqrt(np.asarray(squares.sum(axis=1)).ravel()), 1e-12)).astype(np.float32)
    return sp.csr_matrix((data * np.repeat(scale, np.diff(X.indptr)), X.indices.copy(), X.indptr.copy()),
                         shape=X.shape)


def split_at(data: Split, n_train: int) -> tuple[Split, Split]:
    """The first `n_train` points and the rest."""
    return Split(data.X[:n_train], data.Y[:n_train]), Split(data.X[n_train:], data.Y[n_train:])


def make_train_test(n_train: int, n_test: int, n_features: int, n_labels: int, *, seed: int = 0,
                    **kwargs) -> tuple[Split, Split]:
    """One generated problem split into a training and a test part (test points shuffled)."""
    return split_at(make_extreme_classification(n_train + n_test, n_features, n_labels, seed=seed, **kwargs), n_train)


def synthetic_amazon670k(n_train: int = AMAZON670K_SHAPE["n_train"], n_test: int = AMAZON670K_SHAPE["n_test"], *,
                         seed: int = 0, **kwargs) -> tuple[Split, Split]:
    """A problem with Amazon-670K's exact shape: 135,909 features, 670,091 labels, ~75 nonzeros and
    ~5.45 labels per point, power-law label frequencies. Other keyword arguments (``cluster_size``,
    ``background``, ...) go to `make_extreme_classification`."""
    s = AMAZON670K_SHAPE
    return make_train_test(n_train, n_test, s["n_features"], s["n_labels"], seed=seed,
                           avg_nnz=s["avg_nnz"], avg_labels=s["avg_labels"], **kwargs)


def small_default(seed: int = 0) -> tuple[Split, Split]:
    """The small built-in problem `slide train` uses when no dataset is named (trains in seconds)."""
    return make_train_test(18_000, 2_000, 5_000, 10_000, seed=seed, avg_nnz=40.0, avg_labels=3.0)
