"""Operational faults through the real CLI in a subprocess, with the openai judge against the
local test server: SIGKILL at named points (``SPLIT_ASSETS_KILL_AT`` failpoints: timed kills on
two noisy cores would miss), Ctrl-C, two concurrent runs, and a degraded diagnosis.

After each fault: no pools.json without its manifest, the re-run pays at most for the questions
that had no committed row, and it freezes the same bytes as a clean run."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import edit_config, kv

from split_assets.cli import main
from split_assets.demo import build_workspace
from testkit.llm_server import Action, FakeLLM, always_invalid_for_the_first_question

PIN = "2026-01-01T00:00:00Z"
CLI = [sys.executable, "-m", "split_assets.cli"]
ERROR_LINE = re.compile(r"^error: .+ \(.+\): .+$")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLM]:
    with FakeLLM(latency_s=0.02) as srv:
        yield srv


@pytest.fixture(scope="module")
def ops_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("ops") / "ws"
    summary = build_workspace(directory, n_videos=12, seed=5)
    edit_config(summary.config_path, video_split={"epsilon": 0.2, "floor_k": {}}, diag={
        "judge": "openai", "model": "fake-model", "concurrency": 2,
        "openai": {"backoff_base_s": 0.01, "backoff_max_s": 0.1, "max_retries": 2,
                   "timeout_s": 10.0}})
    import yaml

    data = yaml.safe_load(summary.config_path.read_text())
    data["video_split"]["floor_k"] = {}
    summary.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
    return directory


@pytest.fixture
def env(server: FakeLLM, dagster_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.responder = None
    server.clear()
    return dict(os.environ, SPLIT_ASSETS_DB_TIMEOUT_S="30")


def workspace(template: Path, tmp_path: Path, name: str = "ws") -> Path:
    shutil.copytree(template, tmp_path / name)
    return tmp_path / name / "video_split.yaml"


def run_in_process(config: Path, *extra: str) -> tuple[int, dict[str, str]]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--config", str(config), "--generated-at", PIN, *extra])
    if code != 0:
        print(err.getvalue()[-3000:])
    return code, kv(out.getvalue())


@pytest.fixture(scope="module")
def clean(ops_template: Path, server: FakeLLM, tmp_path_factory: pytest.TempPathFactory,
          ) -> tuple[bytes, bytes, int]:
    """A clean run's pools.json and manifest, and the wrong answers it diagnosed."""
    tmp = tmp_path_factory.mktemp("clean")
    config = workspace(ops_template, tmp)
    saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "DAGSTER_HOME")}
    os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test",
                      DAGSTER_HOME=str(tmp / "dh"))
    try:
        server.clear()
        code, lines = run_in_process(config)
        assert code == 0
        calls = len(server.requests)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Path(lines["pools"]).read_bytes(), Path(lines["manifest"]).read_bytes(), calls


def committed(config: Path) -> int:
    db = config.parent / "signals.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT COUNT(*) FROM signals WHERE infra = 0 AND degraded = 0"
                            ).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def assert_no_half_split(ws: Path) -> None:
    """A split folder (temporary ones start with '.') never holds pools.json alone."""
    for pools in ws.glob("splits/*/*/pools.json"):
        if not pools.parent.name.startswith("."):
            assert (pools.parent / "split_manifest.json").is_file(), pools


