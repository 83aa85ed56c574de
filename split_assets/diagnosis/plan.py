"""What a run diagnoses, decided once: the dry run prints this plan and the run carries it
out (``tests/diagnosis/test_plan.py`` checks they agree)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from split_assets import envfile
from split_assets.data.harness import CanonicalPrediction
from split_assets.data.signals import SignalRow, SignalStore
from split_assets.errors import ConfigError, InfeasibleSplitError
from split_assets.split.sizes import (
    most_wrong_in_validation,
    require_test_pool,
    validation_size,
)

# the environment settings the README documents
SETTINGS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SPLIT_ASSETS_CONFIG", "DAGSTER_HOME",
            "SPLIT_ASSETS_LEASE_TTL_S", "SSL_CERT_FILE", "SSL_CERT_DIR")

if TYPE_CHECKING:
    from split_assets.config import PriceConfig, VideoSplitConfig
    from split_assets.judge import JudgeCase
    from split_assets.workspace import Workspace


def is_infra_wrong(p: CanonicalPrediction) -> bool:
    """A wrong INFRA answer: a T0 row, never sent to the judge."""
    return not p.correct and p.infra


def wrong_to_diagnose(preds: Iterable[CanonicalPrediction]) -> list[CanonicalPrediction]:
    """Wrong, non-INFRA answers: the ones the judge sees."""
    return [p for p in preds if not p.correct and not p.infra]


@dataclass(frozen=True)
class DiagnosisPlan:
    """``wrong``: every answer the judge sees; ``todo``: those not done (store ``DONE``) and
    not settled by a frozen split; ``settled``: degraded answers a frozen split accepted."""

    wrong: list[CanonicalPrediction]
    todo: list[CanonicalPrediction]
    settled: frozenset[str]

    @property
    def already_done(self) -> int:
        return len(self.wrong) - len(self.todo)

    @property
    def todo_ids(self) -> list[str]:
        return [p.question_id for p in self.todo]

    def shard(self, index: int, count: int) -> DiagnosisPlan:
        """Shard ``index`` of ``count``: the same questions, its own stripe first. Leases keep
        the shards from paying twice for one; a shard done with its stripe helps with the rest
        (a slow or dead shard holds nobody up)."""
        if count <= 1:
            return self
        mine = self.todo[index::count]
        ids = {p.question_id for p in mine}
        return DiagnosisPlan(self.wrong, mine + [p for p in self.todo if p.question_id not in ids],
                             self.settled)


def plan_diagnosis(preds: list[CanonicalPrediction], done: set[str],
                   settled: frozenset[str]) -> DiagnosisPlan:
    wrong = wrong_to_diagnose(preds)
    todo = [p for p in wrong if p.question_id not in done and p.question_id not in settled]
    return DiagnosisPlan(wrong, todo, settled & {p.question_id for p in wrong})


def infra_rows(preds: Iterable[CanonicalPrediction], run_id: str,
               fingerprint: str) -> list[SignalRow]:
    """T0 rows for every wrong INFRA answer of ``preds`` (never sent to the judge), for the
    partition ``fingerprint`` of baseline run ``run_id``."""
    return [SignalRow(question_id=p.question_id, baseline_run_id=run_id,
                      diag_fingerprint=fingerprint, video_id=p.video_id,
                      task_type=p.task_type, tier="T0", infra=True, session_id=p.session_id,
                      rationale=infra_cause(p))
            for p in preds if is_infra_wrong(p)]


def infra_cause(p: CanonicalPrediction) -> str:
    """Why an answer counts as INFRA: missing prediction, stop reason, or no letter."""
    if p.missing:
        return "missing_prediction"
    if p.letter == "":
        return f"empty_prediction ({p.stop_reason})" if p.stop_reason else "empty_prediction"
    return f"stop_reason:{p.stop_reason}"


def check_before_diagnosis(settings: VideoSplitConfig, n_videos: int,
                           preds: list[CanonicalPrediction], rows: Iterable[SignalRow]) -> None:
    """Every feasibility check that needs only counts, made before any judge call (a paid
    judge must not be paid for a split that cannot be made): n_trainval against the videos,
    val_wrong_min against the most wrong answers any validation draw can hold, and each floor
    against the T2 already known plus the wrong answers not yet diagnosed. ``preds``: the
    baseline's canonical predictions; ``rows``: the partition's signal rows so far."""
    vs = settings
    require_test_pool(vs.n_trainval, n_videos)
    n_val = validation_size(vs.val_ratio, vs.n_trainval)
    wrong_by_video = Counter(p.video_id for p in preds if not p.correct)
    most = most_wrong_in_validation(wrong_by_video.values(), n_val)
    if vs.val_wrong_min > most:
        raise ConfigError(f"val_wrong_min {vs.val_wrong_min} cannot be met: {n_val} validation "
                          f"videos hold at most {most} baseline-wrong questions",
                          "video_split.val_wrong_min",
                          "lower val_wrong_min, or raise val_ratio or n_trainval")
    if vs.floor_k:
        _check_floors(vs.floor_k, preds, rows)


def _check_floors(floor_k: dict[str, int], preds: list[CanonicalPrediction],
                  rows: Iterable[SignalRow]) -> None:
    by_question = {r.question_id: r for r in rows}
    known: Counter[str] = Counter()
    open_: Counter[str] = Counter()
    for p in wrong_to_diagnose(preds):
        row = by_question.get(p.question_id)
        if row is None or row.degraded or row.infra:
            open_[p.task_type] += 1
        elif row.tier == "T2":
            known[p.task_type] += 1
    short = [f"{t}: floor {k}, at most {known[t] + open_[t]} ({known[t]} T2 known, "
             f"{open_[t]} not yet diagnosed)"
             for t, k in sorted(floor_k.items()) if k > known[t] + open_[t]]
    if short:
        raise InfeasibleSplitError(f"floor_k cannot be met even if every open diagnosis were "
                                   f"T2: {'; '.join(short)}", "video_split.floor_k",
                                   "lower these floors (nothing was sent to the judge)")


@dataclass(frozen=True)
class DryRunPlan:
    """What a run would cost: answers already in the response cache cost no call. Prompt
    tokens split into the prefix shared by every call (cacheable by the provider) and the
    cases' own; ``cost``: USD with and without the prefix at the cached-input price."""

    cached: int
    calls: int
    tokens: int
    prefix_tokens: int = 0
    case_tokens: int = 0
    completion_tokens: int = 0
    cost: dict[str, float] | None = None

    def lines(self) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = [
            ("cached_answers", self.cached), ("estimated_calls", self.calls),
            ("estimated_tokens", self.tokens),
            ("estimated_prompt_tokens_cacheable_prefix", self.prefix_tokens),
            ("estimated_prompt_tokens_case", self.case_tokens),
            ("estimated_completion_tokens", self.completion_tokens)]
        if self.cost is not None:
            out += [("estimated_cost_usd", self.cost["cached_prefix"]),
                    ("estimated_cost_usd_no_cache", self.cost["no_cache"])]
        return out


