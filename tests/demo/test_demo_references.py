"""The sample workspace with generated reference runs (issue 45: ``split-assets demo
--references N``): each balanced reference's test accuracy within 0.5 pp of its full-benchmark
accuracy, the leave-one-run-out figures in the manifest, and the same demo without references
keeping its split (tests/demo/test_demo_workspace.py pins those bytes)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import kv

from split_assets.demo import build_workspace
from split_assets.demo.generated_references import TRUTH_FILE, add_references


def test_balanced_references_stay_representative_on_the_demo(tmp_path: Path,  # noqa: ANN001
                                                              run_cli) -> None:
    summary = build_workspace(tmp_path / "ws")
    runs = add_references(tmp_path / "ws", 6)
    config = summary.config_path
    assert yaml.safe_load(config.read_text())["video_split"]["balance_runs"] == runs
    truth = json.loads((tmp_path / "ws" / TRUTH_FILE).read_text())
    accuracies = [r["accuracy"] for r in truth["runs"]]
    assert len(accuracies) == 6 and all(0.44 <= a <= 0.72 for a in accuracies)
    code, out, err = run_cli("run", "--config", str(config))
    assert code == 0, err
    assert kv(out)["split_id"] != "a80b4058c420"  # balance_runs enters split_id
    manifest = json.loads(Path(kv(out)["manifest"]).read_text())
    balance = manifest["balance_runs"]
    assert balance["runs"] == runs
    assert max(abs(d) for d in balance["test_deviation"].values()) <= 0.005
    rows = {r["category"]: r for r in manifest["test_deviation"]
            if r["dimension"] == "run_accuracy"}
    assert set(rows) == set(runs)
    assert all(f"balance_runs:{run}" in manifest["input_digests"] for run in runs)
    loro = balance["leave_one_run_out"]
    assert set(loro["per_run"]) == set(runs) and loro["max"] == max(loro["per_run"].values())
    assert loro["random_pools"]["test_videos"] == 300 and loro["random_pools"]["mean"] > 0
    # a changed reference never meets the frozen split of the same id
    import sqlite3

    with sqlite3.connect(tmp_path / "ws" / "harness.db") as conn:
        conn.execute("UPDATE predictions SET prediction = 'Z', raw_response = 'Z' "
                     "WHERE run_id = ? AND question_id IN (SELECT question_id FROM predictions "
                     "WHERE run_id = ? LIMIT 40)", (runs[0], runs[0]))
    code, out, err = run_cli("run", "--config", str(config))
    assert code == 2 and "the inputs changed since" in err and f"balance_runs:{runs[0]}" in err
