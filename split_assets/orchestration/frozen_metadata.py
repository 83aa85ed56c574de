"""What ``frozen_pools`` and its ``floors_met`` check show in the Dagster UI: the summary a
researcher reads first (sizes, the largest deviation, power, the floors), the split card's
link, then the tables; numbers to plot only across more than one partition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagster import MetadataValue

from split_assets.orchestration.metadata import (
    SHORT_DIGEST,
    deviation_table,
    max_abs_pp,
    table,
)
from split_assets.split.freeze import FrozenSplit, pool_questions
from split_assets.split.layout import POOLS
from split_assets.split.problem import SplitProblem
from split_assets.split.stats import largest_deviation, tier_counts

if TYPE_CHECKING:
    from split_assets.workspace.partition import Partition


def frozen_metadata(partition: Partition, problem: SplitProblem, frozen: FrozenSplit,
                    doc: dict[str, Any], degraded: list[str], plots: bool) -> dict[str, Any]:
    """The summary a researcher reads first, then the tables; the plottable numbers only when
    ``plots`` (more than one partition materialized: one dot per partition plots nothing)."""
    by_pool = pool_questions(problem, frozen)
    tiers = {name: tier_counts(by_pool[name]) for name in POOLS}
    acc = doc["baseline_accuracy"]
    card = partition.out_dir / "report" / "split_card.html"
    out: dict[str, Any] = {
        "summary": MetadataValue.md(frozen_summary(doc)),
        "split_card": MetadataValue.path(str(card)),
        "split_card_status": ("written" if card.is_file() else
                              f"not written yet: split-assets report --config "
                              f"{partition.loaded.path}"),
        "floors": floors_table(doc["floors"]),
        "pools_sha256": frozen.sha256[:SHORT_DIGEST],
        "split_id": partition.split_id,
        "pools_path": MetadataValue.path(str(partition.files.pools)),
        "manifest_path": MetadataValue.path(str(partition.files.manifest)),
        "counts": table([("pool", "string"), ("videos", "int"), ("questions", "int"),
                         ("wrong", "int")],
                        [[name, len(frozen.videos[name]), len(by_pool[name]),
                          sum(not q.correct for q in by_pool[name])] for name in POOLS]),
        "test_deviation": deviation_table(doc["test_deviation"]),
        "max_abs_deviation_pp": MetadataValue.float(max_abs_pp(doc["test_deviation"])),
        "tier_counts": table([("pool", "string")] + [(k, "int") for k in _TIERS],
                             [[name] + [tiers[name].get(k, 0) for k in _TIERS]
                              for name in POOLS]),
        "baseline_accuracy": table([("pool", "string"), ("accuracy", "float")],
                                   [[k, acc[k]] for k in ("global", *POOLS)]),
        "test_minus_global_accuracy_pp": MetadataValue.float(
            round(100 * acc["test_minus_global"], 4)),
        "validation_wrong": doc["validation_wrong"],
        "degraded_frozen": len(degraded),
        "generated_at": doc["generated_at"],
        "digests": MetadataValue.json({"pools_sha256": frozen.sha256,
                                       **doc["input_digests"]}),
    }
    out.update(balance_metadata(doc))
    if not plots:
        for key in ("max_abs_deviation_pp", "test_minus_global_accuracy_pp"):
            out[key] = MetadataValue.text(f"{out[key].value:g}")
        return out
    for name in POOLS:  # plotted over partitions
        out[f"t1_{name}"] = tiers[name].get("T1", 0)
        out[f"t2_{name}"] = tiers[name].get("T2", 0)
    return out


def balance_metadata(doc: dict[str, Any]) -> dict[str, Any]:
    """The warnings of a split that is not outcome-driven, and the balanced runs' figures:
    each one's test deviation and the leave-one-run-out estimate beside random pools."""
    out: dict[str, Any] = {}
    if doc.get("warnings"):
        out["warnings"] = MetadataValue.md("\n".join(f"- **warning**: {w}"
                                                      for w in doc["warnings"]))
    balance = doc.get("balance_runs")
    if balance:
        loro = balance["leave_one_run_out"]
        rnd = loro["random_pools"]
        out["balance_runs"] = table(
            [("run", "string"), ("test_deviation_pp", "float"),
             ("held_out_deviation_pp", "float"), ("random_pools_pp", "float")],
            [[r, round(100 * balance["test_deviation"][r], 4),
              round(100 * loro["per_run"][r], 4), round(100 * rnd["per_run"][r], 4)]
             for r in balance["runs"]])
        out["held_out_deviation_pp"] = MetadataValue.text(
            f"mean {100 * loro['mean']:.3f}, max {100 * loro['max']:.3f} (leave one balanced "
            f"run out); random pools of {rnd['test_videos']} videos: mean "
            f"{100 * rnd['mean']:.3f}, max {100 * rnd['max']:.3f}")
    return out


def floors_table(floors: dict[str, dict[str, int]]) -> Any:
    """T2 per task type in trainval against floor_k (``floors_met``, ``frozen_pools``)."""
    return table([("task_type", "string"), ("floor_k", "int"), ("trainval_t2", "int"),
                  ("margin", "int"), ("met", "bool")],
                 [[t, f["floor"], f["trainval_t2"], f["trainval_t2"] - f["floor"],
                   f["trainval_t2"] >= f["floor"]] for t, f in sorted(floors.items())])


def frozen_summary(doc: dict[str, Any]) -> str:
    """What a researcher reads first: sizes, the largest deviation, power, the floors."""
    counts, power = doc["counts"], doc.get("power") or {}
    big = largest_deviation(doc["test_deviation"])
    lines = ["| pool | videos | questions | baseline accuracy | detectable gain |",
             "|---|---|---|---|---|"]
    for name in POOLS:
        mde = power.get(name, {}).get("mde")
        lines.append(f"| {name} | {counts[name]['videos']} | {counts[name]['questions']} | "
                     f"{100 * doc['baseline_accuracy'][name]:.1f} % | "
                     f"{'-' if mde is None else f'{100 * mde:.1f} pp'} |")
    met = sum(f["trainval_t2"] >= f["floor"] for f in doc["floors"].values())
    head = [f"**Warning**: {w}" for w in doc.get("warnings", [])]
    balance = doc.get("balance_runs")
    if balance:  # representative for models not yet run: the leave-one-run-out estimate
        loro = balance["leave_one_run_out"]
        lines += ["", f"Balanced runs: {len(balance['runs'])}; a run left out of the selection "
                      f"deviates by {100 * loro['mean']:.2f} pp on average (max "
                      f"{100 * loro['max']:.2f}), random pools by "
                      f"{100 * loro['random_pools']['mean']:.2f} pp."]
    return "\n".join([
        *(line for w in head for line in (w, "")),
        f"**Split {doc['split_id']}**, largest test deviation "
        f"{100 * big['deviation']:+.2f} pp ({big['dimension']} {big['category']}); "
        f"T2 floors met: {met} of {len(doc['floors'])}.", "", *lines])


_TIERS = ("correct", "T0", "T1", "T2", "degraded")
