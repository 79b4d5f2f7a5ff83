"""An ExtremeOutput batch keeps its row gradients compact from forward to step (train/external_output.cpp)
instead of summing them into the layer's full-size accumulators and reading them back. That must
be the very step the plain path takes (`compact=False`, the oracle): bit for bit, every weight,
optimizer state and LSH counter, over several steps, with gradient accumulation (a second batch
before the step moves the first into the accumulators), dropped batches, loss factors, and active
sets wider than one chunk (8,192 rows, where the compact path steps aside)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="slide.torch needs torch: pip install \"slide[torch]\"")

import slide  # noqa: E402
from slide._core import output_layer_gradients, output_layer_step  # noqa: E402
from slide.torch import ExtremeOutput  # noqa: E402

K, N, ROWS = 24, 9000, 40


def _layers(optimizer: str, matmul: str, min_active: int) -> list[ExtremeOutput]:
    lsh = slide.LSHConfig(k=3, l=8, batch_active=64, min_active=min_active, rehash_every=80, rebuild_every=160)
    return [ExtremeOutput(K, N, lsh=lsh, optimizer=optimizer, matmul=matmul, threads=2, seed=4) for _ in range(2)]


def _batch(seed: int):
    rng = np.random.default_rng(seed)
    hidden = np.maximum(rng.normal(size=(ROWS, K)), 0).astype(np.float32)
    counts = rng.integers(0, 4, ROWS)  # some rows without labels
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = np.concatenate([np.sort(rng.choice(N, c, replace=False)) for c in counts]).astype(np.int32)
    return hidden, indptr, indices


# (batches before each step, loss factor per batch); None drops what is waiting (zero_grad).
SCHEDULE = [(1, 1.0), (1, 0.5), (2, 1.0), None, (1, 1.0), (3, 2.0), (1, 1.0), (1, 1.0)]


def _train(layer: ExtremeOutput, compact: bool) -> list[int]:
    engine, staged, seed = layer._engine, [], 0
    for entry in SCHEDULE:
        if entry is None:
            output_layer_gradients(engine, *_batch(seed), compact=compact)
            engine.clear_gradients()
            seed += 1
            continue
        batches, factor = entry
        rows = 0
        for _ in range(batches):
            stats, delta = output_layer_gradients(engine, *_batch(seed), compact=compact)
            staged.append(int(stats["staged_rows"]))
            rows += int(stats["samples"])
            seed += 1
        assert output_layer_step(engine, 0.05, rows, factor * batches) == 0
    return staged


def _counts(counters: dict) -> dict:
    """The engine's counters without the times they measured."""
    return {k: _counts(v) if isinstance(v, dict) else v for k, v in counters.items() if not k.endswith("_seconds")}


@pytest.mark.parametrize("optimizer", ["adam", "adagrad", "sgd"])
@pytest.mark.parametrize("matmul,min_active", [("fp32", 300), ("bf16", 300), ("fp32", 8300)])
def test_compact_staging_is_the_plain_step(optimizer, matmul, min_active):
    compact, plain = _layers(optimizer, matmul, min_active)
    staged = _train(compact, True)
    assert _train(plain, False) == [0] * len(staged)
    if min_active < 8192:  # one chunk: a batch alone before its step stays compact, a second does not
        assert staged[0] >= 300 and staged[1] >= 300
        assert staged[3] == 0 and staged[2] >= 300  # the second of two batches
    else:
        assert staged == [0] * len(staged)
    states = [layer._engine.state() for layer in (compact, plain)]
    assert set(states[0]) == set(states[1])
    for name in states[0]:
        np.testing.assert_array_equal(states[0][name], states[1][name], err_msg=name)
    assert _counts(compact._engine.counters()) == _counts(plain._engine.counters())
    fresh = _layers(optimizer, matmul, min_active)[0]._engine.state()
    assert not np.array_equal(fresh["layers.0.weight"], states[0]["layers.0.weight"])  # the rows moved

