"""Judges: turn one wrong answer into a diagnosis. ``build_judge`` is the one place that picks
a judge from the config, so a new judge plugs in without touching the assets."""

from __future__ import annotations

from split_assets.judge.base import Diagnosis, Judge, JudgeCase, JudgeOutcome
from split_assets.judge.rules import RulesJudge
from split_assets.settings import DiagConfig

__all__ = ["Diagnosis", "Judge", "JudgeCase", "JudgeOutcome", "RulesJudge", "build_judge"]


def build_judge(diag: DiagConfig) -> Judge:
    """The judge named by ``diag.judge`` in ``diag.context``."""
    if diag.judge == "rules":
        return RulesJudge(diag.rules, diag.context, tuple(diag.reference_runs), diag.agree_needed)
    from split_assets.judge.openai_judge import OpenAIJudge

    return OpenAIJudge(diag)
