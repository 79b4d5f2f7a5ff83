"""matmul="bf16": the output layer's three matrix products per batch (batch and dense modes) round
their inputs to BF16 and sum in fp32 where the CPU has AVX-512 BF16, and stay fp32 elsewhere."""

import os
import subprocess
import sys

import numpy as np
import pytest

import slide
from slide import _core
from slide.datasets import make_train_test

NATIVE = _core.bf16_matmul_native()
needs_native = pytest.mark.skipif(not NATIVE, reason="this CPU has no AVX-512 BF16 or AMX: matmul='bf16' runs fp32 here")


def _bf16(w: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(w, dtype=np.float32).ravel()
    return _core._kernel_from_bf16("scalar", _core._kernel_to_bf16("scalar", flat)).reshape(w.shape).astype(np.float64)


def run_under_avx2(code: str) -> list[str]:
    """The words `code` prints, run in a fresh interpreter at SLIDE_SIMD=avx2 (no BF16 products)."""
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, SLIDE_SIMD="avx2"), capture_output=True,
                       text=True, cwd=os.path.expanduser("~"), timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


@pytest.fixture(scope="module")
def problem():
    return make_train_test(3000, 600, 400, 33, seed=5, avg_nnz=20, avg_labels=2)


def _one_sgd_step(problem, matmul, mode, lsh=None, outputs=33):
    """Every parameter's change in one SGD step of a fresh network of odd widths (hidden 9, odd
    outputs, a batch of 7), and the batch's loss."""
    train, _ = problem
    kw = dict(mode=mode) if lsh is None else dict(lsh=lsh)
    net = slide.Network(400, outputs, hidden=(9,), optimizer="sgd", learning_rate=0.5, matmul=matmul, threads=1, seed=3,
                        **kw)
    Y = train.Y[:7].tocsr().copy()
    Y.resize((7, outputs))  # the same labels in a wider layer
    data = net.prepare(train.X[:7], Y)
    before = {name: w.copy() for name, w in net.weights().items()}  # weights() are views
    stats = net._core.train_batch(data.X.indptr, data.X.indices, data.X.data, data.Y.indptr, data.Y.indices,
                                  np.arange(7, dtype=np.int64), 0.5, apply=True)
    after = net.weights()
    return {name: after[name] - before[name] for name in ("input.weight", "input.bias.weight", "layers.0.weight",
                                                          "layers.0.bias")}, stats["loss"]


@needs_native
@pytest.mark.parametrize("mode, lsh, outputs", [
    ("dense", None, 33),
    ("dense", None, 8197),  # two chunks of outputs (8,192 and an odd 5): dL/dh accumulates over them
    ("batch", slide.LSHConfig(k=2, l=8, batch_active=33, min_active=33), 33)])
def test_one_step_is_the_fp32_step_up_to_bf16_rounding(problem, mode, lsh, outputs):
    """The three products (logits, dL/dW, dL/dh) read rounded operands: every parameter's step
    (output weights and bias, the embedding below through dL/dh) is the fp32 step within BF16's
    relative precision, and not equal to it; with a dense layer updated in place and with a sampled
    one whose rows are gathered, at odd hidden width, batch and output count. A transposed or
    misaligned operand would move steps by their own size."""
    steps, loss = {}, {}
    for matmul in ("fp32", "bf16"):
        steps[matmul], loss[matmul] = _one_sgd_step(problem, matmul, mode, lsh, outputs)
    assert loss["bf16"] == pytest.approx(loss["fp32"], rel=1e-2) and loss["bf16"] != loss["fp32"]
    for name, exact in steps["fp32"].items():
        scale = np.abs(exact).max()
        assert scale > 0, name
        np.testing.assert_allclose(steps["bf16"][name], exact, rtol=0, atol=2e-2 * scale, err_msg=name)
    assert any((steps["bf16"][n] != steps["fp32"][n]).any() for n in steps["fp32"])


@pytest.mark.parametrize("mode, lsh", [("dense", None),
                                       ("batch", slide.LSHConfig(k=2, l=8, batch_active=8, min_active=16))])
def test_bf16_matmul_trains_to_the_fp32_band(mode, lsh):
    train, test = make_train_test(4000, 1000, 1000, 2000, seed=2, avg_nnz=30, avg_labels=2)
    p1, weights = {}, {}
    for matmul in ("fp32", "bf16"):
        kw = dict(mode=mode) if lsh is None else dict(lsh=lsh)
        net = slide.Network(1000, 2000, hidden=(63,), matmul=matmul, threads=1, seed=0, **kw)
        net.fit(train.X, train.Y, epochs=3, batch_size=63, progress=False)
        p1[matmul] = net.evaluate(test.X, test.Y)["P@1"]
        weights[matmul] = net.weights()["layers.0.weight"]
    assert p1["fp32"] > 0.2 and abs(p1["bf16"] - p1["fp32"]) <= 0.02, p1
    assert (weights["bf16"] != weights["fp32"]).any() == NATIVE  # fp32 where the CPU has no BF16


@pytest.mark.skipif("avx2" not in slide.available_simd_levels(), reason="this CPU cannot run avx2")
def test_bf16_matmul_is_fp32_on_a_cpu_without_bf16():
    """Under SLIDE_SIMD=avx2 the setting changes nothing: the same seed trains the same weights."""
    code = ("import numpy as np, slide; from slide.datasets import make_train_test\n"
            "tr, _ = make_train_test(500, 10, 300, 40, seed=1, avg_nnz=10, avg_labels=2)\n"
            "w = []\n"
            "for m in ('fp32', 'bf16'):\n"
            "    net = slide.Network(300, 40, hidden=(15,), mode='dense', matmul=m, threads=1, seed=0)\n"
            "    net.fit(tr.X, tr.Y, epochs=1, batch_size=32, progress=False)\n"
            "    w.append(net.weights()['layers.0.weight'])\n"
            "print(slide.simd_level(), bool((w[0] == w[1]).all()))\n")
    assert run_under_avx2(code) == ["avx2", "True"]


def test_matmul_is_validated_saved_and_described(tmp_path):
    with pytest.raises(ValueError, match="matmul"):
        slide.Network(10, 10, matmul="fp16")
    net = slide.Network(10, 10, mode="dense", matmul="bf16")
    assert "bf16 matmul" in repr(net)
    net.save(tmp_path / "m.npz")
    assert slide.Network.load(tmp_path / "m.npz").matmul == "bf16"
