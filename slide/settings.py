"""Every setting, declared once: name, type, default, range, meaning. `slide.LSHConfig` and
`slide.Network` take their defaults from here, the run.toml reader, the command-line flags
(`--set lsh.k=4`) and the run loop check values against it, and the documentation's settings tables (docs/settings.md) are
rendered from it (`python -m slide.settings`). Tests hold the C++ structs' defaults and the
constructors' signatures to it, so a default is written in one place only.
"""

from __future__ import annotations

import math
import sys
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
    default: Any = None                # None: no fixed default (a preset or the data decides)
    above: bool = False                # the minimum itself is excluded

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
        if self.minimum is not None and self.above and value <= self.minimum:
            raise ValueError(f"{label} must be > {self.minimum:g}, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{label} must be >= {self.minimum:g}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{label} must be <= {self.maximum:,}, got {value!r}")


def _table(*settings: Setting) -> dict[str, Setting]:
    return {s.name: s for s in settings}


# Top-level keys of run.toml (and the flags that set them).
RUN = _table(
    Setting("dataset", "str", "a named dataset (slide data info NAME)", flag="--dataset"),
    Setting("train_file", "path", "a training file in Extreme Classification format, or a shard folder "
            "(slide data convert)", flag="--train"),
    Setting("test_file", "path", "the matching test file", flag="--test"),
    Setting("data_dir", "path", "where named datasets live", flag="--data-dir"),
    Setting("train_samples", "int", "use only the first N training points", 1, flag="--train-samples"),
    Setting("test_samples", "int", "use only N (shuffled) test points", 1, flag="--test-samples"),
    Setting("threads", "int", "worker threads (default: the CPUs this process may use)", 1, 1024, flag="--threads"),
    Setting("seed", "int", "seeds weights, hash functions, shuffling", 0, MAX_SEED, flag="--seed"),
    Setting("stream", "bool", "train from shards read one at a time (a file is converted first, beside it) "
            "instead of loading the training data; automatic when it would not fit in memory", flag="--stream",
            default=False),
    Setting("shuffle", "bool", "reshuffle the training points every epoch (streamed: the shard order and the "
            "points inside each shard)", default=True),
    Setting("epochs", "int", "passes over the training data", 1, 1_000_000, flag="--epochs"),
    Setting("batch_size", "int", "samples per optimizer step", 1, 1 << 20, flag="--batch-size"),
    Setting("eval_every", "int", "samples between periodic evaluations (default: a quarter epoch)", 1, flag="--eval-every"),
    Setting("eval_samples", "int", "test points in a periodic evaluation; with a validation split, also the most "
            "held-out points that judge each epoch and pick the neighbours' weight (the same ones every epoch)", 1,
            flag="--eval-samples", default=2000),
    Setting("final_eval_samples", "int", "test points in the final evaluation (default: all)", 1),
    Setting("eval_budget", "float", "test evaluations during training (periodic, epoch ends) run only where they "
            "stay within this share of the training time, the next counted at what the last cost (before any, at "
            "what training as many samples cost); the final one always runs", 0,
            flag="--eval-budget", default=0.05),
    Setting("checkpoint_every", "float", "seconds between checkpoints, written at the first epoch end after the "
            "interval and at the end of the run (see end_checkpoint_after; 0: after every piece of training and at "
            "the end)", 0, flag="--checkpoint-every", default=600.0),
    # In the real suite at b5b4862 the end-of-run checkpoint (the parameters, the epoch mean and
    # Adam's moments) cost 6-10% of what training cost on the Debian dependency sets (1.1-1.3 s) and
    # 30% on Medical (6 ms of 20 ms); a run shorter than the default is redone in under a minute, and
    # `--resume` starts a run folder that holds no checkpoint from the beginning.
    Setting("end_checkpoint_after", "float", "the end of a run writes a checkpoint (to resume it with more "
            "epochs) only once the run has trained this many seconds since its last one (checkpoint_every, if "
            "less); 0: always. Ctrl-C and SIGTERM always write one", 0, default=30.0),
    Setting("final_model_optimizer", "bool", "model.npz also holds the optimizer state (to train on from it in "
            "Python; checkpoint.npz always does)", default=False),
    Setting("on_divergence", "str", "stop, or back off the learning rate from the last good checkpoint",
            choices=("stop", "backoff"), flag="--on-divergence", default="stop"),
    Setting("validation_split", "float", "share of the training points held out to pick the best epoch "
            "(the final model is the best one on them)", 0, 0.9, flag="--validation-split"),
    Setting("early_stopping", "int", "with a validation split: stop after N epochs without a better monitor",
            1, flag="--early-stopping"),
    Setting("monitor", "str", "the validation metric that picks the best epoch (default P@1)",
            choices=("P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5", "loss"), flag="--monitor"),
    Setting("averaging", "str", "with a validation split, swa: from the epoch after the run's first quarter on, "
            "validation also judges the mean of the parameters at the ends of the epochs since, keeps whichever is "
            "better, and the run ends with the best (training goes on from its own parameters); off (unless the "
            "data's shape picks swa): each epoch's own parameters", choices=("off", "swa"), flag="--averaging"),
)

