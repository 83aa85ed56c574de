"""The split's input: questions grouped by video, correctness and tiers, the constrained
categories and their global shares. Plain data, no Dagster."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from split_assets.config import VideoSplitConfig


@dataclass(frozen=True, slots=True)
class SplitQuestion:
    """What the split knows of one question."""

    question_id: str
    video_id: str
    task_type: str
    difficulty: str
    correct: bool
    tier: str | None = None       # None for correct answers; T0, T1 or T2 otherwise
    degraded: bool = False
    balance: tuple[str, ...] = ()  # values of the problem's ``balance`` fields, in that order

    @property
    def is_floor_t2(self) -> bool:
        """Counts toward a floor: a non-degraded T2 diagnosis."""
        return self.tier == "T2" and not self.degraded


@dataclass(frozen=True)
class Category:
    """A balanced category: a task type or a difficulty level (constrained by epsilon), or a
    value of a ``balance`` field (balanced, not constrained)."""

    dimension: str   # "task_type", "difficulty" or a balance field
    value: str

    @property
    def label(self) -> str:
        return f"{self.dimension}={self.value}"


@dataclass(frozen=True)
class SplitProblem:
    """Everything the selection and the validation draw need."""

    questions: tuple[SplitQuestion, ...]
    n_trainval: int
    epsilon: float
    report_floor: int
    val_ratio: float
    seed: int
    floor_k: dict[str, int]
    balance: tuple[str, ...] = ()
    epsilon_accuracy: float | None = None
    selector: str = "auto"
    val_wrong_min: int = 0
    videos: dict[str, list[SplitQuestion]] = field(init=False, repr=False)
    categories: list[Category] = field(init=False, repr=False)
    balanced: list[Category] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        videos: dict[str, list[SplitQuestion]] = {}
        for q in sorted(self.questions, key=lambda q: q.question_id):
            videos.setdefault(q.video_id, []).append(q)
        object.__setattr__(self, "videos", {v: videos[v] for v in sorted(videos)})
        task_counts = Counter(q.task_type for q in self.questions)
        cats = [Category("task_type", t) for t in sorted(task_counts)
                if task_counts[t] >= self.report_floor]
        cats += [Category("difficulty", d) for d in sorted({q.difficulty for q in self.questions})]
        object.__setattr__(self, "categories", cats)
        extra = []  # values of a balance field with >= report_floor questions, like task types
        for i, name in enumerate(self.balance):
            counts = Counter(q.balance[i] for q in self.questions)
            extra += [Category(name, v) for v in sorted(counts) if counts[v] >= self.report_floor]
        object.__setattr__(self, "balanced", extra)

    @classmethod
    def from_config(cls, questions: list[SplitQuestion], cfg: VideoSplitConfig) -> SplitProblem:
        return cls(tuple(questions), cfg.n_trainval, cfg.epsilon, cfg.report_floor,
                   cfg.val_ratio, cfg.seed, dict(cfg.floor_k), tuple(cfg.balance),
                   cfg.epsilon_accuracy, cfg.selector, cfg.val_wrong_min)

    @property
    def n_validation(self) -> int:
        """Validation videos: floor(val_ratio * n_trainval + 0.5)."""
        return int(self.val_ratio * self.n_trainval + 0.5)


    def value_of(self, q: SplitQuestion, dimension: str) -> str:
        """``q``'s value on a balanced dimension."""
        if dimension == "task_type":
            return q.task_type
        if dimension == "difficulty":
            return q.difficulty
        return q.balance[self.balance.index(dimension)]


def category_of(q: SplitQuestion, cat: Category) -> bool:
    """Whether ``q`` is in a constrained category (task type or difficulty)."""
    return (q.task_type if cat.dimension == "task_type" else q.difficulty) == cat.value
