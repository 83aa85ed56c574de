"""Representativeness for models not yet run (issue 45): does balancing reference runs keep the
test pool representative for models the selection never saw?

Seeded Video-MME-shaped benchmarks (900 videos, 3 questions each, the published task-type mix,
durations in thirds: bench/split_quality.py's metadata) and, per seed, one population of runs
from the latent-ability generator (split_assets/demo/population.py: question difficulty with
planted defect items, a video effect, model abilities; calibrated to the public Video-MME
figures: mean pairwise phi 0.39, accuracies 0.46-0.70, intra-video correlation ~0.05): run 1 is
the baseline, runs 2-7 the references, the rest held-out models. The generator has no task-type
or duration effect, so balancing task types and durations does not by itself balance accuracy.

For k in (0, 1, 3, 6) references: the baseline's wrong answers get the answer-only rules judge's
tiers (``RulesJudge.decide_answer_only``: T2 when all k references are wrong too; k = 0: every
wrong answer T1, no floors: today's baseline-only split), the k references are balanced
(``balance_runs``) with T2 floors of ``--floor-share`` of each task type's T2 (and once with no
floors), and the selection picks trainval (2/3 of the videos, epsilon 0.02, as the demo's
config). Printed per k (means over the seeds, pp = percentage points): the held-out models'
mean |test - full| accuracy deviation on our test pool, the same over seeded random video-level
pools of the same size, the ratios to random and to baseline-only, the largest |deviation| of a
balanced reference, the baseline's, the judge's T2 count and its precision / recall against the
planted defects (the baseline's wrong answers on defect items), the leave-one-run-out estimate
(``split/balance_runs.py``) beside its random pools, and the largest selection and LORO seconds.
Then the selection and LORO at 90,000 videos with 6 references (skipped with --quick).

Targets (exit 1 on a miss): with 6 references the held-out mean <= 0.75 x random pools and
<= 0.85 x baseline-only; each balanced reference's own |deviation| <= 0.5 pp at 900 videos;
selection <= 0.5 s at 900 and <= 10 s at 90,000 videos; LORO <= 5 s at 900 and <= 60 s at
90,000. The last line is one JSON object.

Run: .venv/bin/python -m bench.representativeness [--quick] [--floor-share 0.7] [--seeds 12]
(--floor-share: default the one a first import writes, FLOOR_SHARE)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from bench.split_quality import TASK_COUNTS
from split_assets.demo.population import (
    generate_population,
    planted_defects,
    success_probability,
)
from split_assets.importing.workspace_setup import FLOOR_SHARE
from split_assets.judge.base import JudgeCase
from split_assets.judge.rules import RulesJudge
from split_assets.settings import RulesJudgeConfig
from split_assets.sources.benchmark import Question
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.split.balance_runs import leave_one_run_out
from split_assets.split.problem import (
    SelectionSettings,
    SplitProblem,
    SplitQuestion,
    ValidationSettings,
)
from split_assets.split.selection import select_trainval

DURATIONS = ("short", "medium", "long")
KS = (0, 1, 3, 6)
N_REFS = 6
EPSILON = 0.02


class Bench:
    """One seeded benchmark and its population: metadata, the runs, per-video counts."""

    def __init__(self, n_videos: int, seed: int, n_held: int) -> None:
        rng = np.random.default_rng([seed, 45])
        types = sorted(TASK_COUNTS)
        weights = np.array([TASK_COUNTS[t] for t in types], dtype=float)
        self.n_videos = n_videos
        self.video = np.repeat(np.arange(n_videos), 3)
        self.vids = [f"{v:06d}" for v in range(n_videos)]
        self.qids = [f"{v:06d}-{k}" for v in range(n_videos) for k in (1, 2, 3)]
        self.task = [types[t] for t in rng.choice(len(types), 3 * n_videos,
                                                   p=weights / weights.sum())]
        dur = rng.permutation(np.arange(n_videos) % 3)
        self.duration = [DURATIONS[dur[v]] for v in self.video]
        pop = generate_population(self.qids, [self.vids[v] for v in self.video],
                                  1 + N_REFS + n_held, seed, prefix="m")
        self.pop = pop
        self.baseline = pop.correct[0]
        self.refs = pop.correct[1:1 + N_REFS]
        self.ref_ids = pop.run_ids[1:1 + N_REFS]
        self.held = pop.correct[1 + N_REFS:]
        self.planted = planted_defects(pop, self.baseline)
        self.p_held = success_probability(pop)[1 + N_REFS:]
        self.seed = seed

    def noise_floor(self, n_test_videos: int) -> float:
        """The held-out models' mean E|test - full| (pp) left by their answers' own chance when
        a pool matched each one's true success probabilities exactly: what no selection can
        remove (normal approximation, the mean Bernoulli variance per question)."""
        n, n_test = len(self.qids), 3 * n_test_videos
        variance = (self.p_held * (1 - self.p_held)).mean(1) * (n - n_test) / (n * n_test)
        return float(100 * np.sqrt(2 / np.pi) * np.sqrt(variance).mean())

    def tiers(self, k: int) -> list[str | None]:
        """The answer-only rules judge's tier of each baseline answer (None when correct)."""
        judge = RulesJudge(RulesJudgeConfig(), "answer_only", tuple(self.ref_ids[:k]), k)
        out: list[str | None] = []
        for i, ok in enumerate(self.baseline):
            if ok:
                out.append(None)
                continue
            q = Question(self.qids[i], self.vids[self.video[i]], self.task[i],
                         self.duration[i], "A", "", ("A", "B", "C", "D"))
            pred = CanonicalPrediction(q.question_id, q.video_id, q.task_type, q.difficulty,
                                       "A", "B", False, False, "answer", False, None, "B")
            wrong = tuple(not bool(self.refs[r, i]) for r in range(k))
            case = JudgeCase(question=q, prediction=pred, reference_wrong=wrong)
            out.append(judge.decide_answer_only(case).tier)
        return out

    def problem(self, k: int, tiers: list[str | None], floor_share: float | None
                ) -> SplitProblem:
        questions = tuple(
            SplitQuestion(self.qids[i], self.vids[self.video[i]], self.task[i],
                          self.duration[i], bool(self.baseline[i]), tiers[i],
                          runs=tuple(bool(self.refs[r, i]) for r in range(k)))
            for i in range(len(self.qids)))
        n_trainval = int(2 * self.n_videos / 3 + 0.5)
        selection = SelectionSettings(
            n_trainval=n_trainval, epsilon=EPSILON,
            report_floor=max(3, int(30 * self.n_videos / 900 + 0.5)), seed=self.seed,
            balance_runs=tuple(self.ref_ids[:k]), floor_share=floor_share)
        return SplitProblem(questions, selection=selection,
                            validation=ValidationSettings(val_ratio=0.3, val_wrong_min=0))

    def deviations(self, correct: np.ndarray, test_videos: np.ndarray) -> np.ndarray:
        """|test - full| accuracy per run (rows of ``correct``), in pp."""
        in_test = np.isin(self.video, test_videos)
        return 100 * np.abs(correct[:, in_test].mean(1) - correct.mean(1))

    def random_pools(self, correct: np.ndarray, n_test: int, draws: int) -> np.ndarray:
        """Mean |test - full| per run over ``draws`` seeded random pools of whole videos, pp."""
        per_video = np.stack([np.bincount(self.video, weights=row, minlength=self.n_videos)
                              for row in correct.astype(float)])
        rng = np.random.default_rng([self.seed, 0xAB])
        total = np.zeros(len(correct))
        full = correct.mean(1)
        for _ in range(draws):
            pick = rng.choice(self.n_videos, n_test, replace=False)
            total += np.abs(per_video[:, pick].sum(1) / (3 * n_test) - full)
        return 100 * total / draws


