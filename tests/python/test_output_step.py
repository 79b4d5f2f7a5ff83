"""In one process a batch-shared sampled output layer steps each active row as soon as its gradient
is gathered (train/trainer.cpp, Parameters::step_row). That must be the very step the network takes
when the batch's gradients are accumulated first and every touched row is stepped afterwards (what
`apply=False` and then `output_layer_step` do, as slide.torch does): bit for bit, every weight and
every optimizer state, over several steps (Adam's bias correction counts them)."""

import numpy as np
import pytest

import slide
from slide._core import output_layer_step
from slide.datasets import make_train_test


@pytest.fixture(scope="module")
def problem():
    return make_train_test(200, 10, 300, 9000, seed=3, avg_nnz=12, avg_labels=3)[0]


@pytest.mark.parametrize("optimizer", ["adam", "adagrad", "sgd"])
@pytest.mark.parametrize("matmul,active", [("fp32", 300), ("bf16", 300), ("fp32", 8300)])
def test_stepping_rows_as_gathered_is_the_step_after_the_batch(problem, optimizer, matmul, active):
    """active 8,300: more than one chunk (8,192) of output rows per batch."""
    lsh = slide.LSHConfig(k=3, l=8, batch_active=64, min_active=active)
    nets = [slide.Network(300, 9000, hidden=(17,), lsh=lsh, optimizer=optimizer, learning_rate=0.05, matmul=matmul,
                          threads=1, seed=2) for _ in range(2)]
    data = nets[0].prepare(problem.X, problem.Y)
    args = (data.X.indptr, data.X.indices, data.X.data, data.Y.indptr, data.Y.indices)
    for step in range(3):
        rows = np.arange(step * 50, step * 50 + 50, dtype=np.int64)
        gathered = nets[0]._core.train_batch(*args, rows, 0.05, apply=True)
        nets[1]._core.train_batch(*args, rows, 0.05, apply=False)
        assert output_layer_step(nets[1]._core, 0.05, len(rows)) == gathered["nonfinite_rows"] == 0
    stepped = [net._core.state() for net in nets]
    assert set(stepped[0]) == set(stepped[1])
    for name in stepped[0]:
        np.testing.assert_array_equal(stepped[0][name], stepped[1][name], err_msg=name)
    before = slide.Network(300, 9000, hidden=(17,), lsh=lsh, optimizer=optimizer, threads=1, seed=2)._core.state()
    assert not np.array_equal(before["layers.0.weight"], stepped[0]["layers.0.weight"])  # the rows moved
