"""A frozen 60-video generated workspace (trees, traces, the rules judge's diagnoses) for the
loop tests, frozen once; each test gets a copy."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest

from split_assets.demo import build_workspace
from testkit.configs import edit_config


@pytest.fixture(scope="session")
def _frozen_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from split_assets.cli import main

    tmp = tmp_path_factory.mktemp("loop_template")
    summary = build_workspace(tmp / "ws", n_videos=60, seed=11)
    edit_config(summary.config_path, video_split={"epsilon": 0.06},
                evaluation={"test_looks_max": 1})
    saved = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(tmp / "dagster_home")
    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["run", "--config", str(summary.config_path)])
    finally:
        if saved is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = saved
    assert code == 0, err.getvalue()
    return tmp / "ws"


@pytest.fixture
def frozen(_frozen_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the frozen workspace; returns its config path."""
    shutil.copytree(_frozen_template, tmp_path / "ws")
    return tmp_path / "ws" / "video_split.yaml"
