"""The power figures of a frozen split: the minimum detectable accuracy gain of McNemar's test
on validation and on test (``mcnemar.power_summary``).

A re-run of the baseline shows how answers move by chance: the control run
(``evaluation.control_run``) when it is in the harness db, else the reference runs (other runs,
possibly other models: more discordant, so conservative). The expected discordance is
``evaluation.discordance`` if set, else measured against those re-runs on the pool, else assumed
at ``DEFAULT_DISCORDANCE``; the design effect comes from the intra-video correlation of the
paired differences with the first re-run, else (conservatively) of baseline correctness.
"""

from __future__ import annotations

from typing import Any

from split_assets.config_keys import config_key
from split_assets.evaluation.mcnemar import power_summary
from split_assets.split.problem import SplitProblem
from split_assets.workspace.other_runs import CONTROL

DEFAULT_DISCORDANCE = 0.15
ALPHA, POWER = 0.05, 0.8


def pool_power(problem: SplitProblem, videos: dict[str, tuple[str, ...]],
               reruns: list[tuple[str, dict[str, bool | None]]],
               discordance: float | None) -> dict[str, Any]:
    """``{"validation": {...}, "test": {...}}`` power summaries. ``reruns``: (name, correctness
    per question, None where unanswered) of the control run, else of each reference run, scored
    like the baseline (``sources/run_outcomes.py``); empty when there is none."""
    control = bool(reruns) and reruns[0][0] == CONTROL
    out: dict[str, Any] = {}
    for pool in ("validation", "test"):
        per_video = [problem.videos[v] for v in videos[pool]]
        questions = [q for qs in per_video for q in qs]
        shares = []
        for _, rerun in reruns:
            usable = [(q.correct, rerun[q.question_id]) for q in questions
                      if rerun.get(q.question_id) is not None]
            if usable:
                shares.append(sum(a != b for a, b in usable) / len(usable))
        runs = (reruns[0][0] if control else f"{len(reruns)} reference run(s)")
        if discordance is not None:
            psi, source = discordance, config_key("discordance")
        elif shares and sum(shares) > 0:
            psi = sum(shares) / len(shares)
            source = f"measured: baseline vs {runs}"
        else:
            psi, source = DEFAULT_DISCORDANCE, (f"assumed {DEFAULT_DISCORDANCE} "
                                                f"({_why(runs, bool(reruns), shares)})")
        if reruns:
            name, rerun = reruns[0]
            groups = [[float(rerun[q.question_id]) - float(q.correct) for q in qs
                       if rerun.get(q.question_id) is not None] for qs in per_video]
            icc_source = f"paired differences with {name}"
        else:
            groups = [[float(q.correct) for q in qs] for qs in per_video]
            icc_source = "baseline correctness (no re-run: conservative)"
        out[pool] = power_summary(groups, psi, source, icc_source, ALPHA, POWER)
    return out


def _why(runs: str, any_rerun: bool, shares: list[float]) -> str:
    """Why the discordance of a pool could not be measured, and what to do."""
    if not any_rerun:
        return f"no control or reference run; set {config_key('discordance')}"
    if not shares:
        return (f"{runs} answered no question of this pool; import its answers or set "
                f"{config_key('discordance')}")
    return (f"{runs} agree with the baseline on every answer of this pool (measured 0), which "
            f"says nothing of how answers move; set {config_key('discordance')} or import a "
            "control run")


def reference_discordance(problem: SplitProblem, references: dict[str, dict[str, bool | None]]
                          ) -> dict[str, tuple[int, int]]:
    """Per reference run: (answers whose correctness differs from the baseline's, answers
    both gave), over the whole benchmark (the ``reference_runs_informative`` check)."""
    out = {}
    for run, correct in references.items():
        both = [(q.correct, correct[q.question_id]) for q in problem.questions
                if correct.get(q.question_id) is not None]
        out[run] = (sum(a != b for a, b in both), len(both))
    return out
