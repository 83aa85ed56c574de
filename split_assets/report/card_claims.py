"""The split card's claims (issue 46): one row per test look -- the repeats of the same answers
folded into their look -- recomputed exactly as ``split-assets compare --pool test --json``
would recompute it now (against the control when one is set, the family and budget as the
ledger holds them), so the card and the command always agree. A look whose run is no longer
in the workspace (or that showed only part of test, or was an export) keeps the ledger's own
statistic, and says so."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.evaluation.claims import ALPHA, POOL, claim, family, look_p

if TYPE_CHECKING:
    from split_assets.store.ledger import Look
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition


def claim_rows(inputs: Inputs, partition: Partition, looks: list[Look],
               budget: int | None) -> list[dict[str, Any]]:
    """The test looks of ``looks`` (the split's ledger), in the order each answers were first
    looked at, each with what may be claimed of it under ``budget``."""
    test = [look for look in looks if look.pool == POOL]
    control = partition.evaluation.control_run
    rows = []
    for digest, runs, _ in family(test):
        rows_of = [look for look in test if look.answers_digest == digest]
        fresh = _recomputed(inputs, partition, rows_of, runs, control)
        ledger = test
        if fresh is not None:  # as compare would: this look's p as computed now, last
            ledger = [*test, replace(rows_of[-1], statistic={"claim": fresh["claim"]})]
        said = claim(ledger, digest, budget)
        row = fresh or _from_ledger(rows_of, control)
        row.update(look=said["look"], runs=runs, repeats=len(rows_of) - 1,
                   workspace=rows_of[0].statistic.get("workspace"),
                   optimizer=rows_of[0].statistic.get("optimizer"),
                   program_sha256=rows_of[0].statistic.get("program_sha256"),
                   **_verdict(said, budget))
        if row["source"] == "export":
            row["verdict"] = "no claim (an export)"
        rows.append(row)
    return rows


def _recomputed(inputs: Inputs, partition: Partition, rows_of: list[Look], runs: list[str],
                control: str | None) -> dict[str, Any] | None:
    """The look as compare computes it from the harness db (None: it cannot be)."""
    from split_assets.evaluation.comparison import compare_runs

    if rows_of[0].source == "export":
        return None
    for run in reversed(runs):
        if run == control:  # the control's own look: compared with itself, nothing to claim
            continue
        try:
            report = compare_runs(inputs, partition, run, control, (POOL,),
                                  control_where=config_key("control_run"))
        except UserError:
            continue
        entry = report["pools"][POOL]
        if entry.get("answers_digest") != rows_of[0].answers_digest:
            continue
        stats = entry["vs_control"] if control is not None else entry["vs_baseline"]
        return {"candidate": run, "against": entry["claim"]["against"], "n": stats["n"],
                "reference_accuracy": stats["reference_accuracy"],
                "candidate_accuracy": stats["candidate_accuracy"], "gain": stats["gain"],
                "gain_ci95": stats["gain_ci95"], "p_exact": stats["p_exact"],
                "p_mid": stats["p_mid"], "p_one_sided": entry["claim"]["p_one_sided"],
                "claim": entry["claim"], "source": "recomputed"}
    return None


def _from_ledger(rows_of: list[Look], control: str | None) -> dict[str, Any]:
    """What the ledger recorded of a look whose run cannot be compared again."""
    first, s = rows_of[0], rows_of[-1].statistic
    against = s.get("claim", {}).get("against", "baseline")
    vs_baseline_only = against == "control" and not isinstance(s.get("vs_control"), dict)
    if against == "control" and not vs_baseline_only:
        s = {**s, **s["vs_control"]}  # the figures the claim rests on
    if first.source == "export":
        return {"candidate": first.run_id, "source": "export",
                "note": "the test pool was exported: a look without answers, no claim"}
    partial = s.get("answered", s.get("n")) != s.get("of", s.get("n"))
    reason = ("it answered part of test" if partial else
              "it is the control run's own look" if rows_of[-1].run_id == control else
              "it was made on another split or in another workspace"
              if "inherited" in s or "workspace" in s else
              "its run is no longer in the workspace")
    if vs_baseline_only:  # a row an earlier release wrote: only its p is against the control
        reason += "; its accuracies and gain are against the baseline"
    cand, ref = s.get("candidate_accuracy"), s.get("reference_accuracy")
    gain = s.get("gain", cand - ref if cand is not None and ref is not None else None)
    return {"candidate": rows_of[-1].run_id, "against": against,
            "n": s.get("n", s.get("answered")), "reference_accuracy": ref,
            "candidate_accuracy": cand, "gain": gain, "gain_ci95": s.get("gain_ci95"),
            "p_exact": s.get("p_exact"), "p_mid": s.get("p_mid"),
            "p_one_sided": look_p(s), "source": "ledger",
            "note": f"the ledger's own statistic ({reason})"}


def _verdict(said: dict[str, Any], budget: int | None) -> dict[str, Any]:
    if budget is None:
        holm = said["holm_adjusted_p"]
        return {"threshold": f"Holm: adjusted p {holm:.4g} < {ALPHA}",
                "verdict": "significant after Holm" if holm < ALPHA
                else "not significant after Holm", "within_budget": None}
    if said["beyond_budget"]:
        return {"threshold": f"{ALPHA}/{budget} = {ALPHA / budget:.4g}",
                "verdict": "no claim (beyond the budget)", "within_budget": False}
    return {"threshold": f"{ALPHA}/{budget} = {ALPHA / budget:.4g}",
            "verdict": "significant gain" if said["significant"] else "not significant",
            "within_budget": True}
