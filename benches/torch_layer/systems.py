"""One PyTorch encoder (a sparse-input EmbeddingBag -> 128, bias, ReLU; sparse Adam on the
embedding, Adam on the bias) ending in one of three output layers, all trained from the same
torch loop with the same batch size, learning rate and threads. Every parameter with a sparse
gradient (the embedding, sampled softmax's output rows) is stepped by the same sparse Adam:
`slide.torch.SparseAdam` ("slide", the default) or `torch.optim.SparseAdam` ("torch"), the same
update.

- extreme: `slide.torch.ExtremeOutput` (mode "batch": the batch's labels and its LSH candidates;
           its `matmul`, fp32 or bf16; `lsh`, settings over the mode's);
- sampled: PyTorch sampled softmax, the batch's labels plus `negatives` shared uniform negatives,
           as one matrix product, with the sparse Adam on the output rows;
- full:    a full `nn.Linear`-style softmax over every output, Adam.

Each is a `benches.compare.protocol` system: train(rows) and top_k(X, k)."""

from __future__ import annotations

import functools
import math
from typing import Optional

import numpy as np

from ..compare.torch_systems import TorchLoop, softmax_loss

HIDDEN = 128
HEADS = ("extreme", "sampled", "full")
SPARSE_ADAMS = ("slide", "torch")


class EncoderSystem(TorchLoop):
    def __init__(self, data: dict, head: str, threads: int, batch_size: int, lr: float, negatives: int = 4096,
                 seed: int = 0, matmul: str = "fp32", sparse_adam: str = "slide", lsh: Optional[dict] = None) -> None:
        import torch
        import torch.nn as nn

        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {head!r}")
        if sparse_adam not in SPARSE_ADAMS:
            raise ValueError(f"sparse_adam must be one of {SPARSE_ADAMS}, got {sparse_adam!r}")
        if sparse_adam == "slide":
            from slide.torch import SparseAdam

            sparse_adam_class = functools.partial(SparseAdam, threads=threads)
        else:
            sparse_adam_class = torch.optim.SparseAdam
        torch.set_num_threads(threads)
        torch.manual_seed(seed)
        self.torch, self.head, self.batch_size, self.negatives = torch, head, batch_size, negatives
        self.X, self.Y = data["Xtr"], data["Ytr"]
        d_in, self.d_out = self.X.shape[1], self.Y.shape[1]
        self.emb = nn.EmbeddingBag(d_in, HIDDEN, mode="sum", sparse=True)
        nn.init.normal_(self.emb.weight, std=0.1)
        self.bias = nn.Parameter(torch.zeros(HIDDEN))
        self.opts = [sparse_adam_class([self.emb.weight], lr=lr), torch.optim.Adam([self.bias], lr=lr)]
        self.rng = np.random.default_rng(seed)
        if head == "extreme":
            from slide.modes import MODES
            from slide.torch import ExtremeOutput

            self.layer = ExtremeOutput(HIDDEN, self.d_out, lr=lr, matmul=matmul, threads=threads, seed=seed,
                                       lsh=MODES["batch"].lsh_config(**lsh) if lsh else None)
            self.opts.append(self.layer.optimizer)
            return
        sparse = head == "sampled"
        self.out = nn.Embedding(self.d_out, HIDDEN, sparse=sparse)  # one row per output
        nn.init.normal_(self.out.weight, std=1 / math.sqrt(HIDDEN))
        self.out_b = nn.Embedding(self.d_out, 1, sparse=sparse)
        nn.init.zeros_(self.out_b.weight)
        params = [self.out.weight, self.out_b.weight]
        self.opts.append(sparse_adam_class(params, lr=lr) if sparse else torch.optim.Adam(params, lr=lr))

    def encode(self, X):
        t = self.torch
        h = self.emb(t.from_numpy(X.indices.astype(np.int64)), t.from_numpy(X.indptr[:-1].astype(np.int64)),
                     per_sample_weights=t.from_numpy(X.data.astype(np.float32)))
        return t.relu(h + self.bias)

    def batch_loss(self, X, Y, counts: np.ndarray):
        """Softmax cross-entropy with each row's labels sharing the target, as ExtremeOutput trains."""
        h = self.encode(X)
        if self.head == "extreme":
            return self.layer(h, Y)
        return softmax_loss(h, Y, counts, self.out, self.out_b,
                            self.negatives if self.head == "sampled" else None, self.rng)

    def top_k(self, X, k: int) -> np.ndarray:
        t = self.torch
        out = np.empty((X.shape[0], k), np.int64)
        block = 1024 if self.head == "extreme" else 128  # ExtremeOutput's exact scan blocks rows itself
        with t.no_grad():
            for start in range(0, X.shape[0], block):
                h = self.encode(X[start:start + block])
                if self.head == "extreme":
                    ids = self.layer.predict(h, k)[0]
                else:
                    ids = (h @ self.out.weight.T + self.out_b.weight.T).topk(k, dim=1).indices
                out[start:start + len(h)] = ids.numpy()
        return out
