"""A network's files: `save` writes one model file (or, under MPI, a folder of shards), `load`
reads either, and pickling stores the model file's bytes. The formats and their checks live in
`slide.model_file` and `slide.distributed.checkpoint`; this is the part of `Network` that calls them."""

from __future__ import annotations

import os
from typing import Any, Optional

from .model.guard import one_call_at_a_time


class NetworkFiles:
    """`save`, `load` and pickling for `slide.Network` (its `ranks` strategy decides one file or shards)."""

    @one_call_at_a_time
    def save(self, path: "os.PathLike[str] | str", *, include_optimizer: bool = True,
             extra: Optional[dict] = None) -> None:
        """Write the model atomically (temp file, fsync, rename). No pickle: loading runs no code.

        `extra` is stored in the file's JSON header (read it back with `slide.model_file.read_header`).
        """
        self.ranks.save(self, path, include_optimizer=include_optimizer, extra=extra)

    def __reduce__(self):
        """Pickling (and copy.deepcopy, joblib) stores the model file's bytes: no engine pointers,
        and unpickling runs the same checks as `load`."""
        if self.comm is not None:
            raise TypeError("a network sharded over MPI ranks cannot be pickled; save() it (one file per rank)")
        from .model_file import network_to_bytes

        return _network_from_bytes, (type(self), network_to_bytes(self))

    @classmethod
    def load(cls, path: "os.PathLike[str] | str", *, threads: Optional[int] = None, comm: Any = None) -> Any:
        """Load a model written by `save`; predictions are identical to the saved model's. With
        `comm`, every rank loads its shard of a model saved under MPI by as many ranks
        (`slide reshard` changes the number of ranks, or makes one single-process file)."""
        from .distributed.checkpoint import is_sharded, load_shards
        from .model_file import load_network

        if comm is not None or is_sharded(path):
            return load_shards(cls, path, comm, threads=threads)
        return load_network(cls, path, threads=threads)


def _network_from_bytes(cls, data: bytes) -> Any:
    from .model_file import network_from_bytes

    return network_from_bytes(cls, data)
