"""Out-of-core training on an Amazon-670K-shaped file larger than the memory it may use.

1. Writes a generated catalogue file of --points points (default 5,000,000: about 6.7 GB of XC
   text) chunk by chunk, and a 2,000-point test file.
2. Times the parser alone (text in memory) and `slide data convert` (text on disk to shards) on
   the same 500 MB prefix, and converts the whole file in a child process whose peak RSS is read.
3. Trains one epoch of `slide train --train SHARDS --stream` (the defaults for the shape) in a
   child process run under `prlimit --as` set below the file's size; reads its peak RSS and
   compares it with the network's own memory estimate.
4. Trains the same network on a set that fits (--fits points) from memory and streamed, in
   alternation, and reports the streamed/in-memory throughput ratio.

    python -m benches.streaming_amazon670k --work /tmp/stream-bench          # ~30 min
    python -m benches.streaming_amazon670k --points 300000 --fits 65536 --work /tmp/sb   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .environment import describe

RESULTS = Path(__file__).resolve().parent / "results"
SHAPE = (135_909, 670_091)
CHUNK = 200_000


def write_file(path: Path, points: int, seed: int, test: Path) -> float:
    from slide.datasets import catalogue_chunks
    from slide.datasets.synthetic import AMAZON670K_SHAPE
    from slide.datasets.xc_files import format_points, write_xc

    t0 = time.perf_counter()
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "wb") as f:
        f.write(f"{points} {SHAPE[0]} {SHAPE[1]}\n".encode())
        chunks = catalogue_chunks(points + 2000, *SHAPE, chunk=CHUNK, seed=seed,
                                  avg_labels=AMAZON670K_SHAPE["avg_labels"])
        written = 0
        for chunk in chunks:
            if written == 0:  # the test points come from the first chunk, the rest is training data
                write_xc(test, chunk.X[:2000], chunk.Y[:2000])
                chunk = type(chunk)(chunk.X[2000:], chunk.Y[2000:])
            f.write(format_points(chunk.X, chunk.Y))
            written += len(chunk)
            print(f"  written {written:,} / {points:,} points", flush=True)
    tmp.rename(path)
    return time.perf_counter() - t0


def prefix(path: Path, out: Path, nbytes: int) -> int:
    """The file's first whole lines of about nbytes, with its header's count fixed; returns points."""
    with open(path, "rb") as f:
        f.readline()
        body = f.read(nbytes)
    body = body[:body.rfind(b"\n") + 1]
    points = body.count(b"\n")
    out.write_bytes(f"{points} {SHAPE[0]} {SHAPE[1]}\n".encode() + body)
    return points


def child(code: str, *, address_limit: int | None = None, args: list[str] | None = None) -> dict:
    """Run Python code (or `python -m slide` with args) in a child, under GNU time for its peak RSS."""
    cmd = [sys.executable, "-c", code] if args is None else [sys.executable, "-m", "slide", *args]
    if address_limit is not None:
        cmd = ["prlimit", f"--as={address_limit}", *cmd]
    cmd = ["/usr/bin/time", "-f", "PEAK_RSS_KB %M", *cmd]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    peak = int(proc.stderr.rsplit("PEAK_RSS_KB", 1)[1].split()[0]) * 1024
    return {"seconds": round(seconds, 2), "peak_rss_bytes": peak, "stdout": proc.stdout}


def parse_speed(text_file: Path) -> dict:
    from slide import _core

    data = text_file.read_bytes()
    t0 = time.perf_counter()
    _core.parse_xc(data)
    seconds = time.perf_counter() - t0
    return {"bytes": len(data), "seconds": round(seconds, 3), "mb_per_s": round(len(data) / 1e6 / seconds, 1)}


def convert_speed(text_file: Path, out: Path) -> dict:
    code = (f"import time\nfrom slide.datasets import convert_xc\nt0 = time.perf_counter()\n"
            f"convert_xc({str(text_file)!r}, {str(out)!r})\nprint('SECONDS', time.perf_counter() - t0)\n")
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = child(code)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = float(r["stdout"].split("SECONDS")[-1])
    size = text_file.stat().st_size
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return {"bytes": size, "seconds": round(seconds, 2), "mb_per_s": round(size / 1e6 / seconds, 1),
            "cpu_seconds": round(cpu, 2), "peak_rss_bytes": r["peak_rss_bytes"]}


def throughput_side_by_side(shards: Path, points: int, threads: int, rounds: int) -> dict:
    """One epoch on the first `points` points, from memory and streamed, alternating."""
    from slide.datasets import ShardFolder, Stream
    from slide.datasets.shards import write_split
    from .default_network import default_network

    folder = ShardFolder.open(shards)
    subset_dir = shards.with_name(shards.name + f"-first{points}")
    rows_per_shard = folder.shards[0]["rows"]
    take = max(1, points // rows_per_shard)
    subset = ShardFolder.load(ShardFolder(folder.path, take * rows_per_shard, folder.num_features,
                                          folder.num_labels, folder.shards[:take], folder.source))
    write_split(subset_dir, subset)
    out = {"points": len(subset), "in_memory_samples_per_s": [], "streamed_samples_per_s": []}
    for _ in range(rounds):
        for kind in ("in_memory", "streamed"):
            net, cfg, _ = default_network(*SHAPE, threads=threads, seed=0)
            net.neighbours = 0
            t0 = time.perf_counter()
            if kind == "in_memory":
                history = net.fit(subset.X, subset.Y, epochs=1, batch_size=cfg["batch_size"], progress=False)
            else:
                history = net.fit(Stream(subset_dir, seed=0), epochs=1, batch_size=cfg["batch_size"], progress=False)
            rate = history[0]["samples_per_second"]
            out[f"{kind}_samples_per_s"].append(round(rate, 1))
            print(f"  {kind}: {rate:,.0f} samples/s ({time.perf_counter() - t0:.1f}s)", flush=True)
            del net
    ratios = [s / m for s, m in zip(out["streamed_samples_per_s"], out["in_memory_samples_per_s"])]
    out["streamed_over_in_memory"] = round(float(np.median(ratios)), 3)
    out["ratios"] = [round(r, 3) for r in ratios]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=5_000_000)
    ap.add_argument("--fits", type=int, default=262_144, help="points of the side-by-side throughput set")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", type=Path, required=True, help="a folder with room for the file and its shards")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--address-limit-gib", type=float, default=None,
                    help="prlimit --as for the streamed run (default: 3/4 of the file's size)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS / "streaming_amazon670k.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    train, test = args.work / f"train-{args.points}.txt", args.work / "test.txt"
    result: dict = {"points": args.points, "threads": args.threads}
    if not train.exists():
        print(f"writing {train}", flush=True)
        result["write_seconds"] = round(write_file(train, args.points, args.seed, test), 1)
    size = train.stat().st_size
    result["file_bytes"] = size

    print("parser and conversion speed on a 500 MB prefix", flush=True)
    head = args.work / "prefix.txt"
    prefix(train, head, 500_000_000)
    result["parser_prefix"] = parse_speed(head)
    result["convert_prefix"] = convert_speed(head, args.work / "prefix.shards")
    print(f"  parser {result['parser_prefix']['mb_per_s']} MB/s, convert {result['convert_prefix']['mb_per_s']} MB/s",
          flush=True)
    shards = args.work / "train.shards"
    print(f"converting the whole file into {shards}", flush=True)
    result["convert_whole"] = convert_speed(train, shards)
    print(f"  {result['convert_whole']['mb_per_s']} MB/s, peak RSS "
          f"{result['convert_whole']['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)

    limit = int(args.address_limit_gib * 2**30) if args.address_limit_gib else int(size * 0.75)
    run_dir = args.work / "run"
    print(f"one streamed epoch under prlimit --as={limit / 2**30:.2f} GiB", flush=True)
    trained = child("", address_limit=limit, args=[
        "train", "--train", str(shards), "--test", str(test), "--stream", "--epochs", "1", "--threads",
        str(args.threads), "--quiet", "--overwrite", "--out", str(run_dir), "--set", "eval_every=100000000"])
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    epoch = next(m for m in metrics if m["kind"] == "epoch")
    final = metrics[-1]
    config = json.loads((run_dir / "config.json").read_text())
    estimate_line = next((line for line in trained["stdout"].splitlines() if " GiB; run folder" in line), "")
    from slide import Network

    model_bytes = Network.load(run_dir / "model.npz").memory_bytes
    result["streamed_epoch"] = {
        "address_limit_bytes": limit, "peak_rss_bytes": trained["peak_rss_bytes"], "wall_seconds": trained["seconds"],
        "train_seconds": epoch["wall_seconds"], "samples": epoch["samples"],
        "samples_per_s": round(epoch["samples"] / epoch["wall_seconds"], 1), "model_bytes": model_bytes,
        "rss_above_model_bytes": trained["peak_rss_bytes"] - model_bytes, "network": estimate_line,
        "final_test": {k: final[k] for k in ("P@1", "P@3", "P@5") if k in final}, "batch_size": config["batch_size"]}
    print(f"  peak RSS {trained['peak_rss_bytes'] / 2**30:.2f} GiB, model {model_bytes / 2**30:.2f} GiB, "
          f"{result['streamed_epoch']['samples_per_s']:,.0f} samples/s", flush=True)

    print(f"throughput on {args.fits:,} points, in memory and streamed", flush=True)
    result["side_by_side"] = throughput_side_by_side(shards, args.fits, args.threads, args.rounds)
    result["environment"] = describe(args.threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "environment"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
