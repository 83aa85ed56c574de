"""Comparing runs on the frozen pools: McNemar figures against statsmodels, the control run
against regression to the mean, power, and the train-only export."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from conftest import kv
from helpers.evaluated import N_VIDEOS
from helpers.official_layout import answers, write_predictions
from scipy.stats import binom, chi2
from statsmodels.stats.contingency_tables import mcnemar

from split_assets.evaluation.comparison import TEST_NOT_SHOWN
from split_assets.evaluation.mcnemar import (
    cluster_adjusted,
    compare,
    connor_n,
    icc_anova,
    mcnemar_exact,
    mcnemar_mid_p,
    minimum_detectable_gain,
    power_summary,
)

TABLES = [[[10, 3], [9, 20]], [[50, 0], [0, 50]], [[5, 7], [7, 1]], [[200, 31], [52, 117]],
          [[0, 1], [12, 0]], [[300, 90], [60, 50]], [[3, 0], [1, 0]]]


@pytest.mark.parametrize("table", TABLES)
def test_exact_p_equals_statsmodels(table: list[list[int]]) -> None:
    (_, b), (c, _) = table
    expected = mcnemar(table, exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("table", TABLES)
def test_mid_p_is_the_exact_p_minus_the_observed_point(table: list[list[int]]) -> None:
    (_, b), (c, _) = table
    n, k = b + c, min(b, c)
    if n == 0 or b == c:
        assert mcnemar_mid_p(b, c) == 1.0
        return
    exact = mcnemar(table, exact=True).pvalue
    assert mcnemar_mid_p(b, c) == pytest.approx(exact - binom.pmf(k, n, 0.5), rel=1e-10)
    assert mcnemar_mid_p(b, c) < exact


def test_cluster_adjusted_with_singleton_clusters_has_its_closed_form() -> None:
    # one question per video: chi2 = (K - 1)(b - c)^2 / (K (b + c) - (b - c)^2)
    b, c, a, d = 14, 30, 120, 36
    clusters = [(1, 1, 0)] * b + [(1, 0, 1)] * c + [(1, 1, 1)] * a + [(1, 0, 0)] * d
    k = len(clusters)
    statistic = (k - 1) * (b - c) ** 2 / (k * (b + c) - (b - c) ** 2)
    p, _ = cluster_adjusted(clusters)
    assert p == pytest.approx(chi2.sf(statistic, 1), rel=1e-12)
    # and it is close to statsmodels' asymptotic McNemar without continuity correction
    naive = mcnemar([[a, b], [c, d]], exact=False, correction=False).pvalue
    assert p == pytest.approx(naive, rel=0.1)


def test_clustered_discordance_is_less_significant_than_the_naive_test() -> None:
    # every fix comes in whole videos (3 questions at a time): the same 2x2 table as 3x more
    # independent questions would be, but far less evidence
    videos, ref, cand = [], [], []
    for v in range(60):
        fixed = v < 12
        broken = 12 <= v < 16
        for _ in range(3):
            videos.append(f"v{v}")
            ref.append(not fixed and v % 2 == 0 or broken)
            cand.append(fixed or (v % 2 == 0 and not broken))
    result = compare(videos, ref, cand)
    (_, b), (c, _) = result.table
    assert (b, c) == (12, 36)
    naive = mcnemar([[0, b], [c, 0]], exact=False, correction=False).pvalue
    assert result.p_cluster > naive
    assert result.p_exact == pytest.approx(mcnemar([[0, b], [c, 0]], exact=True).pvalue)


def test_identical_runs_give_p_one_and_no_gain() -> None:
    videos = [f"v{i // 3}" for i in range(90)]
    correct = [i % 4 != 0 for i in range(90)]
    result = compare(videos, correct, list(correct))
    assert result.gain == 0 and result.p_exact == result.p_mid == result.p_cluster == 1.0
    assert result.table == ((sum(correct), 0), (0, 90 - sum(correct)))


def test_connor_sample_size_and_its_inverse() -> None:
    # Connor (1987): psi 0.3, delta 0.1, two-sided alpha 0.05, power 0.8
    n = (1.959964 * math.sqrt(0.3) + 0.841621 * math.sqrt(0.3 - 0.01)) ** 2 / 0.01
    assert connor_n(0.1, 0.3) == pytest.approx(n, rel=1e-5)
    assert minimum_detectable_gain(n, 0.3) == pytest.approx(0.1, rel=1e-6)
    assert minimum_detectable_gain(2 * n, 0.3) < 0.1
    assert minimum_detectable_gain(3.0, 0.3) is None  # too few pairs for any gain


def test_design_effect_from_clustered_correctness() -> None:
    together = [[True] * 3] * 30 + [[False] * 3] * 30  # a video's answers move together
    assert icc_anova(together) == pytest.approx(1.0)
    mixed = [[True, False, True], [False, True, False]] * 30
    assert icc_anova(mixed) == 0.0
    clustered = power_summary(together, 0.2, "test")
    independent = power_summary(mixed, 0.2, "test")
    assert clustered["design_effect"] == pytest.approx(3.0)
    assert clustered["effective_n"] == pytest.approx(60.0)
    assert clustered["mde"] > independent["mde"]


# ---------------------------------------------------------------- end to end -------------

def _report(run_cli, config: Path, *args: str) -> dict:  # noqa: ANN001
    code, out, err = run_cli("compare", "--config", str(config), "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_compare_baseline_copy_rerun_and_control(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    both = ("--pool", "validation", "--pool", "test")
    same = _report(run_cli, evaluated, "--candidate", "same", *both)
    for pool in ("validation", "test"):
        r = same["pools"][pool]["vs_baseline"]
        assert r["gain"] == 0 and r["p_exact"] == 1.0 and r["p_mid"] == 1.0
        assert r["table"][0][1] == r["table"][1][0] == 0
    assert "biased upward" in same["pools"]["validation"]["note"]

    raw = _report(run_cli, evaluated, "--candidate", "rerun1", *both)
    val = raw["pools"]["validation"]["vs_baseline"]
    assert val["gain"] > 0.05 and val["p_exact"] < 1e-6  # a re-run "improves" validation
    assert abs(raw["pools"]["test"]["vs_baseline"]["gain"]) < 0.05  # test is representative
    plain = _report(run_cli, evaluated, "--candidate", "rerun1")  # validation only, and says so
    assert plain["pools"]["validation"] == raw["pools"]["validation"]
    assert plain["pools"]["test"] == {"note": TEST_NOT_SHOWN}

    net = _report(run_cli, evaluated, "--candidate", "rerun1", "--control", "rerun2")
    entry = net["pools"]["validation"]
    assert entry["control_vs_baseline"]["gain"] > 0.05
    assert abs(entry["net_gain"]) < 0.03 and entry["vs_control"]["p_exact"] > 0.05
    assert "note" not in entry

    code, out, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1",
                             "--control", "rerun2", "--pool", "test")
    assert code == 0, err
    assert "candidate vs control (net)" in out and "validation" not in out.split("\n", 1)[1]


def _import_test_only(run_cli, config: Path, tmp_path: Path, *role: str) -> None:  # noqa: ANN001
    """A run ``testonly`` that answers the frozen test pool only."""
    pools = json.loads(next(config.parent.glob("splits/*/*/pools.json")).read_text())
    test_only = {q: r for q, r in answers(N_VIDEOS, "rerun3").items()
                 if q in set(pools["pools"]["test"])}
    code, _, err = run_cli("import", "predictions", "--jsonl",
                           str(write_predictions(tmp_path / "t.jsonl", test_only)),
                           "--run-id", "testonly", "--workspace", str(config.parent),
                           "--partial", *role)
    assert code == 0, err


def test_compare_refuses_missing_predictions_of_a_compared_pool(
        evaluated: Path, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    _import_test_only(run_cli, evaluated, tmp_path, "--role", "candidate")
    code, _, err = run_cli("compare", "--config", str(evaluated), "--candidate", "testonly")
    assert code == 2 and "no prediction for 540 of 540 validation questions" in err
    report = _report(run_cli, evaluated, "--candidate", "testonly", "--pool", "test")
    assert list(report["pools"]) == ["test"]  # a candidate needs only the pools compared
    code, _, err = run_cli("compare", "--config", str(evaluated), "--candidate", "nosuch")
    assert code == 2 and "candidate run 'nosuch' not in the harness database" in err


def test_candidate_evaluation_asset_power_and_export(evaluated: Path, run_cli,  # noqa: ANN001
                                                     tmp_path: Path) -> None:
    doc = yaml.safe_load(evaluated.read_text())
    doc["evaluation"].update(candidates=["rerun1"], control_run="rerun2")
    evaluated.write_text(yaml.safe_dump(doc))
    code, out, err = run_cli("run", "--config", str(evaluated))
    assert code == 0, err
    lines = kv(out)
    evaluation = json.loads(Path(lines["evaluation"]).read_text())
    assert [r["candidate"] for r in evaluation["reports"]] == ["rerun1"]
    assert evaluation["reports"][0] == _report(run_cli, evaluated, "--candidate", "rerun1")
    # the asset wrote its looks to the ledger and shows how many answers each pool has seen
    from dagster import AssetKey, DagsterInstance

    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("candidate_evaluation")).asset_materialization.metadata
    assert (meta["looks_validation"].value, meta["looks_test"].value) == (1, 0)
    rows = json.loads(run_cli("ledger", "--config", str(evaluated), "--json")[1])
    assert [(r["source"], r["pool"], r["is_repeat"]) for r in rows] == [
        ("asset", "validation", False), ("compare", "validation", True)]
    assert evaluation["reports"][0]["pools"]["test"] == {"note": TEST_NOT_SHOWN}
    assert meta["pools"].value.startswith("validation only")

    manifest = json.loads(Path(lines["manifest"]).read_text())
    power = manifest["power"]
    assert power["validation"]["discordance_source"] == "measured: baseline vs the control run"
    assert power["validation"]["icc_source"] == "paired differences with the control run"
    assert 0 < power["test"]["mde"] < power["validation"]["mde"] < 0.2  # test is larger
    assert power["validation"]["mde"] <= power["validation"]["discordance"]
    assert power["validation"]["design_effect"] >= 1.0

    out_file = tmp_path / "train.jsonl"
    code, out, err = run_cli("export-signals", "--config", str(evaluated), "--pool", "train",
                             "--out", str(out_file))
    assert code == 0, err
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    pools = json.loads(Path(lines["pools"]).read_text())
    assert rows and {r["pool"] for r in rows} == {"train"}
    assert {r["question_id"] for r in rows} <= set(pools["pools"]["train"])
    wrong_train = {q for q in pools["pools"]["train"] if not pools["correctness"][q]}
    assert {r["question_id"] for r in rows} == wrong_train  # every train diagnosis, no other
    code, _, err = run_cli("export-signals", "--config", str(evaluated), "--pool", "test",
                           "--out", str(tmp_path / "leak.jsonl"))
    assert code == 2 and "only the train pool" in err and not (tmp_path / "leak.jsonl").exists()


def test_mde_never_exceeds_the_discordance() -> None:
    for psi in (0.05, 0.15, 0.4):
        for n in (40, 100, 1000, 10_000):
            mde = minimum_detectable_gain(n, psi)
            assert mde is None or 0 < mde <= psi
    assert minimum_detectable_gain(20, 0.15) is None  # 20 pairs cannot show any gain


def test_cluster_variance_not_estimable_falls_back_to_the_exact_test() -> None:
    # every video has exactly one fixed answer: the between-video variance is 0
    videos = [f"v{i // 3}" for i in range(60)]
    ref = [i % 3 != 0 for i in range(60)]
    cand = [True] * 60
    result = compare(videos, ref, cand)
    assert result.p_cluster == result.p_exact and result.gain_ci95 is None
    assert result.as_dict()["gain_ci95"] is None


def test_compare_refuses_a_control_equal_to_the_candidate_and_a_changed_baseline(
        evaluated: Path, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    code, _, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1",
                           "--control", "rerun1")
    assert code == 2 and "the control run is the candidate itself" in err
    code, _, err = run_cli("import", "predictions", "--jsonl",
                           str(write_predictions(tmp_path / "b.jsonl",
                                                 answers(N_VIDEOS, "other"))),
                           "--run-id", "base", "--workspace", str(evaluated.parent), "--replace")
    assert code == 0, err
    code, _, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1")
    assert code == 2 and "changed since the split was frozen" in err


def test_the_asset_skips_a_pool_a_partial_candidate_did_not_answer(
        evaluated: Path, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    """A candidate that answered only test: the asset (validation only) notes it, fails
    nothing, and records no look (the import recorded the one the harness showed)."""
    _import_test_only(run_cli, evaluated, tmp_path, "--role", "candidate")
    code, out, err = run_cli("run", "--config", str(evaluated))
    assert code == 0, err
    report = json.loads(Path(kv(out)["evaluation"]).read_text())["reports"][0]
    assert report["pools"]["validation"]["note"].startswith("not compared: candidate run")
    assert report["pools"]["test"] == {"note": TEST_NOT_SHOWN}
    rows = json.loads(run_cli("ledger", "--config", str(evaluated), "--json")[1])
    assert [(r["pool"], r["source"], r["run_id"]) for r in rows] == [
        ("test", "import", "testonly")]


def test_compare_writes_the_ledger_and_a_repeat_is_marked(evaluated: Path,
                                                          run_cli) -> None:  # noqa: ANN001
    """Every compare appends one row per pool it showed; comparing identical answers again
    (even under another run id) is a repeat; `split-assets ledger` lists them."""
    code, _, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1")
    assert code == 0 and err.strip() == "ledger: validation look at rerun1"
    code, _, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1",
                           "--pool", "test")
    assert code == 0 and err.strip() == "ledger: test look at rerun1"
    code, _, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun1",
                           "--pool", "test")
    assert code == 0 and "ledger: test look at rerun1 (a repeat" in err
    code, out, _ = run_cli("ledger", "--config", str(evaluated), "--json")
    rows = json.loads(out)
    assert [(r["pool"], r["run_id"], r["is_repeat"], r["source"]) for r in rows] == [
        ("validation", "rerun1", False, "compare"), ("test", "rerun1", False, "compare"),
        ("test", "rerun1", True, "compare")]
    assert rows[0]["statistic"]["gain"] > 0.05 and rows[0]["shown"].startswith("accuracy ")
    code, out, err = run_cli("ledger", "--config", str(evaluated), "--pool", "validation")
    assert code == 0 and len(out.splitlines()) == 1 and "1 evaluation(s) of split" in err


def test_feedback_runs_the_ladder_over_the_ledger(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    """A re-run of the baseline agent "improves" validation (regression to the mean): the
    Ladder moves and, that strong, the budgeted test flags it; the same answers again are a
    repeat that changes nothing; a copy of the baseline moves nothing; the state survives
    between calls (it is the ledger), and the Python function is the command."""
    from split_assets.api import feedback

    first = feedback("rerun1", evaluated)
    assert (first["moved"], first["repeat"], first["submissions"]) == (True, False, 1)
    assert first["significant"] and first["within_budget"]
    report = _report(run_cli, evaluated, "--candidate", "rerun1", "--pool", "validation")
    shown = report["pools"]["validation"]["vs_baseline"]["candidate_accuracy"]
    assert first["leaderboard_accuracy"] == pytest.approx(shown, abs=1 / 540 + 1e-9)
    code, out, err = run_cli("feedback", "--config", str(evaluated), "--candidate", "rerun1",
                             "--json")
    again = json.loads(out)
    assert code == 0 and (again["moved"], again["repeat"], again["submissions"]) == \
        (False, True, 1)
    assert again["leaderboard_accuracy"] == first["leaderboard_accuracy"]
    code, out, err = run_cli("feedback", "--config", str(evaluated), "--candidate", "same")
    assert code == 0 and "moved=false" in out and "significant=false" in out
    assert "submissions=2" in out
    rows = json.loads(run_cli("ledger", "--config", str(evaluated), "--json")[1])
    feedback_rows = [r for r in rows if r["source"] == "feedback"]
    assert [r["run_id"] for r in feedback_rows] == ["rerun1", "rerun1", "same"]
    assert len(feedback_rows[0]["statistic"]["answers"]) == 540
