"""The counts that refute a split before any judge is paid, and the T0 rows of INFRA answers:
plain functions over plain data, tested in memory (no workspace, no Dagster)."""

from __future__ import annotations

import pytest

from split_assets.app.messages import as_user_error
from split_assets.diagnosis.plan import check_before_diagnosis, infra_rows
from split_assets.errors import ConfigError, InfeasibleSplitError
from split_assets.settings import VideoSplitConfig
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.split.impossible import (
    FloorGap,
    FloorsAboveOpen,
    NoTestPool,
    ValidationWrongShort,
)
from split_assets.store.signals import SignalRow


def _pred(qid: str, video: str, correct: bool, task: str = "OCR Problems",
          infra: bool = False, stop: str | None = "answer") -> CanonicalPrediction:
    return CanonicalPrediction(qid, video, task, "short", "A", "A" if correct else "B",
                               correct, infra, stop, False, None, None)


def _settings(**changes: object) -> VideoSplitConfig:
    base = {"baseline_run_id": "r", "n_trainval": 4, "epsilon": 0.1, "report_floor": 0,
            "val_wrong_min": 0, "val_ratio": 0.5, "seed": 7, "floor_k": {}}
    return VideoSplitConfig(**{**base, **changes})


# six videos; video v0 holds 3 wrong answers, v1 2, v2 1, the others none
PREDS = [_pred(f"{v}-{i}", v, correct=i >= wrong)
         for v, wrong in (("v0", 3), ("v1", 2), ("v2", 1), ("v3", 0), ("v4", 0), ("v5", 0))
         for i in range(3)]


def _row(p: CanonicalPrediction, tier: str, degraded: bool = False) -> SignalRow:
    return SignalRow(p.question_id, "r", "fp", p.video_id, p.task_type, tier, degraded=degraded)


def test_feasible_counts_pass() -> None:
    check_before_diagnosis(_settings(val_wrong_min=5), 6, PREDS, [])


def test_n_trainval_must_leave_a_test_pool() -> None:
    with pytest.raises(NoTestPool) as err:
        check_before_diagnosis(_settings(n_trainval=6, val_ratio=0.3), 6, PREDS, [])
    assert (err.value.n_trainval, err.value.n_videos) == (6, 6)
    assert isinstance(as_user_error(err.value), ConfigError)
    assert "n_trainval is 6 but the benchmark has 6 videos" in as_user_error(err.value).line()


def test_val_wrong_min_above_what_any_draw_holds() -> None:
    # 2 validation videos (0.5 * 4) hold at most 3 + 2 wrong answers
    with pytest.raises(ValidationWrongShort) as err:
        check_before_diagnosis(_settings(val_wrong_min=6), 6, PREDS, [])
    assert (err.value.val_wrong_min, err.value.n_validation, err.value.most) == (6, 2, 5)
    assert ("val_wrong_min 6 cannot be met: 2 validation videos hold at most 5 baseline-wrong "
            "questions" in as_user_error(err.value).line())


def test_floors_count_known_t2_and_open_diagnoses() -> None:
    wrong = [p for p in PREDS if not p.correct]  # 6 wrong OCR answers
    rows = [_row(wrong[0], "T1"), _row(wrong[1], "T2"), _row(wrong[2], "T2", degraded=True)]
    # at most 1 known T2 + 4 open (3 undiagnosed, 1 degraded) = 5
    check_before_diagnosis(_settings(floor_k={"OCR Problems": 5}), 6, PREDS, rows)
    with pytest.raises(FloorsAboveOpen) as err:
        check_before_diagnosis(_settings(floor_k={"OCR Problems": 6}), 6, PREDS, rows)
    assert err.value.gaps == (FloorGap("OCR Problems", 6, 5, known=1, open=4),)
    assert isinstance(as_user_error(err.value), InfeasibleSplitError)
    assert ("OCR Problems: floor 6, at most 5 (1 T2 known, 4 not yet diagnosed)"
            in as_user_error(err.value).line())


def test_infra_rows_are_t0_for_wrong_infra_answers_only() -> None:
    preds = [_pred("a", "v", False, infra=True, stop="error"),
             _pred("b", "v", True, infra=True, stop="error"),  # right despite the error
             _pred("c", "v", False)]
    rows = infra_rows(preds, "run-1", "fp-1")
    assert [(r.question_id, r.tier, r.infra, r.baseline_run_id, r.diag_fingerprint, r.rationale)
            for r in rows] == [("a", "T0", True, "run-1", "fp-1", "stop_reason:error")]
