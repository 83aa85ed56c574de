"""The config file's sections (``video_split``, ``diag``, ``evaluation``, ``paths``) as
pydantic models, each validated on its own keys; the judge's own sections are in
``judge_sections.py``. Validation is strict: no string, bool or float where an integer is meant
(a float key still takes an integer)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from split_assets.settings.judge_sections import (
    OpenAIJudgeConfig,
    RulesJudgeConfig,
)
from split_assets.settings.judge_sections import (
    Section as _Section,
)
from split_assets.sources.benchmark import Levels
from split_assets.sources.letters import LetterRule


def validation_size(val_ratio: float, n_trainval: int) -> int:
    """Validation videos out of ``n_trainval``: floor(val_ratio * n_trainval + 0.5) (SPEC §6.2)."""
    return int(val_ratio * n_trainval + 0.5)


class VideoSplitConfig(_Section):
    """The ``video_split`` section: what the split must satisfy."""

    baseline_run_id: str = Field(min_length=1, description="The run in the harness db to split on.")
    n_trainval: int = Field(ge=1, description="Trainval videos, exactly; test is every other "
                            "video.")
    epsilon: float = Field(gt=0, le=1, description="The largest |test share - global share| of "
                           "each constrained category (a fraction).")
    report_floor: int = Field(ge=0, description="Task types with at least this many questions "
                              "are constrained by epsilon.")
    val_wrong_min: int = Field(ge=0, description="Validation must hold at least this many "
                               "baseline-wrong questions (check mcnemar_power); 0 turns it off.")
    val_ratio: float = Field(ge=0, le=1, description="Validation videos are "
                             "`floor(val_ratio * n_trainval + 0.5)` of the trainval videos.")
    seed: int = Field(description="The seed of every random choice.")
    floor_k: dict[str, int] = Field(
        default_factory=dict, description="The fewest non-degraded T2 per task type in "
        "trainval (`{}`: none given); wins over `floor_share` for the task types it names.")
    # issue 45: floors that follow the diagnoses, for a first run without hand-tuning
    floor_share: float | None = Field(
        default=None, ge=0, le=1, description="The share of each task type's available "
        "non-degraded T2 that trainval must hold: floor = floor(floor_share x available); "
        "null: only `floor_k` floors.")
    # issue 45: other runs whose correctness the test pool keeps representative
    balance_runs: list[str] = Field(
        default_factory=list, description="Runs (references) whose correctness test keeps "
        "representative beside the baseline's, so test stays representative for models like "
        "them; `[]`: the baseline only.")
    # the question field the difficulty levels come from (None: the benchmark has none, and
    # only task types and accuracy are balanced); a numeric field is cut at difficulty_edges
    difficulty_field: str | None = Field(
        default="duration", description="The question field that holds difficulty; null: the "
        "benchmark has none and every question is of one level.")
    difficulty_edges: list[float] | None = Field(
        default=None, description="Strictly increasing edges that cut a numeric difficulty "
        "field into levels (a value <= edges[0] is the first); null: each value is a level.")
    difficulty_levels: list[str] | None = Field(  # names of the len(edges) + 1 levels
        default=None, description="Names of the len(difficulty_edges) + 1 levels, e.g. "
        "`[short, medium, long]`; null: `<=e0`, `e0-e1`, ..., `>eN`.")
    # how a reply's option letter is read: the benchmark's own scorer (sources/letters.py)
    letter_rule: LetterRule = Field(
        default="videomme", description="How a reply's option letter is read (the benchmark's "
        "own scorer), for every run of the workspace.")
    missing_predictions: Literal["error", "infra"] = Field(
        default="error", description="`error`, or `infra`: a question without a prediction "
        "counts as INFRA (T0).")
    infra_stop_reasons: list[str] = Field(
        default_factory=lambda: ["error", "parse_error"],
        description="Stop reasons that make a wrong answer INFRA (T0).")
    # auto: per-video swap search up to 5,000 videos, classes of interchangeable videos above
    selector: Literal["auto", "swap_search", "class_lp"] = Field(
        default="auto", description="How trainval is picked: `swap_search`, `class_lp`, or "
        "`auto` (`swap_search` up to 5,000 videos, `class_lp` above).")
    balance: list[str] = Field(  # extra question fields kept representative
        default_factory=list, description="Extra question fields kept representative in test, "
        "e.g. `[domain]` (not constrained by epsilon).")
    epsilon_accuracy: float | None = Field(
        default=None, gt=0, le=1, description="The largest |test baseline accuracy - global| "
        "(a fraction); null: accuracy is balanced but not bounded.")

    def model_post_init(self, __context: Any) -> None:
        for task_type, floor in self.floor_k.items():
            if floor < 0:
                raise ValueError(f"floor_k[{task_type!r}] must be >= 0, got {floor}")
        check_difficulty_levels(self.difficulty_field, self.difficulty_edges,
                                self.difficulty_levels)

    @model_validator(mode="after")
    def _train_pool_not_empty(self) -> VideoSplitConfig:
        n_val = validation_size(self.val_ratio, self.n_trainval)
        if n_val >= self.n_trainval:
            raise ValueError(
                f"val_ratio {self.val_ratio} leaves no training videos: floor(val_ratio * "
                f"n_trainval + 0.5) = {n_val} of the {self.n_trainval} trainval videos would be "
                "validation; lower val_ratio (e.g. 0.3) or raise n_trainval")
        return self

    @field_validator("balance")
    @classmethod
    def _extra_fields_only(cls, balance: list[str], info: ValidationInfo) -> list[str]:
        own = {"task_type", "difficulty", "question_id", "video_id", "answer", "question",
               "options", info.data.get("difficulty_field", "duration")}
        for name in balance:
            if name in own:
                raise ValueError(f"{name!r} is balanced already or cannot be balanced; list "
                                 "extra question fields only (e.g. domain)")
        if len(set(balance)) != len(balance):
            raise ValueError("a field is listed twice")
        return balance

    @field_validator("balance_runs")
    @classmethod
    def _runs_once(cls, runs: list[str], info: ValidationInfo) -> list[str]:
        if len(set(runs)) != len(runs):
            raise ValueError("a run is listed twice")
        if info.data.get("baseline_run_id") in runs:
            raise ValueError(f"lists the baseline run {info.data['baseline_run_id']!r}, whose "
                             "accuracy is balanced already; list other runs")
        return runs

    @property
    def levels(self) -> Levels:
        """How the benchmark's questions get their difficulty level."""
        return Levels.of(self.difficulty_field, self.difficulty_edges, self.difficulty_levels)

    def identity(self) -> dict[str, Any]:
        """The section as ``split_id`` hashes it: keys added after the first release are left
        out while they hold their defaults, so an older config keeps its split_id (and its
        selection, which those defaults do not change)."""
        data = self.model_dump(mode="json")
        for key, default in _LATER_KEYS.items():
            if data[key] == default:
                del data[key]
        return data


