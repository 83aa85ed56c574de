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
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

# --------------------------------------------------------------------------------------------
# Aggregate figures of the real benchmark and of the published baseline (n_videos = 900).
# --------------------------------------------------------------------------------------------

REFERENCE_N_VIDEOS = 900
QUESTIONS_PER_VIDEO = 3
LETTERS = ("A", "B", "C", "D")

TASK_TYPE_COUNTS: dict[str, int] = {
    "Object Reasoning": 454,
    "Object Recognition": 354,
    "Information Synopsis": 323,
    "Action Recognition": 313,
    "Action Reasoning": 285,
    "Counting Problem": 268,
    "Attribute Perception": 222,
    "Temporal Reasoning": 177,
    "OCR Problems": 139,
    "Spatial Reasoning": 56,
    "Temporal Perception": 55,
    "Spatial Perception": 54,
}
TASK_TYPES: tuple[str, ...] = tuple(TASK_TYPE_COUNTS)

DURATIONS: tuple[str, ...] = ("short", "medium", "long")
DURATION_RANGES_S: dict[str, tuple[int, int]] = {
    "short": (30, 120),
    "medium": (240, 900),
    "long": (1800, 3600),
}

DOMAIN_QUESTION_COUNTS: dict[str, int] = {
    "Knowledge": 810,
    "Film & Television": 360,
    "Sports Competition": 450,
    "Artistic Performance": 360,
    "Life Record": 630,
    "Multilingual": 90,
}
SUB_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Knowledge": (
        "Astronomy",
        "Biology & Medicine",
        "Finance & Commerce",
        "Humanity & History",
        "Technology",
    ),
    "Film & Television": (
        "Animation",
        "Commercial Advertisement",
        "Documentary",
        "Movie & TV Show",
        "News Report",
    ),
    "Sports Competition": (
        "Athletics",
        "Basketball",
        "Football",
        "Racket Sports",
        "Winter Sports",
    ),
    "Artistic Performance": (
        "Acrobatics",
        "Dance",
        "Magic Show",
        "Musical Concert",
        "Stage Play",
    ),
    "Life Record": (
        "Daily Life",
        "Fashion",
        "Food & Cooking",
        "Handicraft",
        "Travel",
    ),
    "Multilingual": (
        "Chinese",
        "French",
        "German",
        "Japanese",
        "Spanish",
    ),
}

ANSWER_LETTER_COUNTS: dict[str, int] = {"A": 677, "B": 735, "C": 684, "D": 604}
#: Number of videos whose three questions cover 1, 2 or 3 distinct task types.
DISTINCT_TYPES_PER_VIDEO: dict[int, int] = {1: 22, 2: 302, 3: 576}

BASELINE_ACCURACY = 0.641
TASK_TYPE_ACCURACY: dict[str, float] = {
    "Action Reasoning": 0.523,
    "Action Recognition": 0.661,
    "Attribute Perception": 0.743,
    "Counting Problem": 0.463,
    "Information Synopsis": 0.799,
    "OCR Problems": 0.77,
    "Object Reasoning": 0.595,
    "Object Recognition": 0.686,
    "Spatial Perception": 0.648,
    "Spatial Reasoning": 0.768,
    "Temporal Perception": 0.745,
    "Temporal Reasoning": 0.503,
}
DURATION_ACCURACY: dict[str, float] = {"short": 0.748, "medium": 0.639, "long": 0.537}
#: Videos by number of wrongly answered questions (out of three) in the published run.
VIDEOS_BY_WRONG_COUNT: dict[int, int] = {0: 248, 1: 392, 2: 203, 3: 57}

#: INFRA failures (harness errors) per 900 videos.
INFRA_REFERENCE_COUNT = 8
#: Share of normal questions whose first attempt failed and was retried successfully.
RETRY_SHARE = 0.03
#: Share of wrong, non-INFRA answers planted as T2 (pipeline defects); the rest are T1 lapses.
T2_SHARE = 0.55
#: Mechanism mix inside T2 (skill non-adherence falls back to missed evidence when the task
#: type has no skill with a required tool).
T2_STEP_LIMIT_SHARE = 0.10
T2_MISSED_EVIDENCE_SHARE = 0.55
STEP_LIMIT_OPENS = 20

SKILLS_VERSION = "v1"

# --------------------------------------------------------------------------------------------
# Skills (written to store/skills/v1/*.md).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Skill:
    name: str
    applies_to: tuple[str, ...]
    required_tool: str | None
    title: str
    body: str


SKILLS: tuple[_Skill, ...] = (
    _Skill(
        name="counting",
        applies_to=("Counting Problem",),
        required_tool="count_objects",
        title="Counting objects",
        body=(
            "Captions round numbers and merge repeated objects, so never answer a counting\n"
            "question from a caption alone.\n\n"
            "1. Locate the segment the question refers to (`search_captions`, then `open_node`).\n"
            "2. Call `count_objects` on every leaf of that segment, with the object noun from the\n"
            "   question in singular or plural form exactly as the question spells it.\n"
            "3. If the question asks for a total over the video, sum the per-leaf counts but\n"
            "   do not double count an object that stays on screen across adjacent leaves.\n"
            "4. If the counts disagree with every option, re-count the leaf with the largest\n"
            "   count before choosing the closest option.\n"
        ),
    ),
    _Skill(
        name="ocr",
        applies_to=("OCR Problems",),
        required_tool="read_text",
        title="Reading on-screen text",
        body=(
            "On-screen text (signs, banners, scoreboards, subtitles) is usually missing from or\n"
            "paraphrased in captions.\n\n"
            "- Open the node where the text is shown, then call `read_text` on it; quote the\n"
            "  recognized string verbatim when comparing it with the options.\n"
            "- Options often differ by one word, a digit or an accent: compare character by\n"
            "  character, and ignore case only.\n"
            "- Text in another script is returned untranslated; match it against the options\n"
            "  as is.\n"
        ),
    ),
    _Skill(
        name="temporal",
        applies_to=("Temporal Reasoning", "Temporal Perception"),
        required_tool="search_captions",
        title="Ordering and locating events in time",
        body=(
            "Questions about *when* something happens, or what happens before or after an event,\n"
            "need the positions of the events on the timeline, not just their descriptions.\n\n"
            "1. Call `search_captions` with the event named in the question to get every matching\n"
            "   leaf with its start and end time.\n"
            "2. Open the best matching leaf and its neighbours to confirm the order of events.\n"
            "3. For 'beginning / middle / end' questions, compare the leaf midpoint with the\n"
            "   video duration in thirds.\n"
        ),
    ),
    _Skill(
        name="spatial",
        applies_to=("Spatial Perception", "Spatial Reasoning"),
        required_tool=None,
        title="Spatial relations",
        body=(
            "- Relations are given from the camera's point of view unless the question names\n"
            "  another viewpoint.\n"
            "- Open the leaf where both objects are visible at the same time; a relation read\n"
            "  from two different shots is not evidence.\n"
            "- Prefer the option that the caption states explicitly over one you infer.\n"
        ),
    ),
    _Skill(
        name="evidence_first",
        applies_to=(
            "Action Reasoning",
            "Action Recognition",
            "Attribute Perception",
            "Information Synopsis",
            "Object Reasoning",
            "Object Recognition",
        ),
        required_tool=None,
        title="Evidence first",
        body=(
            "Ground every answer in a node you have opened.\n\n"
            "1. Read the root caption and the segment captions to find where the question's\n"
            "   subject appears.\n"
            "2. Open that segment and the relevant leaf before choosing an option; do not answer\n"
            "   from the root caption unless the question asks for a summary.\n"
            "3. Eliminate options that contradict the opened captions, then pick the option best\n"
            "   supported by them. If two remain, open the neighbouring leaves.\n"
        ),
    ),
)
_REQUIRED_TOOL: dict[str, str] = {
    task_type: skill.required_tool
    for skill in SKILLS
    if skill.required_tool
    for task_type in skill.applies_to
}

