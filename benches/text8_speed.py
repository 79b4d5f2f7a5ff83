"""Word-vector training speed at the full text8 shape: 17,005,207 words over a 253,854-word Zipfian
vocabulary, generated (the real corpus cannot be downloaded here, and the quality of vectors
trained on generated text means nothing, so this measures words/s only). slide's text8 preset
against gensim's skip-gram with its defaults, same threads, dimension, window and minimum count,
in one run; `benches.text8_gensim` has the quality on real text.

    python -m benches.text8_speed [--words 17005207 --epochs 1]

Writes benches/results/text8_speed.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from .environment import describe
from .text8_gensim import GENSIM, RESULTS, VARIANTS, run_gensim, run_slide

TEXT8_WORDS, TEXT8_VOCABULARY = 17_005_207, 253_854


def write_zipf_corpus(path: Path, words: int, vocabulary: int, seed: int) -> None:
    """`words` words drawn with probability proportional to 1/rank, written in pieces."""
    p = 1.0 / np.arange(1, vocabulary + 1)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    names = np.array([f"w{i}" for i in range(vocabulary)], dtype=object)
    with open(path, "w") as f:
        for start in range(0, words, 1_000_000):
            f.write(" ".join(names[rng.choice(vocabulary, min(1_000_000, words - start), p=p)]) + " ")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--words", type=int, default=TEXT8_WORDS)
    ap.add_argument("--dim", type=int, default=200)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    report = {"benchmark": "text8_speed", "environment": describe(args.threads),
              "corpus": {"generated_words": args.words, "vocabulary": TEXT8_VOCABULARY, "distribution": "1/rank"},
              "config": vars(args), "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "text8"
        write_zipf_corpus(corpus, args.words, TEXT8_VOCABULARY, seed=0)
        gensim_name = next(iter(GENSIM))
        preset = next(iter(VARIANTS))
        for name, run in ((gensim_name, lambda: run_gensim(corpus, args, 0, GENSIM[gensim_name], score=False)),
                          (f"slide {preset}", lambda: run_slide(corpus, args, 0, [], score=False))):
            r = run()
            r["words_per_second"] = round(args.words * args.epochs / r["train_seconds"])
            report["results"][name] = r
            print(f"{name:32s} {r['words_per_second']:>9,} words/s  vocabulary {r['vocabulary']:,}", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "text8_speed.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
