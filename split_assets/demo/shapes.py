"""Benchmarks shaped like LongVideoBench (val) and MVBench, from public aggregates only.

Every text is a template; only counts and accuracies are taken from public figures, and each
constant names its source (docs/research/issue26_vlmevalkit_and_marginals.md gives the files
and commits):

* LongVideoBench val: 1,337 questions on 753 videos (the leaderboard's "Val Total (1337)",
  longvideobench.github.io @ 15c8de9d; the HF LongVideoBench-Meta card). The 17 question
  categories and the 4 duration groups (15, 60, 600, 3600 s: paper Table 7) with their val
  counts per category x group, questions and videos per group and options per question
  (5: 983, 4: 353, 3: 1) counted from a public copy of lvb_val.json (VideoChat-Flash-forked @
  ab330e7c); accuracy per category and per duration group: GPT-4o (0513), paper Table 7 (test
  split; val total 66.7).
* MVBench: 20 tasks x 200 questions, options per task (MVBench json/*.json, same copy);
  accuracy per task: VideoChat2 (Vicuna-7B), Ask-Anything video_chat2/asset/leaderboard.png
  @ 64bb3f27 (mean 51.1). No difficulty; videos per question are not published: one each.

``shaped_rows`` gives the benchmark's own release rows (lvb_val.json's keys; MVBench's per-task
json rows with the task added) and ``replies`` a run's raw replies, in the formats models use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

LVB_CATEGORY_BY_GROUP = {  # val questions per category in duration groups 15 / 60 / 600 / 3600
    "S2E": (14, 11, 26, 42), "S2O": (8, 9, 22, 33), "S2A": (12, 14, 32, 30),
    "E2O": (5, 12, 36, 12), "O2E": (19, 11, 33, 24), "T2E": (12, 8, 12, 33),
    "T2O": (18, 8, 32, 18), "T2A": (11, 12, 14, 42), "E3E": (12, 9, 22, 51),
    "O3O": (9, 13, 14, 30), "SSS": (9, 11, 35, 42), "SOS": (8, 9, 22, 42),
    "SAA": (11, 3, 22, 36), "T3E": (7, 13, 20, 33), "T3O": (8, 9, 18, 39),
    "TOS": (14, 10, 28, 21), "TAA": (12, 10, 24, 36),
}
LVB_GROUPS = (15, 60, 600, 3600)
LVB_VIDEOS_BY_GROUP = (186, 172, 207, 188)
LVB_SECONDS = ((8.0, 15.8), (15.0, 60.9), (181.3, 600.1), (902.6, 3574.0))
LVB_OPTIONS = {5: 983, 4: 353, 3: 1}
LVB_ACCURACY = {  # GPT-4o (0513), paper Table 7
    "S2E": 0.768, "S2O": 0.698, "S2A": 0.709, "E2O": 0.673, "O2E": 0.728, "T2E": 0.672,
    "T2O": 0.653, "T2A": 0.772, "E3E": 0.626, "O3O": 0.613, "SSS": 0.443, "SOS": 0.756,
    "SAA": 0.626, "T3E": 0.640, "T3O": 0.664, "TOS": 0.621, "TAA": 0.664,
}
LVB_GROUP_ACCURACY = (0.716, 0.768, 0.667, 0.616)
LVB_OVERALL = 0.667

MVBENCH_TASKS = {  # task: (options per question, VideoChat2 accuracy)
    "action_sequence": (4, 0.660), "action_prediction": (4, 0.475),
    "action_antonym": (3, 0.835), "fine_grained_action": (4, 0.495),
    "unexpected_action": (4, 0.600), "object_existence": (3, 0.580),
    "object_interaction": (4, 0.715), "object_shuffle": (3, 0.425),
    "moving_direction": (4, 0.230), "action_localization": (4, 0.230),
    "scene_transition": (4, 0.885), "action_count": (3, 0.390), "moving_count": (4, 0.420),
    "moving_attribute": (3, 0.440), "state_change": (3, 0.490),
    "fine_grained_pose": (4, 0.585), "character_order": (3, 0.365),
    "egocentric_navigation": (4, 0.350), "episodic_reasoning": (5, 0.405),
    "counterfactual_inference": (4, 0.655),
}
MVBENCH_PER_TASK = 200
_WORDS = ("red cup", "blue door", "the dog", "a bicycle", "the kettle", "a green ball",
          "the window", "a paper bag", "the stairs", "a laptop", "the river", "a hat")


@dataclass(frozen=True)
class Shaped:
    """A shaped benchmark: its release rows and each row's true probability of a right answer."""

    name: str
    rows: list[dict[str, Any]]
    p_right: np.ndarray
    video_of: list[str]


def _options(rng: np.random.Generator, k: int) -> list[str]:
    return [str(w) for w in rng.choice(_WORDS, size=k, replace=False)]


