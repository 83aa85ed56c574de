"""The rules judge: each rule on a hand-made case, and agreement with the planted labels."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from split_assets.app.session import Session
from split_assets.diagnosis.cases import CaseSource
from split_assets.diagnosis.plan import wrong_to_diagnose
from split_assets.errors import InputError
from split_assets.judge import JudgeCase
from split_assets.judge.rules import RulesJudge
from split_assets.settings import RulesJudgeConfig
from split_assets.sources.benchmark import Question
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.sources.trace_steps import TraceStep
from split_assets.sources.video_store import Skill, TreeNode, VideoTree

TREE = VideoTree("v1", 100.0, {
    "n0": TreeNode("n0", 0, 100, "whole video", 0),
    "n0.1": TreeNode("n0.1", 0, 50, "first half", 1),
    "n0.2": TreeNode("n0.2", 50, 100, "second half", 1),
}, "digest")
COUNTING = Skill("counting", ("Counting Problem",), "count_objects", "count carefully")


def case(trace: list[tuple[str, dict]], spans=((60.0, 70.0),), stop: str = "answer",
         task: str = "Counting Problem") -> JudgeCase:
    q = Question("v1-1", "v1", task, "short", "B", "How many?", ("A. 1", "B. 2", "C. 3", "D. 4"),
                 spans)
    p = CanonicalPrediction("v1-1", "v1", task, "short", "B", "C", False, False, stop, False,
                            "s", "C")
    steps = [TraceStep(i, kind, content) for i, (kind, content) in enumerate(trace)]
    return JudgeCase(q, p, steps, TREE, [COUNTING])


def open_node(node: str) -> tuple[str, dict]:
    return ("tool_call", {"tool": "open_node", "args": {"node_id": node}})


COUNT = ("tool_call", {"tool": "count_objects", "args": {"node_id": "n0.2", "object": "cup"}})
JUDGE = RulesJudge(RulesJudgeConfig(), "full")


def test_step_limit_is_a_defect() -> None:
    d = JUDGE.decide(case([open_node("n0.2"), COUNT], stop="max_steps"))
    assert (d.tier, d.cause_category, d.evolution_target) == (
        "T2", "insufficient_evidence", "prompt:search_budget")


def test_missed_evidence_is_a_defect_targeting_the_skill() -> None:
    d = JUDGE.decide(case([open_node("n0.1"), COUNT]))
    assert (d.tier, d.cause_category, d.evolution_target) == ("T2", "missed_evidence",
                                                              "skill:counting")


def test_no_node_opened_without_labels_is_a_defect() -> None:
    d = JUDGE.decide(case([("thought", {"text": "guess"})], spans=None))
    assert (d.tier, d.cause_category) == ("T2", "missed_evidence")


def test_skill_nonadherence_is_a_defect() -> None:
    d = JUDGE.decide(case([open_node("n0.2")]))
    assert (d.tier, d.cause_category, d.evolution_target) == ("T2", "skill_nonadherence",
                                                              "skill:counting")


def test_evidence_seen_and_skill_followed_is_a_lapse() -> None:
    d = JUDGE.decide(case([open_node("n0.2"), COUNT]))
    assert (d.tier, d.cause_category, d.evolution_target) == ("T1", "misread_evidence", None)
    assert asyncio.run(JUDGE.diagnose(case([open_node("n0.2"), COUNT]))).calls == 0


def test_node_not_in_tree_fails_loud() -> None:
    with pytest.raises(InputError, match="not in the tree"):
        JUDGE.decide(case([open_node("n9")]))


def test_agrees_with_planted_labels(small_workspace: Path) -> None:
    ws = Session.open(small_workspace)
    wrong = wrong_to_diagnose(ws.inputs.predictions)
    cases = CaseSource(ws.inputs, wrong).cases(wrong)
    planted = json.loads((small_workspace.parent / "planted_labels.json").read_text())
    agree = sum(JUDGE.decide(c).tier == planted[c.question.question_id]["tier"] for c in cases)
    assert len(cases) > 20
    assert agree / len(cases) >= 0.99
