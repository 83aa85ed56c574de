"""Another run's outcome per question -- a reference run of the rules judge, a candidate, the
control run -- decided by one rule: scored exactly like the baseline (the extracted letter
against the answer: an INFRA answer, which is a wrong one that failed to execute or has no
letter, counts as wrong), and a question the run did not answer has no outcome."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from split_assets.errors import InputError
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.harness_db import canonical_predictions, run_ids


@dataclass(frozen=True)
class RunOutcomes:
    """One run's answers: ``correct[q]`` True / False (scored like the baseline), None where
    the run has no prediction; ``infra``: the questions it answered as INFRA."""

    run_id: str
    correct: dict[str, bool | None]
    infra: frozenset[str]

    def answered(self) -> dict[str, bool]:
        """The questions the run answered, with their correctness."""
        return {q: ok for q, ok in self.correct.items() if ok is not None}

    def defect_evidence(self) -> dict[str, bool | None]:
        """For the rules judge: True wrong, False correct, None no evidence (not answered, or
        an execution failure, which says nothing about the agent's reasoning)."""
        return {q: None if ok is None or q in self.infra else not ok
                for q, ok in self.correct.items()}


def require_runs(db: Path, runs: list[str], role: str, where: str, fix: str) -> None:
    """Every run must be in the harness db (one line naming the runs present otherwise)."""
    present = run_ids(db)
    absent = [r for r in runs if r not in present]
    if absent:
        noun = f"{role} run" if len(absent) == 1 else f"{role} runs"
        raise InputError(f"{noun} {', '.join(map(repr, absent))} not in the harness database "
                         f"(runs present: {', '.join(present) or 'none'})", where, fix)


def run_outcomes(db: Path, run_id: str, benchmark: Benchmark,
                 infra_stop_reasons: list[str]) -> RunOutcomes:
    """The outcomes of ``run_id`` (which may answer only part of the benchmark)."""
    preds = canonical_predictions(db, run_id, benchmark, infra_stop_reasons, "infra")
    return RunOutcomes(run_id, {p.question_id: None if p.missing else p.correct for p in preds},
                       frozenset(p.question_id for p in preds if p.infra and not p.missing))
