"""The eight checks of ``frozen_pools``, declared as its ``check_specs`` (the six
invariants, ``mcnemar_power`` and ``reference_runs_informative``; the last two warn, with
Dagster's WARN severity, where a split is valid but weak): the asset evaluates them on the
split in memory and yields each result before it writes anything, so a split that would fail
one is never frozen. The
re-read of the files on disk is ``split-assets verify``'s (``workspace/pools_check.py``)."""

from __future__ import annotations

import json
import warnings
from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, PreviewWarning

from split_assets.app.messages import as_user_error, validation_holds
from split_assets.errors import RunFailure, SplitAssetsError
from split_assets.orchestration.names import Names
from split_assets.orchestration.partitions import partitions_of
from split_assets.split.freeze import FrozenSplit
from split_assets.split.impossible import ValidationWrongShort
from split_assets.split.invariants import INVARIANTS, verify
from split_assets.split.problem import SplitProblem
from split_assets.split.validation import PowerVerdict, power_verdict
from split_assets.workspace.partition import Partition

# Partitioned checks (one result per fingerprint) are a preview feature of Dagster 1.13: used
# deliberately, so its warning is not shown to every user of the code location (nor where the
# definitions are built: orchestration/workspace_defs.py).
PARTITIONED_CHECKS = "Specifying a partitions_def on an AssetCheckSpec"
warnings.filterwarnings("ignore", category=PreviewWarning, message=PARTITIONED_CHECKS)

POWER = "mcnemar_power"
REFERENCES = "reference_runs_informative"
DESCRIPTIONS = {
    "pools_disjoint": "No question is in two pools.",
    "pools_cover_benchmark": "The pools together hold every benchmark question.",
    "videos_atomic": "Every video's questions are in exactly one pool.",
    "floors_met": "Trainval holds at least its floor of non-degraded T2 per task type (floor_k, "
                  "floor_share); warns when the split is not outcome-driven (no T2, no floor, "
                  "an answer-only rules judge with fewer than 2 reference runs).",
    "test_within_epsilon": "Every constrained category of test is within epsilon of global.",
    "pools_sha256_matches": "pools.json hashes to the manifest's pools_sha256.",
    POWER: "Validation holds at least val_wrong_min baseline-wrong questions, so a McNemar "
           "test between baseline and candidate has power; warns when no gain is detectable "
           "on validation.",
    REFERENCES: "Warns when a diag.reference_runs run differs from the baseline on fewer than "
                "1% of the answers both gave: such a reference cannot tell a persistent "
                "defect (T2) from a lapse (T1).",
}


def frozen_check_specs(names: Names) -> list[AssetCheckSpec]:
    """The checks frozen_pools declares (blocking: a failed one stops what depends on it)."""
    return [AssetCheckSpec(name, asset=names.key("frozen_pools"), blocking=True,
                           description=DESCRIPTIONS[name],
                           partitions_def=partitions_of(names))
            for name in (*INVARIANTS, POWER, REFERENCES)]


def split_identity(partition: Partition) -> dict[str, str]:
    """Which split a result is about (two fingerprints' results share one history)."""
    return {"split_id": partition.split_id, "fingerprint": partition.key}


def evaluate(partition: Partition, problem: SplitProblem, frozen: FrozenSplit,
             power: dict[str, Any], val_wrong_min: int,
             references: dict[str, tuple[int, int]] | None = None,
             warnings: list[str] | None = None
             ) -> tuple[list[AssetCheckResult], SplitAssetsError | None]:
    """Every check's result on the split in memory, and the error of the first that failed
    (None: all passed). A failed result's description ends "(nothing was frozen)"; a warning
    (severity WARN: no gain detectable on validation, references too close to the baseline)
    fails nothing. ``references``: per reference run, (answers differing from the baseline's,
    answers both gave); ``warnings``: why the split is not outcome-driven
    (``split/degenerate.py``), which makes ``floors_met`` a WARN that says so."""
    results, first = [], None
    for r in verify(problem, frozen.data, frozen.sha256):
        figures = _flat(r.figures)
        if r.name == "floors_met":  # T2 per task type against floor_k as a table
            from split_assets.orchestration.frozen_metadata import floors_table

            got = r.figures.get("trainval_t2", {})
            figures = {"floors": floors_table({
                t: {"floor": k, "trainval_t2": got.get(t, 0)}
                for t, k in problem.floors.items()})}
        if r.name == "floors_met" and r.passed and warnings:  # valid, not outcome-driven
            results.append(_result(partition, r.name, False, "not outcome-driven: "
                                   + "; ".join(warnings), figures, warn=True))
            continue
        results.append(_result(partition, r.name, r.passed, r.detail, figures))
        if not r.passed and first is None:
            first = RunFailure(f"check {r.name} would fail: {r.detail}", "frozen_pools",
                               "nothing was frozen; report this as a bug with the run's logs")
    verdict = power_verdict(problem, frozen.videos, val_wrong_min)
    undetectable = verdict.passed and bool(power) and power["validation"]["mde"] is None
    results.append(_result(partition, POWER, verdict.passed and not undetectable,
                           power_detail(verdict, val_wrong_min, power),
                           power_metadata(verdict, val_wrong_min, power),
                           warn=undetectable))
    results.append(references_result(partition, references or {}))
    if not verdict.passed and first is None:
        first = as_user_error(ValidationWrongShort(val_wrong_min, verdict.n_validation,
                                            verdict.reachable, verdict.val_wrong))
    return results, first


