"""The test pool stays sealed across splits (issue 35): a look at test belongs to the benchmark
and the baseline, not to one split.

Every test look (``compare --pool test``, the import of a candidate that answers test
questions, ``export lmms-eval --pool test``) records which test questions it showed
(``test_exposure``). Then:

- once the test pool of a split was looked at, freezing another split of the same baseline (a
  new seed, new settings, a new judge: other pools) is refused unless
  ``--refreeze-after-test-look``;
- whenever a split's test budget is consulted (and at its freeze), every earlier look at the
  questions it puts in test, on any split of the baseline, is copied into its ledger
  (``sync``): those looks share its budget, and its manifest says how many of its test videos
  they had shown (``test_exposure``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from split_assets.data.ledger import Exposure, Look
from split_assets.errors import UserError

if TYPE_CHECKING:
    from split_assets.data.signals import SignalStore
    from split_assets.partition import Partition

FLAG = "--refreeze-after-test-look"
POOL = "test"


@dataclass(frozen=True)
class TestPool:
    """A frozen split's test pool: what a look at it is recorded against."""

    baseline_run_id: str
    split_id: str
    pools_sha256: str
    question_ids: tuple[str, ...]

    def exposure(self, answers_digest: str, run_id: str,
                 shown: Sequence[str] | None = None) -> Exposure:
        """The exposure of a look at this pool (``shown``: the questions it showed, default
        all of them)."""
        return Exposure(self.baseline_run_id, self.pools_sha256, self.split_id, answers_digest,
                        run_id, tuple(sorted(shown if shown is not None else self.question_ids)))


def test_pool(partition: Partition) -> TestPool:
    """The test pool of the partition's frozen split (its pools.json, hashed as frozen)."""
    manifest = partition.frozen_manifest()
    doc = json.loads(partition.files.pools.read_bytes())
    return TestPool(partition.run_id, doc["split_id"], str(manifest["pools_sha256"]),
                    tuple(doc["pools"][POOL]))


def refused(split_id: str, earlier: Sequence[str]) -> UserError:
    """A new split of a baseline whose test pool was looked at."""
    return UserError(
        f"a new split {split_id} refused: the test pool of split(s) {', '.join(earlier)} of "
        "this baseline was looked at already, and another split would start a fresh test "
        "budget (trying seeds until test looks good)", "video_split",
        f"restore the settings of the looked-at split, or pass {FLAG} (in the UI: run config "
        "refreeze_after_test_look: true); the new split's ledger then starts with every "
        "earlier look at the questions it puts in test")


def check_refreeze(store: SignalStore, partition: Partition, allowed: bool) -> None:
    """Before anything is paid for: the partition's split is new (not frozen on disk) while
    another split of the baseline had a test look."""
    if allowed or partition.files.pools.is_file():
        return
    earlier = sorted({x.split_id for x in store.exposures(partition.run_id)
                      if x.split_id != partition.split_id})
    if earlier:
        raise refused(partition.split_id, earlier)


def sync(store: SignalStore, pool: TestPool) -> list[Exposure]:
    """Copy into ``pool``'s ledger every look of another split of the baseline that showed
    questions ``pool`` puts in test (idempotent); those earlier exposures."""
    test = set(pool.question_ids)
    earlier = [x for x in store.exposures(pool.baseline_run_id)
               if x.pools_sha256 != pool.pools_sha256 and test & set(x.question_ids)]
    if not earlier:
        return []
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
    store.inherit_looks(rows, exposures)
    return earlier


def freeze_exposure(store: SignalStore, pool: TestPool, new_split: bool, allowed: bool,
                    video_of: Mapping[str, str]) -> dict[str, Any]:
    """At the freeze of ``pool``'s split: refused when it is a new split and another split
    of the baseline had a test look (unless ``allowed``); else the earlier looks are synced
    into its ledger and the manifest's ``test_exposure`` says what they had shown."""
    others = [x for x in store.exposures(pool.baseline_run_id)
              if x.pools_sha256 != pool.pools_sha256]
    if others and new_split and not allowed:
        raise refused(pool.split_id, sorted({x.split_id for x in others}))
    earlier = sync(store, pool)
    test = set(pool.question_ids)
    seen = {q for x in earlier for q in x.question_ids if q in test}
    return {"earlier_looks": len({x.answers_digest for x in earlier}),
            "earlier_splits": sorted({x.split_id for x in others}),
            "test_questions_seen": len(seen),
            "test_videos_seen": len({video_of[q] for q in seen}),
            "test_videos": len({video_of[q] for q in test})}
