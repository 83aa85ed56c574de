"""Importers for the evaluation harnesses most Video-MME results come from.

``import lmms-eval``: the per-sample JSONL lmms-eval writes with ``--log_samples``
(``<output>/<model>/<date>_samples_<task>.jsonl``, lmms_eval/loggers/evaluation_tracker.py) for
the ``videomme`` task family. A line holds ``doc_id``, ``target``, ``filtered_resps`` (a list,
or since v0.7 a plain string), ``resps`` (``[[str]]``; dropped when equal to
``filtered_resps``), up to v0.3 the ``doc`` (the Video-MME row), and the metric dict
``videomme_perception_score`` of lmms_eval/tasks/videomme/utils.py:videomme_process_results
(``question_id``, ``duration``, ``category``, ``sub_category``, ``task_category``,
``pred_answer``, ``answer``; since 2026-01 also ``score``, ``videoID``; spelled
``videomme_percetion_score`` before v0.3.0). The raw response is ``filtered_resps[0]`` (else
``resps[0][0]``); its letter is extracted with our rule (sources/harness_db.py), and where
lmms-eval's own ``pred_answer`` differs the import says how often and keeps ours.

``import vlmevalkit``: VLMEvalKit's Video-MME prediction table (``<model>_Video-MME_<n>frame
.xlsx``, or its ``_score`` table; .tsv and .csv too), one row per question with the columns of
vlmeval/dataset/videomme.py:generate_tsv (``index``, ``video`` = the YouTube id ``videoID``,
``duration``, ``domain``, ``candidates`` = a Python-list string of "A. ..." options,
``sub_category``, ``task_type``, ``question``, ``answer``) plus ``prediction``. It carries no
Video-MME question id, so a row joins the workspace's question with the same video (the
benchmark's ``videoID``, when it has one) and the same question text; when several remain,
the same options; the answer letter must agree. A row matching none or several is refused.
A prediction containing "Failed to obtain answer" (VLMEvalKit's FAIL_MSG) is a harness
failure: stop reason ``error``, INFRA.
"""

from __future__ import annotations

import ast
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from split_assets.errors import InputError, UserError
from split_assets.importing.harness_files import cell, read_jsonl, read_table, response_of
from split_assets.importing.videomme_release import (
    LMMS_METRIC,
    SCORE_FIELDS,
    VIDEOMME_RELEASE,
    release_rows,
    score_notes,
    videomme_score_key,
)
from split_assets.importing.workspace_runs import (
    BENCHMARK_FILE,
    ImportGate,
    ImportSummary,
    check_run_id,
    check_workspace,
    finish_import,
    workspace_benchmark,
)
from split_assets.importing.workspace_setup import Answer, BuiltBenchmark
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.letters import extract_letter

_SAMPLES = re.compile(r"_samples_(?P<task>[A-Za-z0-9_.-]+)\.jsonl$")
_DOC_FIELDS = ("video_id", "duration", "domain", "sub_category", "task_type", "question_id",
               "question", "options", "answer")
FAIL_MARK = "Failed to obtain answer"  # vlmeval: FAIL_MSG 'Failed to obtain answer via API.'


# ---------------------------------------------------------------- lmms-eval -------------

