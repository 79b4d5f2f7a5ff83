"""Renderers for accuracy on real and realistic data: the real-data suite (its own report module),
the real Bibtex/Delicious splits, the nearest neighbours' vote, the shortlist re-ranker and its
solver, and Text8 word vectors."""

from __future__ import annotations

from ..real_suite import report
from .common import fixed, integer, ratio, source, table

XC_SYSTEMS = {"slide": "slide", "omikuji": "omikuji", "napkinxc": "napkinXC PLT"}
METRICS = ("P@1", "P@3", "P@5", "PSP@1", "PSP@3", "PSP@5")


def real_suite(result: dict, name: str = "real_suite.json") -> str:
    """The real-data suite's table: benches.real_suite.report renders it (the README's headline)."""
    return report.render_table(result, name)


def xc_real(result: dict, name: str = "xc_real.json") -> str:
    rows = []
    for dataset, entry in result["results"].items():
        for i, (system, r) in enumerate(entry["systems"].items()):
            first = f"{dataset.capitalize()} ({entry['labels']:,} labels)" if i == 0 else ""
            rows.append([first, XC_SYSTEMS.get(system, system), fixed(r["train_seconds"], 1),
                         *(f"{r[m]:.4f}" for m in METRICS)])
    return source(name, result, extra="whole test splits, PSP@k with A=0.55, B=1.5, one run") + "\n\n" + table(
        ["dataset", "system", "train s", *METRICS], rows)


def xc_real_published(result: dict, name: str = "xc_real.json") -> str:
    rows = []
    for dataset, methods in result["published"].items():
        for i, (method, scores) in enumerate(methods.items()):
            rows.append([dataset.capitalize() if i == 0 else "", method, *(f"{s:.4f}" for s in scores)])
    return (f"Published results, as recorded in `benches/results/{name}`:\n\n"
            + table(["dataset", "method", "P@1", "P@3", "P@5"], rows))


NEIGHBOUR_SYSTEMS = ("network alone", "vote alone", "fused", "omikuji")


def neighbours(result: dict, name: str = "neighbours.json") -> str:
    rows = []
    for dataset, entry in result["results"].items():
        for i, system in enumerate(s for s in NEIGHBOUR_SYSTEMS if s in entry["systems"]):
            r = entry["systems"][system]
            label = {"network alone": "slide, network alone", "vote alone": "slide, vote alone",
                     "fused": f"**slide, fused (weight {r.get('neighbour_weight', 0):g})**"}.get(system, system)
            first = (f"{dataset} ({entry['train']:,} / {entry['test']:,}, {entry['labels']:,} labels)"
                     if i == 0 else "")
            train = "none" if system == "vote alone" else fixed(r["train_seconds"], 1)
            rows.append([first, label, train, fixed(r["predict_seconds"], 1), *(f"{r[m]:.4f}" for m in METRICS)])
    extra = "whole test splits; PSP@k with each set's propensity model; slide's training time includes its per-epoch validation"
    return source(name, result, extra=extra) + "\n\n" + table(
        ["data (train / test, labels)", "system", "train s", "predict s", *METRICS], rows)


TEXT8_SYSTEMS = {
    "slide skip-gram (text8 preset)": "slide's text8 preset: skip-gram, rate 0.05 (`slide train --dataset text8`)",
    "gensim skip-gram (defaults)": "gensim Word2Vec skip-gram, its defaults (rate 0.025)",
    "gensim skip-gram, alpha=0.05 (slide's rate)": "gensim Word2Vec skip-gram at slide's rate 0.05",
    "slide softmax, LSH per sample (SLIDE)": "slide, SLIDE's softmax objective, LSH per sample",
    "slide softmax, batch-shared LSH": "slide, softmax objective, batch-shared LSH",
    "slide softmax, dense": "slide, softmax objective, dense",
}


