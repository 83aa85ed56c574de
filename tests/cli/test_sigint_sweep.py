"""Ctrl-C (SIGINT) or SIGTERM at any moment of a run: one line and exit 130 (SIGTERM: 143), or a
normal finish -- never a traceback, a swallowed signal, exit 1, a process killed by the signal,
or one alive 10 s after it. Two runs at a time, so each runs on a loaded machine (the full
sweep, 30 timings of each signal on the demo with two CPU-burning processes beside it:
bench/sigint_sweep.py)."""

from __future__ import annotations

import signal
from pathlib import Path

from testkit.sigint import spread, sweep


def test_a_seeded_signal_sweep_over_a_run_is_one_line_or_a_normal_finish(
        _small_template: Path, _dagster_home_template: Path, tmp_path: Path) -> None:
    # two runs side by side, not interrupted, give the length of a run under the sweep's load
    plain = sweep(_small_template, _dagster_home_template, tmp_path / "plain", [0, 0])
    assert all(o.code == 0 and o.problem() is None for o in plain), plain[0].stderr
    timings = spread(max(o.wall_s for o in plain), 12, seed=21)
    # every third moment gets a SIGTERM, the others a Ctrl-C: both spread over the whole run
    outcomes = [*sweep(_small_template, _dagster_home_template, tmp_path / "int",
                       [t for i, t in enumerate(timings) if i % 3]),
                *sweep(_small_template, _dagster_home_template, tmp_path / "term",
                       timings[::3], sig=signal.SIGTERM)]
    problems = [f"at {o.at_s}s (signal {o.sig}): {o.problem()}\n{o.stderr[-2000:]}"
                for o in outcomes if o.problem() is not None]
    assert not problems, "\n\n".join(problems)
    # the sweep really interrupts runs (a quarter at least: how many finish first depends on
    # the machine's load, which moves between the plain runs and the sweep)
    seen = [(o.at_s, o.sig, o.code, round(o.wall_s, 2)) for o in outcomes]
    assert sum(o.code == 130 for o in outcomes) >= 2, seen
    assert sum(o.code == 143 for o in outcomes) >= 1, seen
