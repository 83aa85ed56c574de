"""Distributions and deviations of a pool against the whole benchmark."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from split_assets.split.problem import Category, SplitProblem, SplitQuestion, category_of


def shares(questions: list[SplitQuestion], key: str) -> dict[str, float]:
    """Share of each value of ``key`` (task_type or difficulty) among ``questions``."""
    counts = Counter(getattr(q, key) for q in questions)
    n = len(questions)
    return {k: counts[k] / n for k in sorted(counts)} if n else {}


def accuracy(questions: Iterable[SplitQuestion]) -> float:
    qs = list(questions)
    return sum(q.correct for q in qs) / len(qs) if qs else 0.0


def category_shares(problem: SplitProblem,
                    test: list[SplitQuestion]) -> list[tuple[Category, float, float]]:
    """(category, global share, test share) for every constrained category, unrounded."""
    n_all, n_test = len(problem.questions), len(test)
    out = []
    for cat in problem.categories:
        g = sum(category_of(q, cat) for q in problem.questions) / n_all
        t = sum(category_of(q, cat) for q in test) / n_test if n_test else 0.0
        out.append((cat, g, t))
    return out


def violation_line(label: str, test: float, global_: float, epsilon: float) -> str:
    return (f"{label} test {test:.4f} vs global {global_:.4f} (|dev| {abs(test - global_):.4f} "
            f"> {epsilon})")


def over_epsilon(problem: SplitProblem, shares: Iterable[tuple[float, float]],
                 accuracy_shares: tuple[float, float] | None) -> list[str]:
    """The one epsilon rule: a line per constrained category (``shares``: its (global, test)
    share, in ``problem.categories`` order) farther than epsilon from global, and one for
    baseline accuracy when ``epsilon_accuracy`` bounds it."""
    out = [violation_line(cat.label, t, g, problem.selection.epsilon)
           for cat, (g, t) in zip(problem.categories, shares, strict=True)
           if abs(t - g) > problem.selection.epsilon + 1e-12]
    if problem.selection.epsilon_accuracy is not None and accuracy_shares is not None:
        g, t = accuracy_shares
        if abs(t - g) > problem.selection.epsilon_accuracy + 1e-12:
            out.append(violation_line("baseline accuracy", t, g,
                                      problem.selection.epsilon_accuracy))
    return out


def epsilon_violations(problem: SplitProblem, test: list[SplitQuestion]) -> list[str]:
    """``over_epsilon`` of a test pool given as questions."""
    return over_epsilon(problem, [(g, t) for _, g, t in category_shares(problem, test)],
                        (accuracy(problem.questions), accuracy(test)))


def largest_deviation(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row of ``deviation_rows`` (as the manifest holds them) whose test share is farthest
    from the global one, among the constrained categories (all rows when none is)."""
    constrained = [r for r in rows if r["constrained"]] or rows
    return max(constrained, key=lambda r: abs(r["deviation"]))


def deviation_rows(problem: SplitProblem, test: list[SplitQuestion]) -> list[dict[str, Any]]:
    """One row per constrained category: global share, test share, deviation (fractions); a
    row per value of each ``balance`` field (balanced, not constrained); and a row for baseline
    accuracy (balanced; constrained only by ``epsilon_accuracy``)."""
    rows = []
    for cat, g, t in category_shares(problem, test):
        rows.append({"dimension": cat.dimension, "category": cat.value, "global": round(g, 6),
                     "test": round(t, 6), "deviation": round(t - g, 6), "constrained": True})
    n_all, n_test = len(problem.questions), len(test)
    for cat in problem.balanced:
        g = sum(problem.value_of(q, cat.dimension) == cat.value for q in problem.questions) / n_all
        t = (sum(problem.value_of(q, cat.dimension) == cat.value for q in test) / n_test
             if n_test else 0.0)
        rows.append({"dimension": cat.dimension, "category": cat.value, "global": round(g, 6),
                     "test": round(t, 6), "deviation": round(t - g, 6), "constrained": False})
    for i, run in enumerate(problem.selection.balance_runs):  # each balanced run's accuracy
        g_run = _run_accuracy(problem.questions, i)
        t_run = _run_accuracy(test, i)
        rows.append({"dimension": "run_accuracy", "category": run, "global": round(g_run, 6),
                     "test": round(t_run, 6), "deviation": round(t_run - g_run, 6),
                     "constrained": False})
    g_acc, t_acc = accuracy(problem.questions), accuracy(test)
    rows.append({"dimension": "accuracy", "category": "baseline_correct", "global": round(g_acc, 6),
                 "test": round(t_acc, 6), "deviation": round(t_acc - g_acc, 6),
                 "constrained": problem.selection.epsilon_accuracy is not None})
    return rows


def _run_accuracy(questions: Iterable[SplitQuestion], i: int) -> float:
    """Balanced run ``i``'s accuracy over the questions it answered."""
    answered = [q.runs[i] for q in questions if q.runs[i] is not None]
    return sum(answered) / len(answered) if answered else 0.0


def max_deviation(rows: list[dict[str, Any]], dimension: str | None = None) -> float:
    vals = [abs(r["deviation"]) for r in rows
            if r["constrained"] and (dimension is None or r["dimension"] == dimension)]
    return max(vals) if vals else 0.0


def tier_counts(questions: Iterable[SplitQuestion]) -> dict[str, int]:
    """Counts of correct answers and of each tier (degraded counted apart)."""
    counts: Counter[str] = Counter()
    for q in questions:
        if q.correct:
            counts["correct"] += 1
        elif q.degraded:
            counts["degraded"] += 1
        else:
            counts[q.tier or "undiagnosed"] += 1
    return {k: counts[k] for k in sorted(counts)}


def t2_by_type(questions: Iterable[SplitQuestion]) -> dict[str, int]:
    counts = Counter(q.task_type for q in questions if q.is_floor_t2)
    return {k: counts[k] for k in sorted(counts)}


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A small markdown table for Dagster metadata."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
