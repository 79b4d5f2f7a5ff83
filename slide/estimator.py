"""slide as a scikit-learn classifier: `SlideClassifier` takes what scikit-learn's estimators take
(NumPy or scipy.sparse X; a 1-D vector of class labels of any type, or a 0/1 label indicator
matrix), works in pipelines, grid searches, `clone` and pickling, and passes scikit-learn's
estimator checks. Settings left as None come from the data's shape, as `slide train` picks them
(slide.shape_defaults).

    pip install "slide[sklearn]"
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from .config import LSHConfig
from .network import Network
from .reranker import points_per_label, points_per_label_of
from .settings import NETWORK
from .shape_defaults import held_out_settings, preset_for_shape

# The network settings the estimator passes through; their defaults and ranges are the table's.
_NETWORK_PARAMS = ("hidden", "mode", "learning_rate", "optimizer", "lr_schedule", "input_norm", "input_dropout",
                   "output_loss", "matmul", "neighbours", "rerank", "label_tree", "label_trees", "tree_weight",
                   "fusion_weights")


class SlideClassifier(ClassifierMixin, BaseEstimator):
    """A slide network as a scikit-learn classifier, multi-class or multi-label.

    ``y`` as a 1-D vector of class labels (any type scikit-learn accepts) trains one label per
    sample: `predict` returns class labels and `predict_proba` a (samples, classes) matrix.
    ``y`` as a 2-D 0/1 indicator matrix (dense or sparse, what `MultiLabelBinarizer` gives)
    trains every marked label: `predict` returns the indicator matrix (scipy.sparse CSR) of each
    sample's `top_k` labels, and `score` is P@1.

    Every setting left as None is picked from the data's shape at `fit` (`slide.shape_defaults`:
    a dense output layer up to 8,192 labels, the batch-shared LSH mode above), as `slide train
    --train FILE` picks it; the others mean what `slide.Network` and `Network.fit` say. `network_`
    is the trained `slide.Network`.
    """

    def __init__(self, *, hidden: Optional[Sequence[int]] = None, mode: Optional[str] = None,
                 learning_rate: Optional[float] = None, optimizer: Optional[str] = None,
                 lr_schedule: Optional[str] = None, input_norm: Optional[str] = None,
                 input_dropout: Optional[float] = None, output_loss: Optional[str] = None, matmul: Optional[str] = None,
                 neighbours: Optional[int] = None, rerank: Optional[int] = None, label_tree: Optional[int] = None,
                 label_trees: Optional[int] = None, tree_weight: Optional[float] = None,
                 fusion_weights: Optional[str] = None, epochs: Optional[int] = None, batch_size: Optional[int] = None,
                 validation_split: Optional[float] = None, top_k: int = 1, threads: Optional[int] = None,
                 seed: int = 0) -> None:
        self.hidden, self.mode, self.learning_rate, self.optimizer = hidden, mode, learning_rate, optimizer
        self.lr_schedule, self.input_norm, self.input_dropout = lr_schedule, input_norm, input_dropout
        self.output_loss, self.matmul = output_loss, matmul
        self.neighbours, self.rerank, self.label_tree, self.label_trees = neighbours, rerank, label_tree, label_trees
        self.tree_weight, self.fusion_weights = tree_weight, fusion_weights
        self.epochs, self.batch_size = epochs, batch_size
        self.validation_split, self.top_k, self.threads, self.seed = validation_split, top_k, threads, seed

    def _settings(self, n_features: int, n_labels: int, n_samples: int,
                  points_a_label: Optional[float] = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """(network keyword arguments, fit keyword arguments): the given ones over the shape's."""
        preset, _ = preset_for_shape(n_features, n_labels, n_samples, points_a_label)
        net = {k: getattr(self, k) if getattr(self, k) is not None else preset.get(k, NETWORK[k].default)
               for k in _NETWORK_PARAMS if k != "mode"}
        if self.mode is not None:
            net["mode"] = self.mode
        elif preset.get("dense"):
            net["mode"] = "dense"
        else:
            net["lsh"] = LSHConfig(**preset["lsh"])
        fit = {"epochs": self.epochs or preset["epochs"], "batch_size": self.batch_size or preset["batch_size"],
               "validation_split": self.validation_split if self.validation_split is not None
               else preset.get("validation_split", 0.0)}
        fit.update(held_out_settings(preset, fit["validation_split"]))
        return net, fit

    def fit(self, X, y) -> "SlideClassifier":
        """Train a new network on X (samples x features) and y; returns self."""
        shape = y.shape if sp.issparse(y) else np.asarray(y).shape
        self.multilabel_ = len(shape) == 2 and shape[1] > 1
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float32, multi_output=self.multilabel_)
        if X.shape[0] < 2:
            raise ValueError(f"SlideClassifier needs at least 2 samples to train on, got n_samples = {X.shape[0]}")
        if self.multilabel_:
            if type_of_target(y) != "multilabel-indicator":
                raise ValueError("a 2-D y must be a 0/1 label indicator matrix (samples x labels)")
            self.classes_ = np.arange(y.shape[1])
            labels = sp.csr_matrix(y, dtype=np.float32)
        else:
            check_classification_targets(y)
            self.classes_, ids = np.unique(y, return_inverse=True)
            labels = ids.astype(np.int64)
        n_labels = len(self.classes_)
        per_label = points_per_label_of(labels) if sp.issparse(labels) else points_per_label(np.bincount(labels))
        net_args, fit_args = self._settings(X.shape[1], max(n_labels, 1), X.shape[0], per_label)
        self.network_ = Network(X.shape[1], max(n_labels, 1), threads=self.threads, seed=self.seed, **net_args)
        self.history_ = self.network_.fit(X, labels, progress=False, **fit_args)
        return self

    def _top(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "network_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float32, reset=False)
        return self.network_.predict(X, k=min(k, len(self.classes_)))

    def predict(self, X):
        """Class labels (multi-class), or the label indicator matrix of each sample's `top_k`
        labels as scipy.sparse CSR (multi-label)."""
        check_is_fitted(self, "network_")
        ids, _ = self._top(X, 1 if not self.multilabel_ else self.top_k)
        if not self.multilabel_:
            return self.classes_[ids[:, 0]]
        rows = np.repeat(np.arange(ids.shape[0]), ids.shape[1])
        keep = ids.ravel() >= 0
        return sp.csr_matrix((np.ones(keep.sum(), np.int64), (rows[keep], ids.ravel()[keep])),
                             shape=(ids.shape[0], len(self.classes_)))

    def predict_proba(self, X) -> np.ndarray:
        """(samples, classes): the softmax over every output (fused with the neighbours' vote when
        the network has one); columns in the order of `classes_`."""
        check_is_fitted(self, "network_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float32, reset=False)
        n = len(self.classes_)
        ids, probs = self.network_.predict_proba(X, k=n)
        out = np.zeros((X.shape[0], n), np.float64)
        np.put_along_axis(out, ids, probs, axis=1)
        return out

    def predict_log_proba(self, X) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy (multi-class), or P@1 (multi-label: the share of samples whose top label is
        one of theirs)."""
        if not getattr(self, "multilabel_", False):
            return super().score(X, y, sample_weight=sample_weight)
        top, _ = self._top(X, 1)
        Y = sp.csr_matrix(y)
        hits = np.asarray(Y[np.arange(Y.shape[0]), np.maximum(top[:, 0], 0)]).ravel() > 0
        return float(np.average(hits & (top[:, 0] >= 0), weights=sample_weight))

    def __sklearn_tags__(self):
        # Multi-label here is ranking (each sample's top k labels of one softmax), not
        # scikit-learn's independent yes/no per label, so its multi-label checks do not apply.
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
