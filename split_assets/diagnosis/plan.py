"""What a run diagnoses, decided once: the dry run prints this plan and the run carries it
out (``tests/diagnosis/test_plan.py`` checks they agree)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from split_assets.settings.sections import validation_size
from split_assets.sources.harness_db import CanonicalPrediction, wrong_to_diagnose
from split_assets.split.impossible import FloorGap, FloorsAboveOpen, ValidationWrongShort
from split_assets.split.sizes import most_wrong_in_validation, require_test_pool
from split_assets.store.signals import SignalRow, SignalStore

if TYPE_CHECKING:
    from split_assets.settings import VideoSplitConfig
    from split_assets.workspace.partition import Partition


def is_infra_wrong(p: CanonicalPrediction) -> bool:
    """A wrong INFRA answer: a T0 row, never sent to the judge."""
    return not p.correct and p.infra


@dataclass(frozen=True)
class DiagnosisPlan:
    """``wrong``: every answer the judge sees; ``todo``: those not done (store ``DONE``) and
    not settled by a frozen split; ``settled``: degraded answers a frozen split accepted."""

    wrong: list[CanonicalPrediction]
    todo: list[CanonicalPrediction]
    settled: frozenset[str]

    @property
    def already_done(self) -> int:
        return len(self.wrong) - len(self.todo)

    @property
    def todo_ids(self) -> list[str]:
        return [p.question_id for p in self.todo]

    def shard(self, index: int, count: int) -> DiagnosisPlan:
        """Shard ``index`` of ``count``: the same questions, its own stripe first. Leases keep
        the shards from paying twice for one; a shard done with its stripe helps with the rest
        (a slow or dead shard holds nobody up)."""
        if count <= 1:
            return self
        mine = self.todo[index::count]
        ids = {p.question_id for p in mine}
        return DiagnosisPlan(self.wrong, mine + [p for p in self.todo if p.question_id not in ids],
                             self.settled)


def plan_diagnosis(preds: list[CanonicalPrediction], done: set[str],
                   settled: frozenset[str]) -> DiagnosisPlan:
    wrong = wrong_to_diagnose(preds)
    todo = [p for p in wrong if p.question_id not in done and p.question_id not in settled]
    return DiagnosisPlan(wrong, todo, settled & {p.question_id for p in wrong})


def plan_for(preds: list[CanonicalPrediction], partition: Partition,
             store: SignalStore) -> DiagnosisPlan:
    """What a run of ``partition`` diagnoses now, given the store's finished diagnoses and the
    degraded answers its frozen split settled: the dry run prints it, the run does it."""
    return plan_diagnosis(preds, store.done_question_ids(partition.run_id, partition.key),
                          partition.settled_degraded())


def infra_rows(preds: Iterable[CanonicalPrediction], run_id: str,
               fingerprint: str) -> list[SignalRow]:
    """T0 rows for every wrong INFRA answer of ``preds`` (never sent to the judge), for the
    partition ``fingerprint`` of baseline run ``run_id``."""
    return [SignalRow(question_id=p.question_id, baseline_run_id=run_id,
                      diag_fingerprint=fingerprint, video_id=p.video_id,
                      task_type=p.task_type, tier="T0", infra=True, session_id=p.session_id,
                      rationale=infra_cause(p))
            for p in preds if is_infra_wrong(p)]


def infra_cause(p: CanonicalPrediction) -> str:
    """Why an answer counts as INFRA: missing prediction, stop reason, or no letter."""
    if p.missing:
        return "missing_prediction"
    if p.letter == "":
        return f"empty_prediction ({p.stop_reason})" if p.stop_reason else "empty_prediction"
    return f"stop_reason:{p.stop_reason}"


def check_before_diagnosis(settings: VideoSplitConfig, n_videos: int,
                           preds: list[CanonicalPrediction], rows: Iterable[SignalRow]) -> None:
    """Every feasibility check that needs only counts, made before any judge call (a paid
    judge must not be paid for a split that cannot be made): n_trainval against the videos,
    val_wrong_min against the most wrong answers any validation draw can hold, and each floor
    against the T2 already known plus the wrong answers not yet diagnosed. ``preds``: the
    baseline's canonical predictions; ``rows``: the partition's signal rows so far."""
    vs = settings
    require_test_pool(vs.n_trainval, n_videos)
    n_val = validation_size(vs.val_ratio, vs.n_trainval)
    wrong_by_video = Counter(p.video_id for p in preds if not p.correct)
    most = most_wrong_in_validation(wrong_by_video.values(), n_val)
    if vs.val_wrong_min > most:
        raise ValidationWrongShort(vs.val_wrong_min, n_val, most)
    if vs.floor_k:
        _check_floors(vs.floor_k, preds, rows)


def _check_floors(floor_k: dict[str, int], preds: list[CanonicalPrediction],
                  rows: Iterable[SignalRow]) -> None:
    by_question = {r.question_id: r for r in rows}
    known: Counter[str] = Counter()
    open_: Counter[str] = Counter()
    for p in wrong_to_diagnose(preds):
        row = by_question.get(p.question_id)
        if row is None or row.degraded or row.infra:
            open_[p.task_type] += 1
        elif row.tier == "T2":
            known[p.task_type] += 1
    short = tuple(FloorGap(t, k, known[t] + open_[t], known[t], open_[t])
                  for t, k in sorted(floor_k.items()) if k > known[t] + open_[t])
    if short:
        raise FloorsAboveOpen(short)
