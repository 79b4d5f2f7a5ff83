"""The command line against careless and hostile use: every bad flag, file and call order is a
message with exit code 2 (no traceback, no hang), and nothing a user wrote is lost."""

import json
import os
import time

import pytest

from slide.datasets import make_train_test
from slide.datasets.xc_files import write_xc

from .test_cli import FAST, run, write_xc_pair


def refused(r, *expected):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    for text in expected:
        assert text in r.stderr, (text, r.stderr)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_xc_pair(tmp_path_factory.mktemp("xc"), 1500, 300, 400, 600, avg_nnz=20)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, files):
    out = tmp_path_factory.mktemp("runs") / "r"
    r = run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--epochs", "1",
            "--out", out)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("flags, message", [
    (["--batch-size", "-5"], "--batch-size must be >= 1, got -5"),  # looped forever
    (["--batch-size", "0"], "--batch-size must be >= 1, got 0"),
    (["--epochs", "0"], "--epochs must be >= 1"),  # exit 0 with an untrained model
    (["--epochs", "-1"], "--epochs must be >= 1"),
    (["--train-samples", "-5"], "--train-samples must be >= 1"),  # silently dropped the last 5 points
    (["--test-samples", "0"], "--test-samples must be >= 1"),
    (["--eval-samples", "-1"], "--eval-samples must be >= 1"),
    (["--seed", "-1"], "--seed must be >= 0"),
    (["--seed", "99999999999999999999999"], "--seed must be <= 18,446,744,073,709,551,615"),
    (["--lr", "nan"], "--lr must be a finite number"),
    (["--lr", "-1"], "--lr must be > 0"),
    (["--threads", "5000"], "--threads must be <= 1,024"),
    (["--checkpoint-every", "-1"], "--checkpoint-every must be >= 0"),
    (["--test", "x.txt"], "--test FILE needs --train FILE"),
    (["--set", "lsh.kk=3"], "unknown setting 'lsh.kk'"),
    (["--set", "network.hidden=[0]"], "--set network.hidden must be >= 1"),
    (["--set", "k=3"], "unknown setting 'k'"),
    (["--mode", "sample", "--set", "lsh.batch_active=8"], "contradicts the [lsh] settings"),
    (["--dense", "--mode", "sample"], "contradict each other"),
    (["--lr", "0.1", "--set", "network.learning_rate=0.2"], "both set learning_rate"),  # silently used the built-in dataset
    (["--dataset", "default", "--train", "a.txt", "--test", "b.txt"], "give one"),
])
def test_bad_flags_are_refused_before_any_work(flags, message):
    refused(run("train", "--quiet", *flags), message)


@pytest.mark.parametrize("toml, message", [
    ('batch_size = -5\n', "batch_size must be >= 1"),
    ('epochs = "two"\n', "epochs must be an integer, got 'two'"),
    ('[network]\nlearning_rate = "fast"\n', "[network] learning_rate must be a finite number"),
    ('[network]\nhidden = "wide"\n', "[network] hidden must be a layer size"),
    ('[network]\nhidden = [128, 0]\n', "[network] hidden must be >= 1"),
    ('[network]\ndense = 1\n', "[network] dense must be true or false"),
    ('lsh = 5\n', "lsh must be a table"),
    ('network = "big"\n', "network must be a table"),
    ('[lsh]\nk = "six"\n', "LSHConfig.k must be an integer"),
    ('[lsh]\nsimhash_density = "dense"\n', "LSHConfig.simhash_density must be a finite number"),
    ('[lsh]\nkk = 3\n', "[lsh] unknown LSH settings ['kk']"),
    ('[text8]\nwindow = "5"\n', "[text8] window must be an integer"),
    ('seed = 99999999999999999999\n', "seed must be <="),
    ('threads = 2.5\n', "threads must be an integer"),
    ('on_divergence = "panic"\n', "on_divergence must be one of stop, backoff"),
    ('bogus = 1\n', "unknown settings ['bogus']"),
])
def test_a_config_file_with_wrong_types_names_the_setting(tmp_path, toml, message):
    cfg = tmp_path / "run.toml"
    cfg.write_text(toml)
    refused(run("train", "--quiet", "--config", cfg, "--out", tmp_path / "r"), str(cfg), message)
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_hidden_as_one_int_in_the_config_is_one_layer(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text("epochs = 1\n[network]\nhidden = 24\n")
    r = run("train", *FAST, "--config", cfg, "--out", tmp_path / "r", "--train-samples", "2000")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "r" / "config.json").read_text())["network"]["hidden"] == [24]


