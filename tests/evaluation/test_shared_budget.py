"""One test budget per baseline on a Dagster instance (issue 46): a second workspace made
from the same baseline file sees the first's looks, counts against the same budget (the
smallest any of them declares), and a look past it is refused with exit 2, naming the other
workspace, with nothing written."""

from __future__ import annotations

import hashlib
import shutil
import socket
import sqlite3
from pathlib import Path

from conftest import edit_config
from helpers.evaluated import N_VIDEOS
from helpers.official_layout import answers, write_predictions
from helpers.refusals import refused


def _state(ws: Path) -> dict[str, str]:
    files = [ws / "harness.db", ws / "video_split.yaml", *sorted(ws.glob("splits/*/*/*.json"))]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _import(run_cli, config: Path, run: str, *flags: str) -> tuple[int, str, str]:  # noqa: ANN001
    given = answers(N_VIDEOS, run, skill=0.05)
    return run_cli("import", "predictions", "--jsonl",
                   str(write_predictions(config.parent / f"{run}.jsonl", given)),
                   "--run-id", run, "--workspace", str(config.parent), "--role", "candidate",
                   *flags)


def _test_rows(run_cli, config: Path) -> list[tuple[str, str]]:  # noqa: ANN001
    import json

    code, out, err = run_cli("ledger", "--config", str(config), "--pool", "test", "--json")
    assert code == 0, err
    return [(row["run_id"], row["workspace"]) for row in json.loads(out)]


def test_two_workspaces_of_one_baseline_share_the_test_budget(
        evaluated: Path, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    first = evaluated
    # the same baseline file, imported and frozen in another folder: the same split, no looks
    second = Path(shutil.copytree(first.parent, tmp_path / "second")) / first.name
    edit_config(first, evaluation={"test_looks_max": 3})
    edit_config(second, evaluation={"test_looks_max": 2})  # the smallest declared applies
    code, _, err = _import(run_cli, first, "c1")
    assert code == 0 and err.startswith("test look 1 of 3 (import of c1:"), err
    code, _, err = _import(run_cli, second, "c2")
    # the first workspace's look counts here, and the smaller budget applies to both
    assert code == 0 and err.startswith("test look 2 of 2 (import of c2:"), err
    host = socket.gethostname()  # a workspace is its machine and folder
    assert _test_rows(run_cli, second) == [("c1", f"{host}:{first.parent}"),
                                           ("c2", f"{host}:{second.parent}")]
    before = _state(first.parent)
    refused(_import(run_cli, first, "c3"), "import refused",
            "evaluation.test_looks_max 2 are spent", str(second.parent),
            "one budget per baseline on this Dagster instance", "declared by")
    assert _state(first.parent) == before
    assert [run for run, _ in _test_rows(run_cli, first)] == ["c1", "c2"]
    # spent on purpose: said as beyond the shared budget, and seen by the other workspace
    code, _, err = _import(run_cli, first, "c3", "--spend-test-look")
    assert code == 0 and err.startswith("test look 3 beyond the budget of 2 (import of c3:"), err
    assert [run for run, _ in _test_rows(run_cli, second)] == ["c1", "c2", "c3"]


def test_a_second_workspace_cannot_shop_for_seeds(evaluated: Path, run_cli,  # noqa: ANN001
                                                  tmp_path: Path) -> None:
    """After a look in one workspace, a new split of the same baseline in another folder is
    the seed shopping the first one refuses: refused before anything is paid."""
    second = Path(shutil.copytree(evaluated.parent, tmp_path / "second")) / evaluated.name
    assert _import(run_cli, evaluated, "c1")[0] == 0
    edit_config(second, video_split={"seed": 8})
    refused(run_cli("run", "--config", str(second)), "a new split refused",
            "was looked at already", "--refreeze-after-test-look")


def test_the_look_line_without_a_budget(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    edit_config(evaluated, evaluation={"test_looks_max": None})
    code, out, err = _import(run_cli, evaluated, "c1")
    assert code == 0 and err.strip() == (
        "test look 1 (no budget) (import of c1: 900 test questions answered; the harness "
        "printed an aggregate over them)"), err
    assert "test look" not in out


def test_a_store_that_lost_its_looks_gets_them_back(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    """Deleting the ledger's rows (or signals.db) does not reset the budget while the
    instance keeps what the workspace published."""
    edit_config(evaluated, evaluation={"test_looks_max": 2})
    assert _import(run_cli, evaluated, "c1")[0] == 0
    with sqlite3.connect(evaluated.parent / "signals.db") as conn:
        conn.execute("DELETE FROM evaluations")
        conn.execute("DELETE FROM test_exposure")
    code, _, err = _import(run_cli, evaluated, "c2")
    assert code == 0 and err.startswith("test look 2 of 2 (import of c2:"), err
    refused(_import(run_cli, evaluated, "c3"), "evaluation.test_looks_max 2 are spent")
    assert [run for run, _ in _test_rows(run_cli, evaluated)] == ["c1", "c2"]
