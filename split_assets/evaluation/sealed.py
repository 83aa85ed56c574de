"""What the harness showed counts (issue 35): once a workspace's split is frozen, an import
must say what its run is (``--role``), a reference run can no longer relabel T1/T2 after a look
at test, the baseline cannot be replaced after one, and a candidate or control whose file
answers test questions is a look at test -- the harness printed an aggregate over them whether
or not anyone runs ``compare --pool test`` -- recorded in the ledger at import and counted
against ``evaluation.test_looks_max``.

The frozen splits are those the signal store recorded at their freeze (so moving a split
folder away or changing ``paths.out_dir`` hides nothing) and those on disk (frozen by an
earlier release). ``app/import_gate.py`` builds the gate the importers call
(``importing/workspace_runs.py``) after every check of the file passed and before anything
is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.evaluation.claims import family
from split_assets.evaluation.exposure import TestPool, pool_of, record_test_look
from split_assets.evaluation.laundering import answers_db
from split_assets.evaluation.reuse import one_sided_p
from split_assets.evaluation.shared_budget import SharedBudget
from split_assets.importing.workspace_runs import LookLine
from split_assets.importing.workspace_setup import Answer
from split_assets.lib.canonical import digest_of, sha256_hex
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.harness_db import (
    canonical_predictions,
    predictions_digest,
    run_ids,
)
from split_assets.sources.run_outcomes import RunOutcomes, run_outcomes
from split_assets.split.layout import MANIFEST_FILE, POOLS_FILE
from split_assets.store.ledger import FrozenRecord, LookRefused
from split_assets.store.signals import SignalStore

if TYPE_CHECKING:
    from split_assets.settings import VideoSplitConfig

ROLES_LINE = ("pass --role candidate (a run to evaluate), control (a fresh re-run of the "
              "baseline agent) or reference (another model's run: it relabels T1/T2, so only "
              "before any test look); nothing was imported")
LOOKING_ROLES = ("candidate", "control")
REFREEZE = "--refreeze-after-test-look"
Gate = Callable[[str, "str | None", dict[str, Answer], Benchmark], list[str]]


@dataclass(frozen=True)
class Frozen:
    """A frozen split of the workspace's baseline: its test pool and its pools document."""

    pool: TestPool
    doc: dict[str, Any]


def frozen_splits(out_dir: Path, store: SignalStore, baseline: str,
                  elsewhere: Sequence[FrozenRecord] = ()) -> list[Frozen]:
    """The baseline's frozen splits, oldest first: recorded in the store, and on disk under
    ``paths.out_dir`` (a pools.json that hashes to its manifest's, of this baseline's answers);
    ``elsewhere``: those other workspaces of the baseline on the instance froze."""
    found: dict[str, Frozen] = {}
    for record in [*store.frozen(baseline), *elsewhere]:
        doc = json.loads(record.pools)
        found[record.pools_sha256] = Frozen(pool_of(doc, record.pools_sha256, baseline), doc)
    paths = sorted(out_dir.glob(f"*/*/{POOLS_FILE}"),
                   key=lambda p: p.stat().st_mtime)
    for path in paths:
        try:
            data = path.read_bytes()
            manifest = json.loads((path.parent / MANIFEST_FILE).read_bytes())
            doc = json.loads(data)
        except (OSError, ValueError):
            continue
        sha = sha256_hex(data)
        if (isinstance(doc, dict) and isinstance(manifest, dict)
                and manifest.get("pools_sha256") == sha
                and manifest.get("input_digests", {}).get("baseline_predictions") == baseline):
            found.setdefault(sha, Frozen(pool_of(doc, sha, baseline), doc))
    return list(found.values())


def refusals(run_id: str, role: str | None, spend: bool, baseline_run: str,
              frozen: list[Frozen], looked: list[Any], refreeze: bool = False,
              laundering: str | None = None) -> None:
    """What an import into a frozen workspace may not do (one line each, nothing written).
    ``refreeze``: ``--refreeze-after-test-look`` (a reference after a look, for a new split);
    ``laundering``: why this run may never be a reference (its answers were a look, or it is
    a candidate or the control run), None when nothing says so."""
    splits = ", ".join(sorted({f.pool.split_id for f in frozen}
                              | {x.split_id for x in looked}))
    if run_id == baseline_run:  # --replace of the baseline (else refused before)
        if looked:
            raise UserError(f"replacing the baseline {run_id!r} refused: a test pool of it "
                            f"(split {splits}) was looked at, and new baseline answers would "
                            "start a fresh test budget", "--replace",
                            "import the run under another run id (a new workspace of the same "
                            "baseline on this Dagster instance shares its test budget); "
                            "nothing was imported")
        return
    if role is None:
        raise UserError(f"split {splits} of this workspace is frozen: an import must say what "
                        f"run {run_id!r} is", "--role", ROLES_LINE)
    if spend and role not in LOOKING_ROLES:
        raise UserError(f"--spend-test-look with --role {role}: a {role} run is never a look",
                        "--spend-test-look", "drop the flag")
    if refreeze and role != "reference":
        raise UserError(f"{REFREEZE} with --role {role}: only a reference run re-freezes the "
                        "split", REFREEZE, "drop the flag; nothing was imported")
    if role == "reference" and laundering is not None:
        raise UserError(f"a reference run refused: {laundering}, and a reference made of it "
                        "would launder a candidate's answers into the labels (T1/T2)",
                        "--role reference", "import it as --role candidate or control; a "
                        "reference must be a run no look was made with; nothing was imported")
    if role == "reference" and looked:
        looked_at = ", ".join(sorted({x.split_id for x in looked}))
        if not refreeze:
            raise UserError(f"a reference run refused: a test pool of this baseline (split "
                            f"{looked_at}) was looked at, and a new reference would relabel "
                            "which wrong answers are defects (T2) in a split made after that "
                            "look", "--role reference",
                            f"pass {REFREEZE} to add it for a new split that inherits every "
                            "earlier look (the next split-assets run needs the same flag), or "
                            "import it as --role candidate or control; nothing was imported")


