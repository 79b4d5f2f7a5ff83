"""Every SIMD level the CPU offers against the scalar reference, over awkward lengths."""

import numpy as np
import pytest

import slide
from slide import _core

LENGTHS = [1, 2, 7, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129, 1000]
RUNNABLE = [lvl for lvl in _core.available_simd_levels() if lvl != "scalar"]
# Every level this build has kernels for: one this CPU cannot run is reported as skipped, never left out.
LEVELS = [pytest.param(lvl, marks=pytest.mark.skipif(lvl not in RUNNABLE, reason=f"this CPU cannot run {lvl}"))
          for lvl in _core.built_simd_levels() if lvl != "scalar"]


def test_every_runnable_level_is_a_built_one():
    built = slide.built_simd_levels()
    assert built[0] == "scalar" and len(set(built)) == len(built)
    assert [lvl for lvl in built if lvl in slide.available_simd_levels()] == slide.available_simd_levels()


def test_scalar_and_chosen_level_are_reported():
    assert "scalar" in slide.available_simd_levels()
    assert slide.simd_level() in slide.available_simd_levels()


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
def test_bf16_matmul_is_native_on_the_bf16_levels_only(level):
    assert _core.bf16_matmul_native(level) == (level in ("avx512_bf16", "amx_bf16"))
    assert _core.bf16_matmul_native() == _core.bf16_matmul_native(slide.simd_level())


def test_bf16_matmul_native_refuses_an_unknown_level():
    with pytest.raises(ValueError, match="unknown SIMD level"):
        _core.bf16_matmul_native("avx9000")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", LENGTHS)
def test_dot(level, n):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ref = _core._kernel_dot("scalar", a, b)
    assert _core._kernel_dot(level, a, b) == pytest.approx(ref, rel=1e-5, abs=1e-5 * np.sqrt(n))
    assert ref == pytest.approx(float(a.astype(np.float64) @ b), rel=1e-4, abs=1e-4 * np.sqrt(n))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", LENGTHS)
