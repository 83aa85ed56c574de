"""Shared fixtures: a small generated workspace and an isolated Dagster instance."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from split_assets.demo import build_workspace
from split_assets.orchestration.instance import DAGSTER_YAML
from testkit.configs import edit_config

# the openai judge's server and workspace; the session's PostgreSQL server
__all__ = ["edit_config", "kv"]  # what the tests import from here

pytest_plugins = ("helpers.openai_workspace", "helpers.postgres", "helpers.evaluated",
                  "helpers.frozen_loop")

SMALL_VIDEOS = 60

# `make test-fast` (SPLIT_ASSETS_FAST=1): the inner loop's tests, those that start no process,
# server, database or browser and run no Dagster job (`make test` runs every test). A test is
# left out for what it uses (a fixture below, the PostgreSQL side of ``signals_location``) or
# where it lives (folders and files whose tests all do), or by ``@pytest.mark.slow``.
SLOW_FIXTURES = frozenset({"run_cli", "server", "openai_config", "pg", "pg_url", "evaluated",
                           "battery", "full"})
SLOW_PLACES = ("cli/", "orchestration/", "demo/", "harness/", "test_ui_browser.py",
               "diagnosis/test_operations.py", "judge/test_local_servers.py",
               "judge/test_probe.py", "judge/test_concurrency.py", "judge/test_secrets.py",
               "helpers/test_llm_server.py", "split/test_freeze_crash.py",
               "review/test_review.py")

# tests/harness/ runs lmms-eval's own task code from a virtual environment of its own: only
# under `make test-harness`, which builds it and names its interpreter
collect_ignore_glob = [] if os.environ.get("SPLIT_ASSETS_HARNESS_PYTHON") else ["harness/*"]

# A suite started in the background of a non-interactive shell inherits SIGINT ignored, and so
# would every process it starts (exec keeps an ignored signal): the Ctrl-C tests would see runs
# that cannot be interrupted, and `dagster dev` would only stop when killed. Python's own
# handler here makes the children start with the default one.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _slow(item: pytest.Item) -> bool:
    where = Path(str(item.path)).relative_to(Path(__file__).parent).as_posix()
    params = getattr(getattr(item, "callspec", None), "params", {})
    return bool(item.get_closest_marker("slow") or where.startswith(SLOW_PLACES)
                or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
                or params.get("signals_location") == "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: left out of make test-fast (starts a process, "
                                       "a server or a Dagster run)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SPLIT_ASSETS_FAST") != "1":
        return
    slow = [item for item in items if _slow(item)]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not _slow(item)]


@pytest.fixture(scope="session")
def _small_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("template") / "ws"
    summary = build_workspace(directory, n_videos=SMALL_VIDEOS, seed=11)
    edit_config(summary.config_path, video_split={"epsilon": 0.06})
    return directory


@pytest.fixture
def small_workspace(_small_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of a 60-video generated workspace; returns its config path."""
    directory = tmp_path / "ws"
    shutil.copytree(_small_template, directory)
    return directory / "video_split.yaml"


@pytest.fixture(scope="session")
def _dagster_home_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Dagster instance whose storage is created once (creating it costs ~5 s on 2 cores);
    each test gets a copy."""
    home = tmp_path_factory.mktemp("dagster_home_template") / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML, encoding="utf-8")
    code = ("from dagster import DagsterInstance; i = DagsterInstance.get(); "
            "i.get_runs(); i.dispose()")
    subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DAGSTER_HOME=str(home)),
                   check=True, capture_output=True)
    return home


# Pure tests (plain functions over plain data) get no Dagster instance: DAGSTER_HOME points at a
# folder that does not exist, so one that reached for Dagster would fail, never share one.
PURE = ("split", "lib")


@pytest.fixture(autouse=True)
def dagster_home(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every other test gets its own Dagster instance (telemetry off)."""
    if Path(request.node.path).parent.name in PURE:
        home = Path("/nonexistent/split-assets-pure-tests")
    else:
        home = request.getfixturevalue("tmp_path") / "dagster_home"
        shutil.copytree(request.getfixturevalue("_dagster_home_template"), home)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    # declared workspaces (split-assets demo, workspace add) go beside it, never ./workspaces
    monkeypatch.setenv("SPLIT_ASSETS_WORKSPACES", str(home.parent / "workspaces"))
    return home


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``split-assets`` in-process; returns (exit code, stdout, stderr)."""
    from split_assets.cli import main

    def call(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return call


def kv(stdout: str) -> dict[str, str]:
    """The ``key=value`` lines of a command's stdout."""
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
