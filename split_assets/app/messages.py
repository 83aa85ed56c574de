"""The one boundary where the split core's data-carrying errors (``split/impossible.py``) become the
one-line message a user reads: what, the config key, how to fix it. The CLI and every Dagster
step call ``as_user_error`` (``cli/__init__.py``, ``orchestration/failures.py``); the battery of
``tests/cli/test_bad_inputs.py`` pins the words."""

from __future__ import annotations

from split_assets.errors import ConfigError, InfeasibleSplitError, UserError
from split_assets.split import impossible as e

FLOOR_K, EPSILON = "video_split.floor_k", "video_split.epsilon"
VAL_WRONG_MIN = "video_split.val_wrong_min"


def validation_holds(held: int, needed: int, most: int, n_validation: int) -> str:
    """The validation pool's baseline-wrong questions against ``val_wrong_min`` (the
    ``mcnemar_power`` check's count), and when short, the most its videos could hold."""
    text = f"validation holds {held} baseline-wrong questions, need {needed}"
    return text if held >= needed else (f"{text}; at most {most} with {n_validation} "
                                        "validation videos")


def as_user_error(exc: e.SplitImpossible) -> UserError:
    """The user's one-line error of a split the counts, floors or epsilon rule out."""
    match exc:
        case e.NoTestPool(n, videos):
            return ConfigError(f"n_trainval is {n} but the benchmark has {videos} videos, "
                               "which leaves no test pool", "video_split.n_trainval",
                               f"set it below {videos} (test is every other video)")
        case e.FloorsAboveBenchmark(gaps):
            return InfeasibleSplitError(
                "floor_k cannot be met: " + "; ".join(
                    f"{g.task_type} needs {g.floor} non-degraded T2, only {g.reachable} in the "
                    "benchmark" for g in gaps),
                FLOOR_K, "lower these floors or diagnose more wrong answers")
        case e.FloorsAboveOpen(gaps):
            return InfeasibleSplitError(
                "floor_k cannot be met even if every open diagnosis were T2: " + "; ".join(
                    f"{g.task_type}: floor {g.floor}, at most {g.reachable} ({g.known} T2 "
                    f"known, {g.open} not yet diagnosed)" for g in gaps),
                FLOOR_K, "lower these floors (nothing was sent to the judge)")
        case e.FloorsNeedVideos(n, gaps):
            return InfeasibleSplitError(
                f"floor_k cannot be met within n_trainval={n}: " + "; ".join(
                    f"{g.task_type} needs at least {g.reachable} videos to reach {g.floor} T2"
                    for g in gaps),
                FLOOR_K, "raise n_trainval or lower these floors")
        case e.FloorsNotTogether(n, gaps):
            best = "; ".join(f"{g.task_type} needs {g.floor}, at most {g.reachable} alone"
                             for g in gaps)
            return InfeasibleSplitError(
                f"floor_k cannot all be met with n_trainval={n} videos ({best})", FLOOR_K,
                "raise n_trainval or lower these floors")
        case e.EpsilonUnderFloors(reach, alone_ok):
            return InfeasibleSplitError(
                "epsilon cannot be met with these floors: " + _reachability(reach, alone_ok),
                EPSILON, "raise epsilon (or epsilon_accuracy) or report_floor, lower floor_k, "
                         "or change n_trainval")
        case e.EpsilonMissed(over):
            return InfeasibleSplitError("epsilon cannot be met; best reached: " + "; ".join(over),
                                        EPSILON, "raise epsilon or report_floor")
        case e.ValidationWrongShort(needed, n_val, most, None):
            return ConfigError(f"val_wrong_min {needed} cannot be met: {n_val} validation "
                               f"videos hold at most {most} baseline-wrong questions",
                               VAL_WRONG_MIN,
                               "lower val_wrong_min, or raise val_ratio or n_trainval")
        case e.ValidationWrongShort(needed, n_val, most, held):
            return ConfigError("val_wrong_min cannot be met: "
                               + validation_holds(held, needed, most, n_val), VAL_WRONG_MIN,
                               "raise val_ratio or n_trainval, or lower val_wrong_min; nothing "
                               "was frozen")
    raise TypeError(f"no wording for {exc!r}")


def _reachability(reach: tuple[e.BoundReach, ...], alone_ok: int) -> str:
    if not reach:
        return f"each of the {alone_ok} bounds is reachable alone, not all of them together"
    return "; ".join(
        f"{b.label} needs |dev| <= {b.epsilon}, reachable alone ({b.best:.4f}) but not "
        "together with the other bounds" if b.alone else
        f"{b.label} needs |dev| <= {b.epsilon}, best reachable {b.best:.4f}" for b in reach)
