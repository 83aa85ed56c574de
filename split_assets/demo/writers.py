"""Writers of the demo workspace: the benchmark file, caption trees, skills, the harness db,
the planted labels and ``video_split.yaml`` (and the clean-up of a previous workspace)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from split_assets.demo.figures import REFERENCE_N_VIDEOS, SKILLS_VERSION
from split_assets.demo.model import Node, Question, Video, secs
from split_assets.demo.sampling import round_half_up
from split_assets.demo.skills import SKILLS
from split_assets.demo.traces import error_reply
from split_assets.importing.provenance import store_provenance
from split_assets.sources.config_file import CONFIG_FILE, double_quoted, new_document, save_document
from split_assets.sources.harness_db import create_tables, insert_predictions, insert_traces

#: Paths (relative to the workspace directory) that :func:`split_assets.demo.build_workspace`
#: writes.
GENERATED_PATHS: tuple[str, ...] = (
    "questions",
    "store",
    "harness.db",
    "planted_labels.json",
    "population_truth.json",  # demo --references (demo/generated_references.py)
    CONFIG_FILE,
)


def prepare_directory(directory: Path) -> None:
    """Make ``directory`` an empty folder, or delete the generated paths of a previous demo
    workspace in it (recognised by its config); refuse any other non-empty folder."""
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        if not (directory / CONFIG_FILE).is_file():
            raise ValueError(
                f"refusing to generate a demo workspace in {directory}: the directory is not "
                "empty and holds no previously generated workspace (no video_split.yaml)"
            )
        for rel in GENERATED_PATHS:
            path = directory / rel
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    directory.mkdir(parents=True, exist_ok=True)


def _write_json(path: Path, payload: Any, indent: int | None = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=indent, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_questions(directory: Path, videos: list[Video]) -> None:
    payload = []
    for video in videos:
        payload.append(
            {
                "video_id": video.video_id,
                "duration": video.duration,
                "domain": video.domain,
                "sub_category": video.sub_category,
                "videoID": video.youtube_id,
                "url": f"https://www.youtube.com/watch?v={video.youtube_id}",
                "questions": [
                    {
                        "question_id": q.question_id,
                        "task_type": q.task_type,
                        "question": q.text,
                        "options": q.options,
                        "answer": q.answer,
                        "evidence_spans": [[secs(s), secs(e)] for s, e in q.spans],
                    }
                    for q in video.questions
                ],
            }
        )
    _write_json(directory / "questions" / "videomme.json", payload)


def _node_json(node: Node) -> dict[str, Any]:
    return {
        "id": node.node_id,
        "start_s": secs(node.start),
        "end_s": secs(node.end),
        "caption": node.caption,
        "children": [_node_json(c) for c in node.children],
    }


def write_trees(directory: Path, videos: list[Video]) -> None:
    for video in videos:
        assert video.root is not None
        _write_json(
            directory / "store" / "videos" / video.video_id / "tree.json",
            {
                "video_id": video.video_id,
                "duration_s": secs(video.duration_t),
                "root": _node_json(video.root),
            },
            indent=None,  # one line per tree: the indenting encoder is ~10x slower
        )


def write_skills(directory: Path) -> None:
    skills_dir = directory / "store" / "skills" / SKILLS_VERSION
    skills_dir.mkdir(parents=True, exist_ok=True)
    for skill in SKILLS:
        lines = ["---", f"name: {skill.name}", f"applies_to: [{', '.join(skill.applies_to)}]"]
        if skill.required_tool:
            lines.append(f"required_tool: {skill.required_tool}")
        lines += ["---", f"# {skill.title}", "", skill.body.rstrip("\n"), ""]
        (skills_dir / f"{skill.name}.md").write_text("\n".join(lines), encoding="utf-8")

def write_harness_db(
    directory: Path, rng: np.random.Generator, questions: list[Question], run_id: str
) -> None:
    """The run's predictions and traces, in shuffled row order (the db's order never
    matters to the pipeline)."""
    predictions, traces = _harness_rows(rng, questions, run_id)
    predictions = [predictions[int(i)] for i in rng.permutation(len(predictions))]
    traces = [traces[int(i)] for i in rng.permutation(len(traces))]

    path = directory / "harness.db"
    if path.exists():
        path.unlink()
    conn = sqlite3.connect(path)
    try:
        create_tables(conn)
        insert_predictions(conn, predictions)
        insert_traces(conn, traces)
        conn.commit()
    finally:
        conn.close()
    store_provenance(path, run_id, DEMO_PROVENANCE)  # what the split card names it


DEMO_PROVENANCE = {"harness": "split-assets demo (generated)",
                   "model": "generated baseline agent", "date": "2026-01-15T09:00:00Z"}


def _harness_rows(
    rng: np.random.Generator, questions: list[Question], run_id: str
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Prediction rows (a failed first attempt before a retried answer) and trace rows, in
    question order, with increasing timestamps."""
    clock = datetime(2026, 1, 15, 9, 0, 0, tzinfo=UTC)

    def stamp(t: datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")

    predictions: list[tuple[Any, ...]] = []
    traces: list[tuple[Any, ...]] = []
    for q in questions:
        clock += timedelta(seconds=int(rng.integers(4, 40)))
        session = f"sess-{int(rng.integers(0, 2**32)):08x}"
        attempt = 1
        if q.retried:
            first_reply = error_reply(rng)
            predictions.append(
                (run_id, q.question_id, "", first_reply, "error", 1, stamp(clock), session)
            )
            clock += timedelta(seconds=int(rng.integers(20, 90)))
            session = f"sess-{int(rng.integers(0, 2**32)):08x}"
            attempt = 2
        predictions.append(
            (
                run_id,
                q.question_id,
                q.prediction,
                q.raw_response,
                q.stop_reason,
                attempt,
                stamp(clock),
                session,
            )
        )
        for step, (kind, content) in enumerate(q.trace):
            traces.append(
                (run_id, q.question_id, step, kind, json.dumps(content, ensure_ascii=False))
            )
    return predictions, traces


def write_planted_labels(directory: Path, questions: list[Question]) -> None:
    labels = {
        q.question_id: {"tier": q.tier, "mechanism": q.mechanism}
        for q in sorted(questions, key=lambda x: x.question_id)
        if not q.correct
    }
    _write_json(directory / "planted_labels.json", labels)


def write_config(
    directory: Path, n_videos: int, seed: int, run_id: str, floor_k: dict[str, int]
) -> Path:
    """``video_split.yaml`` of the workspace, written by the one config writer."""
    scale = n_videos / REFERENCE_N_VIDEOS
    data = {
        "video_split": {
            "baseline_run_id": double_quoted(run_id),
            "n_trainval": round_half_up(2 / 3 * n_videos),
            "epsilon": 0.02,
            "report_floor": max(3, round_half_up(30 * scale)),
            "val_wrong_min": round_half_up(150 * scale),
            "val_ratio": 0.3,
            "seed": 7,
            "floor_k": dict(sorted(floor_k.items())),
        },
        "diag": {
            "prompt_version": "v1",
            "model": "rules-v1",
            "judge": "rules",
            "context": "full",
            "skills_version": SKILLS_VERSION,
        },
        "paths": {
            "questions_dir": "questions",
            "harness_db": "harness.db",
            "store_dir": "store",
            "signals_db": "signals.db",
            "out_dir": "splits",
        },
    }
    header = "\n".join((
        f"Generated by split_assets.demo.build_workspace(n_videos={n_videos}, seed={seed}).",
        "Synthetic Video-MME shaped sample workspace: every text is template generated.",
        "Paths are relative to the folder of this file.",
    ))
    path = directory / CONFIG_FILE
    save_document(path, new_document(data, header))
    return path
