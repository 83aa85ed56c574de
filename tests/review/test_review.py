"""Human review: a stratified sample exported as CSV (the judge's verdict hidden unless asked),
labels imported into the signal store (validated as a whole, re-importable), and the
judge_agreement check that reads them."""

from __future__ import annotations

import csv
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from conftest import edit_config

from split_assets.review.sample import allocate


def _export(run_cli, config: Path, out: Path, *extra: str) -> list[dict]:  # noqa: ANN001
    code, text, err = run_cli("review", "export", "--config", str(config), "--out", str(out),
                              *extra)
    assert code == 0, err
    assert text.startswith("wrote ")
    with out.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _judge_tiers(config: Path) -> dict[str, str]:
    with sqlite3.connect(config.parent / "signals.db") as conn:
        return dict(conn.execute("SELECT question_id, tier FROM signals WHERE infra = 0"))


def _write(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _labels(config: Path) -> int:
    with sqlite3.connect(config.parent / "signals.db") as conn:
        return conn.execute("SELECT COUNT(*) FROM review_labels").fetchone()[0]


def test_allocation_spreads_the_sample_over_the_strata() -> None:
    spread = allocate({"a": 100, "b": 5, "c": 40}, 30)
    assert spread["b"] == 5 and {spread["a"], spread["c"]} == {12, 13}
    assert allocate({"a": 3, "b": 4}, 50) == {"a": 3, "b": 4}  # never more than there is
    assert sum(allocate({"a": 7, "b": 7, "c": 7}, 10).values()) == 10
    # fewer draws than strata: which strata get one is seeded, not alphabetical
    few = [allocate({f"tier=T{1 + i // 10}|t{i}": 5 for i in range(20)}, 6, seed=s)
           for s in range(8)]
    assert all(sum(f.values()) == 6 for f in few)
    assert any(sum(v for k, v in f.items() if k.startswith("tier=T2")) >= 3 for f in few)


def test_export_import_round_trip(small_workspace: Path, tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    judge = _judge_tiers(small_workspace)
    sizes = Counter(judge.values())
    rows = _export(run_cli, small_workspace, tmp_path / "r.csv", "--n", "20",
                   "--stratify", "tier")
    assert not any(k.startswith("judge_") for k in rows[0])  # the verdict is hidden
    assert {"question", "options", "correct_answer", "agent_response", "trace",
            "opened_nodes", "evidence_spans_s", "video_id"} <= set(rows[0])
    assert "http" not in (tmp_path / "r.csv").read_text(encoding="utf-8")  # link-free
    assert {r["stratum"] for r in rows} <= {"s01", "s02"}  # opaque: no verdict in a name
    drawn = Counter(judge[r["question_id"]] for r in rows)
    expected = allocate({f"tier={t}": n for t, n in sizes.items()}, 20)
    assert drawn == Counter({k.removeprefix("tier="): v for k, v in expected.items() if v})
    for r in rows:  # weight = stratum size / drawn from it
        tier = judge[r["question_id"]]
        assert float(r["sampling_weight"]) == pytest.approx(sizes[tier] / drawn[tier],
                                                            rel=1e-5)
    # the same seed draws the same sample; --show-judge adds the verdict
    shown = _export(run_cli, small_workspace, tmp_path / "s.csv", "--n", "20", "--stratify",
                    "tier", "--show-judge")
    assert [r["question_id"] for r in shown] == [r["question_id"] for r in rows]
    assert all(r["judge_tier"] == judge[r["question_id"]] for r in shown)
    assert all(r["stratum"] == f"tier={r['judge_tier']}" for r in shown)
    # a reviewer who agrees with the judge on all but the last, and leaves one blank
    for r in rows:
        r["label_tier"] = judge[r["question_id"]]
    rows[-1]["label_tier"] = {"T1": "T2", "T2": "T1"}[rows[-1]["label_tier"]]
    rows[0]["label_tier"] = ""
    _write(tmp_path / "labelled.csv", rows)
    for _ in range(2):  # importing again replaces, never duplicates
        code, out, err = run_cli("review", "import", str(tmp_path / "labelled.csv"),
                                 "--reviewer", "alice", "--config", str(small_workspace))
        assert code == 0, err
        assert "imported 19 labels of alice" in out and "1 rows left blank" in out
        assert _labels(small_workspace) == 19


@pytest.mark.parametrize(("column", "value", "message"), [
    ("label_tier", "T3", "label_tier 'T3' is not T1 or T2"),
    ("label_error_type", "vibes", "label_error_type 'vibes' is unknown"),
    ("question_id", "nope", "question 'nope' is not a wrong non-INFRA answer"),
    ("sampling_weight", "-1", "sampling_weight '-1' is not a positive number"),
    ("sampling_weight", "inf", "sampling_weight 'inf' is not a positive number"),
])
def test_a_malformed_review_file_is_refused_in_one_line(small_workspace: Path, tmp_path: Path,
                                                        run_cli, column: str, value: str,  # noqa: ANN001
                                                        message: str) -> None:
    assert run_cli("run", "--config", str(small_workspace))[0] == 0
    rows = _export(run_cli, small_workspace, tmp_path / "r.csv", "--n", "6")
    for r in rows:
        r["label_tier"] = "T1"
    rows[3][column] = value
    _write(tmp_path / "bad.csv", rows)
    # the line the fourth row starts on (traces span several lines)
    text = (tmp_path / "bad.csv").read_text(encoding="utf-8")
    start = text[:text.index(f"{rows[3]['baseline_run_id']},{rows[3]['question_id']},")]
    line = start.count("\n") + 1
    assert line > 5  # the rows above hold multi-line traces
    code, _, err = run_cli("review", "import", str(tmp_path / "bad.csv"), "--reviewer", "bob",
                           "--config", str(small_workspace))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert message in err and f"{tmp_path / 'bad.csv'} line {line})" in err
    assert _labels(small_workspace) == 0  # nothing stored: all or nothing


def _check(result) -> tuple[bool, str, dict]:  # noqa: ANN001
    (evaluation,) = [e for e in result.get_asset_check_evaluations()
                     if e.check_name == "judge_agreement"]
    return evaluation.passed, evaluation.description, evaluation.metadata


def _materialize(config: Path):  # noqa: ANN202
    from dagster import DagsterInstance

    from split_assets.app.session import Session
    from split_assets.definitions import SPLIT_JOB, make_definitions
    from split_assets.orchestration.instance import register_partition

    key = Session.open(config).partition.key
    register_partition(DagsterInstance.get(), key)
    job = make_definitions(config).resolve_job_def(SPLIT_JOB)
    return job.execute_in_process(instance=DagsterInstance.get(), partition_key=key,
                                  raise_on_error=False)


def test_judge_agreement_passes_and_fails_on_min_kappa(small_workspace: Path, tmp_path: Path,
                                                       run_cli) -> None:  # noqa: ANN001
    from split_assets.app.session import Session

    before = Session.open(small_workspace).partition.key
    result = _materialize(small_workspace)
    passed, description, _ = _check(result)
    assert result.success and passed and "no human labels" in description  # informative
    judge = _judge_tiers(small_workspace)
    rows = _export(run_cli, small_workspace, tmp_path / "r.csv", "--n", "30", "--stratify",
                   "tier")
    flip = {"T1": "T2", "T2": "T1"}
    for i, r in enumerate(rows):  # a reviewer who disagrees on every third answer
        r["label_tier"] = flip[judge[r["question_id"]]] if i % 3 == 0 else judge[r["question_id"]]
    _write(tmp_path / "labelled.csv", rows)
    assert run_cli("review", "import", str(tmp_path / "labelled.csv"), "--reviewer", "carol",
                   "--config", str(small_workspace))[0] == 0
    passed, description, meta = _check(_materialize(small_workspace))
    assert passed and meta["labels"].value == 30 and "kappa" in description
    low = meta["kappa"].value
    assert meta["ci_low"].value <= low <= meta["ci_high"].value < 1
    edit_config(small_workspace, diag={"min_kappa": round(low + 0.05, 2)})
    result = _materialize(small_workspace)
    passed, description, _ = _check(result)
    assert not passed and "the judge is below it" in description
    assert not result.success  # blocking: nothing downstream is frozen on a judge below it
    assert Session.open(small_workspace).partition.key == before  # min_kappa: not in it
