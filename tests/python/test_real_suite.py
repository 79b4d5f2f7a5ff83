"""The real-data suite's builders (benches/real_suite) on small inputs the tests write: Debian
metadata parsing, the splits, tf-idf from the training side only, Mulan blobs checked against their
sha256; and the README's real-suite table is exactly what the committed result file renders.
The real data itself is never needed here."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))

from benches.real_suite import debian, mulan, report  # noqa: E402
from benches.real_suite.files import read_record, sha256, write_set  # noqa: E402

PACKAGES = """Package: alpha
Source: alpha-src (1.0)
Depends: libc6 (>= 2.34), python3:any | python3-alt, libfoo1 [amd64]
Pre-Depends: dpkg (>= 1.15)
Description: alpha tool
Description-md5: aaa
Tag: role::program,
 use::editing

Package: beta
Depends: alpha
Description: beta library
Description-md5: bbb

Package: gamma
Description: gamma data
Description-md5: ccc
"""
TRANSLATIONS = """Package: alpha
Description-md5: aaa
Description-en: alpha tool
 edits text files quickly

Package: beta
Description-md5: zzz
Description-en: a stale translation that must not be used
"""


def test_stanzas_join_continuation_lines():
    (alpha, *_) = list(debian._stanzas(PACKAGES))
    assert alpha["Tag"] == "role::program,\n use::editing"
    assert alpha["Source"] == "alpha-src (1.0)"


def test_dependencies_take_names_without_versions_architectures_or_later_alternatives():
    (alpha, *_) = list(debian._stanzas(PACKAGES))
    assert debian._dependencies(alpha) == {"libc6", "python3", "libfoo1", "dpkg"}


def test_packages_labels_and_reverse_dependencies(tmp_path, monkeypatch):
    texts = {"p_Packages": PACKAGES, "t_Translation-en": TRANSLATIONS}
    monkeypatch.setattr(debian, "_index_text", lambda path: texts[Path(path).name])
    packages = debian.read_packages([str(tmp_path / "t_Translation-en"), str(tmp_path / "p_Packages")])
    assert packages["alpha"]["text"].startswith("alpha tool\n edits text")  # the long description, md5 matched
    assert packages["beta"]["text"] == "beta library"                        # stale translation ignored
    assert packages["alpha"]["source"] == "alpha-src" and packages["gamma"]["source"] == "gamma"
    assert packages["alpha"]["tags"] == ["role::program", "use::editing"]
    sets = debian.label_sets(packages)
    assert dict(sets["debian-deps"]) == {"alpha": ["dpkg", "libc6", "libfoo1", "python3"], "beta": ["alpha"]}
    assert dict(sets["debian-rdeps"]) == {"alpha": ["beta"]}                 # who depends on alpha
    assert dict(sets["debian-tags"]) == {"alpha": ["role::program", "use::editing"]}


def _packages(n: int, sources: int) -> dict:
    rng = np.random.default_rng(1)
    return {f"p{i}": {"text": f"word{i % 7} common shared", "source": f"s{rng.integers(sources)}",
                      "depends": [f"l{i % 5}", f"l{(i + 1) % 5}"], "tags": []} for i in range(n)}


def test_the_by_source_split_never_puts_one_source_on_both_sides():
    packages = _packages(2000, 300)
    points = [(p, packages[p]["depends"]) for p in packages]
    test = debian.split_rows("debian-deps-by-source", points, packages)
    sources = np.array([packages[p]["source"] for p, _ in points])
    assert not set(sources[test]) & set(sources[~test])
    assert 0.1 < test.mean() < 0.3
    random_test = debian.split_rows("debian-deps", points, packages)
    assert set(sources[random_test]) & set(sources[~random_test])  # the random split mixes them


def test_build_set_learns_the_vocabulary_from_training_rows_only():
    packages = _packages(400, 50)
    points = [(p, packages[p]["depends"]) for p in packages]
    test = debian.split_rows("debian-deps", points, packages)
    only_in_test = next(p for (p, _), t in zip(points, test) if t)
    packages[only_in_test]["text"] = "unseenword unseenword common"
    (X_train, Y_train), (X_test, Y_test), labels = debian.build_set("debian-deps", points, packages)
    assert labels == ["l0", "l1", "l2", "l3", "l4"]
    assert X_train.shape[1] == X_test.shape[1] == 9   # word0..word6, common, shared; never "unseenword"
    assert np.allclose(np.sqrt(X_train.multiply(X_train).sum(1)), 1.0, atol=1e-5)
    assert Y_train.shape[0] + Y_test.shape[0] == len(points)
    first_train = next(i for i, t in enumerate(test) if not t)
    assert [labels[j] for j in Y_train[0].indices] == points[first_train][1]


def test_a_built_set_records_the_sha256_of_its_files(tmp_path):
    packages = _packages(100, 10)
    points = [(p, packages[p]["depends"]) for p in packages]
    train, test, _ = debian.build_set("debian-deps", points, packages)
    record = write_set(tmp_path, "demo", train, test, {"what": "test"})
    assert record == read_record(tmp_path, "demo")
    assert record["sha256"]["train"] == sha256(tmp_path / "demo" / "train.txt")
    from slide.datasets import load_xc

    assert load_xc(tmp_path / "demo" / "test.txt", cache=False).Y.shape == (record["test_points"], 5)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_a_mulan_blob_is_used_only_with_its_expected_sha256(tmp_path, monkeypatch):
    repo = tmp_path / "mulan"
    (repo / "data" / "multi-label" / "tiny").mkdir(parents=True)
    (repo / "data" / "multi-label" / "tiny" / "tiny.xml").write_text("<labels/>\n")
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tiny")
    monkeypatch.setattr(mulan, "MULAN_COMMIT", _git(repo, "rev-parse", "HEAD"))
    good = hashlib.sha256(b"<labels/>\n").hexdigest()
    assert mulan.git_blob(repo / ".git", "data/multi-label/tiny/tiny.xml", good) == b"<labels/>\n"
    with pytest.raises(ValueError, match="tiny.xml has sha256"):
        mulan.git_blob(repo / ".git", "data/multi-label/tiny/tiny.xml", "0" * 64)
    with pytest.raises(FileNotFoundError, match="tsoumakas/mulan"):
        mulan.git_blob(repo / ".git", "data/multi-label/tiny/missing.arff", good)


def test_the_readme_table_is_what_the_result_file_renders():
    result = json.loads(report.RESULT.read_text())
    readme = report.README.read_text()
    block = readme[readme.index(report.BEGIN) + len(report.BEGIN):readme.index(report.END)]
    assert block.strip() == report.render_table(result).strip(), "run python -m benches.real_suite.report"


def _entry(labels: int, slide: dict, network: dict, omikuji: dict, napkinxc: dict) -> dict:
    return {"labels": labels, "methods": {"slide": slide, "slide-network": network, "omikuji": omikuji,
                                          "napkinxc": napkinxc}}


def _scores(p1: float, p5: float, seconds: float) -> dict:
    return {"P@1": p1, "P@5": p5, "train_seconds": seconds}


def test_each_set_is_judged_against_the_more_accurate_tree_method():
    met = _entry(100, _scores(0.70, 0.40, 3.0), _scores(0.69, 0.39, 3.0), _scores(0.70, 0.38, 2.0),
                 _scores(0.69, 0.40, 1.0))
    line = report.verdict("tiny", met)
    assert line.startswith("- tiny against omikuji:") and "(missed)" not in line
    assert "time 1.5x (met)" in line and "network alone" not in line  # few labels: the network is not judged
    slow = _entry(100, _scores(0.70, 0.40, 3.1), {}, _scores(0.70, 0.38, 2.0), _scores(0.69, 0.40, 1.0))
    assert "time 1.6x (missed)" in report.verdict("tiny", slow)


def test_above_8192_labels_a_run_without_the_vote_is_judged_too():
    entry = _entry(40_000, _scores(0.71, 0.40, 10.0), _scores(0.65, 0.33, 8.0), _scores(0.70, 0.37, 10.0),
                   _scores(0.60, 0.30, 5.0))
    line = report.verdict("big", entry)  # no streamed result: that target is missed, not skipped
    assert "P@1 0.710 vs 0.700 (met)" in line and "no vote (streamed) not run (missed)" in line
    entry["methods"]["slide-stream"] = _scores(0.69, 0.38, 12.0)
    line = report.verdict("big", entry)
    # the network without the re-ranker is shown beside the target, not judged
    assert line.endswith("no vote (streamed) -0.010 P@1 (met), network alone (no re-ranker or tree either) -0.050 P@1")
    entry["methods"]["slide-stream"]["P@1"] = 0.689
    assert "no vote (streamed) -0.011 P@1 (missed)" in report.verdict("big", entry)
    small = _entry(100, _scores(0.70, 0.40, 3.0), {}, _scores(0.70, 0.38, 2.0), _scores(0.69, 0.40, 1.0))
    small["methods"]["slide-stream"] = _scores(0.5, 0.3, 1.0)
    assert "streamed" not in report.verdict("tiny", small) and "network alone" not in report.verdict("tiny", small)
    failed = {"labels": 40_000, "methods": {"slide": {"error": "killed"}, "omikuji": _scores(0.7, 0.4, 1.0)}}
    assert report.verdict("big", failed) is None
    summary = report.render_verdicts({"sets": {"big": entry, "tiny": _entry(
        100, _scores(0.70, 0.40, 1.0), {}, _scores(0.60, 0.30, 1.0), _scores(0.6, 0.3, 1.0))}})
    assert "every target met on 1 of 2 sets" in summary
    entry["methods"]["slide-stream"]["P@1"] = 0.695
    summary = report.render_verdicts({"sets": {"big": entry}})
    assert "every target met on 1 of 1 sets" in summary and "a run without the vote, the streamed one" in summary


def test_rounds_keep_the_mean_accuracy_and_the_seconds_of_the_run_of_median_time():
    from benches.real_suite.__main__ import combined_run

    runs = [{**_scores(0.70, 0.40, 9.0), "PSP@1": 0.3, "peak_rss_mb": 1},
            {**_scores(0.71, 0.41, 7.0), "PSP@1": 0.1, "peak_rss_mb": 2},
            {**_scores(0.75, 0.45, 8.0), "PSP@1": 0.2, "peak_rss_mb": 3}]
    kept = combined_run(runs)
    assert (kept["train_seconds"], kept["peak_rss_mb"]) == (8.0, 3)  # the run of median time
    assert (kept["P@1"], kept["P@5"], kept["PSP@1"]) == (0.72, 0.42, 0.2)  # the means, not that run's
    assert [r["train_seconds"] for r in kept["rounds"]] == [9.0, 7.0, 8.0]  # in the order they ran
    assert [r["PSP@1"] for r in kept["rounds"]] == [0.3, 0.1, 0.2]
    two = combined_run(runs[:2])
    assert (two["train_seconds"], two["P@1"]) == (7.0, 0.705)  # an even count keeps the lower middle's time
    assert combined_run(runs[:1]) == runs[0] and "rounds" not in combined_run(runs[:1])
    assert combined_run([runs[0], {"error": "killed"}]) == {"error": "killed"}


def test_the_table_says_how_the_rounds_were_combined():
    result = json.loads(report.RESULT.read_text())
    assert "one run" in report.render_table({**result, "rounds": 1})
    combined = report.render_table({**result, "rounds": 3, "combined": report.COMBINED, "seeds": [0, 1, 2]})
    assert "3 runs of each method in alternation at seeds 0, 1, 2, P@k and PSP@k their mean" in combined
    one_seed = {k: v for k, v in result.items() if k != "seeds"}  # files from before the seeds moved per round
    one_seed_table = report.render_table({**one_seed, "rounds": 3, "combined": report.COMBINED})
    assert "in alternation at seed 0, P@k" in one_seed_table
    older = {k: v for k, v in result.items() if k != "combined"}
    assert "each method's run of median training time of 3" in report.render_table({**older, "rounds": 3})


def test_each_round_runs_every_method_at_the_next_seed(tmp_path, monkeypatch):
    from benches.real_suite import __main__ as suite

    calls = []
    monkeypatch.setattr(suite, "build", lambda *a: None)
    monkeypatch.setattr(suite, "read_record", lambda data_dir, name: {
        "labels": 10, "train_points": 1, "test_points": 1, "features": 1, "sha256": {}, "source": {}})
    monkeypatch.setattr(suite, "run_one", lambda folder, method, threads, seed: calls.append((method, seed)) or
                        {"train_seconds": 1.0, "P@1": 0.5 + seed / 10})
    out = tmp_path / "result.json"
    monkeypatch.setattr(sys, "argv", ["real_suite", "--sets", "bibtex", "--methods", "slide", "omikuji",
                                      "--rounds", "3", "--seed", "5", "--out", str(out)])
    assert suite.main() == 0
    assert calls == [("slide", 5), ("omikuji", 5), ("slide", 6), ("omikuji", 6), ("slide", 7), ("omikuji", 7)]
    written = json.loads(out.read_text())
    assert written["seeds"] == [5, 6, 7] and written["sets"]["bibtex"]["methods"]["slide"]["P@1"] == 1.1


def test_a_worker_that_fails_gives_the_last_line_of_its_stderr(tmp_path):
    from benches.real_suite.__main__ import run_one

    result = run_one(tmp_path / "no-such-set", "napkinxc", 1, 0)
    assert set(result) == {"error"} and "no-such-set" in result["error"]


def test_the_streamed_run_and_pytorch_run_only_on_sets_above_8192_labels():
    from benches.real_suite.__main__ import methods_for
    from benches.real_suite.methods import METHODS

    every = list(METHODS)
    assert methods_for(8192, every) == ["slide", "slide-network", "omikuji", "napkinxc"]
    assert set(methods_for(8193, every)) == set(every) and "slide-stream" in every