def test_axpy(level, n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    y_ref, y_simd = y.copy(), y.copy()
    _core._kernel_axpy("scalar", 0.37, x, y_ref)
    _core._kernel_axpy(level, 0.37, x, y_simd)
    np.testing.assert_allclose(y_simd, y_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y_ref, y + np.float32(0.37) * x, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", LENGTHS)
def test_adam_and_sgd(level, n):
    rng = np.random.default_rng(n)
    w, m, v, g = (rng.standard_normal(n).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    ref = [a.copy() for a in (w, m, v, g)]
    got = [a.copy() for a in (w, m, v, g)]
    _core._kernel_adam("scalar", *ref, 1e-2, 0.9, 0.999, 1e-8, 0.5)
    _core._kernel_adam(level, *got, 1e-2, 0.9, 0.999, 1e-8, 0.5)
    for r, s in zip(ref, got):
        np.testing.assert_allclose(s, r, rtol=1e-5, atol=1e-6)
    assert not ref[3].any() and not got[3].any(), "the gradient accumulator must be zeroed"
    # Adam by hand, in float64.
    gs = g.astype(np.float64) * 0.5
    m1 = 0.9 * m + 0.1 * gs
    v1 = 0.999 * v + 0.001 * gs * gs
    np.testing.assert_allclose(ref[0], w - 1e-2 * m1 / (np.sqrt(v1) + 1e-8), rtol=1e-4, atol=1e-5)

    w2, g2 = w.copy(), g.copy()
    w3, g3 = w.copy(), g.copy()
    _core._kernel_sgd("scalar", w2, g2, 0.1)
    _core._kernel_sgd(level, w3, g3, 0.1)
    np.testing.assert_allclose(w3, w2, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w2, w - np.float32(0.1) * g, rtol=1e-6, atol=1e-6)
    assert not g2.any() and not g3.any()


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
def test_adam_steps_by_the_exact_quotient_at_every_value_of_v(level):
    """Each level's step within 1e-6 of the exact lr * m / (sqrt(v) + eps) (the moments as float32
    keeps them) over v from 1e-35 to 1e35; v = 0 steps by m / eps; a subnormal, infinite or NaN v
    gives what exact division gives, and a NaN gradient a NaN weight the divergence check sees."""
    rng = np.random.default_rng(7)
    n = 16 * 6 + 5  # whole 16- and 8-lane vectors, then a tail
    w = rng.standard_normal(n).astype(np.float32)
    m = rng.standard_normal(n).astype(np.float32)
    v = np.exp(rng.uniform(-80, 80, n)).astype(np.float32)  # 1e-35 to 1e35: every decade
    g = rng.standard_normal(n).astype(np.float32) * np.exp(rng.uniform(-20, 20, n)).astype(np.float32)
    g[:4], v[:4] = 0.0, 0.0  # never stepped: v stays 0
    v[20], g[20] = 1e-40, 0.0  # subnormal, in the second 16-lane vector
    v[40], g[40] = np.inf, 0.0  # infinite, in the third
    g[70] = np.nan  # NaN, in the fifth
    lr, b1, b2, eps, scale = 1e-2, 0.9, 0.999, 1e-8, 0.5
    got = [a.copy() for a in (w, m, v, g)]
    _core._kernel_adam(level, *got, lr, b1, b2, eps, scale)
    # The moments in float32 as the kernels keep them (1 - 0.999 is 1.3e-5 off in float32), the
    # division by sqrt(v) + eps exact, in float64.
    f32 = np.float32
    with np.errstate(invalid="ignore", over="ignore"):
        gs = g * f32(scale)
        m1 = (f32(b1) * m + (f32(1) - f32(b1)) * gs).astype(np.float64)
        v1 = (f32(b2) * v + (f32(1) - f32(b2)) * gs * gs).astype(np.float64)
        want = w - f32(lr) * m1 / (np.sqrt(v1) + f32(eps))
    np.testing.assert_allclose(got[1], m1, rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(got[2], v1, rtol=1e-6, atol=1e-44)
    finite = np.isfinite(want)
    assert np.isnan(got[0][~finite]).all() and (~finite).sum() == 1  # the NaN gradient's weight only
    step, want_step = (w - got[0])[finite].astype(np.float64), (w - want)[finite]
    ulp = np.spacing(np.abs(w[finite]).astype(np.float32)).astype(np.float64)
    np.testing.assert_array_less(np.abs(step - want_step), 8 * ulp + 1e-6 * np.abs(want_step))
    assert got[0][40] == w[40] and got[0][20] != w[20]  # m / inf moves nothing; a subnormal v steps by m / eps
    np.testing.assert_allclose(got[0][:4], w[:4] - np.float32(lr) * (b1 * m[:4]) / np.float32(eps), rtol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", LENGTHS)
def test_adagrad(level, n):
    rng = np.random.default_rng(n)
    w, acc, g = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    acc = np.abs(acc)
    ref = [a.copy() for a in (w, acc, g)]
    got = [a.copy() for a in (w, acc, g)]
    _core._kernel_adagrad("scalar", *ref, 1e-2, 1e-8, 0.5)
    _core._kernel_adagrad(level, *got, 1e-2, 1e-8, 0.5)
    for r, s in zip(ref, got):
        np.testing.assert_allclose(s, r, rtol=1e-5, atol=1e-6)
    assert not ref[2].any() and not got[2].any(), "the gradient accumulator must be zeroed"
    gs = g.astype(np.float64) * 0.5  # Adagrad by hand, in float64
    acc1 = acc + gs * gs
    np.testing.assert_allclose(ref[1], acc1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ref[0], w - 1e-2 * gs / (np.sqrt(acc1) + 1e-8), rtol=1e-4, atol=1e-5)


def _bf16_reference(x: np.ndarray) -> np.ndarray:
    """Round to nearest even; NaN -> quiet NaN; subnormals -> signed zero (vcvtneps2bf16's rules)."""
    b = x.view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    sub = (b & 0x7F800000) == 0
    out = np.where(nan, (b >> 16) | 0x40, np.where(sub, (b >> 16) & 0x8000, rounded))
    return out.astype(np.uint16)


def _awkward_floats(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n))).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3.4e38, -3.4e38, 1.0 + 2**-8,
                         1.0 + 3 * 2**-8, 1.0 + 2**-9, 65504.0], np.float32)
    ties = (np.arange(n, dtype=np.uint32) << 16 | 0x8000).view(np.float32)  # exactly halfway
    x[: min(n, len(specials))] = specials[: min(n, len(specials))]
    x[len(specials)::3] = ties[len(specials)::3]
    return x


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("n", [*LENGTHS, 4096])
def test_bf16_conversion_is_bit_identical_on_every_level(level, n):
    x = _awkward_floats(n, n)
    h = _core._kernel_to_bf16(level, x)
    np.testing.assert_array_equal(h, _bf16_reference(x))
    back = _core._kernel_from_bf16(level, h)
    np.testing.assert_array_equal(back.view(np.uint32), h.astype(np.uint32) << 16)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", LENGTHS)
def test_bf16_dot_and_axpy(level, n):
    rng = np.random.default_rng(n)
    a, b = (_core._kernel_to_bf16("scalar", rng.standard_normal(n).astype(np.float32)) for _ in range(2))
    exact = float(_core._kernel_from_bf16("scalar", a).astype(np.float64) @ _core._kernel_from_bf16("scalar", b))
    ref = _core._kernel_dot_bf16("scalar", a, b)
    # BF16 products are exact in fp32; only the fp32 accumulation order differs between levels.
    assert ref == pytest.approx(exact, rel=1e-4, abs=1e-5 * n)
    assert _core._kernel_dot_bf16(level, a, b) == pytest.approx(exact, rel=1e-4, abs=1e-5 * n)
    y = rng.standard_normal(n).astype(np.float32)
    y_ref, y_simd = y.copy(), y.copy()
    _core._kernel_axpy_bf16("scalar", 0.37, a, y_ref)
    _core._kernel_axpy_bf16(level, 0.37, a, y_simd)
    np.testing.assert_allclose(y_simd, y_ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y_ref, y + np.float32(0.37) * _core._kernel_from_bf16("scalar", a), rtol=1e-6,
                               atol=1e-6)


GEMM_SIZES = [1, 15, 16, 17, 31, 33, 127, 129]


def _gemm_against_scalar(level, m, n, k, spare_columns=0):
    """`level`'s GEMM against the scalar code, fresh and accumulating, into a C with
    `spare_columns` beyond n that must come back untouched; returns (a, b, c0, scalar results)."""
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c0 = rng.standard_normal((m, n + spare_columns)).astype(np.float32)
    tol = 1e-5 * np.sqrt(k + 1)
    refs = []
    for accumulate in (False, True):
        ref, got = c0.copy(), c0.copy()
        _core._kernel_gemm("scalar", a, b, ref, accumulate)
        _core._kernel_gemm(level, a, b, got, accumulate)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=tol)
        assert (got[:, n:] == c0[:, n:]).all()
        refs.append(ref)
    return a, b, c0, refs


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("m", [1, 5, 6, 7, 13])
@pytest.mark.parametrize("n", GEMM_SIZES)
@pytest.mark.parametrize("k", [0, 1, 17, 129, 300])
def test_gemm(level, m, n, k):
    """Every level against the scalar code and against float64, fresh and accumulating; k = 300
    crosses the 256-deep cache block, n = 129 a 32-wide tile edge, m = 7 and 13 a 6-row strip."""
    a, b, c0, (fresh, accumulated) = _gemm_against_scalar(level, m, n, k)
    exact, tol = a.astype(np.float64) @ b, 1e-4 * np.sqrt(k + 1)
    np.testing.assert_allclose(fresh, exact, rtol=1e-4, atol=tol)
    np.testing.assert_allclose(accumulated, exact + c0, rtol=1e-4, atol=tol)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("m, n, k", [(12, 257, 1), (13, 300, 129), (40, 529, 300), (11, 600, 64)])
