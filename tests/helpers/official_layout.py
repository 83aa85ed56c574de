"""Small official-layout results files, made up by the tests (never the real annotation).

``results(n_videos, run, seed)`` gives a JSON list of videos with ``video_id``, ``duration``,
``domain``, ``sub_category`` and ``questions`` (``question_id``, ``task_type``, ``question``,
``options``, ``answer``, ``response``). Every run of the same ``seed`` answers the same
questions; each question has a fixed hardness, so runs agree on the hard ones (persistent
defects) and differ by chance on the rest (lapses). ``answers(...)`` gives a run's answers only,
for prediction JSONL files and for simulated re-runs and candidates.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

TASKS = ["Object Reasoning", "Object Recognition", "Information Synopsis", "Action Recognition",
         "Action Reasoning", "Counting Problem", "Attribute Perception", "Temporal Reasoning",
         "OCR Problems", "Spatial Reasoning", "Temporal Perception", "Spatial Perception"]
DURATIONS = ["short", "medium", "long"]
DOMAINS = ["Knowledge", "Film & Television", "Sports Competition", "Artistic Performance",
           "Life Record", "Multilingual"]
LETTERS = "ABCD"


def _questions(n_videos: int, seed: int) -> list[dict]:
    rng = random.Random(f"questions:{seed}")
    videos = []
    for v in range(n_videos):
        domain = DOMAINS[rng.randrange(len(DOMAINS))]
        video = {"video_id": f"{v + 1:03d}", "duration": DURATIONS[v % 3], "domain": domain,
                 "sub_category": f"{domain} {rng.randrange(5)}", "questions": []}
        for k in range(3):
            answer = LETTERS[rng.randrange(4)]
            video["questions"].append({
                "question_id": f"{v + 1:03d}-{k + 1}", "task_type": rng.choice(TASKS),
                "question": f"Made-up question {k + 1} about video {v + 1}?",
                "options": [f"{c}. option {c.lower()}" for c in LETTERS], "answer": answer,
                # the chance that an average run answers this one right
                "_ease": min(0.97, max(0.05, rng.gauss(0.68, 0.28))),
            })
        videos.append(video)
    return videos


def answers(n_videos: int, run: str, seed: int = 1, skill: float = 0.0,
            fixes: float = 0.0, base_run: str | None = None) -> dict[str, str]:
    """question_id -> response of one run. ``skill`` shifts every question's ease; ``fixes``
    makes a run that is ``base_run`` with that share of its wrong answers corrected."""
    rng = random.Random(f"run:{seed}:{run}")
    out = {}
    base = answers(n_videos, base_run, seed) if base_run else None
    for video in _questions(n_videos, seed):
        for q in video["questions"]:
            if base is not None:
                right = base[q["question_id"]].endswith(f"{q['answer']}.")
                if not right and rng.random() < fixes:
                    right = True
            else:
                right = rng.random() < q["_ease"] + skill
            letter = q["answer"] if right else rng.choice([c for c in LETTERS if c != q["answer"]])
            out[q["question_id"]] = f"The best answer is {letter}."
    return out


def results(n_videos: int, run: str, seed: int = 1, skill: float = 0.0) -> list[dict]:
    """The official-layout results of one run."""
    given = answers(n_videos, run, seed, skill)
    videos = _questions(n_videos, seed)
    for video in videos:
        for q in video["questions"]:
            del q["_ease"]
            q["response"] = given[q["question_id"]]
    return videos


def write_results(path: Path, n_videos: int, run: str, seed: int = 1,
                  skill: float = 0.0) -> Path:
    path.write_text(json.dumps(results(n_videos, run, seed, skill)), encoding="utf-8")
    return path


def write_predictions(path: Path, given: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"question_id": q, "response": r}) + "\n"
                            for q, r in sorted(given.items())), encoding="utf-8")
    return path
