"""What the split card shows, gathered once as plain data: the manifest's figures (sizes,
distributions, deviation, floors, tiers, accuracy, power, provenance) as they were frozen,
the pools per task type (from the split problem the manifest was computed from), the judge's
calls and tokens, its agreement where measured, and the ledger: looks per pool and the
Ladder's leaderboard replayed over the feedback submissions."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from split_assets.evaluation.comparison import load_pools
from split_assets.evaluation.feedback import ladder_submissions
from split_assets.evaluation.reuse import Ladder
from split_assets.evaluation.shared_budget import SharedBudget
from split_assets.split.layout import POOLS

if TYPE_CHECKING:
    from split_assets.split.problem import SplitProblem
    from split_assets.store.ledger import Look
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

TIERS = ("T0", "T1", "T2")


@dataclass
class CardData:
    manifest: dict[str, Any]
    by_type: dict[str, dict[str, Counter]]     # pool -> task type -> counts
    judge: dict[str, Any]
    looks: dict[str, dict[str, int]]           # pool -> {"looks", "repeats"}
    leaderboard: list[dict[str, Any]] = field(default_factory=list)
    agreement: dict[str, Any] | None = None
    claims: list[dict[str, Any]] = field(default_factory=list)  # one per test look
    test_budget: dict[str, Any] = field(default_factory=dict)  # budget, declared_by
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)  # run -> provenance
    pool_ids: dict[str, list[str]] = field(default_factory=dict)  # pool -> question ids

    @property
    def task_types(self) -> list[str]:
        return sorted({t for pool in self.by_type.values() for t in pool})


def gather(inputs: Inputs, partition: Partition, problem: SplitProblem, price: Any | None,
           agreement: dict[str, Any] | None = None,
           shared: tuple[SharedBudget, list[Look]] | None = None,
           provenance: dict[str, dict[str, Any]] | None = None) -> CardData:
    """The card's data for the partition's frozen split (``price``: ``diag.openai.price``;
    ``shared``: the test budget now and other workspaces' looks at the split, from
    ``shared_budget.budget_now``; ``provenance``: the harness db's, by run)."""
    from split_assets.report.card_claims import claim_rows

    manifest = partition.frozen_manifest()
    doc = load_pools(partition)
    budget, elsewhere = shared or (SharedBudget(partition.evaluation.test_looks_max, None, ()),
                                   [])
    with partition.store(read_only=True) as store:
        rows = store.rows(partition.run_id, partition.key)
        statuses = store.call_statuses(partition.key)
        looks = store.looks(doc["split_id"])
    have = {(look.pool, look.answers_digest) for look in looks}
    looks += [look for look in elsewhere if (look.pool, look.answers_digest) not in have]
    claims = claim_rows(inputs, partition, looks, budget.budget)
    runs = {partition.run_id, *(r for c in claims for r in c["runs"])}
    return CardData(manifest, _by_type(problem, doc), _judge(rows, statuses, price),
                    _look_counts(looks),
                    _leaderboard(problem, doc, looks, manifest["pools_sha256"]), agreement,
                    claims, {"budget": budget.budget, "declared_by": budget.declared_by},
                    {run: p for run, p in (provenance or {}).items() if run in runs},
                    {pool: sorted(doc["pools"][pool]) for pool in POOLS})


def _by_type(problem: SplitProblem, doc: dict[str, Any]) -> dict[str, dict[str, Counter]]:
    pool_of = {q: name for name in POOLS for q in doc["pools"][name]}
    out: dict[str, dict[str, Counter]] = {name: defaultdict(Counter) for name in POOLS}
    for q in problem.questions:
        counts = out[pool_of[q.question_id]][q.task_type]
        counts["questions"] += 1
        counts["correct"] += q.correct
        if not q.correct:
            counts["degraded" if q.degraded else (q.tier or "undiagnosed")] += 1
    return {name: dict(sorted(types.items())) for name, types in out.items()}


def _judge(rows: list[Any], statuses: dict[str, int], price: Any | None) -> dict[str, Any]:
    prompt = sum(r.prompt_tokens for r in rows)
    completion = sum(r.completion_tokens for r in rows)
    judged = [r for r in rows if not r.infra]
    out: dict[str, Any] = {"diagnoses": len(judged), "degraded": sum(r.degraded for r in rows),
                           "calls": sum(statuses.values()), "call_statuses": statuses,
                           "prompt_tokens": prompt, "completion_tokens": completion}
    if price is not None:  # an upper bound: cached input is not known per row
        out["cost_usd_at_most"] = round((prompt * price.input + completion * price.output)
                                        / 1e6, 4)
    return out


def _look_counts(looks: list[Look]) -> dict[str, dict[str, int]]:
    """Per pool: the distinct answers looked at, and how many of them were evaluated again
    (once each, however often: a ``run`` that re-evaluates the same candidates repeats no
    new hypothesis)."""
    seen: dict[str, Counter] = {}
    for look in looks:
        seen.setdefault(look.pool, Counter())[look.answers_digest] += 1
    return {pool: {"looks": len(counts), "repeats": sum(1 for n in counts.values() if n > 1)}
            for pool, counts in seen.items()}


def _leaderboard(problem: SplitProblem, doc: dict[str, Any], looks: list[Look],
                 sha: str) -> list[dict[str, Any]]:
    """The Ladder replayed over this validation pool's feedback submissions, in order (as
    ``split-assets feedback`` replays it): each one's released accuracy and whether it moved
    (never a submission's own accuracy, which the Ladder exists to withhold)."""
    ids = sorted(doc["pools"]["validation"])
    video = {q.question_id: q.video_id for q in problem.questions}
    ladder = Ladder([video[q] for q in ids], [bool(doc["correctness"][q]) for q in ids])
    board: list[dict[str, Any]] = []
    for look, given in ladder_submissions(looks, len(ids), sha):
        step = ladder.submit(given)
        board.append({"submission": len(board) + 1, "run_id": look.run_id,
                      "created_at": look.created_at, "moved": step.moved,
                      "leaderboard_accuracy": round(1.0 - step.released_loss, 6),
                      "significant": bool(look.statistic.get("significant")),
                      "optimizer": look.statistic.get("optimizer"),
                      "program_sha256": look.statistic.get("program_sha256")})
    return board
