"""Outcomes and mechanisms: which answers are wrong, and why (the planted labels).

:func:`assign_outcomes` picks the wrong answers so that the per-task-type and per-duration
accuracies and the histogram of videos by wrong count match the published run;
:func:`assign_mechanisms` then plants a tier and mechanism on every wrong answer (INFRA / T0,
pipeline defect / T2, model lapse / T1) and the predicted letter of every answer.
"""

from __future__ import annotations

import math

import numpy as np

from split_assets.demo.figures import (
    DURATION_ACCURACY,
    DURATIONS,
    INFRA_REFERENCE_COUNT,
    LETTERS,
    REFERENCE_N_VIDEOS,
    RETRY_SHARE,
    T2_MISSED_EVIDENCE_SHARE,
    T2_SHARE,
    T2_STEP_LIMIT_SHARE,
    TASK_TYPE_ACCURACY,
    TASK_TYPES,
    VIDEOS_BY_WRONG_COUNT,
)
from split_assets.demo.model import Question, Video
from split_assets.demo.sampling import apportion, pick, round_half_up
from split_assets.demo.skills import REQUIRED_TOOL

# --------------------------------------------------------------------------------------------
# Outcomes: which answers are wrong
# --------------------------------------------------------------------------------------------


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


class _WrongAnswerModel:
    """Score ``b_duration + sigma * z_video + logistic noise`` of every question, on fixed
    draws; per task type the ``k_wrong`` questions with the highest score are the wrong ones."""

    def __init__(
        self, rng: np.random.Generator, videos: list[Video], questions: list[Question]
    ) -> None:
        self.n_q = len(questions)
        self.n_v = len(videos)
        type_idx = np.array([TASK_TYPES.index(q.task_type) for q in questions])
        self.dur_idx = np.array([DURATIONS.index(q.video.duration) for q in questions])
        self.vid_idx = np.array([q.video.index for q in questions])
        self.z = rng.standard_normal(self.n_v)
        self.noise = rng.logistic(size=self.n_q)
        self.members = [np.flatnonzero(type_idx == t) for t in range(len(TASK_TYPES))]
        self.k_wrong = [
            min(len(m), round_half_up(len(m) * (1 - TASK_TYPE_ACCURACY[t])))
            for m, t in zip(self.members, TASK_TYPES, strict=True)
        ]
        self.target_rate = [1 - DURATION_ACCURACY[d] for d in DURATIONS]
        self.dur_sizes = np.bincount(self.dur_idx, minlength=len(DURATIONS))

    def select(self, b: np.ndarray, sigma: float) -> np.ndarray:
        """The wrong answers (a boolean mask) for duration offsets ``b`` and spread ``sigma``."""
        score = b[self.dur_idx] + sigma * self.z[self.vid_idx] + self.noise
        wrong = np.zeros(self.n_q, dtype=bool)
        for m, k in zip(self.members, self.k_wrong, strict=True):
            if k:
                order = np.argsort(-score[m], kind="stable")
                wrong[m[order[:k]]] = True
        return wrong

    def fit_b(self, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """Duration offsets fitted (six fixed iterations) to the per-duration error rates."""
        b = np.array([_logit(r) for r in self.target_rate])
        b -= b.mean()
        wrong = self.select(b, sigma)
        for _ in range(6):
            for d in range(len(DURATIONS)):
                if self.dur_sizes[d] == 0:
                    continue
                observed = float(wrong[self.dur_idx == d].mean())
                b[d] += _logit(self.target_rate[d]) - _logit(observed)
            b -= b.mean()
            wrong = self.select(b, sigma)
        return b, wrong

    def loss(self, wrong: np.ndarray, target_hist: np.ndarray) -> float:
        """Squared error of the videos-by-wrong-count histogram plus the per-duration rates."""
        per_video = np.bincount(self.vid_idx[wrong], minlength=self.n_v)
        hist = np.bincount(per_video, minlength=4)[:4].astype(float)
        dur_err = sum(
            (float(wrong[self.dur_idx == d].mean()) - self.target_rate[d]) ** 2 * self.n_v
            for d in range(len(DURATIONS))
            if self.dur_sizes[d]
        )
        return float(((hist - target_hist) ** 2).sum()) + dur_err


def assign_outcomes(
    rng: np.random.Generator, videos: list[Video], questions: list[Question]
) -> None:
    """Pick the wrong answers.

    Per task type exactly ``round(n_type * (1 - accuracy_type))`` answers are wrong; inside a
    type, the wrong ones are the questions with the highest score
    ``b_duration + sigma * z_video + logistic noise``. ``b`` is fitted so that the per-duration
    accuracies match, ``sigma`` (the per-video random effect) so that the histogram of videos by
    wrong count matches; both by a fixed number of deterministic iterations on fixed draws.
    """
    model = _WrongAnswerModel(rng, videos, questions)
    target_hist = np.array(apportion(list(VIDEOS_BY_WRONG_COUNT.values()), len(videos)),
                           dtype=float)
    best: tuple[float, float, np.ndarray] | None = None
    for sigma in np.linspace(0.0, 2.4, 25):
        _, wrong = model.fit_b(float(sigma))
        loss = model.loss(wrong, target_hist)
        if best is None or loss < best[0] - 1e-12:
            best = (loss, float(sigma), wrong)
    assert best is not None
    wrong = best[2]
    for q, w in zip(questions, wrong, strict=True):
        q.correct = not bool(w)


# --------------------------------------------------------------------------------------------
# Mechanisms (planted labels)
# --------------------------------------------------------------------------------------------


def assign_mechanisms(rng: np.random.Generator, questions: list[Question], n_videos: int) -> None:
    """Plant the tier, mechanism, stop reason, retry flag and predicted letter of every answer."""
    wrong = [q for q in questions if not q.correct]
    n_infra = round_half_up(INFRA_REFERENCE_COUNT * n_videos / REFERENCE_N_VIDEOS)
    if n_videos >= 24:
        n_infra = max(1, n_infra)
    n_infra = min(n_infra, len(wrong))
    order = [wrong[int(i)] for i in rng.permutation(len(wrong))]
    infra, judged = order[:n_infra], order[n_infra:]

    n_infra_retry = (n_infra + 1) // 2
    for i, q in enumerate(infra):
        q.tier = "T0"
        q.mechanism = "infra_error" if float(rng.random()) < 0.6 else "infra_parse_error"
        q.stop_reason = "error" if q.mechanism == "infra_error" else "parse_error"
        q.retried = i < n_infra_retry
        q.prediction = ""

    n_t2 = round_half_up(T2_SHARE * len(judged))
    for i, q in enumerate(judged):
        if i >= n_t2:
            q.tier, q.mechanism = "T1", "lapse"
        else:
            q.tier = "T2"
            u = float(rng.random())
            if u < T2_STEP_LIMIT_SHARE:
                q.mechanism = "step_limit"
            elif u < T2_STEP_LIMIT_SHARE + T2_MISSED_EVIDENCE_SHARE:
                q.mechanism = "missed_evidence"
            elif q.task_type in REQUIRED_TOOL:
                q.mechanism = "skill_nonadherence"
            else:
                q.mechanism = "missed_evidence"
        q.stop_reason = "max_steps" if q.mechanism == "step_limit" else "answer"
        q.prediction = pick(rng, [x for x in LETTERS if x != q.answer])

    normal = [q for q in questions if q.correct]
    for q in normal:
        q.prediction = q.answer
    normal_or_judged = [q for q in questions if not q.mechanism.startswith("infra")]
    n_retry = round_half_up(RETRY_SHARE * len(normal_or_judged))
    for i in rng.permutation(len(normal_or_judged))[:n_retry]:
        normal_or_judged[int(i)].retried = True

