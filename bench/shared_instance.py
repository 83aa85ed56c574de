"""Workspaces sharing one Dagster instance and one judge, many times over (issue 21; the test
``tests/orchestration/test_shared_instance.py`` runs one round in ``make test``). Each round, on
one ``DAGSTER_HOME``: workspace A (the demo, seed 7) and B (seed 8) run at the same moment on fresh
copies, then ``--same`` runs of A's now fully diagnosed copy at the same moment. Each frozen
``pools.json`` must be byte-identical to that workspace's solo run and carry its own seed;
every run must exit 0 with no traceback. Before the fix, 3 of 6 such pairs froze A's selection
into B and 1 of 6 same-workspace pairs crashed on a half-written pickle.
Usage: ``.venv/bin/python bench/shared_instance.py [--rounds 6] [--same 3] [--videos 900]``;
ends with one JSON line."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from testkit.runs import new_instance
from testkit.runs import start_run as _start

ROOT = Path(__file__).resolve().parent.parent



def _finish(procs: dict[str, subprocess.Popen[str]]) -> dict[str, dict[str, str] | str]:
    """Each run's result lines, or what went wrong with it."""
    out: dict[str, dict[str, str] | str] = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=600)
        if proc.returncode != 0 or "Traceback" in stderr:
            out[name] = f"exit {proc.returncode}: {stderr.strip().splitlines()[-1:]}"
        else:
            out[name] = dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)
    return out


def _with_seed(template: Path, folder: Path, seed: int) -> Path:
    shutil.copytree(template, folder)
    config = folder / "video_split.yaml"
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["video_split"]["seed"] = seed
    config.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return config


def _wrong(result: dict[str, str] | str, solo: bytes, seed: int) -> str | None:
    if isinstance(result, str):
        return result
    data = Path(result["pools"]).read_bytes()
    if json.loads(data)["seed"] != seed:
        return f"pools.json holds seed {json.loads(data)['seed']}, the config {seed}"
    return None if data == solo else "pools.json differs from the solo run's"


def main() -> int:
    from split_assets.demo import build_workspace

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--same", type=int, default=3, help="concurrent runs of one workspace")
    parser.add_argument("--videos", type=int, default=900)
    args = parser.parse_args()
    seeds = {"A": 7, "B": 8}
    problems: list[str] = []
    runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        template = build_workspace(folder / "template", n_videos=args.videos).config_path.parent
        solo: dict[str, bytes] = {}
        for name, seed in seeds.items():  # alone, each on an instance of its own
            result = _finish({name: _start(_with_seed(template, folder / f"solo-{name}", seed),
                                           new_instance(folder / f"home-{name}"))})[name]
            if isinstance(result, str):
                print(f"solo {name}: {result}", file=sys.stderr)
                return 1
            solo[name] = Path(result["pools"]).read_bytes()
        shared = new_instance(folder / "home-shared")
        for r in range(args.rounds):
            configs = {name: _with_seed(template, folder / f"r{r}-{name}", seed)
                       for name, seed in seeds.items()}
            pair = _finish({name: _start(config, shared) for name, config in configs.items()})
            same = _finish({f"A{i}": _start(configs["A"], shared) for i in range(args.same)})
            runs += len(pair) + len(same)
            found = [f"round {r} {name}: {why}" for name, result in pair.items()
                     if (why := _wrong(result, solo[name], seeds[name]))]
            found += [f"round {r} {name}: {why}" for name, result in same.items()
                      if (why := _wrong(result, solo["A"], 7))]
            print(f"round {r}: {'; '.join(found) or 'ok'}")
            problems += found
    print(f"{args.rounds} rounds on one instance ({runs} runs: pairs of seeds 7 and 8, then "
          f"{args.same} runs of one workspace at once): {len(problems)} wrong")
    print(json.dumps({"rounds": args.rounds, "runs": runs, "wrong": len(problems)}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
