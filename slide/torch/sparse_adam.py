"""`SparseAdam`: torch.optim.SparseAdam's update, run by slide's engine.

An encoder that starts with ``nn.Embedding(..., sparse=True)`` or ``nn.EmbeddingBag(...,
sparse=True)`` gets a sparse gradient: a row index per input feature of the batch, repeated for
every sample that has it. ``torch.optim.SparseAdam`` coalesces it and steps the touched rows through
several sparse tensor operations; at 135,909 x 128 embeddings and batches of 256 samples of 75
features that took 38-49 ms a step on the 2-core benchmark host (benches/results/sparse_adam.json),
more than an `ExtremeOutput`'s whole forward, backward and step. This class makes the same update (Adam's moments and bias
correction for the rows the gradient names, no other row moving) in one pass over the distinct
rows, on the engine's threads, in place in the parameter's own memory."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Optional

import torch

from .._core import sparse_adam_step
from ..model.arguments import threads as checked_threads
from .optimizer import closure_loss


class SparseAdam(torch.optim.Optimizer):
    """Adam for parameters with sparse gradients, in place of ``torch.optim.SparseAdam``.

    The same arguments, update and state (``step``, ``exp_avg``, ``exp_avg_sq`` per parameter), so
    its ``state_dict()`` loads into either class, and schedulers drive ``param_groups[i]["lr"]``.
    Each parameter must be a 2-D float32 CPU tensor (an embedding's weight) whose gradient is sparse
    over its rows; anything else is refused with a ValueError naming the parameter.

    Args:
        params: the parameters or parameter groups, as for any torch optimizer.
        lr, betas, eps: Adam's learning rate, moment decays and denominator floor.
        threads: engine threads (default: every CPU this process may use).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, *, threads: Optional[int] = None) -> None:
        _check_hyper(lr, betas, eps, "")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps})
        self.threads = checked_threads(threads)
        for g, group in enumerate(self.param_groups):
            for i, p in enumerate(group["params"]):
                _check_parameter(p, f"param_groups[{g}]['params'][{i}]")

    @torch.no_grad()
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = closure_loss(closure)
        for g, group in enumerate(self.param_groups):
            where = f"param_groups[{g}]"
            _check_hyper(group["lr"], group["betas"], group["eps"], f"{where}: ")
            for i, p in enumerate(group["params"]):
                if p.grad is None:
                    continue
                name = f"{where}['params'][{i}]"
                _check_parameter(p, name)
                index, values = _rows_of(p, name)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.contiguous_format)
                moments = [_in_place(state[k], f"the optimizer state {k!r} of {name}", p)
                           for k in ("exp_avg", "exp_avg_sq")]
                step = int(state["step"]) + 1  # counted once the engine has taken it
                beta1, beta2 = group["betas"]
                sparse_adam_step(p.detach().numpy(), *moments, index, values, float(group["lr"]), float(beta1),
                                 float(beta2), float(group["eps"]), step, self.threads)
                state["step"] = step
        return loss


def _check_hyper(lr: Any, betas: Any, eps: Any, where: str) -> None:
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr >= 0):
        raise ValueError(f"{where}lr must be a finite number >= 0, got {lr!r}")
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2
            and all(isinstance(b, (int, float)) and 0 <= b < 1 for b in betas)):
        raise ValueError(f"{where}betas must be two numbers in [0, 1), got {betas!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
        raise ValueError(f"{where}eps must be a finite number > 0, got {eps!r}")


def _check_parameter(p: Any, name: str) -> None:
    if not isinstance(p, torch.Tensor):
        raise ValueError(f"{name} must be a tensor, got {type(p).__name__}")
    if p.dtype != torch.float32 or p.device.type != "cpu" or p.dim() != 2 or p.is_sparse:
        raise ValueError(f"{name} must be a dense 2-D float32 CPU tensor (an embedding's weight), got a "
                         f"{'sparse ' if p.is_sparse else ''}{p.dim()}-D {p.dtype} tensor on {p.device}")
    if not p.is_contiguous():
        raise ValueError(f"{name} must be contiguous (its rows are stepped in place)")


def _in_place(t: Any, name: str, p: torch.Tensor) -> Any:
    if not (isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.device.type == "cpu"
            and t.shape == p.shape and t.is_contiguous() and not t.is_sparse):
        raise ValueError(f"{name} must be a contiguous float32 CPU tensor of shape {tuple(p.shape)}")
    return t.detach().numpy()


def _rows_of(p: torch.Tensor, name: str) -> tuple[Any, Any]:
    """The gradient's row indices and value rows, uncoalesced, as NumPy arrays."""
    grad = p.grad
    if not grad.is_sparse:
        raise ValueError(f"{name} has a dense gradient; SparseAdam steps sparse ones (nn.Embedding(sparse=True), "
                         "nn.EmbeddingBag(sparse=True)): use torch.optim.Adam for this parameter")
    if grad.sparse_dim() != 1 or grad.dense_dim() != 1 or grad.shape != p.shape:
        raise ValueError(f"{name}'s sparse gradient must be sparse over the rows of its {tuple(p.shape)} "
                         f"parameter, got sparse_dim {grad.sparse_dim()}, shape {tuple(grad.shape)}")
    return grad._indices()[0].numpy(), grad._values().contiguous().numpy()
