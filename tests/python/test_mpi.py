"""Training over MPI ranks (slide.distributed): 1, 2 and 3 ranks on this machine, loopback, against
the single-process run of the same batches; sharded checkpoints and re-sharding; a killed rank
ending the job, and --resume. Needs Open MPI's mpirun and mpi4py (.ci/run installs both)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide import _core
from slide.datasets.xc_files import write_xc
from slide.distributed.checkpoint import reshard
from slide.distributed.top_k import merge_top_k
from slide.model_file import ModelFileError
from slide.settings import NETWORK
from slide.cli.train_mpi import environment_outside_mpi_job

JOB = Path(__file__).parent / "mpi_jobs" / "train_and_predict.py"
MPIRUN = shutil.which("mpirun")
# Checked in a child: importing mpi4py.MPI here would make this process an MPI job of its own.
HAVE_MPI4PY = subprocess.run([sys.executable, "-c", "from mpi4py import MPI"], capture_output=True).returncode == 0
needs_mpi = pytest.mark.skipif(MPIRUN is None or not HAVE_MPI4PY,
                               reason="needs mpirun and mpi4py (apt-get install openmpi-bin; pip install mpi4py)")


def mpirun(n: int, *args: str, timeout: float = 300, check: bool = True,
           cwd: "Path | None" = None) -> subprocess.CompletedProcess:
    cmd = [MPIRUN, "--oversubscribe", "-n", str(n)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    got = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                         env=environment_outside_mpi_job(), cwd=cwd)
    if check and got.returncode != 0:
        raise AssertionError(f"mpirun -n {n} failed ({got.returncode}):\n{got.stdout[-3000:]}\n{got.stderr[-3000:]}")
    return got


def job(tmp: Path, name: str, ranks: int, *args: str) -> list[dict]:
    out = tmp / name
    if ranks == 0:  # a single process, no MPI at all
        subprocess.run([sys.executable, str(JOB), str(out), *args], check=True, timeout=300)
        return [json.loads((tmp / f"{name}.0.json").read_text())]
    mpirun(ranks, sys.executable, str(JOB), str(out), "--mpi", *args)
    return [json.loads((tmp / f"{name}.{r}.json").read_text()) for r in range(ranks)]


def by_row(results: list[dict], key: str) -> np.ndarray:
    rows = sum((r["rows"] for r in results), [])
    values = np.concatenate([np.array(r[key]) for r in results])
    return values[np.argsort(rows)]


# ---------------------------------------------------------------------------- without MPI

def test_shards_cover_the_layer_once():
    from slide.distributed.shards import batch_share, shard_range

    for total, ranks in ((10, 1), (10, 3), (670_091, 4), (7, 7)):
        blocks = [shard_range(total, ranks, r) for r in range(ranks)]
        assert blocks[0][0] == 0 and sum(rows for _, rows in blocks) == total
        assert all(a[0] + a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    with pytest.raises(ValueError, match="at least one row"):
        shard_range(3, 4, 0)
    assert sum(batch_share(128, 3, r) for r in range(3)) == 128


def test_merged_top_k_is_the_whole_layers_with_ties_to_the_lower_id():
    ids = np.array([[7, 2, -1, 4, 9, 1]])
    scores = np.array([[1.0, 3.0, 0.0, 3.0, 2.0, 1.0]], np.float32)
    got_ids, got_scores = merge_top_k(ids, scores, 4)
    assert got_ids.tolist() == [[2, 4, 9, 1]] and got_scores.tolist() == [[3.0, 3.0, 2.0, 1.0]]


def test_sparse_exchange_names_are_the_settings_choices():
    assert tuple(_core.SparseExchange.__members__) == NETWORK["sparse_exchange"].choices


def test_a_rank_reads_only_its_byte_range_and_the_ranges_make_the_file(tmp_path):
    from slide.datasets.xc_files import load_xc
    from slide.distributed.xc_ranges import read_xc_share

    X = sp.random(500, 40, density=0.1, format="csr", random_state=0, dtype=np.float32)
    Y = sp.random(500, 30, density=0.1, format="csr", random_state=1, dtype=np.float32)
    Y.data[:] = 1
    write_xc(tmp_path / "t.txt", X, Y)
    whole = load_xc(tmp_path / "t.txt", cache=False)
    for ranks in (1, 2, 3, 8):
        parts = [read_xc_share(tmp_path / "t.txt", r, ranks) for r in range(ranks)]
        assert all(len(p) > 0 for p in parts)
        assert (sp.vstack([p.X for p in parts]) != whole.X).nnz == 0
        assert (sp.vstack([p.Y for p in parts]) != whole.Y).nnz == 0
    (tmp_path / "bad.txt").write_text("3 40 30\n1 0:1.0\n2 0:1.0 99:2.0\n")
    with pytest.raises(ValueError, match="bad.txt"):
        read_xc_share(tmp_path / "bad.txt", 0, 1)


def test_a_sample_mode_network_cannot_be_sharded():
    class FakeComm:  # what Network checks before any MPI call
        pass

    with pytest.raises(ValueError):
        slide.Network(30, 40, hidden=8, mode="sample", threads=1, comm=FakeComm())


# ---------------------------------------------------------------------------- under mpirun

@needs_mpi
@pytest.mark.parametrize("mode,ranks,exchange", [("batch", 2, "auto"), ("batch", 3, "allgather"),
                                                 ("batch", 2, "allreduce"), ("dense", 2, "auto"),
                                                 ("batch", 1, "auto")])
def test_ranks_train_what_one_process_trains(tmp_path, mode, ranks, exchange):
    single = job(tmp_path, "single", 0, "--mode", mode)[0]
    ranked = job(tmp_path, "ranked", ranks, "--mode", mode, "--exchange", exchange)
    _assert_ranks_train_as_one(single, ranked)
    # a sampled output layer defers its accumulators in one process, never over ranks (every batch sums)
    assert single["accumulators_at_start"] == (mode == "dense")
    assert all(r["accumulators_at_start"] for r in ranked)


@needs_mpi
@pytest.mark.parametrize("mode", ["batch", "dense"])
def test_ranks_train_the_decoupled_loss_as_one_process_does(tmp_path, mode):
    """A label's decoupled term needs its own logit, which only the rank holding its row computes:
    the ranks share the labels' logits, so every rank's gradients are the single process's."""
    single = job(tmp_path, "single", 0, "--mode", mode, "--output-loss", "decoupled")[0]
    ranked = job(tmp_path, "ranked", 2, "--mode", mode, "--output-loss", "decoupled")
    _assert_ranks_train_as_one(single, ranked)
    softmax = job(tmp_path, "softmax", 0, "--mode", mode)[0]
    assert single["loss"][0] != pytest.approx(softmax["loss"][0], rel=1e-3)