# --------------------------------------------------------------------------------------------
# Vocabulary for captions and questions.
# --------------------------------------------------------------------------------------------

_DOMAIN_VOCAB: dict[str, dict[str, tuple[str, ...]]] = {
    "Knowledge": {
        "subjects": (
            "a presenter in a grey suit",
            "a lecturer with glasses",
            "a museum guide",
            "a scientist in a white lab coat",
            "a student with a backpack",
            "an astronomer in a dark jacket",
        ),
        "places": (
            "in a lecture hall",
            "in front of a whiteboard",
            "inside a museum gallery",
            "in a laboratory",
            "beside a large globe",
            "in a quiet library",
        ),
        "nouns": (
            "skeleton model",
            "globe",
            "microscope",
            "textbook",
            "chart",
            "fossil",
            "telescope",
            "test tube",
        ),
        "topics": (
            "an educational explainer",
            "a museum walkthrough",
            "a science lecture",
            "a history documentary",
        ),
    },
    "Film & Television": {
        "subjects": (
            "a detective in a long coat",
            "a young actress",
            "an old sailor",
            "a news anchor",
            "a cartoon fox",
            "a police officer",
        ),
        "places": (
            "on a rainy street",
            "in a dimly lit office",
            "on the deck of a ship",
            "in a newsroom studio",
            "in a forest clearing",
            "inside a small cafe",
        ),
        "nouns": (
            "letter",
            "lantern",
            "briefcase",
            "photograph",
            "microphone",
            "key",
            "telephone",
            "suitcase",
        ),
        "topics": (
            "a short film",
            "a television drama excerpt",
            "a news segment",
            "an animated story",
        ),
    },
    "Sports Competition": {
        "subjects": (
            "a goalkeeper in a yellow jersey",
            "a sprinter",
            "a tennis player",
            "a referee",
            "a coach in a tracksuit",
            "a point guard",
        ),
        "places": (
            "on a football pitch",
            "at the edge of the track",
            "on a clay court",
            "beside the team bench",
            "under the basket",
            "near the finish line",
        ),
        "nouns": (
            "ball",
            "water bottle",
            "racket",
            "towel",
            "whistle",
            "trophy",
            "stopwatch",
            "flag",
        ),
        "topics": (
            "a match broadcast",
            "a race highlight reel",
            "a training session",
            "a tournament final",
        ),
    },
    "Artistic Performance": {
        "subjects": (
            "a magician in a black cape",
            "a violinist",
            "a dancer in a white dress",
            "an acrobat",
            "a stand-up comedian",
            "a singer with a guitar",
        ),
        "places": (
            "on a brightly lit stage",
            "in front of a red curtain",
            "in an orchestra pit",
            "in a circus ring",
            "in a small theatre",
            "under a spotlight",
        ),
        "nouns": (
            "top hat",
            "violin",
            "deck of cards",
            "ribbon",
            "hoop",
            "microphone stand",
            "fan",
            "drum",
        ),
        "topics": (
            "a live stage performance",
            "a magic show",
            "a concert recording",
            "a dance recital",
        ),
    },
    "Life Record": {
        "subjects": (
            "a woman in a red coat",
            "a man in a blue shirt",
            "a young boy",
            "an elderly woman",
            "a chef",
            "a girl with a ponytail",
        ),
        "places": (
            "on a kitchen table",
            "in a crowded market",
            "beside a river",
            "in a small garden",
            "in a living room",
            "at a bus stop",
        ),
        "nouns": (
            "wooden box",
            "glass jar",
            "umbrella",
            "basket",
            "cutting board",
            "notebook",
            "teapot",
            "bicycle helmet",
        ),
        "topics": (
            "a daily vlog",
            "a cooking video",
            "a travel diary",
            "a do-it-yourself tutorial",
        ),
    },
    "Multilingual": {
        "subjects": (
            "a tour guide",
            "a street vendor",
            "a language teacher",
            "a traveller with a map",
            "a shopkeeper",
            "a local musician",
        ),
        "places": (
            "in a narrow old street",
            "at a train station",
            "in a night market",
            "inside a temple courtyard",
            "at a harbour",
            "in a small bookshop",
        ),
        "nouns": (
            "map",
            "ticket",
            "paper lantern",
            "phrasebook",
            "menu",
            "souvenir",
            "postcard",
            "umbrella",
        ),
        "topics": (
            "a language lesson",
            "a street interview",
            "a city walking tour",
            "a market visit",
        ),
    },
}

