"""Renderers for the engine's own measurements: a full epoch at Amazon-670K's shape, the LSH
defaults' ablation, hashing kernels, thread scaling, data loading, the exact int8 scan and the
neighbour search."""

from __future__ import annotations

from collections.abc import Callable

from .common import fixed, gib, integer, percent, ratio, source, table


def engine_amazon670k(result: dict, name: str = "engine_amazon670k.json") -> str:
    s, d, shape = result["sampled"], result["dense_same_wall_clock"], result["shape"]

    def p(r: dict) -> str:
        return " / ".join(f"{r['test'][f'P@{k}']:.3f}" for k in (1, 3, 5))

    rows = [
        ["training samples/s", integer(s["samples_per_second"]),
         f"{integer(d['samples_per_second'])} ({result['speedup_samples_per_second']:.0f}x fewer)"],
        ["samples trained", f"{s['train_samples']:,} ({s['train_samples'] / shape['train']:.0f} epoch, "
                            f"{s['train_seconds']:.0f} s)", f"{d['train_samples']:,} ({d['train_seconds']:.0f} s)"],
        ["active output neurons per sample",
         f"{s['active_outputs_per_sample']:.0f} ({percent(s['active_outputs_per_sample'] / shape['labels'], 3)})",
         f"{d['active_outputs_per_sample']:,.0f}"],
        ["test P@1 / P@3 / P@5 at equal wall-clock time", p(s), p(d)],
        ["peak RSS (model + data)", gib(s["peak_rss_bytes"]), gib(d["peak_rss_bytes"])],
        ["table maintenance share of training time",
         f"{percent(s['table_maintenance_share'], 0)} ({s['table_maintenance_seconds']:.1f} s)", "-"],
    ]
    extra = (f"{shape['features']:,} -> {shape['hidden']} -> {shape['labels']:,}, {shape['train']:,} training "
             f"points, {shape['test']:,} shuffled test points scored exactly, batch {result['batch_size']}, "
             f"Adam lr {result['learning_rate']:g}, one run")
    return source(name, result, extra=extra) + "\n\n" + table(
        ["", "slide sampled (per sample, the `LSHConfig()` defaults)", "slide dense (full softmax)"], rows)


def ablation_amazon670k(result: dict, name: str = "ablation_amazon670k.json") -> str:
    runs = result["runs"]
    samples = [c["samples"] for c in next(iter(runs.values()))["curve"]]
    rows = []
    for label, r in runs.items():
        curve = " / ".join(f"{c['P@1']:.3f}" for c in r["curve"])
        rows.append([label, curve, f"{r['active_per_sample']:.0f}", f"{r['rehashed_neurons'] / 1e6:.1f}M",
                     f"{r['table_maintenance_seconds']:.2f}", f"{r['curve'][-1]['train_seconds']:.1f}",
                     f"{r['sparse_inference_P@1']:.3f}", percent(r["largest_share_of_test_points_with_one_top1_label"], 1)])
    at = " / ".join(f"{n // 1000}k" for n in samples)
    extra = (f"Amazon-670K-shaped generated data, per-sample mode, {result['train']:,} training samples, "
             f"exact P@1 on {result['test']:,} test points")
    return source(name, result, extra=extra) + "\n\n" + table(
        ["configuration", f"exact P@1 after {at} samples", "active per sample", "neurons re-hashed",
         "table maintenance s", "training s", "LSH-sparse inference P@1",
         "most test points with one top-1 label"], rows)


def hashing(result: dict, name: str = "hashing.json") -> str:
    rows = []
    for r in result["results"]:
        cells = []
        for family in ("dwta", "simhash"):
            f = r[family]
            same = "" if f["same_codes_as_scalar"] else ", different buckets"
            cells.append(integer(f["vectors_per_second"]) if r["level"] == "scalar"
                         else f"{integer(f['vectors_per_second'])} ({ratio(f['speedup_vs_scalar'])}{same})")
        rows.append([r["level"], *cells])
    fam = result["families"]["dwta"]
    extra = (f"bucket ids of {result['vectors']:,} {result['dimension']}-dimensional ReLU vectors, "
             f"K={fam['k']}, L={fam['l']}")
    same = all(r[f]["same_codes_as_scalar"] for r in result["results"] for f in ("dwta", "simhash"))
    tail = "\n\nEvery level gives the same buckets as scalar." if same else ""
    return source(name, result, extra=extra) + "\n\n" + table(
        ["level", "DWTA vectors/s", "SimHash vectors/s"], rows) + tail


