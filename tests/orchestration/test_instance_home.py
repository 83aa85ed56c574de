"""Which Dagster instance a command uses: ``DAGSTER_HOME``, else the project's, else one fixed
folder outside the working one (``orchestration/instance.resolve_dagster_home``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import kv


def test_run_from_another_folder_uses_the_project_s_instance(
        small_workspace: Path, run_cli, tmp_path: Path,  # noqa: ANN001
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No DAGSTER_HOME: the project's instance, wherever the command starts; none is made in
    the working folder, and run names the one it used."""
    from split_assets.orchestration import instance

    project = tmp_path / "project"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.delenv("DAGSTER_HOME")
    monkeypatch.setattr(instance, "project_root", lambda: project)
    monkeypatch.chdir(elsewhere)
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    assert kv(out)["dagster_home"] == str(project / ".dagster_home")
    assert "telemetry" in (project / ".dagster_home" / "dagster.yaml").read_text()
    assert not (elsewhere / ".dagster_home").exists()
    monkeypatch.setattr(instance, "project_root", lambda: None)  # installed without a checkout
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("DAGSTER_HOME")
    assert instance.resolve_dagster_home() == tmp_path / "state/split-assets/dagster_home"