def text8_gensim(result: dict, name: str = "text8_gensim.json") -> str:
    results, full = result["results"], result["full_shape"]["results"]
    order = [k for k in TEXT8_SYSTEMS if k in results] + [k for k in results if k not in TEXT8_SYSTEMS]
    gensim = results["gensim skip-gram (defaults)"]["mean"]["words_per_second"]
    gensim_full = full.get("gensim skip-gram (defaults)", {}).get("words_per_second")
    rows = []
    for key in order:
        m = results[key]["mean"]
        f = full.get(key)
        full_cell = "" if f is None else (integer(f["words_per_second"]) + (
            f" ({ratio(f['words_per_second'] / gensim_full)})" if gensim_full else ""))
        rows.append([TEXT8_SYSTEMS.get(key, key), results[key]["seeds"],
                     f"{integer(m['words_per_second'])} ({ratio(m['words_per_second'] / gensim)})",
                     f"{m['wordsim353_spearman']:.3f}", f"{m['simlex999_spearman']:.3f}",
                     f"{m['analogy_accuracy']:.3f}", full_cell])
    c, corpus, shape = result["config"], result["corpus"], result["full_shape"]
    vocab = next(iter(results.values()))["vocabulary"]
    extra = (f"a {corpus['words']:,}-word text8 prefix, dimension {c['dim']}, window {c['window']}, min_count "
             f"{c['min_count']} (vocabulary {vocab:,}), {c['epochs']} epochs; the full-shape column: one epoch of "
             f"{shape['generated_words']:,} generated words over a {shape['vocabulary']:,}-word vocabulary; "
             f"ratios against gensim's defaults")
    return source(name, result, extra=extra) + "\n\n" + table(
        ["system", "seeds", "words/s", "wordsim353", "SimLex-999", "analogies", "words/s, full text8 shape"], rows)


def reranker(result: dict, name: str = "reranker.json") -> str:
    """The Adagrad re-ranker's variants on one real set, under the network alone they re-rank."""
    alone = result["network_alone"]
    rows = [["network alone", "-", fixed(result["network_seconds"], 1), "-",
             *(f"{alone[m]:.4f}" for m in ("P@1", "P@3", "P@5"))]]
    for i, v in enumerate(result["variants"]):
        what = f"shortlist {v['shortlist']}, {v['epochs']} epochs, 2^{v['bits']} slots"
        rows.append([f"**{what}** (streams' and MPI's default)" if i == 0 else what, f"{v['rerank_weight']:g}",
                     fixed(v["shortlist_seconds"], 1), fixed(v["fit_seconds"], 1),
                     *(f"{v[m]:.4f}" for m in ("P@1", "P@3", "P@5"))])
    extra = (f"{result['set']}: {result['train']:,} training points ({result['validation']:,} more held out "
             f"to pick the epoch and the weight), {result['test']:,} test points, {result['labels']:,} labels; one run")
    return source(name, result, extra=extra) + "\n\n" + table(
        ["network + re-ranker", "weight", "shortlist s", "re-ranker s", "P@1", "P@3", "P@5"], rows)


def reranker_solver(result: dict, name: str = "reranker_solver.json") -> str:
    """Per set: the network alone, then each solver's per-label classifiers fused with it."""
    rows = []
    for set_name, entry in result["sets"].items():
        alone = entry["network_alone"]
        first = f"{set_name} ({entry['labels']:,} labels, {entry['validation']:,} points held out)"
        rows.append([first, "network alone", "-", fixed(entry["network_seconds"], 1),
                     *(f"{alone[m]:.4f}" for m in ("P@1", "P@3", "P@5"))])
        for s in entry["solvers"]:
            rows.append(["", f"+ {s['solver']}", f"{s['weight']:g}", fixed(s["fit_seconds"], 1),
                         *(f"{s[m]:.4f}" for m in ("P@1", "P@3", "P@5"))])
    extra = (f"the network's {result['shortlist']} best labels re-ranked, no vote; the epoch and the weights picked "
             f"on the points held out from training; one run")
    return source(name, result, extra=extra) + "\n\n" + table(
        ["set", "model", "weight", "training s", "P@1", "P@3", "P@5"], rows)


def reranker_scale(result: dict, name: str = "reranker_scale.json") -> str:
    """Each stage of the re-ranker's training at Amazon-670K's shape: seconds and resident memory."""
    shape, scores = result["shape"], result["test_scores"]
    alone, fused = scores["rerank weight 0"], scores["rerank weight 1"]
    extra = (f"{_catalogue(shape)}; the network trained for one pass over "
             f"{result['network']['samples_seen']:,} points; {result['label_point_pairs']:,} (label, point) pairs "
             f"from lists {result['training_list_width']} wide; test P@1 / P@5 {alone['P@1']:.4f} / "
             f"{alone['P@5']:.4f} for the network alone and {fused['P@1']:.4f} / {fused['P@5']:.4f} with the "
             f"re-ranker at weight 1; one run")
    return source(name, result, extra=extra) + "\n\n" + _stages(result["stages"])


