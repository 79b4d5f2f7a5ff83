"""Every file slide reads back (a run's config.json and metrics.jsonl, a checkpoint's position, a
shard manifest, a model header, --config and --set values) is checked against a declared schema:
a damaged or hostile one is exit code 2 and a message naming the file and the field, never a
traceback, a hang or a silently wrong run (issue 28, classes 4, 5, 6, 8 and 11)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slide.cli import main
from slide.datasets import make_train_test
from slide.datasets.shards import write_split
from slide.model_file import read_arrays, read_header, write_model

from .test_cli import write_xc_pair
from .test_mpi import mpirun, needs_mpi

HOME = os.path.expanduser("~")
FAST = ["--quiet", "--threads", "2"]
SMALL = [*FAST, "--set", "network.hidden=[16]", "--set", "eval_samples=200", "--train-samples", "2000",
         "--test-samples", "200"]


def slide(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI in a child with a time limit: a case that used to hang fails instead of hanging."""
    return subprocess.run([sys.executable, "-m", "slide", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=HOME, stdin=subprocess.DEVNULL)


def refused(capsys, argv, *expected: str) -> str:
    code, err = main([str(a) for a in argv]), capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, (code, err)
    assert all(text in err for text in expected), (expected, err)
    return err


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A finished one-epoch run (config.json, metrics.jsonl, checkpoint.npz, model.npz)."""
    out = tmp_path_factory.mktemp("template") / "run"
    assert main(["train", *SMALL, "--epochs", "1", "--out", str(out), "--set", "end_checkpoint_after=0"]) == 0
    return out


@pytest.fixture
def run_dir(tmp_path, template) -> Path:
    return Path(shutil.copytree(template, tmp_path / "run"))


def edit_config(run: Path, change) -> None:
    cfg = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(change(cfg)))


def rewrite_header(path: Path, change) -> None:
    """The model file with its header changed and every checksum recomputed, as a hostile editor would."""
    header, arrays = read_header(path), read_arrays(path)
    header = {k: v for k, v in header.items() if k != "checksums"}
    change(header)
    write_model(path, header, arrays)


def rewrite_position(path: Path, change) -> None:
    rewrite_header(path, lambda header: change(header["extra"]))


# ----------------------------------------------------------------------------- class 4: config.json

def _set(key, value):
    return lambda cfg: {**cfg, key: value}


def _drop(key):
    return lambda cfg: {k: v for k, v in cfg.items() if k != key}


CONFIG_DAMAGE = {
    "a list": (lambda cfg: [1], "expected a JSON object"),
    "no seed": (_drop("seed"), "field seed: missing"),
    "no epochs": (_drop("epochs"), "field epochs: missing"),
    "no network": (_drop("network"), "field network: missing"),
    # found by benches.fuzz_files: a resume read these with cfg[...] (KeyError)
    "no eval_samples": (_drop("eval_samples"), "field eval_samples: missing"),
    "no checkpoint_every": (_drop("checkpoint_every"), "field checkpoint_every: missing"),
    "network a string": (_set("network", "abc"), "field network: expected a table of settings"),
    "seed a string": (_set("seed", "abc"), "field seed"),
    "epochs negative": (_set("epochs", -3), "field epochs"),
    "hidden a string": (lambda cfg: {**cfg, "network": {**cfg["network"], "hidden": "abc"}}, "field network.hidden"),
    "lsh a list": (_set("lsh", [1, 2]), "field lsh"),
    "data file without a path": (_set("data_files", [{"size": 1, "sample_sha256": "00"}]),
                                 "field data_files[0].path: missing"),
    "data files a string": (_set("data_files", "train.txt"), "field data_files"),
    "train file without test file": (_set("train_file", "/nowhere/train.txt"), "field test_file"),
}


COMMANDS = {"resume": ["train", "--quiet", "--resume"], "info": ["info"], "evaluate": ["evaluate"]}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("damage", list(CONFIG_DAMAGE))
def test_a_damaged_config_json_names_the_file_and_field(capsys, run_dir, command, damage):
    change, message = CONFIG_DAMAGE[damage]
    edit_config(run_dir, change)
    argv = [*COMMANDS[command], run_dir]
    refused(capsys, argv, str(run_dir / "config.json"), message)


CONFIG_BYTES = {
    "not JSON": (b'{"seed": 0,', "not valid JSON"),
    "not UTF-8": (b'\xff\xfe{"seed": 0}', "not UTF-8"),
    "nested too deeply": (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    "a 5,001-digit seed": (b'{"seed": ' + b"9" * 5001 + b"}", "more than 4,300 digits"),
    "NaN epochs": (b'{"seed": 0, "epochs": NaN}', "field epochs"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("damage", list(CONFIG_BYTES))
def test_a_config_json_that_does_not_parse_names_the_file(capsys, run_dir, command, damage):
    data, message = CONFIG_BYTES[damage]
    (run_dir / "config.json").write_bytes(data)
    argv = [*COMMANDS[command], run_dir]
    err = refused(capsys, argv, str(run_dir / "config.json"), message)
    assert "set_int_max_str_digits" not in err and len(err) < 2000


def test_a_huge_or_odd_config_json_is_refused_without_reading_it(capsys, run_dir):
    with open(run_dir / "config.json", "r+b") as f:
        f.truncate(1 << 30)  # sparse: a GiB that costs nothing on disk
    refused(capsys, ["info", run_dir], str(run_dir / "config.json"), "larger than")
    (run_dir / "config.json").unlink()
    (run_dir / "config.json").mkdir()
    refused(capsys, ["info", run_dir], str(run_dir / "config.json"), "is a directory")


# ----------------------------------------------------------------------------- class 4: metrics.jsonl

BAD_RECORDS = ['[1]', '{}', '"text"', '{"kind": 5}', '{"kind": "epoch", "samples": "many"}',
               '{"kind": "final", "P@1": "high"}', '{"kind": "epoch", "epoch": -1}', "[" * 50_000 + "]" * 50_000,
               '{"kind": "epoch", "samples": ' + "9" * 5001 + "}", "not json at all",
               '{"kind": "final", "train_seconds": [1], "eval_seconds": 1, "checkpoint_seconds": 1}']


def test_info_skips_malformed_metrics_lines_and_names_them(capsys, caplog, run_dir):
    metrics = run_dir / "metrics.jsonl"
    good = metrics.read_text()
    metrics.write_text("\n".join(BAD_RECORDS) + "\n" + good)
    assert main(["info", str(run_dir)]) == 0
    captured = capsys.readouterr()
    assert "finished" in captured.out and "epochs: 1 of 1" in captured.out
    for line in range(1, len(BAD_RECORDS) + 1):  # each skipped with a warning naming it
        assert f"metrics.jsonl:{line}:" in caplog.text, (line, caplog.text)
    assert "Traceback" not in captured.err


def test_metrics_lines_that_are_not_utf8_or_endless_are_skipped(capsys, caplog, run_dir):
    metrics = run_dir / "metrics.jsonl"
    good = metrics.read_bytes()
    metrics.write_bytes(b'{"kind": "\xff"}\n' + b"x" * (3 << 20) + b"\n" + good)
    assert main(["info", str(run_dir), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["epochs"]["done"] == 1
    assert "metrics.jsonl:1:" in caplog.text and "metrics.jsonl:2:" in caplog.text


def test_resume_reads_past_malformed_metrics_records(capsys, run_dir):
    metrics = run_dir / "metrics.jsonl"
    # A record with a score but no time used to crash the plot that every epoch redraws.
    metrics.write_text('{"kind": "epoch", "P@1": 0.5}\n[1]\n{}\n' + metrics.read_text())
    assert main(["train", "--resume", str(run_dir), "--epochs", "2", "--quiet"]) == 0
    assert "Traceback" not in capsys.readouterr().err


# ----------------------------------------------------------------------------- class 4 and 6: the checkpoint's position

def test_a_model_copied_over_the_checkpoint_is_refused(capsys, run_dir):
    shutil.copy(run_dir / "model.npz", run_dir / "checkpoint.npz")
    refused(capsys, ["train", "--resume", run_dir, "--epochs", "2", "--quiet"], "checkpoint.npz",
            "field extra.position: missing")


def _position(**fields):
    def change(extra):
        extra["position"].update(fields)
    return change


POSITION_DAMAGE = {
    "epoch negative": (_position(epoch=-1), "field extra.position.epoch"),
    "epoch absurd": (_position(epoch=10**30), "field extra.position.epoch"),
    "segment negative": (_position(segment=-5), "field extra.position.segment"),
    "samples a string": (_position(samples="many"), "field extra.position.samples"),
    "no row": (lambda extra: extra["position"].pop("row"), "field extra.position.row: missing"),
    "unknown field": (_position(zzz=1), "unknown keys"),
    "best tracker unknown field": (_position(best={"bogus": 1}), "field extra.position.best"),
    "metrics bytes negative": (_position(metrics_bytes=-1), "field extra.position.metrics_bytes"),
    "position a list": (lambda extra: extra.update(position=[1]), "field extra.position"),
    "stopped_early a string": (_position(stopped_early="no"), "field extra.position.stopped_early"),
}


@pytest.mark.parametrize("damage", list(POSITION_DAMAGE))
def test_a_damaged_checkpoint_position_names_the_field(capsys, run_dir, damage):
    change, message = POSITION_DAMAGE[damage]
    rewrite_position(run_dir / "checkpoint.npz", change)
    refused(capsys, ["train", "--resume", run_dir, "--epochs", "2", "--quiet"], "checkpoint.npz", message)


@pytest.mark.parametrize("row", [-100, -1, -(2**40)])
def test_a_negative_checkpoint_row_is_refused_not_looped_on(run_dir, row):
    rewrite_position(run_dir / "checkpoint.npz", _position(epoch=0, row=row))
    r = slide("train", "--resume", run_dir, "--epochs", "2", "--quiet")  # looped forever
    assert r.returncode == 2 and "field extra.position.row" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_the_position_schema_declares_every_position_field():
    from slide.file_schemas import POSITION
    from slide.runs import Position

    names = {f.name for f in dataclasses.fields(Position)}
    assert names == set(POSITION.required) | set(POSITION.optional)


# ----------------------------------------------------------------------------- class 6: FIFOs never block

@pytest.mark.parametrize("name", ["config.json", "metrics.jsonl"])
@pytest.mark.parametrize("command", [("info",), ("train", "--resume")])
def test_a_fifo_in_place_of_a_run_file_is_refused_without_blocking(run_dir, name, command):
    (run_dir / name).unlink()
    os.mkfifo(run_dir / name)
    r = slide(*command, run_dir, "--quiet" if command[0] == "train" else "--json", timeout=90)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "is a FIFO" in r.stderr and name in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- class 8: planned epochs after a resume

def test_info_reports_the_epochs_a_resume_extended_the_run_to(capsys, run_dir):
    assert main(["train", "--resume", str(run_dir), "--epochs", "2", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["info", str(run_dir)]) == 0
    assert "epochs: 2 of 2" in capsys.readouterr().out  # said "2 of 1"
    assert json.loads((run_dir / "config.json").read_text())["epochs"] == 2
    assert main(["train", "--resume", str(run_dir), "--quiet"]) == 0  # a plain resume keeps the extension
    capsys.readouterr()
    assert main(["info", str(run_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["epochs"] == {"planned": 2, "done": 2}


# ----------------------------------------------------------------------------- class 5: `slide info` on an MPI run

def write_mpi_run(out: Path, template: Path) -> None:
    """A run folder as `mpirun -n 2 slide train` writes it (slide.cli.train_mpi): config.json with
    its ranks, metrics records without samples or wall time, and sharded checkpoint/ and model/."""
    out.mkdir()
    cfg = {**json.loads((template / "config.json").read_text()), "ranks": 2, "epochs": 2, "data_files": []}
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    records = [{"kind": "epoch", "epoch": e, "loss": 5.7, "seconds": 0.01, "samples_per_second": 4.8e5,
                "active_per_sample": 300.0, "ranks": 2, "checkpoint_seconds": 0.002} for e in (1, 2)]
    records.append({"kind": "final", "P@1": 0.25, "P@3": 0.2, "P@5": 0.15, "nDCG@1": 0.25, "test_points": 100,
                    "ranks": 2, "seconds": 0.004})
    (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    for folder in ("checkpoint", "model"):
        (out / folder / "save-000002").mkdir(parents=True)  # `slide info` reads the manifest only
        shards = [{"rank": rank, "ranks": 2, "offset": rank * 5000, "rows": 5000, "bytes": 6 << 20,
                   "file": f"rank-{rank:05d}-of-00002.npz"} for rank in range(2)]
        manifest = {"format": "slide-sharded-model", "version": 1, "ranks": 2, "output_dim": 10000,
                    "save": "save-000002", "step": 32, "shards": shards, "extra": {"epoch": 2}}
        (out / folder / "manifest.json").write_text(json.dumps(manifest))


def test_info_summarises_an_mpi_run_folder(capsys, tmp_path, template):
    out = tmp_path / "mpi"
    write_mpi_run(out, template)
    assert main(["info", str(out)]) == 0  # KeyError 'samples'
    text = capsys.readouterr().out
    assert "finished" in text and "epochs: 2 of 2" in text and "final: P@1 0.2500" in text
    assert "trained over 2 MPI ranks" in text
    assert [line for line in text.splitlines() if line.startswith("model:") and "sharded over 2 ranks" in line]
    assert main(["info", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"]["model"]["ranks"] == 2 and summary["files"]["checkpoint"]["optimizer_steps"] == 32
    (out / "model" / "manifest.json").write_text("[1, 2]")
    refused(capsys, ["info", out], str(out / "model" / "manifest.json"))


@needs_mpi
def test_info_on_a_run_folder_mpirun_wrote(tmp_path):
    write_xc_pair(tmp_path, 400, 100, 200, 300, avg_nnz=10)
    mpirun(2, sys.executable, "-m", "slide", "train", "--quiet", "--threads", "1", "--train",
           str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"), "--epochs", "1", "--set",
           "network.hidden=[16]", "--out", str(tmp_path / "run"),
           cwd=tmp_path)  # away from the source tree, whose slide/ has no compiled extension
    info = slide("info", tmp_path / "run")
    assert info.returncode == 0, info.stderr
    assert "finished" in info.stdout and "epochs: 1 of 1" in info.stdout and "trained over 2 MPI ranks" in info.stdout


# ----------------------------------------------------------------------------- class 4: shard manifests

@pytest.fixture
def shard_folder(tmp_path) -> Path:
    train, _ = make_train_test(300, 10, 50, 20, seed=1, avg_nnz=5, avg_labels=2)
    write_split(tmp_path / "shards", train, shard_rows=100)
    return tmp_path / "shards"


def _manifest(change):
    return lambda m: (change(m), m)[1]


MANIFEST_DAMAGE = {
    "a list": (lambda m: [1, 2], "expected a JSON object"),
    "rows negative": (_manifest(lambda m: m["shards"][0].update(rows=-1)), "field shards[0].rows"),
    "num_points a string": (_manifest(lambda m: m.update(num_points="300")), "field num_points"),
    "shards a string": (_manifest(lambda m: m.update(shards="abc")), "field shards"),
    "shard entry a number": (_manifest(lambda m: m["shards"].__setitem__(0, 7)), "field shards[0]"),
    "file outside the folder": (_manifest(lambda m: m["shards"][0].update(file="../x.shard")), "field shards[0].file"),
    "crc32 negative": (_manifest(lambda m: m["shards"][0].update(crc32=-1)), "field shards[0].crc32"),
    "no num_labels": (_manifest(lambda m: m.pop("num_labels")), "field num_labels: missing"),
}


@pytest.mark.parametrize("damage", list(MANIFEST_DAMAGE))
def test_a_damaged_shard_manifest_names_the_file_and_field(capsys, shard_folder, damage):
    change, message = MANIFEST_DAMAGE[damage]
    manifest = shard_folder / "manifest.json"
    manifest.write_text(json.dumps(change(json.loads(manifest.read_text()))))
    refused(capsys, ["data", "check", shard_folder], str(manifest), message)


@pytest.mark.parametrize("data, message", [(b"[" * 100_000, "nested too deeply"), (b"\xff\xff", "not UTF-8"),
                                           (b'{"num_points": ' + b"1" * 5000 + b"}", "4,300 digits")])
def test_a_shard_manifest_that_does_not_parse_names_the_file(capsys, shard_folder, data, message):
    (shard_folder / "manifest.json").write_bytes(data)
    refused(capsys, ["data", "check", shard_folder], str(shard_folder / "manifest.json"), message)


def test_a_fifo_shard_manifest_never_blocks(shard_folder):
    (shard_folder / "manifest.json").unlink()
    os.mkfifo(shard_folder / "manifest.json")
    r = slide("data", "check", shard_folder, timeout=90)
    assert r.returncode == 2 and "is a FIFO" in r.stderr, r.stderr


# ----------------------------------------------------------------------------- class 4: model headers

HEADER_DAMAGE = {
    "hidden a string": (lambda h: h["config"].update(hidden="abc"), "field config.hidden"),
    "seed a string": (lambda h: h["config"].update(seed="abc"), "field config.seed"),
    "lsh a number": (lambda h: h["config"].update(lsh=5), "field config.lsh"),
    "lsh k a string": (lambda h: h["config"]["lsh"].update(k="x"), "field config.lsh.k"),
    "input_dim absurd": (lambda h: h["config"].update(input_dim=10**40), "field config.input_dim"),
    "unknown config key": (lambda h: h["config"].update(zzz=1), "unknown keys"),
    "step a list": (lambda h: h["counters"].update(step=[1]), "field counters.step"),
}


@pytest.mark.parametrize("command", ["info", "evaluate"])
@pytest.mark.parametrize("damage", list(HEADER_DAMAGE))
def test_a_malformed_model_header_names_the_file_and_field(capsys, run_dir, command, damage):
    change, message = HEADER_DAMAGE[damage]
    rewrite_header(run_dir / "model.npz", change)
    refused(capsys, [command, run_dir], "model.npz", message)


# ----------------------------------------------------------------------------- class 4 and 11: --config and --set

DEEP = "[" * 20_000 + "]" * 20_000


@pytest.mark.parametrize("assignment, message", [
    ("epochs=" + "9" * 5001, "--set epochs"),
    ("network.hidden=" + "9" * 5001, "--set network.hidden"),
    ("network.hidden=" + DEEP, "--set network.hidden"),
    ("lsh.k=" + "{a=" * 5000 + "1" + "}" * 5000, "--set lsh.k"),
    ("seed=[" + "9" * 4400 + "]", "--set seed"),
], ids=["5001-digit epochs", "5001-digit hidden", "deep hidden", "deep inline table", "4400-digit list"])
def test_set_values_too_long_or_too_deep_are_clear_errors(capsys, tmp_path, assignment, message):
    err = refused(capsys, ["train", "--set", assignment, "--out", tmp_path / "r"], message)
    assert "set_int_max_str_digits" not in err and "RecursionError" not in err and len(err) < 2000


@pytest.mark.parametrize("toml, message", [
    ("epochs = " + DEEP, "nested too deeply"),
    ("[network]\nhidden = " + DEEP, "nested too deeply"),
    ("a = " + "{b=" * 5000 + "1" + "}" * 5000, "nested too deeply"),
    ("epochs = " + "9" * 5001, "4,300 digits"),
    ("[lsh]\nk = " + "9" * 5001, "4,300 digits"),
], ids=["deep epochs", "deep hidden", "deep inline table", "5001-digit epochs", "5001-digit lsh.k"])
def test_config_files_too_long_or_too_deep_are_clear_errors(capsys, tmp_path, toml, message):
    cfg = tmp_path / "run.toml"
    cfg.write_text(toml)
    err = refused(capsys, ["train", "--config", cfg, "--out", tmp_path / "r"], str(cfg), message)
    assert "set_int_max_str_digits" not in err and len(err) < 2000
