"""Questions: the focus leaf, text, options and evidence spans of every question.

Each task type has its own template function (``_action_recognition``, ...), found through
:data:`TASK_QUESTIONS`; all of them draw from the same stream in a fixed order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from split_assets.demo.domains import DOMAIN_VOCAB
from split_assets.demo.figures import ANSWER_LETTER_COUNTS, LETTERS, QUESTIONS_PER_VIDEO
from split_assets.demo.model import Node, Question, Video
from split_assets.demo.sampling import apportion, pick, sample
from split_assets.demo.vocabulary import (
    COLORS,
    REASONS,
    RELATIONS,
    SIGN_TEXTS,
    VERBS,
    WHEN_OPTIONS,
    article,
    cap,
    synopsis,
)


def build_questions(rng: np.random.Generator, videos: list[Video]) -> list[Question]:
    n_questions = len(videos) * QUESTIONS_PER_VIDEO
    letter_counts = apportion(list(ANSWER_LETTER_COUNTS.values()), n_questions)
    letters = [LETTERS[i] for i, c in enumerate(letter_counts) for _ in range(c)]
    letters = [letters[int(i)] for i in rng.permutation(n_questions)]
    questions: list[Question] = []
    for video in videos:
        for k, task_type in enumerate(video.task_types):
            q = Question(
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
    for cand in sample(rng, list(pool), len(pool)):
        if cand != answer and cand not in distractors:
            distractors.append(cand)
        if len(distractors) == 3:
            break
    pos = LETTERS.index(letter)
    opts = distractors[:pos] + [answer] + distractors[pos:]
    return [f"{LETTERS[i]}. {text}" for i, text in enumerate(opts)]


def _inner_span(rng: np.random.Generator, leaf: Node) -> tuple[int, int]:
    length = leaf.end - leaf.start
    if float(rng.random()) < 0.35 or length < 10:
        return (leaf.start, leaf.end)
    start = leaf.start + int(rng.integers(0, max(1, int(length * 0.4))))
    end = leaf.end - int(rng.integers(0, max(1, int(length * 0.4))))
    if end <= start:
        return (leaf.start, leaf.end)
    return (start, end)



@dataclass(frozen=True)
class Scene:
    """The focus leaf of a question, the question's template variant (0 or 1), and the
    phrases the templates share."""

    video: Video
    leaf_idx: int
    variant: int

    @property
    def leaf(self) -> Node:
        return self.video.leaves[self.leaf_idx]

    @property
    def vocab(self) -> dict[str, tuple[str, ...]]:
        return DOMAIN_VOCAB[self.video.domain]

    @property
    def subj(self) -> str:
        return self.leaf.subject

    @property
    def obj(self) -> str:
        return f"the {self.leaf.color} {self.leaf.noun}"

    def either(self, first: str, second: str) -> str:
        """The question text of this scene's variant."""
        return first if self.variant == 0 else second


@dataclass
class Draft:
    """A question before its options are drawn: text, correct option text, the pool its
    distractors come from, and leaves besides the focus that hold evidence."""

    text: str
    answer: str
    pool: list[str]
    extra_leaves: list[Node] = field(default_factory=list)


def _fill_question(rng: np.random.Generator, q: Question) -> None:
    leaves = q.video.leaves
    # a "what happens next" question needs a leaf after the focus
    n_focus = len(leaves) - 1 if q.task_type == "Temporal Reasoning" else len(leaves)
    leaf_idx = int(rng.integers(n_focus))
    leaf = leaves[leaf_idx]
    q.focus = leaf
    scene = Scene(video=q.video, leaf_idx=leaf_idx, variant=int(rng.integers(2)))
    draft = TASK_QUESTIONS[q.task_type](rng, scene)
    extra_leaves = draft.extra_leaves
    q.text = draft.text
    q.options = _distinct_options(rng, draft.answer, draft.pool, q.answer)
    spans = [_inner_span(rng, leaf)]
    if not extra_leaves and float(rng.random()) < 0.2 and len(leaves) > 1:
        other = leaves[int(rng.integers(len(leaves)))]
        if other is not leaf:
            extra_leaves.append(other)
    for other in extra_leaves:
        spans.append(_inner_span(rng, other))
    q.spans = sorted(set(spans))


# --------------------------------------------------------------------------------------------
# One template function per task type
# --------------------------------------------------------------------------------------------


def _action_recognition(rng: np.random.Generator, s: Scene) -> Draft:
    leaf, obj = s.leaf, s.obj
    vg = leaf.verb[2]
    pool = [f"{cap(v[2])} {obj}" for v in VERBS] + [
        f"{cap(v[2])} the {c} {leaf.noun}" for v in VERBS[:3] for c in COLORS[:3]
    ]
    text = s.either(
        f"What is {s.subj} doing {leaf.place}?",
        f"Which action does {s.subj} perform with {obj} in this part of the video?",
    )
    return Draft(text, f"{cap(vg)} {obj}", pool)


def _object_recognition(rng: np.random.Generator, s: Scene) -> Draft:
    leaf = s.leaf
    answer = cap(f"{article(leaf.color)} {leaf.color} {leaf.noun}")
    pool = [cap(f"{article(leaf.color)} {leaf.color} {n}") for n in s.vocab["nouns"]]
    text = s.either(
        f"Which object does {s.subj} {leaf.verb[0]} {leaf.place}?",
        f"What object is {s.subj} {leaf.verb[2]} in the scene {leaf.place}?",
    )
    return Draft(text, answer, pool)


