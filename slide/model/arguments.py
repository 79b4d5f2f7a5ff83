"""The `Network` constructor's arguments checked and normalised, before anything is allocated."""

from __future__ import annotations

import os
import warnings
from typing import Any, Optional, Sequence, Union

import numpy as np

from .._inputs import MAX_DIM
from ..config import LSHConfig
from ..modes import DEFAULT_MODE, check_mode, mode_of
from ..schedules import check_schedule, check_warmup
from ..settings import NETWORK
from .checks import check_int, finite_number

MODE_LSH = LSHConfig()  # a marker: lsh not given, so it comes from the mode
MAX_SEED = 2**64 - 1  # the engine's seed is a uint64


def default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def layers(input_dim: Any, output_dim: Any, hidden: Union[int, Sequence[int]], mode: Optional[str],
           lsh: Optional[LSHConfig], hidden_lsh: Optional[Sequence[Optional[LSHConfig]]]
           ) -> tuple[tuple[int, ...], Optional[LSHConfig], tuple[Optional[LSHConfig], ...]]:
    """(hidden sizes, output LSH, per-hidden-layer LSH), checked; the output's LSH comes from
    `mode` when `lsh` is not given."""
    check_int("input_dim", input_dim, 1, MAX_DIM)
    check_int("output_dim", output_dim, 1, MAX_DIM)
    if isinstance(hidden, (int, np.integer)) and not isinstance(hidden, bool):
        hidden = (hidden,)
    if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__"):
        raise ValueError(f"hidden must be a layer size or a sequence of layer sizes, got {hidden!r}")
    hidden = tuple(hidden)
    if not hidden:
        raise ValueError("hidden must name at least one hidden layer size")
    for h in hidden:
        check_int("hidden layer size", h, 1, MAX_DIM)
    if lsh is not None and not isinstance(lsh, LSHConfig):
        raise ValueError(f"lsh must be an LSHConfig or None, got {type(lsh).__name__}")
    if lsh is MODE_LSH:
        # Sampled hidden layers train per sample only, so they make that mode the default.
        sampled_hidden = hidden_lsh is not None and any(c is not None for c in hidden_lsh)
        default = "sample" if sampled_hidden else DEFAULT_MODE
        lsh = check_mode(default if mode is None else mode).lsh_config()
    elif mode is not None and check_mode(mode).name != mode_of(lsh):
        raise ValueError(f"mode={mode!r} contradicts lsh={lsh!r}, which trains in mode {mode_of(lsh)!r}; "
                         f"give one of them, or an lsh for that mode (slide.MODES[{mode!r}].lsh_config(...))")
    hidden_lsh = tuple(hidden_lsh) if hidden_lsh is not None else (None,) * len(hidden)
    if len(hidden_lsh) != len(hidden):
        raise ValueError(f"hidden_lsh has {len(hidden_lsh)} entries for {len(hidden)} hidden layers")
    if any(c is not None and not isinstance(c, LSHConfig) for c in hidden_lsh):
        raise ValueError("hidden_lsh entries must be LSHConfig or None")
    if hidden_lsh[0] is not None:
        raise ValueError("the first hidden layer (the sparse-input embedding) cannot be sampled")
    return hidden, lsh, hidden_lsh


def check_training(optimizer: str, learning_rate: Any, lr_schedule: Any, lr_warmup: Any,
                   lr_schedule_steps: Any, adam: tuple[Any, Any, Any]) -> None:
    """The optimizer and its learning rate schedule."""
    NETWORK["optimizer"].check(optimizer, "optimizer")
    if not (finite_number(learning_rate) and learning_rate > 0):
        raise ValueError(f"learning_rate must be a positive finite number, got {learning_rate!r}")
    check_schedule(lr_schedule)
    check_warmup(lr_warmup)
    if lr_schedule_steps is not None:
        check_int("lr_schedule_steps", lr_schedule_steps, 1)
    for name, value in zip(("beta1", "beta2", "eps"), adam):
        if not finite_number(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")


def check_choices(input_norm: str, input_dropout: Any, precision: str, matmul: str, neighbours: Any,
                  neighbour_weight: Any, sparse_exchange: str, seed: Any, rerank: Any, rerank_weight: Any,
                  neighbour_space: str, output_loss: str, label_tree: Any = 0, tree_weight: Any = 1.0,
                  label_trees: Any = 1, fusion_weights: str = "auto") -> None:
    """The input transform, loss, precision, matrix products, vote, re-ranker, label tree, MPI
    exchange and seed."""
    NETWORK["input_norm"].check(input_norm, "input_norm")
    NETWORK["output_loss"].check(output_loss, "output_loss")
    if not (finite_number(input_dropout) and 0.0 <= input_dropout < 1.0):
        raise ValueError(f"input_dropout must be a number in [0, 1), got {input_dropout!r}")
    NETWORK["precision"].check(precision, "precision")
    NETWORK["matmul"].check(matmul, "matmul")
    NETWORK["neighbours"].check(neighbours, "neighbours")
    NETWORK["neighbour_weight"].check(neighbour_weight, "neighbour_weight")
    NETWORK["neighbour_space"].check(neighbour_space, "neighbour_space")
    NETWORK["rerank"].check(rerank, "rerank")
    NETWORK["rerank_weight"].check(rerank_weight, "rerank_weight")
    NETWORK["label_tree"].check(label_tree, "label_tree")
    NETWORK["tree_weight"].check(tree_weight, "tree_weight")
    NETWORK["label_trees"].check(label_trees, "label_trees")
    NETWORK["fusion_weights"].check(fusion_weights, "fusion_weights")
    check_int("seed", seed, 0, MAX_SEED)
    NETWORK["sparse_exchange"].check(sparse_exchange, "sparse_exchange")


def threads(value: Optional[int]) -> int:
    """The worker threads: the CPUs this process may use unless given; more is allowed, with a warning."""
    value = default_threads() if value is None else value
    check_int("threads", value, 1, 1024)
    if value > default_threads():
        warnings.warn(f"threads={value} is more than the {default_threads()} CPUs this process may use; "
                      "extra threads wait for each other and make training slower, not faster",
                      RuntimeWarning, stacklevel=3)
    return int(value)
