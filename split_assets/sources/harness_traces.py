"""The harness db's traces (its ``traces`` table): which questions have one, each trace read
as ``TraceStep``s, and their digests (an input of the manifest and the digest cache)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from split_assets.errors import InputError
from split_assets.lib.canonical import digest_of_list
from split_assets.sources.harness_db import TRACE_COLUMNS, TRACE_KINDS, open_readonly, require_table
from split_assets.sources.trace_steps import TraceStep, opened_nodes


def trace_digest(trace: Sequence[TraceStep]) -> str:
    """Digest of one trace's steps (their parsed content: JSON formatting does not count)."""
    return digest_of_list([s.step, s.kind, s.content] for s in trace)


def trace_digests(db: Path, run_id: str, questions: Iterable[tuple[str, str]],
                  tree_nodes: Callable[[str], Iterable[str]], open_tool: str,
                  chunk: int = 2000) -> dict[str, str]:
    """The digest of each trace of ``questions`` ((question id, video id) pairs), read video by
    video (``tree_nodes`` is called once per video, in order; a chunk of traces is in memory
    at a time). Each trace is read as the judges read it: a node it opens that its video's
    tree lacks is refused. A question without a trace counts as an empty one (so a trace
    deleted after a freeze shows)."""
    by_video = sorted({(v, q) for q, v in questions})
    out: dict[str, str] = {}
    nodes: Iterable[str] = ()
    current = None
    for start in range(0, len(by_video), chunk):
        part = by_video[start:start + chunk]
        found = load_traces(db, run_id, [q for _, q in part])
        for video, qid in part:
            if video != current:
                current, nodes = video, frozenset(tree_nodes(video))
            trace = found.get(qid, [])
            opened_nodes(trace, open_tool, nodes, qid, video)
            out[qid] = trace_digest(trace)
    return out


def traced_question_ids(db: Path, run_id: str) -> set[str]:
    """The questions of a run that have a trace (nothing else is read: diagnosis loads each
    trace with its leased batch, but a missing one must fail before anything is paid)."""
    with open_readonly(db) as conn:
        require_table(conn, "traces", TRACE_COLUMNS, db)
        return {r[0] for r in conn.execute("SELECT DISTINCT question_id FROM traces WHERE "
                                           "run_id = ?", (run_id,))}


def load_traces(db: Path, run_id: str, question_ids: Iterable[str]) -> dict[str, list[TraceStep]]:
    """The trace of each asked question (questions without one are absent from the result)."""
    wanted = sorted(set(question_ids))
    traces: dict[str, list[tuple[int, str, str, Any]]] = {}
    with open_readonly(db) as conn:
        require_table(conn, "traces", TRACE_COLUMNS, db)
        # only the asked questions' rows are read and parsed (a temp table lives in memory,
        # so this works on the read-only connection)
        conn.execute("CREATE TEMP TABLE wanted (question_id TEXT PRIMARY KEY)")
        conn.executemany("INSERT INTO wanted VALUES (?)", ((q,) for q in wanted))
        rows = conn.execute("SELECT t.question_id, t.step, t.kind, t.content FROM traces t "
                            "JOIN wanted w ON w.question_id = t.question_id WHERE t.run_id = ?",
                            (run_id,)).fetchall()
    for qid, step, kind, content in rows:
        if kind not in TRACE_KINDS:
            raise InputError(f"trace step {step} of {qid!r} has unknown kind {kind!r}",
                             f"harness db traces, run {run_id!r}",
                             f"kind must be one of {', '.join(TRACE_KINDS)}")
        try:
            parsed = orjson.loads(content) if isinstance(content, str) else content
        except json.JSONDecodeError:
            raise InputError(f"trace step {step} of {qid!r} has content that is not JSON",
                             f"harness db traces, run {run_id!r}",
                             "store content as JSON") from None
        text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
        try:
            step_no = int(step)
        except (TypeError, ValueError):
            raise InputError(f"trace step {step!r} of {qid!r} is not an integer",
                             f"harness db traces, run {run_id!r}",
                             "store step as an integer (0, 1, ...)") from None
        traces.setdefault(qid, []).append((step_no, str(kind), text, parsed))
    out: dict[str, list[TraceStep]] = {}
    for qid, steps in traces.items():  # row order in the db never matters
        steps.sort(key=lambda s: s[:3])
        out[qid] = [TraceStep(step, kind, parsed) for step, kind, _, parsed in steps]
    return out
