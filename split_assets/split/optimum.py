"""The exact minimax test pool: of all choices of ``n_test`` whole videos, the least possible
largest |test share - benchmark share| over every balanced category (task type, difficulty,
baseline accuracy, ...).

With the test pool's question count Q fixed, the shares are linear in the videos chosen, so
the optimum for that Q is one MILP (scipy's HiGHS): minimise t subject to
|sum_v n_cv x_v - g_c Q| <= t Q for every category c. No pool of Q questions can do better
than rounding allows (each category's count is an integer): the Qs are tried from the lowest
such bound up, each MILP capped at the best deviation known so far (a known pool's, to start),
and the search ends when no remaining Q can beat it.

The selection (selection.py) polishes its swap search's pool with it when videos differ in
size, so the pool can reach a question count single swaps do not; bench/split_quality.py and
the tests measure splits against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Optimum:
    deviation: float          # the least largest deviation (a share; x100 for pp)
    questions: int            # the test pool's question count (0: ``upper`` is optimal)
    test: np.ndarray | None   # the test videos (a mask over the rows), None: ``upper``'s pool
    proven: bool = True       # every MILP it rests on was solved to optimality


def _rounding_bound(g: np.ndarray, total: int) -> float:
    """The least largest deviation any pool of ``total`` questions can have."""
    return float(np.max(np.abs(np.round(g * total) - g * total)) / total)


def minimax_pool(counts: np.ndarray, sizes: np.ndarray, n_test: int, upper: float,
                 caps: tuple[np.ndarray, np.ndarray] | None = None,
                 node_limit: int | None = None, max_totals: int | None = None) -> Optimum:
    """The best test pool of ``n_test`` rows (videos) of ``counts`` (videos x categories)
    and ``sizes``, strictly better than ``upper`` if one exists; ``caps`` (matrix, limits):
    the test pool's sums may not exceed them (the floors, seen from the test side);
    ``max_totals``: try at most that many question counts (the most promising first)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    k, c = counts.shape
    g = counts.sum(0) / sizes.sum()
    ordered = np.sort(sizes)
    qs = range(int(ordered[:n_test].sum()), int(ordered[-n_test:].sum()) + 1)
    best, proven = None, True
    for tried, total in enumerate(sorted(qs, key=lambda q: (_rounding_bound(g, q), q))):
        bound = _rounding_bound(g, total)
        if max_totals is not None and tried >= max_totals:
            proven = False
            break
        cap = best.deviation if best is not None else upper
        if bound >= cap - 1e-12:
            break
        rows = [np.append(sizes, 0.0), np.append(np.ones(k), 0.0),
                np.hstack([counts.T, -total * np.ones((c, 1))]),
                np.hstack([counts.T, total * np.ones((c, 1))])]
        lo = [[total, n_test], np.full(c, -np.inf), g * total]
        hi = [[total, n_test], g * total, np.full(c, np.inf)]
        if caps is not None:
            rows.append(np.hstack([caps[0].T, np.zeros((caps[0].shape[1], 1))]))
            lo.append(np.full(caps[0].shape[1], -np.inf))
            hi.append(caps[1])
        result = milp(np.append(np.zeros(k), 1.0), integrality=np.append(np.ones(k), 0),
                      bounds=Bounds(np.append(np.zeros(k), bound), np.append(np.ones(k), cap)),
                      constraints=LinearConstraint(np.vstack(rows), np.concatenate(lo),
                                                   np.concatenate(hi)),
                      options={"node_limit": node_limit} if node_limit else {})
        proven = proven and result.status in (0, 2)  # optimal, or none under the cap
        if result.x is not None and result.x[-1] < cap - 1e-12:
            best = Optimum(float(result.x[-1]), total, result.x[:k] > 0.5)
    if best is None:
        return Optimum(upper, 0, None, proven)
    return Optimum(best.deviation, best.questions, best.test, proven)


def category_counts(videos: Sequence[str], dims: Sequence[Sequence[str]]) -> tuple[
        list[str], np.ndarray, np.ndarray]:
    """Videos in name order, (videos x categories) counts of every value of every dimension
    (``dims``: each question's values, aligned with ``videos``), and the videos' sizes."""
    names = sorted(set(videos))
    index = {v: i for i, v in enumerate(names)}
    col = np.array([index[v] for v in videos])
    columns = []
    for values in dims:
        arr = np.array(values)
        columns += [np.bincount(col[arr == value], minlength=len(names))
                    for value in sorted(set(values))]
    return names, np.array(columns, dtype=float).T, np.bincount(col).astype(float)


def exact_optimum(videos: Sequence[str], dims: Sequence[Sequence[str]], n_test: int,
                  upper: float = 1.0) -> Optimum:
    """The minimax test pool of ``n_test`` videos over every value of every dimension, given
    that a pool with largest deviation ``upper`` exists (only better ones are searched)."""
    _, counts, sizes = category_counts(videos, dims)
    return minimax_pool(counts, sizes, n_test, upper)


def largest_deviation(videos: Sequence[str], dims: Sequence[Sequence[str]],
                      test: set[str]) -> float:
    """The largest |test share - benchmark share| of a test pool over every category."""
    in_test = np.array([v in test for v in videos])
    worst = 0.0
    for values in dims:
        arr = np.array(values)
        for value in set(values):
            hit = arr == value
            worst = max(worst, abs(hit[in_test].mean() - hit.mean()))
    return float(worst)