KILL_POINTS = [  # each a different state on disk when the process dies; the freeze's own
    # points (freeze.*) are killed in a forked child: tests/split/test_freeze_crash.py
    "run.registered", "diagnosis.claimed", "diagnosis.before_commit:2",
    "diagnosis.after_commit:3", "selection.done",
]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_sigkill_at_a_named_point_loses_nothing_and_pays_nothing_twice(
        point: str, ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM,
        clean: tuple[bytes, bytes, int]) -> None:
    config = workspace(ops_template, tmp_path)
    proc = subprocess.run([*CLI, "run", "--config", str(config), "--generated-at", PIN],
                          env=dict(env, SPLIT_ASSETS_KILL_AT=point), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]  # the point was reached
    assert_no_half_split(config.parent)
    paid_for = committed(config)
    calls_before = len(server.requests)
    code, lines = run_in_process(config)
    assert code == 0
    assert len(server.requests) - calls_before <= clean[2] - paid_for
    assert Path(lines["pools"]).read_bytes() == clean[0]
    assert Path(lines["manifest"]).read_bytes() == clean[1]
    assert not [p for p in config.parent.rglob("*") if p.name.endswith((".tmp", "-wal", "-shm"))]
    with sqlite3.connect(config.parent / "signals.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


# (a Ctrl-C mid-diagnosis: test_ctrl_c_exits_130_keeps_finished_diagnoses_and_releases_leases)
@pytest.mark.parametrize("point", ["freeze.pools_written"])
def test_ctrl_c_at_a_named_point_is_one_line_and_loses_nothing(
        point: str, ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM,
        clean: tuple[bytes, bytes, int]) -> None:
    config = workspace(ops_template, tmp_path)
    proc = subprocess.run([*CLI, "run", "--config", str(config), "--generated-at", PIN],
                          env=dict(env, SPLIT_ASSETS_KILL_AT=point, SPLIT_ASSETS_KILL_SIGNAL="INT"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert ERROR_LINE.match(last) and "finished diagnoses are kept" in last
    assert "Traceback" not in proc.stderr
    assert not list(config.parent.glob("splits/*/*/*.json"))  # interrupted before the freeze
    assert not [p for p in config.parent.rglob("*") if p.name.endswith((".tmp", "-wal", "-shm"))]
    paid_for, before = committed(config), len(server.requests)
    code, lines = run_in_process(config)
    assert code == 0 and len(server.requests) - before <= clean[2] - paid_for
    assert Path(lines["pools"]).read_bytes() == clean[0]


def test_ctrl_c_exits_130_keeps_finished_diagnoses_and_releases_leases(
        ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM,
        clean: tuple[bytes, bytes, int]) -> None:
    config = workspace(ops_template, tmp_path)
    edit_config(config, diag={"concurrency": 1})
    server.latency_s = 0.3
    try:
        proc = subprocess.Popen([*CLI, "run", "--config", str(config), "--generated-at", PIN],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 60
        while committed(config) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        server.latency_s = 0.02
    assert proc.returncode == 130, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert ERROR_LINE.match(last) and "finished diagnoses are kept" in last
    assert "Traceback" not in err
    assert committed(config) >= 2
    assert not list(config.parent.glob("splits/*/*/pools.json"))
    with sqlite3.connect(config.parent / "signals.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
    edit_config(config, diag={"concurrency": 2})
    before, paid_for = len(server.requests), committed(config)
    code, lines = run_in_process(config)
    assert code == 0 and len(server.requests) - before <= clean[2] - paid_for
    assert Path(lines["pools"]).read_bytes() == clean[0]


def two_runs_at_once(config: Path, env: dict[str, str], server: FakeLLM) -> list[tuple[str, str]]:
    """Two `split-assets run` processes started together (slower calls, so that they overlap);
    both must succeed. Returns their (stdout, stderr)."""
    server.latency_s = 0.1
    try:
        procs = [subprocess.Popen([*CLI, "run", "--config", str(config), "--generated-at", PIN],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        outputs = [p.communicate(timeout=180) for p in procs]
    finally:
        server.latency_s = 0.02
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    return outputs


def test_two_concurrent_runs_share_the_work_and_pay_once(
        ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM,
        clean: tuple[bytes, bytes, int]) -> None:
    config = workspace(ops_template, tmp_path)
    outputs = two_runs_at_once(config, env, server)
    assert len(server.requests) == clean[2]  # every question paid exactly once
    shas = {kv(out)["pools_sha256"] for out, _ in outputs}
    assert len(shas) == 1
    assert Path(kv(outputs[0][0])["pools"]).read_bytes() == clean[0]


def test_no_wait_refuses_while_another_run_holds_leases(
        ops_template: Path, tmp_path: Path, env: dict[str, str]) -> None:
    from split_assets.store.leases import LeaseOwner
    from split_assets.store.signals import SignalStore

    config = workspace(ops_template, tmp_path)
    other = LeaseOwner("elsewhere:1:x", "another-host", 1)
    with SignalStore(config.parent / "signals.db") as store:
        store.claim("baseline-2026-01", _fingerprint(config), [f"q{i}" for i in range(999)]
                    + _wrong_ids(config), other, 10_000, ttl_s=600)
    proc = subprocess.run([*CLI, "run", "--config", str(config), "--no-wait"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert ERROR_LINE.match(last) and "another run is diagnosing" in last
    assert "host another-host pid 1" in last


def test_a_degraded_diagnosis_freezes_nothing_until_it_is_diagnosed(
        ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM,
        clean: tuple[bytes, bytes, int]) -> None:
    config = workspace(ops_template, tmp_path)
    bad: list[str] = []  # the first question asked: every answer to it is invalid
    server.responder = always_invalid_for_the_first_question(bad)
    proc = subprocess.run([*CLI, "run", "--config", str(config), "--generated-at", PIN],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert ERROR_LINE.match(last) and "stayed degraded" in last and "--allow-degraded" in last
    assert not list(config.parent.glob("splits/*/*/*.json"))
    # --allow-degraded 1 freezes anyway, listing the question in the manifest (another copy)
    allowed = workspace(ops_template, tmp_path, "allowed")
    code, lines = run_in_process(allowed, "--allow-degraded", "1")
    assert code == 0
    import json

    degraded = json.loads(Path(lines["manifest"]).read_bytes())["degraded_question_ids"]
    assert len(degraded) == 1
    # settled: later runs, flag or not, never send it again, and the split stays as frozen;
    # the dry run's plan says so (it used to count the settled question as to diagnose)
    frozen = Path(lines["pools"]).read_bytes()
    before = len(server.requests)
    code, plan = run_in_process(allowed, "--dry-run")
    assert code == 0
    assert (plan["to_diagnose"], plan["settled_degraded"], plan["estimated_calls"]) == \
        ("0", "1", "0")
    code, lines = run_in_process(allowed)
    assert code == 0 and len(server.requests) == before
    assert Path(lines["pools"]).read_bytes() == frozen
    # the endpoint recovers: the next run diagnoses it and freezes what a clean run freezes
    server.responder = None
    code, lines = run_in_process(config)
    assert code == 0
    assert Path(lines["pools"]).read_bytes() == clean[0]


def _fingerprint(config: Path) -> str:
    from split_assets.app.session import Session

    return Session.open(config).partition.key


def _wrong_ids(config: Path) -> list[str]:
    from split_assets.app.session import Session
    from split_assets.diagnosis.plan import wrong_to_diagnose

    return [p.question_id for p in wrong_to_diagnose(Session.open(config).inputs.predictions)]


def test_an_endpoint_that_never_answers_leaves_no_row_and_freezes_nothing(
        ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM) -> None:
    config = workspace(ops_template, tmp_path)
    edit_config(config, diag={"openai": {"breaker_threshold": 1000, "max_retries": 1,
                                         "backoff_base_s": 0.01, "backoff_max_s": 0.02}})
    server.responder = lambda body, index: Action("status", status=503)
    code, _ = run_in_process(config)
    assert code == 1
    assert committed(config) == 0  # a failed call is not a verdict, not even a degraded one
    with sqlite3.connect(config.parent / "signals.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM signals WHERE infra = 0").fetchone()[0] == 0
    assert not list(config.parent.glob("splits/*/*/*.json"))
    server.responder = None
    code, _ = run_in_process(config)
    assert code == 0


def test_two_concurrent_passes_retry_a_degraded_question_once(
        ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM) -> None:
    import threading

    from helpers.openai_workspace import diagnose_plan

    from split_assets.app.session import Session

    config = workspace(ops_template, tmp_path)
    bad: list[str] = []  # the first question asked: every answer to it is invalid
    server.responder = always_invalid_for_the_first_question(bad)
    reports = []

    def one_run() -> None:  # a run of its own: its own judge, store connection and leases
        ws = Session.open(config)
        with ws.partition.store() as store:
            reports.append(diagnose_plan(ws, store))

    threads = [threading.Thread(target=one_run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    sent_bad = sum(r["messages"][1]["content"] == bad[0] for r in server.requests)
    assert sent_bad == 4  # call + repair, then one retry (call + repair) -- not one per run
    assert len(reports) == 2
    assert sum(r.diagnosed for r in reports) == reports[0].total_wrong + 1


def test_runs_sharing_a_postgres_store_survive_a_sigkill_and_freeze_the_sqlite_bytes(
        ops_template: Path, tmp_path: Path, env: dict[str, str], server: FakeLLM,
        clean: tuple[bytes, bytes, int], pg_url: str) -> None:
    import json

    config = workspace(ops_template, tmp_path)
    edit_config(config, paths={"signals_db": pg_url})
    killed = subprocess.run([*CLI, "run", "--config", str(config), "--generated-at", PIN],
                            env=dict(env, SPLIT_ASSETS_KILL_AT="diagnosis.after_commit:3"),
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (config.parent / "signals.db").exists()  # the URL is not taken for a path
    # two more workers share what is left (the dead one's leases are taken over at once)
    outputs = two_runs_at_once(config, env, server)
    # every question paid once; at most the killed worker's calls in flight (concurrency 2)
    assert clean[2] <= len(server.requests) <= clean[2] + 2
    frozen = Path(kv(outputs[0][0])["pools"])
    assert frozen.read_bytes() == clean[0]  # the bytes a SQLite store freezes
    manifest, sqlite_manifest = (json.loads(b) for b in (
        (frozen.parent / "split_manifest.json").read_bytes(), clean[1]))
    assert manifest["config"]["paths"].pop("signals_db") == pg_url  # as written, no password
    sqlite_manifest["config"]["paths"].pop("signals_db")
    assert manifest == sqlite_manifest