def longvideobench(seed: int = 7, scale: float = 1.0) -> Shaped:
    """LongVideoBench's val set (``scale`` < 1: fewer videos, same shares)."""
    rng = np.random.default_rng(seed)
    rows, p = [], []
    options = rng.permutation(np.repeat(list(LVB_OPTIONS), list(LVB_OPTIONS.values())))
    for g, group in enumerate(LVB_GROUPS):
        cats = [c for c, n in LVB_CATEGORY_BY_GROUP.items()
                for _ in range(max(1, round(n[g] * scale)))]
        cats = [str(c) for c in rng.permutation(cats)]
        n_videos = max(1, round(LVB_VIDEOS_BY_GROUP[g] * scale))
        video_of = np.sort(np.concatenate([np.arange(n_videos),
                                           rng.integers(0, n_videos, len(cats) - n_videos)])
                           if len(cats) > n_videos else np.arange(len(cats)))
        lo, hi = LVB_SECONDS[g]
        seconds = rng.uniform(lo, hi, n_videos).round(1)
        for i, (cat, v) in enumerate(zip(cats, video_of, strict=True)):
            vid = f"lvb{group:04d}v{int(v):03d}"
            k = int(options[len(rows) % len(options)])
            rows.append({"video_id": vid, "id": f"{vid}_{i}", "question": f"In the video, "
                         f"which object matters for {cat} at step {i}?",
                         "candidates": _options(rng, k), "correct_choice": int(rng.integers(k)),
                         "question_category": cat, "duration_group": group,
                         "duration": float(seconds[v]), "level": "L1-Perception"
                         if cat[1] == "2" else "L2-Relation", "topic_category": "KA"})
            p.append(LVB_ACCURACY[cat] + LVB_GROUP_ACCURACY[g] - LVB_OVERALL)
    return Shaped("longvideobench", rows, np.array(p), [r["video_id"] for r in rows])


def mvbench(seed: int = 7, per_task: int = MVBENCH_PER_TASK) -> Shaped:
    """MVBench: per task, its json file's rows (video, question, candidates, answer text)."""
    rng = np.random.default_rng(seed)
    rows, p = [], []
    for task, (k, accuracy) in MVBENCH_TASKS.items():
        for i in range(per_task):
            options = _options(rng, k)
            rows.append({"task": task, "video": f"{task}_clip_{i:04d}.mp4",
                         "question": f"What happens to {options[0]} in clip {i}?",
                         "candidates": options, "answer": options[int(rng.integers(k))]})
            p.append(accuracy)
    return Shaped("mvbench", rows, np.array(p), [r["video"] for r in rows])


def answer_index(shape: Shaped, row: dict[str, Any]) -> int:
    if shape.name == "mvbench":
        return row["candidates"].index(row["answer"])
    return int(row["correct_choice"])


def replies(shape: Shaped, run: str, seed: int, skill: float = 0.0) -> list[str]:
    """A run's raw replies: right with the row's probability (+ ``skill``, a per-video
    effect so wrong answers cluster), in the formats models reply in; about 1 % hold no
    letter at all."""
    rng = np.random.default_rng([seed, sum(run.encode())])
    videos = sorted(set(shape.video_of))
    effect = dict(zip(videos, rng.normal(0.0, 0.12, len(videos)), strict=True))
    out = []
    for row, p, video in zip(shape.rows, shape.p_right, shape.video_of, strict=True):
        k, truth = len(row["candidates"]), answer_index(shape, row)
        right = rng.random() < np.clip(p + skill + effect[video], 0.02, 0.98)
        pick = truth if right else int((truth + rng.integers(1, k)) % k)
        letter = "ABCDE"[pick]
        style = rng.random()
        if style < 0.01:
            out.append("I cannot tell from these frames.")
        elif style < 0.55:
            out.append(letter)
        elif style < 0.75:
            out.append(f"({letter}) {row['candidates'][pick]}")
        elif style < 0.9:
            out.append(f"{letter}. {row['candidates'][pick]}")
        else:
            out.append(f"The answer is {letter}.")
    return out


def build_shaped_workspace(directory: Any, name: str, seed: int = 7,
                           references: int = 2) -> Any:
    """A workspace of the shaped benchmark ``name`` built through the importers: the
    baseline (which writes questions/<name>.json and video_split.yaml with the benchmark's
    letter rule and difficulty field) and ``references`` reference runs."""
    from pathlib import Path

    from split_assets.demo.writers import prepare_directory
    from split_assets.importing.profiled_harnesses import HarnessLines, finish
    from split_assets.importing.profiles import PROFILES
    from split_assets.importing.workspace_setup import Answer

    profile = PROFILES[name]
    shape = longvideobench(seed) if name == "longvideobench" else mvbench(seed)
    directory = Path(directory)
    prepare_directory(directory)
    for stale in ("harness.db", "signals.db"):  # a previous shaped workspace's runs
        (directory / stale).unlink(missing_ok=True)
    place: dict[str, int] = {}
    questions = []
    for row in shape.rows:
        prefix = row.get("task", name)
        place[prefix] = place.get(prefix, -1) + 1
        questions.append(profile.fields.question_of(row, place[prefix], prefix, "shaped row"))
    summary = None
    for r, run in enumerate(["baseline", *(f"reference-{i + 1}" for i in range(references))]):
        lines = HarnessLines()
        for i, (q, text) in enumerate(zip(questions, replies(shape, run, seed, 0.02 * r),
                                          strict=True)):
            lines.add(q, Answer(None, text, None), None, f"row {i}")
        summary = finish(profile, lines, directory / f"{name}.json", run, directory, "demo",
                         profile.letter_rule, replace=False, partial=False,
                         role=None if r == 0 else "reference")
    return summary
