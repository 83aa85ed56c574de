"""Test representative for models not yet run (issue 45): the ``balance_runs``' figures.

Each balanced run's correctness is one more balanced dimension of the selection (``matrix.py``),
so its test accuracy stays as close to its full-benchmark accuracy as the baseline's. How close
that keeps a model that was *not* balanced -- the evolved agent a paper reports -- is estimated
by leaving each balanced run out in turn: the split is selected again without it, and its own
|test - full| accuracy deviation on that split is what a model like it, never seen by the
selection, would show. Beside it, the same figure for seeded random video-level pools of the
same size (what a split that balances nothing gives).

Accuracies are over the questions a run answered (a partial run counts where it answers)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from split_assets.split.problem import SplitProblem

RANDOM_DRAWS = 200  # random pools per leave-one-run-out estimate (seeded with the split's seed)


def run_deviations(problem: SplitProblem, test_videos: tuple[str, ...] | list[str]
                   ) -> dict[str, float]:
    """Each balanced run's test accuracy minus its full-benchmark accuracy (fractions)."""
    test = set(test_videos)
    out = {}
    for i, run in enumerate(problem.selection.balance_runs):
        full = [q.runs[i] for q in problem.questions if q.runs[i] is not None]
        part = [q.runs[i] for v in test for q in problem.videos[v] if q.runs[i] is not None]
        out[run] = (sum(part) / len(part) if part else 0.0) - (sum(full) / len(full)
                                                                if full else 0.0)
    return out


def without_run(problem: SplitProblem, run: str) -> SplitProblem:
    """The same problem with ``run`` no longer balanced."""
    i = problem.selection.balance_runs.index(run)
    questions = tuple(dataclasses.replace(q, runs=q.runs[:i] + q.runs[i + 1:])
                      for q in problem.questions)
    runs = tuple(r for r in problem.selection.balance_runs if r != run)
    return SplitProblem(questions, selection=dataclasses.replace(problem.selection,
                                                                 balance_runs=runs),
                        validation=problem.validation)


def random_pool_deviations(problem: SplitProblem, n_test_videos: int,
                           draws: int = RANDOM_DRAWS) -> dict[str, float]:
    """Per balanced run, the mean |test - full| accuracy deviation over ``draws`` seeded random
    test pools of ``n_test_videos`` whole videos."""
    runs = problem.selection.balance_runs
    videos = list(problem.videos)
    answered = np.zeros((len(videos), len(runs)))
    correct = np.zeros((len(videos), len(runs)))
    for v, vid in enumerate(videos):
        for q in problem.videos[vid]:
            for i, ok in enumerate(q.runs):
                if ok is not None:
                    answered[v, i] += 1
                    correct[v, i] += ok
    full = correct.sum(0) / np.maximum(answered.sum(0), 1)
    rng = np.random.default_rng([problem.selection.seed % 2 ** 63, 45])  # any int seed
    total = np.zeros(len(runs))
    for _ in range(draws):
        pick = rng.choice(len(videos), size=n_test_videos, replace=False)
        acc = correct[pick].sum(0) / np.maximum(answered[pick].sum(0), 1)
        total += np.abs(acc - full)
    return {run: float(total[i] / draws) for i, run in enumerate(runs)}


def leave_one_run_out(problem: SplitProblem, draws: int = RANDOM_DRAWS) -> dict[str, Any]:
    """For each balanced run: select again without it and take its |test - full| accuracy
    deviation there; mean and max over the runs, beside seeded random pools of the same size
    (fractions, rounded to 6 places)."""
    from split_assets.split.selection import select_trainval

    runs = problem.selection.balance_runs
    held_out: dict[str, float] = {}
    n_test = len(problem.videos) - problem.selection.n_trainval
    for run in runs:
        reduced = without_run(problem, run)
        test = select_trainval(reduced).test
        held_out[run] = abs(run_deviations(problem, test)[run])
    random = random_pool_deviations(problem, n_test, draws) if runs else {}
    return {
        "per_run": {r: round(held_out[r], 6) for r in runs},
        "mean": round(float(np.mean(list(held_out.values()))), 6) if runs else None,
        "max": round(max(held_out.values()), 6) if runs else None,
        "random_pools": {"per_run": {r: round(random[r], 6) for r in runs},
                         "mean": round(float(np.mean(list(random.values()))), 6)
                         if runs else None,
                         "max": round(max(random.values()), 6) if runs else None,
                         "draws": draws, "test_videos": n_test},
    }


def balance_section(problem: SplitProblem, test_videos: list[str]) -> dict[str, Any]:
    """The manifest's ``balance_runs``: each balanced run's own test deviation on this split
    and the leave-one-run-out estimate for a model that was not balanced."""
    return {"runs": list(problem.selection.balance_runs),
            "test_deviation": {r: round(d, 6)
                               for r, d in run_deviations(problem, test_videos).items()},
            "leave_one_run_out": leave_one_run_out(problem)}