_LATER_KEYS: dict[str, Any] = {"selector": "auto", "balance": [], "epsilon_accuracy": None,
                               "difficulty_edges": None, "difficulty_levels": None,
                               "letter_rule": "videomme", "floor_share": None,
                               "balance_runs": []}
# added with issues 26 and 45: left out of the manifest's config snapshot while they hold their
# defaults
QUIET_KEYS = ("difficulty_edges", "difficulty_levels", "letter_rule", "floor_share",
              "balance_runs")


def check_difficulty_levels(name: str | None, edges: list[float] | None,
                            levels: list[str] | None) -> None:
    """Edges strictly increasing, one name per level, no edges without a field."""
    if edges is None:
        if levels is not None:
            raise ValueError("difficulty_levels needs difficulty_edges (the levels of a "
                             "numeric difficulty field)")
        return
    if name is None:
        raise ValueError("difficulty_edges needs a difficulty_field to cut")
    if not edges or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"difficulty_edges {edges} must be a non-empty, strictly increasing "
                         "list of numbers")
    if levels is not None and (len(levels) != len(edges) + 1 or len(set(levels)) != len(levels)):
        raise ValueError(f"difficulty_levels must name {len(edges) + 1} distinct levels (one "
                         f"more than the {len(edges)} edges), got {levels}")




