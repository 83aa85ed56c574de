"""Claims on the test pool, spent on purpose (issue 24), and the ledger rows of a report.

Test is compared only by ``split-assets compare --pool test``. Each distinct candidate's
answers compared on a split's test pool is one look (identical answers again are a repeat, not
a look); the family is the ledger's test looks (the baseline and the control are references
of a comparison; the looks an import or an export recorded, and those a split inherited from
an earlier one, are members too: ``exposure.py``, ``sealed.py``). A look's p-value is the
one-sided cluster-adjusted test of the candidate against the control when one is set, else
against the baseline (``reuse.one_sided_p``).

- With ``evaluation.test_looks_max: M`` each look is tested at alpha / M (Bonferroni: valid
  however the looks were chosen) and a look beyond M is refused before anything is written,
  unless spent on purpose (``--spend-test-look``), when no claim holds for it at alpha / M.
- Without a budget the report gives Holm's adjusted p-values over all looks so far, and says
  that a claim made look by look is only valid with a budget declared before looking.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.evaluation.exposure import pending, test_pool
from split_assets.evaluation.reuse import holm
from split_assets.evaluation.shared_budget import shared_budget, workspace_of
from split_assets.store.ledger import Evaluation, Exposure, Look, LookRefused

if TYPE_CHECKING:
    from split_assets.workspace.partition import Partition

ALPHA = 0.05
POOL = "test"
NO_BUDGET_NOTE = ("claims made look by look are only valid with a budget: set "
                  f"{config_key('test_looks_max')} before the first test look")


def family(looks: list[Look]) -> list[tuple[str, list[str], float]]:
    """The looks at test: (answers digest, run ids, one-sided p of its latest evaluation), in
    the order each answers were first compared."""
    members: dict[str, tuple[list[str], float]] = {}
    for look in looks:
        if look.pool != POOL:
            continue
        runs, _ = members.get(look.answers_digest, ([], 1.0))
        if look.run_id not in runs:
            runs.append(look.run_id)
        members[look.answers_digest] = (runs, look_p(look.statistic))
    return [(digest, runs, p) for digest, (runs, p) in members.items()]


def look_p(statistic: dict[str, Any]) -> float:
    """A test row's one-sided p (a row written before claims were recorded: from its
    two-sided cluster p and the sign of its gain)."""
    if "claim" in statistic:
        return float(statistic["claim"]["p_one_sided"])
    half = float(statistic.get("p_cluster", 1.0)) / 2
    return half if statistic.get("gain", 0.0) > 0 else 1.0 - half


def claim(looks: list[Look], digest: str, budget: int | None) -> dict[str, Any]:
    """What may be claimed of the look at ``digest`` (already in ``looks``)."""
    members = family(looks)
    index = next(i for i, (d, _, _) in enumerate(members) if d == digest)
    pvalues = [p for _, _, p in members]
    adjusted = holm(pvalues)
    out: dict[str, Any] = {"look": index + 1, "looks": len(members),
                           "p_one_sided": pvalues[index],
                           "holm_adjusted_p": round(adjusted[index], 6),
                           "family": [{"runs": runs, "p_one_sided": p,
                                       "holm_adjusted_p": round(a, 6)}
                                      for (_, runs, p), a in zip(members, adjusted,
                                                                 strict=True)]}
    if budget is None:
        out.update(significant=None, note=NO_BUDGET_NOTE)
        return out
    beyond = index + 1 > budget
    out.update(test_looks_max=budget, alpha_per_look=ALPHA / budget, beyond_budget=beyond,
               significant=(not beyond) and pvalues[index] < ALPHA / budget)
    if beyond:
        out["note"] = (f"look {index + 1} is beyond {config_key('test_looks_max')} {budget} (spent "
                       f"with --spend-test-look): no claim holds for it at {ALPHA}/{budget}")
    return out


def claim_line(entry: dict[str, Any]) -> str:
    """The test claim of a report's pool entry, in one line."""
    c = entry["claim"]
    against = f"vs the {c['against']}, one-sided p {c['p_one_sided']:.4g}"
    if c.get("test_looks_max") is None:
        return (f"test look {c['look']} of {c['looks']} ({against}); Holm-adjusted p over "
                f"the {c['looks']} look(s): {c['holm_adjusted_p']:.4g}; {c['note']}")
    head = f"test look {c['look']} of budget {c['test_looks_max']} ({against})"
    if c["beyond_budget"]:
        return f"{head}: {c['note']}; Holm-adjusted p: {c['holm_adjusted_p']:.4g}"
    verdict = ("a significant gain on test" if c["significant"]
               else "no significant gain on test")
    return f"{head}: {verdict} at {ALPHA}/{c['test_looks_max']} = {c['alpha_per_look']:.4g}"


