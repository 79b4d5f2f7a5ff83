"""TensorFlow full softmax, the baseline of the SLIDE paper: sparse input through
embedding_lookup_sparse (so the input layer's gradient is sparse), a dense 670,091-way output
layer, Adam, one compiled training step per batch."""

from __future__ import annotations

import math

import numpy as np


class TensorFlowSystem:
    def __init__(self, data: dict, variant: str, threads: int, batch_size: int, lr: float) -> None:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.random.set_seed(0)
        self.tf = tf
        self.X, self.Y = data["Xtr"], data["Ytr"]
        d_in, d_out, hidden = self.X.shape[1], self.Y.shape[1], 128
        self.batch_size = batch_size
        self.W1 = tf.Variable(tf.random.normal([d_in, hidden], stddev=0.1))
        self.b1 = tf.Variable(tf.zeros([hidden]))
        self.W2 = tf.Variable(tf.random.normal([hidden, d_out], stddev=1 / math.sqrt(hidden)))
        self.b2 = tf.Variable(tf.zeros([d_out]))
        self.variables = [self.W1, self.b1, self.W2, self.b2]
        self.opt = tf.keras.optimizers.Adam(learning_rate=lr)
        spec = [tf.TensorSpec([None, 2], tf.int64), tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.float32),
                tf.TensorSpec([2], tf.int64), tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.int64),
                tf.TensorSpec([None], tf.float32)]
        self._step = tf.function(self._train_step, input_signature=spec)
        self._hidden_fn = tf.function(self._hidden, input_signature=spec[:4])

    def _hidden(self, pos, ids, vals, shape):
        tf = self.tf
        sp_ids = tf.sparse.SparseTensor(pos, ids, shape)
        sp_w = tf.sparse.SparseTensor(pos, vals, shape)
        return tf.nn.relu(tf.nn.embedding_lookup_sparse(self.W1, sp_ids, sp_w, combiner="sum") + self.b1)

    def _train_step(self, pos, ids, vals, shape, label_rows, label_cols, label_w):
        tf = self.tf
        with tf.GradientTape() as tape:
            logits = self._hidden(pos, ids, vals, shape) @ self.W2 + self.b2
            true = tf.gather_nd(logits, tf.stack([label_rows, label_cols], axis=1))
            n = tf.cast(tf.shape(logits)[0], tf.float32)
            loss = (tf.reduce_sum(tf.reduce_logsumexp(logits, axis=1)) - tf.reduce_sum(label_w * true)) / n
        self.opt.apply_gradients(zip(tape.gradient(loss, self.variables), self.variables))
        return loss

    @staticmethod
    def _sparse(X):
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        cols = np.arange(X.nnz) - np.repeat(X.indptr[:-1], np.diff(X.indptr))  # position within the row
        width = max(int(np.diff(X.indptr).max(initial=0)), 1)
        return (np.stack([rows, cols], 1).astype(np.int64), X.indices.astype(np.int64), X.data.astype(np.float32),
                np.array([X.shape[0], width], np.int64))

    def train(self, rows: np.ndarray) -> None:
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start:start + self.batch_size]
            X, Y = self.X[batch], self.Y[batch]
            counts = np.diff(Y.indptr)
            keep = counts > 0
            X, Y, counts = X[keep], Y[keep], counts[keep]
            if not len(counts):
                continue
            label_rows = np.repeat(np.arange(len(counts)), counts)
            self._step(*self._sparse(X), label_rows.astype(np.int64), Y.indices.astype(np.int64),
                       (1.0 / counts[label_rows]).astype(np.float32))

    def top_k(self, X, k: int) -> np.ndarray:
        tf = self.tf
        out = np.empty((X.shape[0], k), np.int64)
        for start in range(0, X.shape[0], 128):
            part = X[start:start + 128]
            h = self._hidden_fn(*self._sparse(part))
            out[start:start + 128] = tf.math.top_k(h @ self.W2 + self.b2, k=k).indices.numpy()
        return out
