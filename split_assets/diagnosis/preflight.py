"""Everything a run can check before a judge is paid (``preflight``) and, for the dry run,
what the plan would cost (``dry_run_estimate``).

``preflight(inputs, partition, judge, estimate)`` receives the config's inputs, the partition
and its judge; it returns the plan and (``estimate``) a ``DryRunEstimate`` of its calls, tokens
and cost, whose ``lines`` the dry run prints."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from split_assets import envfile
from split_assets.diagnosis.cases import CaseSource
from split_assets.diagnosis.output_checks import check_outputs
from split_assets.diagnosis.plan import (
    DiagnosisPlan,
    check_before_diagnosis,
    is_infra_wrong,
    plan_for,
)
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.store.signals import SignalStore

if TYPE_CHECKING:
    from pathlib import Path

    from split_assets.judge import Judge, JudgeCase
    from split_assets.settings import PriceConfig
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

# the environment settings the README documents
SETTINGS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SPLIT_ASSETS_CONFIG", "DAGSTER_HOME",
            "SPLIT_ASSETS_LEASE_TTL_S", "SSL_CERT_FILE", "SSL_CERT_DIR")


@dataclass(frozen=True)
class DryRunEstimate:
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


def dry_run_estimate(judge: Judge, prompts_dir: Path, price: PriceConfig | None,
                     todo: list[JudgeCase], store: SignalStore) -> DryRunEstimate:
    """Calls and tokens the run would spend on ``todo``, cached answers excluded."""
    from split_assets.judge.prompts import load_templates

    per_question = judge.estimated_calls_per_question()
    if not todo or per_question == 0:
        return DryRunEstimate(0, 0, 0)
    templates = load_templates(prompts_dir, judge.required_templates())
    keys = {c.question.question_id: judge.request_key(c, templates) for c in todo}
    cached = store.cache_has(k for k in keys.values() if k is not None)
    paid = [c for c in todo if keys[c.question.question_id] not in cached]
    split = getattr(judge, "token_estimate", None)
    if split is None:  # a judge that cannot tell its shared prefix from the case
        return DryRunEstimate(len(todo) - len(paid), len(paid) * per_question,
                          sum(judge.estimated_tokens(c, templates) for c in paid))
    parts = [split(c, templates) for c in paid]
    prefix, case, completion = (sum(p[i] for p in parts) for i in range(3))
    return DryRunEstimate(len(todo) - len(paid), len(paid) * per_question,
                      prefix + case + completion, prefix, case, completion,
                      _cost(price, prefix, case, completion,
                            len(paid)))


@dataclass(frozen=True)
class Preflight:
    """What ``preflight`` found: the plan, and (``estimate``) its cost."""

    plan: DiagnosisPlan
    cost: DryRunEstimate | None
    unset: tuple[str, ...] = ()  # settings a run will need that the dry run did without

    def lines(self, preds: list[CanonicalPrediction],
              partition: Partition) -> list[tuple[str, object]]:
        """The dry run's ``key=value`` lines."""
        plan, cost = self.plan, self.cost or DryRunEstimate(0, 0, 0)
        return [("fingerprint", partition.key), ("split_id", partition.split_id),
                ("questions", len(preds)), ("wrong", sum(not p.correct for p in preds)),
                ("infra_t0", sum(is_infra_wrong(p) for p in preds)),
                ("to_diagnose", len(plan.todo)), ("already_diagnosed", plan.already_done),
                ("settled_degraded", len(plan.settled)), *cost.lines(),
                ("out_dir", partition.out_dir),
                # where each environment setting came from (names only, never values)
                *((f"source.{name}", where) for name, where in envfile.sources(SETTINGS)),
                *((f"source.{name}", "unset (a run needs it to send)") for name in self.unset)]


def preflight(inputs: Inputs, partition: Partition, judge: Judge,
              estimate: bool = False, refreeze: bool = False) -> Preflight:
    """Everything checkable before a judge is paid, reading only: the plan, the judge's
    context of what it will diagnose (a missing trace or tree fails now), the endpoint's
    environment, the counts that can show the split is impossible; ``estimate``: the calls
    and tokens the plan would spend; ``refreeze``: a new split may be frozen after a test
    look at another split of the baseline (``evaluation/exposure.py``)."""
    from split_assets.evaluation.exposure import check_refreeze
    from split_assets.sources.harness_db import predictions_digest

    diag = inputs.diag
    with partition.store(read_only=True) as store:
        check_refreeze(store, partition, predictions_digest(inputs.predictions), refreeze)
        plan = plan_for(inputs.predictions, partition, store)
        # a run only checks that every trace and tree is there (diagnosis reads them per
        # leased batch); the estimate renders every prompt
        source = CaseSource(inputs, plan.todo, batched=not estimate)
        cases = source.cases(plan.todo) if estimate else []
        unset: tuple[str, ...] = ()
        if diag.judge == "openai":  # the key is needed only to send: the estimate sends nothing
            from split_assets.judge.call_policy import KEY_VAR, check_environment

            if not estimate:
                check_environment()
            elif not os.environ.get(KEY_VAR):
                unset = (KEY_VAR,)
        check_before_diagnosis(inputs.video_split, len(inputs.benchmark.videos),
                               inputs.predictions, store.rows(partition.run_id, partition.key))
        check_outputs(partition.paths.signals_db, partition.paths.out_dir)
        _ = inputs.balanced_runs  # every video_split.balance_runs run is in the harness db
        if diag.context == "full":  # every trace the split's digests will read, as they read
            # it (diagnosed or not: a node its tree lacks is refused now, not after the steps);
            # the same pairs the freeze asks for, kept by the inputs, so it reuses them (the
            # dry run leaves the digest cache alone: it writes nothing)
            inputs.context_digests(sorted((p.question_id, p.video_id)
                                          for p in inputs.predictions if not p.correct),
                                   cached=not estimate)
        return Preflight(plan, dry_run_estimate(judge, inputs.paths.prompts_dir,
                                                diag.openai.price, cases, store)
                         if estimate else None, unset)