def gemm_levels(result: dict, name: str = "gemm_levels.json") -> str:
    columns = list(dict.fromkeys((r["level"], r["product"]) for r in result["results"]))
    shapes = list(dict.fromkeys((r["shape"], r["m"], r["n"], r["k"]) for r in result["results"]))
    cell = {(r["shape"], r["level"], r["product"]): r for r in result["results"]}
    rows = [[f"{shape} ({m} x {n} x {k})", *(fixed(cell[(shape, lvl, prod)]["gmac_per_second"], 0)
                                               for lvl, prod in columns)] for shape, m, n, k in shapes]
    worst = max(r["max_relative_error"] for r in result["results"])
    extra = (f"one thread, the best of {result['repeats']} calls per cell, in G multiply-adds/s; "
             f"the largest error against float64 on the same inputs, {worst:.0e} of C's largest value")
    return source(name, result, threads=False, extra=extra) + "\n\n" + table(
        ["C = A B (m x n x k)", *(f"{lvl} {prod}" for lvl, prod in columns)], rows)


def thread_scaling(result: dict, name: str = "thread_scaling.json") -> str:
    by_mode: dict[str, dict[int, dict]] = {}
    for r in result["results"]:
        by_mode.setdefault(r["mode"], {})[r["threads"]] = r
    rows = []
    for mode, runs in by_mode.items():
        one, two = runs[1], runs[2]
        rows.append([mode, f"{integer(one['samples_per_second'])} samples/s",
                     f"{integer(two['samples_per_second'])} samples/s", ratio(two["speedup"]),
                     " / ".join(integer(x) for x in sorted(one["runs"])),
                     " / ".join(integer(x) for x in sorted(two["runs"]))])
    extra = (f"{result['samples']:,} timed samples after a {result['warmup']:,}-sample warm-up, batch "
             f"{result['batch_size']}, the configurations round-robin {result['repeats']} times; each figure is "
             f"the median of its runs")
    return source(name, result, threads=False, extra=extra) + "\n\n" + table(
        ["mode", "1 thread", "2 threads", "speedup", "1 thread, every run", "2 threads, every run"], rows)


def _timed_under_load(result: dict, setting: str, case: Callable[[dict], str], digits: int) -> tuple[list, list]:
    """(columns, rows) of a bench that times settings (`setting`, one column each) on cases (`case`
    names a row's) on a quiet and a busy machine: each cell its median seconds, against slide's."""
    settings = list(dict.fromkeys(r[setting] for r in result["rows"]))
    cells = {(r["load"], case(r), r[setting]): r for r in result["rows"]}
    rows = [[load, name, *(f"{cells[(load, name, x)]['train_seconds']:.{digits}f} s "
                           f"({ratio(cells[(load, name, x)]['vs_slide'])})" for x in settings)]
            for load, name in dict.fromkeys((r["load"], case(r)) for r in result["rows"])]
    return settings, rows


def openmp_wait(result: dict, name: str = "openmp_wait.json") -> str:
    policies, rows = _timed_under_load(
        result, "policy", lambda r: f"{r['set']}, {r['epochs']} epoch{'s' if r['epochs'] != 1 else ''}", 2)
    extra = (f"training seconds of the shape's default network, each in a fresh process; quiet: the median of "
             f"{result['repeats']} round-robin runs, busy: one run beside {result['busy_processes']} spinning "
             f"processes; in brackets, against slide's setting")
    return source(name, result, extra=extra) + "\n\n" + table(["load", "set", *policies], rows)