def baseline_digest(vs: VideoSplitConfig, db: Path, benchmark: Benchmark) -> str | None:
    """The digest of the baseline's answers in harness db ``db``, as a manifest records it."""
    if not db.is_file() or vs.baseline_run_id not in run_ids(db):
        return None
    return predictions_digest(canonical_predictions(db, vs.baseline_run_id, benchmark,
                                                    vs.infra_stop_reasons,
                                                    vs.missing_predictions))


def scored(run_id: str, answers: dict[str, Answer], benchmark: Benchmark,
            infra: list[str]) -> RunOutcomes:
    """The run's outcomes, scored exactly as they will be once imported (the same reader of
    the harness db, on a temporary copy of its rows)."""
    with answers_db(run_id, answers) as db:
        return run_outcomes(db, run_id, benchmark, infra)


def look_line(n: int, budget: int | None, spend: bool, what: str) -> LookLine:
    """``test look N of M (what)``; ``test look N (no budget) (what)``; past the budget with
    ``--spend-test-look``: ``test look N beyond the budget of M (what)``."""
    if budget is None:
        head = f"test look {n} (no budget)"
    elif n > budget:  # spent on purpose, or a repeat of such a look
        head = f"test look {n} beyond the budget of {budget}"
    else:
        head = f"test look {n} of {budget}"
    return LookLine(f"{head} ({what})")


def record_import_look(store: SignalStore, target: Frozen, run_id: str, outcomes: dict[str, bool],
                       benchmark: Benchmark, shared: SharedBudget, spend: bool) -> str:
    """The import's look at the split's test pool (none when it answers no test question),
    recorded with the earlier splits' and other workspaces' looks it inherits, in one
    transaction, refused past ``shared``'s budget unless ``spend``; one line."""
    pool = target.pool
    ids = [q for q in sorted(pool.question_ids) if q in outcomes]
    if not ids:
        return f"ledger: {run_id} answers no test question of split {pool.split_id}: no look"
    cand = [outcomes[q] for q in ids]
    base = [bool(target.doc["correctness"][q]) for q in ids]
    videos = [benchmark.by_id[q].video_id for q in ids]
    digest = digest_of([[q, c] for q, c in zip(ids, cand, strict=True)])
    accuracy, reference = sum(cand) / len(ids), sum(base) / len(ids)
    statistic = {"answered": len(ids), "of": len(pool.question_ids),
                 "candidate_accuracy": round(accuracy, 6),
                 "reference_accuracy": round(reference, 6),
                 "claim": {"against": "baseline",
                           "p_one_sided": float(f"{one_sided_p(videos, base, cand):.6g}")}}
    shown = (f"the harness showed accuracy {accuracy:.4f} on {len(ids)} of "
             f"{len(pool.question_ids)} test questions (baseline {reference:.4f}); import")
    try:
        look = record_test_look(store, pool, run_id, digest, "import", statistic, shown,
                                None if spend else shared.budget, ids)
    except LookRefused as refused:
        more = shared.note()
        raise UserError(
            f"import refused: run {run_id!r} answers {len(ids)} test questions of split "
            f"{pool.split_id}, and the harness already printed its accuracy on them: a look "
            f"at test, and the {refused.looks} look(s) of {config_key('test_looks_max')} "
            f"{refused.budget} are spent" + (f" ({more})" if more else ""), "--role",
            "evaluate candidates on validation only (split-assets export lmms-eval --pool "
            "validation), or pass --spend-test-look (no claim will hold for it); nothing was "
            "imported") from None
    n = [digest for digest, _, _ in family(store.looks(pool.split_id, "test"))].index(
        look.answers_digest) + 1  # its place among the distinct answers looked at
    what = (f"import of {run_id}: {len(ids)} test questions answered; the harness printed an "
            "aggregate over them")
    if look.is_repeat:
        what += "; a repeat: these answers were evaluated before"
    return look_line(n, shared.budget, spend, what)
