"""Blocking, ERROR-severity checks on frozen_pools, re-verified from the file on disk."""


import json
import warnings
from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    PreviewWarning,
    asset_check,
    multi_asset_check,
)

from split_assets.defs.assets import diagnosis_signals, frozen_pools
from split_assets.defs.failures import fails_cleanly
from split_assets.defs.partitions import diag_fingerprint_partitions
from split_assets.defs.resources import SplitConfigResource
from split_assets.lib.failpoints import failpoint
from split_assets.split.invariants import INVARIANTS, verify
from split_assets.split.validation import power_verdict
from split_assets.workspace import Workspace

# Partitioned checks (one result per fingerprint) are a preview feature of Dagster 1.13: used
# deliberately, so its warning is not shown to every user of the code location.
warnings.filterwarnings("ignore", category=PreviewWarning,
                        message="Specifying a partitions_def on an AssetCheckSpec")

_DESCRIPTIONS = {
    "pools_disjoint": "No question is in two pools.",
    "pools_cover_benchmark": "The pools together hold every benchmark question.",
    "videos_atomic": "Every video's questions are in exactly one pool.",
    "floors_met": "Trainval holds at least floor_k non-degraded T2 per task type.",
    "test_within_epsilon": "Every constrained category of test is within epsilon of global.",
    "pools_sha256_matches": "pools.json on disk hashes to the manifest's pools_sha256.",
}


@multi_asset_check(
    specs=[AssetCheckSpec(name, asset=frozen_pools, blocking=True,
                          description=_DESCRIPTIONS[name],
                          partitions_def=diag_fingerprint_partitions) for name in INVARIANTS],
    description="The six invariants of a frozen split, read back from pools.json.",
)
@fails_cleanly
def split_invariants(context: AssetCheckExecutionContext,
                     split_config: SplitConfigResource) -> Iterator[AssetCheckResult]:
    failpoint("checks.start")
    ws = split_config.workspace(context.partition_key)
    expected = ws.frozen_manifest()["pools_sha256"]
    data = ws.files.pools.read_bytes()
    for result in verify(ws.problem(), data, expected):
        yield AssetCheckResult(check_name=result.name, asset_key=frozen_pools.key,
                               passed=result.passed, severity=AssetCheckSeverity.ERROR,
                               description=f"split {ws.split_id}: {result.detail}",
                               metadata={**_flat(result.figures), **_which(ws)})


@asset_check(asset=frozen_pools, blocking=True, partitions_def=diag_fingerprint_partitions,
             description="Validation holds at least val_wrong_min baseline-wrong questions, so a "
                         "McNemar test between baseline and candidate has power.")
@fails_cleanly
def mcnemar_power(context: AssetCheckExecutionContext,
                  split_config: SplitConfigResource) -> AssetCheckResult:
    ws = split_config.workspace(context.partition_key)
    power = ws.frozen_manifest().get("power", {})
    doc = json.loads(ws.files.pools.read_bytes())
    threshold = ws.loaded.config.video_split.val_wrong_min
    verdict = power_verdict(ws.problem(), doc["videos"], threshold)
    val_wrong, reachable = verdict.val_wrong, verdict.reachable
    if threshold == 0:
        detail = f"val_wrong_min is 0: power check off (validation holds {val_wrong} wrong)"
    else:
        detail = f"validation holds {val_wrong} baseline-wrong questions, need {threshold}"
        if val_wrong < threshold:
            detail += (f"; at most {reachable} with {verdict.n_validation} "
                       "validation videos: raise val_ratio or n_trainval, or lower val_wrong_min")
    metadata: dict[str, Any] = {"val_wrong": val_wrong, "threshold": threshold,
                                "val_wrong_reachable": reachable}
    for pool in ("validation", "test"):
        mde = power.get(pool, {}).get("mde")
        metadata[f"mde_{pool}_pp"] = round(100 * mde, 3) if mde is not None else "n/a"
    if power:
        metadata["discordance"] = power["validation"]["discordance"]
        metadata["discordance_source"] = power["validation"]["discordance_source"]
        metadata["design_effect_validation"] = power["validation"]["design_effect"]
        mde = power["validation"]["mde"]
        detail += (f"; detects a gain of {100 * mde:.1f} pp on validation at 80% power, "
                   "alpha 0.05" if mde is not None else "; no gain is detectable on validation")
    return AssetCheckResult(passed=verdict.passed,
                            severity=AssetCheckSeverity.ERROR,
                            description=f"split {ws.split_id}: {detail}",
                            metadata={**metadata, **_which(ws)})


@asset_check(asset=diagnosis_signals, blocking=True, partitions_def=diag_fingerprint_partitions,
             description="Cohen's kappa of the judge's tiers against the human review labels "
                         "(split-assets review): blocking below diag.min_kappa when set, "
                         "otherwise informative.")
@fails_cleanly
def judge_agreement(context: AssetCheckExecutionContext,
                    split_config: SplitConfigResource) -> AssetCheckResult:
    from split_assets.review.labels import judge_vs_humans

    ws = split_config.workspace(context.partition_key)
    minimum = ws.loaded.config.diag.min_kappa
    k = judge_vs_humans(ws)
    if k is None or k.kappa != k.kappa:  # no labels, or kappa undefined (one label only)
        detail = ("no human labels on this run's diagnosed answers yet" if k is None else
                  f"kappa undefined on {k.n} label(s): judge and reviewers used one tier only")
        how = "export a sample with 'split-assets review export', label it, import it"
        return AssetCheckResult(
            passed=minimum is None, severity=AssetCheckSeverity.ERROR,
            description=f"split {ws.split_id}: {detail}"
                        + (f"; diag.min_kappa {minimum} needs labels: {how}" if minimum
                           is not None else f" ({how})"),
            metadata={"labels": k.n if k else 0, **_which(ws)})
    detail = (f"kappa {k.kappa:.3f} [{k.low:.3f}, {k.high:.3f}] (95 %, bootstrap over videos) "
              f"on {k.n} human label(s)")
    if minimum is not None:
        detail += f"; diag.min_kappa {minimum}" + (
            "" if k.kappa >= minimum else ": the judge is below it -- improve its prompts or "
                                          "model, or lower diag.min_kappa")
    return AssetCheckResult(
        passed=minimum is None or k.kappa >= minimum, severity=AssetCheckSeverity.ERROR,
        description=f"split {ws.split_id}: {detail}",
        metadata={"kappa": round(k.kappa, 4), "ci_low": round(k.low, 4),
                  "ci_high": round(k.high, 4), "labels": k.n,
                  "observed_agreement": round(k.observed, 4),
                  "min_kappa": minimum if minimum is not None else "not set", **_which(ws)})


def _which(ws: Workspace) -> dict[str, str]:
    """Which split a result is about (two fingerprints' results share one history)."""
    return {"split_id": ws.split_id, "fingerprint": ws.fingerprint.key}


def _flat(figures: dict) -> dict:
    return {k: (v if isinstance(v, int | float | str) else json.dumps(v, sort_keys=True))
            for k, v in figures.items()}