# Keys of run.toml's [network] table; the defaults are slide.Network's.
NETWORK = _table(
    Setting("mode", "str", "how the output layer trains: batch (one LSH-chosen active set per batch, as "
            "matrix products), sample (SLIDE: an active set per sample) or dense (full softmax)",
            choices=("batch", "sample", "dense"), flag="--mode", default="batch"),
    Setting("hidden", "sizes", "hidden layer sizes", 1, MAX_DIM, default=[128]),
    Setting("learning_rate", "float", "base learning rate", 0, flag="--lr", default=1e-3, above=True),
    Setting("optimizer", "str", "adam (lazy: only rows with gradient move), adagrad or sgd",
            choices=("adam", "adagrad", "sgd"), flag="--optimizer", default="adam"),
    Setting("beta1", "float", "Adam's first-moment decay", 0, 1, default=0.9),
    Setting("beta2", "float", "Adam's second-moment decay", 0, 1, default=0.999),
    Setting("eps", "float", "Adam's and Adagrad's denominator floor", 0, default=1e-8, above=True),
    Setting("lr_schedule", "str", "learning-rate decay over the run", choices=("constant", "linear", "cosine"),
            flag="--lr-schedule", default="constant"),
    Setting("lr_warmup", "float", "share of the run's steps over which the rate warms up", 0, 0.99,
            flag="--lr-warmup", default=0.0),
    Setting("dense", "bool", "full softmax instead of LSH sampling (the same as mode = \"dense\")", flag="--dense"),
    Setting("input_norm", "str", "scale each sample's features to unit L2 norm (l2) or not (none)",
            choices=("none", "l2"), flag="--input-norm", default="none"),
    Setting("input_dropout", "float", "share of input features dropped while training", 0, 0.95,
            flag="--input-dropout", default=0.0),
    Setting("output_loss", "str", "the loss over each sample's active outputs: softmax (one softmax, the target spread "
            "over the sample's labels) or decoupled (each label against the negatives alone, averaged over the "
            "labels, so that a sample's labels do not compete)", choices=("softmax", "decoupled"), flag="--output-loss",
            default="softmax"),
    Setting("precision", "str", "fp32, or bf16: training reads BF16 copies of the weight rows",
            choices=("fp32", "bf16"), flag="--precision", default="fp32"),
    Setting("matmul", "str", "the output layer's matrix products in the batch and dense modes: fp32, or bf16 "
            "(inputs rounded to BF16, sums in fp32: twice the multiply-adds per instruction on CPUs with AVX-512 "
            "BF16; elsewhere fp32); bf16 ranks the re-ranker's training lists with BF16 products too, while "
            "prediction stays exact", choices=("fp32", "bf16"), flag="--matmul", default="fp32"),
    Setting("sparse_exchange", "str", "under MPI, how the ranks sum the embedding's sparse gradient: allgather "
            "(every rank sends its rows to every other), allreduce (the union of the rows, summed) or auto (the "
            "one that moves fewer bytes for each batch)", choices=("auto", "allgather", "allreduce"),
            flag="--sparse-exchange", default="auto"),
    Setting("neighbours", "int", "k: each prediction fuses the labels of the k most similar training points "
            "(cosine) with the network's logits; 0: the network alone", 0, 1000, flag="--neighbours", default=10),
    Setting("neighbour_weight", "float", "weight of the neighbours' vote in the fused score, logit + weight x vote; "
            "with validation data, training picks it from 0 to 1,024, or learns it with the other fusion weights where "
            "that does better on the held-out points", 0, 1e6, flag="--neighbour-weight", default=4.0),
    Setting("neighbour_space", "str", "where the neighbours are found: input (cosine of the input features), hidden "
            "(cosine of the network's top hidden layer) or both (the two votes averaged)",
            choices=("input", "hidden", "both"), flag="--neighbour-space", default="both"),
    Setting("rerank", "int", "N: after the network, per-label linear classifiers over the input features (hashed, "
            "at most 64 MiB) are trained on each point's N best labels (slide.reranker.HINGE_SHORTLIST_FACTOR x N "
            "with the points in memory in one process) and its own, and re-score each prediction's N best "
            "(slide.reranker); 0: off", 0, 1000, flag="--rerank", default=0),
    Setting("rerank_weight", "float", "weight of the re-ranker in the fused score, logit + weight x re-ranker "
            "score; with validation data, training picks it from 0 to 64, or learns it with the other fusion weights",
            0, 1e6, flag="--rerank-weight", default=1.0),
    Setting("fusion_weights", "str", "how training sets the fusion weights on validation data: auto (each triple "
            "judged on the grid, or the weights a logistic regression learns on the held-out candidates where those "
            "score better on each half of the held-out points, picked on the other half; slide.prediction."
            "learned_weights) or grid (the grid's pick alone)", choices=("auto", "grid"), flag="--fusion-weights",
            default="auto"),
    Setting("label_tree", "int", "N: after the network, a label tree (Parabel's: labels split in two by balanced "
            "2-means until at most N a leaf, a linear classifier per node and label over the input features) is "
            "trained on the points in memory (or a stream of one shard), and each prediction's candidates, with the "
            "tree's beam search's, add its log-probability (slide.label_tree); 0: off", 0, 1_000_000,
            flag="--label-tree", default=0),
    Setting("label_trees", "int", "how many label trees (label_tree > 0) are trained, each split from its own seed, "
            "and averaged: their beams' candidates joined, their log-probabilities and per-label classifiers' scores "
            "the trees' means (omikuji's n_trees)", 1, 32, flag="--label-trees", default=1),
    Setting("tree_weight", "float", "weight of the label tree in the fused score, + weight x log-probability; "
            "with validation data, training picks it from 0 to 4, or learns it with the other fusion weights", 0, 1e6,
            flag="--tree-weight", default=1.0),
)