def step_team(result: dict, name: str = "step_team.json") -> str:
    floors, rows = _timed_under_load(result, "floor", lambda r: f"{r['set']} ({r['step_work'] / 1e6:.2f}M)", 3)
    extra = (f"training seconds of the shape's default network, each in a fresh process; in brackets after each "
             f"set, the multiply-adds the engine counts for a batch of its first points; quiet: the median of "
             f"{result['repeats']} round-robin runs, busy: the median of {result['busy_repeats']} beside "
             f"{result['busy_processes']} spinning processes; in brackets, against slide's floor")
    return source(name, result, extra=extra) + "\n\n" + table(["load", "set", *floors], rows)


def data_loading(result: dict, name: str = "data_loading.json") -> str:
    xc, t8 = result["xc"], result["text8"]
    rows = [
        [f"parse a {xc['points']:,}-point Amazon-670K-shaped file ({xc['file_mb']:.0f} MB, "
         f"{xc['nnz'] / 1e6:.1f}M nonzeros), one core", f"{xc['parse_seconds_one_core']:.2f} s ({xc['parse_mb_per_s']:.0f} MB/s)"],
        ["`load_xc` uncached (read + parse + CSR) / from the cache / from `.gz`",
         f"{xc['load_seconds_uncached']:.1f} s / {xc['load_seconds_cached']:.2f} s / {xc['load_seconds_gzip']:.1f} s"],
        [f"Text8-sized corpus ({t8['words'] / 1e6:.1f}M words): tokenise + vocabulary", f"{t8['tokenize_seconds']:.1f} s"],
        ["Text8 sample generation vs training on the text8 softmax preset",
         f"{t8['generation_samples_per_s'] / 1e6:.1f}M vs {t8['training_samples_per_s'] / 1e3:.1f}k samples/s "
         f"({t8['generation_over_training']:.0f}x)"],
    ]
    return source(name, result) + "\n\n" + table(["", "measured"], rows)


def _rounds(result: dict, name: str, extra: str, headers: list, cells) -> str:
    """A benchmark that alternates two ways of doing one thing: one table row per round."""
    rows = [[i + 1, *cells(r)] for i, r in enumerate(result["rounds"])]
    return source(name, result, extra=extra) + "\n\n" + table(["round", *headers], rows)


def exact_scan(result: dict, name: str = "exact_scan.json") -> str:
    extra = (f"{result['outputs']:,} outputs, hidden {', '.join(str(h) for h in result['hidden'])}, "
             f"top-{result['k']} of {result['test_points']:,} points; median speed-up {ratio(result['speedup_median'])}")
    return _rounds(result, name, extra, ["fp32 GEMM ms/point", "int8 scan ms/point", "speed-up", "same labels",
                                         "different labels (not ties)"],
                   lambda r: [f"{r['fp32_ms_per_point']:.3f}", f"{r['int8_ms_per_point']:.3f}", ratio(r["speedup"]),
                              percent(r["same_labels"], 1), r["different_labels_not_ties"]])


def sparse_adam(result: dict, name: str = "sparse_adam.json") -> str:
    extra = (f"an EmbeddingBag of {result['rows']:,} x {result['width']} rows, batches of {result['batch_size']} "
             f"samples of about {result['features_per_sample']:g} features, {result['batches_per_round']} steps "
             f"per round at lr {result['lr']:g}; median speed-up {ratio(result['speedup_median'])}")
    return _rounds(result, name, extra, ["torch.optim.SparseAdam ms/step", "slide.torch.SparseAdam ms/step",
                                         "speed-up", "largest weight difference so far"],
                   lambda r: [f"{r['torch_ms_per_step']:.2f}", f"{r['slide_ms_per_step']:.2f}", ratio(r["speedup"]),
                              f"{r['largest_weight_difference']:.1e}"])


def neighbour_search(result: dict, name: str = "neighbour_search.json") -> str:
    extra = (f"{result['queries']:,} queries, k={result['k']}, over {result['points']:,} Amazon-670K-shaped "
             f"training points (about {result['postings_per_query']:,} postings per query); median speed-up "
             f"{ratio(result['median_speedup'])}")
    return _rounds(result, name, extra, ["engine s", "scipy sparse products + top-k s", "speed-up",
                                         "largest vote difference"],
                   lambda r: [f"{r['engine_seconds']:.3f}", f"{r['scipy_seconds']:.3f}", ratio(r["speedup"]),
                              f"{r['max_vote_difference']:g}"])