def _catalogue(shape: dict) -> str:
    return (f"catalogue data, {shape['train']:,} training and {shape['test']:,} test points, {shape['features']:,} "
            f"features, {shape['labels']:,} labels")


def _stages(stages: dict) -> str:
    """A scale benchmark's stages (benches.reranker_scale.PeakMemory): seconds and resident memory."""
    rows = [[stage, fixed(s["seconds"], 1), f"{s['rss_before_gib']:.2f} GiB", f"{s['peak_rss_gib']:.2f} GiB",
             f"+{s['lift_gib']:.2f} GiB"] for stage, s in stages.items()]
    return table(["stage", "seconds", "RSS at its start", "peak RSS", "lift"], rows)


def label_tree_scale(result: dict, name: str = "label_tree_scale.json") -> str:
    """Each stage of the label tree's training at Amazon-670K's shape: seconds and resident memory."""
    shape, scores = result["shape"], result["tree_alone_test_scores"]
    extra = "; ".join([_catalogue(shape), f"leaves of {result['leaf_size']} labels, {result['nodes']:,} nodes",
                       f"{result['classifier_point_pairs']:,} (classifier, point) pairs",
                       f"{result['weights_kept']:,} weights kept ({result['weights_mib']:,} MiB)",
                       f"the tree's training {result['fit_seconds']:,.1f} s",
                       f"the tree alone's test P@1 / P@5 {scores['P@1']:.4f} / {scores['P@5']:.4f}", "one run"])
    return source(name, result, extra=extra) + "\n\n" + _stages(result["stages"])


def mpi_reranker(result: dict, name: str = "mpi_reranker.json") -> str:
    rows = [[r["run"], f"{r['P@1']:.3f}", f"{r['P@3']:.3f}", f"{r['P@5']:.3f}", f"{r['wall_seconds']:.1f} s",
             f"{r['fusion_seconds']:.1f} s"] for r in result["rows"]]
    extra = f"{result['set']}, each command timed whole (loading, training, re-ranker, final evaluation), one run each"
    return source(name, result, threads=False, extra=extra) + "\n\n" + table(
        ["run", "P@1", "P@3", "P@5", "wall time", "of it after the last epoch (vote, re-ranker, weights)"], rows)


def real_suite_host(*runs: dict, names: tuple[str, ...]) -> str:
    """The real suite's large sets on one more host, one column per run (each from a clean
    checkout, one round; the last run names the sets): a method's training seconds against the
    faster tree method's in the same run, and its accuracy."""
    def best_tree(methods: dict) -> float:
        return min(methods[m]["train_seconds"] for m in report.TREES if m in methods)

    def cell(methods: dict, method: str) -> str:
        r = methods.get(method)
        return (f"{fixed(r['train_seconds'], 1)} s ({ratio(r['train_seconds'] / best_tree(methods))}), "
                f"{r['P@1']:.4f} / {r['P@5']:.4f}") if r else ""

    last = runs[-1]
    rows = []
    for set_name, entry in last["sets"].items():
        for i, method in enumerate(entry["methods"]):
            rows.append([set_name if i == 0 else "", method,
                         *(cell(run["sets"].get(set_name, {}).get("methods", {}), method) for run in runs)])
    cpu = last["environment"].get("cpu", {}).get("model", "this CPU")
    earlier = ", ".join(f"`{name}` at {run['environment']['commit'][:10]}" for name, run in zip(names, runs[:-1]))
    extra = (f"{cpu}; training seconds (against the faster tree method's in the same run), P@1 / P@5; each run one "
             f"round at seed {last['seed']}" + (f"; the earlier runs {earlier}" if earlier else ""))
    return source(names[-1], last, extra=extra) + "\n\n" + table(
        ["set", "method", *(f"at {run['environment']['commit'][:7]}" for run in runs)], rows)
