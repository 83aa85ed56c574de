"""Issue 45 in the split core: floors that follow the diagnoses (``floor_share``), the warnings
of a split that is not outcome-driven, and ``balance_runs`` keeping test representative for
the balanced runs (with the leave-one-run-out estimate for a model that was not)."""

from __future__ import annotations

import dataclasses

import numpy as np

from split_assets.settings.sections import VideoSplitConfig
from split_assets.split.balance_runs import leave_one_run_out, run_deviations, without_run
from split_assets.split.degenerate import degenerate_warnings
from split_assets.split.problem import (
    SelectionSettings,
    SplitProblem,
    SplitQuestion,
    ValidationSettings,
)
from split_assets.split.selection import select_trainval

TYPES = ("Counting Problem", "OCR Problems", "Object Reasoning")


def _problem(n_videos: int = 90, *, runs: int = 0, t2_every: int = 4, seed: int = 3,
             **selection: object) -> SplitProblem:
    """Three questions per video; the baseline and ``runs`` other runs share a difficulty per
    question (their correctness correlates, as real models' does); every ``t2_every``-th
    wrong answer is T2 (0: none)."""
    rng = np.random.default_rng(seed)
    n = 3 * n_videos
    difficulty = rng.normal(0, 1.2, n)
    ability = rng.uniform(-0.3, 0.9, runs + 1)
    correct = rng.random((runs + 1, n)) < 1 / (1 + np.exp(difficulty[None, :] - ability[:, None]))
    questions, wrong = [], 0
    for i in range(n):
        ok = bool(correct[0, i])
        tier = None
        if not ok:
            wrong += 1
            tier = "T2" if t2_every and wrong % t2_every == 0 else "T1"
        questions.append(SplitQuestion(
            f"{i // 3:03d}-{i % 3 + 1}", f"{i // 3:03d}", TYPES[i % 3],
            ("short", "medium", "long")[(i // 3) % 3], ok, tier,
            runs=tuple(bool(c) for c in correct[1:, i])))
    names = tuple(f"ref-{k + 1}" for k in range(runs))
    settings = {"n_trainval": 2 * n_videos // 3, "epsilon": 0.1, "report_floor": 0,
                "seed": 7, "balance_runs": names, **selection}
    return SplitProblem(tuple(questions), selection=SelectionSettings(**settings),
                        validation=ValidationSettings(val_ratio=0.3))


def test_floor_share_takes_its_share_of_each_task_types_t2() -> None:
    problem = _problem(floor_share=0.8)
    available = {t: sum(q.is_floor_t2 and q.task_type == t for q in problem.questions)
                 for t in TYPES}
    assert problem.floors == {t: int(0.8 * available[t] + 1e-9) for t in TYPES}
    assert all(available[t] > 0 for t in TYPES)
    test = set(select_trainval(problem).test)
    trainval_t2 = {t: sum(q.is_floor_t2 and q.task_type == t and q.video_id not in test
                          for q in problem.questions) for t in TYPES}
    assert all(trainval_t2[t] >= problem.floors[t] for t in TYPES)


def test_floor_k_wins_for_the_types_it_names_and_empty_counts_as_not_given() -> None:
    both = _problem(floor_share=0.5, floor_k={"OCR Problems": 1})
    share_only = _problem(floor_share=0.5)
    assert both.floors["OCR Problems"] == 1 != share_only.floors["OCR Problems"]
    assert both.floors["Counting Problem"] == share_only.floors["Counting Problem"] > 0
    assert _problem(floor_k={}).floors == {}


def test_a_share_is_read_as_the_decimal_written() -> None:
    """floor(0.29 x 100) is 29, not the 28 that binary floating point gives."""
    problem = _problem(n_videos=600, t2_every=1, floor_share=0.29)
    available = sum(q.is_floor_t2 and q.task_type == TYPES[0] for q in problem.questions)
    assert problem.floors[TYPES[0]] == (29 * available) // 100


def test_a_split_that_is_not_outcome_driven_says_why() -> None:
    no_t2 = degenerate_warnings(_problem(t2_every=0, floor_share=0.8), answer_only_rules=True,
                                references=0)
    assert len(no_t2) == 2
    assert "0 reference run(s)" in no_t2[0] and "--reference FILE" in no_t2[0]
    assert no_t2[1].startswith("no T2 at all") and "split-assets import" in no_t2[1]
    no_floor = degenerate_warnings(_problem(), answer_only_rules=False, references=0)
    assert no_floor == ["no T2 floor applies (video_split.floor_k is empty and no "
                        "video_split.floor_share is set): trainval is not pulled toward "
                        "defects; set video_split.floor_share (e.g. 0.7)"]
    assert degenerate_warnings(_problem(floor_share=0.8), answer_only_rules=True,
                               references=2) == []
    (tiny,) = degenerate_warnings(_problem(floor_share=0.01), answer_only_rules=False,
                                  references=0)
    assert "video_split.floor_share 0.01 rounds every task type's floor down to 0" in tiny


def test_balanced_runs_keep_their_own_accuracy_in_test() -> None:
    """Each balanced run's test accuracy within 0.5 pp of its full-benchmark accuracy, where
    a split that balances only the baseline leaves them where chance puts them."""
    problem = _problem(n_videos=300, runs=4, floor_share=0.8)
    balanced = run_deviations(problem, select_trainval(problem).test)
    assert max(abs(d) for d in balanced.values()) <= 0.005, balanced
    plain = problem
    for run in problem.selection.balance_runs:  # today's split: the baseline's accuracy only
        plain = without_run(plain, run)
    unbalanced = run_deviations(problem, select_trainval(plain).test)
    assert max(abs(d) for d in unbalanced.values()) > max(abs(d) for d in balanced.values())


def test_leave_one_run_out_selects_again_without_each_run() -> None:
    problem = _problem(n_videos=150, runs=3, floor_share=0.8)
    loro = leave_one_run_out(problem, draws=50)
    assert set(loro["per_run"]) == {"ref-1", "ref-2", "ref-3"}
    assert loro["mean"] == round(float(np.mean(list(loro["per_run"].values()))), 6)
    assert loro["max"] == max(loro["per_run"].values())
    rnd = loro["random_pools"]
    assert rnd["draws"] == 50 and rnd["test_videos"] == 50 and rnd["mean"] > 0
    # held out, a run is no longer balanced: its deviation is that of the split made without it
    test = select_trainval(without_run(problem, "ref-2")).test
    assert loro["per_run"]["ref-2"] == round(abs(run_deviations(problem, test)["ref-2"]), 6)


def test_any_seed_gives_the_estimate() -> None:
    """A negative seed (video_split.seed is any integer) seeds the random pools too."""
    p = _problem(n_videos=60, runs=2, floor_share=0.8)
    negative = SplitProblem(p.questions, selection=dataclasses.replace(p.selection, seed=-7),
                            validation=p.validation)
    assert leave_one_run_out(negative, draws=10)["random_pools"]["mean"] > 0


def test_a_partial_run_is_balanced_where_it_answers() -> None:
    problem = _problem(n_videos=150, runs=1, floor_share=0.8)
    partial = tuple(q if i % 4 else dataclasses.replace(q, runs=(None,))
                    for i, q in enumerate(problem.questions))
    problem = SplitProblem(partial, selection=problem.selection, validation=problem.validation)
    assert [c.dimension for c in problem.run_columns] == ["run_correct", "run_answered"]
    assert abs(run_deviations(problem, select_trainval(problem).test)["ref-1"]) <= 0.01


def test_a_config_without_references_keeps_its_split_id() -> None:
    """The new keys enter split_id only when set: an earlier config hashes as before."""
    base = {"baseline_run_id": "b", "n_trainval": 10, "epsilon": 0.1, "report_floor": 0,
            "val_wrong_min": 0, "val_ratio": 0.3, "seed": 7, "floor_k": {}}
    identity = VideoSplitConfig(**base).identity()
    assert "floor_share" not in identity and "balance_runs" not in identity
    with_refs = VideoSplitConfig(**base, balance_runs=["r"], floor_share=0.8).identity()
    assert with_refs["balance_runs"] == ["r"] and with_refs["floor_share"] == 0.8


def test_the_class_selection_balances_the_runs_too() -> None:
    """At scale the classes are made without the runs' columns (each run would make nearly
    every video a class of its own); an LP over videos set free balances them after."""
    problem = _problem(n_videos=600, runs=4, floor_share=0.7, selector="class_lp")
    selection = select_trainval(problem)
    deviations = run_deviations(problem, selection.test)
    assert max(abs(d) for d in deviations.values()) <= 0.005, deviations
    test = set(selection.test)
    assert all(sum(q.is_floor_t2 and q.task_type == t and q.video_id not in test
                   for q in problem.questions) >= k for t, k in problem.floors.items())
