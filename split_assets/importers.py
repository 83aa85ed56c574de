"""Importers: published results in, a workspace ready to split out.

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

A run id already present is refused unless ``replace``, which also deletes that run's signals.
Everything is checked before anything is written; the benchmark and the config are written
atomically and the run's rows in one transaction.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from split_assets.data.benchmark import Benchmark, load_benchmark, read_benchmark_files
from split_assets.data.harness import extract_letter, run_ids
from split_assets.data.signals import utc_now
from split_assets.errors import InputError, UserError
from split_assets.lib.canonical import atomic_write_bytes

BENCHMARK_FILE = "questions/videomme.json"
HARNESS_DB = "harness.db"
SIGNALS_DB = "signals.db"
CONFIG_FILE = "video_split.yaml"
_ANSWER_FIELDS = ("response", "prediction", "stop_reason")
ROLES = ("reference", "candidate", "control")


@dataclass
class ImportSummary:
    """What an import did (printed by the CLI)."""

    run_id: str
    questions: int
    answered: int
    workspace: Path
    created: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"imported run {self.run_id}: {self.answered} answers to {self.questions} "
               f"questions into {self.workspace}"]
        out += [f"wrote {name}" for name in self.created]
        return out + self.notes


@dataclass(frozen=True)
class _Answer:
    prediction: str | None
    response: str | None
    stop_reason: str | None


# ---------------------------------------------------------------- import videomme --------

def import_videomme(results: Path, run_id: str, workspace: Path, replace: bool = False,
                    partial: bool = False) -> ImportSummary:
    """Import one official-layout results file as run ``run_id``."""
    _check_run_id(run_id)
    if not results.is_file():
        raise UserError(f"results file not found: {results}", "--results",
                        "pass the official-layout JSON results file")
    from_file = read_benchmark_files([results])
    bench_bytes = _benchmark_bytes(results)
    # a question without a response (or prediction) is not answered by this run
    answers = {q.question_id: _Answer(_text(q.extra.get("prediction")),
                                      _text(q.extra.get("response")),
                                      _text(q.extra.get("stop_reason")))
               for q in from_file.questions
               if q.extra.get("response") is not None or q.extra.get("prediction") is not None}
    if not answers:
        raise InputError(f"none of the {len(from_file.questions)} questions has a response",
                         str(results), "import a results file: each question needs the "
                                       "model's answer in 'response'")
    bench_path = workspace / BENCHMARK_FILE
    first = not bench_path.is_file()
    if first:
        if (workspace / HARNESS_DB).exists():
            raise UserError(f"{workspace / HARNESS_DB} exists but {BENCHMARK_FILE} does not",
                            str(workspace), "import into an empty folder or a workspace made "
                                            "by 'split-assets import'")
        benchmark = from_file
    else:
        benchmark = load_benchmark(bench_path.parent)
        _check_matches(benchmark, from_file, results)
    _check_missing(set(benchmark.by_id) - set(answers), len(benchmark.by_id), results, partial)
    _check_run_free(workspace, run_id, replace)
    summary = ImportSummary(run_id, len(benchmark.by_id), 0, workspace)
    # everything checked: write
    if first:
        atomic_write_bytes(bench_path, bench_bytes)
        summary.created.append(BENCHMARK_FILE)
    _write_run(workspace, run_id, answers, replace, summary)
    config = workspace / CONFIG_FILE
    if not config.exists():
        _write_config(config, benchmark, run_id, answers)
        summary.created.append(CONFIG_FILE)
        summary.notes.append(f"baseline_run_id: {run_id}; run it with: split-assets run "
                             f"--config {config}")
    else:
        _register(config, run_id, "reference", summary)
    return summary


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


def _check_matches(benchmark: Benchmark, other: Benchmark, source: Path) -> None:
    """Refuse a file that is not of this workspace's benchmark (counts and examples)."""
    unknown = sorted(set(other.by_id) - set(benchmark.by_id))
    if unknown:
        raise InputError(f"{len(unknown)} of {len(other.by_id)} question ids are not in the "
                         f"workspace's benchmark (e.g. {', '.join(unknown[:5])})", str(source),
                         "import results of the same benchmark, or start a new workspace")
    changed = sorted(q for q in other.by_id if other.by_id[q].answer != benchmark.by_id[q].answer)
    if changed:
        raise InputError(f"{len(changed)} question(s) have another answer than in the "
                         f"workspace's benchmark (e.g. {', '.join(changed[:5])})", str(source),
                         "import results of the same benchmark version")


