"""From the pipeline's inputs to the split's: predictions joined with their signal rows, the
``balance`` values, and the digests a manifest records."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from split_assets.config_keys import config_key
from split_assets.errors import ConfigError, InputError
from split_assets.lib.canonical import digest_of
from split_assets.settings import VideoSplitConfig
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.harness_db import CanonicalPrediction, predictions_digest
from split_assets.split.problem import SplitProblem, SplitQuestion
from split_assets.store.signals import SignalRow


def split_questions(preds: list[CanonicalPrediction], rows: list[SignalRow],
                    balance: dict[str, tuple[str, ...]], *, where: str,
                    fingerprint: str, runs: dict[str, tuple[bool | None, ...]] | None = None
                    ) -> list[SplitQuestion]:
    """Join predictions with their signal rows; every wrong answer must have one. ``runs``:
    each question's correctness in the balanced runs (``balance_runs``, in that order)."""
    by_qid = {r.question_id: r for r in rows}
    missing = [p.question_id for p in preds if not p.correct and p.question_id not in by_qid]
    if missing:
        raise InputError(f"{len(missing)} wrong answer(s) have no signal row for "
                         f"{fingerprint} (e.g. {', '.join(missing[:5])})", where,
                         "materialize infra_t0_signals and diagnosis_signals first")
    out = []
    for p in preds:
        row = None if p.correct else by_qid[p.question_id]
        out.append(SplitQuestion(p.question_id, p.video_id, p.task_type, p.difficulty, p.correct,
                                 row.tier if row else None, row.degraded if row else False,
                                 balance.get(p.question_id, ()),
                                 (runs or {}).get(p.question_id, ())))
    return out


def balance_values(benchmark: Benchmark, fields: list[str]) -> dict[str, tuple[str, ...]]:
    """Each question's values of the ``balance`` fields; a field missing on any question is a
    config error naming how many questions lack it."""
    out: dict[str, tuple[str, ...]] = {}
    if not fields:
        return out
    for name in fields:
        lacking = [q.question_id for q in benchmark.questions if q.extra.get(name) is None]
        if lacking:
            known = sorted({k for q in benchmark.questions for k in q.extra})
            raise ConfigError(f"balance field {name!r} is missing on {len(lacking)} of "
                              f"{len(benchmark.questions)} questions (e.g. {lacking[0]})",
                              config_key("balance"),
                              "list question fields every question has: "
                              + (", ".join(known) or "(the questions have no extra fields)"))
    for q in benchmark.questions:
        out[q.question_id] = tuple(str(q.extra[name]) for name in fields)
    return out


def split_problem(preds: list[CanonicalPrediction], rows: list[SignalRow],
                  balance: dict[str, tuple[str, ...]], config: VideoSplitConfig, where: str,
                  fingerprint: str, runs: dict[str, tuple[bool | None, ...]] | None = None
                  ) -> SplitProblem:
    """The split problem of the predictions joined with the signal rows; ``balance``: each
    question's values of the balance fields (``balance_values``); ``runs``: its correctness
    in each of the ``balance_runs`` (``run_correctness``)."""
    questions = split_questions(preds, rows, balance, where=where, fingerprint=fingerprint,
                                runs=runs)
    return SplitProblem.from_config(questions, config)


def signals_digest(rows: list[SignalRow]) -> str:
    """Digest of what the split consumed of the signals (tier, degraded), order-free."""
    return digest_of(sorted([r.question_id, r.tier, r.degraded] for r in rows))


def run_correctness(correct: dict[str, dict[str, bool | None]]
                    ) -> dict[str, tuple[bool | None, ...]]:
    """Per question, its correctness in each run of ``correct`` (run -> question -> True /
    False / None not answered), in the runs' order."""
    runs = list(correct.values())
    questions = {q for run in runs for q in run}
    return {q: tuple(run.get(q) for run in runs) for q in questions}


def input_digests(benchmark: Benchmark, preds: list[CanonicalPrediction],
                  rows: list[SignalRow],
                  context: Callable[[list[tuple[str, str]]], dict[str, str]] | None,
                  balanced: dict[str, list[CanonicalPrediction]] | None = None
                  ) -> dict[str, str]:
    """Digests of the inputs, none depending on file or row order; ``context`` adds the
    judge's context digests (skills, trees, traces) of the diagnosed (question, video) pairs;
    ``balanced``: each balanced run's predictions (``balance_runs:<run>``), so a changed run
    never meets a frozen split of the same id."""
    digests = {"benchmark": benchmark.digest(), "baseline_predictions": predictions_digest(preds),
               "signals": signals_digest(rows)}
    for run, run_preds in sorted((balanced or {}).items()):
        digests[f"balance_runs:{run}"] = predictions_digest(run_preds)
    if context is not None:
        digests.update(context(sorted((r.question_id, r.video_id) for r in rows
                                      if not r.infra)))
    return digests


def tier_distribution(rows: list[SignalRow]) -> dict[str, int]:
    counts = Counter("degraded" if r.degraded else r.tier for r in rows)
    return {k: counts[k] for k in sorted(counts)}
