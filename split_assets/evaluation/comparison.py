"""Compare a candidate run with the baseline on the frozen pools: validation, and test only
when asked for by name (each distinct candidate's answers on test is a look: ``claims.py``).

The pools come from the frozen ``pools.json`` of the config's split (its sha256 checked
against the manifest); the baseline's correctness from that file; a candidate's (and the
control's) from the harness db, scored exactly like the baseline. A run needs predictions only
for the pools compared: a question of a compared pool without one is an error, an INFRA answer
(empty, unparseable) counts as wrong.

Why a control run: validation was chosen with the baseline's outcomes in view (it is rich in
the baseline's wrong answers when ``val_wrong_min`` asks for it, and trainval in its persistent
defects), so answers that were wrong by chance tend to come out right in any re-run: a plain
re-run of the baseline "improves" there by regression to the mean. A control run -- a fresh
re-run of the baseline agent -- measures that drift; the candidate's gain net of the control's
is its accuracy minus the control's, tested pairwise candidate vs control.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from split_assets.config_keys import config_key
from split_assets.errors import InputError, UserError
from split_assets.evaluation.claims import claim_line
from split_assets.evaluation.mcnemar import compare
from split_assets.evaluation.reuse import one_sided_p
from split_assets.lib.canonical import digest_of, sha256_hex
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.harness_db import predictions_digest
from split_assets.split.layout import EVALUATED_POOLS
from split_assets.split.stats import markdown_table

if TYPE_CHECKING:
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition
BIAS_NOTE = ("no control run: the validation gain is biased upward (validation was chosen "
             "with the baseline's wrong answers in view, so a plain re-run gains there by "
             f"regression to the mean); set {config_key('control_run')} or pass --control")
TEST_NOT_SHOWN = ("test not compared: test is looked at only by 'split-assets compare --pool "
                  f"test', each distinct candidate a look (see {config_key('test_looks_max')})")
VALIDATION_ONLY = ("validation",)


def load_pools(partition: Partition) -> dict[str, Any]:
    """The frozen pools.json of the partition's split, checked against its manifest."""
    manifest = partition.frozen_manifest()
    data = partition.files.pools.read_bytes()
    if sha256_hex(data) != manifest["pools_sha256"]:
        raise UserError(f"{partition.files.pools} does not hash to the manifest's "
                        "pools_sha256", str(partition.files.pools),
                        "re-freeze the split with 'split-assets run'")
    return json.loads(data)


def evaluate(pools_doc: dict[str, Any], benchmark: Benchmark, candidate: dict[str, bool],
             control: dict[str, bool] | None, names: dict[str, str | None],
             pools: tuple[str, ...] = EVALUATED_POOLS) -> dict[str, Any]:
    """The report of one candidate (and the control, if any) on ``pools``."""
    baseline = pools_doc["correctness"]
    report: dict[str, Any] = {"baseline": pools_doc["baseline_run_id"],
                              "candidate": names["candidate"], "control": names["control"],
                              "split_id": pools_doc["split_id"], "pools": {}}
    for pool in pools:
        ids = sorted(pools_doc["pools"][pool])
        videos = [benchmark.by_id[q].video_id for q in ids]
        base = [bool(baseline[q]) for q in ids]
        cand = [candidate[q] for q in ids]
        entry: dict[str, Any] = {"vs_baseline": compare(videos, base, cand).as_dict(),
                                 # the hypothesis tested: these answers on this pool (ledger)
                                 "answers_digest": digest_of([[q, c] for q, c in
                                                              zip(ids, cand, strict=True)])}
        if control is not None:
            ctrl = [control[q] for q in ids]
            control_gain = compare(videos, base, ctrl)
            vs_control = compare(videos, ctrl, cand)
            entry["control_vs_baseline"] = control_gain.as_dict()
            entry["vs_control"] = vs_control.as_dict()
            entry["net_gain"] = round(vs_control.gain, 6)
        elif pool == "validation":
            entry["note"] = BIAS_NOTE
        if pool == "test":  # a claim on test: against the control when there is one
            reference = ctrl if control is not None else base
            entry["claim"] = {"against": "control" if control is not None else "baseline",
                              "p_one_sided": float(f"{one_sided_p(videos, reference, cand):.6g}")}
        report["pools"][pool] = entry
    return report


def _row(pool: str, label: str, r: dict[str, Any]) -> list[Any]:
    (_, b), (c, _) = r["table"]
    ci = r["gain_ci95"]
    shown = f"[{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}]" if ci else "n/a (exact p)"
    return [pool, label, r["n"], f"{r['reference_accuracy']:.4f}",
            f"{r['candidate_accuracy']:.4f}", f"{100 * r['gain']:+.2f}", f"{c}/{b}",
            _p(r["p_exact"]), _p(r["p_mid"]), _p(r["p_cluster"]), shown]


def _p(value: float) -> str:
    return f"{value:.4g}"


HEADER = ["pool", "comparison", "n", "ref acc", "cand acc", "gain pp", "fixed/broken",
          "p exact", "mid-p", "p cluster", "gain 95% CI (cluster)"]


