"""Further runs of the same benchmark from a latent-ability (logistic IRT) model.

Model ``m`` answers question ``q`` of video ``v`` correctly with probability
``sigmoid(a_m * (theta_m - b_q - u_v))``: ``b_q`` the question's difficulty (a normal component,
plus ``DEFECT_SHIFT`` on a ``DEFECT_SHARE`` of "defect" items: a capability gap the models
share), ``u_v`` an effect shared by a video's questions, ``theta_m`` the model's ability (solved
so its expected accuracy hits a target spread over ``ACCURACY_RANGE``) and ``a_m`` how sharply
it separates easy from hard questions (spread over ``DISCRIMINATION_RANGE``: what gives pairs
of models their different agreement). The generated truth: a wrong answer on a defect item is a
planted persistent defect (what a judge should call T2), a wrong answer elsewhere a lapse (T1).

Given the demo's fixed baseline run, the latent difficulties are drawn from their posterior
given the baseline's outcomes (a grid over ``u_v``, then over ``(defect, b_q)``, for a model of
the baseline's accuracy), so the runs agree with the baseline as real models do and the planted
defects fall mostly on its wrong answers. All randomness is ``numpy.random.default_rng``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from split_assets.lib.canonical import atomic_write_bytes, canonical_bytes
from split_assets.sources.benchmark import Question, option_letters
from split_assets.sources.harness_db import create_tables, insert_predictions

# Aggregate figures of public Video-MME runs of models from different families (no run is
# embedded): the mean phi of two models' correctness on the same questions and its range over
# the 43 pairs, the models' accuracies, and the intra-video correlation of correctness.
PHI_MEAN = 0.39
PHI_RANGE = (0.17, 0.58)
ACCURACY_RANGE = (0.46, 0.70)
INTRA_VIDEO_CORRELATION = 0.05

# The model's parameters (logits), tuned so that 25 runs on 900 videos x 3 questions give the
# figures above (``calibration``; tests/demo/test_population.py checks them).
DIFFICULTY_SD = 1.65
VIDEO_EFFECT_SD = 0.75
DEFECT_SHARE = 0.10
DEFECT_SHIFT = 3.0
DISCRIMINATION_RANGE = (0.45, 1.75)
_ACCURACY_MARGIN = 0.015  # targets stay this far inside ACCURACY_RANGE (sampling noise)
_GRID_B, _GRID_U = 161, 41
_STAMP = "2026-02-01T00:00:00Z"  # created_at of every generated row (byte-identical output)


@dataclass(frozen=True)
class Population:
    """Generated runs: ``correct[r, q]`` of run ``run_ids[r]`` on ``question_ids[q]``;
    ``defect[q]`` the planted defect items; ``ability`` and ``discrimination`` per run;
    ``video_ids`` and ``difficulty`` (the latent ``b_q + u_v``) per question; ``seed`` the
    generator's (the wrong letters derive from it)."""

    question_ids: tuple[str, ...]
    run_ids: tuple[str, ...]
    correct: np.ndarray
    defect: np.ndarray
    ability: np.ndarray
    video_ids: tuple[str, ...] = ()
    discrimination: np.ndarray | None = None
    difficulty: np.ndarray | None = None
    seed: int = 0


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _spread(rng: np.random.Generator, n: int, low: float, high: float) -> np.ndarray:
    """``n`` values stratified over [low, high] (one per equal slice, in random order)."""
    return low + (high - low) * (rng.permutation(n) + rng.random(n)) / max(n, 1)


def _solve_ability(a: np.ndarray, d: np.ndarray, target: np.ndarray,
                   weight: np.ndarray | None = None) -> np.ndarray:
    """Per run the theta whose expected accuracy over difficulties ``d`` (weighted) is the
    target (bisection)."""
    w = np.full(d.shape, 1.0 / d.size) if weight is None else weight
    lo, hi = np.full(a.shape, -20.0), np.full(a.shape, 20.0)
    for _ in range(45):
        mid = (lo + hi) / 2
        low = _sigmoid(a[:, None] * (mid[:, None] - d[None, :])) @ w < target
        lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
    return (lo + hi) / 2