#: (base form, third person, gerund)
_VERBS: tuple[tuple[str, str, str], ...] = (
    ("pick up", "picks up", "picking up"),
    ("hold up", "holds up", "holding up"),
    ("point at", "points at", "pointing at"),
    ("examine", "examines", "examining"),
    ("carry", "carries", "carrying"),
    ("put down", "puts down", "putting down"),
    ("hand over", "hands over", "handing over"),
    ("wipe", "wipes", "wiping"),
    ("show", "shows", "showing"),
    ("turn over", "turns over", "turning over"),
)
_COLORS: tuple[str, ...] = (
    "red",
    "blue",
    "green",
    "yellow",
    "white",
    "black",
    "orange",
    "silver",
    "brown",
    "purple",
    "grey",
    "pink",
)
_COUNTABLES: tuple[str, ...] = (
    "people",
    "chairs",
    "lamps",
    "bottles",
    "flags",
    "windows",
    "books",
    "cups",
    "balloons",
    "bags",
)
_NUMBER_WORDS: tuple[str, ...] = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
_SIGN_TEXTS: tuple[str, ...] = (
    "EXIT",
    "OPEN DAILY",
    "PLATFORM 4",
    "NO PARKING",
    "FRESH BREAD",
    "SALE 50% OFF",
    "ROOM 204",
    "FINISH",
    "GATE B",
    "CAFÉ LUMIÈRE",
    "WELCOME",
    "BUS 12",
    "STAFF ONLY",
    "LIVE",
    "SCORE 2-1",
    "ACT II",
    "TICKETS",
    "QUIET PLEASE",
    "CHAPTER 3",
    "MENU DU JOUR",
    "SALIDA",
    "出口",
    "AUSGANG",
    "LAP 7 OF 10",
)
_SURFACES: tuple[str, ...] = ("sign", "banner", "screen", "board", "poster")
_REASONS: tuple[str, ...] = (
    "To show it to the audience",
    "To make room for the next step",
    "To check whether it is damaged",
    "To hand it to another person",
    "To demonstrate how it works",
    "To put it back where it belongs",
    "To compare it with a similar item",
    "To prepare for the next scene",
    "Because someone off camera asked for it",
    "To protect it from the rain",
    "To keep it away from the children",
    "To prove that nothing is hidden inside",
)
_WHEN_OPTIONS: tuple[str, ...] = (
    "At the very beginning of the video",
    "Around the middle of the video",
    "Near the end of the video",
    "Several times throughout the video",
)
_RELATIONS: tuple[str, ...] = (
    "To the left of",
    "To the right of",
    "Directly behind",
    "In front of",
    "Above",
)
_YOUTUBE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


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


