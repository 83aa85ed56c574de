"""Video-MME's own release as the benchmark of an lmms-eval import (lmms-eval 0.4 and later
write no ``doc`` into their sample lines): the rows of ``videomme/test-00000-of-00001.parquet``
(lmms-lab/Video-MME on the Hugging Face hub, the dataset lmms-eval's ``videomme`` task loads:
``video_id, duration, domain, sub_category, url, videoID, question_id, task_type, question,
options, answer``), or the same rows as JSON or JSONL; the key of a line's Video-MME score dict
(a renamed task's own); and lmms-eval's own score from the ``<date>_results.json`` it writes
beside the samples, compared with the imported accuracy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from split_assets.errors import InputError
from split_assets.importing.workspace_setup import Answer
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.letters import extract_letter

LMMS_METRIC = "videomme_perception_score"
LMMS_METRIC_OLD = "videomme_percetion_score"  # lmms-eval before bb3fd82 (v0.3.0)
# the fields of videomme_process_results' score dict: a renamed task (its own task and metric
# names over the same questions) keeps them under another key
SCORE_FIELDS = ("question_id", "pred_answer", "task_category", "duration")


def videomme_score_key(record: dict[str, Any], renamed: bool = True) -> str | None:
    """The key of a line's Video-MME score dict: ``videomme_perception_score`` (or its old
    spelling), else -- ``renamed``: the line is of a task that is not one of Video-MME's own
    variants -- the one dict-valued field holding Video-MME's score fields."""
    for key in (LMMS_METRIC, LMMS_METRIC_OLD):
        if isinstance(record.get(key), dict):
            return key
    if not renamed:
        return None
    found = [k for k, v in record.items()
             if isinstance(v, dict) and all(f in v for f in SCORE_FIELDS)]
    return found[0] if len(found) == 1 else None


VIDEOMME_RELEASE = ("Video-MME's videomme/test-00000-of-00001.parquet (lmms-lab/Video-MME, "
                    "the release lmms-eval loads)")


def release_rows(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Video-MME's rows by question id, from its release files (parquet, JSON or JSONL)."""
    from split_assets.importing.annotations import read_rows

    out: dict[str, dict[str, Any]] = {}
    for stem, part in read_rows(paths).items():
        for number, row in enumerate(part, start=1):
            qid = row.get("question_id")
            if not isinstance(qid, str) or not qid:
                raise InputError("a row has no question_id", f"{stem} row {number}",
                                 f"pass Video-MME's release: {VIDEOMME_RELEASE}")
            out[qid] = row
    return out


def score_notes(samples: Path, task: str | None, metric: str, answers: dict[str, Answer],
                benchmark: Benchmark | None) -> list[str]:
    """lmms-eval's own score (``metric`` of ``task``) from the ``<date>_results.json`` beside
    the samples, against the accuracy of the imported answers (Video-MME's letter rule),
    when both are known."""
    results = samples.with_name(samples.name.split("_samples_")[0] + "_results.json")
    if task is None or benchmark is None or not results.is_file():
        return []
    try:
        doc = json.loads(results.read_text(encoding="utf-8"))
        score = float(doc["results"][task][f"{metric},none"])
    except (OSError, ValueError, KeyError, TypeError):
        return [f"{results.name} holds no {metric} of {task}: no score to compare"]
    right = sum(extract_letter(a.response) == benchmark.by_id[q].answer
                for q, a in answers.items() if q in benchmark.by_id)
    ours = 100 * right / len(answers) if answers else 0.0
    same = "the same" if abs(ours - score) < 0.005 else (
        f"{ours - score:+.2f} pp: our letter rule reads some answers otherwise (docs/"
        "how-to/other-benchmarks.md, Letter rules)")
    return [f"lmms-eval's score ({results.name}): {score:.2f}; imported accuracy: {ours:.2f} "
            f"% ({right}/{len(answers)}): {same}"]
