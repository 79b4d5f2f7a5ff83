"""PyTorch baselines: full softmax (EmbeddingBag + Linear, Adam) and sampled softmax (the batch's
true labels plus shared uniformly drawn negatives, sparse Adam on the embeddings)."""

from __future__ import annotations

import math

import numpy as np


def softmax_loss(h, Y, counts: np.ndarray, out, out_b, negatives, rng: np.random.Generator):
    """Cross-entropy against each row's labels spread uniformly (as slide trains), over every output
    row of `out`/`out_b` (nn.Embedding), or with `negatives`, over the batch's labels plus that many
    shared uniformly drawn outputs: sampled softmax as one matrix product."""
    import torch as t

    label_rows = np.repeat(np.arange(len(counts)), counts)
    if negatives:
        cands = np.unique(np.concatenate([Y.indices, rng.integers(0, out.num_embeddings, negatives)]))
        cols = np.searchsorted(cands, Y.indices)
        idx = t.from_numpy(cands.astype(np.int64))
        logits = h @ out(idx).T + out_b(idx).T
    else:
        cols = Y.indices
        logits = h @ out.weight.T + out_b.weight.T
    true = logits[t.from_numpy(label_rows), t.from_numpy(cols.astype(np.int64))]
    weight = t.from_numpy((1.0 / counts[label_rows]).astype(np.float32))
    return (t.logsumexp(logits, dim=1).sum() - (weight * true).sum()) / len(counts)


class TorchLoop:
    """train(rows) in batches of `batch_size` rows, rows without labels left out, each batch one
    step of every optimizer in `opts` on `batch_loss(X, Y, label counts)`."""

    batch_size: int
    opts: list

    def batch_loss(self, X, Y, counts: np.ndarray):
        raise NotImplementedError

    def _step(self, rows: np.ndarray) -> None:
        X, Y = self.X[rows], self.Y[rows]
        counts = np.diff(Y.indptr)
        keep = counts > 0
        if not keep.any():
            return
        for o in self.opts:
            o.zero_grad()
        self.batch_loss(X[keep], Y[keep], counts[keep]).backward()
        for o in self.opts:
            o.step()

    def train(self, rows: np.ndarray) -> None:
        for start in range(0, len(rows), self.batch_size):
            self._step(rows[start:start + self.batch_size])


class TorchSystem(TorchLoop):
    def __init__(self, data: dict, variant: str, threads: int, batch_size: int, lr: float,
                 negatives: int = 4096) -> None:
        import torch
        import torch.nn as nn

        torch.set_num_threads(threads)
        torch.manual_seed(0)
        self.torch = torch
        self.X, self.Y = data["Xtr"], data["Ytr"]
        d_in, d_out, hidden = self.X.shape[1], self.Y.shape[1], 128
        self.sampled = variant == "sampled"
        self.negatives, self.batch_size, self.d_out = negatives, batch_size, d_out
        sparse = self.sampled
        self.emb = nn.EmbeddingBag(d_in, hidden, mode="sum", sparse=sparse)
        nn.init.normal_(self.emb.weight, std=0.1)
        self.b1 = nn.Parameter(torch.zeros(hidden))
        self.out = nn.Embedding(d_out, hidden, sparse=sparse)  # one row per output neuron
        nn.init.normal_(self.out.weight, std=1 / math.sqrt(hidden))
        self.out_b = nn.Embedding(d_out, 1, sparse=sparse)
        nn.init.zeros_(self.out_b.weight)
        if self.sampled:
            self.opts = [torch.optim.SparseAdam([self.emb.weight, self.out.weight, self.out_b.weight], lr=lr),
                         torch.optim.Adam([self.b1], lr=lr)]
        else:
            self.opts = [torch.optim.Adam([self.emb.weight, self.b1, self.out.weight, self.out_b.weight], lr=lr)]
        self.rng = np.random.default_rng(0)

    def _hidden(self, X):
        t = self.torch
        h = self.emb(t.from_numpy(X.indices.astype(np.int64)), t.from_numpy(X.indptr[:-1].astype(np.int64)),
                     per_sample_weights=t.from_numpy(X.data.astype(np.float32)))
        return t.relu(h + self.b1)

    def batch_loss(self, X, Y, counts: np.ndarray):
        return softmax_loss(self._hidden(X), Y, counts, self.out, self.out_b,
                            self.negatives if self.sampled else None, self.rng)

    def top_k(self, X, k: int) -> np.ndarray:
        t = self.torch
        out = np.empty((X.shape[0], k), np.int64)
        with t.no_grad():
            for start in range(0, X.shape[0], 128):
                h = self._hidden(X[start:start + 128])
                scores = h @ self.out.weight.T + self.out_b.weight.T
                out[start:start + 128] = scores.topk(k, dim=1).indices.numpy()
        return out