#: Paths (relative to the workspace directory) that :func:`build_workspace` writes.
GENERATED_PATHS: tuple[str, ...] = (
    "questions",
    "store",
    "harness.db",
    "planted_labels.json",
    "video_split.yaml",
)


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
    _prepare_directory(directory)

    streams = np.random.SeedSequence([seed, 0x5EED]).spawn(7)
    rng_layout, rng_tree, rng_q, rng_outcome, rng_mech, rng_trace, rng_db = (
        np.random.default_rng(s) for s in streams
    )

    videos = _layout_videos(rng_layout, n_videos)
    for video in videos:
        _build_tree(rng_tree, video)
    questions = _build_questions(rng_q, videos)
    _assign_outcomes(rng_outcome, videos, questions)
    _assign_mechanisms(rng_mech, questions, n_videos)
    for question in questions:
        question.trace = _build_trace(rng_trace, question)

    _write_questions(directory, videos)
    _write_trees(directory, videos)
    _write_skills(directory)
    _write_harness_db(directory, rng_db, questions, baseline_run_id)
    _write_planted_labels(directory, questions)

    t2 = {t: 0 for t in sorted(TASK_TYPES)}
    t1 = {t: 0 for t in sorted(TASK_TYPES)}
    for q in questions:
        if q.tier == "T2":
            t2[q.task_type] += 1
        elif q.tier == "T1":
            t1[q.task_type] += 1
    floor_k = {t: n // 2 for t, n in t2.items() if n >= 2}
    config_path = _write_config(directory, n_videos, seed, baseline_run_id, floor_k)

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


# --------------------------------------------------------------------------------------------
# Internal model
# --------------------------------------------------------------------------------------------


@dataclass
class _Node:
    node_id: str
    start: int  # tenths of a second
    end: int
    caption: str
    children: list[_Node] = field(default_factory=list)
    # Scene details (leaves only).
    subject: str = ""
    verb: tuple[str, str, str] = ("", "", "")
    color: str = ""
    noun: str = ""
    place: str = ""
    count_n: int = 0
    countable: str = ""
    sign: str = ""
    surface: str = ""


@dataclass
class _Video:
    index: int
    video_id: str
    duration: str
    domain: str
    sub_category: str
    youtube_id: str
    task_types: list[str]
    duration_t: int = 0
    synopsis: str = ""
    root: _Node | None = None
    leaves: list[_Node] = field(default_factory=list)
    segments: list[_Node] = field(default_factory=list)
    questions: list[_Question] = field(default_factory=list)


@dataclass
class _Question:
    question_id: str
    video: _Video
    task_type: str
    answer: str
    text: str = ""
    options: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    focus: _Node | None = None
    correct: bool = True
    prediction: str = ""
    mechanism: str = "correct"
    tier: str = ""
    stop_reason: str = "answer"
    raw_response: str = ""
    retried: bool = False
    trace: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _apportion(weights: Sequence[int], total: int) -> list[int]:
    """Largest-remainder apportionment of ``total`` over integer ``weights`` (exact arithmetic)."""
    wsum = sum(weights)
    if total <= 0 or wsum <= 0:
        return [0] * len(weights)
    base = [w * total // wsum for w in weights]
    rem = [w * total % wsum for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-rem[i], i))
    for i in order[: total - sum(base)]:
        base[i] += 1
    return base


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def _sample(rng: np.random.Generator, items: Sequence[Any], k: int) -> list[Any]:
    idx = rng.permutation(len(items))[:k]
    return [items[int(i)] for i in idx]


def _weighted_index(rng: np.random.Generator, weights: Sequence[float]) -> int:
    total = float(sum(weights))
    r = float(rng.random()) * total
    acc = 0.0
    last = 0
    for i, w in enumerate(weights):
        if w <= 0:
            continue
        last = i
        acc += w
        if r < acc:
            return i
    return last


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _secs(t: int) -> float:
    return t / 10


def _overlaps(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start < s_end and s_start < end for s_start, s_end in spans)


# --------------------------------------------------------------------------------------------
# Directory handling
# --------------------------------------------------------------------------------------------


def _prepare_directory(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        if not (directory / "video_split.yaml").is_file():
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


# --------------------------------------------------------------------------------------------
# Videos: durations, domains, task types
# --------------------------------------------------------------------------------------------


def _scaled_task_counts(n_videos: int) -> list[int]:
    counts = _apportion(list(TASK_TYPE_COUNTS.values()), n_videos * QUESTIONS_PER_VIDEO)
    if n_videos >= 12:
        for i in range(len(counts)):
            if counts[i] == 0:
                donor = max(range(len(counts)), key=lambda j: (counts[j], -j))
                counts[donor] -= 1
                counts[i] += 1
    return counts


def _assign_task_types(rng: np.random.Generator, n_videos: int) -> list[list[str]]:
    """Per video, three task types, matching the distinct-types-per-video distribution."""
    counts = _scaled_task_counts(n_videos)
    n1, n2, n3 = _apportion(list(DISTINCT_TYPES_PER_VIDEO.values()), n_videos)
    for _attempt in range(200):
        result = _try_assign_types(rng, counts, n1, n2, n3)
        if result is not None:
            break
    else:  # pragma: no cover - only for degenerate tiny sizes
        tokens = [t for t, c in enumerate(counts) for _ in range(c)]
        result = [[tokens[i + k * n_videos] for k in range(3)] for i in range(n_videos)]
    order = rng.permutation(n_videos)
    out: list[list[str]] = []
    for i in order:
        types = [TASK_TYPES[t] for t in result[int(i)]]
        out.append([types[int(j)] for j in rng.permutation(3)])
    return out


def _try_assign_types(
    rng: np.random.Generator, counts: list[int], n1: int, n2: int, n3: int
) -> list[list[int]] | None:
    remaining = list(counts)
    videos: list[list[int]] = []
    for _ in range(n1):
        weights = [c if c >= 3 else 0 for c in remaining]
        if sum(weights) == 0:
            return None
        t = _weighted_index(rng, weights)
        remaining[t] -= 3
        videos.append([t, t, t])
    for _ in range(n2):
        weights = [c if c >= 2 else 0 for c in remaining]
        if sum(weights) == 0:
            return None
        t = _weighted_index(rng, weights)
        remaining[t] -= 2
        others = [c if j != t else 0 for j, c in enumerate(remaining)]
        if sum(others) == 0:
            return None
        u = _weighted_index(rng, others)
        remaining[u] -= 1
        videos.append([t, t, u])
    if max(remaining, default=0) > n3:
        return None
    # Three distinct types per video: always feasible while max(remaining) <= videos left.
    for k in range(n3, 0, -1):
        chosen = [i for i, c in enumerate(remaining) if c == k]
        while len(chosen) < 3:
            weights = [0 if i in chosen else c for i, c in enumerate(remaining)]
            if sum(weights) == 0:
                return None
            chosen.append(_weighted_index(rng, weights))
        for i in chosen:
            remaining[i] -= 1
        videos.append(chosen)
    return videos


def _layout_videos(rng: np.random.Generator, n_videos: int) -> list[_Video]:
    width = max(3, len(str(n_videos)))
    base, extra = divmod(n_videos, len(DURATIONS))
    per_duration = [base + (1 if i < extra else 0) for i in range(len(DURATIONS))]
    domain_names = list(DOMAIN_QUESTION_COUNTS)
    domain_total = _apportion(list(DOMAIN_QUESTION_COUNTS.values()), n_videos)
    task_types = _assign_task_types(rng, n_videos)

    # As in the official file, ids run through the short, then medium, then long videos, and
    # inside a duration block the videos are grouped by domain and sub-category.
    videos: list[_Video] = []
    left = list(domain_total)
    for d_index, duration in enumerate(DURATIONS):
        size = per_duration[d_index]
        if d_index == len(DURATIONS) - 1:
            block = list(left)
        else:
            block = _apportion(left, size) if sum(left) else [0] * len(left)
        left = [a - b for a, b in zip(left, block, strict=True)]
        for dom_i, domain in enumerate(domain_names):
            subs = SUB_CATEGORIES[domain]
            offset = int(rng.integers(len(subs)))
            sub_counts = [0] * len(subs)
            for k in range(block[dom_i]):
                sub_counts[(offset + k) % len(subs)] += 1
            for sub, n_sub in zip(subs, sub_counts, strict=True):
                for _ in range(n_sub):
                    idx = len(videos)
                    chars = rng.integers(len(_YOUTUBE_ALPHABET), size=11).tolist()
                    yt = "".join(_YOUTUBE_ALPHABET[c] for c in chars)
                    videos.append(
                        _Video(
                            index=idx,
                            video_id=str(idx + 1).zfill(width),
                            duration=duration,
                            domain=domain,
                            sub_category=sub,
                            youtube_id=yt,
                            task_types=task_types[idx],
                        )
                    )
    return videos


# --------------------------------------------------------------------------------------------
# Caption trees
# --------------------------------------------------------------------------------------------


def _build_tree(rng: np.random.Generator, video: _Video) -> None:
    vocab = _DOMAIN_VOCAB[video.domain]
    lo, hi = DURATION_RANGES_S[video.duration]
    dur_t = int(rng.integers(lo * 10, hi * 10 + 1))
    n_seg = int(rng.integers(3, 7))
    leaves_per = [int(rng.integers(2, 6)) for _ in range(n_seg)]
    n_leaves = sum(leaves_per)
    weights = rng.uniform(0.6, 1.4, size=n_leaves)
    cum = np.cumsum(weights) / float(weights.sum()) * dur_t
    bounds = [0] + [int(round(float(x))) for x in cum[:-1]] + [dur_t]

    cast = _sample(rng, vocab["subjects"], 3)
    nouns = _sample(rng, vocab["nouns"], 6)
    places = list(vocab["places"])
    signs = _sample(rng, _SIGN_TEXTS, 6)
    # One row of independent uniform draws per leaf (modulo bias is negligible at 10**6).
    draws = rng.integers(0, 1_000_000, size=(n_leaves, 9)).tolist()

    segments: list[_Node] = []
    leaves: list[_Node] = []
    leaf_i = 0
    for s in range(n_seg):
        place = _pick(rng, places)
        seg_leaves: list[_Node] = []
        for k in range(leaves_per[s]):
            start, end = bounds[leaf_i], bounds[leaf_i + 1]
            r = draws[leaf_i]
            leaf_i += 1
            leaf = _Node(
                node_id=f"n0.{s + 1}.{k + 1}",
                start=start,
                end=end,
                caption="",
                subject=cast[r[0] % len(cast)],
                verb=_VERBS[r[1] % len(_VERBS)],
                color=_COLORS[r[2] % len(_COLORS)],
                noun=nouns[r[3] % len(nouns)],
                place=place,
                count_n=2 + r[4] % 8,
                countable=_COUNTABLES[r[5] % len(_COUNTABLES)],
                sign=signs[r[6] % len(signs)],
                surface=_SURFACES[r[7] % len(_SURFACES)],
            )
            obj = f"{_article(leaf.color)} {leaf.color} {leaf.noun}"
            caption = f"{_cap(leaf.subject)} {leaf.verb[1]} {obj} {place}."
            extra = r[8] / 1_000_000
            if extra < 0.35:
                caption += f" {_cap(_NUMBER_WORDS[leaf.count_n])} {leaf.countable} are visible."
            elif extra < 0.55:
                caption += f" Text is visible on {_article(leaf.surface)} {leaf.surface}."
            leaf.caption = caption
            seg_leaves.append(leaf)
        first, last = seg_leaves[0], seg_leaves[-1]
        seg_caption = (
            f"{_cap(place)}, {first.subject} {first.verb[1]} the {first.color} {first.noun}; "
            f"later {last.subject} {last.verb[1]} the {last.color} {last.noun}."
        )
        segments.append(
            _Node(
                node_id=f"n0.{s + 1}",
                start=seg_leaves[0].start,
                end=seg_leaves[-1].end,
                caption=seg_caption,
                children=seg_leaves,
                place=place,
            )
        )
        leaves.extend(seg_leaves)

    topic = _pick(rng, vocab["topics"])
    seg_places: list[str] = []
    for seg in segments:
        if seg.place not in seg_places:
            seg_places.append(seg.place)
    video.synopsis = _synopsis(topic, cast, seg_places)
    root_caption = f"{video.synopsis} ({video.sub_category})."
    video.duration_t = dur_t
    video.root = _Node(node_id="n0", start=0, end=dur_t, caption=root_caption, children=segments)
    video.segments = segments
    video.leaves = leaves


def _synopsis(topic: str, cast: Sequence[str], places: Sequence[str]) -> str:
    where = places[0] if len(places) == 1 else ", ".join(places[:-1][:2]) + " and " + places[-1]
    return f"{_cap(topic)} featuring {cast[0]}, {cast[1]} and {cast[2]}, filmed {where}"


def _node_json(node: _Node) -> dict[str, Any]:
    return {
        "id": node.node_id,
        "start_s": _secs(node.start),
        "end_s": _secs(node.end),
        "caption": node.caption,
        "children": [_node_json(c) for c in node.children],
    }


# --------------------------------------------------------------------------------------------
# Questions
# --------------------------------------------------------------------------------------------


def _build_questions(rng: np.random.Generator, videos: list[_Video]) -> list[_Question]:
    n_questions = len(videos) * QUESTIONS_PER_VIDEO
    letter_counts = _apportion(list(ANSWER_LETTER_COUNTS.values()), n_questions)
    letters = [LETTERS[i] for i, c in enumerate(letter_counts) for _ in range(c)]
    letters = [letters[int(i)] for i in rng.permutation(n_questions)]
    questions: list[_Question] = []
    for video in videos:
        for k, task_type in enumerate(video.task_types):
            q = _Question(
                question_id=f"{video.video_id}-{k + 1}",
                video=video,
                task_type=task_type,
                answer=letters[len(questions)],
            )
            _fill_question(rng, q)
            video.questions.append(q)
            questions.append(q)
    return questions


def _distinct_options(
    rng: np.random.Generator, answer: str, pool: Sequence[str], letter: str
) -> list[str]:
    distractors: list[str] = []
    for cand in _sample(rng, list(pool), len(pool)):
        if cand != answer and cand not in distractors:
            distractors.append(cand)
        if len(distractors) == 3:
            break
    pos = LETTERS.index(letter)
    opts = distractors[:pos] + [answer] + distractors[pos:]
    return [f"{LETTERS[i]}. {text}" for i, text in enumerate(opts)]


def _inner_span(rng: np.random.Generator, leaf: _Node) -> tuple[int, int]:
    length = leaf.end - leaf.start
    if float(rng.random()) < 0.35 or length < 10:
        return (leaf.start, leaf.end)
    start = leaf.start + int(rng.integers(0, max(1, int(length * 0.4))))
    end = leaf.end - int(rng.integers(0, max(1, int(length * 0.4))))
    if end <= start:
        return (leaf.start, leaf.end)
    return (start, end)


def _fill_question(rng: np.random.Generator, q: _Question) -> None:
    video = q.video
    vocab = _DOMAIN_VOCAB[video.domain]
    leaves = video.leaves
    t = q.task_type
    leaf_idx = int(rng.integers(len(leaves) - 1)) if t == "Temporal Reasoning" else None
    if leaf_idx is None:
        leaf_idx = int(rng.integers(len(leaves)))
    leaf = leaves[leaf_idx]
    q.focus = leaf
    subj, (vb, v3, vg) = leaf.subject, leaf.verb
    obj = f"the {leaf.color} {leaf.noun}"
    variant = int(rng.integers(2))
    extra_leaves: list[_Node] = []
    answer: str
    pool: list[str]

    if t == "Action Recognition":
        answer = f"{_cap(vg)} {obj}"
        pool = [f"{_cap(v[2])} {obj}" for v in _VERBS] + [
            f"{_cap(v[2])} the {c} {leaf.noun}" for v in _VERBS[:3] for c in _COLORS[:3]
        ]
        text = (
            f"What is {subj} doing {leaf.place}?"
            if variant == 0
            else f"Which action does {subj} perform with {obj} in this part of the video?"
        )
    elif t == "Object Recognition":
        answer = _cap(f"{_article(leaf.color)} {leaf.color} {leaf.noun}")
        pool = [_cap(f"{_article(leaf.color)} {leaf.color} {n}") for n in vocab["nouns"]]
        text = (
            f"Which object does {subj} {vb} {leaf.place}?"
            if variant == 0
            else f"What object is {subj} {vg} in the scene {leaf.place}?"
        )
    elif t == "Attribute Perception":
        answer = _cap(leaf.color)
        pool = [_cap(c) for c in _COLORS]
        text = (
            f"What color is the {leaf.noun} that {subj} {v3}?"
            if variant == 0
            else f"What is the color of the {leaf.noun} seen {leaf.place}?"
        )
    elif t == "Counting Problem":
        answer = str(leaf.count_n)
        pool = [str(n) for n in range(max(1, leaf.count_n - 4), leaf.count_n + 5)]
        text = (
            f"How many {leaf.countable} are visible when {subj} {v3} {obj}?"
            if variant == 0
            else f"How many {leaf.countable} can be counted {leaf.place} in this scene?"
        )
    elif t == "OCR Problems":
        answer = f'"{leaf.sign}"'
        pool = [f'"{s}"' for s in _SIGN_TEXTS]
        text = (
            f"What text is shown on the {leaf.surface} {leaf.place}?"
            if variant == 0
            else f"Which words appear on the {leaf.surface} while {subj} {v3} {obj}?"
        )
    elif t in ("Object Reasoning", "Action Reasoning"):
        answer = _pick(rng, _REASONS)
        pool = list(_REASONS)
        if t == "Object Reasoning":
            text = (
                f"Why does {subj} {vb} {obj}?"
                if variant == 0
                else f"What is the most likely purpose of {obj} in this scene {leaf.place}?"
            )
        else:
            text = (
                f"What is the most likely reason {subj} {v3} {obj} {leaf.place}?"
                if variant == 0
                else f"Why is {subj} {vg} {obj}?"
            )
    elif t == "Information Synopsis":
        answer = video.synopsis
        pool = [answer]
        for _ in range(12):
            fake_cast = _sample(rng, vocab["subjects"], 3)
            fake_places = _sample(rng, vocab["places"], int(rng.integers(1, 4)))
            pool.append(_synopsis(_pick(rng, vocab["topics"]), fake_cast, fake_places))
        text = (
            "Which option best summarizes the video?"
            if variant == 0
            else "What is this video mainly about?"
        )
    elif t == "Temporal Reasoning":
        nxt = leaves[leaf_idx + 1]
        extra_leaves.append(nxt)
        answer = _cap(f"{nxt.subject} {nxt.verb[1]} the {nxt.color} {nxt.noun}")
        pool = [
            _cap(f"{other.subject} {other.verb[1]} the {other.color} {other.noun}")
            for other in leaves
        ] + [
            _cap(f"{subj} {v[1]} the {leaf.color} {n}") for v in _VERBS[:4] for n in vocab["nouns"]
        ]
        text = (
            f"What happens right after {subj} {v3} {obj}?"
            if variant == 0
            else f"Once {subj} {v3} {obj}, what is the next thing that happens?"
        )
    elif t == "Temporal Perception":
        mid = (leaf.start + leaf.end) / 2
        third = 0 if mid < video.duration_t / 3 else (1 if mid < 2 * video.duration_t / 3 else 2)
        answer = _WHEN_OPTIONS[third]
        pool = list(_WHEN_OPTIONS)
        text = (
            f"When in the video does {subj} {vb} {obj}?"
            if variant == 0
            else f"At what point of the video is {subj} seen {vg} {obj}?"
        )
    elif t == "Spatial Perception":
        answer = f"{_pick(rng, _RELATIONS)} {subj}"
        pool = [f"{r} {subj}" for r in _RELATIONS]
        text = (
            f"Where is the {leaf.color} {leaf.noun} relative to {subj} {leaf.place}?"
            if variant == 0
            else f"From the camera's point of view, where is {obj} placed relative to {subj}?"
        )
    else:  # Spatial Reasoning
        answer = _cap(f"the {leaf.color} {leaf.noun}")
        pool = [_cap(f"the {c} {n}") for n in vocab["nouns"] for c in _COLORS[:2]]
        text = (
            f"Based on the layout of the scene {leaf.place}, which object is closest to {subj}?"
            if variant == 0
            else f"If {subj} reached out without walking, which object could they touch first?"
        )

    q.text = text
    q.options = _distinct_options(rng, answer, pool, q.answer)
    spans = [_inner_span(rng, leaf)]
    if not extra_leaves and float(rng.random()) < 0.2 and len(leaves) > 1:
        other = leaves[int(rng.integers(len(leaves)))]
        if other is not leaf:
            extra_leaves.append(other)
    for other in extra_leaves:
        spans.append(_inner_span(rng, other))
    q.spans = sorted(set(spans))


# --------------------------------------------------------------------------------------------
# Outcomes: which answers are wrong
# --------------------------------------------------------------------------------------------


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _assign_outcomes(
    rng: np.random.Generator, videos: list[_Video], questions: list[_Question]
) -> None:
    """Pick the wrong answers.

    Per task type exactly ``round(n_type * (1 - accuracy_type))`` answers are wrong; inside a
    type, the wrong ones are the questions with the highest score
    ``b_duration + sigma * z_video + logistic noise``. ``b`` is fitted so that the per-duration
    accuracies match, ``sigma`` (the per-video random effect) so that the histogram of videos by
    wrong count matches; both by a fixed number of deterministic iterations on fixed draws.
    """
    n_q = len(questions)
    n_v = len(videos)
    type_idx = np.array([TASK_TYPES.index(q.task_type) for q in questions])
    dur_idx = np.array([DURATIONS.index(q.video.duration) for q in questions])
    vid_idx = np.array([q.video.index for q in questions])
    z = rng.standard_normal(n_v)
    noise = rng.logistic(size=n_q)

    members = [np.flatnonzero(type_idx == t) for t in range(len(TASK_TYPES))]
    k_wrong = [
        min(len(m), _round_half_up(len(m) * (1 - TASK_TYPE_ACCURACY[t])))
        for m, t in zip(members, TASK_TYPES, strict=True)
    ]
    target_rate = [1 - DURATION_ACCURACY[d] for d in DURATIONS]
    dur_sizes = np.bincount(dur_idx, minlength=len(DURATIONS))
    target_hist = np.array(_apportion(list(VIDEOS_BY_WRONG_COUNT.values()), n_v), dtype=float)

    def select(b: np.ndarray, sigma: float) -> np.ndarray:
        score = b[dur_idx] + sigma * z[vid_idx] + noise
        wrong = np.zeros(n_q, dtype=bool)
        for m, k in zip(members, k_wrong, strict=True):
            if k:
                order = np.argsort(-score[m], kind="stable")
                wrong[m[order[:k]]] = True
        return wrong

    def fit_b(sigma: float) -> tuple[np.ndarray, np.ndarray]:
        b = np.array([_logit(r) for r in target_rate])
        b -= b.mean()
        wrong = select(b, sigma)
        for _ in range(6):
            for d in range(len(DURATIONS)):
                if dur_sizes[d] == 0:
                    continue
                observed = float(wrong[dur_idx == d].mean())
                b[d] += _logit(target_rate[d]) - _logit(observed)
            b -= b.mean()
            wrong = select(b, sigma)
        return b, wrong

    best: tuple[float, float, np.ndarray] | None = None
    for sigma in np.linspace(0.0, 2.4, 25):
        _, wrong = fit_b(float(sigma))
        per_video = np.bincount(vid_idx[wrong], minlength=n_v)
        hist = np.bincount(per_video, minlength=4)[:4].astype(float)
        dur_err = sum(
            (float(wrong[dur_idx == d].mean()) - target_rate[d]) ** 2 * n_v
            for d in range(len(DURATIONS))
            if dur_sizes[d]
        )
        loss = float(((hist - target_hist) ** 2).sum()) + dur_err
        if best is None or loss < best[0] - 1e-12:
            best = (loss, float(sigma), wrong)
    assert best is not None
    wrong = best[2]
    for q, w in zip(questions, wrong, strict=True):
        q.correct = not bool(w)


# --------------------------------------------------------------------------------------------
# Mechanisms (planted labels)
# --------------------------------------------------------------------------------------------


def _assign_mechanisms(rng: np.random.Generator, questions: list[_Question], n_videos: int) -> None:
    wrong = [q for q in questions if not q.correct]
    n_infra = _round_half_up(INFRA_REFERENCE_COUNT * n_videos / REFERENCE_N_VIDEOS)
    if n_videos >= 24:
        n_infra = max(1, n_infra)
    n_infra = min(n_infra, len(wrong))
    order = [wrong[int(i)] for i in rng.permutation(len(wrong))]
    infra, judged = order[:n_infra], order[n_infra:]

    n_infra_retry = (n_infra + 1) // 2
    for i, q in enumerate(infra):
        q.tier = "T0"
        q.mechanism = "infra_error" if float(rng.random()) < 0.6 else "infra_parse_error"
        q.stop_reason = "error" if q.mechanism == "infra_error" else "parse_error"
        q.retried = i < n_infra_retry
        q.prediction = ""

    n_t2 = _round_half_up(T2_SHARE * len(judged))
    for i, q in enumerate(judged):
        if i >= n_t2:
            q.tier, q.mechanism = "T1", "lapse"
        else:
            q.tier = "T2"
            u = float(rng.random())
            if u < T2_STEP_LIMIT_SHARE:
                q.mechanism = "step_limit"
            elif u < T2_STEP_LIMIT_SHARE + T2_MISSED_EVIDENCE_SHARE:
                q.mechanism = "missed_evidence"
            elif q.task_type in _REQUIRED_TOOL:
                q.mechanism = "skill_nonadherence"
            else:
                q.mechanism = "missed_evidence"
        q.stop_reason = "max_steps" if q.mechanism == "step_limit" else "answer"
        q.prediction = _pick(rng, [x for x in LETTERS if x != q.answer])

    normal = [q for q in questions if q.correct]
    for q in normal:
        q.prediction = q.answer
    normal_or_judged = [q for q in questions if not q.mechanism.startswith("infra")]
    n_retry = _round_half_up(RETRY_SHARE * len(normal_or_judged))
    for i in rng.permutation(len(normal_or_judged))[:n_retry]:
        normal_or_judged[int(i)].retried = True


# --------------------------------------------------------------------------------------------
# Traces and replies
# --------------------------------------------------------------------------------------------

# Every reply must give its letter under Video-MME's scorer, which takes the first capital A-D
# anywhere: "After reviewing..." would read as "A".
_REPLIES = (
    "The best answer is {L}.",
    "{L}",
    "The answer is ({L}).",
    "Best option: ({L})",
    "The correct option is {L}.",
    "{L}. {T}",
)
_START_THOUGHTS = (
    "The question asks about {focus}. I should find the segment where this happens.",
    "I need to locate the part of the video showing {focus} before looking at the options.",
    "Let me look at the segment captions to find {focus}.",
    "First find where {focus} appears, then check the options against that part.",
)
_MID_THOUGHTS = (
    "This looks like the right part of the video; {focus} are both mentioned here.",
    "The caption mentions {focus}. Let me check the details before deciding.",
    "Found the scene. I will compare it with each option.",
)


def _option_text(q: _Question, letter: str) -> str:
    return q.options[LETTERS.index(letter)].split(". ", 1)[1]


def _focus_phrase(q: _Question) -> str:
    leaf = q.focus
    assert leaf is not None
    return f"{leaf.subject} and the {leaf.noun}"


def _open(node: _Node) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("tool_call", {"tool": "open_node", "args": {"node_id": node.node_id}}),
        (
            "observation",
            {"text": f"[{_secs(node.start)}-{_secs(node.end)} s] {node.caption}"},
        ),
    ]


def _tool(q: _Question, tool: str, node: _Node) -> list[tuple[str, dict[str, Any]]]:
    leaf = q.focus
    assert leaf is not None
    if tool == "count_objects":
        n = leaf.count_n if node is leaf or leaf in node.children else max(0, leaf.count_n - 2)
        return [
            (
                "tool_call",
                {
                    "tool": "count_objects",
                    "args": {"node_id": node.node_id, "object": leaf.countable},
                },
            ),
            ("observation", {"text": f"Detected {n} {leaf.countable} in {node.node_id}."}),
        ]
    if tool == "read_text":
        return [
            ("tool_call", {"tool": "read_text", "args": {"node_id": node.node_id}}),
            ("observation", {"text": f'Recognized text in {node.node_id}: "{leaf.sign}"'}),
        ]
    # search_captions
    query = f"{leaf.subject} {leaf.verb[1]} {leaf.noun}"
    return [
        ("tool_call", {"tool": "search_captions", "args": {"query": query}}),
        (
            "observation",
            {
                "text": f"Top match {leaf.node_id} [{_secs(leaf.start)}-{_secs(leaf.end)} s]: "
                f"{leaf.caption}"
            },
        ),
    ]


def _evidence_node(rng: np.random.Generator, q: _Question) -> _Node:
    leaf = q.focus
    assert leaf is not None
    if float(rng.random()) < 0.2:
        for seg in q.video.segments:
            if leaf in seg.children:
                return seg
    return leaf


def _non_evidence_nodes(q: _Question) -> list[_Node]:
    nodes = list(q.video.segments) + list(q.video.leaves)
    return [n for n in nodes if not _overlaps(n.start, n.end, q.spans)]


def _build_trace(rng: np.random.Generator, q: _Question) -> list[tuple[str, dict[str, Any]]]:
    steps: list[tuple[str, dict[str, Any]]] = []
    focus = _focus_phrase(q)
    steps.append(("thought", {"text": _pick(rng, _START_THOUGHTS).format(focus=focus)}))
    required = _REQUIRED_TOOL.get(q.task_type)
    video = q.video
    focus_leaf = q.focus
    assert focus_leaf is not None

    if q.mechanism.startswith("infra"):
        node = _pick(rng, video.segments)
        steps += _open(node)
        if float(rng.random()) < 0.5:
            steps.pop()
        q.raw_response = _infra_reply(rng, q)
        return steps

    if q.mechanism == "step_limit":
        nodes = list(video.segments) + list(video.leaves)
        for _ in range(STEP_LIMIT_OPENS):
            steps += _open(_pick(rng, nodes))
        q.raw_response = (
            f"Reached the step limit ({STEP_LIMIT_OPENS} tool calls) without a final answer. "
            f"Forced guess: ({q.prediction})"
        )
        return steps

    letter = q.prediction
    if q.mechanism == "missed_evidence":
        candidates = _non_evidence_nodes(q)
        n_open = min(len(candidates), int(rng.integers(1, 4)))
        search = required == "search_captions" or float(rng.random()) < 0.3
        if search and n_open < 3:
            steps += _tool(q, "search_captions", focus_leaf)
        opened = _sample(rng, candidates, n_open)
        for node in opened:
            steps += _open(node)
        if required in ("count_objects", "read_text") and n_open < 3 and float(rng.random()) < 0.5:
            steps += _tool(q, required, opened[-1])
        steps.append(
            (
                "thought",
                {
                    "text": "The opened parts do not show it directly; "
                    f"option {letter} seems the most plausible."
                },
            )
        )
    else:  # correct, lapse, skill_nonadherence
        use_required = required is not None and q.mechanism != "skill_nonadherence"
        search = use_required if required == "search_captions" else float(rng.random()) < 0.3
        if search:
            steps += _tool(q, "search_captions", focus_leaf)
        candidates = _non_evidence_nodes(q)
        if candidates and float(rng.random()) < 0.3:
            steps += _open(_pick(rng, candidates))
        node = _evidence_node(rng, q)
        steps += _open(node)
        if float(rng.random()) < 0.35:
            steps.append(("thought", {"text": _pick(rng, _MID_THOUGHTS).format(focus=focus)}))
        if use_required and required in ("count_objects", "read_text"):
            steps += _tool(q, required, node)
        if q.mechanism == "skill_nonadherence":
            reason = f"The caption is enough to answer; option {letter} fits it."
        elif q.correct:
            reason = f"This segment shows {focus}, which supports option {letter}."
        else:
            reason = f"This segment shows {focus}; I read it as option {letter}."
        if float(rng.random()) < 0.8:
            steps.append(("thought", {"text": reason}))

    reply = _pick(rng, _REPLIES).format(L=letter, T=_option_text(q, letter))
    q.raw_response = reply
    steps.append(("answer", {"letter": letter, "text": reply}))
    return steps


def _infra_reply(rng: np.random.Generator, q: _Question) -> str:
    if q.stop_reason == "parse_error":
        return _pick(
            rng,
            (
                "I think the relevant part is in the second segment but I need to look",
                '{"tool": "open_node", "args": {"node_id": ',
                "<tool_call>open_node</tool_call",
            ),
        )
    return _error_reply(rng)


def _error_reply(rng: np.random.Generator) -> str:
    return _pick(
        rng,
        (
            "",
            "Traceback (most recent call last):\n"
            '  File "harness/run.py", line 212, in call_model\n'
            "    response = client.chat(messages, timeout=120)\n"
            "TimeoutError: model call exceeded 120 s",
            "Traceback (most recent call last):\n"
            '  File "harness/tools.py", line 88, in open_node\n'
            "    frames = store.load(node_id)\n"
            "OSError: [Errno 104] peer reset the socket",
        ),
    )


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------


def _write_json(path: Path, payload: Any, indent: int | None = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=indent, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def _write_questions(directory: Path, videos: list[_Video]) -> None:
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
                        "evidence_spans": [[_secs(s), _secs(e)] for s, e in q.spans],
                    }
                    for q in video.questions
                ],
            }
        )
    _write_json(directory / "questions" / "videomme.json", payload)


