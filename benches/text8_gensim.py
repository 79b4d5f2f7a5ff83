"""Word vectors from a text8 corpus: slide's text8 preset (`slide train --dataset text8`, its word
vectors exported with `slide export`) against gensim's Word2Vec skip-gram with negative sampling,
on the same text, threads, dimension, window, minimum count and epochs, in one run. Both sets of
vectors are scored by gensim's own evaluation (`KeyedVectors.evaluate_word_pairs` on the
wordsim353 and SimLex-999 files gensim ships, `evaluate_word_analogies` on questions-words).
Words/s is corpus words x epochs / training seconds (slide's from its run record, gensim's around
`train`).

    pip install gensim
    python -m benches.text8_gensim --corpus FILE [--dim 200 --window 5 --min-count 5 --epochs 5]
                                   [--variants "text8 preset" "batch mode" ...]

The corpus is any text8-style file (lower-case words separated by spaces). The real text8 is not
downloadable here; a prefix decoded from a truncated text8.zip found in a public repository
serves (the result records its size and hash). Writes benches/results/text8_gensim.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"
# slide's text8 preset, and the departures from it measured against gensim (settings as --set takes).
VARIANTS = {
    "text8 preset": [],
    "batch mode": ["network.mode=batch"],
    "dense output": ["network.mode=dense"],
    "sgd, linear decay": ["network.optimizer=sgd", "network.learning_rate=0.05", "network.lr_schedule=linear"],
}
ROOT = Path(__file__).resolve().parents[1]


def scores(kv) -> dict:
    """gensim's word-similarity and analogy scores of a KeyedVectors."""
    from gensim.test.utils import datapath

    out = {}
    for name, file in (("wordsim353", "wordsim353.tsv"), ("simlex999", "simlex999.txt")):
        _, spearman, oov = kv.evaluate_word_pairs(datapath(file))
        out[f"{name}_spearman"] = round(float(spearman[0]), 4)
        out[f"{name}_oov_percent"] = round(float(oov), 1)
    accuracy, sections = kv.evaluate_word_analogies(datapath("questions-words.txt"))
    out["analogy_accuracy"] = round(float(accuracy), 4)
    out["analogy_questions"] = sum(len(s["correct"]) + len(s["incorrect"]) for s in sections if s["section"] == "Total accuracy")
    return out


def run_gensim(corpus: Path, args) -> dict:
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence

    model = Word2Vec(vector_size=args.dim, window=args.window, min_count=args.min_count, sg=1, negative=5,
                     workers=args.threads, seed=args.seed)
    model.build_vocab(LineSentence(str(corpus)))
    t0 = time.perf_counter()
    model.train(LineSentence(str(corpus)), total_examples=model.corpus_count, epochs=args.epochs)
    seconds = time.perf_counter() - t0
    return {"settings": f"Word2Vec(sg=1, negative=5, vector_size={args.dim}, window={args.window}, "
                        f"min_count={args.min_count}, workers={args.threads}), defaults otherwise "
                        "(sample=1e-3, alpha 0.025 decaying linearly)",
            "vocabulary": len(model.wv), "train_seconds": round(seconds, 2), **scores(model.wv)}


def run_slide(corpus: Path, args, extra: list[str]) -> dict:
    from gensim.models import KeyedVectors

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data" / "text8"
        data.mkdir(parents=True)
        (data / "text8").symlink_to(corpus.resolve())
        run, vectors = Path(tmp) / "run", Path(tmp) / "vectors.bin"
        flags = ["--dataset", "text8", "--data-dir", str(data.parent), "--epochs", str(args.epochs), "--threads",
                 str(args.threads), "--seed", str(args.seed), "--quiet", "--out", str(run),
                 "--set", f"network.hidden=[{args.dim}]", "--set", f"text8.window={args.window}",
                 "--set", f"text8.min_count={args.min_count}", *extra]
        for command in (["train", *flags], ["export", str(run), "--out", str(vectors), "--binary"]):
            r = subprocess.run([sys.executable, "-m", "slide", *command], capture_output=True, text=True, cwd=tmp,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})  # this tree's slide, as recorded
            if r.returncode != 0:
                raise SystemExit(f"slide {command[0]} failed:\n{r.stderr}")
        final = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
        kv = KeyedVectors.load_word2vec_format(str(vectors), binary=True)
        return {"settings": "slide train --dataset text8 " + " ".join(flags[2:]), "vocabulary": len(kv),
                "train_seconds": round(final["train_seconds"], 2), **scores(kv)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--dim", type=int, default=200)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS),
                    help="slide variants to run (default: all)")
    args = ap.parse_args()
    text = args.corpus.read_bytes()
    words = len(text.split())
    report = {"benchmark": "text8_gensim", "environment": describe(args.threads),
              "corpus": {"words": words, "bytes": len(text), "sha256": hashlib.sha256(text).hexdigest()},
              "config": {k: v for k, v in vars(args).items() if k != "corpus"}, "results": {}}
    del text
    runs = [("gensim skip-gram", lambda: run_gensim(args.corpus, args))]
    runs += [(f"slide {v}", lambda v=v: run_slide(args.corpus, args, [x for kv in VARIANTS[v] for x in ("--set", kv)]))
             for v in args.variants]
    for name, run in runs:
        r = run()
        r["words_per_second"] = round(words * args.epochs / r["train_seconds"])
        report["results"][name] = r
        print(f"{name:20s} {r['words_per_second']:>9,} words/s  wordsim353 {r['wordsim353_spearman']:.3f}  "
              f"SimLex-999 {r['simlex999_spearman']:.3f}  analogies {r['analogy_accuracy']:.3f}", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "text8_gensim.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