def rows_of(report: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for pool, entry in report["pools"].items():
        if "vs_baseline" not in entry:  # not compared (see its note)
            continue
        rows.append(_row(pool, "candidate vs baseline", entry["vs_baseline"]))
        if "vs_control" in entry:
            rows.append(_row(pool, "control vs baseline", entry["control_vs_baseline"]))
            rows.append(_row(pool, "candidate vs control (net)", entry["vs_control"]))
    return rows


def notes_of(report: dict[str, Any]) -> list[str]:
    """Each pool's note and, on test, what may be claimed of this look."""
    notes = []
    for entry in report["pools"].values():
        notes += [entry["note"]] if "note" in entry else []
        notes += [claim_line(entry)] if "look" in entry.get("claim", {}) else []
    return notes


def markdown(report: dict[str, Any]) -> str:
    text = markdown_table(HEADER, rows_of(report))
    return text + ("".join(f"\n\n{n}" for n in notes_of(report)))


def text(report: dict[str, Any]) -> str:
    """A fixed-width table for the terminal."""
    rows = [HEADER, *[[str(c) for c in row] for row in rows_of(report)]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    title = (f"candidate {report['candidate']} vs baseline {report['baseline']}"
             + (f", control {report['control']}" if report["control"] else "")
             + f" (split {report['split_id']})")
    return "\n".join([title, *lines, *notes_of(report)])


def compare_runs(inputs: Inputs, partition: Partition, candidate: str, control: str | None,
                 pools: tuple[str, ...] = VALIDATION_ONLY, control_where: str = "--control",
                 skip_incomplete: bool = False) -> dict[str, Any]:
    """The report of ``candidate`` (and ``control``) on the config's frozen split. With
    ``skip_incomplete`` a pool the runs did not fully answer gets a note instead of an error
    (the asset: a candidate needs predictions only for the pools it is compared on)."""
    check_roles(partition.run_id, candidate, control, control_where)
    doc = load_pools(partition)
    manifest = partition.frozen_manifest()
    if (predictions_digest(inputs.predictions)
            != manifest["input_digests"]["baseline_predictions"]):
        raise UserError(f"the baseline run {partition.run_id!r} changed since the split was "
                        "frozen", str(partition.files.manifest),
                        f"freeze it again: split-assets run --config {inputs.config_path} (move "
                        "the old split folder away first)")
    runs = [(candidate, "candidate")] + ([(control, "control")] if control is not None else [])
    answered = {run: inputs.outcomes(run, role, "--candidate" if role == "candidate"
                                 else control_where).correct for run, role in runs}
    chosen, notes = _complete_pools(doc, pools, runs, answered, skip_incomplete)
    cand = {q: bool(v) for q, v in answered[candidate].items() if v is not None}
    ctrl = ({q: bool(v) for q, v in answered[control].items() if v is not None}
            if control is not None else None)
    report = evaluate(doc, inputs.benchmark, cand, ctrl,
                      {"candidate": candidate, "control": control}, tuple(chosen))
    for pool, note in notes.items():
        report["pools"][pool] = {"note": note}
    report["pools"] = {pool: report["pools"][pool] for pool in pools}
    if "test" not in pools:
        report["pools"]["test"] = {"note": TEST_NOT_SHOWN}
    return report


def check_roles(baseline: str, candidate: str, control: str | None, control_where: str) -> None:
    """The candidate is neither the baseline nor the control (``compare``, ``feedback``)."""
    for run, role, where in ((candidate, "candidate", "--candidate"),
                             (control, "control", control_where)):
        if run is not None and run == baseline:
            raise UserError(f"the {role} run is the baseline itself ({run!r})", where,
                            "pass another run (a control is a fresh re-run of the baseline)")
    if control is not None and control == candidate:
        raise UserError(f"the control run is the candidate itself ({control!r})", control_where,
                        "a control is a fresh re-run of the baseline agent, not the candidate")


def _complete_pools(doc: dict[str, Any], pools: tuple[str, ...], runs: list[tuple[str, str]],
                    answered: dict[str, dict[str, bool | None]],
                    skip_incomplete: bool) -> tuple[list[str], dict[str, str]]:
    """The pools every run answered fully, and a note for each other pool (or an error)."""
    notes: dict[str, str] = {}
    chosen = []
    for pool in pools:
        ids = sorted(doc["pools"][pool])
        for run, role in runs:
            missing = [q for q in ids if answered[run].get(q) is None]
            if not missing:
                continue
            text = (f"{role} run {run!r} has no prediction for {len(missing)} of {len(ids)} "
                    f"{pool} questions (e.g. {', '.join(missing[:5])})")
            if not skip_incomplete:
                raise InputError(text, f"harness db run {run!r}",
                                 "import its predictions for the whole pool, or compare only "
                                 "the pools it answered (--pool)")
            notes[pool] = f"not compared: {text}"
            break
        else:
            chosen.append(pool)
    return chosen, notes
