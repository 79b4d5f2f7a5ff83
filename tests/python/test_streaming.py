"""Out-of-core data: the shard format, streaming conversion, the shard stream, and training,
prediction and evaluation that read their data a piece at a time."""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import slide
from slide import _core, runs
from slide.datasets import (DataFormatError, ShardError, ShardFolder, Stream, convert_xc, load_xc, make_catalogue,
                            read_pieces, write_xc)
from slide.datasets.prefetch import prefetched
from slide.datasets.shards import MANIFEST, write_shard, write_split
from slide.network import TrainingInterrupted


def _data(n=700, seed=1):
    return make_catalogue(n, 400, 120, seed=seed, avg_words=20, avg_labels=3)


def _same(a, b):
    assert a.X.shape == b.X.shape and a.Y.shape == b.Y.shape
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0


@pytest.fixture
def xc_file(tmp_path):
    d = _data()
    path = tmp_path / "train.txt"
    write_xc(path, d.X, d.Y)
    return path, d


# ---------------------------------------------------------------- parsing in pieces
def test_parsing_in_pieces_at_any_line_break_equals_parsing_whole(xc_file):
    path, _ = xc_file
    text = path.read_bytes()
    whole = _core.parse_xc(text)
    breaks = [i + 1 for i, c in enumerate(text) if c == ord("\n")]
    rng = np.random.default_rng(0)
    for _ in range(5):
        cuts = sorted(rng.choice(breaks[:-1], size=6, replace=False))
        parser, parts = _core.XcStreamParser(), []
        for lo, hi in zip([0, *cuts], [*cuts, len(text)]):
            parts.append(parser.feed(text[lo:hi], hi == len(text)))
        for key in ("x_indices", "x_data", "y_indices"):
            np.testing.assert_array_equal(np.concatenate([p[key] for p in parts]), whole[key])
        assert parser.points_read == whole["num_points"]


def test_an_error_in_a_later_piece_names_the_line_of_the_whole_file(tmp_path):
    lines = ["40 10 5"] + [f"{i % 5} {i % 10}:1" for i in range(40)]
    lines[31] = "1 3:x"  # line 32 of the file
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError) as e:
        convert_xc(path, tmp_path / "shards", block_bytes=16, shard_rows=4)
    assert e.value.line == 32 and str(e.value).startswith(f"{path}:32: ")
    # The shards written before the error were built beside the folder and are gone with the build.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]
    with pytest.raises(DataFormatError, match=":32: "):
        list(read_pieces(path, block_bytes=16))


def _single_parser_outcome(text: bytes):
    try:
        return _core.parse_xc(text)
    except _core.ParseError as e:
        return e.args


@pytest.mark.parametrize("mutation", ["valid", "blank_lines_then_points", "extra_points", "extra_point_then_bad_value",
                                      "too_few_points", "bad_value", "blank_line_then_bad_value", "trailing_blanks"])
def test_blocks_parsed_in_parallel_fail_or_succeed_exactly_as_one_parser(tmp_path, mutation):
    from slide.datasets.xc_blocks import parse_blocks

    body = [f"{i % 7},{7 + i % 3} {i % 11}:0.5 {11 + i % 5}:{i}" for i in range(80)]
    rng = np.random.default_rng(len(mutation))
    for at in rng.choice(np.arange(5, 75), size=4, replace=False):
        lines, count = list(body), 80
        if mutation == "blank_lines_then_points":
            lines[at:at] = ["", ""]
        elif mutation == "extra_points":
            count = int(at)
        elif mutation == "extra_point_then_bad_value":
            count, lines[at + 2] = int(at), "1 2:x"
        elif mutation == "too_few_points":
            lines = lines[:at]
        elif mutation == "bad_value":
            lines[at] = "1 2:x"
        elif mutation == "blank_line_then_bad_value":
            lines[at:at + 1] = ["", "1 2:x"]
        elif mutation == "trailing_blanks":
            lines = lines + ["", ""]
        text = (f"{count} 20 10\n" + "\n".join(lines) + "\n").encode()
        path = tmp_path / f"{mutation}-{at}.txt"
        path.write_bytes(text)
        expected = _single_parser_outcome(text)
        for block_bytes in (40, 97, 300):
            try:
                parts = list(parse_blocks(path, block_bytes, workers=3))
            except DataFormatError as e:
                assert not isinstance(expected, dict), f"{mutation} at {at}: {e}"
                assert (e.line, str(e).split(": ", 1)[1]) == expected, (mutation, at, block_bytes)
                continue
            assert isinstance(expected, dict), f"{mutation} at {at}: expected {expected}"
            for key in ("x_indices", "x_data", "y_indices"):
                np.testing.assert_array_equal(np.concatenate([p[key] for p in parts]), expected[key])


