"""The selection's data as integer matrices, one row per video in the seeded order (SPEC §6.1):
counts per balanced category, sizes, exact integer residuals, and T2 per floored task type."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from split_assets.split.problem import SplitProblem


@dataclass(frozen=True)
class Matrix:
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
    run_columns: tuple[int, ...] = ()  # the balanced runs' columns (``balance_runs``)
    # issue 45's configs (floor_share or balance_runs): the swap search at scale looks among
    # the trainval videos the floors let leave (an earlier config's search is left as it was)
    floors_aware: bool = False


def build_matrix(problem: SplitProblem, order: list[str]) -> Matrix:
    types, t2, floors = _floor_matrix(problem, order)
    counts, sizes = _count_matrices(problem, order)
    first = len(problem.categories) + len(problem.balanced)
    return Matrix(order, counts, sizes, _residual_matrix(counts, sizes), t2, floors, types,
                  problem.selection.n_trainval,
                  tuple(range(first, first + len(problem.run_columns))),
                  problem.selection.floor_share is not None or bool(problem.selection.balance_runs))


def _count_matrices(problem: SplitProblem, order: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per video: counts per balanced category (the constrained ones first, then the values of
    the ``balance`` fields, then each balanced run's correct -- and, when it answers only part
    of the benchmark, answered -- questions) plus baseline-correct answers (last column), and
    sizes."""
    cats = [*problem.categories, *problem.balanced, *problem.run_columns]
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
            for run, ok in zip(problem.selection.balance_runs, q.runs, strict=True):
                keys = [] if ok is None else [("run_answered", run)] + ([("run_correct", run)]
                                                                         if ok else [])
                for key in keys:
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
    types = sorted(t for t, k in problem.floors.items() if k > 0)
    index = {t: f for f, t in enumerate(types)}
    t2 = np.zeros((len(order), len(types)), dtype=np.int64)
    for i, vid in enumerate(order):
        for q in problem.videos[vid]:
            f = index.get(q.task_type)
            if f is not None and q.is_floor_t2:
                t2[i, f] += 1
    floors = np.array([problem.floors[t] for t in types], dtype=np.int64)
    return types, t2, floors
