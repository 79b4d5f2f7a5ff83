import gzip

import pytest

from slide.datasets import registry
from slide.datasets.errors import DatasetNotFoundError


def test_data_dir_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("SLIDE_DATA", str(tmp_path / "env"))
    assert registry.data_dir(tmp_path / "flag") == tmp_path / "flag"
    assert registry.data_dir() == tmp_path / "env"
    monkeypatch.delenv("SLIDE_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert registry.data_dir() == tmp_path / "cache" / "slide" / "data"


def test_locate_finds_plain_gzip_and_slide_names(tmp_path):
    info = registry.get("amazon670k")
    folder = tmp_path / "amazon670k"
    folder.mkdir()
    (folder / "train.txt.gz").write_bytes(gzip.compress(b"0 1 1\n"))
    (tmp_path / "amazon_test.txt").write_text("0 1 1\n")
    train, test = registry.locate(info, tmp_path)
    assert train == folder / "train.txt.gz" and test == tmp_path / "amazon_test.txt"


def test_every_dataset_documents_its_source_and_preset():
    for name, info in registry.DATASETS.items():
        assert info.preset["lsh"] and info.preset["hidden"], name
        if info.kind != "synthetic":
            assert info.source.startswith("http"), name
    amazon = registry.get("amazon670k")
    assert amazon.stats["labels"] == 670_091 and amazon.preset["lsh"]["k"] == 6 and amazon.preset["lsh"]["l"] == 50
    assert amazon.preset["batch_size"] == 256 and amazon.preset["lsh"]["rehash_every"] == 6400


def test_missing_files_raise_one_clear_error(tmp_path):
    with pytest.raises(DatasetNotFoundError) as e:
        registry.locate(registry.get("text8"), tmp_path)
    assert "mattmahoney.net" in str(e.value) and isinstance(e.value, FileNotFoundError)
    with pytest.raises(ValueError, match="unknown dataset"):
        registry.get("imagenet")