def _result(partition: Partition, name: str, passed: bool, detail: str,
            metadata: dict[str, Any], warn: bool = False) -> AssetCheckResult:
    return AssetCheckResult(
        check_name=name, passed=passed,
        severity=AssetCheckSeverity.WARN if warn else AssetCheckSeverity.ERROR,
        description=f"split {partition.split_id}: {detail}"
                    + ("" if passed or warn else " (nothing was frozen)"),
        metadata={**metadata, **split_identity(partition)})


MIN_REFERENCE_DISCORDANCE = 0.01  # under 1 % of the answers: no evidence either way


def references_result(partition: Partition,
                      references: dict[str, tuple[int, int]]) -> AssetCheckResult:
    """Warns when a reference run is too close to the baseline to separate T1 from T2."""
    shares = {run: (differ / both if both else 0.0) for run, (differ, both) in
              references.items()}
    close = sorted(run for run, share in shares.items() if share < MIN_REFERENCE_DISCORDANCE)
    metadata: dict[str, Any] = {f"discordance {run}": round(share, 6)
                                for run, share in sorted(shares.items())}
    metadata["threshold"] = MIN_REFERENCE_DISCORDANCE
    if not references:
        detail = "no diag.reference_runs: nothing to check"
    elif not close:
        detail = (f"each reference run differs from the baseline on at least "
                  f"{100 * MIN_REFERENCE_DISCORDANCE:g}% of the answers both gave")
    else:
        detail = ("reference run(s) " + ", ".join(
            f"{run} ({references[run][0]} of {references[run][1]} answers differ)"
            for run in close) + f" differ from the baseline on under "
            f"{100 * MIN_REFERENCE_DISCORDANCE:g}% of the answers: they cannot tell a defect "
            "(T2) from a lapse (T1), so nearly every wrong answer counts as T2; add a run of "
            "another model to diag.reference_runs")
    return _result(partition, REFERENCES, not close, detail, metadata, warn=bool(close))


def power_detail(verdict: PowerVerdict, threshold: int, power: dict[str, Any]) -> str:
    """The mcnemar_power check's one line: the count against val_wrong_min, and the gain the
    validation pool can detect."""
    val_wrong = verdict.val_wrong
    if threshold == 0:
        detail = f"val_wrong_min is 0: power check off (validation holds {val_wrong} wrong)"
    else:
        detail = validation_holds(val_wrong, threshold, verdict.reachable, verdict.n_validation)
        if val_wrong < threshold:
            detail += ": raise val_ratio or n_trainval, or lower val_wrong_min"
    if power:
        mde = power["validation"]["mde"]
        detail += (f"; detects a gain of {100 * mde:.1f} pp on validation at 80% power, "
                   "alpha 0.05" if mde is not None else
                   "; no gain is detectable on validation at 80% power, alpha 0.05 (too few "
                   f"questions; discordance {_discordance(power['validation'])}): raise "
                   "val_ratio or n_trainval")
    return detail


def _discordance(pool: dict[str, Any]) -> str:
    """The discordance and where it came from (an assumed one says its value itself)."""
    source = str(pool["discordance_source"])
    return source if source.startswith("assumed") else f"{pool['discordance']:g}, {source}"


def power_metadata(verdict: PowerVerdict, threshold: int,
                   power: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"val_wrong": verdict.val_wrong, "threshold": threshold,
                                "val_wrong_reachable": verdict.reachable}
    for pool in ("validation", "test"):
        mde = power.get(pool, {}).get("mde")
        metadata[f"mde_{pool}_pp"] = round(100 * mde, 3) if mde is not None else "n/a"
    if power:
        metadata["discordance"] = power["validation"]["discordance"]
        metadata["discordance_source"] = power["validation"]["discordance_source"]
        metadata["design_effect_validation"] = power["validation"]["design_effect"]
    return metadata


def _flat(figures: dict) -> dict:
    return {k: (v if isinstance(v, int | float | str) else json.dumps(v, sort_keys=True))
            for k, v in figures.items()}
