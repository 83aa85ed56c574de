"""The full signal sweep (issues 21, 38): ``split-assets run`` on fresh copies of the 900-video
demo workspace, each sent one Ctrl-C (or, ``--signal term``, one SIGTERM) at one of 30 seeded
moments spread over a plain run's length. Every outcome must be exit 130 (SIGTERM: 143) with
one ``error: interrupted`` (``error: terminated``) line last on stderr and no traceback, or a
normal finish with every result line (tests/cli/test_sigint_sweep.py runs a few moments on a
small workspace in ``make test``). Usage: ``.venv/bin/python -m bench.sigint_sweep
[--timings 30] [--parallel 2] [--signal int|term]``; ends with one JSON line."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    from split_assets.demo import build_workspace
    from split_assets.orchestration.instance import DAGSTER_YAML
    from testkit.sigint import spread, sweep

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timings", type=int, default=30)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--signal", choices=("int", "term"), default="int")
    args = parser.parse_args()
    sig = signal.SIGTERM if args.signal == "term" else signal.SIGINT
    ended = 143 if args.signal == "term" else 130
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build_workspace(folder / "template")
        home = folder / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text(DAGSTER_YAML, encoding="utf-8")
        subprocess.run([sys.executable, "-c", "from dagster import DagsterInstance; "
                        "DagsterInstance.get().get_runs()"], check=True,
                       env={"DAGSTER_HOME": str(home), "PATH": ""})
        plain = sweep(folder / "template", home, folder / "plain", [0] * args.parallel,
                      args.parallel)
        bad = [o for o in plain if o.code != 0]
        if bad:
            print(bad[0].stderr, file=sys.stderr)
            return 1
        wall = max(o.wall_s for o in plain)
        timings = spread(wall, args.timings, args.seed)
        outcomes = sweep(folder / "template", home, folder / "sweep", timings, args.parallel,
                         sig)
    for o in outcomes:
        print(f"at {o.at_s:6.2f}s  exit {o.code:4d}  {o.problem() or 'ok'}")
        if o.problem():
            print("    " + "\n    ".join(o.stderr.strip().splitlines()[-6:]))
    problems = [o for o in outcomes if o.problem() is not None]
    codes = Counter(o.code for o in outcomes)
    print(f"{len(outcomes)} timings over a {wall:.1f} s run: {codes[ended]} interrupted, "
          f"{codes[0]} finished, {len(problems)} wrong")
    print(json.dumps({"timings": len(outcomes), "run_s": round(wall, 2),
                      "signal": args.signal, "interrupted": codes[ended], "finished": codes[0],
                      "wrong": len(problems)}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
