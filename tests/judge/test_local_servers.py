"""The openai judge against servers people run themselves: the test server in slot mode
(``testkit/slots.py``: N requests served at once, the rest queued, a per-slot prefix cache, a
request whose client gave up keeping its slot), counted in calls and statuses, not timed."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import edit_config

from split_assets.app.session import Session
from split_assets.diagnosis.diagnosis_report import DiagnosisReport
from split_assets.diagnosis.plan import plan_diagnosis, wrong_to_diagnose
from split_assets.diagnosis.runner import diagnose
from split_assets.errors import RunFailure
from testkit.llm_server import FakeLLM
from testkit.slots import SlotModel

QUESTIONS = 40
# one slot; 0.25 s a request plus its prompt tokens the slot has not cached (a cold prompt
# of ~2,500 tokens costs another 0.25 s, a warm one -- its own part -- a few hundredths)
ONE_SLOT = {"base_s": 0.25, "prompt_s_per_token": 1e-4}


@pytest.fixture
def one_slot(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    with FakeLLM(slots=SlotModel(1, **ONE_SLOT)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        yield server


def _diagnose_40(config: Path) -> tuple[DiagnosisReport | RunFailure, Counter[str]]:
    """Diagnose 40 wrong answers; the report (or the failure that stopped the run) and the
    call statuses."""
    s = Session.open(config)
    wrong = wrong_to_diagnose(s.inputs.predictions)[:QUESTIONS]
    assert len(wrong) == QUESTIONS
    with s.partition.store() as store:
        try:
            report: DiagnosisReport | RunFailure = diagnose(
                s.judge, s.inputs, s.partition, plan_diagnosis(wrong, set(), frozenset()),
                store)
        except RunFailure as failure:  # e.g. the breaker opened
            report = failure
        store.flush()
        calls = store._x("SELECT status FROM llm_calls").fetchall()
    return report, Counter(status for (status,) in calls)


def _judge_config(workspace: Path, **openai: object) -> Path:
    return edit_config(workspace, diag={"judge": "openai", "model": "local-model",
                                        "openai": {"timeout_s": 2.0, **openai}})


def test_a_one_slot_server_at_the_defaults_gets_one_request_at_a_time(
        small_workspace: Path, one_slot: FakeLLM) -> None:
    report, statuses = _diagnose_40(_judge_config(small_workspace))
    assert isinstance(report, DiagnosisReport), report
    assert statuses["timeout"] == 0 and report.diagnosed == QUESTIONS
    repairs = statuses["invalid_output"]
    assert report.calls == len(one_slot.requests) == QUESTIONS + repairs
    assert report.concurrency[-1][1] == 1  # learned: one at a time
    # one request first (nothing known), then a wave of four whose answers showed the
    # queue: at most those three ever waited for the slot
    assert one_slot.slots is not None and one_slot.slots.max_waiting <= 3
    sent_at = [n for _, n in report.concurrency]
    assert sent_at[0] == 1 and max(sent_at) <= 4


def test_the_old_fixed_concurrency_times_out_on_a_one_slot_server(
        small_workspace: Path, one_slot: FakeLLM) -> None:
    """What adaptation solves: eight requests in flight queue for the one slot, the last
    ones pass 2 s and are sent again while the server works on requests nobody waits for
    any more -- until ten failures in a row open the breaker, or the run ends having paid
    for answers it threw away."""
    config = _judge_config(small_workspace, adaptive=False)
    edit_config(config, diag={"concurrency": 8})
    report, statuses = _diagnose_40(config)
    assert statuses["timeout"] >= 5
    assert isinstance(report, RunFailure) or len(one_slot.requests) > QUESTIONS + 5


def test_the_learned_concurrency_is_in_the_telemetry_and_the_metadata(
        small_workspace: Path, run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A whole run against a two-slot server: every call's limit in llm_calls, and
    diagnosis_signals shows where the limit ended, its most and its changes."""
    from dagster import AssetKey, DagsterInstance

    with FakeLLM(slots=SlotModel(2, 0.05, prompt_s_per_token=1e-5)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        code, _, err = run_cli("run", "--config", str(_judge_config(small_workspace)))
    assert code == 0, err
    with sqlite3.connect(small_workspace.parent / "signals.db") as conn:
        limits = [n for (n,) in conn.execute("SELECT concurrency FROM llm_calls ORDER BY rowid")]
    assert limits[0] == 1 and min(limits) >= 1 and limits[-1] <= 3
    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("diagnosis_signals")).asset_materialization.metadata
    assert meta["concurrency"].value in (2, 3) and meta["concurrency_max"].value >= 4
    rows = meta["concurrency_over_run"].value.records
    assert rows[0].data == {"seconds": 0.0, "limit": 1}
    assert rows[-1].data["limit"] == meta["concurrency"].value


def test_the_next_run_starts_where_the_last_one_ended(small_workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The learned limit is in the telemetry: the judge's next run starts there instead of
    at one request; diag.concurrency, when given, is where it starts whatever was learned."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    config = _judge_config(small_workspace)
    s = Session.open(config)

    def starts_at(session: Session) -> int:
        session.judge.start(store, s.partition.key, {})
        try:
            return session.judge._client.limit.limit
        finally:
            asyncio.run(session.judge.aclose())

    with s.partition.store() as store:
        first = starts_at(s)
        store.record_call(s.partition.key, "q1", 0, "ok", 50.0, concurrency=6)
        store.record_call(s.partition.key, "q2", 0, "timeout", 50.0, concurrency=3)
        learned = starts_at(s)
        given = starts_at(Session.open(edit_config(config, diag={"concurrency": 10})))
    assert (first, learned, given) == (1, 6, 10)
