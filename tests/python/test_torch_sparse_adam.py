"""slide.torch.SparseAdam against torch.optim.SparseAdam: the same update on the rows a sparse
gradient names (repeats summed, no other row or moment moving), the same state (loadable into
either class), schedulers, threads, and clear errors for what it does not step."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="slide.torch needs torch: pip install \"slide[torch]\"")

from slide.torch import SparseAdam  # noqa: E402

ROWS, WIDTH = 300, 24


def _bags(seed: int, batches: int = 6, samples: int = 32) -> list:
    """Batches of (indices, offsets, weights) for an EmbeddingBag: few rows, so rows repeat within a
    batch and from batch to batch, and some rows are never touched."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(batches):
        lengths = rng.integers(1, 12, samples)
        idx = rng.integers(0, ROWS - 40, lengths.sum())  # the last 40 rows are never named
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        out.append((torch.from_numpy(idx), torch.from_numpy(offsets), torch.from_numpy(rng.random(len(idx), np.float32))))
    return out


def _pair(width: int = WIDTH) -> tuple:
    torch.manual_seed(0)
    a = torch.nn.EmbeddingBag(ROWS, width, mode="sum", sparse=True)
    b = torch.nn.EmbeddingBag(ROWS, width, mode="sum", sparse=True)
    b.weight.data.copy_(a.weight.data)
    return a, b


def _train(emb, opt, batches, scheduler=None) -> None:
    target = torch.linspace(-1, 1, emb.weight.shape[1])
    for idx, offsets, w in batches:
        opt.zero_grad()
        ((emb(idx, offsets, per_sample_weights=w) - target) ** 2).sum().backward()
        opt.step()
        if scheduler is not None:
            scheduler.step()


def _close(a, b) -> None:
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("width", [WIDTH, 1])
def test_steps_as_torch_sparse_adam(width):
    ours, theirs = _pair(width)
    start = ours.weight.detach().clone()
    kw = {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-6}
    slide_opt, torch_opt = SparseAdam([ours.weight], threads=2, **kw), torch.optim.SparseAdam([theirs.weight], **kw)
    batches = _bags(1)
    _train(ours, slide_opt, batches)
    _train(theirs, torch_opt, batches)
    _close(ours.weight, theirs.weight)
    for key in ("exp_avg", "exp_avg_sq"):
        _close(slide_opt.state[ours.weight][key], torch_opt.state[theirs.weight][key])
    assert slide_opt.state[ours.weight]["step"] == torch_opt.state[theirs.weight]["step"] == len(batches)
    untouched = slice(ROWS - 40, ROWS)
    assert torch.equal(ours.weight[untouched], start[untouched])
    assert not slide_opt.state[ours.weight]["exp_avg"][untouched].any()
    assert (ours.weight[: ROWS - 40] != start[: ROWS - 40]).any(dim=1).float().mean() > 0.9


def test_repeated_rows_are_summed_once_per_step():
    w = torch.nn.Parameter(torch.zeros(4, 3))
    opt = SparseAdam([w], lr=0.1)
    w.grad = torch.sparse_coo_tensor([[2, 0, 2]], torch.tensor([[1.0, -2.0, 0.5]] * 3), (4, 3),
                                     check_invariants=True)
    opt.step()
    # Adam's first step moves each coordinate by lr x sign(summed gradient); row 2's sum is 2 x the value.
    np.testing.assert_allclose(w[2].detach().numpy(), [-0.1, 0.1, -0.1], rtol=1e-5)
    np.testing.assert_allclose(opt.state[w]["exp_avg"][2].numpy(), [0.2, -0.4, 0.1], rtol=1e-6)
    np.testing.assert_allclose(opt.state[w]["exp_avg"][0].numpy(), [0.1, -0.2, 0.05], rtol=1e-6)
    assert not w[1].any() and not w[3].any()


def test_threads_give_the_same_bits():
    runs = []
    for threads in (1, 2):
        emb, _ = _pair()
        _train(emb, SparseAdam([emb.weight], lr=0.02, threads=threads), _bags(2))
        runs.append(emb.weight.detach().clone())
    assert torch.equal(runs[0], runs[1])


def test_param_groups_and_a_scheduler_as_torch():
    ours, theirs = _pair()
    ours_b, theirs_b = _pair()
    opts = []
    for cls, a, b in ((SparseAdam, ours, ours_b), (torch.optim.SparseAdam, theirs, theirs_b)):
        opt = cls([{"params": [a.weight]}, {"params": [b.weight], "lr": 0.2}], lr=0.03)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.3)
        batches = _bags(3)
        for idx, offsets, w in batches:
            opt.zero_grad()
            (a(idx, offsets, per_sample_weights=w).sum() + (b(idx, offsets, per_sample_weights=w) ** 2).sum()).backward()
            opt.step()
            sched.step()
        opts.append(opt)
    _close(ours.weight, theirs.weight)
    _close(ours_b.weight, theirs_b.weight)
    assert opts[0].param_groups[1]["lr"] == pytest.approx(0.2 * 0.3 ** 3)


