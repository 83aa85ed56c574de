"""The governed openai judge against a real local HTTP server speaking the chat completions API:
one test per fault, asserting what a user would check (rows completed, degraded, calls made)."""

from __future__ import annotations

import socket
import sqlite3
import ssl
from pathlib import Path

import pytest
from conftest import edit_config, kv
from helpers.openai_workspace import run_diagnosis, statuses

from split_assets.app.session import Session
from split_assets.errors import RunFailure, UserError
from split_assets.store.signals import SignalStore
from testkit.llm_server import INVALID_JSON_CONTENT, Action, FakeLLM


def test_every_wrong_answer_diagnosed_once_then_cached(openai_config: Path,
                                                       server: FakeLLM) -> None:
    report, rows, n_wrong = run_diagnosis(openai_config)
    assert report.diagnosed == len(rows) == n_wrong > 0
    assert report.calls == len(server.requests) == n_wrong  # one call per question
    assert not any(r.degraded for r in rows)
    assert {r.reported_model for r in rows} == {"fake-model-1"}
    assert all(r.prompt_tokens > 0 for r in rows)
    first = server.requests[0]
    assert first["model"] == "fake-model" and first["temperature"] == 0.0
    assert first["messages"][0]["role"] == "system"
    assert "Analysis 5: reasoning_sub" in first["messages"][1]["content"]
    # nothing left to do: a second pass calls nothing
    report, _, _ = run_diagnosis(openai_config)
    assert report.diagnosed == 0 and len(server.requests) == n_wrong
    # signals lost, cache kept: identical requests cost nothing
    conn = sqlite3.connect(openai_config.parent / "signals.db")
    conn.execute("DELETE FROM signals")
    conn.commit()
    report, rows, _ = run_diagnosis(openai_config)
    assert report.diagnosed == n_wrong and report.cache_hits == n_wrong
    assert len(server.requests) == n_wrong
    # a cache hit spends nothing: no call, no tokens, on the rows and in the report
    assert report.calls == 0 and report.prompt_tokens == report.completion_tokens == 0
    assert all(r.prompt_tokens == 0 for r in rows)


def test_429_with_retry_after_is_honoured(openai_config: Path, server: FakeLLM) -> None:
    server.script(Action("status", status=429, retry_after=0.4),
                  Action("status", status=429, retry_after=0.4))
    report, rows, n_wrong = run_diagnosis(openai_config)
    # each refused request is sent again no sooner than Retry-After (the two backoffs may
    # overlap: a slot is not held while a question waits)
    refused = [i for i, status in enumerate(server.statuses) if status == 429]
    assert len(refused) == 2
    for i in refused:
        retry = next(j for j in range(i + 1, len(server.requests))
                     if server.requests[j] == server.requests[i])
        assert server.request_times[retry] - server.request_times[i] >= 0.4 - 1e-3
    assert len(rows) == n_wrong and not any(r.degraded for r in rows)
    assert len(server.requests) == n_wrong + 2 and report.calls == n_wrong + 2
    assert statuses(openai_config).count("429") == 2


@pytest.mark.parametrize(("action", "status"), [
    (Action("status", status=500), "500"),
    (Action("reset"), "connection_error"),
])
def test_server_error_and_reset_are_retried(openai_config: Path, server: FakeLLM,
                                            action: Action, status: str) -> None:
    server.script(action, action)
    report, rows, n_wrong = run_diagnosis(openai_config)
    assert len(rows) == n_wrong and not any(r.degraded for r in rows)
    assert report.calls == n_wrong + 2
    assert statuses(openai_config).count(status) == 2


@pytest.mark.parametrize(("action", "status"), [
    (Action("stall_first", stall_s=2.0), "ttft_timeout"),
    (Action("stall_mid", stall_s=2.0), "inter_token_timeout"),
])
def test_streaming_stalls_time_out_and_retry(openai_config: Path, server: FakeLLM,
                                             action: Action, status: str) -> None:
    edit_config(openai_config, diag={"openai": {"stream": True, "adaptive": False,
                                                "backoff_base_s": 0.01, "ttft_timeout_s": 0.5,
                                                "inter_token_timeout_s": 0.5}})
    server.script(action)
    report, rows, n_wrong = run_diagnosis(openai_config)
    assert len(rows) == n_wrong and not any(r.degraded for r in rows)
    assert report.calls == n_wrong + 1
    assert statuses(openai_config).count(status) == 1
    # the stalled attempt held its slot until the timeout: its latency is reported too
    with SignalStore(openai_config.parent / "signals.db") as store:
        fp = Session.open(openai_config).partition.key
        latency = store.latency_by_status(fp)
    assert latency[status]["n"] == 1 and latency[status]["p50_ms"] >= 450
    assert latency["ok"]["n"] == n_wrong


