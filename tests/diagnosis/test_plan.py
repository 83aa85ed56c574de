"""The dry run's plan is what the run then does: the same rule of "done"
(``store/conventions.DONE``) decides both, over fresh, changed and damaged signal stores."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from conftest import edit_config, kv
from dagster import AssetKey, DagsterInstance

Cli = Callable[..., tuple[int, str, str]]


def _plan(run_cli: Cli, config: Path) -> dict[str, str]:
    code, out, err = run_cli("run", "--config", str(config), "--dry-run")
    assert code == 0, err
    return kv(out)


def _run(run_cli: Cli, config: Path) -> dict[str, object]:
    """What the run did: diagnosis_signals' metadata."""
    code, _, err = run_cli("run", "--config", str(config))
    assert code == 0, err
    event = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("diagnosis_signals"))
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _agree(run_cli: Cli, config: Path) -> int:
    plan = _plan(run_cli, config)
    did = _run(run_cli, config)
    assert int(plan["to_diagnose"]) == did["diagnosed_now"]
    assert int(plan["already_diagnosed"]) == did["already_done"]
    assert int(plan["settled_degraded"]) == did["settled_degraded"]
    return did["diagnosed_now"]


def _stops(config: Path) -> dict[str, int]:
    with sqlite3.connect(config.parent / "harness.db") as conn:
        return dict(conn.execute("SELECT stop_reason, COUNT(*) FROM predictions "
                                 "WHERE stop_reason IS NOT NULL GROUP BY stop_reason"))


def test_plan_equals_run(small_workspace: Path, run_cli: Cli) -> None:
    config = small_workspace
    first = _agree(run_cli, config)
    assert first > 0  # a fresh store: every wrong non-INFRA answer
    assert _agree(run_cli, config) == 0  # everything done

    # a stop reason made INFRA (the fingerprint stays): T0 rows replace those diagnoses and
    # nothing is sent; made non-INFRA again, their stale T0 rows are judged again
    assert _stops(config).get("max_steps", 0) > 0
    edit_config(config, video_split={"infra_stop_reasons": ["error", "parse_error", "max_steps"]})
    assert _agree(run_cli, config) == 0
    with sqlite3.connect(config.parent / "signals.db") as conn:
        t0 = conn.execute("SELECT COUNT(*) FROM signals WHERE infra = 1 AND rationale = "
                          "'stop_reason:max_steps'").fetchone()[0]
    assert t0 > 0
    edit_config(config, video_split={"infra_stop_reasons": ["error", "parse_error"]})
    assert _agree(run_cli, config) == t0
    with sqlite3.connect(config.parent / "signals.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM signals WHERE infra = 1 AND rationale = "
                            "'stop_reason:max_steps'").fetchone()[0] == 0

    # degraded rows (a judge that gave no valid diagnosis) are planned and retried
    with sqlite3.connect(config.parent / "signals.db") as conn:
        conn.execute("UPDATE signals SET degraded = 1 WHERE infra = 0 AND question_id IN "
                     "(SELECT question_id FROM signals WHERE infra = 0 LIMIT 3)")
    assert _agree(run_cli, config) == 3

    # a new reference run: the full-context judge's fingerprint and done rows stay
    with sqlite3.connect(config.parent / "harness.db") as conn:
        conn.execute("INSERT INTO predictions SELECT 'ref1', question_id, prediction, "
                     "raw_response, stop_reason, attempt, created_at, session_id FROM "
                     "predictions WHERE run_id = ?", (_baseline(config),))
    edit_config(config, diag={"reference_runs": ["ref1"]})
    assert _agree(run_cli, config) == 0


def _baseline(config: Path) -> str:
    from split_assets.app.session import Session

    return Session.open(config).partition.run_id


def test_each_shard_takes_its_own_stripe_first_and_the_rest_after(small_workspace: Path) -> None:
    from split_assets.app.session import Session
    from split_assets.diagnosis.plan import plan_diagnosis

    plan = plan_diagnosis(Session.open(small_workspace).inputs.predictions, set(), frozenset())
    ids = plan.todo_ids
    assert plan.shard(0, 1) is plan
    shards = [plan.shard(i, 3) for i in range(3)]
    for i, shard in enumerate(shards):
        assert sorted(shard.todo_ids) == sorted(ids)  # every shard may help with any question
        assert shard.todo_ids[:len(ids[i::3])] == ids[i::3]  # its own stripe first
        assert shard.wrong == plan.wrong and shard.settled == plan.settled
    firsts = [set(s.todo_ids[:len(ids[i::3])]) for i, s in enumerate(shards)]
    assert set().union(*firsts) == set(ids) and sum(map(len, firsts)) == len(ids)  # disjoint
