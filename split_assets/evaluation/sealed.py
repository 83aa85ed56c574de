"""What the harness showed counts (issue 35): once a workspace's split is frozen, an import
must say what its run is (``--role``), a reference run can no longer relabel T1/T2 after a look
at test, and a candidate whose file answers test questions is a look at test -- the harness
printed an aggregate over them whether or not anyone runs ``compare --pool test`` -- recorded
in the ledger at import and counted against ``evaluation.test_looks_max``.

``import_gate(workspace, spend)`` is the gate the importers call (``data/importers.py``) after
every check of the file passed and before anything is written."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from split_assets.data.benchmark import Benchmark
from split_assets.data.config_file import CONFIG_FILE
from split_assets.data.harness import create_tables, insert_predictions
from split_assets.data.ledger import Evaluation, LookRefused
from split_assets.data.outcomes import RunOutcomes, run_outcomes
from split_assets.data.signals import SignalStore
from split_assets.data.workspace_config import Answer
from split_assets.errors import UserError
from split_assets.evaluation.exposure import POOL, TestPool, sync
from split_assets.evaluation.reuse import one_sided_p
from split_assets.lib.canonical import digest_of, sha256_hex
from split_assets.split.layout import MANIFEST_FILE, POOLS_FILE

ROLES_LINE = ("pass --role candidate (a run to evaluate), control (a fresh re-run of the "
              "baseline agent) or reference (another model's run: it relabels T1/T2, so only "
              "before any test look); nothing was imported")
Gate = Callable[[str, "str | None", dict[str, Answer], Benchmark], list[str]]


def frozen_splits(out_dir: Path, baseline: str) -> list[tuple[TestPool, dict]]:
    """The splits of ``baseline`` frozen under ``out_dir`` (``<fingerprint>/<split_id>/``,
    a pools.json whose bytes hash to its manifest's pools_sha256), oldest first."""
    found = []
    for path in sorted(out_dir.glob(f"*/*/{POOLS_FILE}"), key=lambda p: p.stat().st_mtime):
        try:
            data = path.read_bytes()
            manifest = json.loads((path.parent / MANIFEST_FILE).read_bytes())
            doc = json.loads(data)
        except (OSError, ValueError):
            continue
        if (not isinstance(doc, dict) or doc.get("baseline_run_id") != baseline
                or manifest.get("pools_sha256") != sha256_hex(data)):
            continue
        found.append((TestPool(baseline, str(doc["split_id"]), sha256_hex(data),
                               tuple(doc["pools"][POOL])), doc))
    return found


def import_gate(workspace: Path, spend: bool = False) -> Gate:
    """The gate of an import into ``workspace`` (``spend``: ``--spend-test-look``)."""

    def gate(run_id: str, role: str | None, answers: dict[str, Answer],
             benchmark: Benchmark) -> list[str]:
        from split_assets.config import load_config
        from split_assets.partition import open_signals

        config = workspace / CONFIG_FILE
        if not config.is_file():
            return []
        loaded = load_config(config)
        baseline = loaded.config.video_split.baseline_run_id
        if run_id == baseline:
            return []
        frozen = frozen_splits(loaded.paths.out_dir, baseline)
        with open_signals(loaded, read_only=True) as store:
            looked = sorted({x.split_id for x in store.exposures(baseline)})
        if not frozen and not looked:
            return []
        splits = ", ".join(sorted({pool.split_id for pool, _ in frozen} | set(looked)))
        if role is None:
            raise UserError(f"split {splits} of this workspace is frozen: an import must say "
                            f"what run {run_id!r} is", "--role", ROLES_LINE)
        if role == "reference" and looked:
            raise UserError(f"a reference run refused: the test pool of split {', '.join(looked)}"
                            " was looked at, and a new reference would relabel which wrong "
                            "answers are defects (T2) in a split made after that look",
                            "--role reference", "import it as --role candidate or control, or "
                            "into a new workspace; nothing was imported")
        if role != "candidate" or not frozen:
            return []
        outcomes = _scored(run_id, answers, benchmark, loaded.config.video_split
                           .infra_stop_reasons).answered()
        budget = None if spend else loaded.config.evaluation.test_looks_max
        with open_signals(loaded) as store:
            return [_record(store, pool, doc, run_id, outcomes, benchmark, budget)
                    for pool, doc in frozen]

    return gate


def _scored(run_id: str, answers: dict[str, Answer], benchmark: Benchmark,
            infra: list[str]) -> RunOutcomes:
    """The run's outcomes, scored exactly as they will be once imported (the same reader of
    the harness db, on a temporary copy of its rows)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "harness.db"
        conn = sqlite3.connect(db)
        with conn:
            create_tables(conn)
            insert_predictions(conn, [(run_id, q, a.prediction, a.response, a.stop_reason, 0,
                                       "", None) for q, a in sorted(answers.items())])
        conn.close()
        return run_outcomes(db, run_id, benchmark, infra)


def _record(store: SignalStore, pool: TestPool, doc: dict, run_id: str,
            outcomes: dict[str, bool], benchmark: Benchmark, budget: int | None) -> str:
    """The import's look at one frozen split's test pool (none when it answers no test
    question), recorded with its exposure; one line for the user."""
    ids = [q for q in sorted(pool.question_ids) if q in outcomes]
    if not ids:
        return f"ledger: {run_id} answers no test question of split {pool.split_id}: no look"
    cand = [outcomes[q] for q in ids]
    base = [bool(doc["correctness"][q]) for q in ids]
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
    sync(store, pool)
    try:
        look, = store.record_looks(
            [Evaluation(pool.split_id, POOL, run_id, digest, "import", statistic, shown)],
            {POOL: budget} if budget is not None else None,
            [pool.exposure(digest, run_id, ids)])
    except LookRefused as refused:
        raise UserError(
            f"import refused: run {run_id!r} answers {len(ids)} test questions of split "
            f"{pool.split_id}, and the harness already printed its accuracy on them: a look "
            f"at test, and the {refused.looks} look(s) of evaluation.test_looks_max "
            f"{refused.budget} are spent", "--role candidate",
            "evaluate candidates on validation only (split-assets export lmms-eval --pool "
            "validation), or pass --spend-test-look (no claim will hold for it); nothing was "
            "imported") from None
    return (f"ledger: test look at {run_id} on split {pool.split_id} ({len(ids)} test "
            "questions answered: the harness printed an aggregate over them)"
            + (" (a repeat: these answers were evaluated before)" if look.is_repeat else ""))
