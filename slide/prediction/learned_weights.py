"""The fusion's weights learned from the held-out points' candidates, beside the grid's pick
(`weight_grid.grid_pick`), and the rule that keeps one of the two for a run.

The fused score, logit + weight x vote + rerank_weight x re-ranker score + tree_weight x tree
log-probability, is linear in the parts' scores. A logistic regression of "this candidate is one
of its point's labels" on the same scores therefore gives a weight triple too: each part's
coefficient over the logit's. It learns from every candidate of every held-out point, with
continuous weights, where the grid scores a few hundred triples, doubling apart, by each point's
top 5 alone.

Measured by script (each run's held-out and test candidates, slide with no flags, test P@1 / P@5,
means over seeds): debian-tags, seeds 0-5, 0.8545 / 0.5070 learned
against 0.8549 / 0.5056 by the grid; debian-deps-by-source, seed 0, 0.6466 / 0.3273 against
0.6463 / 0.3266; but debian-rdeps, seeds 0-2, 0.2240 / 0.1094 against 0.2276 / 0.1099. Further
features (the logit's rank among its point's candidates, its gap to the point's best, whether the
re-ranker knows the pair) moved debian-tags' P@5 by 0.0003 or less and lost more on debian-rdeps.
So neither rule wins everywhere, and a run chooses (`learned_or_grid`): each half of its held-out
points picks by both rules, and the other half judges the two picks by the fusion's monitor.

That choice, on the same networks (test P@1 / P@5 at the grid's triple -> at the one kept, by
script, seeds 0-2): debian-tags took the learned weights in all three,
P@5 +0.0010, +0.0004 and +0.0007 (P@1 +0.0025, -0.0006, -0.0033); but debian-deps took them in two,
P@5 -0.0001 and -0.0021, debian-deps-by-source in one, -0.0011, debian-rdeps in one, -0.0002, where
the halves had judged them better by 0.001-0.005 nDCG@5. Delicious kept the grid in all three. So
the network setting ``fusion_weights`` says whether a run chooses ("auto", its default and the
dense tier's) or keeps the grid's pick ("grid", the preset above 8,192 labels:
`slide.shape_defaults`). The suite at c709032 (auto everywhere) met debian-tags' P@5, 0.5063
against omikuji's 0.5053, and narrowed debian-deps' P@5 lead to 0.3698 against 0.3693."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from ..neighbours import Fusion, point_scores
from ..settings import NETWORK
from .weight_grid import pick_on_grid

# The inverse strength of the L2 penalty on the standardised coefficients (scikit-learn's
# LogisticRegression default, with which the measurements above were taken).
C = 1.0
# The least coefficient the logit's standardised score learns. On debian-tags the regression gives
# it about 0 (-0.06 to +0.01 over seeds 0-5: the re-ranker, the tree and the vote carry the ranking),
# and a weight triple needs a positive one to divide by. Fitting the others with it held at a floor
# cost little, by script (debian-tags seeds 0-5, test P@1 / P@5): free 0.8545 / 0.5069; floor
# 0.001 0.8545 / 0.5068, 0.01 0.8544 / 0.5068, 0.05 0.8546 / 0.5067, 0.1 0.8547 / 0.5066 (the grid
# 0.8549 / 0.5056); debian-rdeps (seeds 0-2) never reached it. At 0.05 seed 0's weights are about
# (119, 96, 44), where 0.001 gave (6098, 4845, 2218).
LOGIT_FLOOR = 0.05
# Newton's method stops when no gradient entry exceeds this (per candidate), or after this many steps.
_TOLERANCE = 1e-10
_MAX_STEPS = 100
PARTS = ("vote", "rerank", "tree")
# The settings that hold each part's weight.
SETTINGS = ("neighbour_weight", "rerank_weight", "tree_weight")


def logistic_regression(F: np.ndarray, y: np.ndarray, c: float = C, offset: Optional[np.ndarray] = None
                        ) -> tuple[np.ndarray, float]:
    """(coefficients [d], intercept) minimising 0.5 |coefficients|^2 + c x the summed log-loss of
    y (0/1) given F [m, d] and a fixed `offset` [m] added to each score (the intercept
    unpenalised, as scikit-learn's lbfgs solver has it). Newton's method with step halving: the
    objective is strictly convex in the coefficients, and the few columns make each step's d+1
    square system cheap."""
    m, d = F.shape
    A = np.column_stack([F, np.ones(m)])
    penalty = np.ones(d + 1)
    penalty[d] = 0.0
    y = y.astype(np.float64)
    offset = np.zeros(m) if offset is None else np.asarray(offset, np.float64)

    def objective(beta: np.ndarray) -> float:
        z = A @ beta + offset
        return 0.5 * float(penalty @ beta ** 2) + c * float(np.sum(np.logaddexp(0.0, z) - y * z))

    beta = np.zeros(d + 1)
    value = objective(beta)
    for _ in range(_MAX_STEPS):
        p = 0.5 * (1.0 + np.tanh(0.5 * (A @ beta + offset)))  # the sigmoid, without overflow
        gradient = penalty * beta + c * (A.T @ (p - y))
        if np.max(np.abs(gradient)) <= _TOLERANCE * max(m, 1):
            break
        hessian = np.diag(penalty) + c * (A.T * (p * (1.0 - p))) @ A
        hessian[d, d] += 1e-12 * max(m, 1)  # an all-0 or all-1 y leaves the intercept's curvature at 0
        step = np.linalg.solve(hessian, gradient)
        for _ in range(60):
            trial = objective(beta - step)
            if trial <= value:
                break
            step = step * 0.5
        else:
            break
        beta, value = beta - step, trial
    return beta[:d], float(beta[d])


def learned_weights(fusion: Fusion, relevant: np.ndarray, parts: tuple[bool, bool, bool], c: float = C
                    ) -> Optional[tuple[float, float, float]]:
    """The (vote, re-ranker, tree) weight triple a logistic regression on fusion's candidates
    learns, `relevant` saying which of them are their point's labels: each part's coefficient
    over the logit's, on the standardised scores, for the parts `parts` names (in PARTS'
    order; the others 0), the logit's held at LOGIT_FLOOR or more. A part learned below 0 is set
    to 0, as the settings allow no less. None when there are no candidates, the logits are all
    equal, or a weight passes the settings' bound."""
    names = [name for name, on in zip(PARTS, parts) if on]
    F = np.column_stack([fusion.logits, *(getattr(fusion, name) for name in names)]).astype(np.float64)
    if F.shape[0] == 0:
        return None
    scale = F.std(axis=0)
    varies = scale > 0
    if not varies[0]:
        return None
    Z = (F[:, varies] - F[:, varies].mean(axis=0)) / scale[varies]
    standardised = logistic_regression(Z, relevant, c)[0]
    if standardised[0] < LOGIT_FLOOR:  # the constrained optimum lies on the floor: the others fit beside it
        standardised = np.concatenate([[LOGIT_FLOOR], logistic_regression(Z[:, 1:], relevant, c,
                                                                          offset=LOGIT_FLOOR * Z[:, 0])[0]])
    coef = np.zeros(F.shape[1])
    coef[varies] = standardised / scale[varies]
    learned = dict(zip(names, np.maximum(coef[1:] / coef[0], 0.0)))
    weights = tuple(float(learned.get(name, 0.0)) for name in PARTS)
    bound = min(NETWORK[setting].maximum for setting in SETTINGS)
    if not all(np.isfinite(weights)) or max(weights) > bound:
        return None
    return weights