def _check_missing(missing: set[str], total: int, source: Path, partial: bool) -> None:
    if missing and not partial:
        shown = ", ".join(sorted(missing)[:5])
        raise InputError(f"{len(missing)} of {total} benchmark questions have no answer in the "
                         f"file (e.g. {shown})", str(source),
                         "pass --partial to import a run that answers only some questions")


# ---------------------------------------------------------------- import predictions -----

def import_predictions(jsonl: Path, run_id: str, workspace: Path, replace: bool = False,
                       partial: bool = False, role: str | None = None) -> ImportSummary:
    """Import flat prediction lines as run ``run_id`` against the workspace's benchmark."""
    _check_run_id(run_id)
    bench_dir = workspace / BENCHMARK_FILE
    if not bench_dir.is_file():
        raise UserError(f"no benchmark in {workspace} ({BENCHMARK_FILE})", "--workspace",
                        "import the baseline first: split-assets import videomme ...")
    if not jsonl.is_file():
        raise UserError(f"predictions file not found: {jsonl}", "--jsonl",
                        "pass a JSONL file of {question_id, response | prediction} lines")
    benchmark = load_benchmark(bench_dir.parent)
    answers: dict[str, _Answer] = {}
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
        answers[qid] = _Answer(_text(record.get("prediction")), _text(record.get("response")),
                               _text(record.get("stop_reason")))
    unknown = sorted(set(answers) - set(benchmark.by_id))
    if unknown:
        raise InputError(f"{len(unknown)} of {len(answers)} question ids are not in the "
                         f"workspace's benchmark (e.g. {', '.join(unknown[:5])})", str(jsonl),
                         "import predictions of the same benchmark")
    _check_missing(set(benchmark.by_id) - set(answers), len(benchmark.by_id), jsonl, partial)
    config = workspace / CONFIG_FILE
    if role is not None and not config.is_file():
        raise UserError(f"no {CONFIG_FILE} in {workspace} to register the run in",
                        "--role", "import the baseline with 'split-assets import videomme'")
    _check_run_free(workspace, run_id, replace)
    summary = ImportSummary(run_id, len(benchmark.by_id), 0, workspace)
    _write_run(workspace, run_id, answers, replace, summary)
    if role is not None:
        _register(config, run_id, role, summary)
    return summary


# ---------------------------------------------------------------- shared -----------------

def _check_run_id(run_id: str) -> None:
    if not run_id or run_id.strip() != run_id or not run_id.isprintable():
        raise UserError(f"run id {run_id!r} is empty, has surrounding spaces or control "
                        "characters", "--run-id", "pass a plain run id such as gpt4o-2026-01")


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _check_run_free(workspace: Path, run_id: str, replace: bool) -> None:
    db = workspace / HARNESS_DB
    if db.is_file() and run_id in run_ids(db) and not replace:
        raise UserError(f"run {run_id!r} is already in {db}", "--run-id",
                        "pick another run id, or pass --replace to overwrite it (its signals "
                        "are deleted too)")


def _write_run(workspace: Path, run_id: str, answers: dict[str, _Answer], replace: bool,
               summary: ImportSummary) -> None:
    """The run's rows in one transaction. With ``replace`` the run's signals go first (if
    that fails nothing is changed: stale diagnoses must never describe new answers), then its
    old rows."""
    if replace:
        _delete_signals(workspace / SIGNALS_DB, run_id, summary)
    db = workspace / HARNESS_DB
    db.parent.mkdir(parents=True, exist_ok=True)
    now = utc_now()
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("CREATE TABLE IF NOT EXISTS predictions (run_id TEXT, question_id TEXT, "
                         "prediction TEXT, raw_response TEXT, stop_reason TEXT, attempt INTEGER, "
                         "created_at TEXT, session_id TEXT)")
            conn.execute("CREATE TABLE IF NOT EXISTS traces (run_id TEXT, question_id TEXT, "
                         "step INTEGER, kind TEXT, content TEXT)")
            replaced = conn.execute("DELETE FROM predictions WHERE run_id = ?",
                                    (run_id,)).rowcount if replace else 0
            conn.execute("DELETE FROM traces WHERE run_id = ?", (run_id,))
            conn.executemany("INSERT INTO predictions VALUES (?, ?, ?, ?, ?, 0, ?, NULL)",
                             [(run_id, qid, a.prediction, a.response, a.stop_reason, now)
                              for qid, a in sorted(answers.items())])
    except sqlite3.Error as exc:
        raise UserError(f"could not write run {run_id!r}: {exc}", str(db),
                        "close other programs using the harness db and import again") from None
    finally:
        conn.close()
    summary.answered = len(answers)
    if replace and replaced:
        summary.notes.append(f"replaced {replaced} earlier answers of {run_id}")


