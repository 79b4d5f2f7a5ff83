"""The best epoch's parameters in a run with a validation split: copied in memory when validation
finds a better epoch, and written to the run folder's best.npz only with the next checkpoint.

Writing the file at every improvement cost a full model file per epoch (2-3 s at Amazon-670K
scale, most epochs improve), and loading it back at the end another 5 s. The file only has to be
there for a resume, and a resume starts from a checkpoint, so it is written just before each
checkpoint: a checkpoint never names a best epoch whose parameters are not on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np

from .atomic_files import atomic_link
from .early_stopping import restore, snapshot
from .model_file import load_network, save_network


BEST = "best.npz"


class BestEpoch:
    """The parameters of the best epoch so far: in memory (`keep`), on disk (`write`), and put
    back into a network at the end of a run (`restore_into`)."""

    def __init__(self) -> None:
        self._parameters: Optional[dict[str, np.ndarray]] = None
        self._unwritten = False

    def keep(self, net: Any) -> None:
        """Remember `net`'s parameters as the best so far (a copy: training goes on changing them),
        over the last best's arrays."""
        self._parameters = snapshot(net, into=self._parameters)
        self._unwritten = True

    @property
    def unwritten(self) -> bool:
        """Whether the kept parameters are newer than best.npz."""
        return self._unwritten

    def write(self, net: Any, run_dir: Path) -> None:
        """Write the kept parameters to best.npz if they are newer than the file: a model file of
        `net`'s configuration whose tables are rebuilt from those parameters when it is loaded."""
        if self._unwritten:
            self._save(net, run_dir)

    def write_as(self, net: Any, run_dir: Path, same_file: Path) -> None:
        """best.npz as a hard link to `same_file`, a model file in `run_dir` that holds the kept
        parameters (`holds`), instead of a second copy of the same bytes; written as a copy where
        the file system has no hard links."""
        if not atomic_link(same_file, run_dir / BEST):
            self._save(net, run_dir)
        self._unwritten = False

    def _save(self, net: Any, run_dir: Path) -> None:
        save_network(net, run_dir / BEST, include_optimizer=False, parameters=self._parameters)
        self._unwritten = False

    def holds(self, parameters: dict[str, np.ndarray]) -> bool:
        """Whether the kept parameters are `parameters`, bit for bit (the small arrays first: where
        they differ a bias already does)."""
        kept = self._parameters
        return kept is not None and parameters.keys() == kept.keys() and \
            all(np.array_equal(parameters[k], kept[k]) for k in sorted(kept, key=lambda k: kept[k].size))

    def exists(self, run_dir: Path) -> bool:
        return self._parameters is not None or (run_dir / BEST).exists()

    def restore_into(self, net: Any, run_dir: Path) -> None:
        """Put the best parameters into `net` (its LSH tables and BF16 copies follow); after a
        resume they are read from best.npz."""
        if self._parameters is None:
            self._parameters = snapshot(load_network(type(net), run_dir / BEST, threads=net.threads))
        restore(net, self._parameters)
