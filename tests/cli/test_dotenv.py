"""Settings from .env files: the current folder's and the one beside the config, the process
environment winning over both, Dagster's own .env loading (documented in the README), and the
values never printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import kv

from testkit.llm_server import FakeLLM

SECRET = "sk-dotenv-secret-4711"


def _dotenv(folder: Path, **values: str) -> None:
    (folder / ".env").write_text("".join(f"{k}={v}\n" for k, v in values.items()),
                                 encoding="utf-8")


def _quiet_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_a_key_only_in_the_dotenv_beside_the_config_works(
        openai_config: Path, server: FakeLLM, run_cli, tmp_path: Path,  # noqa: ANN001
        monkeypatch: pytest.MonkeyPatch) -> None:
    _quiet_judge(monkeypatch)
    _dotenv(openai_config.parent, OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=server.base_url)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the CLI runs from another folder: found beside the config
    code, out, err = run_cli("run", "--config", str(openai_config), "--dry-run")
    assert code == 0, err
    env_file = str((openai_config.parent / ".env").absolute())
    assert kv(out)["source.OPENAI_API_KEY"] == env_file  # names only, never values
    assert kv(out)["source.OPENAI_BASE_URL"] == env_file
    code, out, err = run_cli("run", "--config", str(openai_config))
    assert code == 0, err
    assert server.keys and set(server.keys) == {SECRET}
    assert SECRET not in out + err
    for path in openai_config.parent.rglob("*"):
        if path.is_file() and path.name != ".env":
            assert SECRET.encode() not in path.read_bytes(), path


def test_the_environment_wins_and_the_config_folder_wins_over_the_current_one(
        openai_config: Path, server: FakeLLM, run_cli, tmp_path: Path,  # noqa: ANN001
        monkeypatch: pytest.MonkeyPatch) -> None:
    _quiet_judge(monkeypatch)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    _dotenv(here, OPENAI_API_KEY="sk-from-cwd", OPENAI_BASE_URL=server.base_url)
    _dotenv(openai_config.parent, OPENAI_API_KEY="sk-from-config-folder")
    code, out, _ = run_cli("run", "--config", str(openai_config), "--dry-run")
    assert kv(out)["source.OPENAI_API_KEY"] == str((openai_config.parent / ".env").absolute())
    assert kv(out)["source.OPENAI_BASE_URL"] == str((here / ".env").absolute())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-environment")
    code, out, err = run_cli("run", "--config", str(openai_config))
    assert code == 0, err
    assert set(server.keys) == {"sk-from-environment"}
    code, out, _ = run_cli("run", "--config", str(openai_config), "--dry-run")
    assert kv(out)["source.OPENAI_API_KEY"] == "environment"
    assert "sk-from" not in out


@pytest.mark.parametrize("tool", ["dagster asset materialize", "dg launch"])
def test_under_dagster_its_own_dotenv_wins(openai_config: Path, server: FakeLLM,
                                           dagster_home: Path, run_cli,  # noqa: ANN001
                                           tool: str) -> None:
    """`dagster` loads the .env of the folder it starts in over the process environment
    (dagster/_cli/utils.py: _inject_local_env_file), and so does `dg launch` (it runs
    `dagster asset materialize` in its process); the .env beside the config fills the rest."""
    code, out, err = run_cli("fingerprint", "--config", str(openai_config), "--register")
    assert code == 0, err
    started_in = openai_config.parent.parent / "started_in"
    started_in.mkdir()
    _dotenv(started_in, OPENAI_API_KEY="sk-dagster-dotenv")
    _dotenv(openai_config.parent, OPENAI_API_KEY="sk-config-dotenv",
            OPENAI_BASE_URL=server.base_url)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_BASE_URL"}
    env.update(DAGSTER_HOME=str(dagster_home), SPLIT_ASSETS_CONFIG=str(openai_config),
               OPENAI_API_KEY="sk-process-environment", VIRTUAL_ENV=sys.prefix)
    bin_dir, partition = Path(sys.executable).parent, out.splitlines()[0]
    command = ([str(bin_dir / "dagster"), "asset", "materialize", "-m",
                "split_assets.definitions", "--select", "*", "--partition", partition]
               if tool.startswith("dagster") else
               [str(bin_dir / "dg"), "launch", "--target-path", str(Path(__file__).parents[2]),
                "--assets", "*", "--partition", partition])
    proc = subprocess.run(command, cwd=started_in, env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(server.keys) == {"sk-dagster-dotenv"}  # the base URL came from the config's
    assert "sk-dagster-dotenv" not in proc.stdout + proc.stderr


DG_PROJECT = """[project]
name = "split-assets-elsewhere"
version = "0"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "split_assets"
code_location_name = "split_assets"
code_location_target_module = "split_assets.definitions"

[tool.dg.cli]
telemetry = { enabled = false }
"""


def test_under_dg_dev_the_project_roots_dotenv_wins(openai_config: Path, dagster_home: Path,
                                                   tmp_path: Path) -> None:
    """`dg dev` moves to the project root and hands the code location that folder's .env
    (DAGSTER_PROJECT_ENV_FILE_PATHS) over the process environment, wherever it was started
    (here in a subfolder with a .env of its own). Seen in the resource view: the judge
    endpoint's base URL, read as the code location loads. The project is a folder of its own
    holding the package by a link, so the test writes no .env into the repository."""
    from helpers.dagster_ui import resource_details, start_dg_dev

    project, started_in = tmp_path / "project", tmp_path / "project" / "sub"
    started_in.mkdir(parents=True)
    (project / "pyproject.toml").write_text(DG_PROJECT, encoding="utf-8")
    (project / "split_assets").symlink_to(Path(__file__).resolve().parents[2] / "split_assets")
    _dotenv(project, OPENAI_BASE_URL="http://project-root.example/v1")
    _dotenv(started_in, OPENAI_BASE_URL="http://started-in.example/v1")
    env = {"SPLIT_ASSETS_CONFIG": str(openai_config),
           "OPENAI_BASE_URL": "http://process-environment.example/v1"}
    with start_dg_dev(dagster_home, env, where=started_in) as dev:
        shown = resource_details(dev.url)["judge_endpoint"]["values"]["base_url"]
    assert json.loads(shown) == "http://project-root.example/v1"
