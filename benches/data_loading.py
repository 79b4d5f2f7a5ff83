"""Data benchmark: parsing an Amazon-670K-shaped Extreme Classification file (490,449 points),
cached reloads, and Text8-style sample generation against training throughput.

    python -m benches.data_loading         # ~5 minutes on 2 cores (most of it writing the test file)
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def write_fast(path: Path, X, Y) -> None:
    with open(path, "w") as f:
        f.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for i in range(X.shape[0]):
            a, b = X.indptr[i], X.indptr[i + 1]
            labels = ",".join(map(str, Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist()))
            feats = " ".join(f"{j}:{v:.5g}" for j, v in zip(X.indices[a:b].tolist(), X.data[a:b].tolist()))
            f.write(f"{labels} {feats}\n")


def best_of(fn, repeats=3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--points", type=int, default=490_449)
    p.add_argument("--corpus-words", type=int, default=17_005_207)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULTS / "data_loading.json")
    args = p.parse_args()

    import slide
    from slide import _core
    from slide.datasets import make_extreme_classification
    from slide.datasets.text8 import load_text8
    from slide.datasets.xc_files import load_xc

    from .environment import describe

    result: dict = {"benchmark": "data_loading", "environment": describe(args.threads)}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        d = make_extreme_classification(args.points, 135_909, 670_091, seed=0)
        path = tmp / "amazon_train.txt"
        t0 = time.perf_counter()
        write_fast(path, d.X, d.Y)
        write_s = time.perf_counter() - t0
        text = path.read_bytes()
        mb = len(text) / 1e6
        parse_s = best_of(lambda: _core.parse_xc(text))
        load_s = best_of(lambda: load_xc(path, cache=False), repeats=1)
        load_xc(path)  # writes the cache
        cached_s = best_of(lambda: load_xc(path))
        gz = tmp / "amazon_train.txt.gz"
        gz.write_bytes(gzip.compress(text, compresslevel=1))
        gz_s = best_of(lambda: load_xc(gz, cache=False), repeats=1)
        result["xc"] = {"points": args.points, "file_mb": mb, "nnz": int(d.X.nnz),
                        "write_seconds_python": write_s,
                        "parse_seconds_one_core": parse_s, "parse_mb_per_s": mb / parse_s,
                        "load_seconds_uncached": load_s, "load_seconds_cached": cached_s,
                        "load_seconds_gzip": gz_s}
        print(json.dumps(result["xc"], indent=1), flush=True)
        del text, d

        # A Text8-sized corpus with a Zipf vocabulary of Text8's width.
        rng = np.random.default_rng(0)
        vocab = 253_854
        ranks = np.minimum(rng.zipf(1.07, args.corpus_words), vocab) - 1
        words = np.array([f"w{i}" for i in range(vocab)])
        corpus = tmp / "text8"
        corpus.write_text(" ".join(words[ranks].tolist()))
        t0 = time.perf_counter()
        c = load_text8(corpus, cache=False)
        tokenize_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        n = sum(len(ch) for ch in c.train_chunks(1_000_000))
        gen_s = time.perf_counter() - t0
        # Training throughput on the text8 preset, measured on one chunk.
        chunk = c.samples(0, 400_000)
        from slide.datasets import registry

        info = registry.get("text8")
        net = slide.Network(c.vocab_size, c.vocab_size, hidden=tuple(info.preset["hidden"]),
                            lsh=slide.LSHConfig(**info.preset["lsh"]), learning_rate=info.preset["learning_rate"],
                            threads=args.threads, seed=0)
        h = net.fit(chunk.X, chunk.Y, epochs=1, batch_size=info.preset["batch_size"], progress=False)
        result["text8"] = {"words": int(len(c.ids)), "vocabulary": c.vocab_size, "tokenize_seconds": tokenize_s,
                           "samples_per_epoch": n, "generation_seconds": gen_s,
                           "generation_samples_per_s": n / gen_s,
                           "training_samples_per_s": h[0]["samples_per_second"],
                           "generation_over_training": (n / gen_s) / h[0]["samples_per_second"]}
        print(json.dumps(result["text8"], indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(result, indent=2) + "\n")
    tmp_out.replace(args.out)


if __name__ == "__main__":
    main()
