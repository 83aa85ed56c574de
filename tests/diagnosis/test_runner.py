"""``diagnose(judge, inputs, partition, plan, store)`` with a scripted judge: no endpoint, no
Dagster run -- the pass, its retry pass, the rows it commits, the report, and the stale
partition's missing judge, in a second each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from split_assets.app.session import Session
from split_assets.diagnosis.diagnosis_report import stop_unless_settled
from split_assets.diagnosis.plan import plan_for
from split_assets.diagnosis.runner import diagnose
from split_assets.errors import ConfigError, RunFailure
from split_assets.judge import JudgeCase, JudgeOutcome
from split_assets.judge.schema import Diagnosis

T2 = Diagnosis(tier="T2", error_type="perception", cause_category="missed_evidence",
               rationale="scripted", confidence=0.9)


class ScriptedJudge:
    """Answers T2, except ``degraded`` questions' first ``times`` asks; counts every ask."""

    name = "scripted"

    def __init__(self, degraded: set[str] = frozenset(), times: int = 1) -> None:
        self.degraded, self.times = set(degraded), times
        self.asked: dict[str, int] = {}

    def settings(self) -> dict[str, Any]:
        return {}

    def required_templates(self) -> tuple[str, ...]:
        return ()

    def source_files(self) -> list[Path]:
        return []

    def estimated_calls_per_question(self) -> int:
        return 1

    def estimated_tokens(self, case: JudgeCase, templates: dict[str, str]) -> int:
        return 0

    def request_key(self, case: JudgeCase, templates: dict[str, str]) -> str | None:
        return None

    def start(self, store: Any, fingerprint: str, templates: dict[str, str]) -> None:
        pass

    async def diagnose(self, case: JudgeCase) -> JudgeOutcome:
        qid = case.question.question_id
        self.asked[qid] = self.asked.get(qid, 0) + 1
        if qid in self.degraded and self.asked[qid] <= self.times:
            return JudgeOutcome(None, degraded_reason="scripted: invalid", calls=1)
        return JudgeOutcome(T2, calls=1)

    async def aclose(self) -> None:
        pass


def _run(config: Path, judge: ScriptedJudge | None, stale: bool = False):  # noqa: ANN202
    s = Session.open(config)
    with s.partition.store() as store:
        plan = plan_for(s.inputs.predictions, s.partition, store)
        report = diagnose(judge, s.inputs, s.partition, plan, store)
        rows = store.rows(s.partition.run_id, s.partition.key)
    return plan, report, rows


def test_a_pass_diagnoses_every_wrong_answer_once(small_workspace: Path) -> None:
    judge = ScriptedJudge()
    plan, report, rows = _run(small_workspace, judge)
    assert plan.todo and report.diagnosed == len(plan.todo) == report.calls
    assert set(judge.asked) == set(plan.todo_ids) and set(judge.asked.values()) == {1}
    assert {r.question_id for r in rows} == set(plan.todo_ids)
    assert {r.tier for r in rows} == {"T2"} and not report.still_degraded
    # again: everything is done, nothing is asked
    again = ScriptedJudge()
    plan, report, _ = _run(small_workspace, again)
    assert (plan.todo, report.diagnosed, again.asked) == ([], 0, {})


def test_a_degraded_answer_gets_one_more_pass_in_the_same_run(small_workspace: Path) -> None:
    s = Session.open(small_workspace)
    with s.partition.store() as store:
        first = plan_for(s.inputs.predictions, s.partition, store).todo_ids[0]
    judge = ScriptedJudge({first}, times=1)
    _, report, rows = _run(small_workspace, judge)
    assert judge.asked[first] == 2 and report.retried_degraded == 1
    assert not report.still_degraded
    assert {r.question_id: r.degraded for r in rows}[first] is False


def test_still_degraded_after_the_retry_stops_the_run(small_workspace: Path) -> None:
    s = Session.open(small_workspace)
    with s.partition.store() as store:
        first = plan_for(s.inputs.predictions, s.partition, store).todo_ids[0]
    _, report, _ = _run(small_workspace, ScriptedJudge({first}, times=2))
    assert report.still_degraded == [first]
    with pytest.raises(RunFailure, match="1 diagnosis.es. stayed degraded"):
        stop_unless_settled("fp-x", report, allowed=0, tag="t")
    stop_unless_settled("fp-x", report, allowed=1, tag="t")  # --allow-degraded 1


def test_a_stale_partition_has_no_judge_and_refuses_work(small_workspace: Path) -> None:
    with pytest.raises(ConfigError, match="is stale: it can be re-frozen"):
        _run(small_workspace, None)
    _run(small_workspace, ScriptedJudge())  # everything diagnosed: no judge needed any more
    plan, report, _ = _run(small_workspace, None)
    assert plan.todo == [] and report.diagnosed == 0
