"""An evaluated workspace for the comparison tests (``evaluated``): a split frozen on 2,700
generated questions, with runs to compare (re-runs of the baseline agent, a copy of it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from helpers.official_layout import answers, write_predictions, write_results

N_VIDEOS = 900


@pytest.fixture(scope="session")
def _evaluated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An imported workspace (baseline, one reference run), two plain re-runs of the baseline
    agent (rerun1, rerun2), a copy of the baseline (same), and validation asked to hold more
    wrong answers than its fair share: the situation regression to the mean feeds on. BuiltBenchmark
    once (it costs a full run on 2,700 questions); each test gets a copy."""
    import contextlib
    import io
    import os

    from split_assets.cli import main

    tmp = tmp_path_factory.mktemp("evaluated")
    ws = tmp / "ws"
    saved = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(tmp / "dagster_home")

    def cli(*argv: str) -> None:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(list(argv))
        assert code == 0, err.getvalue()

    try:
        for run in ("base", "ref"):
            cli("import", "videomme", "--results",
                str(write_results(tmp / f"{run}.json", N_VIDEOS, run)), "--run-id", run,
                "--workspace", str(ws))
        for run, given in (("rerun1", answers(N_VIDEOS, "rerun1")),
                           ("rerun2", answers(N_VIDEOS, "rerun2")),
                           ("same", answers(N_VIDEOS, "base"))):
            cli("import", "predictions", "--jsonl",
                str(write_predictions(tmp / f"{run}.jsonl", given)), "--run-id", run,
                "--workspace", str(ws))
        config = ws / "video_split.yaml"
        doc = yaml.safe_load(config.read_text())
        doc["video_split"]["val_wrong_min"] = 300  # of 540 validation questions
        # the later imports registered as references (the default role); the re-runs of the
        # baseline agent and its copy are the runs the tests compare, not models to balance
        doc["video_split"]["balance_runs"] = ["ref"]
        del doc["video_split"]["floor_share"]  # no floors: the split these tests were made on
        config.write_text(yaml.safe_dump(doc))
        cli("run", "--config", str(config))
    finally:
        if saved is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = saved
    return ws


@pytest.fixture
def evaluated(_evaluated_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the evaluated workspace; returns its config path."""
    shutil.copytree(_evaluated_template, tmp_path / "ws")
    return tmp_path / "ws" / "video_split.yaml"
