"""Trainval selection (SPEC §6.1): exactly ``n_trainval`` videos, the floors met, the test pool
as close to the global distribution as the integers allow.

Method: videos sorted by id and shuffled with ``seed``; a greedy cover of the floors; a fill in
shuffled order; then swap local search on exact integer residuals (test counts scaled by the
benchmark size minus the global share times the test size), first by squared error, then by the
largest single deviation. When that heuristic misses a constraint, an exact feasibility MILP
(scipy's HiGHS) decides: it either finds a start that meets the floors and epsilon, which the
minimax search then improves, or proves that none exists and the error gives the figures.
When videos differ in size, an exact MILP per test-pool size (optimum.py, node-limited)
replaces the swap search's pool when it is strictly better.
Every limit is an iteration count, never a clock, and every quantity
is an integer, so the same input gives the same videos on any machine.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_assets.errors import InputError
from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes
from split_assets.split.feasibility import (
    bounds_of,
    check_floors_reachable,
    epsilon_violations,
    infeasible,
    milp_feasible,
)
from split_assets.split.impossible import EpsilonMissed
from split_assets.split.large import select_by_class
from split_assets.split.matrix import Matrix, build_matrix
from split_assets.split.problem import SplitProblem
from split_assets.split.sizes import require_test_pool
from split_assets.split.swap_math import floors_kept, swap_deltas

# Above this many candidate pairs the swap search looks at the most promising videos only.
_MAX_PAIRS = 4_000_000
_CANDIDATES = 1024
_MAX_MINIMAX_CELLS = 8_000_000
# Above this many videos the selection works on classes of interchangeable videos (large.py).
LARGE_VIDEOS = 5_000
_POLISH_NODES = 20_000  # branch-and-bound nodes per question count: a count, never a clock
_POLISH_NODES_NEW, _POLISH_TOTALS_NEW = 4_000, 8  # with floor_share or balance_runs


@dataclass(frozen=True)
class Selection:
    """The chosen trainval videos and the test videos (each sorted)."""

    trainval: tuple[str, ...]
    test: tuple[str, ...]
    swaps: int


def _candidates(scores: np.ndarray) -> np.ndarray:
    if len(scores) <= _CANDIDATES:
        return np.arange(len(scores))
    return np.sort(np.argsort(scores, kind="stable")[:_CANDIDATES])


def select_trainval(problem: SplitProblem, max_iterations: int | None = None) -> Selection:
    """Choose the trainval videos; raise a ``SplitImpossible`` with figures when impossible."""
    vids = list(problem.videos)
    n = problem.selection.n_trainval
    require_test_pool(n, len(vids))
    order = sorted(vids)
    random.Random(problem.selection.seed).shuffle(order)
    m = build_matrix(problem, order)
    check_floors_reachable(m)
    by_class = problem.selection.selector == "class_lp" or (problem.selection.selector == "auto"
                                                  and len(order) > LARGE_VIDEOS)
    if by_class:  # interchangeable videos: decide per class (large.py)
        in_trainval, swaps = _by_class(problem, m)
        if in_trainval is not None and not epsilon_violations(problem, m, in_trainval):
            return _selection(order, in_trainval, swaps)
    in_trainval = _greedy_start(m)
    swaps = 0
    if in_trainval is not None:
        swaps = _local_search(m, in_trainval, ("l2", "minimax"), max_iterations)
        in_trainval = _polish(m, in_trainval, _polish_budget(problem))
        if not epsilon_violations(problem, m, in_trainval):
            return _selection(order, in_trainval, swaps)
    # The heuristic missed: ask an exact MILP whether floors and epsilon can hold together.
    exact = milp_feasible(m, bounds_of(problem, m))
    if exact is None:
        raise infeasible(problem, m, in_trainval)
    swaps += _local_search(m, exact, ("minimax",), max_iterations)
    over_lines = epsilon_violations(problem, m, exact)
    if over_lines:  # cannot happen: minimax swaps never raise the worst deviation
        raise EpsilonMissed(tuple(over_lines))
    return _selection(order, exact, swaps)


def _by_class(problem: SplitProblem, m: Matrix) -> tuple[np.ndarray | None, int]:
    """The class selection (large.py). Balanced runs' columns would make nearly every video a
    class of its own (6 runs: 84,000 classes of 90,000 videos, and an LP 30 times slower), so
    the classes are made without them, and the runs are balanced afterwards by an LP over a
    few thousand videos set free (refine.py; floors kept)."""
    from split_assets.split.refine import refine

    keep = [j for j in range(m.counts.shape[1]) if j not in m.run_columns]
    in_trainval = select_by_class(m.counts[:, keep], m.sizes, m.t2, m.floors, m.n)
    if in_trainval is None or not m.run_columns:
        return in_trainval, 0
    refined = refine(m, in_trainval)
    return (in_trainval if epsilon_violations(problem, m, refined) else refined), 0


def _largest_deviation(m: Matrix, test: np.ndarray) -> float:
    g = m.counts.sum(0) / m.sizes.sum()
    return float(np.abs(m.counts[test].sum(0) / m.sizes[test].sum() - g).max())


def _polish_budget(problem: SplitProblem) -> tuple[int, int | None]:
    """(nodes, question counts) of the polish: as before for a config of an earlier release
    (its bytes never move); for one with ``floor_share`` or ``balance_runs`` (issue 45), fewer:
    floors from the diagnoses of every task type make each count's MILP run to its node
    limit (LongVideoBench's shape: 188 counts, 72 s, for the same deviation)."""
    s = problem.selection
    if s.floor_share is None and not s.balance_runs:
        return _POLISH_NODES, None
    return _POLISH_NODES_NEW, _POLISH_TOTALS_NEW


def _polish(m: Matrix, in_trainval: np.ndarray,
            budget: tuple[int, int | None] = (_POLISH_NODES, None)) -> np.ndarray:
    """When videos differ in size, the swap search keeps near its first test pool's question
    count, where rounding alone may bound it away from the best deviation: an exact MILP
    over every question count (optimum.py) replaces its pool when one is strictly better,
    the floors kept. Equal-size videos (Video-MME's three per video) are left as they are."""
    from split_assets.split.optimum import minimax_pool

    if m.sizes.min() == m.sizes.max() or len(m.sizes) > LARGE_VIDEOS:
        return in_trainval
    current = _largest_deviation(m, ~in_trainval)
    caps = (m.t2.astype(float), (m.t2.sum(0) - m.floors).astype(float)) if len(m.floors) \
        else None
    found = minimax_pool(m.counts.astype(float), m.sizes.astype(float),
                         int((~in_trainval).sum()), current, caps, node_limit=budget[0],
                         max_totals=budget[1])
    if found.test is None or _largest_deviation(m, found.test) >= current - 1e-12:
        return in_trainval
    return ~found.test


def _selection(order: list[str], in_trainval: np.ndarray, swaps: int) -> Selection:
    trainval = tuple(sorted(order[i] for i in np.flatnonzero(in_trainval)))
    test = tuple(sorted(order[i] for i in np.flatnonzero(~in_trainval)))
    return Selection(trainval, test, swaps)


def _greedy_start(m: Matrix) -> np.ndarray | None:
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


def _local_search(m: Matrix, in_trainval: np.ndarray, phases: tuple[str, ...],
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


def _best_l2_swap(m: Matrix, s_idx: np.ndarray, t_idx: np.ndarray, r: np.ndarray,
                  slack: np.ndarray) -> tuple[int, int] | None:
    """The (trainval video, test video) swap that lowers the test residual's squared norm
    ``r`` the most while keeping the floors (``slack``), or None when none lowers it."""
    y, t2 = m.y, m.t2
    if len(s_idx) * len(t_idx) > _MAX_PAIRS:
        # the most promising trainval videos may be the very ones the floors hold: look among
        # those that may leave on their own (issue 45's configs; never none)
        free = s_idx[(t2[s_idx] <= slack[None, :]).all(1)]
        if m.floors_aware and len(free):
            s_idx = free
        ys_all, yt_all = y[s_idx], y[t_idx]
        s_idx = s_idx[_candidates(2 * (ys_all @ r) + (ys_all * ys_all).sum(1))]
        t_idx = t_idx[_candidates(-2 * (yt_all @ r) + (yt_all * yt_all).sum(1))]
    delta = swap_deltas(y[s_idx], y[t_idx], r)
    delta[~floors_kept(t2[s_idx], t2[t_idx], slack)] = _BIG
    k = int(np.argmin(delta))
    if delta.flat[k] >= 0:
        return None
    i, j = divmod(k, len(t_idx))
    return int(s_idx[i]), int(t_idx[j])


def _best_minimax_swap(m: Matrix, s_idx: np.ndarray, t_idx: np.ndarray, r: np.ndarray,
                       slack: np.ndarray) -> tuple[int, int] | None:
    """The swap that lowers the largest absolute residual (then the squared norm) while
    keeping the floors, or None when none improves or the search would be too large."""
    y, t2 = m.y, m.t2
    if len(s_idx) * len(t_idx) * y.shape[1] > _MAX_MINIMAX_CELLS:
        return None
    new_r = r[None, None, :] + y[s_idx][:, None, :] - y[t_idx][None, :, :]
    worst = np.abs(new_r).max(2)
    sq = (new_r * new_r).sum(2)
    allowed = floors_kept(t2[s_idx], t2[t_idx], slack)
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
