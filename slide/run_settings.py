"""The settings of a `slide train` run, declared once: name, type, range, meaning. The run.toml
reader, the command-line flags and the run loop all check values against this table, so a wrong
type or a value out of range is one clear ValueError naming the setting, wherever it came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from ._inputs import MAX_DIM

MAX_SEED = 2**64 - 1


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str                          # "int", "float", "str", "bool", "path", "sizes" (list of ints)
    doc: str
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    choices: tuple[str, ...] = ()
    flag: Optional[str] = None         # the command-line flag, where there is one

    def check(self, value: Any, label: Optional[str] = None) -> Any:
        """The value in its canonical type, or ValueError naming the setting (or `label`, e.g. its
        flag or its place in a file) and what was expected."""
        label = label or self.name
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{label} must be an integer, got {value!r}")
            self._range(label, value)
            return value
        if self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{label} must be a finite number, got {value!r}")
            self._range(label, value)
            return float(value)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"{label} must be true or false, got {value!r}")
            return value
        if self.kind in ("str", "path"):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{label} must be a non-empty string, got {value!r}")
            if self.choices and value not in self.choices:
                raise ValueError(f"{label} must be one of {', '.join(self.choices)}; got {value!r}")
            return value
        if self.kind == "sizes":
            sizes = [value] if isinstance(value, int) and not isinstance(value, bool) else value
            if not isinstance(sizes, list) or not sizes or any(isinstance(v, bool) or not isinstance(v, int)
                                                                 for v in sizes):
                raise ValueError(f"{label} must be a layer size or a non-empty list of layer sizes such as [128], "
                                 f"got {value!r}")
            for v in sizes:
                self._range(label, v)
            return sizes
        raise AssertionError(self.kind)

    def _range(self, label: str, value: float) -> None:
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{label} must be >= {self.minimum:g}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{label} must be <= {self.maximum:,}, got {value!r}")


def _table(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


# Top-level keys of run.toml (and the flags that set them).
RUN = _table(
    Setting("dataset", "str", "a named dataset (slide data info NAME)", flag="--dataset"),
    Setting("train_file", "path", "a training file in Extreme Classification format", flag="--train"),
    Setting("test_file", "path", "the matching test file", flag="--test"),
    Setting("data_dir", "path", "where named datasets live", flag="--data-dir"),
    Setting("train_samples", "int", "use only the first N training points", 1, flag="--train-samples"),
    Setting("test_samples", "int", "use only N (shuffled) test points", 1, flag="--test-samples"),
    Setting("threads", "int", "worker threads (default: the CPUs this process may use)", 1, 1024, flag="--threads"),
    Setting("seed", "int", "seeds weights, hash functions, shuffling", 0, MAX_SEED, flag="--seed"),
    Setting("epochs", "int", "passes over the training data", 1, 1_000_000, flag="--epochs"),
    Setting("batch_size", "int", "samples per optimizer step", 1, 1 << 20, flag="--batch-size"),
    Setting("eval_every", "int", "samples between periodic evaluations (default: a quarter epoch)", 1, flag="--eval-every"),
    Setting("eval_samples", "int", "test points in a periodic evaluation (default 2,000)", 1, flag="--eval-samples"),
    Setting("final_eval_samples", "int", "test points in the final evaluation (default: all)", 1),
    Setting("checkpoint_every", "float", "seconds between checkpoints (default 600; 0: after every piece of training)", 0,
            flag="--checkpoint-every"),
    Setting("on_divergence", "str", "stop, or back off the learning rate from the last good checkpoint",
            choices=("stop", "backoff"), flag="--on-divergence"),
    Setting("validation_split", "float", "share of the training points held out to pick the best epoch "
            "(the final model is the best one on them)", 0, 0.9, flag="--validation-split"),
    Setting("early_stopping", "int", "with a validation split: stop after N epochs without a better monitor",
            1, flag="--early-stopping"),
    Setting("monitor", "str", "the validation metric that picks the best epoch (default P@1)",
            choices=("P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5", "loss"), flag="--monitor"),
)

# Keys of run.toml's [network] table.
NETWORK = _table(
    Setting("hidden", "sizes", "hidden layer sizes", 1, MAX_DIM),
    Setting("learning_rate", "float", "base learning rate", 1e-30, flag="--lr"),
    Setting("optimizer", "str", "the optimizer", choices=("adam", "sgd")),
    Setting("lr_schedule", "str", "learning-rate decay over the run", choices=("constant", "linear", "cosine"),
            flag="--lr-schedule"),
    Setting("lr_warmup", "float", "share of the run's steps over which the rate warms up", 0, 0.99,
            flag="--lr-warmup"),
    Setting("dense", "bool", "full softmax instead of LSH sampling", flag="--dense"),
    Setting("input_norm", "str", "scale each sample's features to unit L2 norm (l2) or not (none)",
            choices=("none", "l2"), flag="--input-norm"),
    Setting("input_dropout", "float", "share of input features dropped while training", 0, 0.95,
            flag="--input-dropout"),
)

# Keys of run.toml's [text8] table: how the corpus becomes samples (slide.datasets.load_text8).
TEXT8 = _table(
    Setting("min_count", "int", "drop words seen fewer times", 1),
    Setting("max_vocab", "int", "keep at most this many words (0 = all)", 0),
    Setting("window", "int", "maximum distance of a context word", 1, 1000),
    Setting("subsample", "float", "word2vec's subsampling threshold t (0 keeps every word)", 0),
    Setting("test_fraction", "float", "share of the corpus held out for evaluation", 0, 0.99),
)

# Tables run.toml may hold besides the keys above; [lsh] is checked by LSHConfig.
TABLES = ("network", "lsh", "text8")


def check_table(values: Any, table: dict[str, Setting], where: str) -> dict[str, Any]:
    """Every key known and every value valid; `where` prefixes messages (e.g. "run.toml: [network] ")."""
    if not isinstance(values, dict):
        raise ValueError(f"{where.rstrip()} must be a table of settings, got {values!r}")
    unknown = sorted(set(values) - set(table))
    if unknown:
        raise ValueError(f"{where}unknown settings {unknown}; known: {sorted(table)}")
    return {k: table[k].check(v, f"{where}{k}") for k, v in values.items()}
