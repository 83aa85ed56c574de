"""The card's claims against a control run, and a look whose run left the workspace: the row
is compare --pool test --json's (vs the control), then the ledger's own statistic, said so."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import edit_config, kv


def _claims_row(md: str) -> list[str]:
    line = next(line for line in md.splitlines() if line.startswith("| 1 | rerun1"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_claim_against_the_control_then_from_the_ledger(evaluated: Path, run_cli) -> None:  # noqa: ANN001
    edit_config(evaluated, evaluation={"control_run": "rerun2", "test_looks_max": None})
    code, out, err = run_cli("compare", "--candidate", "rerun1", "--pool", "test", "--json",
                             "--config", str(evaluated))
    assert code == 0, err
    test = json.loads(out)["pools"]["test"]
    r, claim = test["vs_control"], test["claim"]
    code, out, err = run_cli("report", "--config", str(evaluated))
    assert code == 0, err
    md = Path(kv(out)["markdown"]).read_text(encoding="utf-8")
    row = _claims_row(md)
    ci = r["gain_ci95"]
    assert row[:10] == ["1", "rerun1", str(r["n"]), "control", f"{r['reference_accuracy']:.4f}",
                        f"{r['candidate_accuracy']:.4f}",
                        f"{100 * r['gain']:+.2f} [{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}]",
                        f"{r['p_exact']:.4g}", f"{r['p_mid']:.4g}",
                        f"{claim['p_one_sided']:.4g}"]
    holm = claim["holm_adjusted_p"]  # no budget: Holm over the looks
    assert row[10:] == [f"Holm: adjusted p {holm:.4g} < 0.05",
                        "significant after Holm" if holm < 0.05 else "not significant after Holm",
                        "no budget"]
    assert "No evaluation.test_looks_max is declared" in md
    # the run leaves the workspace: the ledger's own figures, and the card says so
    with sqlite3.connect(evaluated.parent / "harness.db") as conn:
        conn.execute("DELETE FROM predictions WHERE run_id = 'rerun1'")
    code, out, err = run_cli("report", "--config", str(evaluated))
    assert code == 0, err
    md = Path(kv(out)["markdown"]).read_text(encoding="utf-8")
    row = _claims_row(md)
    assert row[3] == "control" and row[6] == f"{100 * r['gain']:+.2f} [{100 * ci[0]:+.2f}, " \
                                              f"{100 * ci[1]:+.2f}]"
    assert "Look 1: the ledger's own statistic (its run is no longer in the workspace)." in md
