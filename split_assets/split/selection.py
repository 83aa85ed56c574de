"""Trainval selection (SPEC §6.1): exactly ``n_trainval`` videos, the floors met, the test pool
as close to the global distribution as the integers allow.

Method: videos sorted by id and shuffled with ``seed``; a greedy cover of the floors; a fill in
shuffled order; then swap local search on exact integer residuals (test counts scaled by the
benchmark size minus the global share times the test size), first by squared error, then by the
largest single deviation. When that heuristic misses a constraint, an exact feasibility MILP
(scipy's HiGHS) decides: it either finds a start that meets the floors and epsilon, which the
minimax search then improves, or proves that none exists and the error gives the figures.
Every limit is an iteration count, never a clock, and every quantity
is an integer, so the same input gives the same videos on any machine.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_assets.errors import InfeasibleSplitError, InputError
from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes
from split_assets.split.large import select_by_class
from split_assets.split.problem import SplitProblem
from split_assets.split.sizes import require_test_pool
from split_assets.split.stats import over_epsilon

# Above this many candidate pairs the swap search looks at the most promising videos only.
_MAX_PAIRS = 4_000_000
_CANDIDATES = 1024
_MAX_MINIMAX_CELLS = 8_000_000
# Above this many videos the selection works on classes of interchangeable videos (large.py).
LARGE_VIDEOS = 5_000


@dataclass(frozen=True)
class Selection:
    """The chosen trainval videos and the test videos (each sorted)."""

    trainval: tuple[str, ...]
    test: tuple[str, ...]
    swaps: int


def _count_matrices(problem: SplitProblem, order: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per video: counts per balanced category (the constrained ones first, then the values of
    the ``balance`` fields) plus baseline-correct answers (last column), and sizes."""
    cats = [*problem.categories, *problem.balanced]
    column = {(c.dimension, c.value): j for j, c in enumerate(cats)}
    dims = ("task_type", "difficulty", *problem.selection.balance)
    rows, cols, sizes = [], [], np.zeros(len(order), dtype=np.int64)
    correct_col = len(cats)
    for i, vid in enumerate(order):
        qs = problem.videos[vid]
        sizes[i] = len(qs)
        for q in qs:
            for key in zip(dims, (q.task_type, q.difficulty, *q.balance), strict=True):
                j = column.get(key)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
            if q.correct:
                rows.append(i)
                cols.append(correct_col)
    counts = np.zeros((len(order), len(cats) + 1), dtype=np.int64)
    np.add.at(counts, (np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)), 1)
    return counts, sizes


