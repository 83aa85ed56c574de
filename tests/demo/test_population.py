"""The latent-ability generator of further runs (split_assets/demo/population.py): seeded,
calibrated to the public Video-MME figures, conditioned on the demo's baseline, written to the
harness db as runs the pipeline reads."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from split_assets.demo import WorkspaceSummary, build_workspace
from split_assets.demo.population import (
    ACCURACY_RANGE,
    PHI_MEAN,
    Population,
    calibration,
    generate_population,
    phi_against,
    planted_defects,
    write_population_runs,
    write_population_truth,
)
from split_assets.sources.benchmark import Benchmark, load_benchmark
from split_assets.sources.run_outcomes import run_outcomes

BASELINE = "baseline-2026-01"


def _ids(n_videos: int) -> tuple[list[str], list[str]]:
    questions = [f"{v:04d}-{k}" for v in range(n_videos) for k in range(1, 4)]
    return questions, [q[:4] for q in questions]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[WorkspaceSummary, Benchmark,
                                                             np.ndarray]:
    """The demo workspace at full size (900 videos), its benchmark and baseline outcomes."""
    summary = build_workspace(tmp_path_factory.mktemp("population") / "ws")
    benchmark = load_benchmark(summary.directory / "questions")
    outcomes = run_outcomes(summary.directory / "harness.db", BASELINE, benchmark, [])
    baseline = np.array([bool(outcomes.correct[q.question_id]) for q in benchmark.questions])
    return summary, benchmark, baseline


def test_deterministic_from_the_seed() -> None:
    questions, videos = _ids(60)
    a, b = (generate_population(questions, videos, 5, seed=3) for _ in range(2))
    assert np.array_equal(a.correct, b.correct) and np.array_equal(a.defect, b.defect)
    assert np.array_equal(a.ability, b.ability)
    assert a.run_ids == ("ref-01", "ref-02", "ref-03", "ref-04", "ref-05")
    assert a.correct.shape == (5, 180) and a.correct.dtype == bool and a.defect.shape == (180,)
    assert not np.array_equal(a.correct, generate_population(questions, videos, 5, 4).correct)
    held = generate_population(questions, videos, 2, seed=3, prefix="held")
    assert held.run_ids == ("held-01", "held-02")
    with pytest.raises(ValueError):
        generate_population(questions, videos[:-1], 2, seed=3)


def test_calibrated_to_the_public_figures() -> None:
    questions, videos = _ids(900)
    figures = calibration(generate_population(questions, videos, 25, seed=11))
    assert abs(figures["phi_mean"] - PHI_MEAN) <= 0.05, figures
    assert 0.05 <= figures["phi_min"] <= 0.30 and 0.48 <= figures["phi_max"] <= 0.70, figures
    low, high = ACCURACY_RANGE
    assert low - 0.02 <= figures["accuracy_min"] and figures["accuracy_max"] <= high + 0.02
    assert figures["accuracy_max"] - figures["accuracy_min"] >= 0.12, figures
    assert 0.0 <= figures["intra_video_correlation"] <= 0.12, figures
    assert 0.07 <= figures["defect_share"] <= 0.13, figures


def test_conditioned_on_the_baseline(demo: tuple[WorkspaceSummary, Benchmark,
                                                 np.ndarray]) -> None:
    _, benchmark, baseline = demo
    questions = [q.question_id for q in benchmark.questions]
    videos = [q.video_id for q in benchmark.questions]
    pop = generate_population(questions, videos, 12, seed=5, baseline_correct=baseline)
    phi = phi_against(pop, baseline)
    assert 0.30 <= float(phi.mean()) <= 0.50 and phi.min() > 0.1, phi
    figures = calibration(pop)
    assert abs(figures["phi_mean"] - PHI_MEAN) <= 0.07, figures
    planted = planted_defects(pop, baseline)
    assert planted.sum() >= 0.7 * pop.defect.sum()  # the defect items: mostly baseline-wrong
    assert not (planted & baseline).any()
    wrong = ~baseline
    assert 0.1 <= planted.sum() / wrong.sum() <= 0.4
    # on a defect item the generated runs are mostly wrong too: a shared capability gap
    assert pop.correct[:, pop.defect].mean() < 0.3 < pop.correct[:, ~pop.defect].mean()


def test_runs_written_to_the_harness_db(demo: tuple[WorkspaceSummary, Benchmark, np.ndarray],
                                        tmp_path: Path) -> None:
    summary, benchmark, baseline = demo
    questions = [q.question_id for q in benchmark.questions]
    videos = [q.video_id for q in benchmark.questions]
    pop = generate_population(questions, videos, 3, seed=7, baseline_correct=baseline)
    db = summary.directory / "harness.db"
    write_population_runs(db, benchmark.questions, pop)
    write_population_runs(db, benchmark.questions, pop)  # replaces, never duplicates
    for r, run_id in enumerate(pop.run_ids):
        outcomes = run_outcomes(db, run_id, benchmark, [])
        assert [outcomes.correct[q] for q in questions] == pop.correct[r].tolist()
        assert not outcomes.infra
    conn = sqlite3.connect(db)
    try:
        counts = dict(conn.execute("SELECT run_id, COUNT(*) FROM predictions GROUP BY run_id"))
        letters = {row[0] for row in conn.execute("SELECT DISTINCT prediction FROM predictions "
                                                  "WHERE run_id LIKE 'ref-%'")}
    finally:
        conn.close()
    assert all(counts[run_id] == len(questions) for run_id in pop.run_ids)
    assert letters == {"A", "B", "C", "D"}
    truth_path = tmp_path / "population_truth.json"
    write_population_truth(truth_path, pop, baseline)
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    assert truth_path.read_bytes().endswith(b"\n")
    ids = np.array(questions)
    assert truth["planted_defects"] == sorted(ids[planted_defects(pop, baseline)].tolist())
    assert [run["run_id"] for run in truth["runs"]] == list(pop.run_ids)
    for run, accuracy in zip(truth["runs"], pop.correct.mean(axis=1), strict=True):
        assert run["accuracy"] == pytest.approx(float(accuracy), abs=1e-6)
    assert isinstance(pop, Population)
