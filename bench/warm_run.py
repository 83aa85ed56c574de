"""Wall time of a warm ``split-assets run`` of the demo (everything already diagnosed), and how
many times one run parses the benchmark and the baseline's canonical predictions.

Run: .venv/bin/python bench/warm_run.py [--checkout PATH] [--against PATH] [--runs 5]

``--checkout`` times another checkout of this project (e.g. the commit before a change, made
with ``git worktree add /tmp/before <rev>``) with this interpreter and its packages (its folder
is the working directory and first on PYTHONPATH). ``--against`` times a second checkout in the
same invocation, its runs interleaved with the first's (a noisy machine slows both alike), and
adds the ratio of the medians (the order alternates round by round: ab, ba, ab, ...). Each
timed run is a fresh process (start-up counts: it is what a user waits for), after one untimed
warm-up run per checkout; the median of ``--runs`` is reported, of the wall time and of the
CPU time (user + system) the run's process used, which a noisy machine disturbs less. Python
writes its bytecode as it does for a user (a ``PYTHONDONTWRITEBYTECODE`` of this shell is
dropped: recompiling every module on every run is not what a user waits for). The last line
is one JSON object: {"checkout", "median_s", "runs_s", "median_cpu_s", "cpu_s",
"benchmark_parses", "prediction_parses"} (null where the checkout has neither of the places
the parsers have lived) (with ``--against``: also "against": the same fields
for that checkout, "speedup": its median over this one's, and "cpu_speedup").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIN = "2026-01-01T00:00:00Z"

# Runs inside the checkout: one in-process run whose calls of the two parsers are counted with
# a profile hook (it sees the functions however they were imported). The parsers are looked
# up where this checkout keeps them (split_assets.sources since issue 37, split_assets.data
# before); a checkout that has neither prints COUNTS - - (not counted), never fails the bench.
_COUNT = """
import importlib, sys
from split_assets.cli import main
def parser(names, function):
    for name in names:
        try:
            return getattr(importlib.import_module(name), function).__code__
        except (ImportError, AttributeError):
            pass
    return None
found = {"benchmark": parser(["split_assets.sources.benchmark", "split_assets.data.benchmark"],
                             "read_benchmark_files"),
         "predictions": parser(["split_assets.sources.harness_db", "split_assets.data.harness"],
                               "canonical_predictions")}
targets = {code: name for name, code in found.items() if code is not None}
counts = {name: (0 if code is not None else "-") for name, code in found.items()}
def hook(frame, event, arg):
    if event == "call" and frame.f_code in targets:
        counts[targets[frame.f_code]] += 1
sys.setprofile(hook)
code = main(["run", "--config", sys.argv[1], "--generated-at", sys.argv[2]])
sys.setprofile(None)
print("COUNTS", counts["benchmark"], counts["predictions"], code)
"""


def _env(checkout: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SPLIT_ASSETS_"))
           and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout) + os.pathsep + env.get("PYTHONPATH", "")
    env["DAGSTER_HOME"] = str(home)
    env["SPLIT_ASSETS_WORKSPACES"] = str(home.parent / "workspaces")  # none declared
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    # cwd is the checkout: ``-m`` and ``-c`` put the working directory first on sys.path
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          check=False, cwd=env["PYTHONPATH"].split(os.pathsep)[0])
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(args[:3])} failed:\n{proc.stderr[-3000:]}")
    return proc


class _Checkout:
    """One checkout's demo workspace and Dagster home, diagnosed once (a cold run)."""

    def __init__(self, checkout: Path, tmp: Path) -> None:
        self.checkout = checkout
        home = tmp / "dagster_home"
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
        self.env = _env(checkout, home)
        ws = tmp / "ws"
        build = ("from pathlib import Path; from split_assets.demo import build_workspace; "
                 f"build_workspace(Path({str(ws)!r}))")
        _run(self.env, "-c", build)
        self.config = str(ws / "video_split.yaml")
        self.cli = ["-m", "split_assets.cli", "run", "--config", self.config,
                    "--generated-at", PIN]
        _run(self.env, *self.cli)  # cold: diagnoses everything once
        self.times: list[float] = []
        self.cpu: list[float] = []

    def warm_up(self) -> None:
        time.sleep(2.5)  # files older than the digest cache's racy margin, as for a user
        _run(self.env, *self.cli)

    def timed_run(self) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        _run(self.env, *self.cli)
        self.times.append(round(time.perf_counter() - started, 3))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu.append(round(after.ru_utime + after.ru_stime - before.ru_utime
                              - before.ru_stime, 3))

    def result(self) -> dict[str, object]:
        counted = _run(self.env, "-c", _COUNT, self.config, PIN).stdout.split("COUNTS", 1)[1]
        benchmark, predictions = (None if n == "-" else int(n) for n in counted.split()[:2])
        return {"checkout": str(self.checkout), "median_s": statistics.median(self.times),
                "runs_s": self.times, "median_cpu_s": statistics.median(self.cpu),
                "cpu_s": self.cpu, "benchmark_parses": benchmark,
                "prediction_parses": predictions}


def _say(result: dict[str, object]) -> None:
    parses = ("parses not counted (this checkout keeps its parsers elsewhere)"
              if result["benchmark_parses"] is None else
              f"benchmark parsed {result['benchmark_parses']}x, canonical predictions "
              f"{result['prediction_parses']}x per run")
    print(f"warm split-assets run of the demo in {result['checkout']}: median "
          f"{result['median_s']} s over {len(result['runs_s'])} runs (CPU "
          f"{result['median_cpu_s']} s); {parses}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--against", type=Path, help="a second checkout, timed interleaved")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = [_Checkout(args.checkout.resolve(), Path(tmp) / "a")]
        if args.against is not None:
            trees.append(_Checkout(args.against.resolve(), Path(tmp) / "b"))
        for tree in trees:
            tree.warm_up()
        for index in range(args.runs):
            for tree in (trees if index % 2 == 0 else trees[::-1]):
                tree.timed_run()
        results = [tree.result() for tree in trees]
    for result in results:
        _say(result)
    out = results[0]
    if len(results) == 2:
        out = {**out, "against": results[1],
               "speedup": round(results[1]["median_s"] / out["median_s"], 3),
               "cpu_speedup": round(results[1]["median_cpu_s"] / out["median_cpu_s"], 3)}
        print(f"speedup: {out['speedup']}x wall, {out['cpu_speedup']}x CPU "
              f"({results[1]['checkout']} over {out['checkout']})", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
