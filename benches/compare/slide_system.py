"""slide as a comparison system: LSH-sampled (fp32 or bf16) or dense full softmax."""

from __future__ import annotations

import numpy as np


class SlideSystem:
    def __init__(self, data: dict, variant: str, threads: int, batch_size: int, lr: float) -> None:
        import slide

        lsh = None if variant == "dense" else slide.LSHConfig()
        self.net = slide.Network(data["Xtr"].shape[1], data["Ytr"].shape[1], hidden=(128,), lsh=lsh,
                                 precision="bf16" if variant == "bf16" else "fp32", learning_rate=lr,
                                 threads=threads, seed=0)
        self.data = self.net.prepare(data["Xtr"], data["Ytr"])
        self.batch_size, self.lr = batch_size, lr

    def train(self, rows: np.ndarray) -> None:
        self.net.train_rows(self.data, rows, batch_size=self.batch_size, lr=self.lr)

    def top_k(self, X, k: int) -> np.ndarray:
        return self.net.predict(X, k=k)[0]
