"""The openai judge at its defaults against the servers people run, side by side with the
best a client can do on each.

Each server is the test server in its own process (testkit/llm_server.py --slots):
- llama.cpp / vLLM-like, 1, 4 and 16 slots: a request costs 50 ms plus 20 us per prompt token
  its slot has not cached (a cold 5,800-token prompt: +116 ms; a warm one: its own ~600
  tokens), the rest queued;
- hosted-like: 32 slots, 100 to 400 ms a request (uniform), the rest queued.

For each, the judge diagnoses N wrong answers of a generated workspace with nothing set but
the model (diag.concurrency unset: it starts at one request and learns the endpoint, up to
64), on a
fresh server; then, on another fresh server, the plain openai client sends the same prompts
keeping exactly as many in flight as the server has slots (the server's own rate: it is never
idle, nothing queues). The ratio is the judge's rate over that. The hosted endpoint's bound
is also the theoretical 32 / 0.25 s = 128 calls/s.

Prints a line per server and, last, one JSON object. Acceptance (issues 25 and 39): every
local ratio >= 0.9, hosted >= 0.85 of its bound. Run: .venv/bin/python bench/local_judges.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ["--latency", "0.05", "--prompt-s-per-token", "2e-5"]
SERVERS = [  # name, slots, server arguments, questions
    ("llama.cpp 1 slot", 1, LOCAL, 240),
    ("llama.cpp 4 slots", 4, LOCAL, 600),
    ("vLLM 16 slots", 16, LOCAL, 1200),
    ("hosted 32 slots", 32, ["--latency", "0.1", "--jitter", "0.3"], 1500),
]
HOSTED_BOUND = 32 / 0.25


@contextmanager
def server(slots: int, args: list[str]) -> Any:
    script = ROOT / "testkit" / "llm_server.py"
    proc = subprocess.Popen([sys.executable, str(script), "--port", "0", "--slots", str(slots),
                             *args], stdout=subprocess.PIPE, text=True)
    try:
        ready = proc.stdout.readline().split()
        assert ready and ready[0] == "READY", ready
        os.environ["OPENAI_BASE_URL"] = ready[1]
        yield ready[1]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def judge_rate(config: Path, n: int, signals: Path) -> tuple[float, int, int, list[int]]:
    """Calls per second of the judge; its calls, timeouts and learned limits."""
    from split_assets.app.session import Session
    from split_assets.diagnosis.plan import plan_diagnosis, wrong_to_diagnose
    from split_assets.diagnosis.runner import diagnose
    from split_assets.store.signals import SignalStore

    doc = yaml.safe_load(config.read_text())
    doc["paths"]["signals_db"] = str(signals)
    config.write_text(yaml.safe_dump(doc))
    s = Session.open(config)
    wrong = wrong_to_diagnose(s.inputs.predictions)[:n]
    with SignalStore(signals) as store:
        started = time.perf_counter()
        report = diagnose(s.judge, s.inputs, s.partition, plan_diagnosis(wrong, set(),
                                                                         frozenset()), store)
        wall = time.perf_counter() - started
        timeouts = store.call_statuses(s.partition.key).get("timeout", 0)
    return report.calls / wall, report.calls, timeouts, [n for _, n in report.concurrency]


def reference_rate(config: Path, n: int, in_flight: int) -> float:
    """The plain client with exactly ``in_flight`` requests in flight, the same prompts."""
    from bench.plain_client import plain_wall_s, rendered_prompts
    from split_assets.app.session import Session
    from split_assets.diagnosis.plan import wrong_to_diagnose

    s = Session.open(config)
    prompts = rendered_prompts(s, wrong_to_diagnose(s.inputs.predictions)[:n])
    return len(prompts) / plain_wall_s(prompts, in_flight)


def main() -> None:
    from split_assets.demo import build_workspace

    os.environ["OPENAI_API_KEY"] = "bench-key"
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("DAGSTER_HOME", tmp)
        summary = build_workspace(Path(tmp) / "ws", n_videos=1500, seed=5)
        doc = yaml.safe_load(summary.config_path.read_text())
        doc["diag"].update(judge="openai", model="bench-model")  # nothing else set
        summary.config_path.write_text(yaml.safe_dump(doc))
        only = sys.argv[1:]  # names to run (a substring each), else all
        for i, (name, slots, args, n) in enumerate(SERVERS):
            if only and not any(word in name for word in only):
                continue
            with server(slots, args):
                rate, calls, timeouts, limits = judge_rate(summary.config_path, n,
                                                           Path(tmp) / f"signals{i}.db")
            with server(slots, args):
                best = reference_rate(summary.config_path, n, slots)
            key = name.split()[0].replace(".", "") + f"_{slots}"
            results[key] = {"ratio": round(rate / best, 3), "judge_calls_per_s": round(rate, 1),
                            "server_calls_per_s": round(best, 1), "calls": calls,
                            "timeouts": timeouts, "learned": limits[-1]}
            line = (f"{name}: judge {rate:.1f} calls/s, server's own rate {best:.1f} "
                    f"(ratio {rate / best:.3f}); {calls} calls for {n} questions, "
                    f"{timeouts} timeouts; concurrency {' -> '.join(map(str, limits))}")
            if slots == 32:
                results[key]["bound_ratio"] = round(rate / HOSTED_BOUND, 3)
                line += f"; {rate / HOSTED_BOUND:.3f} of the bound {HOSTED_BOUND:.0f}/s"
            print(line, flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
