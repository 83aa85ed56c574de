"""The two formats of our own: published results in, a workspace ready to split out.

``import videomme``: the official results layout (a JSON list of videos with ``video_id``,
``duration``, ``domain``, ``sub_category`` and ``questions``, each with ``question_id``,
``task_type``, ``question``, ``options``, ``answer``, ``response``). The first import of a
workspace writes its benchmark (``questions/videomme.json``, the file without the responses), a
harness db holding the run, and ``video_split.yaml`` (answer_only rules judge, the run as
baseline); every later import must match that benchmark and is appended to
``diag.reference_runs``.

``import predictions``: flat JSONL lines ``{question_id, response | prediction, stop_reason?}``
against the workspace's benchmark, optionally registered as a reference run, a candidate or the
control run of the evaluation.

Everything is checked before anything is written (``workspace_runs.py`` writes the run).
"""

from __future__ import annotations

import json
from pathlib import Path

from split_assets.errors import InputError, UserError
from split_assets.importing.workspace_runs import (
    QUESTIONS,
    ImportGate,
    ImportSummary,
    check_run_id,
    check_workspace,
    finish_import,
    text_or_none,
    workspace_benchmark,
)
from split_assets.importing.workspace_setup import (
    Answer,
    BuiltBenchmark,
)
from split_assets.sources.benchmark import read_benchmark_files

# ---------------------------------------------------------------- import videomme --------

def import_videomme(results: Path, run_id: str, workspace: Path, replace: bool = False,
                    partial: bool = False, role: str | None = None,
                    gate: ImportGate | None = None) -> ImportSummary:
    """Import one official-layout results file as run ``run_id``."""
    check_run_id(run_id)
    check_workspace(workspace)
    if not results.is_file():
        raise UserError(f"results file not found: {results}", "--results",
                        "pass the official-layout JSON results file")
    from_file = read_benchmark_files([results])
    bench_bytes = _benchmark_bytes(results)
    # a question without a response (or prediction) is not answered by this run
    answers = {q.question_id: Answer(text_or_none(q.extra.get("prediction")),
                                      text_or_none(q.extra.get("response")),
                                      text_or_none(q.extra.get("stop_reason")))
               for q in from_file.questions
               if q.extra.get("response") is not None or q.extra.get("prediction") is not None}
    if not answers:
        raise InputError(f"none of the {len(from_file.questions)} questions has a response",
                         str(results), "import a results file: each question needs the "
                                       "model's answer in 'response'")
    return finish_import(results, run_id, workspace, answers, replace=replace,
                         partial=partial, role=role, built=BuiltBenchmark(from_file, bench_bytes),
                         gate=gate)


def _benchmark_bytes(results: Path) -> bytes:
    """The results file without the answers: the benchmark itself (always a JSON list)."""
    text = results.read_text(encoding="utf-8")  # read_benchmark_files validated it already
    if results.suffix == ".jsonl":
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        data = json.loads(text)
        items = data if isinstance(data, list) else [data]
    for item in items:
        for q in item.get("questions", [item]):
            for name in _ANSWER_FIELDS:
                q.pop(name, None)
    return (json.dumps(items, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


_ANSWER_FIELDS = ("response", "prediction", "stop_reason")


# ---------------------------------------------------------------- import predictions -----

def import_predictions(jsonl: Path, run_id: str, workspace: Path, replace: bool = False,
                       partial: bool = False, role: str | None = None,
                       gate: ImportGate | None = None) -> ImportSummary:
    """Import flat prediction lines as run ``run_id`` against the workspace's benchmark."""
    check_run_id(run_id)
    check_workspace(workspace)
    if workspace_benchmark(workspace) is None:
        raise UserError(f"no benchmark in {workspace} ({QUESTIONS}/)", "--workspace",
                        "import the baseline first: split-assets import videomme ...")
    if not jsonl.is_file():
        raise UserError(f"predictions file not found: {jsonl}", "--jsonl",
                        "pass a JSONL file of {question_id, response | prediction} lines")
    answers: dict[str, Answer] = {}
    try:
        text = jsonl.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("the file is not UTF-8 text", str(jsonl),
                         "save it as UTF-8 JSONL") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{jsonl}:{lineno}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON line: {exc.msg}", where, "fix the line") from None
        if not isinstance(record, dict) or not record.get("question_id"):
            raise InputError("line has no question_id", where,
                             "each line needs question_id and response or prediction")
        if "response" not in record and "prediction" not in record:
            raise InputError("line has neither response nor prediction", where,
                             "add the model's answer as response (or prediction)")
        qid = str(record["question_id"])
        if qid in answers:
            raise InputError(f"question {qid!r} appears twice", where, "keep one line per "
                                                                        "question")
        answers[qid] = Answer(*(text_or_none(record.get(name))
                                for name in ("prediction", "response", "stop_reason")))
    return finish_import(jsonl, run_id, workspace, answers, replace=replace, partial=partial,
                         role=role, built=None, default_role=None, gate=gate)
