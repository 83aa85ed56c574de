"""Reference runs on the on-ramp (issue 45): ``import ... --reference FILE`` beside the baseline
in one command (all or nothing), the ids they get, the config they are written into, and what
a run without them says: a valid split that is not outcome-driven warns on the CLI, as a WARN
check, at the top of the split card and on export-signals' stderr."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import yaml
from conftest import kv
from helpers.official_layout import write_results
from helpers.refusals import refused

from split_assets.importing.references import derived_id


def _files(tmp_path: Path, *runs: str, n_videos: int = 30) -> list[str]:
    return [str(write_results(tmp_path / f"{run}.json", n_videos, run,
                              skill=0.05 * i)) for i, run in enumerate(runs)]


def _state(ws: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(ws.rglob("*")) if p.is_file()}


def test_baseline_and_references_in_one_command(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    base, m1, m2 = _files(tmp_path, "base", "m1", "m2")
    ws = tmp_path / "ws"
    code, out, err = run_cli("import", "videomme", "--results", base, "--run-id", "base",
                             "--workspace", str(ws), "--reference", m1, "--reference-id",
                             "llava-7b", "--reference", m2)
    assert code == 0, err
    assert "added llava-7b to diag.reference_runs and video_split.balance_runs" in out
    assert "added m2 to diag.reference_runs and video_split.balance_runs" in out  # its name
    runs = sqlite3.connect(ws / "harness.db").execute(
        "SELECT run_id, COUNT(*) FROM predictions GROUP BY run_id ORDER BY 1").fetchall()
    assert runs == [("base", 90), ("llava-7b", 90), ("m2", 90)]
    text = (ws / "video_split.yaml").read_text()
    doc = yaml.safe_load(text)
    assert doc["diag"]["reference_runs"] == ["llava-7b", "m2"]
    assert doc["video_split"]["balance_runs"] == ["llava-7b", "m2"]
    assert doc["video_split"]["floor_share"] == 0.7 and doc["video_split"]["floor_k"] == {}
    for key in ("floor_share:", "balance_runs:", "reference_runs:"):  # each with a comment
        assert re.search(rf"^  {key} .+ # \w", text, re.M), key
    # later, before the freeze, --role reference adds to both lists
    (m3,) = _files(tmp_path, "m3")
    code, out, err = run_cli("import", "videomme", "--results", m3, "--run-id", "m3",
                             "--workspace", str(ws), "--role", "reference")
    assert code == 0, err
    doc = yaml.safe_load((ws / "video_split.yaml").read_text())
    assert doc["video_split"]["balance_runs"] == doc["diag"]["reference_runs"][-3:] == [
        "llava-7b", "m2", "m3"]


def test_a_bad_reference_leaves_nothing(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    base, m1 = _files(tmp_path, "base", "m1")
    other = str(write_results(tmp_path / "other.json", 32, "other"))
    ws = tmp_path / "ws"
    refused(run_cli("import", "videomme", "--results", base, "--run-id", "base",
                     "--workspace", str(ws), "--reference", m1, "--reference", other),
             "not in the workspace's benchmark")
    assert not ws.exists()  # the baseline and the first reference were undone with it
    refused(run_cli("import", "videomme", "--results", base, "--run-id", "base",
                     "--workspace", str(ws), "--reference", m1, "--reference-id", "a",
                     "--reference-id", "b"), "--reference-id is given 2 times for 1")
    refused(run_cli("import", "videomme", "--results", base, "--run-id", "base",
                     "--workspace", str(ws), "--reference", m1, "--reference-id", "base"),
             "'base'", "is taken by a run of this command")
    assert not ws.exists()
    assert run_cli("import", "videomme", "--results", base, "--run-id", "base",
                   "--workspace", str(ws))[0] == 0
    before = _state(ws)
    refused(run_cli("import", "videomme", "--results", m1, "--run-id", "m1", "--workspace",
                     str(ws), "--reference", other), "not in the workspace's benchmark")
    assert _state(ws) == before  # an existing workspace gets its files back


def test_references_are_one_unit_with_the_baseline(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """Never beside a looking role or --replace, never the same file twice, never a second
    copy of a reference the workspace has."""
    base, m1 = _files(tmp_path, "base", "m1")
    ws = tmp_path / "ws"
    refused(run_cli("import", "videomme", "--results", base, "--run-id", "base",
                    "--workspace", str(ws), "--reference", m1, "--reference", m1),
            "is given twice")
    assert run_cli("import", "videomme", "--results", base, "--run-id", "base",
                   "--workspace", str(ws), "--reference", m1)[0] == 0
    before = _state(ws)
    (m2,) = _files(tmp_path, "m2")
    refused(run_cli("import", "videomme", "--results", m2, "--run-id", "c", "--workspace",
                    str(ws), "--role", "candidate", "--reference", m1),
            "--reference with --role candidate", "a command of their own")
    refused(run_cli("import", "videomme", "--results", m2, "--run-id", "m2", "--workspace",
                    str(ws), "--reference", m1), "'m1'", "taken by a run of the workspace")
    assert _state(ws) == before


def test_reference_ids_from_the_files() -> None:
    """lmms-eval names every file <date>_samples_<task>.jsonl in the model's folder."""
    lmms = Path("out/lmms-lab__LLaVA-Video-7B/20260801_101500_samples_videomme.jsonl")
    assert derived_id("lmms-eval", lmms) == "lmms-lab__LLaVA-Video-7B"
    assert derived_id("videomme", Path("runs/gpt4o_results.json")) == "gpt4o_results"


def test_a_run_that_is_not_outcome_driven_says_so(run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """No reference runs: every wrong answer is T1. The split is valid and frozen, and the run
    ends with the warnings; floors_met is a WARN; the card and export-signals say it too."""
    from dagster import AssetCheckKey, AssetCheckSeverity, AssetKey, DagsterInstance

    (base,) = _files(tmp_path, "base")
    ws = tmp_path / "ws"
    assert run_cli("import", "videomme", "--results", base, "--run-id", "base",
                   "--workspace", str(ws))[0] == 0
    config = str(ws / "video_split.yaml")
    code, out, err = run_cli("run", "--config", config)
    assert code == 0, err
    last = err.strip().splitlines()[-2:]
    assert last[0].startswith("warning: the answer-only rules judge has 0 reference run(s)")
    assert last[1].startswith("warning: no T2 at all: none of the") and "--reference" in last[1]
    manifest = json.loads(Path(kv(out)["manifest"]).read_text())
    assert [f"warning: {w}" for w in manifest["warnings"]] == last
    key = AssetCheckKey(AssetKey("frozen_pools"), "floors_met")
    latest = DagsterInstance.get().event_log_storage.get_latest_asset_check_execution_by_key(
        [key])
    evaluation = latest[key].event.dagster_event.event_specific_data
    assert not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN
    assert "not outcome-driven: the answer-only rules judge" in evaluation.description
    code, out, err = run_cli("report", "--config", config)
    assert code == 0, err
    card = Path(kv(out)["markdown"]).read_text().splitlines()
    assert card[2].startswith("> **Warning**: the answer-only rules judge has 0 reference")
    code, out, err = run_cli("export-signals", "--out", str(tmp_path / "t.jsonl"), "--config",
                             config)
    assert code == 0 and [f"warning: {w}" for w in manifest["warnings"]] == \
        err.strip().splitlines(), err
