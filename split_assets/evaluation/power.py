"""The power figures of a frozen split: the minimum detectable accuracy gain of McNemar's test
on validation and on test (``mcnemar.power_summary``), with the expected discordance taken from
``evaluation.discordance``, else measured between the baseline and its reference runs on that
pool, else assumed at ``DEFAULT_DISCORDANCE``."""

from __future__ import annotations

from typing import Any

from split_assets.evaluation.mcnemar import power_summary
from split_assets.split.problem import SplitProblem

DEFAULT_DISCORDANCE = 0.15
ALPHA, POWER = 0.05, 0.8


def pool_power(problem: SplitProblem, videos: dict[str, tuple[str, ...]],
               reference_wrong: dict[str, tuple[bool | None, ...]],
               discordance: float | None) -> dict[str, Any]:
    """``{"validation": {...}, "test": {...}}`` power summaries (SPEC figures, README)."""
    out: dict[str, Any] = {}
    for pool in ("validation", "test"):
        groups = [[q.correct for q in problem.videos[v]] for v in videos[pool]]
        if discordance is not None:
            psi, source = discordance, "evaluation.discordance"
        else:
            psi, source = _measured(problem, videos[pool], reference_wrong)
        out[pool] = power_summary(groups, psi, source, ALPHA, POWER)
    return out


def _measured(problem: SplitProblem, videos: tuple[str, ...],
              reference_wrong: dict[str, tuple[bool | None, ...]]) -> tuple[float, str]:
    """Mean share of questions on which a reference run and the baseline disagree."""
    questions = [q for v in videos for q in problem.videos[v]]
    runs = len(next(iter(reference_wrong.values()), ()))
    shares = []
    for r in range(runs):
        usable = [(q.correct, not reference_wrong[q.question_id][r]) for q in questions
                  if reference_wrong.get(q.question_id, (None,) * runs)[r] is not None]
        if usable:
            shares.append(sum(a != b for a, b in usable) / len(usable))
    if shares and sum(shares) > 0:
        return sum(shares) / len(shares), f"measured: baseline vs {len(shares)} reference run(s)"
    return DEFAULT_DISCORDANCE, "assumed (no reference runs; set evaluation.discordance)"
