"""Mulan's multi-label sets (github.com/tsoumakas/mulan, data/multi-label/) at a pinned commit, in
the train/test split Mulan distributes. Read from a git directory with `git show COMMIT:path`, so
a bare mirror (`git clone --bare https://github.com/tsoumakas/mulan`) is enough; every blob is
checked against its expected sha256 before it is used."""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

MULAN_REPO = "tsoumakas/mulan"
MULAN_COMMIT = "43f6389095ad71984264db4387a8074b22bc7d4a"


def git_blob(git_dir: Path, path: str, expected_sha256: str) -> bytes:
    got = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{MULAN_COMMIT}:{path}"],
                         capture_output=True)
    if got.returncode:
        raise FileNotFoundError(f"{git_dir}: no {MULAN_COMMIT[:12]}:{path} ({got.stderr.decode().strip()}); "
                                f"the suite needs a clone of github.com/{MULAN_REPO} that holds that commit")
    digest = hashlib.sha256(got.stdout).hexdigest()
    if digest != expected_sha256:
        raise ValueError(f"{git_dir}: {path} has sha256 {digest}, expected {expected_sha256}")
    return got.stdout


def build_mulan(git_dir: Path, train: str, test: str, xml: str, sha: dict) -> tuple:
    """(train, test) as (X, Y) pairs from Mulan's ARFF files and label XML (paths under
    data/multi-label/, each checked against sha[path])."""
    from slide.datasets import load_arff

    with tempfile.TemporaryDirectory() as tmp:
        local = {}
        for path in (train, test, xml):
            local[path] = Path(tmp) / Path(path).name
            local[path].write_bytes(git_blob(git_dir, f"data/multi-label/{path}", sha[path]))
        parts = [load_arff(local[path], xml=local[xml]) for path in (train, test)]
    return tuple((part.X, part.Y) for part in parts)