def _write_trees(directory: Path, videos: list[_Video]) -> None:
    for video in videos:
        assert video.root is not None
        _write_json(
            directory / "store" / "videos" / video.video_id / "tree.json",
            {
                "video_id": video.video_id,
                "duration_s": _secs(video.duration_t),
                "root": _node_json(video.root),
            },
            indent=None,  # one line per tree: the indenting encoder is ~10x slower
        )


def _write_skills(directory: Path) -> None:
    skills_dir = directory / "store" / "skills" / SKILLS_VERSION
    skills_dir.mkdir(parents=True, exist_ok=True)
    for skill in SKILLS:
        lines = ["---", f"name: {skill.name}", f"applies_to: [{', '.join(skill.applies_to)}]"]
        if skill.required_tool:
            lines.append(f"required_tool: {skill.required_tool}")
        lines += ["---", f"# {skill.title}", "", skill.body.rstrip("\n"), ""]
        (skills_dir / f"{skill.name}.md").write_text("\n".join(lines), encoding="utf-8")


def _write_harness_db(
    directory: Path, rng: np.random.Generator, questions: list[_Question], run_id: str
) -> None:
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
            first_reply = _error_reply(rng)
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

    predictions = [predictions[int(i)] for i in rng.permutation(len(predictions))]
    traces = [traces[int(i)] for i in rng.permutation(len(traces))]

    path = directory / "harness.db"
    if path.exists():
        path.unlink()
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "CREATE TABLE predictions (run_id TEXT, question_id TEXT, prediction TEXT, "
            "raw_response TEXT, stop_reason TEXT, attempt INTEGER, created_at TEXT, "
            "session_id TEXT)"
        )
        conn.execute(
            "CREATE TABLE traces (run_id TEXT, question_id TEXT, step INTEGER, kind TEXT, "
            "content TEXT)"
        )
        conn.executemany("INSERT INTO predictions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", predictions)
        conn.executemany("INSERT INTO traces VALUES (?, ?, ?, ?, ?)", traces)
        conn.commit()
    finally:
        conn.close()