@needs_mpi
def test_ranks_switch_to_late_min_active_together(tmp_path):
    """lsh.late_min_active applies after the samples of every rank: the ranks build the same larger
    shared sets from the same batch on, so they still train what one process trains."""
    single = job(tmp_path, "single", 0, "--late")[0]
    ranked = job(tmp_path, "ranked", 2, "--late")
    _assert_ranks_train_as_one(single, ranked)
    plain = job(tmp_path, "plain", 0)[0]
    assert single["loss"][:2] == plain["loss"][:2]  # 1,200 samples: two epochs of 600 as before
    assert single["loss"][2] != plain["loss"][2]


def _assert_ranks_train_as_one(single: dict, ranked: list[dict]) -> None:
    assert single["step"] == 300 and all(r["step"] == 300 for r in ranked)  # a few hundred steps
    # The replicated embedding is bit-identical on every rank.
    assert len({r["embedding"] for r in ranked}) == 1
    for r in ranked:
        np.testing.assert_allclose(r["loss"], single["loss"], rtol=2e-4)
        assert r["report"] == pytest.approx(single["report"], abs=1e-9)
    np.testing.assert_allclose(by_row(ranked, "scores"), np.array(single["scores"]), rtol=1e-3, atol=1e-3)
    assert (by_row(ranked, "ids")[:, 0] == np.array(single["ids"])[:, 0]).all()


@needs_mpi
def test_a_sharded_save_loads_on_as_many_ranks_and_reshards_to_others(tmp_path):
    saved = job(tmp_path, "saved", 2, "--save", str(tmp_path / "model"))
    manifest = json.loads((tmp_path / "model" / "manifest.json").read_text())
    assert manifest["ranks"] == 2 and [s["rows"] for s in manifest["shards"]] == [48, 49]
    again = job(tmp_path, "again", 2, "--load", str(tmp_path / "model"), "--epochs", "0")
    assert by_row(again, "ids").tolist() == by_row(saved, "ids").tolist()

    reshard(tmp_path / "model", tmp_path / "one.npz", 1)
    one = job(tmp_path, "one", 0, "--load", str(tmp_path / "one.npz"), "--epochs", "0")[0]
    three_dir = reshard(tmp_path / "model", tmp_path / "three", 3)
    three = job(tmp_path, "three", 3, "--load", str(three_dir), "--epochs", "0")
    for got in (np.array(one["ids"]), by_row(three, "ids")):
        assert (got[:, 0] == by_row(saved, "ids")[:, 0]).all()
    np.testing.assert_allclose(by_row(three, "scores"), by_row(saved, "scores"), rtol=1e-5, atol=1e-5)

    with pytest.raises(ModelFileError, match="reshard"):
        slide.Network.load(tmp_path / "model")
    with pytest.raises(ValueError, match="exists"):
        reshard(tmp_path / "model", tmp_path / "one.npz", 1)
    wrong = mpirun(3, sys.executable, str(JOB), str(tmp_path / "wrong"), "--mpi", "--load", str(tmp_path / "model"),
                   check=False)
    assert wrong.returncode != 0 and "holds 2 shards but this job has 3 ranks" in wrong.stderr


