"""Trainval selection for large benchmarks (many thousands of videos), by video classes.

Videos with the same counts (per balanced category, baseline-correct answers, floor-type T2
answers, questions) are interchangeable, so the selection only decides HOW MANY videos of each
class go to test. Method:

1. the LP relaxation of the minimax problem (HiGHS through ``scipy.optimize.linprog``): minimise
   the largest |test count - global share x test size| over the balanced categories, with exactly
   ``n_test`` videos and every floor kept in trainval;
2. rounding: down, then the remaining test places to the largest fractional parts whose floors
   allow it;
3. integer swap local search between classes (squared error, then the largest deviation) over the
   most promising classes, floors always kept;
4. within a class, the seeded shuffle order decides which videos go to test.

Every limit is an iteration count and every residual an exact integer, so the same input gives
the same videos on any machine. Returns None when rounding cannot keep the floors (the caller
then uses the exact path of ``selection.py``).
"""

from __future__ import annotations

import numpy as np

_CANDIDATES = 384
_MAX_SWAPS = 2_000


def class_counts(counts: np.ndarray, sizes: np.ndarray,
                 t2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class of each video, number of videos per class) for rows of [counts, t2, size]."""
    rows = np.ascontiguousarray(np.concatenate([counts, t2, sizes[:, None]], 1), dtype=np.int64)
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse, mult = np.unique(keys, return_index=True, return_inverse=True,
                                        return_counts=True)
    return first, inverse.ravel(), mult


def select_by_class(counts: np.ndarray, sizes: np.ndarray, t2: np.ndarray, floors: np.ndarray,
                    n_trainval: int) -> np.ndarray | None:
    """``in_trainval`` per video (in the given, already shuffled, order), or None."""
    first, inverse, mult = class_counts(counts, sizes, t2)
    cc, ct2, cs = counts[first], t2[first], sizes[first]
    k = len(first)
    n_test = len(sizes) - n_trainval
    total_n = int(sizes.sum())
    # exact integer residual per video of a class: N * count - total_c * size
    y = cc * total_n - np.outer(cs, counts.sum(0))
    cap = t2.sum(0) - floors  # T2 answers of each floor type that test may hold

    x = _lp_start(y.astype(float), ct2.astype(float), cap, mult, n_test)
    if x is None:
        return None
    x = round_counts(x, ct2, cap, mult, n_test)
    if x is None:
        return None
    _polish(x, y, ct2, cap, mult)
    in_trainval = np.ones(len(sizes), dtype=bool)
    taken = np.zeros(k, dtype=np.int64)
    for v in range(len(sizes)):  # the shuffled order picks the test videos of each class
        c = inverse[v]
        if taken[c] < x[c]:
            taken[c] += 1
            in_trainval[v] = False
    return in_trainval


def _lp_start(y: np.ndarray, ct2: np.ndarray, cap: np.ndarray, mult: np.ndarray,
              n_test: int) -> np.ndarray | None:
    from scipy.optimize import linprog  # 0.5 s to import: only for the class LP

    k, d = y.shape
    scale = np.abs(y).max() or 1.0
    ys = y / scale
    c = np.zeros(k + 1)
    c[-1] = 1.0
    a_ub = np.vstack([np.hstack([ys.T, -np.ones((d, 1))]),     # +dev_j - z <= 0
                      np.hstack([-ys.T, -np.ones((d, 1))]),    # -dev_j - z <= 0
                      np.hstack([ct2.T, np.zeros((ct2.shape[1], 1))])])
    b_ub = np.concatenate([np.zeros(2 * d), cap.astype(float)])
    a_eq = np.hstack([np.ones(k), [0.0]])[None, :]
    bounds = np.column_stack([np.zeros(k + 1), np.append(mult.astype(float), np.inf)])
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[float(n_test)], bounds=bounds,
                  method="highs")
    return None if res.x is None or res.status != 0 else res.x[:k]


def round_counts(x: np.ndarray, ct2: np.ndarray, cap: np.ndarray, mult: np.ndarray,
           n_test: int) -> np.ndarray | None:
    out = np.minimum(np.floor(x + 1e-9), mult).astype(np.int64)
    used = (out[:, None] * ct2).sum(0)
    frac = x - out
    for c in np.lexsort((np.arange(len(x)), -frac)):  # largest fractional part first
        if out.sum() >= n_test:
            break
        if out[c] < mult[c] and (used + ct2[c] <= cap).all():
            out[c] += 1
            used += ct2[c]
    if out.sum() < n_test:  # fill with the classes that hold no T2 of a floor type
        for c in np.flatnonzero(ct2.sum(1) == 0):
            add = min(int(mult[c] - out[c]), n_test - int(out.sum()))
            out[c] += add
            if out.sum() >= n_test:
                break
    return out if out.sum() == n_test and ((out[:, None] * ct2).sum(0) <= cap).all() else None


def _polish(x: np.ndarray, y: np.ndarray, ct2: np.ndarray, cap: np.ndarray,
            mult: np.ndarray) -> None:
    """Swap one test video of class a for one trainval video of class b while it improves."""
    big = np.iinfo(np.int64).max
    for phase in ("l2", "minimax"):
        for _ in range(_MAX_SWAPS):
            r = (x[:, None] * y).sum(0)
            used = (x[:, None] * ct2).sum(0)
            out_side = np.flatnonzero(x > 0)           # a: leaves test
            in_side = np.flatnonzero(x < mult)         # b: joins test
            ya, yb = y[out_side], y[in_side]
            sa = -2 * (ya @ r) + (ya * ya).sum(1)
            sb = 2 * (yb @ r) + (yb * yb).sum(1)
            a = out_side[np.sort(np.argsort(sa, kind="stable")[:_CANDIDATES])]
            b = in_side[np.sort(np.argsort(sb, kind="stable")[:_CANDIDATES])]
            new_r = r[None, None, :] - y[a][:, None, :] + y[b][None, :, :]
            ok = (a[:, None] != b[None, :])
            slack = cap - used
            for f in range(ct2.shape[1]):
                ok &= (ct2[b][None, :, f] - ct2[a][:, None, f]) <= slack[f]
            worst = np.abs(new_r).max(2)
            sq = (new_r.astype(float) ** 2).sum(2)  # exact while residuals stay below ~2**26
            cur = (float((r.astype(float) ** 2).sum()), int(np.abs(r).max()))
            if phase == "l2":
                sq[~ok] = np.inf
                i = int(np.argmin(sq))
                if not sq.flat[i] < cur[0]:
                    break
            else:
                worst = np.where(ok, worst, big)
                best = worst.min()
                if best > cur[1]:
                    break
                sq[(worst != best) | ~ok] = np.inf
                i = int(np.argmin(sq))
                if (int(best), sq.flat[i]) >= (cur[1], cur[0]):
                    break
            ia, ib = divmod(i, len(b))
            x[a[ia]] -= 1
            x[b[ib]] += 1