@dataclass(frozen=True)
class WeightChoice:
    """How a run's fusion weights were picked: `learned` (the logistic regression's) or not (the
    grid's); `grid` the grid's triple (vote, re-ranker, tree) on every held-out point; the two
    rules' scores, each pick made on one half of the held-out points and judged on the other, the
    mean over the two halves (`learned_score` None where a half's regression gave no triple)."""
    learned: bool
    grid: tuple[float, float, float]
    grid_score: float
    learned_score: Optional[float]


def learned_or_grid(fusion: Fusion, Y: sp.csr_matrix, ks: tuple[int, ...], monitor: str, grid: tuple,
                    per_point: np.ndarray, grid_triple: tuple[float, float, float], seed: int
                    ) -> tuple[tuple[float, float, float], Optional[WeightChoice]]:
    """(the weight triple kept, how it was chosen): the learned triple on all of fusion's points
    when, over a two-fold split of them (drawn from `seed`), the triples each rule picks on one
    half score a strictly better `monitor` on the other; else `grid_triple` (the grid's pick on
    all of them). `grid` is the (weights, rerank_weights, tree_weights) tried, each ascending, and
    `per_point` each point's score at each of their triples (`slide.neighbours.point_scores`), so
    that a half's pick is the grid's rule on its points' means. The parts learned are those whose
    grid has more than one weight; with none, the grid's triple and no choice. One process."""
    parts = tuple(len(axis) > 1 for axis in grid)
    if not any(parts):
        return tuple(grid_triple), None
    relevant = fusion.labelled(Y)[0]
    half = np.random.default_rng(seed).permutation(fusion.n) < fusion.n // 2
    scored: dict[str, Optional[float]] = {"grid": 0.0, "learned": 0.0}
    for picks_on in (half, ~half):
        t, (w, r), _, _ = pick_on_grid(per_point[..., picks_on].mean(axis=-1), grid)
        at = tuple(axis.index(value) for axis, value in zip(grid, (w, r, t)))
        scored["grid"] += float(per_point[at[2], at[0], at[1]][~picks_on].sum())
        learned = learned_weights(fusion.queries(picks_on), relevant[picks_on[fusion.rows]], parts)
        if learned is None or scored["learned"] is None:
            scored["learned"] = None
            continue
        scored["learned"] += float(point_scores(fusion, Y, ks, monitor, *((w,) for w in learned))[0, 0, 0]
                                   [~picks_on].sum())
    scored = {rule: None if total is None else total / fusion.n for rule, total in scored.items()}
    learned = learned_weights(fusion, relevant, parts) if scored["learned"] is not None else None
    keep = learned is not None and scored["learned"] > scored["grid"]
    choice = WeightChoice(keep, tuple(grid_triple), scored["grid"], scored["learned"])
    return (learned if keep else tuple(grid_triple)), choice
