"""Where an imported run came from (issue 46), as read at import and stored with the run in the
workspace's harness db (table ``run_provenance``, outside ``video_split``: no split id moves):
the harness and its version where the file says so, the model and its arguments, the task,
the date, and the harness's own score. For lmms-eval these come from the ``<date>_results.json``
it writes beside the samples; for other files, what the file's name and time say. The split
card shows the baseline's and each claimed candidate's."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

TABLE = "run_provenance"
HARNESS = {"lmms-eval": "lmms-eval", "vlmevalkit": "VLMEvalKit", "videomme": "Video-MME "
           "results file", "predictions": "predictions JSONL"}
# an argument whose name says it holds a secret (api_key, openai-api-key, hf_auth, access_key,
# token, password, ...), and the user info of a URL
SECRET_ARG = re.compile(r"((?:^|,)\s*[^=,]*(?:key|token|secret|pass|auth|credential)[^=,]*=)"
                        r"[^,]*", re.IGNORECASE)
URL_USER = re.compile(r"(://)[^/@\s,]+@")


def provenance_of(kind: str, files: list[Path], task: str | None) -> dict[str, Any]:
    """What the imported files say about the run (missing fields are left out)."""
    first = files[0]
    out: dict[str, Any] = {"harness": HARNESS.get(kind, kind),
                           "files": [f.name for f in files]}
    with contextlib.suppress(OSError):
        out["date"] = _iso(first.stat().st_mtime)
    if kind == "lmms-eval":
        out.update(_lmms_results(first, task))
    return out


def _lmms_results(samples: Path, task: str | None) -> dict[str, Any]:
    """The ``<date>_results.json`` beside lmms-eval's samples file: model, its arguments
    (secrets masked), version, date and the task's scores."""
    from split_assets.importing.videomme_harnesses import task_of

    task = task or task_of(samples)
    out: dict[str, Any] = {"task": task} if task else {}
    results = samples.with_name(samples.name.split("_samples_")[0] + "_results.json")
    try:
        doc = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return out
    if not isinstance(doc, dict):
        return out
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    out["results_file"] = results.name
    for key, value in (("model", config.get("model") or doc.get("model_name")),
                       ("model_args", config.get("model_args")),
                       ("harness_version", doc.get("lmms_eval_version")),
                       ("git_hash", doc.get("git_hash"))):
        if isinstance(value, str) and value:
            out[key] = _masked(value) if key == "model_args" else value
    if isinstance(doc.get("date"), int | float):
        out["date"] = _iso(doc["date"])
    scores = (doc.get("results") or {}).get(task) if task else None
    if isinstance(scores, dict):
        out["score"] = {k.split(",")[0]: v for k, v in sorted(scores.items())
                        if isinstance(v, int | float) and "stderr" not in k}
    return out


def _masked(args: str) -> str:
    """lmms-eval's ``model_args`` with every secret masked."""
    return URL_USER.sub(r"\1[masked]@", SECRET_ARG.sub(r"\1[masked]", args))


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def store_provenance(db: Path, run_id: str, provenance: dict[str, Any]) -> None:
    """Keep ``provenance`` with the run (replacing an earlier import's)."""
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (run_id TEXT PRIMARY KEY, "
                     "provenance TEXT NOT NULL)")
        conn.execute(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?)",
                     (run_id, json.dumps(provenance, sort_keys=True)))
    conn.close()


def read_provenance(db: Path) -> dict[str, dict[str, Any]]:
    """Every run's provenance in the harness db ``db`` (none for runs imported before it was
    recorded, or written by the agent itself)."""
    if not db.is_file():
        return {}
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(f"SELECT run_id, provenance FROM {TABLE}").fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    return {run: json.loads(text) for run, text in rows}
