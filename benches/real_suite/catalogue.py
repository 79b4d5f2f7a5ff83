"""The suite's sets: name -> how to build it. Mulan's sets come with their own train/test split;
the Debian sets are built by debian.py. Sizes in the real-suite table (README, docs/benchmarks) come from build.json."""

from __future__ import annotations

from pathlib import Path

from . import debian
from .files import is_built, write_set
from .mulan import MULAN_COMMIT, MULAN_REPO, build_mulan

# train ARFF, test ARFF, label XML, under data/multi-label/ at MULAN_COMMIT
MULAN_SETS = {
    "bibtex": ("bibtex/bibtex-train.arff", "bibtex/bibtex-test.arff", "bibtex/bibtex.xml"),
    "delicious": ("delicious/delicious-train.arff", "delicious/delicious-test.arff", "delicious/delicious.xml"),
    "corel5k": ("corel5k/Corel5k-train-sparse.arff", "corel5k/Corel5k-test-sparse.arff", "corel5k/Corel5k.xml"),
    "enron": ("enron/enron-train.arff", "enron/enron-test.arff", "enron/enron.xml"),
    "medical": ("medical/medical-train.arff", "medical/medical-test.arff", "medical/medical.xml"),
    "tmc2007-500": ("tmc2007/tmc2007-500-train.arff", "tmc2007/tmc2007-500-test.arff", "tmc2007/tmc2007-500.xml"),
}
MULAN_SHA256 = {
    "bibtex/bibtex-train.arff": "8dcc9de6e0b2cebaec8c1f4fac78431adeeb73cfd3ab879b530a66d366e59174",
    "bibtex/bibtex-test.arff": "9b03329cde64d3f994bdf7fbbac3f3b10fe185c311cb9ae725475f59c7f3f922",
    "bibtex/bibtex.xml": "08fe20013c1e75dcf1888c185f5187c95e76495b8518ce289b4d3afce38d1232",
    "delicious/delicious-train.arff": "030186cdb542ebdd32052fcdbb1ebe30115b3a22518c1b4b198c45eb827aebe1",
    "delicious/delicious-test.arff": "2dfb01723a819914b0ca83361177ed413ce3f2169851d9f228d4692915d63944",
    "delicious/delicious.xml": "4e0c0f93c7d86a39b9fca4aaefaa00e9428f2c80277732dfbf03ca48e2c14da2",
    "corel5k/Corel5k-train-sparse.arff": "19eb253c447144bea74ffa86b4731a56022addae2ba7d0aab72ad07fdc02e9b3",
    "corel5k/Corel5k-test-sparse.arff": "e8f8e9cd052c43ba7bdfdf99d242f461fc8c2a03163466d921e576887b51d8a7",
    "corel5k/Corel5k.xml": "54ef6a6ccb7ca9b77524052b34b306d5d501661a5609b9d1cc7085b2b597679d",
    "enron/enron-train.arff": "2988cefc1cdf7a8004a20ef84615cc8fa1b5d7434c16687283b41454e2d9d194",
    "enron/enron-test.arff": "2f3aad54a8f54caaab4ab01246fe9dd385ba944a2633028f52747b57eac5474e",
    "enron/enron.xml": "ed40c92d7f613eed51714912cab10dddc4ce456262137d8fef230d44c7f4457b",
    "medical/medical-train.arff": "c764f45756ab1c553b8b4eaaf5605a5610a43bbbcf37492d0f1a12bf9c9e2244",
    "medical/medical-test.arff": "6be472e75a6c0b0916187f343a398011b1b26f8f0ddc682c575312ad3532f6c4",
    "medical/medical.xml": "51fa9d5c09e48caff3f0a0c75db1c9aa85944f8e35451f3ad8bd56fc422286ce",
    "tmc2007/tmc2007-500-train.arff": "edfe7b7615c6f80e54c92a214437610d1ae36560c5cc6c4253b51c434d258273",
    "tmc2007/tmc2007-500-test.arff": "b24f9c3f1eba77c9da0bbaff093ba41d331b7351be0167a8e1e3852c62e25e38",
    "tmc2007/tmc2007-500.xml": "cb6a67c8ae72fd9b47d89f77aa5b7f6cafb4ba9c20b1124c65a95a3f2caec38d",
}
DEBIAN_SETS = ("debian-tags", "debian-deps", "debian-deps-by-source", "debian-rdeps")
SETS = (*MULAN_SETS, *DEBIAN_SETS)
# Above this many labels a set is in SLIDE's regime: the sampled-softmax baseline runs there too.
MANY_LABELS = 8192


def build(data_dir: Path, names: list, mulan_git_dir: "Path | None", log=print) -> None:
    """Build each named set that data_dir does not hold yet."""
    for name in names:
        if name in MULAN_SETS and not is_built(data_dir, name):
            if mulan_git_dir is None:
                raise FileNotFoundError(f"{name} needs Mulan's repository: pass --mulan GIT_DIR (a clone of "
                                        f"https://github.com/{MULAN_REPO} holding commit {MULAN_COMMIT[:12]})")
            files = {path: MULAN_SHA256[path] for path in MULAN_SETS[name]}
            parts = build_mulan(mulan_git_dir, *MULAN_SETS[name], files)
            write_set(data_dir, name, *parts, {"repository": MULAN_REPO, "commit": MULAN_COMMIT,
                                               "files": {f"data/multi-label/{k}": v for k, v in files.items()}})
            log(f"built {name}")
    wanted = [n for n in names if n in DEBIAN_SETS and not is_built(data_dir, n)]
    if wanted:
        source = debian.fetch_indexes(data_dir / "apt")
        packages = debian.read_packages(source.pop("paths"))
        points = debian.label_sets(packages)
        for name in wanted:
            train, test, labels = debian.build_set(name, points[name], packages)
            write_set(data_dir, name, train, test, {**source, "set": name, "doc": "benches/real_suite/debian.py"})
            (data_dir / name / "labels.txt").write_text("\n".join(labels) + "\n")
            log(f"built {name}")
