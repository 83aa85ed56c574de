"""Runs other than the baseline, as ``Inputs`` reads them (``OtherRuns``): a run's outcome per
question (``sources/run_outcomes.py``: one rule for all), the reference runs' evidence for the
answer_only judge, the control run, and the re-runs that show how answers move by chance."""

from __future__ import annotations

from functools import cached_property

from split_assets.config_keys import config_key
from split_assets.settings import LoadedConfig
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.harness_db import CanonicalPrediction, canonical_predictions
from split_assets.sources.run_outcomes import RunOutcomes, require_runs, run_outcomes

CONTROL = "the control run"  # the name of the control run among the re-runs


class OtherRuns:
    """The other-run reading of ``Inputs`` (its config, benchmark and outcome cache)."""

    loaded: LoadedConfig
    benchmark: Benchmark
    _outcomes: dict[str, RunOutcomes]

    def outcomes(self, run_id: str, role: str, where: str) -> RunOutcomes:
        """Another run's outcome per question (``sources/run_outcomes.py``: one rule for all)."""
        return self.outcomes_of((run_id,), role, where)[run_id]

    def outcomes_of(self, runs: tuple[str, ...], role: str,
                    where: str) -> dict[str, RunOutcomes]:
        """The outcomes of ``runs`` (``role``, named by config key ``where`` when missing)."""
        cache, db = self._outcomes, self.loaded.paths.harness_db
        require_runs(db, [r for r in runs if r not in cache], role, where,
                     f"import it: split-assets import predictions --jsonl FILE --run-id RUN "
                     f"--workspace DIR (or remove it from {where})")
        infra = self.loaded.config.video_split.infra_stop_reasons
        for run in runs:
            if run not in cache:
                cache[run] = run_outcomes(db, run, self.benchmark, infra)
        return {run: cache[run] for run in runs}

    @cached_property
    def reference_evidence(self) -> dict[str, tuple[bool | None, ...]]:
        """Per question, one entry per ``diag.reference_runs`` run: True wrong, False correct,
        None no evidence (not answered, or INFRA)."""
        runs = tuple(self.loaded.config.diag.reference_runs)
        if not runs:
            return {}
        per_run = [o.defect_evidence()
                   for o in self.outcomes_of(runs, "reference",
                                             config_key("reference_runs")).values()]
        return {qid: tuple(e.get(qid) for e in per_run) for qid in self.benchmark.by_id}

    def control_outcomes(self) -> dict[str, bool | None] | None:
        """The control run's correctness per question, or None when no
        ``evaluation.control_run`` is set or it is not in the harness db (yet)."""
        from split_assets.sources.harness_db import run_ids

        run = self.loaded.config.evaluation.control_run
        if run is None or run not in run_ids(self.loaded.paths.harness_db):
            return None
        return self.outcomes(run, "control", config_key("control_run")).correct

    def power_reruns(self) -> list[tuple[str, dict[str, bool | None]]]:
        """The re-runs that show how answers move by chance (``evaluation/power.py``): the
        control run if it is in the harness db, else each reference run, scored alike."""
        control = self.control_outcomes()
        if control is not None:
            return [(CONTROL, control)]
        runs = tuple(self.loaded.config.diag.reference_runs)
        if not runs:
            return []
        scored = self.outcomes_of(runs, "reference", config_key("reference_runs"))
        return [(f"reference run {i}", scored[run].correct) for i, run in enumerate(runs, 1)]

    @cached_property
    def balanced_runs(self) -> dict[str, tuple[bool | None, ...]]:
        """Per question, its correctness in each ``balance_runs`` run (in that order; None
        where the run did not answer), scored like the baseline."""
        from split_assets.split.problem_inputs import run_correctness  # layer 5

        runs = tuple(self.loaded.config.video_split.balance_runs)
        if not runs:
            return {}
        scored = self.outcomes_of(runs, "balanced", config_key("balance_runs"))
        return run_correctness({run: scored[run].correct for run in runs})

    def balanced_predictions(self) -> dict[str, list[CanonicalPrediction]]:
        """Each ``balance_runs`` run's canonical predictions (their digests: the manifest's)."""
        vs = self.loaded.config.video_split
        return {run: canonical_predictions(self.loaded.paths.harness_db, run, self.benchmark,
                                           vs.infra_stop_reasons, "infra")
                for run in vs.balance_runs}
