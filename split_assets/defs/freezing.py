"""Before frozen_pools writes anything: the checks' conditions on the split in memory. A
failing one is recorded as that check failing (visible in the UI) and nothing is frozen."""

from __future__ import annotations

from dagster import AssetCheckEvaluation, AssetCheckSeverity, AssetExecutionContext

from split_assets.errors import ConfigError, RunFailure, SplitAssetsError
from split_assets.split.freeze import FrozenSplit
from split_assets.split.invariants import verify
from split_assets.split.problem import SplitProblem
from split_assets.split.validation import power_verdict


def refuse_invalid(context: AssetExecutionContext, problem: SplitProblem, frozen: FrozenSplit,
                   degraded: list[str], allowed: int, val_wrong_min: int) -> None:
    """Evaluate the checks' conditions; the first failing one stops the freeze."""
    failures: list[tuple[str, str, SplitAssetsError]] = []
    for result in verify(problem, frozen.data, frozen.sha256):
        if not result.passed:
            failures.append((result.name, result.detail, RunFailure(
                f"check {result.name} would fail: {result.detail}", "frozen_pools",
                "nothing was frozen; report this as a bug with the run's logs")))
    power = _power_failure(problem, frozen, val_wrong_min)
    if power is not None:
        failures.append(power)
    if len(degraded) > allowed:
        failures.append(("", "", RunFailure(
            f"{len(degraded)} degraded diagnosis(es) in the split (e.g. {', '.join(degraded[:5])})",
            "frozen_pools", f"materialize diagnosis_signals again to retry them, or allow them "
                            f"with --allow-degraded {len(degraded)}")))
    for check, detail, _ in failures:
        if check:
            context.log_event(AssetCheckEvaluation(
                asset_key=context.asset_key, check_name=check, passed=False,
                severity=AssetCheckSeverity.ERROR, description=f"{detail} (nothing was frozen)"))
    if failures:
        raise failures[0][2]


def _power_failure(problem: SplitProblem, frozen: FrozenSplit,
                   val_wrong_min: int) -> tuple[str, str, SplitAssetsError] | None:
    verdict = power_verdict(problem, frozen.videos, val_wrong_min)
    if verdict.passed:
        return None
    detail = (f"validation holds {verdict.val_wrong} baseline-wrong questions, need "
              f"{val_wrong_min} (at most {verdict.reachable} with {verdict.n_validation} "
              "validation videos)")
    return ("mcnemar_power", detail, ConfigError(
        f"val_wrong_min cannot be met: {detail}", "video_split.val_wrong_min",
        "raise val_ratio or n_trainval, or lower val_wrong_min; nothing was frozen"))
