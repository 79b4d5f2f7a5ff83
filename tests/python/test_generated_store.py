"""Generated data sets kept in the data dir (slide.datasets.generated_store): drawn once, read back
identical, drawn again when the copy is damaged or foreign, and never a failure when it cannot be
written."""

import logging
import os

import numpy as np
import pytest

from slide.datasets import make_catalogue
from slide.datasets.generated_store import GENERATOR_VERSION, stored_generated
from slide.datasets.synthetic import split_at


class Maker:
    def __init__(self):
        self.calls = 0

    def __call__(self, *, n_train, n_test, seed):
        self.calls += 1
        return split_at(make_catalogue(n_train + n_test, 300, 500, seed=seed), n_train)


def same(a, b):
    for x, y in zip(a, b):
        assert (x.X != y.X).nnz == 0 and (x.Y != y.Y).nnz == 0
        assert x.X.shape == y.X.shape and x.Y.shape == y.Y.shape


def test_drawn_once_then_read_back_identical(tmp_path):
    make = Maker()
    first, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert not stored and make.calls == 1
    again, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert stored and make.calls == 1
    same(first, again)
    assert (tmp_path / "generated" / f"toy-200-50-seed1-v{GENERATOR_VERSION}" / "train").is_dir()


def test_older_generator_versions_of_the_set_are_deleted_once_it_is_stored(tmp_path):
    generated = tmp_path / "generated"
    older = [generated / f"toy-200-50-seed1-v{v}" for v in range(1, GENERATOR_VERSION)]
    other_set = generated / "toy-200-50-seed2-v1"  # another seed: another set, kept
    for folder in [*older, other_set]:
        (folder / "train").mkdir(parents=True)
    stored_generated(tmp_path, "toy", Maker(), n_train=200, n_test=50, seed=1)
    assert older and not any(os.path.lexists(folder) for folder in older)
    assert (other_set / "train").is_dir()
    assert (generated / f"toy-200-50-seed1-v{GENERATOR_VERSION}" / "train").is_dir()


def test_other_sizes_and_seeds_are_other_sets(tmp_path):
    make = Maker()
    a, _ = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    b, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=2)
    c, stored_c = stored_generated(tmp_path, "toy", make, n_train=100, n_test=50, seed=1)
    assert not stored and not stored_c and make.calls == 3
    assert (a[0].X != b[0].X).nnz > 0 and c[0].X.shape[0] == 100


def test_a_damaged_copy_is_drawn_again(tmp_path, caplog):
    make = Maker()
    first, _ = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    shard = next((tmp_path / "generated").rglob("train/part-*.shard"))
    raw = bytearray(shard.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # inside the payload: the CRC-32 no longer matches
    shard.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="slide"):
        again, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert not stored and make.calls == 2 and "unusable" in caplog.text
    same(first, again)
    _, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert stored  # and stored again, whole


def test_a_copy_of_other_data_under_the_name_is_not_trusted(tmp_path):
    make = Maker()
    stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    folder = tmp_path / "generated" / f"toy-200-50-seed1-v{GENERATOR_VERSION}"
    manifest = folder / "test" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"seed": 1', '"seed": 7'))
    _, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert not stored and make.calls == 2


def test_an_unwritable_data_dir_only_costs_time(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    make = Maker()
    with caplog.at_level(logging.WARNING, logger="slide"):
        (train, test), stored = stored_generated(blocker, "toy", make, n_train=200, n_test=50, seed=1)
    assert not stored and train.X.shape[0] == 200 and test.X.shape[0] == 50
    assert "could not keep" in caplog.text
    np.testing.assert_array_equal(train.X.indptr, make(n_train=200, n_test=50, seed=1)[0].X.indptr)


def _digest(split):
    import hashlib

    h = hashlib.sha256()
    for a in (split.X.indptr, split.X.indices, split.X.data, split.Y.indptr, split.Y.indices):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def test_the_generators_draw_what_the_stored_copies_hold():
    """Stored copies are trusted by name, so a generator whose output for a seed changes must come
    with a new GENERATOR_VERSION. If this fails: bump it, then update the digests here."""
    from slide.datasets.synthetic import make_train_test

    catalogue = make_catalogue(300, 2000, 3000, seed=5)
    synthetic, _ = make_train_test(300, 10, 2000, 3000, seed=5, avg_nnz=20, avg_labels=3)
    assert GENERATOR_VERSION == 2
    assert (_digest(catalogue), _digest(synthetic)) == ("0356b296cbb8aab0", "304b12065a2e8fda")


def test_a_copy_drawn_under_another_numpy_is_drawn_again(tmp_path, monkeypatch):
    make = Maker()
    stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    monkeypatch.setattr(np, "__version__", "0.0.1")
    _, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert not stored and make.calls == 2


def test_a_write_killed_midway_is_cleaned_up_and_never_trusted(tmp_path):
    make = Maker()
    generated = tmp_path / "generated"
    name = f"toy-200-50-seed1-v{GENERATOR_VERSION}"
    dead = generated / f"{name}.tmp-999999999"  # no such process
    (dead / "train").mkdir(parents=True)
    (dead / "train" / "part-00000.shard").write_bytes(b"half")
    _, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert not stored and not dead.exists()
    assert sorted(p.name for p in generated.iterdir()) == [name]


def test_a_set_another_run_stored_first_is_kept(tmp_path, monkeypatch):
    """Two runs drawing the same set at once: the second to finish keeps the first one's copy."""
    from slide.datasets import generated_store

    make = Maker()
    first, _ = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    folder = tmp_path / "generated" / f"toy-200-50-seed1-v{GENERATOR_VERSION}"
    real_write = generated_store.write_split

    def racing_write(path, split, **kw):  # the other run finishes while this one writes
        if not folder.exists():
            real_write(folder / "train", first[0], **kw)
            real_write(folder / "test", first[1], **kw)
        return real_write(path, split, **kw)

    (folder / "test" / "manifest.json").unlink()  # unusable: this run draws and stores again
    monkeypatch.setattr(generated_store, "write_split", racing_write)
    again, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert not stored
    monkeypatch.undo()
    read, stored = stored_generated(tmp_path, "toy", make, n_train=200, n_test=50, seed=1)
    assert stored
    same(first, read)
    assert sorted(p.name for p in folder.parent.iterdir()) == [folder.name]
