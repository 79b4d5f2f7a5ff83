"""Renderers for what a run costs around training: a full run's overhead, the generated-data
store, streaming from shards, and MPI scaling."""

from __future__ import annotations

import re

from .common import gib, integer, percent, source, table


def _seconds(pattern: str, line: str) -> float:
    match = re.search(pattern, line)
    if not match:
        raise ValueError(f"run_overhead.json: {pattern!r} not found in {line!r}")
    return float(match.group(1))


def run_overhead(result: dict, name: str = "run_overhead.json") -> str:
    wall = result["wall_seconds"]
    data = _seconds(r"\(([\d.]+)s\)\s*$", result["data_line"])
    final = _seconds(r"final evaluation and model\.npz ([\d.]+)s", result["time_line"])
    evals = int(_seconds(r"evaluation during training [\d.]+s \((\d+) run", result["time_line"]))
    parts = [
        ("training", result["train_seconds"]),
        ("data (read from `<data dir>/generated/`)", data),
        (f"evaluation during training ({evals} test evaluations within the budget, and each epoch's validation)",
         result["eval_seconds"]),
        (f"checkpoints ({result['checkpoints']} written, {result['file_bytes']['checkpoint.npz'] / 1e9:.2f} GB each)",
         result["checkpoint_seconds"]),
        (f"the vote's memory and weight, the final evaluation, `model.npz` "
         f"({result['file_bytes']['model.npz'] / 1e9:.2f} GB)", final),
    ]
    rest = wall - sum(s for _, s in parts)
    rows = [[what, f"{s:.1f}", percent(s / wall)] for what, s in parts]
    rows.append(["start-up (imports, allocating and hashing the network): the rest", f"{rest:.1f}", percent(rest / wall)])
    rows.append(["**outside training**", f"**{wall - result['train_seconds']:.1f}**",
                 f"**{percent(result['outside_training_share'])}**"])
    extra = f"`slide {result['command'].split(' slide ', 1)[-1].split(' --out')[0]}`"
    return source(name, result, extra=extra) + "\n\n" + table(["part", "seconds", f"share of {wall:.1f} s"], rows)


def generated_store(result: dict, name: str = "generated_store.json") -> str:
    s = result["seconds"]
    rows = [[f"`{result['dataset']}`", f"{result['train']:,} / {result['test']:,}", f"{result['bytes'] / 1e6:.0f} MB",
             f"{s['drawn_and_written']:.0f} s", f"{s['read']:.2f} s"]]
    return source(name, result) + "\n\n" + table(
        ["dataset", "train / test points", "on disk", "drawn and written", "read back (page cache)"], rows)


def streaming_amazon670k(result: dict, name: str = "streaming_amazon670k.json") -> str:
    e, side = result["streamed_epoch"], result["side_by_side"]
    rows = [
        [f"parser alone, one thread, text already in memory ({result['parser_prefix']['bytes'] / 1e6:.0f} MB prefix)",
         f"{result['parser_prefix']['mb_per_s']:.0f} MB/s"],
        [f"`slide data convert`, the same prefix / the whole {result['file_bytes'] / 1e9:.2f} GB file",
         f"{result['convert_prefix']['mb_per_s']:.0f} / {result['convert_whole']['mb_per_s']:.0f} MB/s "
         f"({result['convert_whole']['cpu_seconds']:.0f} CPU-seconds for the file)"],
        ["peak RSS of the conversion: prefix / whole file",
         f"{gib(result['convert_prefix']['peak_rss_bytes'])} / {gib(result['convert_whole']['peak_rss_bytes'])}"],
        [f"one epoch of `slide train --train SHARDS --stream` under `prlimit --as` {gib(e['address_limit_bytes'])}",
         f"{e['samples']:,} points at {integer(e['samples_per_s'])} samples/s, P@1 {e['final_test']['P@1']:.3f}"],
        ["its peak RSS", f"{gib(e['peak_rss_bytes'])} = the network's {gib(e['model_bytes'])} + "
                         f"{gib(e['rss_above_model_bytes'])}"],
        [f"streamed / in-memory samples/s, one epoch of {side['points']:,} points, {len(side['ratios'])} rounds",
         f"{side['streamed_over_in_memory']:.3f} ({', '.join(f'{r:.3f}' for r in side['ratios'])})"],
    ]
    extra = f"a generated Amazon-670K-shaped catalogue file of {result['points']:,} training points"
    return source(name, result, extra=extra) + "\n\n" + table(["step", "measured"], rows)


def streaming_bound(small: dict, large: dict) -> str:
    """What a streamed run holds above the network, on the two files (the bound)."""
    rows = []
    for name, r in (("streaming_amazon670k-300k.json", small), ("streaming_amazon670k.json", large)):
        e = r["streamed_epoch"]
        rows.append([f"`{name}`", f"{r['points']:,}", f"{r['file_bytes'] / 1e9:.2f} GB", gib(e["peak_rss_bytes"]),
                     gib(e["model_bytes"]), gib(e["rss_above_model_bytes"])])
    return table(["result file", "training points", "file", "peak RSS", "the network", "above the network"], rows)


def mpi_scaling(result: dict, name: str = "mpi_scaling.json") -> str:
    rows = []
    for r in result["runs"]:
        sent = sum(r["counted_ring_bytes_per_step_per_rank"]) / len(r["counted_ring_bytes_per_step_per_rank"])
        rows.append([r["ranks"], "-" if r["ranks"] == 1 else r["exchange"], f"{1000 * r['seconds_per_step']:.1f}",
                     f"{sent / 1e6:.2f}", f"{r['embedding_rows_per_step']:,.0f} / {r['embedding_union_rows_per_step']:,.0f}",
                     "-" if r["counted_over_model"] is None else f"{r['counted_over_model']:.4f}",
                     "-" if r["measured_over_counted"] is None else f"{r['measured_over_counted']:.4f}"])
    shape = " -> ".join(f"{n:,}" for n in result["shape"])
    extra = f"{shape}, batch {result['batch']}, 1 thread per rank, the ranks sharing 2 cores"
    return source(name, result, threads=False, extra=extra) + "\n\n" + table(
        ["ranks", "exchange", "ms/step", "MB sent per rank and step", "embedding rows (sum over ranks / union)",
         "counted / ring model", "measured on loopback / counted"], rows)


def mpi_predicted(result: dict, name: str = "mpi_scaling.json") -> str:
    links = list(result["predicted"])
    nodes = [p["nodes"] for p in result["predicted"][links[0]]]
    rows = []
    for i, n in enumerate(nodes):
        rows.append([n, *(integer(result["predicted"][link][i]["samples_per_second"]) for link in links)])
    return (f"The model's prediction (`benches/results/{name}`: {result['model']}), samples/s:\n\n"
            + table(["nodes", *(link.replace("_", " ") for link in links)], rows))
