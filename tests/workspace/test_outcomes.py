"""One rule for another run's outcome per question (reference, candidate, control): scored
like the baseline -- the letter against the answer, whatever the stop reason; an unanswered
question has no outcome -- and for the rules judge's reference evidence an INFRA answer is no
evidence."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import edit_config

from split_assets.app.session import Session
from split_assets.errors import InputError


def _copy_run(config: Path, run: str, crashed: list[str], drop: str) -> None:
    """``run``: the baseline's answers; ``crashed`` stopped by an error (the first without an
    answer, the second with its answer kept), ``drop`` unanswered."""
    with sqlite3.connect(config.parent / "harness.db") as conn:
        base = Session.open(config).partition.run_id
        conn.execute("INSERT INTO predictions SELECT ?, question_id, prediction, raw_response, "
                     "stop_reason, attempt, created_at, session_id FROM predictions WHERE "
                     "run_id = ? AND question_id != ?", (run, base, drop))
        conn.executemany("UPDATE predictions SET stop_reason = 'error' WHERE run_id = ? AND "
                         "question_id = ?", [(run, q) for q in crashed])
        conn.execute("UPDATE predictions SET prediction = '', raw_response = 'Traceback' "
                     "WHERE run_id = ? AND question_id = ?", (run, crashed[0]))


def test_infra_counts_wrong_and_unanswered_has_no_outcome(small_workspace: Path) -> None:
    ws = Session.open(small_workspace)
    right = [p.question_id for p in ws.inputs.predictions if p.correct and not p.infra]
    empty, kept, drop = right[:3]
    _copy_run(small_workspace, "ctrl", [empty, kept], drop)
    edit_config(small_workspace, evaluation={"control_run": "ctrl"})
    ws = Session.open(small_workspace)
    outcomes = ws.inputs.outcomes("ctrl", "control", "evaluation.control_run")
    assert outcomes.correct[empty] is False and empty in outcomes.infra  # no letter: wrong
    assert outcomes.correct[kept] is True and kept not in outcomes.infra  # right: never INFRA
    assert outcomes.correct[drop] is None and drop not in outcomes.infra
    evidence = outcomes.defect_evidence()
    assert evidence[empty] is None and evidence[kept] is False  # a crash says nothing
    assert evidence[right[3]] is False
    assert ws.inputs.control_outcomes() == outcomes.correct  # the power estimate scores it the same


def test_a_run_not_in_the_harness_db_is_one_line(small_workspace: Path) -> None:
    ws = Session.open(small_workspace)
    with pytest.raises(InputError, match=r"candidate run 'nope' not in the harness database"):
        ws.inputs.outcomes("nope", "candidate", "--candidate")


def test_power_scores_every_rerun_alike(small_workspace: Path) -> None:
    """The power figures' re-runs (the control run, else the reference runs) are scored like
    the baseline: an INFRA answer is a wrong answer there too, not a missing one."""
    ws = Session.open(small_workspace)
    right = [p.question_id for p in ws.inputs.predictions if p.correct and not p.infra]
    _copy_run(small_workspace, "ref1", [right[0], right[1]], right[2])
    edit_config(small_workspace, diag={"reference_runs": ["ref1"]})
    (name, scored), = Session.open(small_workspace).inputs.power_reruns()
    assert name == "reference run 1"
    assert (scored[right[0]], scored[right[1]], scored[right[2]]) == (False, True, None)
    edit_config(small_workspace, evaluation={"control_run": "ref1"})
    reruns = Session.open(small_workspace).inputs.power_reruns()
    assert [n for n, _ in reruns] == ["the control run"]
