"""Ctrl-C at any moment of a run: one line and exit 130, or a normal finish -- never a
traceback, a swallowed interrupt, exit 1, or a process killed by the signal (the full 30-timing
sweep on the demo: bench/sigint_sweep.py)."""

from __future__ import annotations

from pathlib import Path

from testkit.sigint import burning, spread, sweep


def test_a_seeded_sigint_sweep_over_a_run_is_one_line_or_a_normal_finish(
        _small_template: Path, _dagster_home_template: Path, tmp_path: Path) -> None:
    # two runs side by side, not interrupted, give the length of a run under the sweep's load
    with burning(1):  # under load: a CPU-burning process beside the runs
        plain = sweep(_small_template, _dagster_home_template, tmp_path / "plain", [0, 0])
        assert all(o.code == 0 and o.problem() is None for o in plain), plain[0].stderr
        timings = spread(max(o.wall_s for o in plain), 12, seed=21)
        outcomes = sweep(_small_template, _dagster_home_template, tmp_path / "sweep", timings)
    problems = [f"at {o.at_s}s: {o.problem()}\n{o.stderr[-2000:]}" for o in outcomes
                if o.problem() is not None]
    assert not problems, "\n\n".join(problems)
    # the sweep really interrupts runs (a quarter at least: how many finish first depends on
    # the machine's load, which moves between the plain runs and the sweep)
    seen = [(o.at_s, o.code, round(o.wall_s, 2)) for o in outcomes]
    assert sum(o.code == 130 for o in outcomes) >= 3, seen


def test_a_sigterm_is_handled_as_a_ctrl_c(_small_template: Path, _dagster_home_template: Path,
                                          tmp_path: Path) -> None:
    """SIGTERM (kill, a CI timeout, Kubernetes) at a few moments: exit 143 with the
    ``error: terminated (SIGTERM)`` line, or a normal finish; never killed by the signal."""
    import signal

    with burning(1):
        plain = sweep(_small_template, _dagster_home_template, tmp_path / "plain", [0])
        timings = spread(plain[0].wall_s, 6, seed=5)
        outcomes = sweep(_small_template, _dagster_home_template, tmp_path / "term", timings,
                         sig=signal.SIGTERM)
    problems = [f"at {o.at_s}s: {o.problem()}\n{o.stderr[-2000:]}" for o in outcomes
                if o.problem() is not None]
    assert not problems, "\n\n".join(problems)
    assert sum(o.code == 143 for o in outcomes) >= 2, [(o.at_s, o.code) for o in outcomes]
