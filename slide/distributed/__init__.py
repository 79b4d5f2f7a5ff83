"""Training one network over the ranks of an MPI job (mpi4py, optional: ``pip install "slide[mpi]"``).

The output layer is split by rows across the ranks (model parallel); the embedding and hidden
layers are replicated and their gradients summed (data parallel). See `slide.Network`'s ``comm``
argument and docs/mpi.md, "Training on a cluster"."""

from .checkpoint import reshard
from .shards import batch_share, shard_range

__all__ = ["reshard", "shard_range", "batch_share"]
