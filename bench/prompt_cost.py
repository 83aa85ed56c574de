"""What the openai judge's prompts cost, over the demo's wrong answers (``split-assets demo``'s
workspace: 900 videos, seed 2026), measured side by side with the prompt layout of an earlier
commit (default: the one before the cache-friendly layout).

Prints, for both layouts: the share of prompt tokens that is a prefix shared by every call (what
a provider's automatic prefix cache can reuse), prompt tokens per diagnosis, and -- for the
prices given (USD per million tokens) -- the cost per 1,000 diagnoses without caching and with
a 50 % and a 90 % cached-input discount. Tokens are characters / 4 (the judge's own estimate; no
tokenizer is downloadable here), completion tokens the judge's estimate (max_tokens / 4). The
last line is one JSON object for the current layout.

Run: .venv/bin/python bench/prompt_cost.py [--against REV] [--input 2.5 --output 10]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import fmean
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "77e0f7e"  # the last commit with the earlier layout (case values inline, one Context)


def _old_render(rev: str) -> ModuleType:
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:split_assets/judge/render.py"],
                            check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader("render_before", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{rev}:render.py", "exec"), module.__dict__)  # noqa: S102
    return module


def _flat(messages: list[dict[str, str]]) -> str:
    """The prompt as a provider's prefix cache sees it: roles and contents in order."""
    return "".join(f"<|{m['role']}|>{m['content']}" for m in messages)


def _common_prefix(texts: list[str]) -> int:
    lo, hi = min(texts), max(texts)  # the common prefix of all = that of the extremes
    n = 0
    for a, b in zip(lo, hi, strict=False):
        if a != b:
            break
        n += 1
    return n


def measure(prompts: list[str], completion_tokens: int, prices: dict[str, float]) -> dict:
    tokens = [len(p) / 4 for p in prompts]
    prefix = _common_prefix(prompts) / 4
    per_call = fmean(tokens)
    result = {"shared_prefix_share": round(prefix / per_call, 4),
              "prompt_tokens_per_diagnosis": round(per_call, 1),
              "shared_prefix_tokens": round(prefix, 1),
              "completion_tokens_per_diagnosis": completion_tokens}
    if prices:
        def cost(discount: float) -> float:  # the prefix of every call after the first cached
            cached = prefix * (1 - 1 / len(prompts))
            paid = per_call - cached * discount
            return round(1000 * (paid * prices["input"] + completion_tokens * prices["output"])
                         / 1e6, 4)
        result["cost_per_1000"] = {"no_cache": cost(0.0), "cached_50pct": cost(0.5),
                                   "cached_90pct": cost(0.9)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=BEFORE, help="git revision of the earlier layout")
    parser.add_argument("--input", type=float, default=2.5, help="USD per 1M input tokens")
    parser.add_argument("--output", type=float, default=10.0, help="USD per 1M output tokens")
    args = parser.parse_args()
    from split_assets.app.session import Session
    from split_assets.demo import build_workspace
    from split_assets.diagnosis.cases import CaseSource
    from split_assets.diagnosis.plan import wrong_to_diagnose
    from split_assets.judge.prompts import load_templates
    from split_assets.judge.render import render_messages, templates_for

    os.environ.setdefault("OPENAI_API_KEY", "bench-key")
    before = _old_render(args.against)
    prices = {"input": args.input, "output": args.output}
    with tempfile.TemporaryDirectory() as tmp:
        config = build_workspace(Path(tmp) / "ws").config_path
        ws = Session.open(config)
        diag = ws.loaded.config.diag
        templates = load_templates(ws.loaded.paths.prompts_dir, templates_for(diag.context))
        wrong = wrong_to_diagnose(ws.inputs.predictions)
        cases = list(CaseSource(ws.inputs, wrong).cases(wrong))
        completion = diag.openai.max_tokens // 4
        now = measure([_flat(render_messages(templates, c, diag.context)) for c in cases],
                      completion, prices)
        old = measure([_flat(before.render_messages(templates, c, diag.context))
                       for c in cases], completion, prices)
    print(f"{len(cases)} wrong answers of the demo ({diag.context} context); prices "
          f"${args.input}/M input, ${args.output}/M output", file=sys.stderr)
    for name, r in ((f"before ({args.against})", old), ("now", now)):
        print(f"{name:>18}: shared prefix {r['shared_prefix_share']:.3f} of the prompt, "
              f"{r['prompt_tokens_per_diagnosis']:.0f} prompt tokens per diagnosis, cost per "
              f"1,000: {r['cost_per_1000']}")
    ratio = now["prompt_tokens_per_diagnosis"] / old["prompt_tokens_per_diagnosis"]
    print(f"prompt tokens per diagnosis now / before: {ratio:.3f}")
    print(json.dumps({**now, "before": old, "tokens_ratio_vs_before": round(ratio, 3)}))


if __name__ == "__main__":
    main()
