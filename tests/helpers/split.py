"""Split problems for the split tests, built by keyword like the config builds them."""

from __future__ import annotations

from collections.abc import Iterable

from split_assets.split.problem import (
    SelectionSettings,
    SplitProblem,
    SplitQuestion,
    ValidationSettings,
)


def make_problem(questions: Iterable[SplitQuestion], *, n_trainval: int, epsilon: float = 1.0,
                 report_floor: int = 0, val_ratio: float = 0.3, seed: int = 1,
                 floor_k: dict[str, int] | None = None, balance: tuple[str, ...] = (),
                 epsilon_accuracy: float | None = None, selector: str = "auto",
                 val_wrong_min: int = 0) -> SplitProblem:
    return SplitProblem(
        tuple(questions),
        selection=SelectionSettings(n_trainval=n_trainval, epsilon=epsilon,
                                    report_floor=report_floor, floor_k=dict(floor_k or {}),
                                    balance=balance, epsilon_accuracy=epsilon_accuracy,
                                    selector=selector, seed=seed),
        validation=ValidationSettings(val_ratio=val_ratio, val_wrong_min=val_wrong_min))
