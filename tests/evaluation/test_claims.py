"""Claims on test, spent on purpose: the family of looks (a repeat of identical answers is not
a look), Holm over the looks without a budget, alpha / M with one, a look beyond the budget
refused in one line with nothing written, and the ledger on PostgreSQL written by compare, the
candidate_evaluation asset and feedback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import edit_config, kv
from helpers.evaluated import N_VIDEOS
from helpers.official_layout import answers, write_predictions
from statsmodels.stats.multitest import multipletests

from split_assets.evaluation.claims import NO_BUDGET_NOTE, claim, family
from split_assets.store.ledger import Look

ERROR_LINE = re.compile(r"^error: .+ \(.+\): .+$")


def _look(pool: str, run: str, digest: str, p: float, repeat: bool = False) -> Look:
    statistic = {"gain": 0.01, "p_cluster": 2 * p,
                 "claim": {"against": "baseline", "p_one_sided": p}}
    return Look("s1", pool, run, digest, "compare", statistic, "shown", repeat, "t")


def test_a_repeat_is_not_a_look_and_validation_is_not_in_the_family() -> None:
    looks = [_look("test", "a", "d1", 0.004), _look("validation", "b", "d9", 0.0001),
             _look("test", "b", "d2", 0.03), _look("test", "a-renamed", "d1", 0.004, True)]
    assert [(d, runs) for d, runs, _ in family(looks)] == [("d1", ["a", "a-renamed"]),
                                                           ("d2", ["b"])]
    first = claim(looks, "d1", None)
    assert (first["look"], first["looks"], first["significant"]) == (1, 2, None)
    assert first["note"] == NO_BUDGET_NOTE


def test_holm_over_the_looks_matches_statsmodels() -> None:
    pvalues = [0.004, 0.03, 0.2, 0.011, 0.5]
    looks = [_look("test", f"r{i}", f"d{i}", p) for i, p in enumerate(pvalues)]
    expected = multipletests(pvalues, method="holm")[1]
    got = claim(looks, "d3", None)
    assert [m["holm_adjusted_p"] for m in got["family"]] == pytest.approx(expected, abs=1e-6)
    assert got["holm_adjusted_p"] == pytest.approx(expected[3], abs=1e-6)


def test_with_a_budget_each_look_is_tested_at_alpha_over_m() -> None:
    looks = [_look("test", "a", "d1", 0.004), _look("test", "b", "d2", 0.006),
             _look("test", "c", "d3", 0.0001)]
    assert claim(looks, "d1", 10)["significant"]  # 0.004 < 0.05 / 10
    assert not claim(looks, "d2", 10)["significant"]  # 0.006 > 0.005
    beyond = claim(looks, "d3", 2)  # the third look of a budget of 2: no claim, however small p
    assert beyond["beyond_budget"] and not beyond["significant"]
    assert "beyond evaluation.test_looks_max 2" in beyond["note"]


def _compare(run_cli, config: Path, *args: str) -> tuple[int, str, str]:  # noqa: ANN001
    return run_cli("compare", "--config", str(config), "--pool", "test", *args)


def _ledger(run_cli, config: Path) -> list[dict]:  # noqa: ANN001
    code, out, err = run_cli("ledger", "--config", str(config), "--json")
    assert code == 0, err
    return json.loads(out)


def _import_copy_of_rerun1(run_cli, config: Path, tmp_path: Path) -> None:  # noqa: ANN001
    code, out, err = run_cli("import", "predictions", "--jsonl",
                             str(write_predictions(tmp_path / "c.jsonl",
                                                   answers(N_VIDEOS, "rerun1"))),
                             "--run-id", "rerun1copy", "--workspace", str(config.parent),
                             "--role", "candidate")
    assert code == 0, err
    # the file answers every test question: the harness showed test, a look at import
    assert "(import of rerun1copy: 900 test questions answered" in err


def test_a_look_beyond_the_budget_is_refused_in_one_line_and_writes_nothing(
        evaluated: Path, run_cli, tmp_path: Path) -> None:  # noqa: ANN001
    edit_config(evaluated, evaluation={"test_looks_max": 1})
    _import_copy_of_rerun1(run_cli, evaluated, tmp_path)
    code, out, err = _compare(run_cli, evaluated, "--candidate", "rerun1", "--json")
    assert code == 0, err
    first = json.loads(out)["pools"]["test"]["claim"]
    assert (first["look"], first["test_looks_max"], first["alpha_per_look"]) == (1, 1, 0.05)
    assert first["against"] == "baseline" and first["significant"] is False  # a plain re-run
    # the same answers under another run id: a repeat, the family does not grow, not refused
    code, out, err = _compare(run_cli, evaluated, "--candidate", "rerun1copy")
    assert code == 0 and "(a repeat" in err and "test look 1 of budget 1" in out

    before = _ledger(run_cli, evaluated)
    code, out, err = run_cli("compare", "--config", str(evaluated), "--candidate", "rerun2",
                             "--pool", "validation", "--pool", "test")
    assert code == 2 and out == "" and ERROR_LINE.match(err.strip()), err
    assert len(err.strip().splitlines()) == 1
    assert "evaluation.test_looks_max 1 are spent" in err and "--spend-test-look" in err
    assert _ledger(run_cli, evaluated) == before  # not even the validation row

    code, out, err = _compare(run_cli, evaluated, "--candidate", "rerun2", "--spend-test-look")
    assert code == 0, err
    assert "test look 2 of budget 1" in out and "no claim holds for it at 0.05/1" in out
    # the import's look, rerun1's and rerun1copy's repeats of it, rerun2's spent look
    assert [(r["source"], r["is_repeat"]) for r in _ledger(run_cli, evaluated)] == [
        ("import", False), ("compare", True), ("compare", True), ("compare", False)]


def test_without_a_budget_the_report_gives_holm_over_all_looks(
        evaluated: Path, run_cli) -> None:  # noqa: ANN001
    edit_config(evaluated, evaluation={"test_looks_max": None})  # an import declares one
    for run in ("rerun1", "same"):
        code, _, err = _compare(run_cli, evaluated, "--candidate", run)
        assert code == 0, err
    code, out, err = _compare(run_cli, evaluated, "--candidate", "rerun2", "--control", "same",
                              "--json")
    assert code == 0, err
    test = json.loads(out)["pools"]["test"]
    got = test["claim"]
    assert (got["look"], got["looks"], got["significant"]) == (3, 3, None)
    assert got["against"] == "control" and got["note"] == NO_BUDGET_NOTE
    pvalues = [member["p_one_sided"] for member in got["family"]]
    assert pvalues[1] == 1.0  # a copy of the baseline gains nothing
    expected = multipletests(pvalues, method="holm")[1]
    assert [m["holm_adjusted_p"] for m in got["family"]] == pytest.approx(expected, abs=1e-6)
    code, out, err = _compare(run_cli, evaluated, "--candidate", "rerun1")
    assert code == 0 and "test look 1 of 3" in out and "only valid with a budget" in out


def test_the_ledger_on_postgresql_from_compare_the_asset_and_feedback(
        evaluated: Path, run_cli, pg_url: str) -> None:  # noqa: ANN001
    """The same ledger rows as on SQLite (tests/evaluation/test_evaluation.py), in a
    PostgreSQL signal store: the asset's, compare's and feedback's, and the budget holds."""
    code, _, err = run_cli("signals", "copy", "--to", pg_url, "--config", str(evaluated))
    assert code == 0, err
    (evaluated.parent / "signals.db").unlink()
    edit_config(evaluated, paths={"signals_db": pg_url},
                evaluation={"candidates": ["rerun1"], "test_looks_max": 1})
    code, out, err = run_cli("run", "--config", str(evaluated))
    assert code == 0, err
    assert json.loads(Path(kv(out)["evaluation"]).read_text())["reports"][0]["candidate"] == \
        "rerun1"
    assert _compare(run_cli, evaluated, "--candidate", "rerun1")[0] == 0
    code, _, err = _compare(run_cli, evaluated, "--candidate", "rerun2")
    assert code == 2 and "are spent" in err
    code, _, err = run_cli("feedback", "--config", str(evaluated), "--candidate", "rerun2")
    assert code == 0, err
    assert [(r["source"], r["pool"], r["run_id"], r["is_repeat"])
            for r in _ledger(run_cli, evaluated)] == [
        ("asset", "validation", "rerun1", False), ("compare", "test", "rerun1", False),
        ("feedback", "validation", "rerun2", False)]
    assert not (evaluated.parent / "signals.db").exists()
