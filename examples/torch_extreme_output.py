"""A PyTorch model ending in slide's ExtremeOutput, trained with a standard PyTorch loop on an
Extreme Classification Repository file:

    pip install ".[torch]"
    python examples/torch_extreme_output.py TRAIN.txt TEST.txt [--epochs 5] [--hidden 128]

With no files it trains on slide's small built-in problem (written as XC files to a temporary
folder first, so the loop below is exactly what it does with yours). The encoder (a bag of feature
embeddings) is PyTorch's own and is stepped by its optimizers; the output layer is slide's, stepped
by `layer.optimizer`. Prints P@1/3/5 on the test file after each epoch."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from slide.datasets import load_xc, small_default, write_xc
from slide.metrics import precision_at_k
from slide.torch import ExtremeOutput, SparseAdam


class BagOfFeatures(nn.Module):
    """Sparse features -> a weighted sum of their embeddings -> ReLU."""

    def __init__(self, n_features: int, hidden: int) -> None:
        super().__init__()
        self.embedding = nn.EmbeddingBag(n_features, hidden, mode="sum", sparse=True)
        nn.init.normal_(self.embedding.weight, std=0.1)
        self.bias = nn.Parameter(torch.zeros(hidden))

    def forward(self, X) -> torch.Tensor:  # X: a scipy.sparse CSR batch
        ids = torch.from_numpy(X.indices.astype(np.int64))
        offsets = torch.from_numpy(X.indptr[:-1].astype(np.int64))
        weights = torch.from_numpy(X.data.astype(np.float32))
        return torch.relu(self.embedding(ids, offsets, per_sample_weights=weights) + self.bias)


def train(train_file: Path, test_file: Path, epochs: int, hidden: int, batch_size: int = 256, seed: int = 0,
          log=print) -> dict:
    torch.manual_seed(seed)
    train_set, test_set = load_xc(train_file, cache=False), load_xc(test_file, cache=False)
    encoder = BagOfFeatures(train_set.X.shape[1], hidden)
    layer = ExtremeOutput(hidden, train_set.Y.shape[1], lr=1e-3, seed=seed)
    optimizers = [SparseAdam([encoder.embedding.weight], lr=1e-3),  # torch.optim.SparseAdam's update, faster
                  torch.optim.Adam([encoder.bias], lr=1e-3), layer.optimizer]
    rng = np.random.default_rng(seed)
    scores = {}
    for epoch in range(1, epochs + 1):
        encoder.train(), layer.train()
        order = rng.permutation(train_set.X.shape[0])
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            for o in optimizers:
                o.zero_grad()
            loss = layer(encoder(train_set.X[rows]), train_set.Y[rows])
            loss.backward()
            for o in optimizers:
                o.step()
        encoder.eval(), layer.eval()
        with torch.no_grad():
            ids, _ = layer.predict(encoder(test_set.X), k=5)
        scores = {f"P@{k}": precision_at_k(ids.numpy(), test_set.Y, k) for k in (1, 3, 5)}
        log(f"epoch {epoch}: last batch loss {loss.item():.3f}, " + ", ".join(f"{m} {v:.4f}" for m, v in scores.items()))
    return scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train", nargs="?", type=Path)
    ap.add_argument("test", nargs="?", type=Path)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=128)
    args = ap.parse_args()
    if (args.train is None) != (args.test is None):
        ap.error("give both a training and a test file, or neither")
    if args.train is not None:
        train(args.train, args.test, args.epochs, args.hidden)
        return
    with tempfile.TemporaryDirectory() as tmp:
        train_split, test_split = small_default()
        write_xc(Path(tmp) / "train.txt", train_split.X, train_split.Y)
        write_xc(Path(tmp) / "test.txt", test_split.X, test_split.Y)
        train(Path(tmp) / "train.txt", Path(tmp) / "test.txt", args.epochs, args.hidden)


if __name__ == "__main__":
    main()
