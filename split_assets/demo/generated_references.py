"""Generated reference runs for the sample workspace (issue 45): ``split-assets demo
--references N`` adds N runs of the same benchmark from the latent-ability population
(``population.py``, calibrated to public Video-MME runs and conditioned on the baseline's
answers), writes them into ``harness.db``, their truth into ``population_truth.json`` (which
wrong answers are planted defects; a judge must never read it) and lists them in
``video_split.balance_runs``. The demo's full-context judge reads traces, not references: the
runs only keep the test pool representative for models like them."""

from __future__ import annotations

from pathlib import Path

from split_assets.demo.population import (
    generate_population,
    write_population_runs,
    write_population_truth,
)
from split_assets.sources.benchmark import load_benchmark
from split_assets.sources.config_file import (
    CONFIG_FILE,
    append_run,
    load_workspace_config,
    save_document,
    section_of,
)
from split_assets.sources.run_outcomes import run_outcomes

TRUTH_FILE = "population_truth.json"


def add_references(directory: Path, n_runs: int, seed: int = 2026) -> list[str]:
    """Generate ``n_runs`` reference runs into the workspace in ``directory``; their ids."""
    config = directory / CONFIG_FILE
    doc = load_workspace_config(config)
    baseline = str(doc["video_split"]["baseline_run_id"])
    benchmark = load_benchmark(directory / "questions")
    outcomes = run_outcomes(directory / "harness.db", baseline, benchmark,
                            ["error", "parse_error"]).correct
    questions = benchmark.questions
    pop = generate_population([q.question_id for q in questions],
                              [q.video_id for q in questions], n_runs, seed,
                              baseline_correct=[bool(outcomes[q.question_id])
                                                for q in questions])
    write_population_runs(directory / "harness.db", questions, pop)
    write_population_truth(directory / TRUTH_FILE, pop,
                           [bool(outcomes[q.question_id]) for q in questions])
    runs = section_of(doc, "video_split")
    for run_id in pop.run_ids:
        append_run(runs, "balance_runs", run_id)
    save_document(config, doc)
    return list(pop.run_ids)
