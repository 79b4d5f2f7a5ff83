"""The sampled softmax cross-entropy of an `ExtremeOutput` as an autograd function.

Forward runs the engine on the batch: the loss, dL/dhidden, and the layer's weight gradient, which
stays in the engine (staged) for `LayerOptimizer.step()`. Backward hands the encoder dL/dhidden,
on its device and in its dtype, and tells the staged batch the factor autograd put on the loss."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from .._core import output_layer_gradients


class SampledLoss(torch.autograd.Function):
    """apply(hidden, anchor, layer, hidden_cpu, indptr, indices) -> mean loss over rows with labels.

    `anchor` is a scalar that requires grad, so the loss does too (and the layer learns) even when
    the encoder is frozen and `hidden` does not."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, anchor: torch.Tensor, layer: Any, hidden_cpu: np.ndarray,
                indptr: np.ndarray, indices: np.ndarray) -> torch.Tensor:
        stats, delta = layer._engine_call(output_layer_gradients, hidden_cpu, indptr, indices)
        rows = int(stats["samples"])
        ctx.layer, ctx.rows, ctx.delta = layer, rows, torch.from_numpy(delta)
        ctx.batch = layer._staged.add(rows)
        ctx.target = (hidden.device, hidden.dtype)
        return torch.tensor(stats["loss"] / max(rows, 1), dtype=hidden.dtype, device=hidden.device)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        factor = float(grad)
        if any(b is ctx.batch for b in ctx.layer._staged.batches):
            # A second backward through the same loss (retain_graph) adds its factor, as .grad would.
            ctx.batch[1] = factor if ctx.batch[1] is None else ctx.batch[1] + factor
        else:
            warnings.warn("ExtremeOutput: this batch's layer gradient was dropped before its backward (by "
                          "layer.optimizer.zero_grad()/step() or a later forward); the encoder still gets "
                          "its gradient, the layer does not learn from the batch", RuntimeWarning, stacklevel=2)
        device, dtype = ctx.target
        dhidden = ctx.delta * (factor / ctx.rows) if ctx.rows else torch.zeros_like(ctx.delta)
        return dhidden.to(device=device, dtype=dtype), None, None, None, None, None
