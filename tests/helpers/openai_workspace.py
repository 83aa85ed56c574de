"""Fixtures and helpers for tests of the openai judge: a real local chat-completions server
(``FakeLLM``) and a small workspace configured to diagnose through it. Import the fixtures into
a test module (``from helpers.openai_workspace import openai_config, server``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import edit_config

from split_assets.app.session import Session
from split_assets.diagnosis.diagnosis_report import DiagnosisReport
from split_assets.diagnosis.plan import plan_for, wrong_to_diagnose
from split_assets.diagnosis.runner import diagnose
from split_assets.store.signals import SignalStore
from testkit.llm_server import FakeLLM


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM() as srv:
        yield srv


@pytest.fixture
def openai_config(small_workspace: Path, server: FakeLLM,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-123")
    return edit_config(small_workspace, diag={
        "judge": "openai", "model": "fake-model", "concurrency": 1,
        # the configured time budgets as they are (adaptive: tests/judge/test_local_servers.py)
        "openai": {"adaptive": False, "backoff_base_s": 0.01, "backoff_max_s": 0.5,
                   "max_retries": 3,
                   "breaker_threshold": 4, "ttft_timeout_s": 0.5, "inter_token_timeout_s": 0.5,
                   "timeout_s": 5.0}})


def diagnose_plan(s: Session, store: SignalStore) -> DiagnosisReport:
    """Diagnose what the session's plan has to do now, as a diagnosis step does."""
    return diagnose(s.judge, s.inputs, s.partition,
                    plan_for(s.inputs.predictions, s.partition, store), store)


def run_diagnosis(config: Path):  # noqa: ANN201 - (report, rows, n_wrong)
    ws = Session.open(config)
    with ws.partition.store() as store:
        try:
            report = diagnose_plan(ws, store)
        finally:
            rows = [r for r in store.rows(ws.partition.run_id, ws.partition.key) if not r.infra]
    return report, rows, len(wrong_to_diagnose(ws.inputs.predictions))


def statuses(config: Path) -> list[str]:
    db = config.parent / "signals.db"
    return [r[0] for r in sqlite3.connect(db).execute("SELECT status FROM llm_calls")]