# Keys of run.toml's [lsh] table: slide.LSHConfig's fields (the C++ LshConfig's defaults). The
# defaults are the SLIDE paper's Amazon-670K output layer plus two measured departures
# (batch_negatives, rehash_min_updates; docs/training-modes.md, LSH configuration).
LSH = _table(
    Setting("family", "str", "dwta (densified winner-take-all), wta, simhash (sparse random projections) or "
            "minhash (densified one-permutation minhash of the top coordinates)",
            choices=("dwta", "wta", "simhash", "minhash"), default="dwta"),
    Setting("k", "int", "codes per table; k x bits per code must be <= 32", 1, default=6),
    Setting("l", "int", "tables", 1, 4096, default=50),
    Setting("range_bits", "int", "2^range_bits buckets per table; 0 = min(k x code bits, 18)", 0, 24, default=0),
    Setting("bin_size", "int", "WTA/DWTA window; codes take log2(bin_size) bits", 2, default=8),
    Setting("bucket_size", "int", "ids kept per bucket", 1, default=128),
    Setting("bucket_policy", "str", "on overflow keep the newest (fifo) or a uniform sample (reservoir)",
            choices=("fifo", "reservoir"), default="fifo"),
    Setting("simhash_density", "float", "share of input coordinates each SimHash projection reads", 0, 1,
            default=1.0 / 3.0, above=True),
    Setting("minhash_topk", "int", "minhash hashes the set of the top-k coordinates; 0 = dim / 4", 0, default=0),
    Setting("min_active", "int", "top the active set up with random neurons to at least this many", 0, default=0),
    Setting("max_active", "int", "keep at most this many (those found in the most tables); 0 keeps all", 0,
            default=0),
    Setting("batch_negatives", "int", "per-sample mode: also score this many labels drawn from the batch's label "
            "union (0 = SLIDE)", 0, default=64),
    Setting("batch_active", "int", "0 = per-sample active sets (SLIDE); N > 0 = the batch shares one: its labels, "
            "the N candidates its buckets returned most often, random neurons up to min_active", 0, default=0),
    Setting("rehash_every", "int", "samples between re-inserting neurons whose weights changed", 1, default=6400),
    Setting("rebuild_every", "int", "samples between drawing new hash functions and rebuilding the tables", 1,
            default=128_000),
    Setting("rehash_min_updates", "int", "a rehash re-inserts neurons updated at least this often since their last "
            "hash (1 = SLIDE)", 1, 255, default=4),
    Setting("schedule_growth", "float", "both intervals grow by this factor after each use (SLIDE's decaying "
            "schedule is ~1.1)", 1, default=1.0),
    Setting("late_min_active", "int", "training raises min_active to this once the network has trained "
            "late_after samples: more negatives once the curve levels off (0 = never)", 0, default=0),
    Setting("late_after", "int", "samples trained before late_min_active applies", 0, 2**62, default=0),
)

