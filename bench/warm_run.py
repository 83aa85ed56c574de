"""Wall time of a warm ``split-assets run`` of the demo (everything already diagnosed), and how
many times one run parses the benchmark and the baseline's canonical predictions.

Run: .venv/bin/python bench/warm_run.py [--checkout PATH] [--runs 5]

``--checkout`` times another checkout of this project (e.g. the commit before a change, made
with ``git worktree add /tmp/before <rev>``) with this interpreter and its packages: its
``split_assets`` comes first on PYTHONPATH. Each timed run is a fresh process (start-up counts:
it is what a user waits for), the median of ``--runs`` is reported. The last line is one JSON
object: {"checkout", "median_s", "runs_s", "benchmark_parses", "prediction_parses"}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIN = "2026-01-01T00:00:00Z"

# Runs inside the checkout: one in-process run whose calls of the two parsers are counted with
# a profile hook (it sees the functions however they were imported).
_COUNT = """
import sys
from split_assets.cli import main
from split_assets.data import benchmark, harness
targets = {benchmark.read_benchmark_files.__code__: "benchmark",
           harness.canonical_predictions.__code__: "predictions"}
counts = {"benchmark": 0, "predictions": 0}
def hook(frame, event, arg):
    if event == "call" and frame.f_code in targets:
        counts[targets[frame.f_code]] += 1
sys.setprofile(hook)
code = main(["run", "--config", sys.argv[1], "--generated-at", sys.argv[2]])
sys.setprofile(None)
print("COUNTS", counts["benchmark"], counts["predictions"], code)
"""


def _env(checkout: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SPLIT_ASSETS_"))}
    env["PYTHONPATH"] = str(checkout) + os.pathsep + env.get("PYTHONPATH", "")
    env["DAGSTER_HOME"] = str(home)
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(args[:3])} failed:\n{proc.stderr[-3000:]}")
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "dagster_home"
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
        env = _env(checkout, home)
        ws = Path(tmp) / "ws"
        build = ("from pathlib import Path; from split_assets.demo import build_workspace; "
                 f"build_workspace(Path({str(ws)!r}))")
        _run(env, "-c", build)
        config = str(ws / "video_split.yaml")
        cli = ["-m", "split_assets.cli", "run", "--config", config, "--generated-at", PIN]
        _run(env, *cli)  # cold: diagnoses everything once
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            _run(env, *cli)
            times.append(round(time.perf_counter() - started, 3))
        counted = _run(env, "-c", _COUNT, config, PIN).stdout.split("COUNTS", 1)[1].split()
    result = {"checkout": str(checkout), "median_s": statistics.median(times), "runs_s": times,
              "benchmark_parses": int(counted[0]), "prediction_parses": int(counted[1])}
    print(f"warm split-assets run of the demo in {checkout}: median {result['median_s']} s "
          f"over {args.runs} runs; benchmark parsed {result['benchmark_parses']}x, canonical "
          f"predictions {result['prediction_parses']}x per run", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