def test_invalid_json_is_repaired_with_the_error_shown(openai_config: Path,
                                                       server: FakeLLM) -> None:
    server.script(Action("invalid_json"))
    report, rows, n_wrong = run_diagnosis(openai_config)
    assert len(rows) == n_wrong and not any(r.degraded for r in rows)
    assert report.calls == n_wrong + 1
    repairs = [r["messages"] for r in server.requests if len(r["messages"]) > 2]
    assert len(repairs) == 1  # the one invalid answer, shown back with the error
    assert repairs[0][-2] == {"role": "assistant", "content": INVALID_JSON_CONTENT}
    assert "not a valid diagnosis" in repairs[0][-1]["content"]


def test_schema_invalid_twice_is_degraded_retried_in_the_run_then_next_run(
        openai_config: Path, server: FakeLLM) -> None:
    first_prompt: list[str] = []

    def one_question_answers_badly(body: dict, index: int) -> Action | None:
        prompt = body["messages"][1]["content"]  # the call and its repair share it
        first_prompt[:] = first_prompt or [prompt]
        return Action("schema_invalid") if prompt == first_prompt[0] else None

    server.responder = one_question_answers_badly
    report, rows, n_wrong = run_diagnosis(openai_config)
    server.responder = None
    degraded = [r for r in rows if r.degraded]
    assert len(rows) == n_wrong and len(degraded) == 1
    assert "invalid output" in degraded[0].rationale
    # call + repair, then one more pass in the same run (call + repair again)
    assert report.calls == n_wrong + 3 and report.retried_degraded == 1
    assert report.still_degraded == [degraded[0].question_id]
    assert statuses(openai_config).count("invalid_output") == 4
    # the next pass retries the degraded row only (its invalid answers were never cached)
    report, rows, _ = run_diagnosis(openai_config)
    assert report.diagnosed == 1 and report.calls == 1 and report.cache_hits == 0
    assert not any(r.degraded for r in rows)


T1_WITH_TARGET = ('{"tier": "T1", "error_type": "retrieval", "cause_category": '
                  '"missed_evidence", "evolution_target": "skill:counting", "rationale": '
                  '"A slip on reachable evidence.", "confidence": 0.7}')


@pytest.mark.parametrize("repaired", [True, False])
def test_a_t1_with_an_evolution_target_is_repaired_or_degraded_never_stored_valid(
        openai_config: Path, server: FakeLLM, repaired: bool) -> None:
    """The prompts say a lapse (T1) has no evolution target; a model that gives one anyway
    gets the repair call naming the rule, and is degraded if it insists."""
    first_prompt: list[str] = []

    def t1_with_a_target(body: dict, index: int) -> Action | None:
        prompt = body["messages"][1]["content"]
        first_prompt[:] = first_prompt or [prompt]
        if prompt != first_prompt[0] or (repaired and len(body["messages"]) > 2):
            return None  # the others, and (repaired) the answer to the repair call
        return Action("text", content=T1_WITH_TARGET)

    server.responder = t1_with_a_target
    report, rows, n_wrong = run_diagnosis(openai_config)
    repairs = [b["messages"] for b in server.requests if len(b["messages"]) > 2]
    assert repairs and "a T1 (lapse) has no evolution_target" in repairs[0][-1]["content"]
    assert len(rows) == n_wrong
    assert not any(r.tier == "T1" and r.evolution_target for r in rows)
    assert sum(r.degraded for r in rows) == (0 if repaired else 1)


def test_401_fails_at_once_naming_the_variable_not_the_key(openai_config: Path,
                                                           server: FakeLLM,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "bad-key")
    with pytest.raises(UserError) as err:
        run_diagnosis(openai_config)
    assert err.value.exit_code == 2
    assert "OPENAI_API_KEY" in err.value.line() and "bad-key" not in err.value.line()
    assert len(server.requests) == 1  # no retry


def test_breaker_stops_the_run_and_keeps_finished_rows(openai_config: Path,
                                                       server: FakeLLM) -> None:
    server.script(Action(), Action(), Action(), *[Action("status", status=503)] * 50)
    threshold = r"failed 4 attempts in a row \(diag.openai.breaker_threshold: 4\)"
    with pytest.raises(RunFailure, match=threshold):
        run_diagnosis(openai_config)
    db = openai_config.parent / "signals.db"
    done = sqlite3.connect(db).execute(
        "SELECT COUNT(*) FROM signals WHERE infra = 0 AND degraded = 0").fetchone()[0]
    assert done == 3
    assert len(server.requests) == 3 + 4  # stopped once the breaker opened


def test_switching_judge_makes_a_new_partition(small_workspace: Path, openai_config: Path,
                                               server: FakeLLM) -> None:
    from split_assets.cli import main

    edit_config(openai_config, diag={"judge": "rules", "model": "rules-v1"})
    assert main(["run", "--config", str(openai_config)]) == 0
    rules_fp = Session.open(openai_config).partition.key
    db = openai_config.parent / "signals.db"
    before = sqlite3.connect(db).execute(
        "SELECT * FROM signals WHERE diag_fingerprint = ? ORDER BY 1", (rules_fp,)).fetchall()
    edit_config(openai_config, diag={"judge": "openai", "model": "fake-model"})
    assert Session.open(openai_config).partition.key != rules_fp
    run_diagnosis(openai_config)
    after = sqlite3.connect(db).execute(
        "SELECT * FROM signals WHERE diag_fingerprint = ? ORDER BY 1", (rules_fp,)).fetchall()
    assert after == before