def _residual_matrix(counts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per video, N * count_c - total_c * n_questions, for each balanced dimension.

    Summed over the test videos this is N * N_test * (test share - global share): exact
    integers whose zero is a perfectly representative test pool.
    """
    return counts * int(sizes.sum()) - np.outer(sizes, counts.sum(0))


def _floor_matrix(problem: SplitProblem, order: list[str]) -> tuple[list[str], np.ndarray,
                                                                    np.ndarray]:
    types = sorted(t for t, k in problem.selection.floor_k.items() if k > 0)
    index = {t: f for f, t in enumerate(types)}
    t2 = np.zeros((len(order), len(types)), dtype=np.int64)
    for i, vid in enumerate(order):
        for q in problem.videos[vid]:
            f = index.get(q.task_type)
            if f is not None and q.is_floor_t2:
                t2[i, f] += 1
    floors = np.array([problem.selection.floor_k[t] for t in types], dtype=np.int64)
    return types, t2, floors


def _check_floors_reachable(m: _Matrix) -> None:
    types, t2, floors, n = m.types, m.t2, m.floors, m.n
    available = t2.sum(0)
    short = [f"{t} needs {floors[i]} non-degraded T2, only {available[i]} in the benchmark"
             for i, t in enumerate(types) if available[i] < floors[i]]
    if short:
        raise InfeasibleSplitError("floor_k cannot be met: " + "; ".join(short),
                                   "video_split.floor_k",
                                   "lower these floors or diagnose more wrong answers")
    too_many = []
    for i, t in enumerate(types):
        needed = int(np.searchsorted(np.cumsum(np.sort(t2[:, i])[::-1]), floors[i]) + 1)
        if needed > n:
            too_many.append(f"{t} needs at least {needed} videos to reach {floors[i]} T2")
    if too_many:
        raise InfeasibleSplitError("floor_k cannot be met within n_trainval=" + str(n) + ": "
                                   + "; ".join(too_many), "video_split.floor_k",
                                   "raise n_trainval or lower these floors")


def _pairs(ys: np.ndarray, yt: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Change of the squared residual for every swap (v leaves trainval, u joins it)."""
    a = 2 * (ys @ r) + np.einsum("ij,ij->i", ys, ys)
    b = -2 * (yt @ r) + np.einsum("ij,ij->i", yt, yt)
    return a[:, None] + b[None, :] - 2 * (ys @ yt.T)


def _allowed(t2s: np.ndarray, t2t: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """Swaps that keep every floor met."""
    ok = np.ones((len(t2s), len(t2t)), dtype=bool)
    for f in range(t2s.shape[1]):
        ok &= (t2t[None, :, f] - t2s[:, None, f]) >= -slack[f]
    return ok


def _candidates(scores: np.ndarray) -> np.ndarray:
    if len(scores) <= _CANDIDATES:
        return np.arange(len(scores))
    return np.sort(np.argsort(scores, kind="stable")[:_CANDIDATES])


@dataclass(frozen=True)
class _Matrix:
    """The selection's data, one row per video in the seeded order: ``counts`` per balanced
    category (baseline-correct answers in the last column), ``sizes``, the residual matrix
    ``y``, ``t2`` per floor type (``types``) and the ``floors``; ``n`` trainval videos. Every
    helper takes it first, then the state (``in_trainval``), then its own parameters."""

    order: list[str]
    counts: np.ndarray
    sizes: np.ndarray
    y: np.ndarray
    t2: np.ndarray
    floors: np.ndarray
    types: list[str]
    n: int


def _matrix(problem: SplitProblem, order: list[str]) -> _Matrix:
    types, t2, floors = _floor_matrix(problem, order)
    counts, sizes = _count_matrices(problem, order)
    return _Matrix(order, counts, sizes, _residual_matrix(counts, sizes), t2, floors, types,
                   problem.selection.n_trainval)


def select_trainval(problem: SplitProblem, max_iterations: int | None = None) -> Selection:
    """Choose the trainval videos; raise InfeasibleSplitError with figures when impossible."""
    vids = list(problem.videos)
    n = problem.selection.n_trainval
    require_test_pool(n, len(vids))
    order = sorted(vids)
    random.Random(problem.selection.seed).shuffle(order)
    m = _matrix(problem, order)
    _check_floors_reachable(m)
    by_class = problem.selection.selector == "class_lp" or (problem.selection.selector == "auto"
                                                  and len(order) > LARGE_VIDEOS)
    if by_class:  # interchangeable videos: decide per class (large.py)
        in_trainval = select_by_class(m.counts, m.sizes, m.t2, m.floors, n)
        if in_trainval is not None and not _epsilon_violations(problem, m, in_trainval):
            return _selection(order, in_trainval, 0)
    in_trainval = _greedy_start(m)
    swaps = 0
    if in_trainval is not None:
        swaps = _local_search(m, in_trainval, ("l2", "minimax"), max_iterations)
        if not _epsilon_violations(problem, m, in_trainval):
            return _selection(order, in_trainval, swaps)
    # The heuristic missed: ask an exact MILP whether floors and epsilon can hold together.
    exact = _milp_feasible(m, _bounds(problem, m))
    if exact is None:
        raise _infeasible(problem, m, in_trainval)
    swaps += _local_search(m, exact, ("minimax",), max_iterations)
    over_lines = _epsilon_violations(problem, m, exact)
    if over_lines:  # cannot happen: minimax swaps never raise the worst deviation
        raise InfeasibleSplitError("epsilon cannot be met; best reached: "
                                   + "; ".join(over_lines), "video_split.epsilon",
                                   "raise epsilon or report_floor")
    return _selection(order, exact, swaps)


def _infeasible(problem: SplitProblem, m: _Matrix,
                heuristic: np.ndarray | None) -> InfeasibleSplitError:
    """Why no split exists: the floors alone, or epsilon under the floors (with figures)."""
    if _milp_feasible(m, []) is None:
        best = [f"{t} needs {m.floors[i]}, at most {int(np.sort(m.t2[:, i])[::-1][:m.n].sum())} "
                "alone" for i, t in enumerate(m.types)]
        return InfeasibleSplitError(f"floor_k cannot all be met with n_trainval={m.n} videos "
                                    f"({'; '.join(best)})", "video_split.floor_k",
                                    "raise n_trainval or lower these floors")
    bounds = _bounds(problem, m)
    over = set() if heuristic is None else {
        b.label for b in bounds if abs(_deviation(m, heuristic, b)) > b.epsilon}
    return InfeasibleSplitError(
        "epsilon cannot be met with these floors: " + _reachability(m, bounds, over),
        "video_split.epsilon", "raise epsilon (or epsilon_accuracy) or report_floor, lower "
                               "floor_k, or change n_trainval")


def _selection(order: list[str], in_trainval: np.ndarray, swaps: int) -> Selection:
    trainval = tuple(sorted(order[i] for i in np.flatnonzero(in_trainval)))
    test = tuple(sorted(order[i] for i in np.flatnonzero(~in_trainval)))
    return Selection(trainval, test, swaps)


def _greedy_start(m: _Matrix) -> np.ndarray | None:
    """Greedy cover of the floors, then a fill in shuffled order; None if greedy runs out."""
    t2, floors, n = m.t2, m.floors, m.n
    in_trainval = np.zeros(len(t2), dtype=bool)
    deficit = floors.copy()
    while (deficit > 0).any():
        if in_trainval.sum() == n:
            return None
        gain = np.minimum(t2, deficit).sum(1)
        gain[in_trainval] = -1
        best = int(np.argmax(gain))
        in_trainval[best] = True
        deficit = np.maximum(deficit - t2[best], 0)
    for i in range(len(t2)):
        if in_trainval.sum() >= n:
            break
        in_trainval[i] = True
    return in_trainval


def _local_search(m: _Matrix, in_trainval: np.ndarray, phases: tuple[str, ...],
                  max_iterations: int | None) -> int:
    """Swap videos between trainval and test while it improves; floors always kept. Each
    phase ("l2", then "minimax") repeats its best improving swap until there is none."""
    limit = max_iterations if max_iterations is not None else 20 * len(m.y)
    best_swap = {"l2": _best_l2_swap, "minimax": _best_minimax_swap}
    swaps = 0
    for phase in phases:
        for _ in range(limit):
            s_idx, t_idx = np.flatnonzero(in_trainval), np.flatnonzero(~in_trainval)
            swap = best_swap[phase](m, s_idx, t_idx, m.y[t_idx].sum(0),
                                    m.t2[s_idx].sum(0) - m.floors)
            if swap is None:
                break
            in_trainval[swap[0]] = False
            in_trainval[swap[1]] = True
            swaps += 1
    return swaps


_BIG = np.iinfo(np.int64).max


def _best_l2_swap(m: _Matrix, s_idx: np.ndarray, t_idx: np.ndarray, r: np.ndarray,
                  slack: np.ndarray) -> tuple[int, int] | None:
    """The (trainval video, test video) swap that lowers the test residual's squared norm
    ``r`` the most while keeping the floors (``slack``), or None when none lowers it."""
    y, t2 = m.y, m.t2
    if len(s_idx) * len(t_idx) > _MAX_PAIRS:
        ys_all, yt_all = y[s_idx], y[t_idx]
        s_idx = s_idx[_candidates(2 * (ys_all @ r) + (ys_all * ys_all).sum(1))]
        t_idx = t_idx[_candidates(-2 * (yt_all @ r) + (yt_all * yt_all).sum(1))]
    delta = _pairs(y[s_idx], y[t_idx], r)
    delta[~_allowed(t2[s_idx], t2[t_idx], slack)] = _BIG
    k = int(np.argmin(delta))
    if delta.flat[k] >= 0:
        return None
    i, j = divmod(k, len(t_idx))
    return int(s_idx[i]), int(t_idx[j])


def _best_minimax_swap(m: _Matrix, s_idx: np.ndarray, t_idx: np.ndarray, r: np.ndarray,
                       slack: np.ndarray) -> tuple[int, int] | None:
    """The swap that lowers the largest absolute residual (then the squared norm) while
    keeping the floors, or None when none improves or the search would be too large."""
    y, t2 = m.y, m.t2
    if len(s_idx) * len(t_idx) * y.shape[1] > _MAX_MINIMAX_CELLS:
        return None
    new_r = r[None, None, :] + y[s_idx][:, None, :] - y[t_idx][None, :, :]
    worst = np.abs(new_r).max(2)
    sq = (new_r * new_r).sum(2)
    allowed = _allowed(t2[s_idx], t2[t_idx], slack)
    worst[~allowed] = _BIG
    best_worst = worst.min()
    cur_worst, cur_sq = int(np.abs(r).max()), int((r * r).sum())
    if best_worst > cur_worst:
        return None
    sq[(worst != best_worst) | ~allowed] = _BIG
    k = int(np.argmin(sq))
    if (int(best_worst), int(sq.flat[k])) >= (cur_worst, cur_sq):
        return None
    i, j = divmod(k, len(t_idx))
    return int(s_idx[i]), int(t_idx[j])


@dataclass(frozen=True)
class _Bound:
    """|test share - global share| <= epsilon for one column of the count matrix."""

    label: str
    column: int
    epsilon: float


def _bounds(problem: SplitProblem, m: _Matrix) -> list[_Bound]:
    """The epsilon constraints: every constrained category, and baseline accuracy when
    ``epsilon_accuracy`` is set (the last column of the count matrix)."""
    out = [_Bound(c.label, j, problem.selection.epsilon) for j, c in enumerate(problem.categories)]
    if problem.selection.epsilon_accuracy is not None:
        out.append(_Bound("baseline accuracy", m.counts.shape[1] - 1,
                          problem.selection.epsilon_accuracy))
    return out


def _deviation(m: _Matrix, in_trainval: np.ndarray, bound: _Bound) -> float:
    counts, sizes = m.counts, m.sizes
    test = ~in_trainval
    n_test = int(sizes[test].sum())
    g = int(counts[:, bound.column].sum()) / int(sizes.sum())
    return (int(counts[test, bound.column].sum()) / n_test if n_test else 0.0) - g


def _floor_rows(m: _Matrix) -> tuple[list, list, list]:
    """Exactly n trainval videos, every floor met (x_v = 1 puts video v in trainval)."""
    t2, floors, n = m.t2, m.floors, m.n
    rows, lower, upper = [np.ones(len(t2))], [n], [n]
    for f in range(t2.shape[1]):
        rows.append(t2[:, f].astype(float))
        lower.append(float(floors[f]))
        upper.append(np.inf)
    return rows, lower, upper


def _milp_feasible(m: _Matrix, bounds: list[_Bound]) -> np.ndarray | None:
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


def _best_alone(m: _Matrix, bound: _Bound) -> float | None:
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
    return abs(_deviation(m, np.round(result.x[:k]).astype(bool), bound))


def _reachability(m: _Matrix, bounds: list[_Bound], over: set[str]) -> str:
    """One phrase per bound the heuristic missed (every bound when it found no start): the
    bound needed against the best this category reaches on its own under the floors."""
    lines, alone_ok = [], 0
    for b in bounds:
        if over and b.label not in over:
            continue
        best = _best_alone(m, b)
        if best is None:
            continue
        if best > b.epsilon + 1e-12:
            lines.append(f"{b.label} needs |dev| <= {b.epsilon}, best reachable {best:.4f}")
        else:
            alone_ok += 1
            if over:
                lines.append(f"{b.label} needs |dev| <= {b.epsilon}, reachable alone "
                             f"({best:.4f}) but not together with the other bounds")
    if not lines:
        return (f"each of the {alone_ok} bounds is reachable alone, not all of them together")
    return "; ".join(lines)


def _epsilon_violations(problem: SplitProblem, m: _Matrix, in_trainval: np.ndarray) -> list[str]:
    """``stats.over_epsilon`` of the test pool, from the count matrix (the accuracy column
    is the last one)."""
    test = ~in_trainval
    counts, sizes = m.counts, m.sizes
    n_all, n_test = int(sizes.sum()), int(sizes[test].sum())
    totals, in_test = counts.sum(0), counts[test].sum(0)
    pairs = [(int(totals[j]) / n_all, int(in_test[j]) / n_test if n_test else 0.0)
             for j in [*range(len(problem.categories)), counts.shape[1] - 1]]
    return over_epsilon(problem, pairs[:-1], pairs[-1])


# -- the selection on disk: trainval_selection writes it, frozen_pools reads it ----------------
# Asset edges carry nothing (no Dagster IO manager): each step reads the workspace's own files,
# so two workspaces that share a fingerprint partition never read each other's selection.

SELECTION_FORMAT = 1


def write_selection(path: Path, selection: Selection, input_digests: dict[str, str]) -> None:
    """Write the chosen videos, with the digests of the inputs they were chosen from,
    atomically (a concurrent run of the same workspace writes the same bytes)."""
    doc = {"format": SELECTION_FORMAT, "input_digests": input_digests,
           "trainval": list(selection.trainval), "test": list(selection.test),
           "swaps": selection.swaps}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, canonical_bytes(doc))


def read_selection(path: Path, input_digests: dict[str, str]) -> Selection:
    """The selection trainval_selection wrote, refused unless it was chosen from inputs with
    exactly these digests (an input that changed in between would freeze a stale choice)."""
    how = "materialize trainval_selection again (split-assets run does every step)"
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError("no trainval selection for this split yet", str(path), how) from None
    except ValueError:
        raise InputError("the trainval selection is not one written by split-assets",
                         str(path), how) from None
    if not isinstance(doc, dict) or doc.get("format") != SELECTION_FORMAT:
        raise InputError("the trainval selection is not one written by this release",
                         str(path), how)
    old = doc.get("input_digests", {})
    changed = sorted(k for k in set(old) | set(input_digests)
                     if old.get(k) != input_digests.get(k))
    if changed:
        raise InputError(f"the inputs changed since trainval_selection chose its videos "
                         f"({', '.join(changed)})", str(path), how)
    return Selection(tuple(doc["trainval"]), tuple(doc["test"]), int(doc["swaps"]))
