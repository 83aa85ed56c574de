"""The test pool stays sealed across splits (issue 35): a look at test belongs to the benchmark
and the baseline, not to one split.

Every test look (``compare --pool test``, the import of a candidate or control that answers
test questions, ``export lmms-eval --pool test``) records which test questions it showed
(``test_exposure``), under the digest of the baseline's answers (the same baseline under any
run id); every freeze records its split (``frozen_splits``). Then:

- once a test pool of the baseline was looked at, freezing any split of it not frozen before
  (a new seed, new settings, a new judge) is refused unless ``--refreeze-after-test-look`` --
  before anything is paid, and again at the freeze;
- whenever a split's test budget is consulted (and at its freeze), every earlier look at the
  questions it puts in test, on any split of the baseline, is copied into its ledger in the
  same transaction as the new look (``pending``): those looks share its budget, and its
  manifest says how many of its test videos they had shown (``test_exposure``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from split_assets.errors import UserError
from split_assets.store.ledger import Evaluation, Exposure, FrozenRecord, Look

if TYPE_CHECKING:
    from split_assets.store.signals import SignalStore
    from split_assets.workspace.partition import Partition

FLAG = "--refreeze-after-test-look"
POOL = "test"


@dataclass(frozen=True)
class TestPool:
    """A frozen split's test pool: what a look at it is recorded against. ``baseline``: the
    digest of the baseline's answers."""

    baseline: str
    split_id: str
    pools_sha256: str
    question_ids: tuple[str, ...]

    def exposure(self, answers_digest: str, run_id: str,
                 shown: Sequence[str] | None = None) -> Exposure:
        """The exposure of a look at this pool (``shown``: the questions it showed, default
        all of them)."""
        return Exposure(self.baseline, self.pools_sha256, self.split_id, answers_digest,
                        run_id, tuple(sorted(shown if shown is not None else self.question_ids)))


def pool_of(doc: Mapping[str, Any], pools_sha256: str, baseline: str) -> TestPool:
    """The test pool of a pools.json document."""
    return TestPool(baseline, str(doc["split_id"]), pools_sha256, tuple(doc["pools"][POOL]))


def test_pool(partition: Partition) -> TestPool:
    """The test pool of the partition's frozen split (its pools.json, hashed as frozen)."""
    manifest = partition.frozen_manifest()
    return pool_of(json.loads(partition.files.pools.read_bytes()),
                   str(manifest["pools_sha256"]),
                   str(manifest["input_digests"]["baseline_predictions"]))


def refused(partition_key: str, split_id: str, earlier: Sequence[Exposure]) -> UserError:
    """A new split of a baseline whose test pool was looked at."""
    splits = ", ".join(sorted({x.split_id for x in earlier}))
    return UserError(
        f"a new split refused (split_id {split_id}, judge {partition_key}): a test pool of "
        f"this baseline (split {splits}) was looked at already, and a split not frozen before "
        "would start a fresh test budget (trying seeds or judges until test looks good)",
        "video_split", f"restore the settings and judge of the looked-at split, or pass {FLAG} "
        "(in the UI: run config refreeze_after_test_look: true); the new split's ledger then "
        "starts with every earlier look at the questions it puts in test")


def check_refreeze(store: SignalStore, partition: Partition, baseline: str,
                   allowed: bool) -> None:
    """Before anything is paid for: the partition's split (this judge, these settings) was
    never frozen while a test pool of the baseline was looked at (in this workspace or
    another of the baseline on the instance)."""
    from split_assets.evaluation.shared_budget import published_rows

    if allowed or partition.files.pools.is_file():
        return
    elsewhere = published_rows(baseline)
    earlier = store.exposures(baseline) + [x for _, x in elsewhere.exposures]
    known = {(r.diag_fingerprint, r.split_id)
             for r in [*store.frozen(baseline), *(r for _, r in elsewhere.frozen)]}
    if earlier and (partition.key, partition.split_id) not in known:
        raise refused(partition.key, partition.split_id, earlier)


