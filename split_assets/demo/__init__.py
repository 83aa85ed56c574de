"""Seeded generator of a synthetic, Video-MME shaped sample workspace.

The real Video-MME annotation may not be redistributed, so every piece of text written here
(questions, options, captions, model replies, traces) comes from templates.  Only aggregate
figures of the real benchmark and of a published baseline run are embedded as constants, and the
generator reproduces them (exactly where possible, approximately otherwise) for ``n_videos=900``
and scales them proportionally for other sizes.

The workspace contains:

* ``questions/videomme.json``: the official Video-MME layout (a list of videos with questions),
  extended with ``evidence_spans``;
* ``harness.db``: SQLite ``predictions`` and ``traces`` tables of one baseline run;
* ``store/videos/<video_id>/tree.json``: a caption tree per video (root, segments, leaves);
* ``store/skills/v1/*.md``: skill documents with YAML front matter;
* ``planted_labels.json``: the planted failure tier and mechanism of every wrong answer (ground
  truth for evaluating a judge; a judge must never read it);
* ``video_split.yaml``: the configuration of the split pipeline for this workspace.

Output is byte-identical for the same ``(n_videos, seed, baseline_run_id)``: all randomness comes
from ``numpy.random.default_rng`` streams and nothing iterates over hash-ordered containers.

The stages live in submodules: ``figures`` (the embedded aggregates), ``skills``,
``vocabulary`` (word lists, reply templates), ``model``, ``sampling``, ``videos`` (layout and
caption trees), ``questions`` (one template function per task type), ``outcomes`` (wrong
answers and planted mechanisms), ``traces`` and ``writers``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_assets.demo.figures import (
    ANSWER_LETTER_COUNTS,
    BASELINE_ACCURACY,
    DISTINCT_TYPES_PER_VIDEO,
    DOMAIN_QUESTION_COUNTS,
    DURATION_ACCURACY,
    DURATION_RANGES_S,
    DURATIONS,
    INFRA_REFERENCE_COUNT,
    LETTERS,
    QUESTIONS_PER_VIDEO,
    REFERENCE_N_VIDEOS,
    RETRY_SHARE,
    SKILLS_VERSION,
    STEP_LIMIT_OPENS,
    SUB_CATEGORIES,
    T2_MISSED_EVIDENCE_SHARE,
    T2_SHARE,
    T2_STEP_LIMIT_SHARE,
    TASK_TYPE_ACCURACY,
    TASK_TYPE_COUNTS,
    TASK_TYPES,
    VIDEOS_BY_WRONG_COUNT,
)
from split_assets.demo.model import Question, Video
from split_assets.demo.outcomes import assign_mechanisms, assign_outcomes
from split_assets.demo.questions import build_questions
from split_assets.demo.skills import SKILLS
from split_assets.demo.traces import build_trace
from split_assets.demo.videos import build_tree, layout_videos
from split_assets.demo.writers import (
    GENERATED_PATHS,
    prepare_directory,
    write_config,
    write_harness_db,
    write_planted_labels,
    write_questions,
    write_skills,
    write_trees,
)

__all__ = [
    "ANSWER_LETTER_COUNTS",
    "BASELINE_ACCURACY",
    "DISTINCT_TYPES_PER_VIDEO",
    "DOMAIN_QUESTION_COUNTS",
    "DURATIONS",
    "DURATION_ACCURACY",
    "DURATION_RANGES_S",
    "GENERATED_PATHS",
    "INFRA_REFERENCE_COUNT",
    "LETTERS",
    "QUESTIONS_PER_VIDEO",
    "REFERENCE_N_VIDEOS",
    "RETRY_SHARE",
    "SKILLS",
    "SKILLS_VERSION",
    "STEP_LIMIT_OPENS",
    "SUB_CATEGORIES",
    "T2_MISSED_EVIDENCE_SHARE",
    "T2_SHARE",
    "T2_STEP_LIMIT_SHARE",
    "TASK_TYPES",
    "TASK_TYPE_ACCURACY",
    "TASK_TYPE_COUNTS",
    "VIDEOS_BY_WRONG_COUNT",
    "WorkspaceSummary",
    "build_workspace",
]


@dataclass(frozen=True)
class WorkspaceSummary:
    """What :func:`build_workspace` generated.

    ``planted_t2_by_type`` / ``planted_t1_by_type`` count the wrong, non-INFRA answers planted as
    T2 (pipeline defect) / T1 (model lapse) per task type (every task type is a key, sorted);
    ``floor_k`` is the value written to ``video_split.floor_k``.
    """

    directory: Path
    config_path: Path
    n_videos: int
    n_questions: int
    accuracy: float
    planted_t2_by_type: dict[str, int]
    planted_t1_by_type: dict[str, int]
    n_infra: int
    floor_k: dict[str, int]


def _generate(directory: Path, n_videos: int, seed: int,
              baseline_run_id: str) -> tuple[list[Video], list[Question]]:
    """The videos and questions of the seeded workspace, written under ``directory``."""
    streams = np.random.SeedSequence([seed, 0x5EED]).spawn(7)
    rng_layout, rng_tree, rng_q, rng_outcome, rng_mech, rng_trace, rng_db = (
        np.random.default_rng(s) for s in streams
    )

    videos = layout_videos(rng_layout, n_videos)
    for video in videos:
        build_tree(rng_tree, video)
    questions = build_questions(rng_q, videos)
    assign_outcomes(rng_outcome, videos, questions)
    assign_mechanisms(rng_mech, questions, n_videos)
    for question in questions:
        question.trace = build_trace(rng_trace, question)

    write_questions(directory, videos)
    write_trees(directory, videos)
    write_skills(directory)
    write_harness_db(directory, rng_db, questions, baseline_run_id)
    write_planted_labels(directory, questions)
    return videos, questions


def build_workspace(
    directory: Path,
    n_videos: int = 900,
    seed: int = 2026,
    baseline_run_id: str = "baseline-2026-01",
) -> WorkspaceSummary:
    """Generate a synthetic Video-MME shaped workspace in ``directory``.

    ``directory`` may be missing, empty, or hold a previously generated workspace (recognised by
    its ``video_split.yaml``), whose generated paths are deleted first; any other non-empty
    directory raises ``ValueError``. The output is byte-identical for the same arguments.
    """
    if n_videos < 1:
        raise ValueError(f"n_videos must be >= 1, got {n_videos}")
    directory = Path(directory)
    prepare_directory(directory)

    videos, questions = _generate(directory, n_videos, seed, baseline_run_id)

    t2, t1 = _planted_by_type(questions)
    floor_k = {t: n // 2 for t, n in t2.items() if n >= 2}
    config_path = write_config(directory, n_videos, seed, baseline_run_id, floor_k)

    n_correct = sum(1 for q in questions if q.correct)
    return WorkspaceSummary(
        directory=directory,
        config_path=config_path,
        n_videos=n_videos,
        n_questions=len(questions),
        accuracy=n_correct / len(questions),
        planted_t2_by_type=t2,
        planted_t1_by_type=t1,
        n_infra=sum(1 for q in questions if q.mechanism.startswith("infra")),
        floor_k=floor_k,
    )


def _planted_by_type(questions: list[Question]) -> tuple[dict[str, int], dict[str, int]]:
    """Wrong answers planted as T2 and as T1, per task type (every task type a key, sorted)."""
    t2 = {t: 0 for t in sorted(TASK_TYPES)}
    t1 = {t: 0 for t in sorted(TASK_TYPES)}
    for q in questions:
        if q.tier == "T2":
            t2[q.task_type] += 1
        elif q.tier == "T1":
            t1[q.task_type] += 1
    return t2, t1


def build_shaped(directory: Path, shape: str = "videomme",
                 references: int = 0) -> tuple[Path, str]:
    """Build the sample workspace shaped like ``shape`` (videomme: :func:`build_workspace`;
    longvideobench, mvbench: demo/shapes.py); its config and a line saying what it holds.
    ``references``: generated reference runs balanced in test (demo/generated_references.py)."""
    if shape == "videomme":
        summary = build_workspace(directory)
        line = (f"sample workspace: {summary.n_videos} videos, {summary.n_questions} "
                f"questions, baseline accuracy {summary.accuracy:.3f}, {summary.n_infra} "
                f"INFRA, in {directory}")
        if references:
            from split_assets.demo.generated_references import add_references

            runs = add_references(directory, references)
            line += f"; {len(runs)} generated reference runs in video_split.balance_runs"
        return summary.config_path, line
    from split_assets.demo.shapes import build_shaped_workspace

    imported = build_shaped_workspace(directory, shape)
    return directory / "video_split.yaml", (
        f"sample workspace shaped like {shape}: {imported.questions} questions, a baseline "
        f"and 2 reference runs (answer_only judge), in {directory}")