def _attribute_perception(rng: np.random.Generator, s: Scene) -> Draft:
    leaf = s.leaf
    text = s.either(
        f"What color is the {leaf.noun} that {s.subj} {leaf.verb[1]}?",
        f"What is the color of the {leaf.noun} seen {leaf.place}?",
    )
    return Draft(text, cap(leaf.color), [cap(c) for c in COLORS])


def _counting_problem(rng: np.random.Generator, s: Scene) -> Draft:
    leaf = s.leaf
    pool = [str(n) for n in range(max(1, leaf.count_n - 4), leaf.count_n + 5)]
    text = s.either(
        f"How many {leaf.countable} are visible when {s.subj} {leaf.verb[1]} {s.obj}?",
        f"How many {leaf.countable} can be counted {leaf.place} in this scene?",
    )
    return Draft(text, str(leaf.count_n), pool)


def _ocr_problems(rng: np.random.Generator, s: Scene) -> Draft:
    leaf = s.leaf
    text = s.either(
        f"What text is shown on the {leaf.surface} {leaf.place}?",
        f"Which words appear on the {leaf.surface} while {s.subj} {leaf.verb[1]} {s.obj}?",
    )
    return Draft(text, f'"{leaf.sign}"', [f'"{sign}"' for sign in SIGN_TEXTS])


def _object_reasoning(rng: np.random.Generator, s: Scene) -> Draft:
    leaf = s.leaf
    answer = pick(rng, REASONS)
    text = s.either(
        f"Why does {s.subj} {leaf.verb[0]} {s.obj}?",
        f"What is the most likely purpose of {s.obj} in this scene {leaf.place}?",
    )
    return Draft(text, answer, list(REASONS))


def _action_reasoning(rng: np.random.Generator, s: Scene) -> Draft:
    leaf = s.leaf
    answer = pick(rng, REASONS)
    text = s.either(
        f"What is the most likely reason {s.subj} {leaf.verb[1]} {s.obj} {leaf.place}?",
        f"Why is {s.subj} {leaf.verb[2]} {s.obj}?",
    )
    return Draft(text, answer, list(REASONS))


def _information_synopsis(rng: np.random.Generator, s: Scene) -> Draft:
    vocab = s.vocab
    answer = s.video.synopsis
    pool = [answer]
    for _ in range(12):
        fake_cast = sample(rng, vocab["subjects"], 3)
        fake_places = sample(rng, vocab["places"], int(rng.integers(1, 4)))
        pool.append(synopsis(pick(rng, vocab["topics"]), fake_cast, fake_places))
    text = s.either("Which option best summarizes the video?", "What is this video mainly about?")
    return Draft(text, answer, pool)


def _temporal_reasoning(rng: np.random.Generator, s: Scene) -> Draft:
    leaf, leaves = s.leaf, s.video.leaves
    nxt = leaves[s.leaf_idx + 1]
    answer = cap(f"{nxt.subject} {nxt.verb[1]} the {nxt.color} {nxt.noun}")
    pool = [
        cap(f"{other.subject} {other.verb[1]} the {other.color} {other.noun}")
        for other in leaves
    ] + [cap(f"{s.subj} {v[1]} the {leaf.color} {n}") for v in VERBS[:4] for n in s.vocab["nouns"]]
    text = s.either(
        f"What happens right after {s.subj} {leaf.verb[1]} {s.obj}?",
        f"Once {s.subj} {leaf.verb[1]} {s.obj}, what is the next thing that happens?",
    )
    return Draft(text, answer, pool, [nxt])


def _temporal_perception(rng: np.random.Generator, s: Scene) -> Draft:
    leaf, duration_t = s.leaf, s.video.duration_t
    mid = (leaf.start + leaf.end) / 2
    third = 0 if mid < duration_t / 3 else (1 if mid < 2 * duration_t / 3 else 2)
    text = s.either(
        f"When in the video does {s.subj} {leaf.verb[0]} {s.obj}?",
        f"At what point of the video is {s.subj} seen {leaf.verb[2]} {s.obj}?",
    )
    return Draft(text, WHEN_OPTIONS[third], list(WHEN_OPTIONS))


def _spatial_perception(rng: np.random.Generator, s: Scene) -> Draft:
    leaf, subj = s.leaf, s.subj
    answer = f"{pick(rng, RELATIONS)} {subj}"
    text = s.either(
        f"Where is the {leaf.color} {leaf.noun} relative to {subj} {leaf.place}?",
        f"From the camera's point of view, where is {s.obj} placed relative to {subj}?",
    )
    return Draft(text, answer, [f"{r} {subj}" for r in RELATIONS])


def _spatial_reasoning(rng: np.random.Generator, s: Scene) -> Draft:
    leaf = s.leaf
    pool = [cap(f"the {c} {n}") for n in s.vocab["nouns"] for c in COLORS[:2]]
    text = s.either(
        f"Based on the layout of the scene {leaf.place}, which object is closest to {s.subj}?",
        f"If {s.subj} reached out without walking, which object could they touch first?",
    )
    return Draft(text, cap(f"the {leaf.color} {leaf.noun}"), pool)


#: Task type -> the function drafting a question of that type.
TASK_QUESTIONS: dict[str, Callable[[np.random.Generator, Scene], Draft]] = {
    "Action Recognition": _action_recognition,
    "Object Recognition": _object_recognition,
    "Attribute Perception": _attribute_perception,
    "Counting Problem": _counting_problem,
    "OCR Problems": _ocr_problems,
    "Object Reasoning": _object_reasoning,
    "Action Reasoning": _action_reasoning,
    "Information Synopsis": _information_synopsis,
    "Temporal Reasoning": _temporal_reasoning,
    "Temporal Perception": _temporal_perception,
    "Spatial Perception": _spatial_perception,
    "Spatial Reasoning": _spatial_reasoning,
}
