"""The split's input: questions grouped by video, correctness and tiers, the constrained
categories and their global shares. Plain data, no Dagster."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

from split_assets.settings import VideoSplitConfig
from split_assets.settings.sections import validation_size


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
    # each balanced run's correctness (``balance_runs``, in that order); None: not answered
    runs: tuple[bool | None, ...] = ()

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


@dataclass(frozen=True, kw_only=True)
class SelectionSettings:
    """How trainval is chosen (the ``video_split`` keys of the selection)."""

    n_trainval: int
    epsilon: float
    report_floor: int = 0
    floor_k: dict[str, int] = field(default_factory=dict)
    balance: tuple[str, ...] = ()  # question fields balanced (not constrained) like task types
    epsilon_accuracy: float | None = None
    selector: str = "auto"
    seed: int = 0  # the split's seed: the selection's order, and the validation draw's salt
    balance_runs: tuple[str, ...] = ()  # runs whose correctness test keeps representative
    floor_share: float | None = None  # floors from the diagnoses (floor_k wins where it names)


@dataclass(frozen=True, kw_only=True)
class ValidationSettings:
    """How trainval is split into train and validation (seeded with the split's seed)."""

    val_ratio: float
    val_wrong_min: int = 0


@dataclass(frozen=True)
class SplitProblem:
    """Everything the selection and the validation draw need: the data (questions, grouped by
    video) and, apart from it, the two algorithms' settings (keyword-only, frozen)."""

    questions: tuple[SplitQuestion, ...]
    selection: SelectionSettings = field(kw_only=True)
    validation: ValidationSettings = field(kw_only=True)
    videos: dict[str, list[SplitQuestion]] = field(init=False, repr=False)
    categories: list[Category] = field(init=False, repr=False)
    balanced: list[Category] = field(init=False, repr=False)
    run_columns: list[Category] = field(init=False, repr=False)
    floors: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        videos: dict[str, list[SplitQuestion]] = {}
        for q in sorted(self.questions, key=lambda q: q.question_id):
            videos.setdefault(q.video_id, []).append(q)
        object.__setattr__(self, "videos", {v: videos[v] for v in sorted(videos)})
        task_counts = Counter(q.task_type for q in self.questions)
        cats = [Category("task_type", t) for t in sorted(task_counts)
                if task_counts[t] >= self.selection.report_floor]
        cats += [Category("difficulty", d) for d in sorted({q.difficulty for q in self.questions})]
        object.__setattr__(self, "categories", cats)
        extra = []  # values of a balance field with >= report_floor questions, like task types
        for i, name in enumerate(self.selection.balance):
            counts = Counter(q.balance[i] for q in self.questions)
            extra += [Category(name, v) for v in sorted(counts)
                      if counts[v] >= self.selection.report_floor]
        object.__setattr__(self, "balanced", extra)
        width = len(self.selection.balance_runs)
        if any(len(q.runs) != width for q in self.questions):
            raise ValueError(f"every question needs one outcome per balanced run ({width}: "
                             f"{', '.join(self.selection.balance_runs) or 'none'})")
        runs = []  # a balanced run's correct answers; its answered ones when it is partial
        for i, run in enumerate(self.selection.balance_runs):
            runs.append(Category("run_correct", run))
            if any(q.runs[i] is None for q in self.questions):
                runs.append(Category("run_answered", run))
        object.__setattr__(self, "run_columns", runs)
        object.__setattr__(self, "floors", effective_floors(self.questions, self.selection))

    @classmethod
    def from_config(cls, questions: list[SplitQuestion], cfg: VideoSplitConfig) -> SplitProblem:
        return cls(tuple(questions),
                   selection=SelectionSettings(
                       n_trainval=cfg.n_trainval, epsilon=cfg.epsilon,
                       report_floor=cfg.report_floor, floor_k=dict(cfg.floor_k),
                       balance=tuple(cfg.balance), epsilon_accuracy=cfg.epsilon_accuracy,
                       selector=cfg.selector, seed=cfg.seed,
                       balance_runs=tuple(cfg.balance_runs), floor_share=cfg.floor_share),
                   validation=ValidationSettings(val_ratio=cfg.val_ratio,
                                                 val_wrong_min=cfg.val_wrong_min))

    @property
    def n_validation(self) -> int:
        """Validation videos: floor(val_ratio * n_trainval + 0.5)."""
        return validation_size(self.validation.val_ratio, self.selection.n_trainval)

    def value_of(self, q: SplitQuestion, dimension: str) -> str:
        """``q``'s value on a balanced dimension."""
        if dimension == "task_type":
            return q.task_type
        if dimension == "difficulty":
            return q.difficulty
        return q.balance[self.selection.balance.index(dimension)]


def available_t2(questions: tuple[SplitQuestion, ...]) -> dict[str, int]:
    """Non-degraded T2 per task type in the whole benchmark (every task type listed)."""
    counts = Counter(q.task_type for q in questions if q.is_floor_t2)
    return {t: counts[t] for t in sorted({q.task_type for q in questions})}


def effective_floors(questions: tuple[SplitQuestion, ...],
                     selection: SelectionSettings) -> dict[str, int]:
    """The T2 floor per task type: ``floor(floor_share x available)`` for every task type when
    ``floor_share`` is set (exact: the share is read as the decimal it was written as), and
    ``floor_k``'s own figure for each task type it names (it wins)."""
    floors: dict[str, int] = {}
    if selection.floor_share is not None:
        share = Fraction(str(selection.floor_share))
        floors = {t: int(share * n) for t, n in available_t2(questions).items()}
    floors.update(selection.floor_k)
    return dict(sorted(floors.items()))


def category_of(q: SplitQuestion, cat: Category) -> bool:
    """Whether ``q`` is in a constrained category (task type or difficulty)."""
    return (q.task_type if cat.dimension == "task_type" else q.difficulty) == cat.value