def test_gemm_packed_panels(level, m, n, k):
    """B wider than a 256-column panel (as the logits product reads its transposed weights) with
    at least 12 rows of A is packed into contiguous strips first: against the scalar code, with
    ragged last strips and panels, a depth that crosses the 256-deep block, and 11 rows (read in place)."""
    _gemm_against_scalar(level, m, n, k, spare_columns=3)


def _k_pairs(b):
    """B (k x n, k even) in k-pairs, the BF16 GEMM's layout: row p holds B[2p][j], B[2p + 1][j] at
    2j, 2j + 1."""
    k, n = b.shape
    return np.ascontiguousarray(b.reshape(k // 2, 2, n).transpose(0, 2, 1).reshape(k // 2, 2 * n))


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("m, n, k", [(1, 1, 2), (5, 15, 16), (6, 32, 128), (7, 33, 130), (13, 129, 64),
                                     (12, 300, 600), (40, 529, 2), (11, 600, 64), (3, 17, 0),
                                     # amx_bf16's 32 x 32 blocks of 16 x 16 tiles, 32 deep: whole, and cut
                                     # by the rows, the columns and the depth each
                                     (32, 32, 32), (64, 96, 128), (48, 40, 66), (70, 17, 160), (16, 50, 34)])
def test_gemm_bf16(level, m, n, k):
    """The BF16 GEMM against the scalar code and against float64 on the BF16 values (each product
    is exact, so only the fp32 sums round), fresh and accumulating, with C's spare columns left
    alone: ragged tiles, 6-row strips, packed panels (n > 256 with 12+ rows), depths past the
    256-pair block."""
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    to_bf16 = lambda x: _core._kernel_to_bf16("scalar", x.astype(np.float32).ravel()).reshape(x.shape)
    a, b = to_bf16(rng.standard_normal((m, k))), to_bf16(rng.standard_normal((k, n)))
    widen = lambda h: _core._kernel_from_bf16("scalar", h.ravel()).reshape(h.shape).astype(np.float64)
    exact = widen(a) @ widen(b)
    c0 = rng.standard_normal((m, n + 3)).astype(np.float32)
    tol = 1e-5 * np.sqrt(k + 1)
    for accumulate in (False, True):
        ref, got = c0.copy(), c0.copy()
        _core._kernel_gemm_bf16("scalar", a, _k_pairs(b), ref, accumulate)
        _core._kernel_gemm_bf16(level, a, _k_pairs(b), got, accumulate)
        want = exact + (c0[:, :n] if accumulate else 0)
        np.testing.assert_allclose(ref[:, :n], want, rtol=1e-5, atol=tol)
        np.testing.assert_allclose(got[:, :n], want, rtol=1e-5, atol=tol)
        assert (got[:, n:] == c0[:, n:]).all() and (ref[:, n:] == c0[:, n:]).all()


def test_gemm_bf16_refuses_an_odd_depth():
    with pytest.raises(ValueError, match="even depth"):
        _core._kernel_gemm_bf16("scalar", np.zeros((2, 3), np.uint16), np.zeros((1, 4), np.uint16),
                                np.zeros((2, 2), np.float32), False)


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("n", [1, 15, 17, 33])
def test_gemm_writes_nothing_past_the_last_column(level, n):
    """A tile narrower than the register width is masked: C's columns beyond n keep their values."""
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((7, 9)).astype(np.float32), rng.standard_normal((9, n)).astype(np.float32)
    c = np.full((7, n + 40), 5.0, np.float32)
    _core._kernel_gemm(level, a, b, c, False)
    np.testing.assert_allclose(c[:, :n], a @ b, rtol=1e-5, atol=1e-5)
    assert (c[:, n:] == 5.0).all()


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 7, 9])
@pytest.mark.parametrize("samples", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("depth", [64, 128, 192])
def test_int8_scores_are_exact(level, rows, samples, depth):
    """Every level against int64 arithmetic: odd rows and samples reach each tile edge, and the
    extremes (63 x -127 and 63 x 127 in every byte) would overflow a 16-bit sum of four pairs."""
    rng = np.random.default_rng(rows * 100 + samples * 10 + depth)
    w = rng.integers(-127, 128, (rows, depth)).astype(np.int8)
    h = rng.integers(0, 64, (samples, depth)).astype(np.uint8)
    w[0, :] = -127
    h[0, :] = 63
    if rows > 1:
        w[1, :] = 127
    exact = w.astype(np.int64) @ h.astype(np.int64).T
    np.testing.assert_array_equal(_core._kernel_int8_scores(level, w, h), exact)


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("width", [1, 7, 8, 9, 15, 16, 17, 33, 128, 256, 300])
def test_int8_quantize_rounds_every_weight_as_the_scalar_level_does(level, width):
    """Every level's bytes and maxima equal the scalar level's, bit for bit: a row of random
    weights, one of exact ties (x.5 steps, rounded to even), one of zeros, one whose largest
    weight is negative, and one with a NaN or an inf (l1 not finite). The bytes lie within half a
    step of each weight, as the scan's bound needs, and l1 is the sum of |w|."""
    rng = np.random.default_rng(width)
    w = rng.normal(size=(6, width)).astype(np.float32)
    w[1] = (np.arange(width) % 7 - 3.5).astype(np.float32)
    w[1, 0] = 127.0  # the step is then 1: the .5 values are exact ties
    w[2] = 0.0
    w[3] = np.abs(w[3])
    w[3, width // 2] = -10.0
    w[4, width - 1], w[5, 0] = np.nan, np.inf
    got, top, l1 = _core._kernel_int8_quantize(level, w)
    want, want_top, _ = _core._kernel_int8_quantize("scalar", w)
    finite = np.all(np.isfinite(w), axis=1)
    np.testing.assert_array_equal(got[finite], want[finite])
    np.testing.assert_array_equal(top[finite], want_top[finite])
    np.testing.assert_allclose(l1[finite], np.abs(w[finite]).astype(np.float64).sum(axis=1), rtol=1e-5)
    assert not np.any(np.isfinite(l1[~finite]))
    assert np.all(np.abs(got[finite]) <= 127) and got[1, 0] == 127
    if width > 1:
        np.testing.assert_array_equal(got[1, 1:8], [-2, -2, 0, 0, 2, 2, -4][:min(7, width - 1)])
    step = np.where(top > 0, top / 127, 1.0)[:, None]
    assert np.all(np.abs(w[finite] - step[finite] * got[finite]) <= step[finite] * (0.5 + 1e-6))


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 31, 128, 133])
def test_int8_upper_bounds_and_their_hit(level, n):
    """Every level's bounds against float64, and the hit flag when exactly one sample (the
    first, the last, or one in a SIMD tail) reaches its bar, or none does, or a bound is NaN."""
    rng = np.random.default_rng(n)
    acc = rng.integers(-200_000, 200_000, n).astype(np.int32)
    step, term, half = (rng.uniform(0.001, 0.1, n).astype(np.float32) for _ in range(3))
    want = 0.3 * (acc * step.astype(np.float64) + term) + (1.5 + 2.0 * half)
    for reaching in (None, 0, n - 1, n // 2):
        bar = (want + np.abs(want) * 1e-3 + 1e-3).astype(np.float32)
        if reaching is not None:
            bar[reaching] = want[reaching] - abs(want[reaching]) * 1e-3 - 1e-3
        hit, upper = _core._kernel_int8_upper(level, acc, step, term, half, 0.3, 1.5, 2.0, bar)
        np.testing.assert_allclose(upper, want, rtol=1e-5, atol=1e-4)
        assert hit == (reaching is not None)
    step[-1] = np.nan
    assert _core._kernel_int8_upper(level, acc, step, term, half, 0.3, 1.5, 2.0, np.full(n, np.inf, np.float32))[0]


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 17, 128, 133])
def test_add_bias_hits_adds_and_lists_the_samples_that_reach(level, n):
    """Every level adds the bias exactly as the scalar code does and lists, in order, the samples
    that reach their bar: none, one (the first, the last, one in a SIMD tail), ties, NaN, or all."""
    rng = np.random.default_rng(n)
    scores = rng.normal(size=n).astype(np.float32)
    want = scores + np.float32(0.37)
    cases = [[], [0], [n - 1], [n // 2], sorted({0, n // 3, n - 1}), list(range(n))]
    for reaching in cases:
        bar = want + np.float32(1.0)
        bar[reaching] = want[reaching]  # equal reaches: a tie may still win on its id
        hits, out = _core._kernel_add_bias_hits(level, scores, 0.37, bar)
        np.testing.assert_array_equal(out, want)
        assert hits.tolist() == sorted(set(reaching))
    scores[-1] = np.nan
    assert _core._kernel_add_bias_hits(level, scores, 0.37, np.full(n, np.inf, np.float32))[0].tolist() == [n - 1]


def test_int8_scores_refuse_values_outside_their_contract():
    w, h = np.zeros((2, 64), np.int8), np.zeros((3, 64), np.uint8)
    with pytest.raises(ValueError, match="multiple of 64"):
        _core._kernel_int8_scores("scalar", w[:, :32], h[:, :32])
    with pytest.raises(ValueError, match="at most 63"):
        _core._kernel_int8_scores("scalar", w, h + 64)
    with pytest.raises(ValueError, match="within"):
        _core._kernel_int8_scores("scalar", np.full((2, 64), -128, np.int8), h)


def test_unknown_level_is_a_value_error():
    with pytest.raises(ValueError, match="unknown SIMD level"):
        _core._kernel_dot("avx9000", np.ones(3, np.float32), np.ones(3, np.float32))


def _simd_level_in_subprocess(value):
    import os
    import subprocess
    import sys

    env = dict(os.environ, SLIDE_SIMD=value)
    code = "import warnings, slide; print(slide.simd_level())"
    return subprocess.run([sys.executable, "-W", "always", "-c", code], env=env, capture_output=True, text=True,
                          cwd=os.path.expanduser("~"), timeout=60)


def test_slide_simd_override_selects_the_level():
    r = _simd_level_in_subprocess("scalar")
    assert r.returncode == 0 and r.stdout.strip() == "scalar", r.stderr


def test_unknown_slide_simd_value_warns_and_falls_back():
    r = _simd_level_in_subprocess("avx9000")
    assert r.returncode == 0 and r.stdout.strip() == slide.available_simd_levels()[-1]  # the best
    assert "SLIDE_SIMD='avx9000'" in r.stderr


def test_training_with_scalar_kernels_lands_in_the_same_band():
    """Same seed, threads=1: the scalar build of every kernel trains to the same P@1 band."""
    import os
    import subprocess
    import sys

    code = ("import slide; from slide.datasets import make_train_test\n"
            "tr, te = make_train_test(4000, 1000, 1000, 2000, seed=2, avg_nnz=30, avg_labels=2)\n"
            "net = slide.Network(1000, 2000, hidden=(64,), lsh=slide.LSHConfig(k=3, l=20), threads=1, seed=0)\n"
            "net.fit(tr.X, tr.Y, epochs=3, batch_size=64, progress=False)\n"
            "print(slide.simd_level(), net.evaluate(te.X, te.Y)['P@1'])\n")
    results = {}
    for level in ("scalar", slide.simd_level()):
        r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, SLIDE_SIMD=level), capture_output=True,
                           text=True, cwd=os.path.expanduser("~"), timeout=300)
        assert r.returncode == 0, r.stderr
        name, p1 = r.stdout.split()
        results[name] = float(p1)
    assert min(results.values()) > 0.2, results
    assert max(results.values()) - min(results.values()) <= 0.03, results


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", [*LENGTHS, 4096])
def test_softmax_max_and_exp_sum(level, n):
    """The softmax kernels against libm (the scalar level) within a few ulp, over the whole float
    range that matters: deep underflow, the overflow edge, and the usual logits."""
    rng = np.random.default_rng(n)
    x = np.concatenate([rng.uniform(-110, 95, n // 2), rng.standard_normal(n - n // 2) * 5]).astype(np.float32)
    rng.shuffle(x)
    assert _core._kernel_max_value(level, x) == _core._kernel_max_value("scalar", x) == x.max()
    for shift in (0.0, float(x.max()), -3.5):
        y_ref, s_ref = _core._kernel_exp_sum("scalar", x, shift)
        y, s = _core._kernel_exp_sum(level, x, shift)
        exact = np.exp((x - np.float32(shift)).astype(np.float64))  # the subtraction rounds in fp32 first
        finite = exact < 3.4e38
        # 2^-126 and below may flush to zero; above that, a few ulp of the exact value.
        normal = finite & (exact > 1.2e-38)
        np.testing.assert_allclose(y[normal], exact[normal], rtol=4e-7)
        np.testing.assert_allclose(y_ref[normal], exact[normal], rtol=4e-7)
        assert (y[exact < 1.2e-38] <= 1.2e-38).all()
        assert np.isinf(y[~finite]).all() and np.isinf(y_ref[~finite]).all()
        assert s == pytest.approx(s_ref, rel=1e-5 * np.sqrt(n))


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
def test_softmax_kernels_on_nan_inf_and_empty(level):
    assert _core._kernel_max_value(level, np.array([], np.float32)) == -np.inf
    for n in (5, 40):
        x = np.zeros(n, np.float32)
        x[n - 2] = np.nan
        assert np.isnan(_core._kernel_max_value(level, x))
        y, s = _core._kernel_exp_sum(level, x, 0.0)
        assert np.isnan(y[n - 2]) and np.isnan(s) and (np.delete(y, n - 2) == 1.0).all()
        x = np.full(n, -np.inf, np.float32)
        x[0] = 0.0
        y, s = _core._kernel_exp_sum(level, x, 0.0)
        assert y[0] == 1.0 and (y[1:] == 0.0).all() and s == 1.0


def _hashing_input(dim, seed):
    """A hidden-layer-like vector: ReLU zeros, ties, negative zero, -inf and a NaN."""
    rng = np.random.default_rng(seed)
    x = np.maximum(rng.standard_normal(dim), 0).astype(np.float32)
    x[rng.integers(0, dim, 3)] = 0.5  # ties: the first one wins
    x[rng.integers(0, dim, 2)] = -0.0
    x[rng.integers(0, dim)] = -np.inf
    x[rng.integers(0, dim)] = np.nan
    return x


def _wta_reference(x, coords, skip):
    out = np.full(coords.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for h, window in enumerate(coords):
        best = -np.inf
        for j, c in enumerate(window):
            v = x[c]
            if v > best and not (v == skip):
                best, out[h] = v, j
    return out


@pytest.mark.parametrize("level", ["scalar", *LEVELS])
@pytest.mark.parametrize("windows", [1, 15, 16, 17, 31, 33, 127, 129])
@pytest.mark.parametrize("width", [1, 8, 13])
@pytest.mark.parametrize("dim", [128, 7, 32, 33, 64, 65, 100, 129, 300])
def test_wta_windows(level, windows, width, dim):
    """AVX-512 holds a vector of up to 32, 64 or 128 floats in registers and gathers a longer one."""
    x = _hashing_input(dim, windows * width)
    coords = np.random.default_rng(windows).integers(0, dim, (windows, width)).astype(np.uint32)
    coords[0, 0] = dim - 1  # the last coordinate, in the last register's tail
    for skip in (0.0, np.nan):  # DWTA skips exact zeros; WTA skips nothing
        expected = _wta_reference(x, coords, skip)
        np.testing.assert_array_equal(_core._kernel_wta(level, x, coords, skip), expected)
    # An all-zero window has no winner under DWTA (densification fills it later).
    zeros = np.zeros(dim, np.float32)
    assert (_core._kernel_wta(level, zeros, coords, 0.0) == 0xFFFFFFFF).all()
    assert (_core._kernel_wta(level, zeros, coords, np.nan) == 0).all()


@pytest.mark.parametrize("family", ["dwta", "wta", "simhash"])
def test_every_level_hashes_to_the_same_buckets(family):
    """The hash families through the process-wide kernels (SLIDE_SIMD fixes the level per process):
    DWTA/WTA through the gather kernel, SimHash through the GEMM; bucket ids identical on every level."""
    import os
    import subprocess
    import sys

    code = f"""
import hashlib, numpy as np, slide
from slide import _core
rng = np.random.default_rng(0)
x = np.maximum(rng.standard_normal((300, 100)), 0).astype(np.float32)  # ReLU zeros: DWTA densifies
x[:5] = 0.0
index = _core.LshIndex(slide.LSHConfig(family="{family}", k=4, l=37).to_core(), x[:50], 3)
print(slide.simd_level(), hashlib.sha1(index.buckets(x).tobytes()).hexdigest())
"""
    seen = {}
    for level in ["scalar", *RUNNABLE]:
        r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, SLIDE_SIMD=level), capture_output=True,
                           text=True, cwd=os.path.expanduser("~"), timeout=120)
        assert r.returncode == 0, r.stderr
        got_level, digest = r.stdout.split()
        assert got_level == level
        seen[level] = digest
    assert len(set(seen.values())) == 1, seen


def test_hashing_kernels_reject_coordinates_outside_the_vector():
    x = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="outside"):
        _core._kernel_wta("scalar", x, np.array([[0, 8]], np.uint32), 0.0)
