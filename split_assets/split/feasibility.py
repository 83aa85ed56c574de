"""Whether floors and epsilon can hold together, decided exactly, and why not when they cannot:
the floors against the benchmark, an exact feasibility MILP (scipy's HiGHS, no time limit) of
floors and epsilon bounds, and per bound the best deviation it reaches alone. Failures are the
data-carrying errors of ``split/impossible.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from split_assets.split.impossible import (
    BoundReach,
    EpsilonUnderFloors,
    FloorGap,
    FloorsAboveBenchmark,
    FloorsNeedVideos,
    FloorsNotTogether,
    SplitImpossible,
)
from split_assets.split.matrix import Matrix
from split_assets.split.problem import SplitProblem
from split_assets.split.stats import over_epsilon


def check_floors_reachable(m: Matrix) -> None:
    """Each floor against the T2 in the whole benchmark, then against the videos it needs."""
    types, t2, floors, n = m.types, m.t2, m.floors, m.n
    available = t2.sum(0)
    short = tuple(FloorGap(t, int(floors[i]), int(available[i]))
                  for i, t in enumerate(types) if available[i] < floors[i])
    if short:
        raise FloorsAboveBenchmark(short)
    too_many = []
    for i, t in enumerate(types):
        needed = int(np.searchsorted(np.cumsum(np.sort(t2[:, i])[::-1]), floors[i]) + 1)
        if needed > n:
            too_many.append(FloorGap(t, int(floors[i]), needed))
    if too_many:
        raise FloorsNeedVideos(n, tuple(too_many))


def infeasible(problem: SplitProblem, m: Matrix,
               heuristic: np.ndarray | None) -> SplitImpossible:
    """Why no split exists: the floors alone, or epsilon under the floors (with figures)."""
    if milp_feasible(m, []) is None:
        return FloorsNotTogether(m.n, tuple(
            FloorGap(t, int(m.floors[i]), int(np.sort(m.t2[:, i])[::-1][:m.n].sum()))
            for i, t in enumerate(m.types)))
    bounds = bounds_of(problem, m)
    over = set() if heuristic is None else {
        b.label for b in bounds if abs(deviation(m, heuristic, b)) > b.epsilon}
    return reachability(m, bounds, over)


@dataclass(frozen=True)
class Bound:
    """|test share - global share| <= epsilon for one column of the count matrix."""

    label: str
    column: int
    epsilon: float


def bounds_of(problem: SplitProblem, m: Matrix) -> list[Bound]:
    """The epsilon constraints: every constrained category, and baseline accuracy when
    ``epsilon_accuracy`` is set (the last column of the count matrix)."""
    out = [Bound(c.label, j, problem.selection.epsilon) for j, c in enumerate(problem.categories)]
    if problem.selection.epsilon_accuracy is not None:
        out.append(Bound("baseline accuracy", m.counts.shape[1] - 1,
                          problem.selection.epsilon_accuracy))
    return out


def deviation(m: Matrix, in_trainval: np.ndarray, bound: Bound) -> float:
    counts, sizes = m.counts, m.sizes
    test = ~in_trainval
    n_test = int(sizes[test].sum())
    g = int(counts[:, bound.column].sum()) / int(sizes.sum())
    return (int(counts[test, bound.column].sum()) / n_test if n_test else 0.0) - g


def _floor_rows(m: Matrix) -> tuple[list, list, list]:
    """Exactly n trainval videos, every floor met (x_v = 1 puts video v in trainval)."""
    t2, floors, n = m.t2, m.floors, m.n
    rows, lower, upper = [np.ones(len(t2))], [n], [n]
    for f in range(t2.shape[1]):
        rows.append(t2[:, f].astype(float))
        lower.append(float(floors[f]))
        upper.append(np.inf)
    return rows, lower, upper


def milp_feasible(m: Matrix, bounds: list[Bound]) -> np.ndarray | None:
    """An exact feasibility MILP (HiGHS, no time limit) of the floors and ``bounds``."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # 0.5 s: only when needed

    counts, sizes, t2 = m.counts, m.sizes, m.t2
    rows, lower, upper = _floor_rows(m)
    for b in bounds:
        cnt, size = counts[:, b.column].astype(float), sizes.astype(float)
        g = cnt.sum() / size.sum()
        eps = b.epsilon - 1e-9
        # test share <= g + eps  <=>  a.x >= sum(a), a = cnt - (g + eps) * size
        a = cnt - (g + eps) * size
        rows.append(a)
        lower.append(a.sum())
        upper.append(np.inf)
        c = cnt - (g - eps) * size
        rows.append(c)
        lower.append(-np.inf)
        upper.append(c.sum())
    result = milp(np.zeros(len(t2)), integrality=np.ones(len(t2)), bounds=Bounds(0, 1),
                  constraints=LinearConstraint(np.array(rows), lower, upper))
    if result.x is None or result.status != 0:
        return None
    return np.round(result.x).astype(bool)


