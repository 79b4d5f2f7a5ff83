"""Sets with many labels from the Debian archive's package metadata, fetched through apt into a
private folder (no root, the system's apt state untouched): every binary package of trixie
(main, contrib, non-free; amd64 and all), its short and long description as text.

- debian-deps:           description -> the packages it depends on (Depends, Pre-Depends; the first
                         of alternatives), random 80/20 split.
- debian-deps-by-source: the same points split so that no source package is on both sides (newer
                         packages of a source are not seen while training).
- debian-rdeps:          description of a package that others depend on -> the packages that depend on
                         it (reverse dependencies), random 80/20 split: more than 60,000 labels.
- debian-tags:           description -> its debtags (Tag field), random 80/20 split.

Features: tf-idf of the words (lowercase, min document frequency 2, sublinear tf, rows L2-normalised),
the vocabulary and idf from the training split only. The label space is every label of the set.
The archive moves with point releases: build.json records the InRelease date and the sha256 of
every index read, and each result records the built files' sha256."""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp

MIRROR = "http://deb.debian.org/debian"
SUITE = "trixie"
COMPONENTS = ("main", "contrib", "non-free")
TEST_SHARE = 0.2
SEED = 0
_TOKEN = r"(?u)\b[a-z0-9][a-z0-9+]*\b"
_NAME = re.compile(r"[\s(\[<].*")


def fetch_indexes(apt_dir: Path) -> dict:
    """apt-get update into apt_dir (Packages + Translation-en); what was read, with sha256s."""
    lists, cache = apt_dir / "lists", apt_dir / "cache"
    for d in (lists / "partial", cache / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    sources = apt_dir / "sources.list"
    sources.write_text(f"deb {MIRROR} {SUITE} {' '.join(COMPONENTS)}\n")
    subprocess.run(["apt-get", "-q", "-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Etc::SourceList={sources}",
                    "-o", "Dir::Etc::SourceParts=/dev/null", "-o", f"Dir::Cache={cache}",
                    "-o", "Acquire::Languages=en", "-o", "APT::Architectures=amd64", "-o", "Debug::NoLocking=1",
                    "update"], check=True, stdout=subprocess.DEVNULL)
    indexes = sorted(p for p in lists.iterdir() if "_Packages" in p.name or "_Translation-en" in p.name)
    release = next(lists.glob(f"*_dists_{SUITE}_InRelease")).read_text(errors="replace")
    date = re.search(r"^Date: (.*)$", release, re.M)
    return {"mirror": MIRROR, "suite": SUITE, "components": list(COMPONENTS),
            "release_date": date.group(1) if date else None,
            "indexes": {p.name: hashlib.sha256(_index_text(p).encode()).hexdigest() for p in indexes},
            "paths": [str(p) for p in indexes]}


def _index_text(path: Path) -> str:
    """An index as apt stored it (lz4, gz, xz or plain), decompressed by apt's own helper."""
    return subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", str(path)], capture_output=True, text=True,
                          check=True).stdout


def _stanzas(text: str):
    for block in text.split("\n\n"):
        fields, key = {}, None
        for line in block.split("\n"):
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line
            elif line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields:
            yield fields


def read_packages(paths: list) -> dict:
    """{package: {"text", "source", "depends", "tags"}} for every binary package with a description."""
    packages, long_text = {}, {}
    for path in paths:
        if "_Translation-en" in path:
            for f in _stanzas(_index_text(Path(path))):
                long_text[(f["Package"], f.get("Description-md5"))] = f.get("Description-en", "")
    for path in paths:
        if "_Packages" in path:
            for f in _stanzas(_index_text(Path(path))):
                text = long_text.get((f["Package"], f.get("Description-md5"))) or f.get("Description", "")
                packages[f["Package"]] = {
                    "text": text, "source": f.get("Source", f["Package"]).split()[0],
                    "depends": sorted(_dependencies(f)),
                    "tags": sorted({t.strip() for t in f.get("Tag", "").replace("\n", " ").split(",") if t.strip()})}
    return packages


def _dependencies(fields: dict) -> set:
    names = set()
    for field in ("Depends", "Pre-Depends"):
        for alternatives in fields.get(field, "").replace("\n", " ").split(","):
            name = _NAME.sub("", alternatives.split("|")[0].strip()).split(":")[0]
            if name:
                names.add(name)
    return names


def label_sets(packages: dict) -> dict:
    """{set name: (point names, label lists)} for the sets of this module."""
    names = sorted(packages)
    deps = [(n, packages[n]["depends"]) for n in names if packages[n]["depends"]]
    dependents = defaultdict(list)
    for n in names:
        for d in packages[n]["depends"]:
            dependents[d].append(n)
    rdeps = [(n, dependents[n]) for n in names if dependents.get(n)]
    tags = [(n, packages[n]["tags"]) for n in names if packages[n]["tags"]]
    return {"debian-deps": deps, "debian-deps-by-source": deps, "debian-rdeps": rdeps, "debian-tags": tags}


def split_rows(name: str, points: list, packages: dict) -> np.ndarray:
    """A boolean mask of test rows: random, or whole source packages for the -by-source set."""
    rng = np.random.default_rng(SEED)
    if not name.endswith("by-source"):
        return rng.random(len(points)) < TEST_SHARE
    sources = np.array([packages[p]["source"] for p, _ in points])
    unique = np.unique(sources)
    test_sources = set(unique[rng.random(len(unique)) < TEST_SHARE])
    return np.array([s in test_sources for s in sources])


def build_set(name: str, points: list, packages: dict) -> tuple:
    """((X_train, Y_train), (X_test, Y_test), label names) for one set's points."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    test = split_rows(name, points, packages)
    texts = np.array([packages[p]["text"] for p, _ in points], dtype=object)
    vectorizer = TfidfVectorizer(token_pattern=_TOKEN, min_df=2, sublinear_tf=True, dtype=np.float32)
    X_train = vectorizer.fit_transform(texts[~test])
    X_test = vectorizer.transform(texts[test])
    label_names = sorted({label for _, labels in points for label in labels})
    ids = {label: i for i, label in enumerate(label_names)}
    rows = [[ids[label] for label in labels] for _, labels in points]
    indptr = np.cumsum([0] + [len(r) for r in rows])
    Y = sp.csr_matrix((np.ones(indptr[-1], np.float32), np.concatenate(rows).astype(np.int64), indptr),
                      shape=(len(rows), len(label_names)))
    Y.sort_indices()
    return (X_train, Y[np.flatnonzero(~test)]), (X_test, Y[np.flatnonzero(test)]), label_names
