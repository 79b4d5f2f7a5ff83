"""Issue 28, class 11: messages that blame a setting the user never gave, a memory check that
lets a batch size through which then fails in the engine, and out-of-memory errors that do not
say which data asked for the memory."""

import json

import pytest

from slide import memory
from slide.cli import main as cli
from slide.datasets import make_train_test
from slide.datasets.pieces import read_pieces
from slide.datasets.shards import ShardFolder, write_split
from slide.datasets import xc_files
from slide.datasets.xc_files import load_xc, write_xc
from slide.network import Network

FAST = ["--quiet", "--threads", "1", "--epochs", "1", "--set", "network.hidden=[8]", "--set", "eval_samples=50"]


@pytest.fixture(scope="module")
def small_labels(tmp_path_factory):
    """A problem with 40 labels: the shape defaults pick a dense output layer for it."""
    d = tmp_path_factory.mktemp("xc")
    train, test = make_train_test(300, 60, 50, 40, seed=1, avg_nnz=5)
    write_xc(d / "train.txt", train.X, train.Y)
    write_xc(d / "test.txt", test.X, test.Y)
    return d


# ------------------------------------------------------------------ a mode the user names wins
@pytest.mark.parametrize("flags, mode, batch_active", [
    (["--mode", "batch"], "batch", 1024),
    (["--mode", "sample"], "sample", 0),
    (["--set", "network.mode=batch"], "batch", 1024),
    (["--set", "network.mode=sample"], "sample", 0),
    (["--mode", "batch", "--set", "lsh.batch_active=16"], "batch", 16),
    (["--mode", "dense"], "dense", None),
])
def test_a_named_mode_wins_over_the_shape_default(small_labels, tmp_path, capsys, flags, mode, batch_active):
    out = tmp_path / "run"
    code = cli(["train", "--train", str(small_labels / "train.txt"), "--test", str(small_labels / "test.txt"),
                *FAST, *flags, "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    config = json.loads((out / "config.json").read_text())
    assert config["network"]["mode"] == mode and config["network"]["dense"] == (mode == "dense")
    if batch_active is not None:
        assert config["lsh"]["batch_active"] == batch_active


def test_a_mode_in_a_config_file_wins_over_the_shape_default(small_labels, tmp_path, capsys):
    toml = tmp_path / "run.toml"
    toml.write_text('[network]\nmode = "sample"\n')
    out = tmp_path / "run"
    code = cli(["train", "--train", str(small_labels / "train.txt"), "--test", str(small_labels / "test.txt"),
                *FAST, "--config", str(toml), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert json.loads((out / "config.json").read_text())["network"]["mode"] == "sample"


@pytest.mark.parametrize("flags, names", [
    (["--mode", "batch", "--set", "lsh.batch_active=0"], "lsh.batch_active = 0"),
    (["--mode", "sample", "--set", "lsh.batch_active=8"], "lsh.batch_active = 8"),
])
def test_a_real_contradiction_names_the_users_setting(small_labels, tmp_path, capsys, flags, names):
    code = cli(["train", "--train", str(small_labels / "train.txt"), "--test", str(small_labels / "test.txt"),
                *FAST, *flags, "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and names in err and "None" not in err, err


# ------------------------------------------------------------------ the batch size in the memory check
@pytest.fixture
def two_gib(monkeypatch):
    """256 MiB free: the network fits, a step of 8,192 rows (about 0.5 GiB of workspace) does not."""
    monkeypatch.setattr(memory, "available_bytes", lambda: (256 << 20, "a test's limit"))


@pytest.fixture(scope="module")
def problem():
    return make_train_test(9000, 50, 200, 10_000, seed=2, avg_nnz=5)


@pytest.mark.parametrize("mode, batch", [("batch", 1 << 20), ("batch", 8192), ("dense", 1 << 20)])
def test_fit_refuses_a_batch_whose_workspace_cannot_fit_before_training(two_gib, problem, mode, batch):
    train, _ = problem
    net = Network(200, 10_000, hidden=(16,), mode=mode, threads=1)
    with pytest.raises(MemoryError, match=f"batches of {batch:,}.*batch size"):
        net.fit(train.X, train.Y, epochs=1, batch_size=batch, progress=False)


def test_partial_fit_checks_the_batch_too(two_gib, problem):
    train, _ = problem
    net = Network(200, 10_000, hidden=(16,), mode="batch", threads=1)
    with pytest.raises(MemoryError, match="batches of 1,048,576 \\(9,000 rows at once here\\)"):
        net.partial_fit(train.X, train.Y, batch_size=1 << 20)


def test_a_batch_that_fits_still_trains(two_gib, problem):
    train, _ = problem
    net = Network(200, 10_000, hidden=(16,), mode="batch", threads=1)
    net.partial_fit(train.X[:2048], train.Y[:2048], batch_size=2048)
    net.partial_fit(train.X[:300], train.Y[:300], batch_size=1 << 20)  # a large batch size over few rows


def test_slide_train_refuses_a_batch_size_that_cannot_fit(two_gib, problem, tmp_path, capsys):
    train, test = problem
    write_xc(tmp_path / "train.txt", train.X, train.Y)
    write_xc(tmp_path / "test.txt", test.X, test.Y)
    code = cli(["train", "--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"), *FAST,
                "--batch-size", "1048576", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "batches of 1,048,576" in err and "--batch-size" in err, err


# ------------------------------------------------------------------ out of memory names the data
@pytest.fixture
def folder(tmp_path):
    train, _ = make_train_test(200, 10, 30, 20, seed=3, avg_nnz=4)
    write_split(tmp_path / "shards", train)
    return tmp_path / "shards"


@pytest.fixture
def allocation_fails(monkeypatch):
    def fail(*args, **kwargs):
        raise MemoryError("Unable to allocate 100. GiB for an array with shape (13421772800,) and data type int64")

    monkeypatch.setattr(ShardFolder, "read_arrays", fail)


@pytest.mark.parametrize("read", [load_xc, lambda p: list(read_pieces(p))])
def test_an_allocation_failure_reading_a_shard_folder_names_it(folder, allocation_fails, read):
    with pytest.raises(MemoryError, match=f"^{folder}: Unable to allocate 100. GiB"):
        read(folder)


def test_slide_data_info_names_the_shard_folder_that_asked_for_too_much(folder, allocation_fails, capsys):
    assert cli(["data", "info", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"slide: error: {folder}: Unable to allocate" in err, err


def test_an_allocation_failure_parsing_a_text_file_names_it(tmp_path, monkeypatch):

    train, _ = make_train_test(20, 5, 30, 20, seed=3, avg_nnz=4)
    write_xc(tmp_path / "t.txt", train.X, train.Y)

    def fail(*args, **kwargs):
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(xc_files, "parse_xc", fail)
    with pytest.raises(MemoryError, match=f"^{tmp_path / 't.txt'}: std::bad_alloc"):
        load_xc(tmp_path / "t.txt", cache=False)
