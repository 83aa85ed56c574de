"""The full signal sweep (issues 21, 38): ``split-assets run`` on fresh copies of the 900-video
demo workspace (a fresh signal store: the sweep goes through the diagnosis pass), each sent one
Ctrl-C (SIGINT) or one SIGTERM at one of 30 seeded moments spread over a plain run's length,
with CPU-burning processes beside it (``--burners``, default 2). Every outcome must be exit 130
(SIGTERM: 143) with one ``error: interrupted`` (``error: terminated``) line last on stderr, no
traceback, and no run alive 10 s after its signal -- or a normal finish with every result line;
then each interrupted workspace is run again to the end and its pools.json must be
byte-identical to the plain run's (tests/cli/test_sigint_sweep.py runs a few moments on a small
workspace in ``make test``). ``--group`` (issue 47) signals as a terminal does: each run starts
in a session of its own and the signal goes to its whole process group (``os.killpg``), so every
process the run started there hears it too; nothing may print ``Exception in callback`` either.
Usage: ``.venv/bin/python -m bench.sigint_sweep [--timings 30] [--parallel 2]
[--signal int|term|both] [--burners 2] [--group]``; its last line is one JSON object (a
figure per signal), and it exits 1 on any failure."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

SIGNALS = {"int": (signal.SIGINT, 130), "term": (signal.SIGTERM, 143)}


def _pools(stdout: str) -> bytes | None:
    for line in stdout.splitlines():
        if line.startswith("pools="):
            return Path(line.split("=", 1)[1]).read_bytes()
    return None


def _one_signal(name: str, folder: Path, home: Path, args: argparse.Namespace
                ) -> dict[str, object]:
    from testkit.sigint import interrupt_at, spread, sweep

    sig, ended = SIGNALS[name]
    plain = sweep(folder / "template", home, folder / f"plain-{name}", [0] * args.parallel,
                  args.parallel)
    if any(o.code != 0 for o in plain):
        print(next(o for o in plain if o.code != 0).stderr, file=sys.stderr)
        return {"signal": name, "failed": "the plain run failed"}
    solo = _pools(plain[0].stdout)
    wall = max(o.wall_s for o in plain)
    timings = spread(wall, args.timings, args.seed)
    outcomes = sweep(folder / "template", home, folder / f"sweep-{name}", timings,
                     args.parallel, sig, args.group)
    differ = 0
    for i, o in enumerate(outcomes):
        again = (interrupt_at(folder / f"sweep-{name}" / f"ws{i}" / "video_split.yaml", home, 0)
                 if o.code == ended else o)
        same = _pools(again.stdout) == solo
        differ += not same
        print(f"SIG{name.upper():4s} at {o.at_s:6.2f}s  exit {o.code:4d}  "
              f"{o.problem() or 'ok'}  re-run pools {'identical' if same else 'DIFFER'}")
        if o.problem():
            print("    " + "\n    ".join(o.stderr.strip().splitlines()[-6:]))
    problems = [o for o in outcomes if o.problem() is not None]
    codes = Counter(o.code for o in outcomes)
    slowest = max((o.after_signal_s or 0.0) for o in outcomes)
    print(f"{len(outcomes)} timings over a {wall:.1f} s run: {codes[ended]} interrupted, "
          f"{codes[0]} finished, {len(problems)} wrong, {differ} re-runs differ, slowest exit "
          f"{slowest:.1f} s after the signal")
    return {"signal": name, "to": "process group" if args.group else "process",
            "timings": len(outcomes), "run_s": round(wall, 2), "interrupted": codes[ended],
            "finished": codes[0], "wrong": len(problems), "rerun_pools_differ": differ,
            "slowest_exit_after_signal_s": round(slowest, 2),
            "failed": bool(problems or differ)}


def main() -> int:
    from split_assets.demo import build_workspace
    from testkit.runs import new_instance
    from testkit.sigint import burning

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timings", type=int, default=30)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--signal", choices=("int", "term", "both"), default="both")
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--group", action="store_true",
                        help="signal the run's whole process group, as a terminal's Ctrl-C does")
    args = parser.parse_args()
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # started in the background of a shell: SIGINT ignored, and every run started would
        # inherit that (exec keeps an ignored signal) and rightly ignore the sweep's Ctrl-C
        signal.signal(signal.SIGINT, signal.default_int_handler)
    names = ["int", "term"] if args.signal == "both" else [args.signal]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build_workspace(folder / "template")
        home = new_instance(folder / "home")
        with burning(args.burners):
            results = [_one_signal(name, folder, home, args) for name in names]
    print(json.dumps({r["signal"]: r for r in results}))
    return 1 if any(r["failed"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
