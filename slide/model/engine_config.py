"""The engine's configuration (`_core.NetworkConfig`) made from a network's settings: the one
place the Python settings become C++ ones."""

from __future__ import annotations

from typing import Any, Optional

from .._core import (LayerConfig, NetworkConfig, OptimizerConfig, OptimizerKind, OutputLoss, OutputShard,
                     SparseExchange)
from ..config import LSHConfig


def engine_config(net: Any) -> NetworkConfig:
    """`net`'s layers, optimizer, threads, seed, input transform and output loss, with this rank's block of the
    output layer under MPI (`net.output_shard`)."""
    c = NetworkConfig()
    c.input_dim = net.input_dim
    c.layers = [*(layer_config(size, cfg) for size, cfg in zip(net.hidden, net.hidden_lsh)),
                layer_config(net.output_shard[1], net.lsh)]
    if net.comm is not None:
        shard = OutputShard()
        shard.offset, shard.total = net.output_shard[0], net.output_dim
        c.output_shard = shard
    c.sparse_exchange = getattr(SparseExchange, net.sparse_exchange)
    c.optimizer = optimizer_config(net.optimizer, net.beta1, net.beta2, net.eps)
    c.threads = net.threads
    c.seed = net.seed
    c.bf16_weights = net.precision == "bf16"
    c.bf16_matmul = net.matmul == "bf16"
    c.l2_normalize_input = net.input_norm == "l2"
    c.input_dropout = net.input_dropout
    c.output_loss = getattr(OutputLoss, net.output_loss)
    return c


def optimizer_config(kind: str, beta1: float, beta2: float, eps: float) -> OptimizerConfig:
    o = OptimizerConfig()
    o.kind = getattr(OptimizerKind, kind)
    o.beta1, o.beta2, o.eps = beta1, beta2, eps
    return o


def layer_config(size: int, cfg: Optional[LSHConfig]) -> LayerConfig:
    layer = LayerConfig()
    layer.size = int(size)
    layer.sampled = cfg is not None
    if cfg is not None:
        layer.lsh = cfg.to_core()
    return layer