def test_changing_one_prompt_changes_the_fingerprint(openai_config: Path,
                                                     tmp_path: Path) -> None:
    import shutil

    prompts = tmp_path / "prompts"
    shutil.copytree(Path(__file__).parents[2] / "prompts", prompts)
    edit_config(openai_config, diag={"prompts_dir": str(prompts)})
    key = Session.open(openai_config).partition.key
    (prompts / "confirmation_bias.md").write_text("Did the agent commit early?\n")
    assert Session.open(openai_config).partition.key != key
    edit_config(openai_config, diag={"openai": {"temperature": 0.7}})
    assert Session.open(openai_config).partition.key != key


def test_dry_run_checks_environment_and_calls_nothing(openai_config: Path, server: FakeLLM,
                                                      run_cli, monkeypatch) -> None:  # noqa: ANN001
    code, out, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    assert code == 0, err
    plan = kv(out)
    assert int(plan["estimated_calls"]) == int(plan["to_diagnose"]) > 0
    assert int(plan["estimated_tokens"]) > 0
    assert server.requests == []
    # answers already in the response cache are not counted as calls to pay for
    run_diagnosis(openai_config)
    conn = sqlite3.connect(openai_config.parent / "signals.db")
    with conn:
        conn.execute("DELETE FROM signals WHERE infra = 0")
    conn.close()
    code, out, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    again = kv(out)
    assert code == 0 and again["to_diagnose"] == plan["to_diagnose"]
    assert again["cached_answers"] == plan["to_diagnose"] and again["estimated_calls"] == "0"
    monkeypatch.delenv("OPENAI_API_KEY")  # the estimate needs no key (issue 37); a run does
    code, out, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    assert code == 0 and kv(out)["source.OPENAI_API_KEY"].startswith("unset"), err
    code, _, err = run_cli("run", "--config", str(openai_config))
    assert code == 2 and "error: OPENAI_API_KEY is not set" in err


def test_full_run_through_dagster_with_openai_judge(openai_config: Path, server: FakeLLM,
                                                    run_cli) -> None:  # noqa: ANN001
    from dagster import AssetKey, DagsterInstance

    server.model_reported = "fake-model-1"
    code, out, err = run_cli("run", "--config", str(openai_config))
    assert code == 0, err
    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("diagnosis_signals")).asset_materialization.metadata
    assert meta["calls"].value == meta["diagnosed_now"].value > 0
    assert meta["reported_models"].value == ["fake-model-1"]
    assert "sk-test-secret-123" not in out + err


def test_tls_context_is_built_once_and_verifies_certificates() -> None:
    """The judge builds the client's TLS context in the background, once per process; it is
    the client's own secure default (certificates and host names verified)."""
    import ssl

    from split_assets.judge.chat_client import tls_context

    context = tls_context().result(timeout=30)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert tls_context() is tls_context()


def test_a_refused_connection_is_named_with_the_url(openai_config: Path, server: FakeLLM,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """No server where OPENAI_BASE_URL points: the breaker's line says the connection was
    refused and at which URL (credentials are left out: test_connection_failures_are_named)."""
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    with pytest.raises(RunFailure) as failure:
        run_diagnosis(openai_config)
    line = failure.value.line()
    assert f"the last: connection refused (http://127.0.0.1:{port}/v1)" in line
    assert not server.requests


@pytest.mark.parametrize(("cause", "named"), [
    (ConnectionRefusedError(111, "Connection refused"), "connection refused"),
    (socket.gaierror(-2, "Name or service not known"), "name not resolved"),
    (ssl.SSLCertVerificationError("certificate verify failed"), "TLS failed"),
    (TimeoutError(), "connection timed out"),
    (ConnectionResetError(104, "Connection reset by peer"), "connection reset"),
])
def test_connection_failures_are_named(cause: BaseException, named: str) -> None:
    import openai

    from split_assets.judge.call_policy import connection_failure

    try:
        try:
            raise cause
        except BaseException as inner:
            raise openai.APIConnectionError(request=None) from inner  # type: ignore[arg-type]
    except openai.APIConnectionError as exc:
        said = connection_failure(exc, "https://k:s@api.example.org:8443/v1?x=1")
    assert said == f"{named} (https://api.example.org:8443/v1)"


def test_a_base_url_with_credentials_is_refused_up_front(openai_config: Path, server: FakeLLM,
                                                         run_cli,  # noqa: ANN001
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url.replace("://", "://me:hunter22@"))
    code, _, err = run_cli("run", "--config", str(openai_config))
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "OPENAI_BASE_URL holds credentials" in err and "hunter22" not in err
    assert not server.requests
