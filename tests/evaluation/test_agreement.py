"""Cohen's kappa between two raters: the value against scikit-learn's and statsmodels'
implementations, the bootstrap over videos, and `split-assets agreement` / `diag.compare_with`
on two fingerprints of one baseline run."""

from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import edit_config, kv
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

from split_assets.evaluation.agreement import Pair, confusion, kappa

OTHER = "fp-bbbbbbbbbbbb"


def _pairs(n: int, seed: int, agree: float = 0.8, labels: str = "ABC") -> list[Pair]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a = rng.choice(labels)
        b = a if rng.random() < agree else rng.choice(labels)
        out.append(Pair(f"q{i}", f"v{i // 3}", "t", a, b, weight=rng.choice([1.0, 2.5, 4.0])))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kappa_is_scikit_learns_and_statsmodels(seed: int) -> None:
    pairs = _pairs(90, seed)
    a, b = [p.a for p in pairs], [p.b for p in pairs]
    unweighted = [Pair(p.question_id, p.video_id, p.task_type, p.a, p.b) for p in pairs]
    ours = kappa(unweighted, "ABC", b=200)
    assert ours.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert ours.kappa == pytest.approx(cohens_kappa(confusion(unweighted, "ABC")).kappa,
                                       abs=1e-12)
    # sampling weights: every count weighted, as scikit-learn's sample_weight does
    weighted = kappa(pairs, "ABC", b=200)
    assert weighted.kappa == pytest.approx(
        cohen_kappa_score(a, b, sample_weight=[p.weight for p in pairs]), abs=1e-12)
    assert weighted.low <= weighted.kappa <= weighted.high


def test_the_interval_resamples_videos_not_questions() -> None:
    """Five identical questions per video carry the information of one: the interval over
    videos is wider than for the same table spread over five times as many videos."""
    base = _pairs(40, 7, agree=0.7)
    clustered = [Pair(f"{p.question_id}-{k}", f"v{i}", "t", p.a, p.b)
                 for i, p in enumerate(base) for k in range(5)]
    spread = [Pair(p.question_id, f"w{i}", "t", p.a, p.b) for i, p in enumerate(clustered)]
    c, s = kappa(clustered, "ABC", seed=3), kappa(spread, "ABC", seed=3)
    assert c.kappa == pytest.approx(s.kappa)
    assert c.ci_width > 1.8 * s.ci_width  # ~sqrt(5) = 2.2 times as wide
    again = kappa(clustered, "ABC", seed=3)  # seeded: the same interval every time
    assert (again.low, again.high) == (c.low, c.high)


def _second_judge(config: Path, fp: str, flip: int) -> list[tuple[str, str]]:
    """A copy of ``fp``'s rows under OTHER with ``flip`` tiers turned: (tier a, tier b)."""
    with sqlite3.connect(config.parent / "signals.db") as conn:
        rows = conn.execute("SELECT * FROM signals WHERE diag_fingerprint = ? AND infra = 0 "
                            "AND degraded = 0 ORDER BY question_id", (fp,)).fetchall()
        cols = [d[1] for d in conn.execute("PRAGMA table_info(signals)")]
        fpi, tier = cols.index("diag_fingerprint"), cols.index("tier")
        pairs = []
        for i, row in enumerate(rows):
            row = list(row)
            a = row[tier]
            row[fpi], row[tier] = OTHER, ({"T1": "T2", "T2": "T1"}[a] if i < flip else a)
            conn.execute(f"INSERT INTO signals VALUES ({', '.join('?' * len(row))})", row)
            pairs.append((a, row[tier]))
    conn.close()
    return pairs


def test_agreement_between_two_fingerprints(small_workspace: Path, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    fp = kv(out)["fingerprint"]
    tiers = _second_judge(small_workspace, fp, flip=6)
    code, out, err = run_cli("agreement", "--config", str(small_workspace), "--a", fp,
                             "--b", OTHER)
    assert code == 0, err
    values = kv(out)
    expected = cohen_kappa_score([a for a, _ in tiers], [b for _, b in tiers])
    shown = re.match(r"([-\d.]+) \[([-\d.]+), ([-\d.]+)\] \(n (\d+)\)", values["kappa_tier"])
    assert shown and float(shown[1]) == pytest.approx(expected, abs=5e-4)
    assert float(shown[2]) <= float(shown[1]) <= float(shown[3]) and int(shown[4]) == len(tiers)
    assert values["tiers_changed"] == "6" and values["kappa_error_type"].startswith("1.000")
    assert "tier confusion (rows: a, columns: b)" in out
    # an unknown fingerprint: one line, exit 2
    code, _, err = run_cli("agreement", "--config", str(small_workspace), "--a", fp,
                           "--b", "fp-000000000000")
    assert code == 2 and "no diagnoses of run" in err and "--b" in err
    # diag.compare_with: the same figures on diagnosis_signals (not a new fingerprint)
    edit_config(small_workspace, diag={"compare_with": OTHER})
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    assert kv(out)["fingerprint"] == fp
    from dagster import AssetKey, DagsterInstance

    meta = DagsterInstance.get().get_latest_materialization_event(
        AssetKey("diagnosis_signals")).asset_materialization.metadata
    assert meta["kappa_tier"].value == pytest.approx(expected, abs=5e-5)
    assert meta["tiers_changed"].value == 6 and meta["agreement_n"].value == len(tiers)
    records = meta["agreement_confusion"].value.records
    assert sum(v for r in records for k, v in r.data.items() if k != "this_judge") == len(tiers)
    assert np.isfinite(meta["kappa_error_type"].value)