def pending(store: SignalStore, pool: TestPool) -> tuple[list[Look], list[Exposure]]:
    """What ``pool``'s ledger lacks of the looks other splits of the baseline made at the
    questions it puts in test: rows to copy in (each look once: by its answers digest) and
    their exposures here. Reads only: the caller writes them with its own look."""
    test = set(pool.question_ids)
    earlier = [x for x in store.exposures(pool.baseline)
               if x.pools_sha256 != pool.pools_sha256 and test & set(x.question_ids)]
    have = {look.answers_digest for look in store.looks(pool.split_id, POOL)}
    rows: list[Look] = []
    exposures: list[Exposure] = []
    originals: dict[str, dict[str, Look]] = {}
    for x in earlier:
        shown = sorted(test & set(x.question_ids))
        exposures.append(pool.exposure(x.answers_digest, x.run_id, shown))
        if x.answers_digest in have:
            continue
        if x.split_id not in originals:
            originals[x.split_id] = {look.answers_digest: look
                                     for look in store.looks(x.split_id, POOL)}
        original = originals[x.split_id].get(x.answers_digest)
        statistic: dict[str, Any] = dict(original.statistic) if original else {}
        statistic["inherited"] = {"split_id": x.split_id, "questions_in_this_test": len(shown)}
        rows.append(Look(pool.split_id, POOL, x.run_id, x.answers_digest,
                         original.source if original else "inherited", statistic,
                         f"on split {x.split_id} ({len(shown)} of its questions are in this "
                         f"test pool): {original.shown if original else 'a test look'}",
                         False, original.created_at if original else ""))
        have.add(x.answers_digest)
    return rows, exposures


def record_test_look(store: SignalStore, pool: TestPool, run_id: str, answers_digest: str,
                     source: str, statistic: dict[str, Any], shown: str, budget: int | None,
                     questions: Sequence[str] | None = None) -> Look:
    """One look at ``pool`` (``questions``: those it showed, default all), written with the
    earlier splits' looks it inherits in one transaction; ``LookRefused`` (nothing written)
    past ``budget``."""
    inherited, exposures = pending(store, pool)
    look, = store.record_looks(
        [Evaluation(pool.split_id, POOL, run_id, answers_digest, source, statistic, shown)],
        {POOL: budget} if budget is not None else None,
        [*exposures, pool.exposure(answers_digest, run_id, questions)], inherited)
    return look


def freeze_exposure(store: SignalStore, pool: TestPool, record: FrozenRecord, new_split: bool,
                    allowed: bool, video_of: Mapping[str, str]) -> dict[str, Any]:
    """At the freeze of ``pool``'s split: refused when it is a split not frozen before and a
    test pool of the baseline was looked at (unless ``allowed``); else the split is recorded,
    the earlier looks are copied into its ledger, and the manifest's ``test_exposure`` says
    what they had shown."""
    seen_any = store.exposures(pool.baseline)
    known = {r.pools_sha256 for r in store.frozen(pool.baseline)}
    if seen_any and new_split and pool.pools_sha256 not in known and not allowed:
        raise refused(record.diag_fingerprint, pool.split_id, seen_any)
    store.record_frozen(record)
    rows, exposures = pending(store, pool)
    store.inherit_looks(rows, exposures)
    test = set(pool.question_ids)
    earlier = [x for x in seen_any if x.pools_sha256 != pool.pools_sha256]
    seen = {q for x in earlier for q in x.question_ids if q in test}
    return {"earlier_looks": len({x.answers_digest for x in earlier
                                  if test & set(x.question_ids)}),
            "earlier_splits": sorted({x.split_id for x in earlier}),
            "test_questions_seen": len(seen),
            "test_videos_seen": len({video_of[q] for q in seen}),
            "test_videos": len({video_of[q] for q in test})}
