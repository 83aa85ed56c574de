"""End to end through ``split-assets``: determinism, resume, dry-run, and one-line errors."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import edit_config, kv
from dagster import AssetKey, DagsterInstance

PIN = "2026-01-01T00:00:00Z"
Cli = Callable[..., tuple[int, str, str]]


def outputs(stdout: str) -> tuple[bytes, bytes]:
    lines = kv(stdout)
    return Path(lines["pools"]).read_bytes(), Path(lines["manifest"]).read_bytes()


def test_run_twice_is_byte_identical_and_verifies(small_workspace: Path, run_cli: Cli) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace), "--generated-at", PIN)
    assert code == 0, err
    lines = kv(out)
    assert list(lines) == ["fingerprint", "split_id", "pools", "pools_sha256", "manifest",
                           "test_looks_max", "feedback_budget", "dagster_home"]
    assert Path(lines["pools"]).is_absolute()
    umask = os.umask(0)
    os.umask(umask)
    for name in ("pools", "manifest"):  # readable like every other output, not private
        assert Path(lines[name]).stat().st_mode & 0o777 == 0o666 & ~umask
    assert lines["pools"].endswith(f"/{lines['fingerprint']}/{lines['split_id']}/pools.json")
    first = outputs(out)
    code, out2, err = run_cli("run", "--config", str(small_workspace), "--generated-at", PIN)
    assert code == 0, err
    assert outputs(out2) == first
    manifest = json.loads(first[1])
    assert manifest["generated_at"] == PIN
    assert manifest["fingerprint_components"]["judge"] == "rules"
    assert str(small_workspace.parent) not in first[1].decode()  # no absolute paths
    code, out3, _ = run_cli("verify", lines["pools"], "--config", str(small_workspace))
    assert code == 0
    assert out3.count("ok ") == 10 and "FAIL" not in out3
    # --recompute: the selection again gives the same bytes, and every input digest (traces
    # among them) matches the manifest
    code, out4, _ = run_cli("verify", lines["pools"], "--config", str(small_workspace),
                            "--recompute")
    assert code == 0, out4
    assert out4.count("ok ") == 12 and "recomputed_bytes_match" in out4 \
        and "inputs_unchanged" in out4 and "FAIL" not in out4


def _resign(pools: Path, **fields: object) -> None:
    """Edit pools.json's own fields, keep it canonical, patch the manifest's pools_sha256."""
    import hashlib

    old = hashlib.sha256(pools.read_bytes()).hexdigest()
    doc = {**json.loads(pools.read_bytes()), **fields}
    data = (json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            + "\n").encode()
    pools.write_bytes(data)
    manifest = pools.parent / "split_manifest.json"
    manifest.write_text(manifest.read_text().replace(old, hashlib.sha256(data).hexdigest()))


@pytest.mark.parametrize(("field", "value", "says"), [
    ("seed", 8, "seed 8 in pools.json, 7 in the config; seed 8 in pools.json, 7 in the manifest"),
    ("split_id", "0123456789ab", "split_id '0123456789ab' in pools.json"),
])
def test_verify_refuses_a_pools_json_whose_identity_was_edited_and_resigned(
        small_workspace: Path, run_cli: Cli, field: str, value: object, says: str) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    pools = Path(kv(out)["pools"])
    _resign(pools, **{field: value})
    code, out, err = run_cli("verify", str(pools), "--config", str(small_workspace))
    assert code == 1
    assert "FAIL identity_matches: " in out and says in out
    assert "pools_sha256_matches" in out and "FAIL pools_sha256_matches" not in out  # re-signed
    assert err.startswith("error: 1 check(s) failed: identity_matches")


def test_verify_refuses_a_fingerprint_the_signal_store_does_not_hold(
        small_workspace: Path, run_cli: Cli) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    pools = Path(kv(out)["pools"])
    _resign(pools, diag_fingerprint="fp-000000000000")
    code, out, err = run_cli("verify", str(pools), "--config", str(small_workspace))
    assert code == 2 and out == ""
    assert "fingerprint fp-000000000000, which the signal store" in err
    assert len(err.strip().splitlines()) == 1


def _shuffle_inputs(config: Path) -> None:
    """Same content, other order: benchmark split into reversed files, db rows reversed."""
    ws = config.parent
    videos = json.loads((ws / "questions" / "videomme.json").read_text())
    random.Random(5).shuffle(videos)
    (ws / "questions" / "videomme.json").unlink()
    half = len(videos) // 2
    (ws / "questions" / "b_part.json").write_text(json.dumps(videos[:half]))
    flat = [dict({k: v[k] for k in ("video_id", "duration", "domain", "sub_category")}, **q)
            for v in videos[half:] for q in v["questions"]]
    random.Random(6).shuffle(flat)
    (ws / "questions" / "a_part.jsonl").write_text("\n".join(json.dumps(r) for r in flat))
    conn = sqlite3.connect(ws / "harness.db")
    for table in ("predictions", "traces"):
        rows = conn.execute(f"SELECT * FROM {table}").fetchall()
        random.Random(7).shuffle(rows)
        conn.execute(f"DELETE FROM {table}")
        conn.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def test_order_of_files_and_rows_does_not_matter(small_workspace: Path, run_cli: Cli,
                                                 tmp_path: Path) -> None:
    other = tmp_path / "shuffled"
    shutil.copytree(small_workspace.parent, other)
    _shuffle_inputs(other / "video_split.yaml")
    code, out, err = run_cli("run", "--config", str(small_workspace), "--generated-at", PIN)
    assert code == 0, err
    code, out2, err = run_cli("run", "--config", str(other / "video_split.yaml"),
                              "--generated-at", PIN)
    assert code == 0, err
    assert outputs(out2) == outputs(out)


def test_random_hash_seed_in_a_fresh_process(small_workspace: Path, run_cli: Cli,
                                             dagster_home: Path) -> None:
    code, out, err = run_cli("run", "--config", str(small_workspace), "--generated-at", PIN)
    assert code == 0, err
    env = dict(os.environ, PYTHONHASHSEED="random", DAGSTER_HOME=str(dagster_home))
    proc = subprocess.run([sys.executable, "-m", "split_assets.cli", "run", "--config",
                           str(small_workspace), "--generated-at", PIN],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert outputs(proc.stdout) == outputs(out)


def test_second_materialization_diagnoses_nothing_new(small_workspace: Path, run_cli: Cli,
                                                      dagster_home: Path) -> None:
    assert run_cli("run", "--config", str(small_workspace))[0] == 0
    db = small_workspace.parent / "signals.db"
    before = sqlite3.connect(db).execute("SELECT * FROM signals ORDER BY 1").fetchall()
    assert run_cli("run", "--config", str(small_workspace))[0] == 0
    after = sqlite3.connect(db).execute("SELECT * FROM signals ORDER BY 1").fetchall()
    assert after == before  # nothing recomputed, created_at untouched
    instance = DagsterInstance.get()
    events = instance.fetch_materializations(AssetKey("diagnosis_signals"), limit=10).records
    assert len(events) == 2
    newest, oldest = (e.asset_materialization.metadata for e in events)
    assert oldest["diagnosed_now"].value == oldest["wrong_non_infra"].value > 0
    assert newest["diagnosed_now"].value == 0
    assert newest["already_done"].value == oldest["wrong_non_infra"].value


def test_dry_run_calls_no_judge_and_writes_nothing(small_workspace: Path, run_cli: Cli,
                                                   dagster_home: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from split_assets.judge.rules import RulesJudge

    async def boom(self, case):  # noqa: ANN001, ANN202
        raise AssertionError("dry-run called the judge")

    monkeypatch.setattr(RulesJudge, "diagnose", boom)
    ws_before = sorted(p.relative_to(small_workspace.parent)
                       for p in small_workspace.parent.rglob("*"))
    home_before = sorted(dagster_home.rglob("*"))
    code, out, err = run_cli("run", "--config", str(small_workspace), "--dry-run")
    assert code == 0, err
    plan = kv(out)
    assert int(plan["to_diagnose"]) > 0 and plan["estimated_calls"] == "0"
    assert plan["fingerprint"].startswith("fp-")
    assert sorted(p.relative_to(small_workspace.parent)
                  for p in small_workspace.parent.rglob("*")) == ws_before
    assert sorted(dagster_home.rglob("*")) == home_before


def test_fingerprint_command(small_workspace: Path, run_cli: Cli) -> None:
    code, out, _ = run_cli("fingerprint", "--config", str(small_workspace))
    assert code == 0
    first, *rest = out.splitlines()
    assert first.startswith("fp-") and len(first) == 15
    assert {line.split("=")[0] for line in rest} == {
        "judge", "model", "prompt_version", "context", "prompts_digest", "judge_source_digest",
        "settings"}


def _expect_error(result: tuple[int, str, str], code: int, *fragments: str) -> str:
    got, _out, err = result
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert got == code, err
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def test_unknown_run_id(small_workspace: Path, run_cli: Cli) -> None:
    edit_config(small_workspace, video_split={"baseline_run_id": "nope"})
    _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                  "run id 'nope' not in the harness database", "baseline-2026-01")


def test_missing_config(tmp_path: Path, run_cli: Cli) -> None:
    _expect_error(run_cli("run", "--config", str(tmp_path / "none.yaml")), 2,
                  "config file not found")


def test_missing_trace_fails_before_running(small_workspace: Path, run_cli: Cli,
                                            dagster_home: Path) -> None:
    conn = sqlite3.connect(small_workspace.parent / "harness.db")
    conn.execute("DELETE FROM traces")
    conn.commit()
    conn.close()
    _expect_error(run_cli("run", "--config", str(small_workspace)), 2, "have no trace")
    assert not (small_workspace.parent / "signals.db").exists()


def test_missing_tree(small_workspace: Path, run_cli: Cli) -> None:
    shutil.rmtree(small_workspace.parent / "store" / "videos")
    _expect_error(run_cli("run", "--config", str(small_workspace)), 2, "video tree missing")


def test_impossible_floor_is_refused_before_any_diagnosis(small_workspace: Path,
                                                          run_cli: Cli) -> None:
    edit_config(small_workspace, video_split={"floor_k": {"Counting Problem": 500}})
    line = _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                         "floor_k cannot be met even if every open diagnosis were T2",
                         "Counting Problem: floor 500, at most")
    assert "(video_split.floor_k)" in line
    assert not (small_workspace.parent / "signals.db").exists()  # nothing paid, nothing written


def test_infeasible_floor_inside_the_run_keeps_the_diagnoses(small_workspace: Path,
                                                             run_cli: Cli) -> None:
    # enough wrong answers to hope for, too few of them turn out T2
    code, _, err = run_cli("run", "--config", str(small_workspace), "--dry-run")
    assert code == 0, err
    from split_assets.app.session import Session
    from split_assets.diagnosis.plan import wrong_to_diagnose

    preds = Session.open(small_workspace).inputs.predictions
    open_ = sum(p.task_type == "Counting Problem" for p in wrong_to_diagnose(preds))
    edit_config(small_workspace, video_split={"floor_k": {"Counting Problem": open_}})
    line = _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                         "Counting Problem needs")
    assert "(video_split.floor_k)" in line
    # the diagnoses the run paid for are kept
    assert sqlite3.connect(small_workspace.parent / "signals.db").execute(
        "SELECT COUNT(*) FROM signals").fetchone()[0] > 0


def test_infeasible_epsilon(small_workspace: Path, run_cli: Cli) -> None:
    edit_config(small_workspace, video_split={"epsilon": 0.001})
    _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                  "epsilon cannot be met", "needs |dev| <= 0.001, best reachable")


def test_balance_domain_and_accuracy_in_the_manifest(small_workspace: Path,
                                                    run_cli: Cli) -> None:
    edit_config(small_workspace, video_split={"balance": ["domain"], "epsilon_accuracy": 0.2})
    code, out, err = run_cli("run", "--config", str(small_workspace), "--generated-at", PIN)
    assert code == 0, err
    manifest = json.loads(outputs(out)[1])
    rows = [r for r in manifest["test_deviation"] if r["dimension"] == "domain"]
    assert rows and not any(r["constrained"] for r in rows)
    assert set(manifest["distributions"]["test"]["domain"]) <= {r["category"] for r in rows}
    accuracy = manifest["baseline_accuracy"]
    assert accuracy["epsilon_accuracy"] == 0.2
    assert accuracy["test_minus_global"] == round(accuracy["test"] - accuracy["global"], 6)
    assert abs(accuracy["test_minus_global"]) <= 0.2
    assert manifest["config"]["video_split"]["balance"] == ["domain"]


def test_balance_field_missing_from_questions(small_workspace: Path, run_cli: Cli) -> None:
    edit_config(small_workspace, video_split={"balance": ["domian"]})
    line = _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                         "balance field 'domian' is missing on", "domain, sub_category")
    assert "(video_split.balance)" in line
    assert not (small_workspace.parent / "signals.db").exists()  # refused before diagnosing


def test_a_second_fingerprint_in_the_same_instance(small_workspace: Path, run_cli: Cli) -> None:
    """Checks read their partition's split from disk: with two partitions materialized in one
    instance, Dagster would hand a check that took frozen_pools as an input every partition."""
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    first = kv(out)["fingerprint"]
    edit_config(small_workspace, diag={"prompt_version": "v2"})
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    assert kv(out)["fingerprint"] != first


def test_unreachable_val_wrong_min_is_a_config_error_before_diagnosis(
        small_workspace: Path, run_cli: Cli) -> None:
    edit_config(small_workspace, video_split={"val_wrong_min": 10_000})
    _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                  "val_wrong_min 10000 cannot be met", "(video_split.val_wrong_min)",
                  "raise val_ratio")
    assert not (small_workspace.parent / "signals.db").exists()
    assert not (small_workspace.parent / "splits").exists()


def test_bad_generated_at(small_workspace: Path, run_cli: Cli) -> None:
    _expect_error(run_cli("run", "--config", str(small_workspace), "--generated-at", "yesterday"),
                  2, "not an ISO 8601 time")


def test_answer_only_without_reference_runs_is_all_lapses(small_workspace: Path,
                                                          run_cli: Cli) -> None:
    edit_config(small_workspace, diag={"context": "answer_only"}, video_split={"floor_k": {}})
    code, out, err = run_cli("run", "--config", str(small_workspace), "--generated-at", PIN)
    assert code == 0, err
    manifest = json.loads(outputs(out)[1])
    tiers = {t for pool in manifest["tier_counts"].values() for t in pool}
    assert "T2" not in tiers and "T1" in tiers
    assert manifest["fingerprint_components"]["settings"]["reference_runs"] == []


def test_cli_error_in_subprocess_is_one_line(small_workspace: Path, dagster_home: Path) -> None:
    edit_config(small_workspace, video_split={"floor_k": {"Counting Problem": 500}})
    env = dict(os.environ, DAGSTER_HOME=str(dagster_home))
    proc = subprocess.run([sys.executable, "-m", "split_assets.cli", "run", "--config",
                           str(small_workspace)], capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: floor_k cannot be met")


def test_dagster_asset_materialize_after_run(small_workspace: Path, run_cli: Cli,
                                             dagster_home: Path) -> None:
    """`dagster asset materialize` works on the partition `split-assets run` registered."""
    code, out, err = run_cli("run", "--config", str(small_workspace), "--generated-at", PIN)
    assert code == 0, err
    first = outputs(out)
    env = dict(os.environ, DAGSTER_HOME=str(dagster_home),
               SPLIT_ASSETS_CONFIG=str(small_workspace))
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.run([str(dagster), "asset", "materialize", "-m", "split_assets.definitions",
                           "--select", "*", "--partition", kv(out)["fingerprint"]],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count("ASSET_CHECK_EVALUATION") == 9  # 8 on frozen_pools, judge_agreement
    assert Path(kv(out)["pools"]).read_bytes() == first[0]  # same partition, same bytes


def test_a_split_failing_a_check_in_memory_is_never_written(small_workspace: Path,
                                                            run_cli: Cli) -> None:
    """val_wrong_min within what the whole benchmark could hold (so the count check passes) but
    above what the chosen trainval can put in validation: frozen_pools finds the mcnemar_power
    condition false in memory, records that check as failed, and writes nothing."""
    from collections import Counter

    from dagster import AssetCheckKey, DagsterInstance

    from split_assets.app.session import Session
    from split_assets.split.selection import select_trainval
    from split_assets.split.validation import max_validation_wrong

    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    ws = Session.open(small_workspace)
    preds, problem = ws.inputs.predictions, ws.problem()
    reachable = max_validation_wrong(problem, select_trainval(problem).trainval)
    wrong = Counter(p.video_id for p in preds if not p.correct)
    bound = sum(sorted(wrong.values(), reverse=True)[:problem.n_validation])
    assert reachable < bound  # the case exists on this workspace
    edit_config(small_workspace, video_split={"val_wrong_min": reachable + 1})

    def frozen() -> list[Path]:  # every file but the steps' hand-overs (.steps/)
        root = small_workspace.parent / "splits"
        return sorted(p for p in root.rglob("*") if ".steps" not in p.relative_to(root).parts)

    splits_before = frozen()
    line = _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                         "val_wrong_min cannot be met", f"at most {reachable}",
                         "nothing was frozen")
    assert "(video_split.val_wrong_min)" in line
    assert frozen() == splits_before
    key = AssetCheckKey(AssetKey("frozen_pools"), "mcnemar_power")
    record = DagsterInstance.get().event_log_storage.get_latest_asset_check_execution_by_key(
        [key])[key]
    assert record.event.dagster_event.event_specific_data.passed is False


def test_a_broken_dagster_yaml_is_one_line(small_workspace: Path, run_cli: Cli,
                                           dagster_home: Path) -> None:
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: [\n", encoding="utf-8")
    line = _expect_error(run_cli("run", "--config", str(small_workspace)), 2,
                         "the Dagster instance cannot be loaded")
    assert str(dagster_home / "dagster.yaml") in line


def test_version_is_the_installed_package_s(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    from split_assets.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"split-assets {metadata.version('split_assets')}"
