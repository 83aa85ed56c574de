"""Which Dagster instance a command uses: ``DAGSTER_HOME``, else the project's, else one fixed
folder outside the working one (``lib/instance_home.resolve_dagster_home``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import kv


def test_run_from_another_folder_uses_the_project_s_instance(
        small_workspace: Path, run_cli, tmp_path: Path,  # noqa: ANN001
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No DAGSTER_HOME: the project's instance, wherever the command starts; none is made in
    the working folder, and run names the one it used."""
    from split_assets.lib import instance_home

    project = tmp_path / "project"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.delenv("DAGSTER_HOME")
    monkeypatch.setattr(instance_home, "project_root", lambda: project)
    monkeypatch.chdir(elsewhere)
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    assert kv(out)["dagster_home"] == str(project / ".dagster_home")
    assert "telemetry" in (project / ".dagster_home" / "dagster.yaml").read_text()
    assert not (elsewhere / ".dagster_home").exists()
    monkeypatch.setattr(instance_home, "project_root", lambda: None)  # installed, no checkout
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("DAGSTER_HOME")
    assert instance_home.resolve_dagster_home() == tmp_path / "state/split-assets/dagster_home"


def test_two_first_runs_at_once_on_a_new_instance_both_succeed(
        _small_template: Path, tmp_path: Path) -> None:
    """A brand-new DAGSTER_HOME: the first load creates the storage under a file lock, so two
    runs started at the same moment never leave it unloadable."""
    import os
    import shutil
    import subprocess
    import sys

    home = tmp_path / "new_home"  # nothing there yet: the first command makes it
    procs = []
    for name in ("a", "b"):
        shutil.copytree(_small_template, tmp_path / name)
        procs.append(subprocess.Popen(
            [str(Path(sys.executable).parent / "split-assets"), "run", "--config",
             str(tmp_path / name / "video_split.yaml")],
            env=dict(os.environ, DAGSTER_HOME=str(home)), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        assert kv(out)["dagster_home"] == str(home)
    assert (home / ".split_assets_storage_ready").is_file()