def _delete_signals(signals: Path, run_id: str, summary: ImportSummary) -> None:
    if not signals.is_file():
        return
    conn = sqlite3.connect(signals, timeout=5)
    try:
        with conn:
            gone = conn.execute("DELETE FROM signals WHERE baseline_run_id = ?",
                                (run_id,)).rowcount
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise UserError(f"could not delete the signals of run {run_id!r}: {exc}",
                            str(signals), "stop the run using the signal store, then import "
                                          "again (nothing was changed)") from None
        gone = 0
    finally:
        conn.close()
    summary.notes.append(f"deleted {gone} signal row(s) of {run_id}")


def _write_config(path: Path, benchmark: Benchmark, run_id: str,
                  answers: dict[str, _Answer]) -> None:
    """A config that runs as written: answer_only rules judge, no floors, test = 1/3 of the
    videos, epsilon wide enough for the test pool's granularity, the power check at 80 % of
    the wrong answers validation holds on average."""
    n_videos = len(benchmark.videos)
    n_trainval = max(1, min(n_videos - 1, round(2 * n_videos / 3)))
    per_video = len(benchmark.questions) / max(n_videos, 1)
    test_questions = per_video * (n_videos - n_trainval)
    epsilon = max(0.02, math.ceil(100 * 1.5 * per_video / max(test_questions, 1)) / 100)
    wrong = sum(1 for q in benchmark.questions
                if _letter_of(answers.get(q.question_id)) != q.answer)
    val_ratio = 0.3
    n_val = int(val_ratio * n_trainval + 0.5)
    val_wrong_min = int(0.8 * wrong * n_val / max(n_videos, 1))
    doc = {
        "video_split": {"baseline_run_id": run_id, "n_trainval": n_trainval, "epsilon": epsilon,
                        "report_floor": 30, "val_wrong_min": val_wrong_min,
                        "val_ratio": val_ratio, "seed": 7, "floor_k": {}},
        "diag": {"prompt_version": "v1", "model": "rules-v1", "judge": "rules",
                 "context": "answer_only", "reference_runs": []},
        "paths": {"questions_dir": "questions", "harness_db": HARNESS_DB,
                  "signals_db": SIGNALS_DB, "out_dir": "splits"},
        "evaluation": {"candidates": [], "control_run": None},
    }
    _write_yaml(path, doc)


def _letter_of(answer: _Answer | None) -> str:
    return extract_letter(answer.response, answer.prediction) if answer else ""


_HEADER = ("# written by 'split-assets import'; README \"Importing published results\" and "
           "\"Configuration\"\n# document every key. Later imports update diag.reference_runs "
           "and the evaluation runs.\n")


def _write_yaml(path: Path, doc: dict[str, Any]) -> None:
    atomic_write_bytes(path, (_HEADER + yaml.safe_dump(doc, sort_keys=False,
                                                        allow_unicode=True)).encode("utf-8"))


def _register(config: Path, run_id: str, role: str, summary: ImportSummary) -> None:
    """Add the run to the config: a reference run, a candidate, or the control run."""
    doc = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    baseline = (doc.get("video_split") or {}).get("baseline_run_id")
    if run_id == baseline:
        summary.notes.append(f"{run_id} is the baseline of {config.name}: config unchanged")
        return
    if role == "reference":
        runs = doc.setdefault("diag", {}).setdefault("reference_runs", []) or []
        if run_id in runs:
            return
        doc["diag"]["reference_runs"] = [*runs, run_id]
        summary.notes.append(f"added {run_id} to diag.reference_runs in {config}")
    elif role == "candidate":
        evaluation = doc.setdefault("evaluation", {}) or {}
        runs = evaluation.get("candidates") or []
        if run_id in runs:
            return
        evaluation["candidates"] = [*runs, run_id]
        doc["evaluation"] = evaluation
        summary.notes.append(f"added {run_id} to evaluation.candidates in {config}")
    else:
        evaluation = doc.setdefault("evaluation", {}) or {}
        evaluation["control_run"] = run_id
        doc["evaluation"] = evaluation
        summary.notes.append(f"set evaluation.control_run: {run_id} in {config}")
    _write_yaml(config, doc)