def test_config_files_that_are_not_text_or_not_files(tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_bytes(b"epochs = 1\n# caf\xe9\n")
    refused(run("train", "--config", cfg), str(cfg), "not UTF-8 text")
    refused(run("train", "--config", tmp_path), str(tmp_path), "is a directory")


def test_directories_and_fifos_as_data_or_model_files_never_block(tmp_path, files, finished_run):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    test = files / "test.txt"
    started = time.monotonic()
    refused(run("train", "--train", fifo, "--test", test), str(fifo), "is a FIFO (named pipe)")
    refused(run("train", "--train", tmp_path, "--test", test), str(tmp_path), "is a directory")
    refused(run("evaluate", fifo), "is a FIFO")  # blocked forever
    refused(run("predict", fifo, test), "is a FIFO")
    refused(run("predict", finished_run / "model.npz", fifo, "--out", tmp_path / "o.txt"), "is a FIFO")
    refused(run("data", "check", fifo), "is a FIFO")
    import slide

    with pytest.raises(ValueError, match="is a FIFO"):
        slide.Network.load(fifo)
    with pytest.raises(ValueError, match="is a directory"):
        slide.Network.load(tmp_path)
    assert time.monotonic() - started < 120


def test_predict_never_writes_over_its_input_or_model(tmp_path, finished_run, files):
    points = tmp_path / "points.txt"
    points.write_bytes((files / "test.txt").read_bytes())
    before = points.read_bytes()
    refused(run("predict", finished_run, points, "--out", points), "it is the input data file")
    refused(run("predict", finished_run, points, "--out", str(points.parent / "." / points.name)), "input data file")
    os.link(points, tmp_path / "hardlink.txt")
    refused(run("predict", finished_run, points, "--out", tmp_path / "hardlink.txt"), "input data file")
    model = finished_run / "model.npz"
    model_bytes = model.read_bytes()
    refused(run("predict", finished_run, points, "--out", model), "it is the model file")
    assert points.read_bytes() == before and model.read_bytes() == model_bytes


def test_an_existing_run_folder_is_never_reused_silently(tmp_path, files):
    out = tmp_path / "r"
    common = [*FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--epochs", "1", "--out", out]
    assert run("train", *common).returncode == 0
    config = (out / "config.json").read_text()
    refused(run("train", *common, "--lr", "0.5"), "already holds a run", f"--resume {out}", "--overwrite")
    assert (out / "config.json").read_text() == config
    r = run("train", *common, "--overwrite")
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records].count("final") == 1  # one run's records, not two
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    refused(run("train", *common[:-1], foreign, "--overwrite"), "holds other files")
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_resume_refuses_flags_it_would_ignore(finished_run):
    for flags in (["--lr", "0.5"], ["--batch-size", "3"], ["--dense"], ["--dataset", "default"], ["--seed", "3"],
                  ["--out", "elsewhere"], ["--config", "run.toml"]):
        refused(run("train", "--resume", finished_run, *flags), "cannot change them", flags[0])


def test_resume_rewinds_metrics_to_the_checkpoint(tmp_path, files):
    out = tmp_path / "r"
    r = run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--epochs", "1",
            "--out", out)
    assert r.returncode == 0, r.stderr
    metrics = out / "metrics.jsonl"
    clean = metrics.read_text()
    # What a kill after the last checkpoint leaves: records a resume writes again and a torn line.
    with open(metrics, "a") as f:
        f.write(clean.splitlines()[0] + "\n" + '{"kind": "periodic", "samp')
    r = run("train", "--resume", out, "--epochs", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in metrics.read_text().splitlines()]  # every line parses
    samples = [r["samples"] for r in records]
    assert samples == sorted(samples), samples  # never going backwards
    assert [r["kind"] for r in records].count("final") == 1
    assert [r["epoch"] for r in records if r["kind"] == "epoch"] == [1, 2]


def test_resume_from_another_directory_and_refuse_changed_data(tmp_path, files):
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.txt").write_bytes((files / "train.txt").read_bytes())
    (work / "test.txt").write_bytes((files / "test.txt").read_bytes())
    r = run("train", *FAST, "--train", "train.txt", "--test", "test.txt", "--epochs", "1", "--out", "r", cwd=work)
    assert r.returncode == 0, r.stderr
    config = json.loads((work / "r" / "config.json").read_text())
    assert config["train_file"] == str(work / "train.txt")
    assert {f["path"] for f in config["data_files"]} == {str(work / "train.txt"), str(work / "test.txt")}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "train.txt").write_text("1 400 600\n0 1:1\n")  # a different file with the same relative name
    r = run("train", "--resume", work / "r", "--epochs", "2", "--quiet", cwd=elsewhere)
    assert r.returncode == 0, r.stderr
    with open(work / "train.txt", "a") as f:
        f.write("\n")
    refused(run("train", "--resume", work / "r", "--epochs", "3", "--quiet"), str(work / "train.txt"),
            "has changed since the run started")


def test_fewer_labels_than_the_evaluation_ranks(tmp_path):
    train, test = make_train_test(400, 100, 50, 2, seed=1, avg_nnz=10, avg_labels=1)
    write_xc(tmp_path / "train.txt", train.X, train.Y)
    write_xc(tmp_path / "test.txt", test.X, test.Y)
    r = run("train", *FAST, "--train", tmp_path / "train.txt", "--test", tmp_path / "test.txt", "--epochs", "2",
            "--dense", "--out", tmp_path / "r")
    assert r.returncode == 0, r.stderr
    assert "P@1" in r.stdout and "P@3" not in r.stdout and (tmp_path / "r" / "model.npz").exists()


def test_a_checkpoint_from_before_metrics_offsets_keeps_all_metrics(tmp_path, files):
    import io
    import zipfile

    import numpy as np

    out = tmp_path / "r"
    assert run("train", *FAST, "--train", files / "train.txt", "--test", files / "test.txt", "--epochs", "1",
               "--out", out, "--set", "end_checkpoint_after=0").returncode == 0
    checkpoint = out / "checkpoint.npz"  # rewrite its header as an older slide wrote it
    with zipfile.ZipFile(checkpoint) as z:
        members = {n: z.read(n) for n in z.namelist()}
    header = json.loads(np.load(io.BytesIO(members["__slide_header__.npy"])).tobytes())
    del header["extra"]["position"]["metrics_bytes"]
    buf = io.BytesIO()
    np.save(buf, np.frombuffer(json.dumps(header).encode(), np.uint8))
    members["__slide_header__.npy"] = buf.getvalue()
    with zipfile.ZipFile(checkpoint, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    before = (out / "metrics.jsonl").read_text()
    assert run("train", "--resume", out, "--epochs", "2", "--quiet").returncode == 0
    assert (out / "metrics.jsonl").read_text().startswith(before)
