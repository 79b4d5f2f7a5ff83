"""Word vectors from a text8 corpus: slide's text8 preset (`slide train --dataset text8`, its word
vectors exported with `slide export`) against gensim's Word2Vec skip-gram with negative sampling,
on the same text, threads, dimension, window, minimum count and epochs, in one run. Both sets of
vectors are scored by gensim's own evaluation (`KeyedVectors.evaluate_word_pairs` on the
wordsim353 and SimLex-999 files gensim ships, `evaluate_word_analogies` on questions-words).
Words/s is corpus words x epochs / training seconds (slide's from its run record, gensim's around
`train`). Each fast system runs with 3 seeds (their scores move by about 0.01 from seed to seed) and
the table reports the means; gensim runs with its defaults and again at slide's starting rate.

    pip install gensim
    python -m benches.text8_gensim --corpus FILE [--dim 200 --window 5 --min-count 5 --epochs 5]
                                   [--variants "text8 preset" "batch mode" ...] [--full-shape-words N]

The corpus is any text8-style file (lower-case words separated by spaces). The real text8 is not
downloadable here; a prefix decoded from a truncated text8.zip found in a public repository
serves (the result records its size and hash). The same run then times gensim's defaults and
slide's preset for one epoch at the full text8 shape, on generated text (17,005,207 words drawn
1/rank from a 253,854-word vocabulary; words/s only: vectors of generated text mean nothing).
Writes benches/results/text8_gensim.json.
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

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"
TEXT8_WORDS, TEXT8_VOCABULARY = 17_005_207, 253_854
# slide's text8 preset (skip-gram), and SLIDE's softmax objective in its modes (settings as --set takes).
SOFTMAX = ["text8.objective=softmax"]
VARIANTS = {
    "skip-gram (text8 preset)": [],
    "softmax, LSH per sample (SLIDE)": SOFTMAX + ["network.mode=sample"],
    "softmax, batch-shared LSH": SOFTMAX + ["network.mode=batch"],
    "softmax, dense": SOFTMAX + ["network.mode=dense"],
}
# gensim's skip-gram with its defaults, and at slide's starting rate (what the rate alone is worth).
GENSIM = {"gensim skip-gram (defaults)": {}, "gensim skip-gram, alpha=0.05 (slide's rate)": {"alpha": 0.05}}
METRICS = ("words_per_second", "wordsim353_spearman", "simlex999_spearman", "analogy_accuracy")
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


def run_gensim(corpus: Path, args, seed: int, options: dict, score: bool = True) -> dict:
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence

    model = Word2Vec(vector_size=args.dim, window=args.window, min_count=args.min_count, sg=1, negative=5,
                     workers=args.threads, seed=seed, **options)
    model.build_vocab(LineSentence(str(corpus)))
    t0 = time.perf_counter()
    model.train(LineSentence(str(corpus)), total_examples=model.corpus_count, epochs=args.epochs)
    seconds = time.perf_counter() - t0
    given = "".join(f", {k}={v}" for k, v in options.items())
    return {"settings": f"Word2Vec(sg=1, negative=5, vector_size={args.dim}, window={args.window}, "
                        f"min_count={args.min_count}, workers={args.threads}{given}), defaults otherwise "
                        "(sample=1e-3, alpha 0.025 falling linearly to 1e-4)",
            "vocabulary": len(model.wv), "train_seconds": round(seconds, 2), **(scores(model.wv) if score else {})}


def run_slide(corpus: Path, args, seed: int, extra: list[str], score: bool = True) -> dict:
    from gensim.models import KeyedVectors

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data" / "text8"
        data.mkdir(parents=True)
        (data / "text8").symlink_to(corpus.resolve())
        run, vectors = Path(tmp) / "run", Path(tmp) / "vectors.bin"
        flags = ["--dataset", "text8", "--data-dir", str(data.parent), "--epochs", str(args.epochs), "--threads",
                 str(args.threads), "--seed", str(seed), "--quiet", "--out", str(run),
                 "--set", f"network.hidden=[{args.dim}]" if "text8.objective=softmax" in extra else f"skipgram.dim={args.dim}",
                 "--set", f"text8.window={args.window}",
                 "--set", f"text8.min_count={args.min_count}", *extra]
        for command in (["train", *flags], ["export", str(run), "--out", str(vectors), "--binary"]):
            r = subprocess.run([sys.executable, "-m", "slide", *command], capture_output=True, text=True, cwd=tmp,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})  # this tree's slide, as recorded
            if r.returncode != 0:
                raise SystemExit(f"slide {command[0]} failed:\n{r.stderr}")
        records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        final = next(r for r in reversed(records) if r["kind"] == "final")
        kv = KeyedVectors.load_word2vec_format(str(vectors), binary=True)
        return {"settings": "slide train --dataset text8 " + " ".join(flags[2:]), "vocabulary": len(kv),
                "train_seconds": round(final["train_seconds"], 2), **(scores(kv) if score else {})}


def write_zipf_corpus(path: Path, words: int, vocabulary: int, seed: int) -> None:
    """`words` words drawn with probability proportional to 1/rank, written in pieces."""
    p = 1.0 / np.arange(1, vocabulary + 1)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    names = np.array([f"w{i}" for i in range(vocabulary)], dtype=object)
    with open(path, "w") as f:
        for start in range(0, words, 1_000_000):
            f.write(" ".join(names[rng.choice(vocabulary, min(1_000_000, words - start), p=p)]) + " ")


def full_shape_speed(args, report: dict) -> None:
    """One epoch of gensim's defaults and slide's preset on generated text of text8's shape: words/s."""
    shape = argparse.Namespace(**{**vars(args), "epochs": 1})
    report["full_shape"] = {"generated_words": args.full_shape_words, "vocabulary": TEXT8_VOCABULARY,
                            "distribution": "1/rank", "epochs": 1, "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "text8"
        write_zipf_corpus(corpus, args.full_shape_words, TEXT8_VOCABULARY, seed=0)
        gensim, preset = next(iter(GENSIM)), next(iter(VARIANTS))
        for name, run in ((gensim, lambda: run_gensim(corpus, shape, 0, GENSIM[gensim], score=False)),
                          (f"slide {preset}", lambda: run_slide(corpus, shape, 0, [], score=False))):
            r = run()
            r["words_per_second"] = round(args.full_shape_words / r["train_seconds"])
            report["full_shape"]["results"][name] = r
            print(f"{name:42s} {r['words_per_second']:>9,} words/s at the full text8 shape "
                  f"(vocabulary {r['vocabulary']:,})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--dim", type=int, default=200)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=3, help="runs of each fast system (seeds 0..N-1); the "
                    "softmax variants, 20x slower, run once")
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS),
                    help="slide variants to run (default: all)")
    ap.add_argument("--full-shape-words", type=int, default=TEXT8_WORDS,
                    help="words of generated text for the speed run at text8's shape (0: skip it)")
    args = ap.parse_args()
    text = args.corpus.read_bytes()
    words = len(text.split())
    report = {"benchmark": "text8_gensim", "environment": describe(args.threads),
              "corpus": {"words": words, "bytes": len(text), "sha256": hashlib.sha256(text).hexdigest()},
              "config": {k: v for k, v in vars(args).items() if k != "corpus"}, "results": {}}
    del text
    systems = [(name, lambda seed, o=options: run_gensim(args.corpus, args, seed, o)) for name, options in GENSIM.items()]
    systems += [(f"slide {v}", lambda seed, v=v: run_slide(args.corpus, args, seed,
                                                            [x for kv in VARIANTS[v] for x in ("--set", kv)]))
                for v in args.variants]
    for name, run in systems:
        seeds = range(args.seeds if "softmax" not in name else 1)
        per_seed = []
        for seed in seeds:
            r = run(seed)
            r["words_per_second"] = round(words * args.epochs / r["train_seconds"])
            per_seed.append(r)
        mean = {k: round(float(np.mean([r[k] for r in per_seed])), 4) for k in METRICS}
        report["results"][name] = {"settings": per_seed[0]["settings"], "vocabulary": per_seed[0]["vocabulary"],
                                   "seeds": len(per_seed), "mean": mean, "runs": per_seed}
        spread = {k: round(float(np.ptp([r[k] for r in per_seed])), 4) for k in METRICS}
        print(f"{name:42s} {mean['words_per_second']:>9,.0f} words/s  wordsim353 {mean['wordsim353_spearman']:.3f}  "
              f"SimLex-999 {mean['simlex999_spearman']:.3f}  analogies {mean['analogy_accuracy']:.3f}  "
              f"({len(per_seed)} runs; spread {spread})", flush=True)
    if args.full_shape_words:
        full_shape_speed(args, report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "text8_gensim.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
