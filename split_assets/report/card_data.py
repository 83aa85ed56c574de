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
from split_assets.split.layout import POOLS

if TYPE_CHECKING:
    from split_assets.split.problem import SplitProblem
    from split_assets.store.ledger import Look
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

    @property
    def task_types(self) -> list[str]:
        return sorted({t for pool in self.by_type.values() for t in pool})


def gather(partition: Partition, problem: SplitProblem, price: Any | None,
           agreement: dict[str, Any] | None = None) -> CardData:
    """The card's data for the partition's frozen split (``price``: ``diag.openai.price``)."""
    manifest = partition.frozen_manifest()
    doc = load_pools(partition)
    with partition.store(read_only=True) as store:
        rows = store.rows(partition.run_id, partition.key)
        statuses = store.call_statuses(partition.key)
        looks = store.looks(doc["split_id"])
    return CardData(manifest, _by_type(problem, doc), _judge(rows, statuses, price),
                    _look_counts(looks),
                    _leaderboard(problem, doc, looks, manifest["pools_sha256"]), agreement)


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
    out: dict[str, dict[str, int]] = {}
    for look in looks:
        counts = out.setdefault(look.pool, {"looks": 0, "repeats": 0})
        counts["repeats" if look.is_repeat else "looks"] += 1
    return out


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
                      "significant": bool(look.statistic.get("significant"))})
    return board