def test_a_repeated_label_is_found_across_piece_boundaries_but_rows_are_independent(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("3 10 5\n1,2 1:1\n1,2 2:1\n3,3 4:1\n")  # the repeat is within line 4
    with pytest.raises(DataFormatError, match=":4: label id 3 is repeated"):
        convert_xc(path, tmp_path / "s", block_bytes=8)


# ---------------------------------------------------------------- the shard format
@pytest.mark.parametrize("shard_rows", [1, 64, 10_000])
def test_conversion_round_trips_plain_and_gzip(xc_file, tmp_path, shard_rows):
    path, d = xc_file
    folder = convert_xc(path, tmp_path / "plain", shard_rows=shard_rows, block_bytes=4096)
    assert len(folder) == -(-len(d) // shard_rows) and folder.num_points == len(d)
    assert all(s["rows"] == shard_rows for s in folder.shards[:-1])
    _same(folder.load(), load_xc(path, cache=False))
    gz = tmp_path / "train.txt.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    _same(convert_xc(gz, tmp_path / "gz", shard_rows=shard_rows).load(), load_xc(path, cache=False))
    _same(load_xc(tmp_path / "plain"), folder.load())  # a shard folder loads like a file


def test_pieces_of_a_file_and_of_its_shards_are_the_file(xc_file, tmp_path):
    path, _ = xc_file
    whole = load_xc(path, cache=False)
    for source in (path, convert_xc(path, tmp_path / "s", shard_rows=100).path):
        pieces = list(read_pieces(source, block_bytes=2048))
        assert len(pieces) > 2
        _same(slide.datasets.Split(sp.vstack([p.X for p in pieces]).tocsr(),
                                   sp.vstack([p.Y for p in pieces]).tocsr()), whole)


def test_a_corrupted_shard_is_refused_naming_the_file(tmp_path):
    folder = write_split(tmp_path / "s", _data(), shard_rows=200)
    shard = folder.path / folder.shards[1]["file"]
    raw = bytearray(shard.read_bytes())
    raw[-200] ^= 0x01
    shard.write_bytes(bytes(raw))
    folder = ShardFolder.open(folder.path)  # same size: found when read
    folder.read(0)
    with pytest.raises(ShardError, match=f"{shard.name} is corrupted"):
        folder.read(1)
    with pytest.raises(ShardError, match="corrupted"):
        list(Stream(folder.path, shuffle=False).segments(0))


def test_a_truncated_or_missing_shard_or_manifest_is_refused(tmp_path):
    folder = write_split(tmp_path / "s", _data(), shard_rows=200)
    shard = folder.path / folder.shards[2]["file"]
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(ShardError, match="truncated or replaced"):
        ShardFolder.open(folder.path)
    shard.unlink()
    with pytest.raises(ShardError, match="is missing"):
        ShardFolder.open(folder.path)
    (folder.path / MANIFEST).write_text("{not json")
    with pytest.raises(ShardError, match="damaged"):
        ShardFolder.open(folder.path)
    (folder.path / MANIFEST).unlink()
    with pytest.raises(ShardError, match="no finished conversion"):
        ShardFolder.open(folder.path)


def test_a_shard_with_a_valid_checksum_but_ids_out_of_range_is_refused(tmp_path):
    folder = write_split(tmp_path / "s", _data(50), shard_rows=100)
    arrays = folder.read_arrays(0)
    bad = {k: v.copy() for k, v in arrays.items()}
    bad["x_indices"][3] = folder.num_features + 7
    entry = write_shard(folder.path / folder.shards[0]["file"], bad, folder.num_features, folder.num_labels)
    manifest = json.loads((folder.path / MANIFEST).read_text())
    manifest["shards"][0] = entry
    (folder.path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ShardError, match="outside"):
        ShardFolder.open(folder.path).read(0)


def test_conversion_never_deletes_a_users_files_or_writes_over_its_source(xc_file, tmp_path):
    path, _ = xc_file
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not shards"):
        convert_xc(path, busy)
    assert (busy / "notes.txt").read_text() == "mine"
    with pytest.raises(ValueError, match="source file"):
        convert_xc(path, tmp_path)


def test_a_conversion_killed_midway_is_never_trusted_and_converting_again_completes(xc_file, tmp_path):
    path, d = xc_file
    out = tmp_path / "shards"
    code = (
        "import os, signal, sys\n"
        "from slide.datasets import convert_xc\n"
        "def kill(done, total):\n"
        "    if done >= 300: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"convert_xc({str(path)!r}, {str(out)!r}, shard_rows=50, block_bytes=4096, on_progress=kill)\n")
    # Run away from the checkout so that the installed package, not the source folder, is imported.
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # The shards went into a build beside the folder (folder_swap), which never becomes the folder.
    builds = list(tmp_path.glob(".shards.build-*"))
    assert len(builds) == 1 and list(builds[0].glob("part-*.shard")) and not (builds[0] / MANIFEST).exists()
    assert not out.exists()
    with pytest.raises(ShardError, match="no finished conversion"):
        ShardFolder.open(builds[0])
    with pytest.raises(FileNotFoundError):
        Stream(out)
    _same(convert_xc(path, out, shard_rows=50).load(), load_xc(path, cache=False))
    assert not list(out.glob(".*.tmp")) and not list(tmp_path.glob(".shards.*"))  # the dead build is gone too


def test_the_load_cache_is_a_shard_folder_and_a_stale_one_is_replaced(xc_file):
    path, d = xc_file
    first = load_xc(path)
    cache = path.with_name(path.name + ".shards")
    assert (cache / MANIFEST).exists()
    _same(load_xc(path), first)
    smaller = _data(300, seed=4)
    write_xc(path, smaller.X, smaller.Y)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    assert len(load_xc(path)) == 300 and ShardFolder.open(cache).num_points == 300


# ---------------------------------------------------------------- the stream
def test_prefetch_raises_the_producers_error_and_stops_it_when_closed():
    def failing():
        yield 1
        raise RuntimeError("boom")

    it = prefetched(failing())
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="boom"):
        next(it)
    produced = []

    def endless():
        for i in range(10**9):
            produced.append(i)
            yield i

    it = prefetched(endless(), depth=2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()
    n = len(produced)
    assert n <= 6 and len(produced) == n


@pytest.mark.parametrize("batch_size", [1, 32, 250])
def test_a_shuffled_stream_visits_every_point_once_per_epoch_in_whole_batches(tmp_path, batch_size):
    d = _data()
    folder = write_split(tmp_path / "s", d, shard_rows=90)
    stream = Stream(folder.path, seed=5)
    key = lambda X: np.asarray(X.multiply(np.arange(1, 401)).sum(axis=1)).ravel()  # noqa: E731
    epochs = []
    for epoch in (0, 1):
        segments = list(stream.segments(epoch, batch_size=batch_size))
        assert all(len(s.order) % batch_size == 0 for s in segments[:-1])
        seen = np.concatenate([key(s.data.X[s.order]) for s in segments])
        np.testing.assert_allclose(np.sort(seen), np.sort(key(d.X)), rtol=1e-6)
        epochs.append(seen)
    assert not np.allclose(epochs[0], epochs[1])  # a new order every epoch
    again = np.concatenate([key(s.data.X[s.order]) for s in Stream(folder.path, seed=5).segments(0, batch_size=batch_size)])
    np.testing.assert_array_equal(again, epochs[0])  # seeded


def test_a_stream_resumed_at_any_segment_trains_the_rows_it_would_have(tmp_path):
    folder = write_split(tmp_path / "s", _data(), shard_rows=40)
    stream = Stream(folder.path, seed=2)
    stream.hold_out(np.arange(0, 700, 9))
    full = list(stream.segments(3, batch_size=64))  # batches larger than shards: rows carried across several
    for start in range(len(full)):
        resumed = list(stream.segments(3, batch_size=64, start=start))
        assert [s.index for s in resumed] == [s.index for s in full[start:]]
        for a, b in zip(resumed, full[start:]):
            assert (a.data.X[a.order] != b.data.X[b.order]).nnz == 0


def test_held_out_rows_are_returned_and_never_trained(tmp_path):
    d = _data()
    stream = Stream(write_split(tmp_path / "s", d, shard_rows=100).path, shuffle=False)
    held = np.array([3, 150, 151, 699])
    _same(stream.hold_out(held), slide.datasets.Split(d.X[held], d.Y[held]))
    assert stream.samples_per_epoch == len(d) - 4
    trained = sp.vstack([s.data.X[s.order] for s in stream.segments(0, batch_size=16)])
    keep = np.setdiff1d(np.arange(len(d)), held)
    assert (trained != d.X[keep]).nnz == 0


# ---------------------------------------------------------------- training, prediction, evaluation
def _network(**kw):
    return slide.Network(400, 120, hidden=[24], threads=1, seed=3, neighbours=0, input_dropout=0.2,
                         lr_schedule="cosine", **kw)


@pytest.mark.parametrize("mode", ["batch", "sample", "dense"])
def test_streamed_training_equals_in_memory_training_bit_for_bit_without_shuffling(tmp_path, mode):
    d = _data()
    folder = write_split(tmp_path / "s", d, shard_rows=70)  # shards that do not hold whole batches
    in_memory, streamed = _network(mode=mode), _network(mode=mode)
    in_memory.fit(d.X, d.Y, epochs=2, batch_size=32, shuffle=False, progress=False)
    history = streamed.fit(Stream(folder.path, shuffle=False), epochs=2, batch_size=32, progress=False)
    assert len(history) == 2
    for name, w in in_memory.weights().items():
        np.testing.assert_array_equal(streamed.weights()[name], w, err_msg=name)


def test_the_run_loop_streams_resumes_mid_epoch_and_matches_the_run_in_memory(tmp_path, monkeypatch):
    d, test = _data(), _data(100, seed=8)
    folder = write_split(tmp_path / "s", d, shard_rows=70)
    settings = lambda: runs.RunSettings(epochs=2, batch_size=32, eval_every=160, eval_samples=50,  # noqa: E731
                                        checkpoint_every=1e9, progress=False)
    reference = _network()
    (tmp_path / "mem").mkdir()
    runs.run(reference, runs.in_memory_source(reference, d, 0, shuffle=False), test, tmp_path / "mem", settings())

    net = _network()
    (tmp_path / "run").mkdir()
    calls, original = {"n": 0}, slide.Network.evaluate

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:  # in the middle of the first epoch's shards
            raise KeyboardInterrupt
        return original(self, *a, **k)

    monkeypatch.setattr(slide.Network, "evaluate", flaky)
    stream = lambda n: runs.streamed_source(n, Stream(folder.path, shuffle=False), 32)  # noqa: E731
    with pytest.raises(TrainingInterrupted):
        runs.run(net, stream(net), test, tmp_path / "run", settings())
    monkeypatch.setattr(slide.Network, "evaluate", original)
    resumed, pos = runs.load_checkpoint(tmp_path / "run")
    assert 0 < pos.segment and 0 < pos.samples < len(d)
    runs.run(resumed, stream(resumed), test, tmp_path / "run", settings(), pos)
    for name, w in reference.weights().items():
        np.testing.assert_array_equal(resumed.weights()[name], w, err_msg=name)


def test_fit_on_pieces_and_its_refusals():
    d = _data()
    net = slide.Network(400, 120, hidden=[16], threads=1, seed=0, neighbours=0)
    net.fit([(d.X[:300], d.Y[:300]), (d.X[300:], d.Y[300:])], epochs=2, progress=False)
    with pytest.raises(ValueError, match="trains one epoch"):
        net.fit(((d.X, d.Y) for _ in range(3)), epochs=2)
    with pytest.raises(ValueError, match="pass its labels as Y"):
        net.fit(d.X)
    with pytest.raises(ValueError, match="not an \\(X, Y\\) pair"):
        net.fit([d.X], epochs=1, progress=False)
    scheduled = slide.Network(400, 120, hidden=[16], threads=1, seed=0, lr_schedule="linear")
    with pytest.raises(ValueError, match="lr_schedule_steps"):
        scheduled.fit([(d.X, d.Y)])


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "slide", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_cli_trains_streamed_like_in_memory_and_predicts_and_evaluates_a_piece_at_a_time(tmp_path):
    d = _data(900, seed=2)
    write_xc(tmp_path / "train.txt", d.X[:800], d.Y[:800])
    write_xc(tmp_path / "test.txt", d.X[800:], d.Y[800:])
    common = ["--test", "test.txt", "--epochs", "2", "--threads", "1", "--quiet", "--set", "shuffle=false",
              "--validation-split", "0"]
    mem = _cli("train", "--train", "train.txt", *common, "--out", "mem", cwd=tmp_path)
    assert mem.returncode == 0, mem.stderr
    conv = _cli("data", "convert", "train.txt", "shards", "--shard-rows", "70", cwd=tmp_path)
    assert conv.returncode == 0 and "800 points into 12 shards" in conv.stdout, conv.stderr
    streamed = _cli("train", "--train", "shards", "--stream", *common, "--out", "streamed", cwd=tmp_path)
    assert streamed.returncode == 0, streamed.stderr
    assert "streamed from 12 shards" in streamed.stdout
    a, b = (slide.Network.load(tmp_path / r / "model.npz") for r in ("mem", "streamed"))
    for name, w in a.weights().items():
        np.testing.assert_array_equal(b.weights()[name], w, err_msg=name)
    assert json.loads((tmp_path / "streamed" / "config.json").read_text())["stream"] is True
    shutil.rmtree(tmp_path / "train.txt.shards")  # the in-memory run's load cache
    from_file = _cli("train", "--train", "train.txt", "--stream", *common, "--out", "from-file", cwd=tmp_path)
    assert from_file.returncode == 0 and "converting" in from_file.stdout, from_file.stderr
    assert ShardFolder.open(tmp_path / "train.txt.shards").num_points == 800  # converted once, beside the file
    for name, w in a.weights().items():  # 65,536-point shards: one shard, the same training
        np.testing.assert_array_equal(slide.Network.load(tmp_path / "from-file" / "model.npz").weights()[name], w)

    pred = _cli("predict", "streamed", "test.txt", "-k", "3", "--out", "top3.txt", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    ids, _ = b.predict(load_xc(tmp_path / "test.txt", cache=False).X, k=3)
    written = [[int(t.split(":")[0]) for t in line.split()] for line in (tmp_path / "top3.txt").read_text().splitlines()]
    assert written == ids.tolist()
    ev = _cli("evaluate", "streamed", "--test", "test.txt", "--json", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    test = load_xc(tmp_path / "test.txt", cache=False)
    expected = b.evaluate(test.X, test.Y)
    got = json.loads(ev.stdout.strip().splitlines()[-1])
    assert got == pytest.approx(expected, abs=1e-12)


def test_training_data_that_would_not_fit_streams_by_itself(tmp_path, monkeypatch, capsys):
    from slide.cli import sources

    d = _data()
    write_xc(tmp_path / "train.txt", d.X, d.Y)
    monkeypatch.setattr(sources, "available_bytes", lambda: (1000, "a test's limit"))
    cfg = {"train_file": str(tmp_path / "train.txt"), "test_file": str(tmp_path / "train.txt")}
    assert sources.should_stream(cfg) and cfg["stream"] is True
    assert "streaming the training data" in capsys.readouterr().out
    monkeypatch.setattr(sources, "available_bytes", lambda: (10**12, "plenty"))
    assert not sources.should_stream({"train_file": str(tmp_path / "train.txt")})