def _write_planted_labels(directory: Path, questions: list[_Question]) -> None:
    labels = {
        q.question_id: {"tier": q.tier, "mechanism": q.mechanism}
        for q in sorted(questions, key=lambda x: x.question_id)
        if not q.correct
    }
    _write_json(directory / "planted_labels.json", labels)


def _write_config(
    directory: Path, n_videos: int, seed: int, run_id: str, floor_k: dict[str, int]
) -> Path:
    scale = n_videos / REFERENCE_N_VIDEOS
    n_trainval = _round_half_up(2 / 3 * n_videos)
    report_floor = max(3, _round_half_up(30 * scale))
    val_wrong_min = _round_half_up(150 * scale)
    if floor_k:
        floor_lines = ["    floor_k:"] + [f"      {k}: {v}" for k, v in sorted(floor_k.items())]
    else:
        floor_lines = ["    floor_k: {}"]
    lines = [
        f"# Generated by split_assets.demo.build_workspace(n_videos={n_videos}, seed={seed}).",
        "# Synthetic Video-MME shaped sample workspace: every text is template generated.",
        "# Paths are relative to the folder of this file.",
        "video_split:",
        f"  baseline_run_id: {json.dumps(run_id)}",
        f"  n_trainval: {n_trainval}",
        "  epsilon: 0.02",
        f"  report_floor: {report_floor}",
        f"  val_wrong_min: {val_wrong_min}",
        "  val_ratio: 0.3",
        "  seed: 7",
        *[line[2:] for line in floor_lines],
        "diag:",
        "  prompt_version: v1",
        "  model: rules-v1",
        "  judge: rules",
        "  context: full",
        f"  skills_version: {SKILLS_VERSION}",
        "paths:",
        "  questions_dir: questions",
        "  harness_db: harness.db",
        "  store_dir: store",
        "  signals_db: signals.db",
        "  out_dir: splits",
        "",
    ]
    path = directory / "video_split.yaml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
