"""A reference must never be a candidate's answers (issue 45): a reference decides which wrong
answers are defects (T2), so a run the loop produced -- listed as a candidate or the control
run, looked at on test, or the very answers of one of those under another id -- would launder
its own answers into the labels it is then judged by. ``laundering_reason`` says why a run may
not become a reference (None: nothing says so); the import's gate refuses it whatever the
flags."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from split_assets.config_keys import config_key
from split_assets.importing.workspace_setup import Answer
from split_assets.lib.canonical import digest_of
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.harness_db import (
    canonical_predictions,
    create_tables,
    insert_predictions,
    run_ids,
)


@contextmanager
def answers_db(run_id: str, answers: dict[str, Answer]) -> Iterator[Path]:
    """A temporary harness db holding the run's rows as an import writes them: read by the
    same reader, an answer is scored exactly as it will be once imported."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "harness.db"
        conn = sqlite3.connect(db)
        with conn:
            create_tables(conn)
            insert_predictions(conn, [(run_id, q, a.prediction, a.response, a.stop_reason, 0,
                                       "", None) for q, a in sorted(answers.items())])
        conn.close()
        yield db


def letters_of(run_id: str, answers: dict[str, Answer], benchmark: Benchmark,
               infra: list[str]) -> dict[str, tuple[str, bool]]:
    """The run's (letter, correct) per answered question, read exactly as once imported."""
    with answers_db(run_id, answers) as db:
        return _answered(db, run_id, benchmark, infra)


def _answered(db: Path, run_id: str, benchmark: Benchmark,
              infra: list[str]) -> dict[str, tuple[str, bool]]:
    return {p.question_id: (p.letter, p.correct)
            for p in canonical_predictions(db, run_id, benchmark, infra, "infra")
            if not p.missing}


def laundering_reason(run_id: str, answers: dict[str, Answer], benchmark: Benchmark,
                      infra: list[str], looked: list[Any], candidates: list[str],
                      control: str | None, db: Path) -> str | None:
    """Why run ``run_id`` may never become a reference: it is listed as a candidate or the
    control run, it (or the same answers under another id) was looked at on test, or its
    answers are those of a candidate or the control run in harness db ``db``."""
    if run_id in candidates:
        return f"run {run_id!r} is a candidate ({config_key('candidates')})"
    if run_id == control:
        return f"run {run_id!r} is the control run ({config_key('control_run')})"
    if any(x.run_id == run_id for x in looked):
        return f"run {run_id!r} was itself a look at test"
    mine = letters_of(run_id, answers, benchmark, infra)
    for x in looked:
        ids = [q for q in sorted(x.question_ids) if q in mine]
        if ids and digest_of([[q, mine[q][1]] for q in ids]) == x.answers_digest:
            return f"its answers are those of {x.run_id!r}, which was a look at test"
    present = set(run_ids(db)) if db.is_file() else set()
    for other in [*candidates, *([control] if control else [])]:
        theirs = _answered(db, other, benchmark, infra) if other in present else {}
        if mine and theirs and all(theirs.get(q, ("", False))[0] == letter
                                   for q, (letter, _) in mine.items()):
            return f"its answers are those of {other!r}, a candidate or the control run"
    return None