@needs_mpi
def test_ranks_train_one_reranker_and_fuse_it_as_one_process_does(tmp_path):
    """Two ranks train the re-ranker on their shares and end with the same one; their collective
    fused predictions equal one process's predictions from the re-sharded model; the vote is
    refused under MPI with a message saying why."""
    ranked = job(tmp_path, "ranked", 2, "--rerank", "5", "--save", str(tmp_path / "model"))
    assert ranked[0]["reranker"] is not None and len({r["reranker"] for r in ranked}) == 1
    assert all("one process" in r["remember_refused"] for r in ranked)
    reshard(tmp_path / "model", tmp_path / "one.npz", 1)
    one = job(tmp_path, "one", 0, "--load", str(tmp_path / "one.npz"), "--epochs", "0", "--rerank", "5")[0]
    assert one["reranker"] == ranked[0]["reranker"] and one["rerank_weight"] == ranked[0]["rerank_weight"]
    assert np.array(one["ids"]).tolist() == by_row(ranked, "ids").tolist()
    np.testing.assert_allclose(np.array(one["scores"]), by_row(ranked, "scores"), rtol=1e-5, atol=1e-5)
    loaded = job(tmp_path, "loaded", 2, "--load", str(tmp_path / "model"), "--epochs", "0")
    assert by_row(loaded, "ids").tolist() == by_row(ranked, "ids").tolist()


@needs_mpi
def test_ranks_pick_the_rerank_weight_on_every_ranks_validation_rows(tmp_path):
    """Each rank holds a share of the validation rows; every rank picks the same weight, from the
    same scores (means over all the rows), so the ranks' models stay one model."""
    ranked = job(tmp_path, "ranked", 3, "--rerank", "5", "--validate")
    assert ranked[0]["tuned"] and all(r["tuned"] == ranked[0]["tuned"] for r in ranked)
    assert len({r["rerank_weight"] for r in ranked}) == 1
    best = max(ranked[0]["tuned"].values())
    assert ranked[0]["tuned"][f"0.0/{ranked[0]['rerank_weight']}"] == best


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, oldest first, read from /proc: not by pgrep, which would
    inherit the sanitizer run's LD_PRELOAD of libasan and hang."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while we looked
            continue
        if int(fields[1]) == pid:  # fields after the name: state, ppid, ..., starttime (the 20th)
            found.append((int(fields[19]), int(stat.parent.name)))
    return [p for _, p in sorted(found)]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "slide", *args]


@needs_mpi
def test_a_killed_rank_ends_the_job_and_resume_continues_from_the_last_checkpoint(tmp_path):
    n, d, labels = 3000, 400, 300
    X = sp.random(n, d, density=0.03, format="csr", random_state=3, dtype=np.float32)
    first = np.array([X.indices[X.indptr[i]] if X.indptr[i + 1] > X.indptr[i] else 0 for i in range(n)])
    Y = sp.csr_matrix((np.ones(n, np.float32), first % labels, np.arange(n + 1)), shape=(n, labels))
    write_xc(tmp_path / "train.txt", X[:2500], Y[:2500])
    write_xc(tmp_path / "test.txt", X[2500:], Y[2500:])
    run = tmp_path / "run"
    cmd = [MPIRUN, "--oversubscribe", "-n", "2"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    cmd += _cli("train", "--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"), "--out",
                str(run), "--epochs", "100000", "--threads", "1", "--mode", "dense", "--set", "network.hidden=[32]",
                "--batch-size", "64", "--quiet")
    # cwd: away from the source tree, whose slide/ has no compiled extension and would shadow the installed one
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                           env=environment_outside_mpi_job(), cwd=tmp_path)
    try:
        deadline = time.time() + 240
        while not (run / "checkpoint" / "manifest.json").exists():
            assert job.poll() is None, job.communicate()
            assert time.time() < deadline, "no checkpoint within 240 s"
            time.sleep(0.2)
        ranks = children(job.pid)
        assert len(ranks) == 2, ranks
        os.kill(ranks[1], signal.SIGKILL)
        out, err = job.communicate(timeout=60)  # fails, and does not hang
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode != 0
    assert not (run / "model").exists()
    saved = json.loads((run / "checkpoint" / "manifest.json").read_text())["extra"]["epoch"]
    assert 1 <= saved < 100000

    resume = [c for c in cmd if c not in ("--epochs", "100000")]
    resume = resume[:resume.index("train") + 1] + ["--resume", str(run), "--epochs", str(saved + 2), "--quiet"]
    got = subprocess.run(resume, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                         env=environment_outside_mpi_job(), cwd=tmp_path)
    assert got.returncode == 0, got.stderr[-3000:]
    assert f"resuming {run} at epoch {saved + 1}" in got.stdout
    assert (got.stdout + got.stderr).count("needs about") == 1, "the memory estimate is logged by rank 0 alone"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records if r["kind"] == "epoch"][-2:] == [saved + 1, saved + 2]
    final = [r for r in records if r["kind"] == "final"]
    assert final and final[0]["test_points"] == 500 and 0.0 <= final[0]["P@1"] <= 1.0
    assert (run / "model" / "manifest.json").exists()
    # what the run spent, split as one process's final record splits it (300 labels: the re-ranker is on)
    assert final[0]["train_seconds"] > 0 and final[0]["checkpoint_seconds"] > 0 and final[0]["fusion_seconds"] > 0
    assert got.stdout.count("time (rank 0): training ") == 1
