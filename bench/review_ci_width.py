"""How many human labels give what 95 % interval on the judge's kappa: the table in docs/how-to/
judge-quality.md ("Human review"), computed on the demo's diagnosed wrong answers.

For a true agreement of kappa 0.6 and 0.8 (the reviewer's tier differs from the judge's on a
random share of answers, chosen so that kappa over all answers is the target), draw samples of
n answers -- simple random, and stratified on the judge's tier as ``review export --stratify
tier`` does, with its weights -- and take the median width of the bootstrap interval (over
videos, B = 2,000) over 20 samples. The last line is one JSON object.

Run: .venv/bin/python bench/review_ci_width.py
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
from pathlib import Path

SIZES = (25, 50, 100, 200, 400)
TARGETS = (0.6, 0.8)
REPS = 20


def main() -> None:
    from split_assets.app.session import Session
    from split_assets.cli import main as cli
    from split_assets.evaluation.agreement import Pair, kappa
    from split_assets.review.sample import draw

    with tempfile.TemporaryDirectory() as tmp:
        import os

        os.environ["DAGSTER_HOME"] = tmp
        Path(tmp, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        from split_assets.demo import build_workspace

        config = build_workspace(Path(tmp) / "ws").config_path
        assert cli(["run", "--config", str(config)]) == 0
        rows = [r for r in Session.open(config).partition.rows() if not r.infra and not r.degraded]
    flip = {"T1": "T2", "T2": "T1"}
    results: dict[str, dict[str, float]] = {}
    for target in TARGETS:
        rng = random.Random(int(target * 100))
        lo, hi = 0.0, 0.5  # the flip share that gives the target kappa over all answers
        for _ in range(30):
            share = (lo + hi) / 2
            human = {r.question_id: flip[r.tier] if rng.random() < share else r.tier
                     for r in rows}
            k = kappa([Pair(r.question_id, r.video_id, "", r.tier, human[r.question_id])
                       for r in rows], ("T1", "T2"), b=10).kappa
            lo, hi = (share, hi) if k > target else (lo, share)
        for design, stratify in (("random", ()), ("stratified_tier", ("tier",))):
            for n in SIZES:
                widths = []
                for rep in range(REPS):
                    sample = draw(rows, {}, n, stratify, seed=rep)
                    pairs = [Pair(r.question_id, r.video_id, "", r.tier, human[r.question_id],
                                  w) for r, _, w in sample]
                    widths.append(kappa(pairs, ("T1", "T2"), seed=rep).ci_width)
                results[f"kappa{target}_{design}_n{n}"] = round(statistics.median(widths), 3)
    t2 = sum(r.tier == "T2" for r in rows) / len(rows)
    print(f"{len(rows)} diagnosed answers, {t2:.1%} T2; median 95 % interval width of kappa")
    print("| labels | " + " | ".join(f"kappa {t} random | kappa {t} stratified on tier"
                                       for t in TARGETS) + " |")
    print("|---:|" + "---:|" * (2 * len(TARGETS)))
    for n in SIZES:
        cells = [results[f"kappa{t}_{d}_n{n}"] for t in TARGETS
                 for d in ("random", "stratified_tier")]
        print(f"| {n} | " + " | ".join(f"±{c / 2:.2f} (width {c:.2f})" for c in cells) + " |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