def case(bench: Bench, k: int, floor_share: float | None, draws: int) -> dict[str, Any]:
    """One selection: its figures for the held-out models, the references, the judge."""
    tiers = bench.tiers(k)
    problem = bench.problem(k, tiers, floor_share)
    started = time.perf_counter()
    test = np.array([int(v) for v in select_trainval(problem).test])
    select_s = time.perf_counter() - started
    t2 = np.array([t == "T2" for t in tiers])
    hits = int((t2 & bench.planted).sum())
    row: dict[str, Any] = {
        "held_pp": float(bench.deviations(bench.held, test).mean()),
        "random_pp": float(bench.random_pools(bench.held, len(test), draws).mean()),
        "refs_max_pp": float(bench.deviations(bench.refs[:k], test).max()) if k else None,
        "baseline_pp": float(bench.deviations(bench.baseline[None, :], test)[0]),
        "t2": int(t2.sum()), "precision": hits / int(t2.sum()) if t2.any() else None,
        "recall": hits / max(int(bench.planted.sum()), 1), "select_s": select_s,
        "floors": int(sum(problem.floors.values())), "loro_pp": None, "loro_random_pp": None,
        "loro_s": None}
    if k:
        started = time.perf_counter()
        loro = leave_one_run_out(problem)
        row.update(loro_s=time.perf_counter() - started, loro_pp=100 * loro["mean"],
                   loro_random_pp=100 * loro["random_pools"]["mean"])
    return row


def mean_of(rows: list[dict[str, Any]], key: str, how: Any = np.mean) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return round(float(how(values)), 4) if values else None


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {key: mean_of(rows, key) for key in ("held_pp", "random_pp", "baseline_pp", "t2",
                                                "precision", "recall", "loro_pp",
                                                "loro_random_pp", "floors")}
    out.update(refs_max_pp=mean_of(rows, "refs_max_pp", np.max),
               select_s=mean_of(rows, "select_s", np.max), loro_s=mean_of(rows, "loro_s", np.max),
               held_pp_per_seed=[round(r["held_pp"], 4) for r in rows])
    return out


def fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def print_row(k: int, share: float | None, s: dict[str, Any], base: float) -> None:
    print(f"{k:>2} {fmt(share, '.2f'):>5} {fmt(s['held_pp']):>8} {fmt(s['random_pp']):>8} "
          f"{s['held_pp'] / s['random_pp']:>6.3f} {s['held_pp'] / base:>6.3f} "
          f"{fmt(s['refs_max_pp']):>8} {fmt(s['baseline_pp']):>8} {fmt(s['t2'], '.0f'):>5} "
          f"{fmt(s['floors'], '.0f'):>6} {fmt(s['precision']):>6} {fmt(s['recall']):>6} "
          f"{fmt(s['loro_pp']):>7} {fmt(s['loro_random_pp']):>7} {fmt(s['select_s']):>7} "
          f"{fmt(s['loro_s']):>7}")


def small(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Every (k, floor share) at 900 videos over the seeds: their summaries, printed."""
    benches = [Bench(900, seed, args.held_out) for seed in range(args.seeds)]
    plan = [(k, args.floor_share) for k in KS] + [(k, None) for k in KS if k]
    print(f"900 videos, {args.seeds} seeds, {args.held_out} held-out models, {args.draws} random "
          f"pools per seed; pp: |test - full| accuracy; means over seeds (refs, seconds: max)")
    print(" k floor  held pp  rand pp  xrand  xbase  refs pp  base pp    T2 floors   prec"
          "    rec loro pp loro rd  sel s  loro s")
    results: dict[str, dict[str, Any]] = {}
    for k, share in plan:
        s = summary([case(b, k, share, args.draws) for b in benches])
        results[f"k={k},floor_share={share}"] = s
        base = results[f"k=0,floor_share={args.floor_share}"]["held_pp"]
        print_row(k, share, s, base)
    floor = float(np.mean([b.noise_floor(300) for b in benches]))
    rand = results[f"k=0,floor_share={args.floor_share}"]["random_pp"]
    results["noise_floor"] = {"held_pp": round(floor, 4), "x_random": round(floor / rand, 4)}
    print(f"noise floor (a pool matching each held-out model's true success probabilities): "
          f"{floor:.3f} pp = {floor / rand:.3f} x random pools")
    return results


def large(n_videos: int, floor_share: float) -> dict[str, float]:
    """Selection and LORO seconds with 6 references at ``n_videos`` videos."""
    bench = Bench(n_videos, 0, 1)
    problem = bench.problem(N_REFS, bench.tiers(N_REFS), floor_share)
    started = time.perf_counter()
    test = np.array([int(v) for v in select_trainval(problem).test])
    select_s = time.perf_counter() - started
    started = time.perf_counter()
    leave_one_run_out(problem)
    loro_s = time.perf_counter() - started
    refs = float(bench.deviations(bench.refs, test).max())
    print(f"{n_videos} videos, 6 references: selection {select_s:.2f} s, LORO {loro_s:.2f} s, "
          f"refs' largest |deviation| {refs:.3f} pp, held-out |deviation| "
          f"{float(bench.deviations(bench.held, test)[0]):.3f} pp")
    return {"select_s": round(select_s, 3), "loro_s": round(loro_s, 3),
            "refs_max_pp": round(refs, 4)}


def misses(results: dict[str, dict[str, Any]], big: dict[str, float] | None,
           share: float) -> list[str]:
    six, base = results[f"k=6,floor_share={share}"], results[f"k=0,floor_share={share}"]
    out = []
    if six["held_pp"] > 0.75 * six["random_pp"]:
        out.append(f"held-out {six['held_pp']:.3f} pp > 0.75 x random {six['random_pp']:.3f}")
    if six["held_pp"] > 0.85 * base["held_pp"]:
        out.append(f"held-out {six['held_pp']:.3f} pp > 0.85 x baseline-only "
                   f"{base['held_pp']:.3f}")
    for name, s in results.items():
        if name == "noise_floor":
            continue
        if s["refs_max_pp"] is not None and s["refs_max_pp"] > 0.5:
            out.append(f"{name}: a reference's |deviation| {s['refs_max_pp']:.3f} pp > 0.5")
        if s["select_s"] > 0.5:
            out.append(f"{name}: selection {s['select_s']:.3f} s > 0.5 s")
        if s["loro_s"] is not None and s["loro_s"] > 5:
            out.append(f"{name}: LORO {s['loro_s']:.3f} s > 5 s")
    if big is not None and big["select_s"] > 10:
        out.append(f"90,000 videos: selection {big['select_s']} s > 10 s")
    if big is not None and big["loro_s"] > 60:
        out.append(f"90,000 videos: LORO {big['loro_s']} s > 60 s")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip 90,000 videos")
    parser.add_argument("--floor-share", type=float, default=FLOOR_SHARE)
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--held-out", type=int, default=20)
    parser.add_argument("--draws", type=int, default=500)
    args = parser.parse_args()
    results = small(args)
    big = None if args.quick else large(90_000, args.floor_share)
    missed = misses(results, big, args.floor_share)
    for line in missed:
        print(f"MISSED: {line}")
    print(json.dumps({"n_videos": 900, "seeds": args.seeds, "held_out": args.held_out,
                      "floor_share": args.floor_share, "results": results, "large": big,
                      "missed": missed}))
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
