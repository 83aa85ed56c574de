"""``split-assets review export``: a seeded, optionally stratified sample of the judge's
verdicts for human review, as a CSV with everything a reviewer needs and nothing that links out.

Strata are the combinations of the ``--stratify`` fields of the judge's rows (``tier``,
``task_type``, ``error_type``, ``difficulty``). The sample is spread over the strata as evenly
as their sizes allow (a stratum smaller than its share gives the rest to the others), so rare
strata -- T2 verdicts, small task types -- are seen; each row carries its sampling weight
N_h / n_h (stratum size / sampled), which ``judge_agreement`` uses to undo the
over-sampling. Unstratified, every row weighs N / n. Without ``--show-judge`` the strata are
opaque ids (``s01``...): a name like ``tier=T2`` would tell the reviewer the judge's verdict.
When ``--n`` is below the number of strata, some strata get no draw and drop out of the
weighted kappa: stratify on fewer fields.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from split_assets.diagnosis.cases import CaseSource
from split_assets.errors import InputError, UserError
from split_assets.judge.render import case_values
from split_assets.store.signals import SignalRow

if TYPE_CHECKING:
    from pathlib import Path

    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

STRATA_FIELDS = ("tier", "task_type", "error_type", "difficulty")
LABEL_COLUMNS = ("label_tier", "label_error_type", "notes")
JUDGE_COLUMNS = ("judge_tier", "judge_error_type", "judge_cause_category", "judge_rationale")
CASE_COLUMNS = ("baseline_run_id", "question_id", "video_id", "task_type", "difficulty",
                "evidence_spans_s", "question", "options", "correct_answer", "agent_response",
                "agent_letter", "opened_nodes", "evidence_nodes", "trace", "stratum",
                "sampling_weight")


def allocate(sizes: dict[str, int], n: int, seed: int = 0) -> dict[str, int]:
    """``n`` draws spread as evenly as the strata's sizes allow; draws that cannot be spread
    evenly (fewer than the strata) go to strata in a seeded random order, never by name."""
    alloc = dict.fromkeys(sizes, 0)
    left = min(n, sum(sizes.values()))
    rng = random.Random(seed)
    while left:
        open_ = sorted(k for k in sizes if alloc[k] < sizes[k])
        rng.shuffle(open_)
        share = max(1, left // len(open_))
        for k in open_:
            take = min(share, sizes[k] - alloc[k], left)
            alloc[k] += take
            left -= take
            if not left:
                break
    return alloc


def parse_stratify(value: str | None) -> tuple[str, ...]:
    fields = tuple(f.strip() for f in (value or "").split(",") if f.strip())
    unknown = [f for f in fields if f not in STRATA_FIELDS]
    if unknown:
        raise UserError(f"--stratify {value!r}: unknown field {unknown[0]!r}", "--stratify",
                        f"use a comma-separated subset of {', '.join(STRATA_FIELDS)}")
    return fields


def draw(rows: Sequence[SignalRow], difficulty: dict[str, str], n: int,
         stratify: tuple[str, ...], seed: int) -> list[tuple[SignalRow, str, float]]:
    """(row, stratum, weight) for the sample, in question order."""
    def stratum(r: SignalRow) -> str:
        values = {"tier": r.tier, "task_type": r.task_type, "error_type": r.error_type or "",
                  "difficulty": difficulty.get(r.question_id, "")}
        return "|".join(f"{f}={values[f]}" for f in stratify)
    groups: dict[str, list[SignalRow]] = {}
    for r in sorted(rows, key=lambda r: r.question_id):
        groups.setdefault(stratum(r), []).append(r)
    alloc = allocate({k: len(v) for k, v in groups.items()}, n, seed)
    rng = random.Random(seed)
    picked = []
    for key in sorted(groups):
        chosen = rng.sample(groups[key], alloc[key])
        picked += [(r, key, len(groups[key]) / alloc[key]) for r in chosen]
    return sorted(picked, key=lambda p: p[0].question_id)


def export_review(inputs: Inputs, partition: Partition, n: int, stratify: tuple[str, ...],
                  out: Path, show_judge: bool = False, seed: int = 0) -> tuple[int, int]:
    """Write the sample of ``partition``'s diagnoses to ``out``; returns (rows written,
    strata)."""
    from split_assets.lib.canonical import atomic_write_bytes

    if n < 1:
        raise UserError(f"--n {n}: nothing to review", "--n", "sample at least one answer")
    rows = [r for r in partition.rows(required=True) if not r.infra and not r.degraded]
    if not rows:
        raise InputError(f"no diagnoses of run {partition.run_id} under {partition.key}",
                         str(partition.config_path), "run 'split-assets run' first")
    questions = {q.question_id: q for q in inputs.benchmark.questions}
    sample = draw(rows, {q: questions[q].difficulty for q in questions}, n, stratify, seed)
    preds = {p.question_id: p for p in inputs.predictions}
    chosen = [preds[r.question_id] for r, _, _ in sample]
    cases = {c.question.question_id: c for c in CaseSource(inputs, chosen).cases(chosen)}
    columns = (*CASE_COLUMNS, *(JUDGE_COLUMNS if show_judge else ()), *LABEL_COLUMNS)
    # a stratum named by the judge's tier would show the verdict: opaque ids unless shown
    names = {k: k if show_judge else f"s{i + 1:02d}"
             for i, k in enumerate(sorted({k for _, k, _ in sample}))}
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row, key, weight in sample:
        values = case_values(cases[row.question_id], inputs.diag.rules.open_tool)
        q = questions[row.question_id]
        record = {
            "baseline_run_id": partition.run_id, "question_id": row.question_id,
            "video_id": row.video_id, "task_type": row.task_type, "difficulty": q.difficulty,
            "evidence_spans_s": "; ".join(f"{a:g}-{b:g}" for a, b in q.evidence_spans or ()),
            "question": values["question"], "options": values["options"],
            "correct_answer": values["answer"], "agent_response": values["response"],
            "agent_letter": values["predicted"], "opened_nodes": values["opened_nodes"],
            "evidence_nodes": values["evidence_nodes"], "trace": values["trace"],
            "stratum": names[key], "sampling_weight": f"{weight:.6g}"}
        if show_judge:
            record.update(judge_tier=row.tier, judge_error_type=row.error_type or "",
                          judge_cause_category=row.cause_category or "",
                          judge_rationale=row.rationale or "")
        writer.writerow(record)
    atomic_write_bytes(out, buffer.getvalue().encode("utf-8"))
    return len(sample), len({k for _, k, _ in sample})