def hidden_neighbour_search(result: dict, name: str = "hidden_neighbour_search.json") -> str:
    extra = (f"{result['queries']:,} queries against {result['points']:,} points at hidden {result['hidden']}, "
             f"k={result['k']}, {result['labels']:,} labels; votes of {result['checked_queries']} queries against a "
             f"brute force: largest difference {result['max_vote_difference']:g}")
    rows = [[i + 1, f"{s:.3f}"] for i, s in enumerate(result["rounds_seconds"])]
    summary = table(["median s", "GFLOP/s (fp32)", f"scaled to {result['test_points']:,} test points"],
                    [[f"{result['median_seconds']:.3f}", f"{result['gflops']:g}", f"{result['test_set_seconds']:g} s"]])
    return source(name, result, extra=extra) + "\n\n" + table(["round", "s"], rows) + "\n\n" + summary


def small_pages(result: dict, name: str = "small_pages.json") -> str:
    extra = (f"a new {result['array_bytes'] / 1e6:.0f} MB array (the output layer's weights) and a whole "
             f"{result['snapshot_bytes'] / 1e6:.0f} MB snapshot of the parameters, made and filled beside a network "
             f"of debian-rdeps' shape; medians {ratio(result['array_ratio_default_to_small'])} and "
             f"{ratio(result['snapshot_ratio_default_to_small'])} slower on huge pages")
    return _rounds(result, name, extra, ["array, huge pages", "array, small pages", "snapshot, huge pages",
                                         "snapshot, small pages"],
                   lambda r: [f"{r['array_default_pages']:.3f} s", f"{r['array_small_pages']:.3f} s",
                              f"{r['snapshot_default_pages']:.3f} s", f"{r['snapshot_small_pages']:.3f} s"])


def output_accumulators(result: dict, name: str = "output_accumulators.json") -> str:
    shape = result["shape"]
    rows = [[str(r["hidden"]), gib(r["memory_bytes_training"]), gib(r["memory_bytes_with_accumulators"]),
             f"{gib(r['accumulator_bytes'])} ({percent(r['saved_share'], 0)})", gib(r["peak_rss_bytes_training"]),
             f"{r['construct_seconds']:.1f} s"] for r in result["runs"]]
    extra = (f"{shape['features']:,} -> hidden -> {shape['labels']:,}, mode batch, matmul bf16, one epoch of "
             f"{result['runs'][0]['points']:,} generated points, each width in its own process")
    return source(name, result, extra=extra) + "\n\n" + table(
        ["hidden", "network while training", "with the accumulators", "saved", "peak RSS while training",
         "construction"], rows)


def gemm_before_after(before: dict, after: dict, names: tuple[str, str]) -> str:
    """One host's fp32 GEMM at two builds of the package, run in alternation by one checkout's
    benches (each file names the package's commit)."""
    def speeds(result: dict) -> dict:
        return {(r["shape"], r["m"], r["n"], r["k"]): r["gmac_per_second"] for r in result["results"]
                if r["product"] == "fp32" and r["level"] == after["environment"]["simd_level"]}
    old, new = speeds(before), speeds(after)
    rows = [[f"{shape} ({m} x {n} x {k})", fixed(old[shape, m, n, k], 1), fixed(speed, 1),
             ratio(speed / old[shape, m, n, k])] for (shape, m, n, k), speed in new.items()]
    cpu = after["environment"].get("cpu", {}).get("model", "this CPU")
    extra = (f"{cpu}; one thread, the best of {after['repeats']} calls per cell, in G multiply-adds/s; the package "
             f"at {before['package_commit']} (`{names[0]}`) and at {after['package_commit']}, run in alternation")
    return source(names[1], after, threads=False, extra=extra) + "\n\n" + table(
        ["C = A B (m x n x k)", f"{before['package_commit']} fp32", f"{after['package_commit']} fp32", "speed-up"],
        rows)
