"""Feedback for an evolution loop on the validation pool (issue 24): Blum & Hardt's
parameter-free Ladder (``reuse.Ladder``) releases only the leaderboard's score, and a
``significant`` flag tests the candidate against the baseline one-sided, cluster-adjusted, at
alpha / ``evaluation.feedback_budget`` -- the only thing allowed to read as "a real gain".

The leaderboard's state is the ledger: every earlier feedback submission on this split's
validation pool is a ledger row holding its answers, replayed in order (a repeat of answers
already submitted is recorded, never submitted again)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from split_assets.errors import InputError, UserError
from split_assets.evaluation.comparison import check_roles, load_pools
from split_assets.evaluation.reuse import Ladder, one_sided_p
from split_assets.lib.canonical import digest_of
from split_assets.store.ledger import Look
from split_assets.store.signals import SignalStore
from split_assets.workspace.inputs import Inputs
from split_assets.workspace.partition import Partition

ALPHA = 0.05
POOL = "validation"
SOURCE = "feedback"


def _bits(answers: list[bool]) -> str:
    return "".join("1" if a else "0" for a in answers)


def feedback(inputs: Inputs, partition: Partition, candidate: str, store: SignalStore,
             budget: int, control: str | None = None) -> dict[str, Any]:
    """Submit ``candidate``'s validation answers: what the loop may see (the leaderboard's
    released accuracy, whether it moved, ``significant``), recorded in the ledger. The
    baseline and the ``control`` run are references, never candidates (refused as
    ``compare`` refuses them). ``repeat`` is the ledger's rule: these answers were evaluated
    on validation before, by any command, under any run id; ``submitted``: this call gave the
    Ladder answers it had not seen (a repeat of an earlier feedback submission is not)."""
    check_roles(partition.run_id, candidate, None, "--candidate")
    if control is not None and candidate == control:
        raise UserError(f"the candidate run is the control itself ({control!r})",
                        "--candidate", "a control is a fresh re-run of the baseline agent, "
                                       "not a candidate: pass another run")
    doc = load_pools(partition)
    ids = sorted(doc["pools"][POOL])
    videos = [inputs.benchmark.by_id[q].video_id for q in ids]
    baseline = [bool(doc["correctness"][q]) for q in ids]
    correct = inputs.outcomes(candidate, "candidate", "--candidate").correct
    missing = [q for q in ids if correct.get(q) is None]
    if missing:
        raise InputError(f"run {candidate!r} has no answer for {len(missing)} validation "
                         f"question(s) (e.g. {', '.join(missing[:3])})", "--candidate",
                         "import its predictions of the whole validation pool")
    answers = [bool(correct[q]) for q in ids]
    ladder = Ladder(videos, baseline)
    sha = partition.frozen_manifest()["pools_sha256"]
    earlier = ladder_submissions(store.looks(doc["split_id"], POOL), len(ids), sha)
    for _, given in earlier:
        ladder.submit(given)
    submitted = {look.answers_digest for look, _ in earlier}
    digest = digest_of([[q, c] for q, c in zip(ids, answers, strict=True)])
    moved, new_submission = False, digest not in submitted
    if new_submission:  # answers submitted before are never submitted again
        moved = ladder.submit(answers).moved
    significant = one_sided_p(videos, baseline, answers) < ALPHA / budget
    submissions = len(submitted | {digest})
    released = round(1.0 - ladder.released_loss, 6)
    shown = (f"leaderboard accuracy {released:.4f}" + (" (moved)" if moved else "")
             + f", significant: {'yes' if significant else 'no'}")
    look = store.record_look(doc["split_id"], POOL, candidate, digest, SOURCE,
                             {"answers": _bits(answers), "moved": moved,
                              "significant": significant, "pools_sha256": sha}, shown)
    return {"split_id": doc["split_id"], "candidate": candidate,
            "leaderboard_accuracy": released, "moved": moved, "significant": significant,
            "repeat": look.is_repeat, "submitted": new_submission,
            "submissions": submissions, "budget": budget, "within_budget": submissions <= budget}


def ladder_submissions(looks: Iterable[Look], n: int, sha: str) -> list[tuple[Look, list[bool]]]:
    """The Ladder's submissions among ``looks``, in order, each with its answers: the feedback
    rows of this very validation pool (its ``n`` questions and pools sha256: a split id of
    another judge may have frozen other pools, whose rows are not this leaderboard's), each
    set of answers once (a repeat is never submitted again)."""
    out: list[tuple[Look, list[bool]]] = []
    seen: set[str] = set()
    for look in looks:
        bits = look.statistic.get("answers", "")
        if (look.pool == POOL and look.source == SOURCE and len(bits) == n
                and look.statistic.get("pools_sha256", sha) == sha
                and look.answers_digest not in seen):
            seen.add(look.answers_digest)
            out.append((look, [c == "1" for c in bits]))
    return out
