"""`slide train --dataset text8` with ``text8.objective = "skipgram"`` (the text8 preset): word
vectors by skip-gram with negative sampling (slide.SkipGram) into a run folder: config.json,
metrics.jsonl (one record per epoch: words/s and loss), and model.npz (the skip-gram model; `slide
export RUN` writes its vectors in the word2vec format). Ctrl-C or SIGTERM saves the vectors
trained so far and exits with 130 or 143; such a run does not resume (the rate falls over the whole
run), so train it again. A run whose vectors become NaN or infinite stops with exit code 3, as a
network run does, and writes no model."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from .. import runs
from ..datasets import registry
from ..datasets.fingerprint import fingerprint
from ..datasets.text8 import load_text8
from ..network import TrainingDiverged
from ..settings import SKIPGRAM, defaults
from ..skipgram import SkipGram
from . import signals


def objective(cfg: dict[str, Any]) -> str:
    """The objective a run trains with: its [text8] table's, else its dataset preset's ("softmax"
    for everything that is not a text8 corpus)."""
    if cfg.get("train_file") or cfg.get("dataset") is None:
        return "softmax"
    info = registry.get(cfg["dataset"])
    if info.kind != "text8":
        return "softmax"
    return {**info.preset.get("text8", {}), **cfg.get("text8", {})}.get("objective", "softmax")


def take_preset(cfg: dict[str, Any], preset: dict[str, Any]) -> None:
    """A skip-gram run's settings: the user's [skipgram] over the table's, the preset's epochs. The
    network and LSH settings train the softmax objective only, so giving any is refused."""
    given = sorted([f"network.{k}" for k in cfg.pop("network", {})] + [f"lsh.{k}" for k in cfg.pop("lsh", {})])
    if given:
        raise ValueError(f"{', '.join(given)} train the softmax objective, but text8.objective is skipgram "
                         "(its settings are [skipgram]'s); set text8.objective=softmax to train SLIDE's network")
    cfg["skipgram"] = {**defaults(SKIPGRAM), **cfg.get("skipgram", {})}
    cfg.setdefault("epochs", preset["epochs"])


def main(cfg: dict[str, Any], run_dir: Path, *, quiet: bool) -> int:
    info = registry.get(cfg["dataset"])
    corpus_path, _ = registry.locate(info, registry.data_dir(cfg.get("data_dir")))
    text8 = {**info.preset.get("text8", {}), **cfg.get("text8", {})}
    text8.pop("objective", None)
    sg = cfg["skipgram"]
    t0 = time.perf_counter()
    corpus = load_text8(corpus_path, **text8)
    limit = cfg.get("train_samples")
    ids = corpus.ids[:min(corpus.train_end, limit) if limit else corpus.train_end]
    model = SkipGram.from_corpus(corpus, sg["dim"], window=text8["window"], subsample=text8["subsample"],
                                 negatives=sg["negatives"], learning_rate=sg["learning_rate"],
                                 min_learning_rate=sg["min_learning_rate"], threads=cfg.get("threads"),
                                 seed=cfg["seed"])
    cfg["resolved_threads"] = model.threads
    cfg["data_files"] = [fingerprint(corpus_path)]
    runs.write_config(run_dir, cfg)
    print(f"data: text8, {len(corpus.ids):,} words, vocabulary {corpus.vocab_size:,} (min_count "
          f"{text8['min_count']}), training on {len(ids):,} ({time.perf_counter() - t0:.1f}s)", flush=True)
    print(f"{model}; run folder {run_dir}", flush=True)
    epochs = cfg["epochs"]
    started = time.perf_counter()

    def on_epoch(record: dict) -> None:
        runs.append_metrics(run_dir, {"kind": "epoch", **record})
        print(f"epoch {record['epoch']}/{epochs}: {record['words_per_second']:,.0f} words/s, "
              f"loss {record['loss']:.4f} per pair", flush=True)

    try:
        history = model.fit(ids, epochs, progress=not quiet, on_epoch=on_epoch)
    except TrainingDiverged as e:  # as a network run: exit 3, and no model of NaNs saved
        print(f"slide: error: {e} (skipgram.learning_rate is {sg['learning_rate']:g}: give a lower one with "
              "--set skipgram.learning_rate=...); no model.npz was written", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        model.save(run_dir / runs.MODEL)
        print(f"\n{signals.what_stopped()}: the vectors trained so far are in {run_dir / runs.MODEL}",
              file=sys.stderr)
        return signals.exit_code()
    model.save(run_dir / runs.MODEL)
    seconds = sum(r["seconds"] for r in history)
    words = sum(r["words"] for r in history)
    runs.append_metrics(run_dir, {"kind": "final", "objective": "skipgram", "train_seconds": round(seconds, 3),
                                  "words": words, "words_per_second": words / max(seconds, 1e-9),
                                  "loss": history[-1]["loss"], "wall_seconds": round(time.perf_counter() - started, 3)})
    print(f"trained {epochs} epochs in {seconds:,.1f}s ({words / max(seconds, 1e-9):,.0f} words/s); "
          f"saved {run_dir / runs.MODEL}; `slide export {run_dir} --out vectors.txt` writes the word vectors",
          flush=True)
    return 0