def _cost(price: PriceConfig | None, prefix: int, case: int, completion: int,
          calls: int) -> dict[str, float] | None:
    """USD for the tokens; with caching, the prefix of every call after the first is cached."""
    if price is None:
        return None
    cached = prefix - prefix // max(calls, 1)

    def usd(cached_tokens: int) -> float:
        paid = prefix + case - cached_tokens
        return round((paid * price.input + cached_tokens * price.cached_input
                      + completion * price.output) / 1e6, 4)
    return {"no_cache": usd(0), "cached_prefix": usd(cached)}


def dry_run_estimate(ws: Workspace, todo: list[JudgeCase], store: SignalStore) -> DryRunPlan:
    """Calls and tokens the run would spend on ``todo``, cached answers excluded."""
    from split_assets.judge.prompts import load_templates

    judge = ws.judge
    per_question = judge.estimated_calls_per_question()
    if not todo or per_question == 0:
        return DryRunPlan(0, 0, 0)
    templates = load_templates(ws.loaded.paths.prompts_dir, judge.required_templates())
    keys = {c.question.question_id: judge.request_key(c, templates) for c in todo}
    cached = store.cache_has(k for k in keys.values() if k is not None)
    paid = [c for c in todo if keys[c.question.question_id] not in cached]
    split = getattr(judge, "token_estimate", None)
    if split is None:  # a judge that cannot tell its shared prefix from the case
        return DryRunPlan(len(todo) - len(paid), len(paid) * per_question,
                          sum(judge.estimated_tokens(c, templates) for c in paid))
    parts = [split(c, templates) for c in paid]
    prefix, case, completion = (sum(p[i] for p in parts) for i in range(3))
    return DryRunPlan(len(todo) - len(paid), len(paid) * per_question,
                      prefix + case + completion, prefix, case, completion,
                      _cost(ws.loaded.config.diag.openai.price, prefix, case, completion,
                            len(paid)))


@dataclass(frozen=True)
class Preflight:
    """What ``preflight`` found: the plan, and (``estimate``) its cost."""

    plan: DiagnosisPlan
    cost: DryRunPlan | None

    def lines(self, ws: Workspace) -> list[tuple[str, object]]:
        """The dry run's ``key=value`` lines."""
        preds, plan, cost = ws.predictions, self.plan, self.cost or DryRunPlan(0, 0, 0)
        return [("fingerprint", ws.fingerprint.key), ("split_id", ws.split_id),
                ("questions", len(preds)), ("wrong", sum(not p.correct for p in preds)),
                ("infra_t0", sum(is_infra_wrong(p) for p in preds)),
                ("to_diagnose", len(plan.todo)), ("already_diagnosed", plan.already_done),
                ("settled_degraded", len(plan.settled)), *cost.lines(),
                ("out_dir", ws.out_dir),
                # where each environment setting came from (names only, never values)
                *((f"source.{name}", where) for name, where in envfile.sources(SETTINGS))]


def preflight(ws: Workspace, estimate: bool = False) -> Preflight:
    """Everything checkable before a judge is paid, reading only: the plan, the judge's
    context of what it will diagnose (a missing trace or tree fails now), the endpoint's
    environment, the counts that can show the split is impossible; ``estimate``: the calls
    and tokens the plan would spend."""
    with ws.store(read_only=True) as store:
        plan = ws.diagnosis_plan(store)
        # a run only checks that every trace and tree is there (diagnosis reads them per
        # leased batch); the estimate renders every prompt
        source = ws.case_source(plan.todo, batched=not estimate)
        cases = source.cases(plan.todo) if estimate else []
        if ws.loaded.config.diag.judge == "openai":
            from split_assets.judge.governed import check_environment

            check_environment()
        check_before_diagnosis(ws.loaded.config.video_split, len(ws.benchmark.videos),
                               ws.predictions, store.rows(ws.run_id, ws.fingerprint.key))
        return Preflight(plan, dry_run_estimate(ws, cases, store) if estimate else None)