_DIAGNOSTIC_NODES = 2_000


def _best_alone(m: Matrix, bound: Bound) -> float | None:
    """The smallest |deviation| of one column that the floors and n_trainval allow, ignoring
    every other bound: minimise d with -d <= a.(1 - x) <= d, a = count - global share * size
    (HiGHS, a node limit, never a clock). None when no split meets the floors."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    rows, lower, upper = _floor_rows(m)
    k = len(m.t2)
    cnt, size = m.counts[:, bound.column].astype(float), m.sizes.astype(float)
    a = cnt - cnt.sum() / size.sum() * size
    rows = [np.append(r, 0.0) for r in rows]
    rows.append(np.append(-a, -1.0))   # a.(1 - x) <= d   <=>  -a.x - d <= -sum(a)
    lower.append(-np.inf)
    upper.append(-a.sum())
    rows.append(np.append(a, -1.0))    # -a.(1 - x) <= d  <=>   a.x - d <= sum(a)
    lower.append(-np.inf)
    upper.append(a.sum())
    objective = np.zeros(k + 1)
    objective[-1] = 1.0
    result = milp(objective, integrality=np.append(np.ones(k), 0),
                  bounds=Bounds(np.zeros(k + 1), np.append(np.ones(k), np.inf)),
                  constraints=LinearConstraint(np.array(rows), lower, upper),
                  options={"node_limit": _DIAGNOSTIC_NODES})
    if result.x is None:
        return None
    return abs(deviation(m, np.round(result.x[:k]).astype(bool), bound))


def reachability(m: Matrix, bounds: list[Bound], over: set[str]) -> EpsilonUnderFloors:
    """Each bound the heuristic missed (every bound when it found no start): the bound needed
    against the best this category reaches on its own under the floors."""
    reach, alone_ok = [], 0
    for b in bounds:
        if over and b.label not in over:
            continue
        best = _best_alone(m, b)
        if best is None:
            continue
        if best > b.epsilon + 1e-12:
            reach.append(BoundReach(b.label, b.epsilon, best, alone=False))
        else:
            alone_ok += 1
            if over:
                reach.append(BoundReach(b.label, b.epsilon, best, alone=True))
    return EpsilonUnderFloors(tuple(reach), alone_ok)


def epsilon_violations(problem: SplitProblem, m: Matrix, in_trainval: np.ndarray) -> list[str]:
    """``stats.over_epsilon`` of the test pool, from the count matrix (the accuracy column
    is the last one)."""
    test = ~in_trainval
    counts, sizes = m.counts, m.sizes
    n_all, n_test = int(sizes.sum()), int(sizes[test].sum())
    totals, in_test = counts.sum(0), counts[test].sum(0)
    pairs = [(int(totals[j]) / n_all, int(in_test[j]) / n_test if n_test else 0.0)
             for j in [*range(len(problem.categories)), counts.shape[1] - 1]]
    return over_epsilon(problem, pairs[:-1], pairs[-1])
