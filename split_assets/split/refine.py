"""Balancing the runs at scale (issue 45): the class LP (large.py) decides on classes of
interchangeable videos, but each balanced run's columns make nearly every video a class of its
own. So the classes are made without the runs' columns, and this step then balances every
column: a few thousand videos on each side (the first in the seeded order) are set free, every
other video keeps its pool, and an LP (HiGHS) picks which free videos go to test so that the
sum of the residuals' sizes over all columns is smallest, with the test size and every floor
kept. Its solution is rounded (largest fractional parts first, floors kept); the caller keeps
the class pool when the refined one would break an epsilon bound. Counts and iteration limits
only, never a clock: the same input gives the same pool.
"""

from __future__ import annotations

import numpy as np

from split_assets.split.large import round_counts
from split_assets.split.matrix import Matrix

FREE = 3000  # videos set free on each side


def refine(m: Matrix, in_trainval: np.ndarray, free: int = FREE) -> np.ndarray:
    """``in_trainval`` with the free videos' pools chosen again by the LP (unchanged when the
    LP finds nothing, or rounding cannot keep the floors)."""
    from scipy.optimize import linprog  # 0.5 s to import: only at scale

    test_idx = np.flatnonzero(~in_trainval)[:free]
    train_idx = np.flatnonzero(in_trainval)[:free]
    chosen = np.concatenate([test_idx, train_idx])
    fixed_test = ~in_trainval
    fixed_test[chosen] = False
    y = m.y[chosen].astype(float)
    r0 = m.y[fixed_test].sum(0).astype(float)
    scale = max(float(np.abs(y).max()), float(np.abs(r0).max()), 1.0)
    ys, rs = y / scale, r0 / scale
    k, d = ys.shape
    t2 = m.t2[chosen].astype(float)
    cap = (m.t2.sum(0) - m.floors - m.t2[fixed_test].sum(0)).astype(float)
    # the sum of |residual| over the columns (a column no pool can bring near zero, as when
    # floors hold most of a category in trainval, does not leave the others free to drift)
    c = np.concatenate([np.zeros(k), np.ones(d)])
    eye = np.eye(d)
    a_ub = np.vstack([np.hstack([ys.T, -eye]),                 # r0 + Y'z - t_j <= 0
                      np.hstack([-ys.T, -eye]),                # -r0 - Y'z - t_j <= 0
                      np.hstack([t2.T, np.zeros((t2.shape[1], d))])])
    b_ub = np.concatenate([-rs, rs, cap])
    a_eq = np.concatenate([np.ones(k), np.zeros(d)])[None, :]
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[float(len(test_idx))],
                  bounds=np.column_stack([np.zeros(k + d), np.append(np.ones(k),
                                                                     np.full(d, np.inf))]),
                  method="highs")
    if res.x is None or res.status != 0:
        return in_trainval
    picked = round_counts(res.x[:k], m.t2[chosen], cap.astype(np.int64),
                          np.ones(k, dtype=np.int64), len(test_idx))
    if picked is None:
        return in_trainval
    out = in_trainval.copy()
    out[chosen] = picked == 0
    return out