# Keys of run.toml's [text8] table: how the corpus becomes samples (slide.datasets.load_text8) and
# which objective trains on them.
TEXT8 = _table(
    Setting("objective", "str", "skipgram: word vectors by skip-gram with negative sampling (slide.SkipGram, "
            "the [skipgram] table); softmax: SLIDE's network, the context words as labels of a softmax over the "
            "vocabulary (the [network] and [lsh] tables)", choices=("skipgram", "softmax")),
    Setting("min_count", "int", "drop words seen fewer times", 1),
    Setting("max_vocab", "int", "keep at most this many words (0 = all)", 0),
    Setting("window", "int", "maximum distance of a context word", 1, 1000),
    Setting("subsample", "float", "word2vec's subsampling threshold t (0 keeps every word)", 0),
    Setting("test_fraction", "float", "share of the corpus held out for evaluation", 0, 0.99),
)

# Keys of run.toml's [skipgram] table: slide.SkipGram's settings (window and subsample are [text8]'s).
SKIPGRAM = _table(
    Setting("dim", "int", "word vector size", 1, MAX_DIM, default=200),
    Setting("negatives", "int", "words drawn from unigram^0.75 per (context, centre) pair", 0, 1000, default=5),
    Setting("learning_rate", "float", "SGD rate at the start; it falls linearly over the run (word2vec's 0.025 "
            "suits billions of words; 0.05 measured better on a text8 prefix)", 0, default=0.05, above=True),
    Setting("min_learning_rate", "float", "SGD rate at the end of the run", 0, default=1e-4),
)

# Tables run.toml may hold besides the keys above, and what each one holds.
SECTIONS = {"network": NETWORK, "lsh": LSH, "text8": TEXT8, "skipgram": SKIPGRAM}
TABLES = tuple(SECTIONS)


