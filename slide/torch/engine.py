"""The engine behind an `ExtremeOutput`: a slide network whose output layer is the whole model.

The engine's input and hidden layers never run (the encoder outside replaces them): the network
is built with a one-feature input embedding as wide as the layer's input, which costs a few
hundred bytes and lets the layer reuse the engine's output layer, optimizer and LSH tables as they
are."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

import numpy as np

from .._core import Network as Engine
from .._core import NetworkConfig, OptimizerKind, optimizer_state_names
from .._inputs import MAX_DIM
from ..config import LSHConfig
from ..model.arguments import MAX_SEED, MODE_LSH, layers
from ..model.arguments import threads as checked_threads
from ..model.checks import check_int
from ..model.engine_config import layer_config, optimizer_config
from ..modes import mode_of
from ..settings import NETWORK


@dataclass(frozen=True)
class LayerSettings:
    """What an `ExtremeOutput` is made of; saved with its state so a state is only loaded into a
    layer of the same shape and optimizer."""

    in_features: int
    n_labels: int
    lsh: Optional[dict[str, Any]]  # LSHConfig fields; None: dense (full softmax)
    optimizer: str
    beta1: float
    beta2: float
    eps: float
    precision: str
    seed: int
    matmul: str = NETWORK["matmul"].default  # a field added later: layers pickled before it are fp32

    @property
    def mode(self) -> str:
        return mode_of(self.lsh_config())

    def lsh_config(self) -> Optional[LSHConfig]:
        return None if self.lsh is None else LSHConfig(**self.lsh)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def layer_settings(in_features: Any, n_labels: Any, mode: str, lsh: Optional[LSHConfig], optimizer: str,
                   betas: tuple[Any, Any], eps: Any, precision: str, seed: Any,
                   matmul: str = NETWORK["matmul"].default) -> LayerSettings:
    """The constructor's arguments checked (ValueError naming the argument)."""
    check_int("in_features", in_features, 1, MAX_DIM)
    check_int("n_labels", n_labels, 2, MAX_DIM)
    _, lsh, _ = layers(1, n_labels, in_features, mode, MODE_LSH if lsh is None else lsh, None)
    if lsh is not None and lsh.batch_active == 0:
        raise ValueError("ExtremeOutput trains a batch at a time: mode must be 'batch' or 'dense' "
                         "(mode 'sample' gives each sample its own active set, which needs slide's own input layer)")
    NETWORK["optimizer"].check(optimizer, "optimizer")
    beta1 = NETWORK["beta1"].check(betas[0], "betas[0]")
    beta2 = NETWORK["beta2"].check(betas[1], "betas[1]")
    NETWORK["precision"].check(precision, "precision")
    NETWORK["matmul"].check(matmul, "matmul")
    check_int("seed", seed, 0, MAX_SEED)
    return LayerSettings(int(in_features), int(n_labels), None if lsh is None else asdict(lsh), optimizer,
                         beta1, beta2, NETWORK["eps"].check(eps, "eps"), precision, int(seed), matmul)


def build_engine(s: LayerSettings, threads: Optional[int]) -> Engine:
    c = NetworkConfig()
    c.input_dim = 1
    c.layers = [layer_config(s.in_features, None), layer_config(s.n_labels, s.lsh_config())]
    c.optimizer = optimizer_config(s.optimizer, s.beta1, s.beta2, s.eps)
    c.threads = checked_threads(threads)
    c.seed = s.seed
    c.bf16_weights = s.precision == "bf16"
    c.bf16_matmul = s.matmul == "bf16"
    return Engine(c)


def layer_arrays(engine: Engine, optimizer: str) -> dict[str, np.ndarray]:
    """Writable views (no copy) of the output layer's weight, bias and optimizer state, by the names
    the module's state_dict uses: weight, bias, then e.g. weight_adam_m, bias_adam_m."""
    state = engine.state()
    arrays = {"weight": state["layers.0.weight"], "bias": state["layers.0.bias"]}
    for name in optimizer_state_names(getattr(OptimizerKind, optimizer)):
        arrays[f"weight_{name}"] = state[f"layers.0.{name}"]
        arrays[f"bias_{name}"] = state[f"layers.0.bias_{name}"]
    return arrays