def record(partition: Partition, report: dict[str, Any], source: str,
           budget: int | None = None, spend: bool = False) -> list[str]:
    """One ledger row per pool the report shows, all or none; a new look at test beyond
    ``budget`` is refused (one line, nothing written) unless ``spend``. The test entry gets
    its claim first (what the ledger then records as shown); a line per pool for the user."""
    pools = {pool: entry for pool, entry in report["pools"].items() if "vs_baseline" in entry}
    exposures: list[Exposure] = []
    inherited: list[Look] = []
    shared = None
    with partition.store() as store, ExitStack() as held:
        if POOL in pools:  # the claim as of this look (the budget itself is held below)
            test = pools[POOL]
            sealed = test_pool(partition)
            # one budget per baseline on the instance: other workspaces' looks count here
            shared = held.enter_context(shared_budget(store, workspace_of(partition.config_path),
                                                      sealed.baseline, budget))
            budget = shared.budget
            # earlier splits' looks at these questions share the budget (written with it)
            inherited, exposures = pending(store, sealed)
            exposures.append(sealed.exposure(test["answers_digest"], report["candidate"]))
            ledger = store.looks(report["split_id"], POOL) + inherited
            ledger.append(Look(report["split_id"], POOL, report["candidate"],
                               test["answers_digest"], source, _statistic(test), "", False, ""))
            test["claim"].update(claim(ledger, test["answers_digest"], budget))
        evaluations = [Evaluation(report["split_id"], pool, report["candidate"],
                                  entry["answers_digest"], source, _statistic(entry),
                                  shown_line(entry)) for pool, entry in pools.items()]
        try:
            looks = store.record_looks(evaluations, {POOL: budget}
                                       if budget is not None and not spend else None,
                                       exposures, inherited)
        except LookRefused as refused:
            more = shared.note() if shared is not None else ""
            raise UserError(
                f"a new look at test refused: the {refused.looks} look(s) of "
                f"{config_key('test_looks_max')} {refused.budget} are spent on split "
                f"{report['split_id']}" + (f" ({more})" if more else ""), "--pool test",
                "pass --spend-test-look to look anyway (no claim will hold for it), or "
                "compare on validation") from None
    return [f"ledger: {look.pool} look at {report['candidate']}"
            + (" (a repeat: these answers were evaluated before)" if look.is_repeat else "")
            for look in looks]


def _statistic(entry: dict[str, Any]) -> dict[str, Any]:
    statistic = dict(entry["vs_baseline"])
    if "vs_control" in entry:  # what a claim against the control rests on (the card's)
        statistic["vs_control"] = entry["vs_control"]
    if "claim" in entry:
        statistic["claim"] = {k: entry["claim"][k] for k in ("against", "p_one_sided")}
    return statistic


def shown_line(entry: dict[str, Any]) -> str:
    """What a pool's comparison showed, in one line (the ledger's record of it)."""
    r = entry["vs_baseline"]
    line = (f"accuracy {r['candidate_accuracy']:.4f} vs {r['reference_accuracy']:.4f}, gain "
            f"{r['gain']:+.4f}, p_cluster {r['p_cluster']:.3g}")
    return line + (f"; {claim_line(entry)}" if "look" in entry.get("claim", {}) else "")