def check_table(values: Any, table: dict[str, Setting], where: str) -> dict[str, Any]:
    """Every key known and every value valid; `where` prefixes messages (e.g. "run.toml: [network] ")."""
    if not isinstance(values, dict):
        raise ValueError(f"{where.rstrip()} must be a table of settings, got {values!r}")
    unknown = sorted(set(values) - set(table))
    if unknown:
        raise ValueError(f"{where}unknown settings {unknown}; known: {sorted(table)}")
    return {k: table[k].check(v, f"{where}{k}") for k, v in values.items()}


def defaults(table: dict[str, Setting]) -> dict[str, Any]:
    """The settings of `table` that have a fixed default, with it."""
    return {name: s.default for name, s in table.items() if s.default is not None}


def _range_text(s: Setting) -> str:
    if s.choices:
        return ", ".join(f"`{c}`" for c in s.choices)
    if s.kind == "bool":
        return "true / false"
    low = None if s.minimum is None else f"{'>' if s.above else '>='} {s.minimum:g}"
    high = None if s.maximum is None else f"<= {s.maximum:,}"
    return " and ".join(p for p in (low, high) if p) or "any"


def markdown_table(table: dict[str, Setting], section: str = "") -> str:
    """The documentation's table of `table`: key, default, allowed values, meaning."""
    rows = ["| setting | default | allowed | meaning |", "|---|---|---|---|"]
    for s in table.values():
        key = f"{section}.{s.name}" if section else s.name
        default = "-" if s.default is None else f"`{s.default!r}`".replace("'", '"')
        if isinstance(s.default, float) and not s.default.is_integer() and len(repr(s.default)) > 8:
            default = f"`{s.default:.4g}`"
        rows.append(f"| `{key}` | {default} | {_range_text(s)} | {s.doc} |")
    return "\n".join(rows)


def parse_assignment(text: str) -> tuple[str, str, Any]:
    """`--set` syntax: "lsh.k=4" -> ("lsh", "k", 4); "epochs=3" -> ("", "epochs", 3). The value is
    read as TOML (so 1e-3, true, [256, 128] and "dwta" work); a bare word is a string. The key and the
    value are checked against the table they belong to."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key or not raw:
        raise ValueError(f"--set {text!r}: expected KEY=VALUE, e.g. --set lsh.k=4 or --set network.hidden=[256]")
    section, _, name = key.rpartition(".")
    table = SECTIONS.get(section) if section else RUN
    if table is None:
        raise ValueError(f"--set {text!r}: unknown section {section!r}; known: {', '.join(SECTIONS)} "
                         f"(or no section for the run's own settings)")
    if name not in table:
        raise ValueError(f"--set {text!r}: unknown setting {key!r}; known: "
                         f"{', '.join((section + '.' if section else '') + n for n in table)}")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw  # a bare word such as dwta
    except (ValueError, RecursionError) as e:  # Python's own limits: digits of an int, depth of nesting
        raise ValueError(f"--set {key}: {toml_limit(e)}") from None
    try:
        return section, name, table[name].check(value, f"--set {key}")
    except RecursionError:  # a value nested too deeply to show in the message
        raise ValueError(f"--set {key}: {toml_limit(RecursionError())}") from None


def toml_limit(e: BaseException) -> str:
    """What a TOML value past one of Python's limits is, for a message: tomllib raises a bare
    RecursionError for deep nesting and int()'s ValueError for an integer of over 4,300 digits."""
    if isinstance(e, RecursionError):
        return "the value is nested too deeply (no setting holds more than a list of numbers)"
    if "digits" in str(e):
        return f"holds an integer of more than {sys.get_int_max_str_digits():,} digits, far beyond any setting's range"
    return f"not a valid value ({e})"


if __name__ == "__main__":  # the settings tables of docs/settings.md
    for section, table in (("", RUN), *SECTIONS.items()):
        print(f"\n[{section or 'run'}]\n\n{markdown_table(table, section)}")