def _free_latents(rng: np.random.Generator, n_videos: int,
                  video: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Difficulty with the video effect, and the defect flags, from the prior."""
    defect = rng.random(video.size) < DEFECT_SHARE
    b = rng.normal(0.0, DIFFICULTY_SD, video.size) + DEFECT_SHIFT * defect
    return b + rng.normal(0.0, VIDEO_EFFECT_SD, n_videos)[video], defect


def _grids() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The u grid and its prior; the (normal, defect) x b grid of cells and their prior."""
    u = np.linspace(-4 * VIDEO_EFFECT_SD, 4 * VIDEO_EFFECT_SD, _GRID_U)
    pu = np.exp(-0.5 * (u / VIDEO_EFFECT_SD) ** 2)
    b = np.linspace(-4.5 * DIFFICULTY_SD, DEFECT_SHIFT + 4.5 * DIFFICULTY_SD, _GRID_B)
    normal = (1 - DEFECT_SHARE) * np.exp(-0.5 * (b / DIFFICULTY_SD) ** 2)
    shifted = DEFECT_SHARE * np.exp(-0.5 * ((b - DEFECT_SHIFT) / DIFFICULTY_SD) ** 2)
    cells = np.concatenate([normal, shifted])
    return u, pu / pu.sum(), np.concatenate([b, b]), cells / cells.sum()


def _draw_cells(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One column index per row of ``probs`` (rows need not be normalized)."""
    cdf = np.cumsum(probs, axis=1)
    return (cdf < rng.random(len(cdf))[:, None] * cdf[:, -1:]).sum(axis=1)


def _conditioned_latents(rng: np.random.Generator, n_videos: int, video: np.ndarray,
                         baseline: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Difficulty with the video effect, and the defect flags, drawn from their posterior
    given the baseline's outcomes (a model of mean discrimination and the baseline's
    accuracy): first each video's effect, then each question's cell given it."""
    u, pu, b, pb = _grids()
    a0 = np.array([sum(DISCRIMINATION_RANGE) / 2])
    joint = (u[:, None] + b[None, :]).ravel()
    theta0 = _solve_ability(a0, joint, np.array([baseline.mean()]),
                            (pu[:, None] * pb[None, :]).ravel())[0]
    p_ok = _sigmoid(a0[0] * (theta0 - u[:, None] - b[None, :]))  # (u, cell)
    m1, m0 = p_ok @ pb, (1 - p_ok) @ pb
    right = np.bincount(video, weights=baseline.astype(float), minlength=n_videos)
    wrong = np.bincount(video, minlength=n_videos) - right
    log_post = np.log(pu)[None, :] + right[:, None] * np.log(m1) + wrong[:, None] * np.log(m0)
    j = _draw_cells(rng, np.exp(log_post - log_post.max(axis=1, keepdims=True)))
    cell = np.zeros(video.size, dtype=int)
    j_q = j[video]
    for ok in (False, True):
        for k in range(_GRID_U):
            rows = np.flatnonzero((baseline == ok) & (j_q == k))
            if rows.size:
                like = p_ok[k] if ok else 1 - p_ok[k]
                cell[rows] = _draw_cells(rng, np.tile(pb * like, (rows.size, 1)))
    step_u, step_b = u[1] - u[0], b[1] - b[0]
    u_v = u[j] + step_u * (rng.random(n_videos) - 0.5)
    b_q = b[cell] + step_b * (rng.random(video.size) - 0.5)
    return b_q + u_v[video], cell >= _GRID_B


def generate_population(question_ids: Sequence[str], video_ids: Sequence[str], n_runs: int,
                        seed: int, *, baseline_correct: Sequence[bool] | None = None,
                        prefix: str = "ref") -> Population:
    """``n_runs`` runs of the benchmark (``video_ids[q]`` is question ``q``'s video), run ids
    ``f"{prefix}-{i + 1:02d}"``; conditioned on ``baseline_correct`` when given."""
    if len(question_ids) != len(video_ids):
        raise ValueError(f"{len(question_ids)} question ids but {len(video_ids)} video ids")
    if baseline_correct is not None and len(baseline_correct) != len(question_ids):
        raise ValueError("baseline_correct must give one outcome per question")
    streams = np.random.SeedSequence([seed, 0x9091]).spawn(4)
    rng_latent, rng_a, rng_acc, rng_out = (np.random.default_rng(s) for s in streams)
    names, video = np.unique(np.asarray(video_ids, dtype=str), return_inverse=True)
    if baseline_correct is None:
        d, defect = _free_latents(rng_latent, len(names), video)
    else:
        d, defect = _conditioned_latents(rng_latent, len(names), video,
                                         np.asarray(baseline_correct, dtype=bool))
    a = _spread(rng_a, n_runs, *DISCRIMINATION_RANGE)
    low, high = ACCURACY_RANGE
    target = _spread(rng_acc, n_runs, low + _ACCURACY_MARGIN, high - _ACCURACY_MARGIN)
    theta = _solve_ability(a, d, target)
    correct = rng_out.random((n_runs, d.size)) < _sigmoid(a[:, None] * (theta[:, None] - d))
    return Population(tuple(question_ids), tuple(f"{prefix}-{i + 1:02d}" for i in range(n_runs)),
                      correct, defect, theta, tuple(video_ids), a, d, seed)


def success_probability(pop: Population) -> np.ndarray:
    """Each run's probability of answering each question correctly, ``(n_runs, n_questions)``
    (the model's truth, which ``correct`` is one draw of)."""
    if pop.discrimination is None or pop.difficulty is None:
        raise ValueError("the population carries no latent difficulty")
    a, theta = pop.discrimination[:, None], pop.ability[:, None]
    return _sigmoid(a * (theta - pop.difficulty[None, :]))


def planted_defects(pop: Population, baseline_correct: Sequence[bool]) -> np.ndarray:
    """Per question: the baseline answered wrong on a defect item (a planted T2)."""
    return ~np.asarray(baseline_correct, dtype=bool) & pop.defect


def phi_against(pop: Population, outcome: Sequence[bool]) -> np.ndarray:
    """The phi of each run's correctness with ``outcome`` (e.g. the baseline's)."""
    x = np.vstack([np.asarray(outcome, dtype=float)[None, :], pop.correct.astype(float)])
    return np.corrcoef(x)[0, 1:]


def intra_video_correlation(correct: np.ndarray, video_ids: Sequence[str]) -> float:
    """ICC(1) of correctness within videos (one-way ANOVA, unequal sizes), mean over runs."""
    _, video = np.unique(np.asarray(video_ids, dtype=str), return_inverse=True)
    sizes = np.bincount(video).astype(float)
    n, g = float(video.size), float(sizes.size)
    n0 = (n - (sizes ** 2).sum() / n) / (g - 1)
    out = []
    for row in np.atleast_2d(correct).astype(float):
        means = np.bincount(video, weights=row) / sizes
        msb = (sizes * (means - row.mean()) ** 2).sum() / (g - 1)
        msw = ((row - means[video]) ** 2).sum() / (n - g)
        out.append((msb - msw) / (msb + (n0 - 1) * msw))
    return float(np.mean(out))


def calibration(pop: Population) -> dict[str, float]:
    """The figures the generator is calibrated to, measured on ``pop``: pairwise phi (mean,
    min, max), accuracy (min, max), intra-video correlation, defect share."""
    phi = np.corrcoef(pop.correct.astype(float))[np.triu_indices(len(pop.run_ids), 1)]
    accuracy = pop.correct.mean(axis=1)
    return {"phi_mean": float(phi.mean()), "phi_min": float(phi.min()),
            "phi_max": float(phi.max()), "accuracy_min": float(accuracy.min()),
            "accuracy_max": float(accuracy.max()),
            "intra_video_correlation": intra_video_correlation(pop.correct, pop.video_ids),
            "defect_share": float(pop.defect.mean())}


def _letter_rows(pop: Population, questions: dict[str, Question]) -> list[tuple[Any, ...]]:
    """Prediction rows: the answer letter when correct, another of the question's letters
    (seeded) when wrong."""
    rng = np.random.default_rng([pop.seed, 0x1E77E2])
    rows: list[tuple[Any, ...]] = []
    for r, run_id in enumerate(pop.run_ids):
        picks = rng.random(len(pop.question_ids))
        for q, qid in enumerate(pop.question_ids):
            question = questions[qid]
            letter = question.answer
            if not pop.correct[r, q]:
                others = [x for x in option_letters(question.options) if x != question.answer]
                letter = others[int(picks[q] * len(others))]
            rows.append((run_id, qid, letter, f"The answer is {letter}.", "answer", 0, _STAMP,
                         None))
    return rows


def write_population_runs(harness_db: Path, benchmark_questions: Sequence[Question],
                          pop: Population) -> None:
    """Insert every run of ``pop`` into the harness db as predictions (replacing earlier rows
    of the same run ids), in one transaction."""
    questions = {q.question_id: q for q in benchmark_questions}
    missing = [qid for qid in pop.question_ids if qid not in questions]
    if missing:
        raise ValueError(f"{len(missing)} question(s) not in the benchmark (e.g. {missing[0]})")
    rows = _letter_rows(pop, questions)
    harness_db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(harness_db)
    try:
        with conn:
            create_tables(conn)
            conn.executemany("DELETE FROM predictions WHERE run_id = ?",
                             [(r,) for r in pop.run_ids])
            insert_predictions(conn, rows)
    finally:
        conn.close()


def write_population_truth(path: Path, pop: Population,
                           baseline_correct: Sequence[bool] | None) -> None:
    """The generated truth as canonical JSON: per run its accuracy, ability and the
    questions it answered wrong on defect items; the defect items; the planted defects (the
    baseline's wrong answers on defect items; none without a baseline)."""
    ids = np.array(pop.question_ids, dtype=object)
    planted = ([] if baseline_correct is None
               else sorted(ids[planted_defects(pop, baseline_correct)].tolist()))
    runs = [{"run_id": run_id, "accuracy": round(float(pop.correct[r].mean()), 6),
             "ability": round(float(pop.ability[r]), 6),
             "defect_wrong": sorted(ids[~pop.correct[r] & pop.defect].tolist())}
            for r, run_id in enumerate(pop.run_ids)]
    atomic_write_bytes(path, canonical_bytes({
        "seed": pop.seed, "defect_items": sorted(ids[pop.defect].tolist()),
        "planted_defects": planted, "runs": runs}))
