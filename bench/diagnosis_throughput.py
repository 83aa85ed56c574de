"""Diagnosis throughput of the openai judge as configured by default, against the local test
server in its own process (200 ms per call), concurrency 32, 1,000 wrong answers.

Prints achieved calls/s against the bound (32 / 0.2 s), CPU ms per call of this (the judge's)
process, calls per question; then a warm-cache pass and the calls it made. The last line is one
JSON object. Run: .venv/bin/python bench/diagnosis_throughput.py
"""

from __future__ import annotations

import cProfile
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONCURRENCY, LATENCY_S, N_QUESTIONS = 32, 0.2, 1000


def main() -> None:
    from split_assets.app.session import Session
    from split_assets.demo import build_workspace
    from split_assets.diagnosis.plan import plan_diagnosis, wrong_to_diagnose
    from split_assets.diagnosis.runner import diagnose
    from split_assets.store.signals import SignalStore

    script = ROOT / "testkit" / "llm_server.py"
    server = subprocess.Popen([sys.executable, str(script), "--port", "0", "--latency",
                               str(LATENCY_S)], stdout=subprocess.PIPE, text=True)
    try:
        ready = server.stdout.readline().split()
        assert ready and ready[0] == "READY", ready
        os.environ["OPENAI_BASE_URL"] = ready[1]
        os.environ["OPENAI_API_KEY"] = "bench-key"
        with tempfile.TemporaryDirectory() as tmp:
            summary = build_workspace(Path(tmp) / "ws", n_videos=1000, seed=5)
            config = yaml.safe_load(summary.config_path.read_text())
            config["diag"].update(judge="openai", model="bench-model", concurrency=CONCURRENCY)
            summary.config_path.write_text(yaml.safe_dump(config))
            ws = Session.open(summary.config_path)
            wrong = wrong_to_diagnose(ws.inputs.predictions)[:N_QUESTIONS]
            subset = plan_diagnosis(wrong, set(), frozenset())
            print(f"diagnosing {len(wrong)} wrong answers, concurrency {CONCURRENCY}, "
                  f"server latency {LATENCY_S * 1000:.0f} ms", file=sys.stderr)
            profile = os.environ.get("BENCH_PROFILE")  # a path: cProfile the cold pass there
            profiler = cProfile.Profile() if profile else None
            with SignalStore(ws.loaded.paths.signals_db) as store:
                cpu0, wall0 = time.process_time(), time.perf_counter()
                if profiler:
                    profiler.enable()
                report = diagnose(ws.judge, ws.inputs, ws.partition, subset, store,
                                  progress=lambda line: print(line, file=sys.stderr),
                                  progress_every_s=5)
                cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                if profiler:
                    profiler.disable()
                    profiler.dump_stats(profile)
            conn = sqlite3.connect(ws.loaded.paths.signals_db)
            conn.execute("DELETE FROM signals")  # the diagnoses are gone, the cache is not
            conn.commit()
            conn.close()
            with SignalStore(ws.loaded.paths.signals_db) as store:
                warm = diagnose(ws.judge, ws.inputs, ws.partition, subset, store)
            reference = plain_client_reference(ws, wrong)
    finally:
        server.terminate()
        server.wait(timeout=10)
    bound = CONCURRENCY / LATENCY_S
    calls_per_s = report.calls / wall
    result = {
        "calls_per_s": round(calls_per_s, 1), "bound_calls_per_s": round(bound, 1),
        "ratio": round(calls_per_s / bound, 3),
        "cpu_ms_per_call": round(1000 * cpu / max(report.calls, 1), 2),
        "calls_per_question": round(report.calls / max(report.diagnosed, 1), 3),
        "warm_cache_calls": warm.calls,
    }
    print(f"calls/s {result['calls_per_s']} vs bound {result['bound_calls_per_s']} "
          f"(ratio {result['ratio']}); CPU {result['cpu_ms_per_call']} ms/call; "
          f"{result['calls_per_question']} calls/question; warm cache: {warm.calls} calls, "
          f"{warm.cache_hits} cache hits")
    print(f"reference, same prompts and server: the plain openai client "
          f"(chat.completions.create, nothing else) reaches ratio {reference['ratio']} at "
          f"{reference['cpu_ms_per_call']} ms CPU per call")
    print(json.dumps(result))


def plain_client_reference(ws, wrong) -> dict[str, float]:  # noqa: ANN001
    """The bare ``AsyncOpenAI`` sending the same rendered prompts at the same concurrency: what
    the machine and the server allow, measured in the same run as the judge."""
    from bench.plain_client import plain_wall_s, rendered_prompts

    prompts = rendered_prompts(ws, wrong)
    cpu0 = time.process_time()
    wall = plain_wall_s(prompts, CONCURRENCY)
    cpu = time.process_time() - cpu0
    return {"ratio": round(len(prompts) / wall / (CONCURRENCY / LATENCY_S), 3),
            "cpu_ms_per_call": round(1000 * cpu / len(prompts), 2)}


if __name__ == "__main__":
    main()
