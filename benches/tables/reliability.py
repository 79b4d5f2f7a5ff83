"""Renderers for the reliability records: fuzzing (parsers, hostile files), the random stress run,
the sanitized test suite and the long soak."""

from __future__ import annotations

from .common import gib, integer, percent, source, table


def fuzz_parsers(result: dict, name: str = "fuzz_parsers.json") -> str:
    rows = [[f"`{r['target']}`", f"{r['seconds']:.0f}", integer(r["executions"]), integer(r["executions_per_second"]),
             r["edge_coverage"], f"{r['corpus_before']} -> {r['corpus_after']}", len(r["crashes"]),
             f"{r['peak_rss_mb']:,}"] for r in result["libfuzzer"]]
    h = result["hypothesis"]
    extra = f"{result['compiler']}, {' + '.join(result['sanitizers'])}"
    tail = (f"\n\nThe hypothesis properties of the loaders at {h['examples_per_property']:,} examples each: "
            f"{h['summary']} (exit code {h['exit_code']}).")
    return source(name, result, extra=extra) + "\n\n" + table(
        ["libFuzzer target", "seconds", "executions", "per second", "edges", "corpus", "crashes", "peak RSS MB"],
        rows) + tail


def fuzz_files(result: dict, name: str = "fuzz_files.json") -> str:
    kinds = sorted({k.split("/")[0] for k in result["by_kind"]})
    names = {"model": "model files", "run": "run folders", "shards": "shard folders", "skipgram": "skip-gram models"}
    rows = []
    for kind in kinds:
        ok, refused = result["by_kind"].get(f"{kind}/ok", 0), result["by_kind"].get(f"{kind}/refused", 0)
        rows.append([names.get(kind, kind), integer(ok + refused), integer(ok), integer(refused),
                     f"{1000 * result['mean_case_seconds'][kind]:.1f}"])
    o = result["outcomes"]
    rows.append(["**all**", integer(result["cases"]), integer(o["ok"]), integer(o["refused"]), ""])
    summary = table(["crashes", "hangs", "tracebacks", "sanitizer reports", "seconds", "peak RSS of a worker"],
                    [[result["crashes"], result["hangs"], result["tracebacks"], len(result["sanitizer_reports"]),
                      integer(result["seconds"]), f"{result['peak_rss_mb']:,.0f} MB (bound {result['max_rss_mb']:,.0f} MB)"]])
    return (source(name, result, extra=f"`{result['command']}`") + "\n\n"
            + table(["kind", "cases", "used", "refused with a message", "ms per case"], rows) + "\n\n" + summary)


def stress(result: dict, name: str = "stress.json") -> str:
    kinds = sorted({k.split("/")[0] for k in result["by_kind"]})
    rows = []
    for kind in kinds:
        ok, refused = result["by_kind"].get(f"{kind}/ok", 0), result["by_kind"].get(f"{kind}/refused", 0)
        rows.append([kind.upper(), integer(ok + refused), integer(ok), integer(refused)])
    o = result["outcomes"]
    rows.append(["**all**", integer(result["cases"]), integer(o["ok"]), integer(o["refused"])])
    summary = table(["crashes", "hangs", "tracebacks", "seconds"],
                    [[result["crashes"], result["hangs"], result["tracebacks"], f"{result['seconds']:.0f}"]])
    return (source(name, result, extra=f"`{result['command']}`") + "\n\n"
            + table(["cases", "run", "completed", "refused with a message"], rows) + "\n\n" + summary)


def sanitizers(result: dict, name: str = "sanitizers.json") -> str:
    rows = [[" + ".join(result["sanitizers"]), result["compiler"], result["summary"], len(result["sanitizer_reports"]),
             f"{result['seconds'] / 60:.1f} min (build {result['build_seconds'] / 60:.1f} min)"]]
    return source(name, result) + "\n\n" + table(
        ["sanitizers", "compiler", "pytest", "sanitizer reports", "time"], rows)


def soak_amazon670k(result: dict, name: str = "soak_amazon670k.json") -> str:
    rows = [[e["epoch"], f"{e['train_seconds']:.1f}", integer(e["samples_per_second"]), f"{e['loss']:.3f}",
             f"{e['test_P@1']:.4f}", f"{e['rss_bytes'] / 2 ** 30:.3f} GiB", f"{e['checkpoint_save_seconds']:.1f}",
             f"{e['checkpoint_load_seconds']:.1f}", "yes" if e["all_finite"] else "**no**"] for e in result["epochs"]]
    c = result["config"]
    extra = (f"{c['train']:,} training points at Amazon-670K's shape, rehash every {c['rehash_every']:,} and rebuild "
             f"every {c['rebuild_every']:,} samples, a full checkpoint saved and reloaded every epoch")
    summary = table(["resident memory growth after the first epoch", "target", "slowest / fastest epoch",
                     "peak RSS (a checkpoint reloaded beside the live model)", "NaN or inf seen"],
                    [[percent(result["rss_growth_after_first_epoch"], 2), f"< {percent(result['rss_growth_target'], 0)}",
                      f"{result['throughput_min_over_max']:.2f}", gib(result["peak_rss_bytes"]),
                      "yes" if result["nan_or_inf_seen"] else "no"]])
    return source(name, result, extra=extra) + "\n\n" + table(
        ["epoch", "train s", "samples/s", "loss", "test P@1", "RSS after the epoch", "checkpoint save s",
         "load s", "all finite"], rows) + "\n\n" + summary