def test_state_dict_moves_between_the_two_classes():
    ours, theirs = _pair()
    slide_opt, torch_opt = SparseAdam([ours.weight], lr=0.05), torch.optim.SparseAdam([theirs.weight], lr=0.05)
    first, second = _bags(4, batches=3), _bags(5, batches=3)
    _train(ours, slide_opt, first)
    _train(theirs, torch_opt, first)
    # Swap the optimizers' states: each continues from the other's moments and step count.
    slide_state, torch_state = slide_opt.state_dict(), torch_opt.state_dict()
    slide_opt.load_state_dict(torch_state)
    torch_opt.load_state_dict(slide_state)
    _train(ours, slide_opt, second)
    _train(theirs, torch_opt, second)
    _close(ours.weight, theirs.weight)
    assert slide_opt.state[ours.weight]["step"] == 6


def test_refuses_what_it_cannot_step():
    with pytest.raises(ValueError, match=r"param_groups\[0\]\['params'\]\[0\] must be a dense 2-D float32"):
        SparseAdam([torch.nn.Parameter(torch.zeros(5, 2, dtype=torch.float64))])
    with pytest.raises(ValueError, match=r"must be a dense 2-D float32 CPU tensor.*1-D"):
        SparseAdam([torch.nn.Parameter(torch.zeros(5))])
    with pytest.raises(ValueError, match="contiguous"):
        SparseAdam([torch.nn.Parameter(torch.zeros(4, 6).t())])
    for kw, what in (({"lr": float("nan")}, "lr"), ({"lr": -1.0}, "lr"), ({"betas": (0.9, 1.0)}, "betas"),
                     ({"eps": 0.0}, "eps")):
        with pytest.raises(ValueError, match=what):
            SparseAdam([torch.nn.Parameter(torch.zeros(3, 2))], **kw)

    dense = torch.nn.Embedding(6, 3)  # sparse=False: a dense gradient
    opt = SparseAdam(dense.parameters())
    dense(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(ValueError, match=r"param_groups\[0\]\['params'\]\[0\] has a dense gradient.*torch.optim.Adam"):
        opt.step()

    emb = torch.nn.Embedding(6, 3, sparse=True)
    opt = SparseAdam(emb.parameters(), lr=0.1)
    emb(torch.tensor([1, 2])).sum().backward()
    opt.param_groups[0]["lr"] = float("inf")  # as a broken scheduler would
    with pytest.raises(ValueError, match=r"param_groups\[0\]: lr must be a finite number"):
        opt.step()


def test_a_loaded_state_of_another_shape_is_refused():
    emb = torch.nn.Embedding(6, 3, sparse=True)
    opt = SparseAdam(emb.parameters(), lr=0.1)
    emb(torch.tensor([1, 2])).sum().backward()
    opt.step()
    state = opt.state_dict()
    state["state"][0]["exp_avg_sq"] = torch.zeros(5, 3)  # a state saved for another parameter
    opt.load_state_dict(state)
    before = emb.weight.detach().clone()
    emb(torch.tensor([1, 2])).sum().backward()
    with pytest.raises(ValueError, match=r"'exp_avg_sq' of param_groups\[0\]\['params'\]\[0\] must be a contiguous "
                                         r"float32 CPU tensor of shape \(6, 3\)"):
        opt.step()
    assert torch.equal(emb.weight, before) and opt.state[emb.weight]["step"] == 1


def test_an_index_outside_the_rows_moves_nothing():
    w = torch.nn.Parameter(torch.ones(4, 2))
    opt = SparseAdam([w], lr=0.1)
    # torch builds such a gradient when asked not to check it; the engine checks every index.
    w.grad = torch.sparse_coo_tensor([[1, 7]], torch.ones(2, 2), (4, 2), check_invariants=False)
    with pytest.raises(ValueError, match="names row 7 of a parameter with 4 rows"):
        opt.step()
    assert (w == 1).all()
    assert not opt.state[w]["exp_avg"].any() and not opt.state[w]["exp_avg_sq"].any()
    w.grad = torch.sparse_coo_tensor([[0, 1], [1, 0]], torch.ones(2), (4, 2), check_invariants=True)  # per entry
    with pytest.raises(ValueError, match=r"sparse over the rows of its \(4, 2\) parameter, got sparse_dim 2"):
        opt.step()

    from slide._core import sparse_adam_step

    m, v = np.zeros((4, 2), np.float32), np.zeros((4, 2), np.float32)
    weights = w.detach().numpy()
    with pytest.raises(ValueError, match="names row -1"):
        sparse_adam_step(weights, m, v, np.array([-1]), np.ones((1, 2), np.float32), 0.1, 0.9, 0.999, 1e-8, 1, 2)
    with pytest.raises(TypeError):  # a float64 parameter would be stepped in a copy: refused, not converted
        sparse_adam_step(weights.astype(np.float64), m, v, np.array([1]), np.ones((1, 2), np.float32), 0.1, 0.9,
                         0.999, 1e-8, 1, 2)
    with pytest.raises(ValueError, match=r"values must be \(1, 2\)"):
        sparse_adam_step(weights, m, v, np.array([1]), np.ones((1, 3), np.float32), 0.1, 0.9, 0.999, 1e-8, 1, 2)
    assert (weights == 1).all() and not m.any() and not v.any()


def test_step_takes_a_closure_as_torch_optimizers_do():
    emb = torch.nn.Embedding(6, 3, sparse=True)
    opt = SparseAdam(emb.parameters(), lr=0.1)
    before = emb.weight.detach().clone()

    def closure():
        opt.zero_grad()
        loss = emb(torch.tensor([1, 1, 4])).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.requires_grad and loss.item() == pytest.approx(float(before[[1, 1, 4]].sum()))
    moved = (emb.weight != before).any(dim=1).tolist()
    assert moved == [False, True, False, False, True, False]
