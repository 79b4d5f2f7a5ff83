"""Configuration of an LSH-sampled layer."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from ._core import BucketPolicy, HashKind, LshConfig
from .settings import LSH, defaults

HashFamilyName = Literal["dwta", "wta", "simhash", "minhash"]
BucketPolicyName = Literal["fifo", "reservoir"]


# The engine's field widths: the sample intervals are 64-bit, every other integer 32-bit.
_INT_LIMIT = defaultdict(lambda: 2**31, rehash_every=2**63, rebuild_every=2**63, late_after=2**63)
# Declared once, in slide.settings (tests hold the C++ struct's defaults to the same table).
_DEFAULT = defaults(LSH)


@dataclass(frozen=True)
class LSHConfig:
    """How a sampled layer finds its active neurons.

    The defaults are the SLIDE paper's Amazon-670K output layer: DWTA hashing with windows of 8,
    K=6 codes per table (18-bit buckets), L=50 tables, at most 128 ids per bucket (FIFO), tables
    refreshed every 6,400 samples and rebuilt with new hash functions every 128,000.

    Attributes:
        family: ``"dwta"`` (densified winner-take-all), ``"wta"``, ``"simhash"`` (sparse random
            projections) or ``"minhash"`` (densified one-permutation minhash of the top coordinates).
        k: codes per table. ``k`` times the bits per code (1 for SimHash, log2(bin_size)
            otherwise) must be at most 32.
        l: number of tables.
        range_bits: buckets per table = 2**range_bits (1..24); 0 picks min(k * code bits, 18).
        bin_size: WTA/DWTA window size; also sets the bits per code for WTA, DWTA and minhash.
        bucket_size: ids kept per bucket.
        bucket_policy: on overflow ``"fifo"`` keeps the latest inserted, ``"reservoir"`` a uniform sample.
        simhash_density: share of input coordinates each SimHash projection reads.
        minhash_topk: minhash hashes the set of the top-k coordinates; 0 means dim / 4.
        min_active: top the active set up with random neurons to at least this many.
        max_active: keep at most this many (those found in the most tables); 0 keeps all.
        batch_negatives: during training, also score this many labels drawn from the union of the
            batch's labels. Popular labels appear there in proportion to their frequency, which
            stops them from drifting up for everyone (0 = off, as in SLIDE).
        batch_active: 0 trains SLIDE's way, each sample with its own active set. N > 0 makes the
            batch share one: all of the batch's labels, the N candidates its samples' buckets
            returned most often, and random neurons up to ``min_active``. The output layer then
            trains as three matrix products per batch (hard negatives at GEMM speed); hidden
            layers must be dense. ``max_active`` and ``batch_negatives`` do not apply.
        rehash_every: samples between re-inserting neurons whose weights changed.
        rebuild_every: samples between drawing new hash functions and rebuilding the tables.
        rehash_min_updates: a rehash re-inserts only neurons updated at least this many times since
            they were last hashed (1 = every neuron that changed, as in SLIDE).
        schedule_growth: both intervals are multiplied by this after each use (>= 1; the SLIDE
            paper's decaying schedule is ~1.1).
        late_min_active: training raises ``min_active`` to this once the network has trained
            ``late_after`` samples (0 = never). Few random negatives learn fast early; more of them
            lift the level a sampled layer settles at (docs/pytorch.md measures it).
        late_after: samples trained (the network's ``samples_seen``, every rank's under MPI) before
            ``late_min_active`` applies.
    """

    family: HashFamilyName = _DEFAULT["family"]
    k: int = _DEFAULT["k"]
    l: int = _DEFAULT["l"]
    range_bits: int = _DEFAULT["range_bits"]
    bin_size: int = _DEFAULT["bin_size"]
    bucket_size: int = _DEFAULT["bucket_size"]
    bucket_policy: BucketPolicyName = _DEFAULT["bucket_policy"]
    simhash_density: float = _DEFAULT["simhash_density"]
    minhash_topk: int = _DEFAULT["minhash_topk"]
    min_active: int = _DEFAULT["min_active"]
    max_active: int = _DEFAULT["max_active"]
    batch_negatives: int = _DEFAULT["batch_negatives"]
    batch_active: int = _DEFAULT["batch_active"]
    rehash_every: int = _DEFAULT["rehash_every"]
    rebuild_every: int = _DEFAULT["rebuild_every"]
    rehash_min_updates: int = _DEFAULT["rehash_min_updates"]
    schedule_growth: float = _DEFAULT["schedule_growth"]
    late_min_active: int = _DEFAULT["late_min_active"]
    late_after: int = _DEFAULT["late_after"]

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            label = f"LSHConfig.{f.name}"
            if type(value) is int and not -_INT_LIMIT[f.name] <= value < _INT_LIMIT[f.name]:
                raise ValueError(f"{label} must be below {_INT_LIMIT[f.name]:,} in magnitude, got {value:,}")
            LSH[f.name].check(value, label)  # type, range and choices
        # What depends on the layer (bin_size against its input width, k x code bits) is checked in
        # C++ (lsh_config.cpp) and surfaces as ValueError.

    def to_core(self) -> LshConfig:
        c = LshConfig()
        for name, value in asdict(self).items():
            if name == "family":
                c.family = getattr(HashKind, value)
            elif name == "bucket_policy":
                c.policy = getattr(BucketPolicy, value)
            else:
                setattr(c, name, value)
        return c

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LSHConfig":
        """An LSHConfig from a dict (a run.toml [lsh] table); unknown keys are a ValueError naming them."""
        if not isinstance(d, dict):
            raise ValueError(f"an LSH configuration must be a table of settings, got {d!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(f"unknown LSH settings {unknown}; known: {known}")
        return cls(**d)