def import_lmms_eval(samples: list[Path], run_id: str, workspace: Path, replace: bool = False,
                     partial: bool = False, role: str | None = None,
                     task: str | None = None, gate: ImportGate | None = None,
                     annotations: list[Path] | None = None) -> ImportSummary:
    """Import lmms-eval ``--log_samples`` files of one run of one task variant; lines without
    a ``doc`` (lmms-eval 0.4 and later) take their questions from ``annotations`` (Video-MME's
    release: ``videomme/test-00000-of-00001.parquet``), which then make the benchmark."""
    check_run_id(run_id)
    check_workspace(workspace)
    files, skipped = files_of_task(samples, task)
    rows = release_rows(annotations or [])
    answers: dict[str, Answer] = {}
    docs: dict[str, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    differ = 0
    metric: str | None = None  # the score dict's key (a renamed task's own)
    for path in files:
        for where, record in read_jsonl(path):
            renamed = not (task_of(path) or "").startswith("videomme")
            qid, response, pred, doc = _lmms_line(record, where, renamed)
            metric = metric or videomme_score_key(record, renamed)
            if qid in seen:
                raise InputError(f"question {qid!r} appears twice in the chosen task (first at "
                                 f"{seen[qid]})", where, "import the files of one run of one "
                                 "task variant (--task)")
            seen[qid] = where
            if doc is None and rows and qid not in rows:
                raise InputError(f"question {qid!r} is not in the annotations", where,
                                 f"pass --annotations with {VIDEOMME_RELEASE}")
            answers[qid] = Answer(None, response, None)
            differ += pred is not None and pred.upper() != extract_letter(response)
            if doc is not None:
                docs[qid] = doc
    source = files[0] if len(files) == 1 else Path(", ".join(str(f) for f in files))
    built = _built(rows, annotations or [], docs, len(answers), source, workspace)
    summary = finish_import(source, run_id, workspace, answers, replace=replace,
                            partial=partial, role=role, built=built, gate=gate)
    summary.notes += score_notes(files[0], task_of(files[0]), metric or LMMS_METRIC, answers,
                                 built.benchmark if built else workspace_benchmark(workspace))
    summary.notes += [f"skipped {f} (task {t}, not {task})" for f, t in skipped]
    if differ:
        summary.notes.append(f"lmms-eval's pred_answer differs from our letter on {differ} "
                             "answer(s): kept ours (one rule for every run: docs/how-to/"
                             "import.md)")
    return summary


def _built(rows: dict[str, dict], annotations: list[Path], docs: dict[str, dict],
           answered: int, source: Path, workspace: Path) -> BuiltBenchmark | None:
    """The benchmark the lines bring: the release's (every question, answered or not), else
    the docs' when every line has one; a first import of doc-less lines is refused."""
    if rows:
        return _benchmark_of_docs(rows, annotations[0])
    if docs and len(docs) == answered:
        return _benchmark_of_docs(docs, source)
    if workspace_benchmark(workspace) is None:
        raise UserError(f"no benchmark in {workspace} (questions/), and {answered - len(docs)}"
                        f" of {answered} lines carry no doc (lmms-eval 0.4 and later leave "
                        "it out)", "--samples", f"pass --annotations with {VIDEOMME_RELEASE}")
    return None


def task_of(path: Path) -> str | None:
    """The task of a ``<date>_samples_<task>.jsonl`` file (None: the name does not say)."""
    match = _SAMPLES.search(path.name)
    return match["task"] if match else None


def files_of_task(samples: list[Path], task: str | None,
                  several: bool = False) -> tuple[list[Path], list]:
    """The files of ``task`` (all when None) and the skipped (file, task) pairs; several
    tasks without ``--task`` are refused unless ``several`` (MVBench: one per subtask)."""
    for path in samples:
        if not path.is_file():
            raise UserError(f"samples file not found: {path}", "--samples",
                            "pass the *_samples_<task>.jsonl files lmms-eval wrote")
    named = {p: task_of(p) for p in samples}
    if task is None:
        tasks = sorted({t for t in named.values() if t is not None})
        if len(tasks) > 1 and not several:
            raise UserError(f"the files hold {len(tasks)} task variants ({', '.join(tasks)})",
                            "--samples", "pass --task NAME to import one of them")
        return list(samples), []
    chosen = [p for p in samples if named[p] in (task, None)]
    if not chosen:
        raise UserError(f"no file of task {task!r} among {len(samples)} file(s)", "--task",
                        "name the task of the files (<date>_samples_<task>.jsonl)")
    return chosen, [(p, named[p]) for p in samples if p not in chosen]


def _lmms_line(record: Any, where: str,
               renamed: bool) -> tuple[str, str, str | None, dict | None]:
    """(question id, raw response, lmms-eval's pred_answer, the doc if present)."""
    if not isinstance(record, dict):
        raise InputError("line is not a JSON object", where, "pass lmms-eval's samples file")
    key = videomme_score_key(record, renamed)
    if key is None:
        raise InputError(f"line has no {LMMS_METRIC} (a line of another task variant?)"
                         if not renamed else f"line has no {LMMS_METRIC} and no other score "
                         f"dict with Video-MME's fields ({', '.join(SCORE_FIELDS)})", where,
                         "import samples of a Video-MME task, one variant at a time, or name "
                         "the fields with --map FILE.yaml (docs/how-to/import.md)")
    metric = record[key]
    doc = record.get("doc") if isinstance(record.get("doc"), dict) else None
    qid = metric.get("question_id", (doc or {}).get("question_id"))
    if not isinstance(qid, str) or not qid:
        raise InputError(f"{LMMS_METRIC} has no question_id", where, "pass lmms-eval's file")
    pred = metric.get("pred_answer")
    return qid, response_of(record, where), pred if isinstance(pred, str) else None, doc


def _benchmark_of_docs(docs: dict[str, dict], source: Path) -> BuiltBenchmark:
    """The Video-MME rows of the docs as the workspace's benchmark (official layout; the
    YouTube ``videoID`` kept on each question, for joining VLMEvalKit tables later)."""
    videos: dict[str, dict[str, Any]] = {}
    for qid, doc in sorted(docs.items()):
        missing = [f for f in _DOC_FIELDS if f not in doc]
        if missing:
            raise InputError(f"the doc of {qid} lacks {', '.join(missing)}", str(source),
                             "pass samples whose doc is the Video-MME row")
        video = videos.setdefault(str(doc["video_id"]), {
            "video_id": str(doc["video_id"]), "duration": doc["duration"],
            "domain": doc["domain"], "sub_category": doc["sub_category"], "questions": []})
        question = {k: doc[k] for k in ("question_id", "task_type", "question", "options",
                                        "answer")}
        if doc.get("videoID"):
            question["videoID"] = doc["videoID"]
        video["questions"].append(question)
    data = (json.dumps(list(videos.values()), ensure_ascii=False, indent=1) + "\n").encode()
    return BuiltBenchmark.of(data, Path(BENCHMARK_FILE).name, source, what="docs")


# ---------------------------------------------------------------- VLMEvalKit ------------

def import_vlmevalkit(results: Path, run_id: str, workspace: Path, replace: bool = False,
                      partial: bool = False, role: str | None = None,
                      gate: ImportGate | None = None) -> ImportSummary:
    """Import a VLMEvalKit Video-MME prediction table against the workspace's benchmark."""
    check_run_id(run_id)
    check_workspace(workspace)
    benchmark = workspace_benchmark(workspace)
    if benchmark is None:
        raise UserError(f"no benchmark in {workspace} (questions/)", "--workspace",
                        "VLMEvalKit's table has no question ids: import the baseline first "
                        "(split-assets import lmms-eval or videomme)")
    rows = read_table(results)
    join = _Join(benchmark)
    answers: dict[str, Answer] = {}
    seen: dict[str, int] = {}
    for number, row in rows:
        where = f"{results} row {number}"
        qid = join.question(row, where)
        if qid in seen:
            raise InputError(f"question {qid} appears twice (first in row {seen[qid]})", where,
                             "import one table of one run")
        seen[qid] = number
        text = cell(row.get("prediction"))
        if FAIL_MARK in text:  # no answer at all: kept empty, or the A of "API" would score
            answers[qid] = Answer(None, "", "error")
        else:
            answers[qid] = Answer(None, text, None)
    summary = finish_import(results, run_id, workspace, answers, replace=replace,
                            partial=partial, role=role, built=None, gate=gate)
    infra = sum(a.stop_reason == "error" for a in answers.values())
    if infra:
        summary.notes.append(f"{infra} answer(s) are VLMEvalKit's '{FAIL_MARK} ...': "
                             "stop reason 'error' (INFRA)")
    return summary


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


class _Join:
    """Which benchmark question a VLMEvalKit row is: same video (``videoID``, when the
    benchmark has it), same question text; if several, same options."""

    def __init__(self, benchmark: Benchmark) -> None:
        self.by_id = benchmark.by_id
        self.with_video = all(q.extra.get("videoID") for q in benchmark.questions)
        self.index: dict[tuple[str, str], list[str]] = defaultdict(list)
        for q in benchmark.questions:
            video = str(q.extra.get("videoID")) if self.with_video else ""
            self.index[video, _norm(q.question)].append(q.question_id)

    def question(self, row: dict[str, Any], where: str) -> str:
        question, options = _question_and_options(row, where)
        video = cell(row.get("video")) if self.with_video else ""
        hits = self.index.get((video, _norm(question)), [])
        if len(hits) > 1 and options is not None:
            hits = [q for q in hits if [_norm(o) for o in self.by_id[q].options]
                    == [_norm(o) for o in options]]
        shown = f"video {cell(row.get('video'))!r}, question {question[:60]!r}"
        if not hits:
            raise InputError(f"no question of the workspace's benchmark matches ({shown})",
                             where, "import results of the workspace's benchmark")
        if len(hits) > 1:
            raise InputError(f"{len(hits)} questions of the benchmark match ({shown}: "
                             f"{', '.join(hits[:4])})", where,
                             "the row cannot be told apart: build the workspace from a file "
                             "that carries videoID (import lmms-eval with docs)")
        answer = cell(row.get("answer")).strip()
        if answer != self.by_id[hits[0]].answer:
            raise InputError(f"answer {answer!r} of {hits[0]} differs from the benchmark's "
                             f"{self.by_id[hits[0]].answer!r}", where,
                             "import results of the same benchmark version")
        return hits[0]


def _question_and_options(row: dict[str, Any], where: str) -> tuple[str, list[str] | None]:
    """The question text and the options (``candidates``; in tables written before
    VLMEvalKit 4c03554 the options follow the question on their own lines)."""
    text = cell(row.get("question"))
    raw = cell(row.get("candidates")).strip()
    if not raw:
        lines = text.split("\n")
        return lines[0], ([line for line in lines[1:] if line.strip()] or None)
    try:
        options = ast.literal_eval(raw)  # a Python list literal; never eval
    except (ValueError, SyntaxError):
        options = None
    if not isinstance(options, list | tuple) or not all(isinstance(o, str) for o in options):
        raise InputError(f"candidates {raw[:60]!r} is not a list of options", where,
                         "keep VLMEvalKit's candidates column as written")
    return text, list(options)