class DiagConfig(_Section):
    """The ``diag`` section: which judge diagnoses the wrong answers, and how."""

    prompt_version: str = Field(min_length=1, description="Version label of the prompt set.")
    model: str = Field(min_length=1, description="The judge model; for the rules judge, its "
                       "rule-set version.")
    judge: Literal["rules", "openai"] = Field(description="`rules` (offline) or `openai` (an "
                                              "OpenAI-compatible endpoint).")
    context: Literal["full", "answer_only"] = Field(
        description="`full` (trace, tree, skills) or `answer_only` (question, options, answer "
        "and response only: imported results).")
    # the most judge calls in flight per diagnosis step: the openai judge learns how many the
    # endpoint serves at once (diag.openai.adaptive), starting here when it is given
    concurrency: int = Field(default=64, ge=1, description="The most judge calls in flight "
                             "per diagnosis step; when given, also where the openai judge starts.")
    # diagnosis steps of a run (parallel under the multiprocess, celery or k8s executor); not
    # fingerprinted: leases keep the steps from paying twice for a question
    shards: int = Field(default=1, ge=1, le=64, description="Diagnosis steps per run, sharing "
                        "the work through leases.")
    skills_version: str = Field(default="v1", description="The skills' folder, "
                                "`store/skills/<version>/`.")
    prompts_dir: str | None = Field(default=None, description="The prompt templates' folder; "
                                    "null: the `prompts/` shipped with the package.")
    rules: RulesJudgeConfig = Field(default_factory=RulesJudgeConfig,
                                    description="Settings of the rules judge.")
    openai: OpenAIJudgeConfig = Field(default_factory=OpenAIJudgeConfig,
                                      description="Settings of the openai judge.")
    # answer_only rules judge: a wrong answer also wrong in >= min_agree of these runs is T2
    reference_runs: list[str] = Field(
        default_factory=list, description="Answer_only rules judge: other runs of the same "
        "benchmark; a wrong answer also wrong in enough of them is T2.")
    min_agree: int | None = Field(  # None: all the reference runs
        default=None, ge=1, description="Answer_only rules judge: how many reference runs must "
        "also be wrong for T2; null: all of them.")
    # not fingerprinted: what the judge is compared with, and how good it must be
    compare_with: str | None = Field(
        default=None, pattern=r"^fp-[0-9a-f]{12}$", description="Another fingerprint: "
        "diagnosis_signals shows how far the two judges agree.")
    min_kappa: float | None = Field(
        default=None, ge=-1.0, le=1.0, description="The judge_agreement check blocks the split "
        "when kappa against the human labels is below it; null: the check only informs.")

    def model_post_init(self, __context: Any) -> None:
        if len(set(self.reference_runs)) != len(self.reference_runs):
            raise ValueError("reference_runs lists a run twice")
        if self.min_agree is not None and self.min_agree > len(self.reference_runs):
            raise ValueError(f"min_agree is {self.min_agree} but reference_runs lists "
                             f"{len(self.reference_runs)} run(s)")

    @property
    def start_concurrency(self) -> int | None:
        """Where the openai judge starts: diag.concurrency when given; None: where an earlier
        run of this judge ended (telemetry), else START_CONCURRENCY."""
        return self.concurrency if "concurrency" in self.model_fields_set else None

    @property
    def agree_needed(self) -> int:
        """Reference runs that must also be wrong for a T2 (answer_only rules judge)."""
        return self.min_agree if self.min_agree is not None else len(self.reference_runs)


class EvaluationConfig(_Section):
    """The ``evaluation`` section: candidate runs compared with the baseline on the frozen
    pools (the candidate_evaluation asset, ``split-assets compare``)."""

    candidates: list[str] = Field(default_factory=list, description="Runs the "
                                  "candidate_evaluation asset compares with the baseline.")
    control_run: str | None = Field(default=None, description="A fresh re-run of the baseline "
                                    "agent: gains are reported net of its gain.")
    # expected share of discordant pairs for the power figures (None: measured between the
    # baseline and the reference runs, else 0.15)
    discordance: float | None = Field(
        default=None, gt=0, le=1, description="Expected share of discordant pairs for the power "
        "figures; null: measured against the reference runs, else 0.15.")
    # split-assets feedback: its significant flag tests at alpha / feedback_budget, valid for
    # up to that many submissions however they were chosen
    feedback_budget: int = Field(
        default=100, ge=1, description="How many submissions an evolution loop makes to "
        "`split-assets feedback` (its significance level is 0.05 / this).")
    # split-assets compare --pool test: each distinct candidate's answers on test is a look,
    # tested at alpha / test_looks_max; a look beyond it is refused unless --spend-test-look
    # (None: no budget; the report gives Holm-adjusted p-values over the looks so far)
    test_looks_max: int | None = Field(
        default=None, ge=1, description="The budget of looks at test, shared by every split of "
        "the baseline (each tested at 0.05 / this); null: no budget.")


class PathsConfig(_Section):
    """The ``paths`` section, relative to the config file's folder."""

    questions_dir: str = Field(default="questions", description="The benchmark's files.")
    harness_db: str = Field(default="harness.db", description="The agent's SQLite db, opened "
                            "read-only.")
    store_dir: str = Field(default="store", description="Trees and skills.")
    signals_db: str = Field(default="signals.db", description="The signal store: a SQLite file "
                            "(never the harness db) or a `postgresql://` URL without a password.")
    out_dir: str = Field(default="splits", description="Frozen splits, in "
                         "`out_dir/<fingerprint>/<split_id>/`.")


class SplitConfig(_Section):
    """The whole config file."""

    video_split: VideoSplitConfig = Field(description="What the split must satisfy.")
    diag: DiagConfig = Field(description="The judge of the baseline's wrong answers.")
    paths: PathsConfig = Field(default_factory=PathsConfig,
                               description="Where the inputs and outputs are.")
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig,
                                         description="Candidates against the frozen pools.")

    def model_post_init(self, __context: Any) -> None:
        baseline = self.video_split.baseline_run_id
        if baseline in self.diag.reference_runs:
            raise ValueError(f"diag.reference_runs lists the baseline run {baseline!r}; list "
                             "other runs of the same benchmark")
