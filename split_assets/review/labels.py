"""``split-assets review import``: a reviewer's labels, validated as a whole, into the signal
store (never the harness db), keyed by (baseline run, question, reviewer) -- not by fingerprint,
so they survive a change of judge. Importing again replaces the reviewer's labels row by row.

And the figure they are for: kappa of the judge's tiers against the human labels, weighted by
the sampling weights, with a seeded bootstrap over videos (``judge_agreement``).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from split_assets.errors import InputError, UserError
from split_assets.evaluation.agreement import Kappa, Pair, kappa
from split_assets.judge.schema import ErrorType
from split_assets.review.sample import LABEL_COLUMNS
from split_assets.store.signals import ReviewLabel

if TYPE_CHECKING:
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

REQUIRED = ("baseline_run_id", "question_id", "sampling_weight", "label_tier")
ERROR_TYPES = frozenset(get_args(ErrorType))
_REVIEWER = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True)
class ImportedLabels:
    labelled: int
    unlabelled: int  # rows left blank: not reviewed yet, not imported


def _line_error(path: Path, line: int, what: str, fix: str) -> InputError:
    return InputError(what, f"{path} line {line}", fix)


def read_labels(inputs: Inputs, path: Path, reviewer: str) -> tuple[list[ReviewLabel], int]:
    """Every labelled row of ``path``, checked; (labels, rows left blank)."""
    if not _REVIEWER.match(reviewer):
        raise UserError(f"--reviewer {reviewer!r} is not a plain name", "--reviewer",
                        "use letters, digits and . _ @ - (e.g. alice)")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read the review file: {exc.strerror or exc}", str(path),
                         "pass the CSV written by 'split-assets review export'") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"the review file is not UTF-8 text (byte {exc.start})", str(path),
                         "save it as UTF-8 CSV") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or ())]
    if missing:
        raise _line_error(path, 1, f"missing column(s) {', '.join(missing)}",
                          "keep the header of 'split-assets review export'")
    wrong = {p.question_id: p for p in inputs.predictions if not p.correct and not p.infra}
    labels, blank, seen = [], 0, set()
    while True:
        line = reader.line_num + 1  # the file line this row starts on (fields hold newlines)
        row = next(reader, None)
        if row is None:
            break
        if not (row.get("label_tier") or "").strip():
            blank += 1
            continue
        labels.append(_label(path, line, row, inputs.run_id, reviewer, wrong, seen))
    return labels, blank


def _label(path: Path, line: int, row: dict, run_id: str, reviewer: str, wrong: dict,
           seen: set[str]) -> ReviewLabel:
    qid = (row.get("question_id") or "").strip()
    if row.get("baseline_run_id", "").strip() != run_id:
        raise _line_error(path, line, f"labels of run {row.get('baseline_run_id')!r}, but the "
                          f"config's baseline is {run_id!r}", "import it with that run's config")
    if qid not in wrong:
        raise _line_error(path, line, f"question {qid!r} is not a wrong non-INFRA answer of "
                          f"run {run_id}", "keep the question ids of the exported file")
    if qid in seen:
        raise _line_error(path, line, f"question {qid!r} labelled twice",
                          "keep one row per question")
    seen.add(qid)
    tier = row["label_tier"].strip().upper()
    if tier not in ("T1", "T2"):
        raise _line_error(path, line, f"label_tier {row['label_tier']!r} is not T1 or T2",
                          "write T1 (lapse) or T2 (defect), or leave it blank")
    error_type = (row.get("label_error_type") or "").strip() or None
    if error_type is not None and error_type not in ERROR_TYPES:
        raise _line_error(path, line, f"label_error_type {error_type!r} is unknown",
                          f"use one of {', '.join(sorted(ERROR_TYPES))}, or leave it blank")
    try:
        weight = float(row["sampling_weight"])
    except ValueError:
        weight = -1.0
    if not (weight > 0 and math.isfinite(weight)):
        raise _line_error(path, line, f"sampling_weight {row['sampling_weight']!r} is not a "
                          "positive number", "keep the exported sampling_weight")
    p = wrong[qid]
    return ReviewLabel(run_id, qid, reviewer, p.video_id, p.task_type, tier, error_type,
                       weight, (row.get("stratum") or "").strip(),
                       (row.get("notes") or "").strip())


def import_review(inputs: Inputs, partition: Partition, path: Path,
                  reviewer: str) -> ImportedLabels:
    """Validate every row against the baseline's predictions, then store them all in the
    partition's signal store in one transaction."""
    labels, blank = read_labels(inputs, path, reviewer)
    if not labels:
        raise InputError("no labelled row (label_tier is blank everywhere)", str(path),
                         "fill label_tier (T1 or T2) for the answers you reviewed")
    with partition.store() as store:
        store.put_review_labels(labels)
    return ImportedLabels(len(labels), blank)


def judge_vs_humans(partition: Partition, seed: int = 0) -> Kappa | None:
    """Kappa of the judge's tier against every human label of the baseline run (one pair per
    label; weighted by its sampling weight); None without labels on diagnosed questions."""
    with partition.store(read_only=True) as store:
        labels = store.review_labels(partition.run_id)
        judged = {r.question_id: r for r in store.rows(partition.run_id, partition.key)
                  if not r.infra and not r.degraded}
    pairs = [Pair(x.question_id, x.video_id, x.task_type, judged[x.question_id].tier, x.tier,
                  x.sampling_weight) for x in labels if x.question_id in judged]
    return kappa(pairs, ("T1", "T2"), seed=seed) if pairs else None


__all__ = ["LABEL_COLUMNS", "ImportedLabels", "import_review", "judge_vs_humans",
           "read_labels"]
