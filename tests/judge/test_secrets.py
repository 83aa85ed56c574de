"""No credential the judge's client sends reaches disk: against an endpoint that echoes the
request's Authorization header (or a custom header) into its answers -- plain, streamed in
chunks that split it, JSON- or unicode-escaped, in a 4xx/5xx error body or a stream's error
event -- ``split-assets run`` leaves the key in no byte of any file under the workspace or
DAGSTER_HOME, in no row of a SQLite file, and in no PostgreSQL row."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import edit_config

from split_assets.lib.redact import MARKER
from testkit.llm_server import Action, FakeLLM, escape_echo

# the characters encoders escape (/ " & < >), then a tail that no escaping changes
KEY = 'sk-te/st"k&y<>Z7qT4wXk9LmP2rVs'
PROXY_TOKEN = "pt-8Hq2LmX0vNc7RtYw"
_TAILS = ("Z7qT4wXk9LmP2rVs", "8Hq2LmX0vNc7RtYw")


def leaked_forms(secret: str) -> list[bytes]:
    """Every form in which ``secret`` (or its unescapable tail) could sit in a file: as it is,
    escaped as the echo escapes it, and escaped once more (a JSON answer inside a JSON
    record), as UTF-8."""
    tails = [t for t in _TAILS if t in secret]
    once = {f for s in (secret, *tails) for f in
            (s, *(escape_echo(s, style) for style in ("plain", "json", "unicode")))}
    twice = {json.dumps(f)[1:-1] for f in once}
    return sorted(f.encode("utf-8") for f in once | twice)


def _sqlite_texts(path: Path) -> Iterator[str]:
    """Every text and blob value of every table of a SQLite file (a value that spills into
    overflow pages is not contiguous in the file's bytes)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                             "'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        yield value.decode("utf-8", "replace")
                    elif isinstance(value, str):
                        yield value
    finally:
        conn.close()


def files_holding(secret: str, *folders: Path) -> list[str]:
    """Files under ``folders`` that hold ``secret`` in any form, in their bytes or (SQLite
    files) in any row."""
    forms = leaked_forms(secret)
    found = []
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            data = path.read_bytes()
            if any(form in data for form in forms):
                found.append(str(path))
            elif data.startswith(b"SQLite format 3\x00") and any(
                    form in text.encode("utf-8") for text in _sqlite_texts(path)
                    for form in forms):
                found.append(f"{path} (a row)")
    return found


def postgres_rows_holding(url: str, secret: str) -> list[str]:
    """Tables whose text columns hold ``secret`` in any form, in any row."""
    import psycopg

    forms = [f.decode("utf-8") for f in leaked_forms(secret)]
    found = []
    with psycopg.connect(url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE "
            "table_schema = 'public' AND data_type IN ('text', 'character varying', 'json', "
            "'jsonb') ORDER BY 1, 2").fetchall()
        assert {t for t, _ in columns} >= {"signals", "llm_cache", "llm_calls"}
        for table, column in columns:
            for (value,) in conn.execute(f'SELECT "{column}"::text FROM "{table}"'):
                if value is not None and any(form in value for form in forms):
                    found.append(f"{table}.{column}")
                    break
    return found


def stored_texts(location: Path | str) -> list[str]:
    """The rationale of every diagnosis and every cached response."""
    sql = ("SELECT rationale FROM signals WHERE infra = 0 UNION ALL "
           "SELECT response FROM llm_cache")
    if isinstance(location, str):
        import psycopg

        with psycopg.connect(location) as conn:
            return [r[0] for r in conn.execute(sql)]
    return [r[0] for r in sqlite3.connect(location).execute(sql)]


# (scenario, diag.openai.stream, actions scripted first, the actions every other request takes
# in turn, expected exit code, the header echoed)
SCENARIOS = {
    "plain-and-json-escaped": (False, [], [Action(echo="plain"), Action(echo="json")], 0,
                               "authorization"),
    "streamed-split-and-unicode-escaped": (True, [], [Action(echo="plain"),
                                                      Action(echo="unicode")], 0,
                                           "authorization"),
    "error-body": (False, [Action("status", status=500, echo="json")],
                   [Action("status", status=400, echo="plain",
                           content="response_format json_object is not supported")],
                   2, "authorization"),
    "stream-error-event": (True, [], [Action("stream_error", echo="plain")], 1,
                           "authorization"),
    "custom-header": (False, [], [Action(echo="json", echo_header="x-proxy-token")], 0,
                      "x-proxy-token"),
}
# The store's safety net is one code path for both engines: PostgreSQL rows are scanned for the
# runs that store answers (SQLite runs every scenario).
ON_POSTGRES = ("plain-and-json-escaped", "streamed-split-and-unicode-escaped", "custom-header")
CASES = [(scenario, "sqlite") for scenario in SCENARIOS] + [
    (scenario, "postgresql") for scenario in ON_POSTGRES]


@pytest.mark.parametrize(("scenario", "backend"), CASES)
def test_an_echoed_credential_reaches_no_file_and_no_row(
        scenario: str, backend: str, openai_config: Path, server: FakeLLM, dagster_home: Path,
        run_cli, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
        request: pytest.FixtureRequest) -> None:
    stream, first, every, exit_code, header = SCENARIOS[scenario]
    secret = KEY if header == "authorization" else PROXY_TOKEN
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", f"X-Proxy-Token: {PROXY_TOKEN}")
    location: Path | str = openai_config.parent / "signals.db"
    if backend == "postgresql":
        location = request.getfixturevalue("pg_url")
        edit_config(openai_config, paths={"signals_db": location})
    edit_config(openai_config, diag={"openai": {"stream": stream, "max_retries": 2}})
    server.responder = lambda body, index: every[index % len(every)]
    server.script(*first)

    code, out, err = run_cli("run", "--config", str(openai_config))

    leaks = {"files": files_holding(secret, openai_config.parent, dagster_home),
             "postgres rows": (postgres_rows_holding(location, secret)
                               if isinstance(location, str) else []),
             "output": [f for f in leaked_forms(secret) if f in (out + err).encode("utf-8")]}
    assert leaks == {"files": [], "postgres rows": [], "output": []}
    assert code == exit_code, err
    statuses = set(server.statuses)
    assert statuses == ({200} if exit_code != 2 else {500, 400}), statuses
    if exit_code == 0:  # the echo arrived, and was redacted: in every diagnosis and response
        texts = stored_texts(location)
        assert texts and all(MARKER in text for text in texts)
    else:  # the error line quotes the endpoint's message, redacted
        assert f"{header}: Bearer {MARKER}" in err or f"{header}: {MARKER}" in err, err


def test_the_client_s_own_debug_log_is_redacted(monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """While a client lives, whatever the openai client and its HTTP layers log (OPENAI_LOG=
    debug) passes the same redaction; once it is closed, its filter goes."""
    import asyncio
    import logging

    from split_assets.judge.chat_transport import ChatTransport
    from split_assets.settings.judge_sections import OpenAIJudgeConfig

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    transport = ChatTransport(OpenAIJudgeConfig())
    with caplog.at_level(logging.DEBUG):
        for name in ("openai._base_client", "httpx"):
            logging.getLogger(name).debug("Request options: %s",
                                          {"headers": {"X-Echo": f"Bearer {KEY}"}})
    assert KEY not in caplog.text and caplog.text.count(MARKER) == 2
    asyncio.run(transport.aclose())
    from split_assets.lib.redact import LogRedaction

    assert not [f for f in logging.getLogger("openai._base_client").filters
                if isinstance(f, LogRedaction)]
