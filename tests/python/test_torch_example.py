"""examples/torch_extreme_output.py runs on XC files and learns (an encoder + ExtremeOutput in a
plain PyTorch loop)."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch", reason='slide.torch needs torch: pip install "slide[torch]"')

from slide.datasets import make_train_test, write_xc  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch_extreme_output.py"


def _example():
    spec = importlib.util.spec_from_file_location("torch_extreme_output", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_trains_on_xc_files_and_beats_chance(tmp_path):
    train, test = make_train_test(3_000, 400, 1_000, 200, seed=1, avg_nnz=20.0, avg_labels=1.0)
    write_xc(tmp_path / "train.txt", train.X, train.Y)
    write_xc(tmp_path / "test.txt", test.X, test.Y)
    lines = []
    scores = _example().train(tmp_path / "train.txt", tmp_path / "test.txt", epochs=3, hidden=32, log=lines.append)
    assert len(lines) == 3 and lines[-1].startswith("epoch 3:")
    assert scores["P@1"] > 0.15  # chance is 1 in 200; 3 epochs at lr 1e-3 give about 0.23
