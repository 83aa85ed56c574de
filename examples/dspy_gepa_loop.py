"""Evolve a small DSPy program on a frozen split with GEPA (docs/how-to/evolve-with-dspy.md).

    split-assets demo --dir demo-workspace          # a frozen sample split
    export OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=... MODEL=my-model
    python examples/dspy_gepa_loop.py --config demo-workspace/video_split.yaml

What each pool is for:
- train: GEPA's trainset and its valset (two slices of train, split by video). GEPA scores every
  accepted candidate on its valset, so that set is part of training; the metric's feedback is
  the judge's diagnosis of the baseline's failure on each question.
- validation: seen only through the Ladder (``submit``): a released accuracy and a
  ``significant`` flag, never a per-question score.
- test: one look at the end (``test_look``), within ``evaluation.test_looks_max``.

It ends with the split card (``split-assets report``), whose leaderboard names the optimizer
and the program's digest of every submission.
"""

from __future__ import annotations

import argparse
import os
import sys

import dspy

from split_assets.loops.dspy import feedback_metric, gepa_sets, submit, test_look


class AnswerFromContext(dspy.Signature):
    """Answer the multiple-choice question about a video from its text context: reply with
    one option letter."""

    context: str = dspy.InputField(desc="the video's captions, one timestamped line each")
    question: str = dspy.InputField()
    options: list[str] = dspy.InputField()
    answer: str = dspy.OutputField(desc="one option letter, such as B")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="demo-workspace/video_split.yaml")
    parser.add_argument("--model", default=os.environ.get("MODEL", "local-model"))
    parser.add_argument("--train", type=int, default=12, help="trainset examples GEPA uses")
    parser.add_argument("--pareto", type=int, default=6, help="valset examples GEPA uses")
    parser.add_argument("--metric-calls", type=int, default=40, help="GEPA's budget")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--name", default="gepa", help="the runs' id prefix")
    args = parser.parse_args(argv)

    lm = dspy.LM(f"openai/{args.model}", api_base=os.environ["OPENAI_BASE_URL"],
                 api_key=os.environ.get("OPENAI_API_KEY", "none"), cache=False,
                 temperature=0.0, max_tokens=400)
    dspy.configure(lm=lm)
    program = dspy.ChainOfThought(AnswerFromContext)

    trainset, valset = gepa_sets(args.config)  # both slices of train
    trainset, valset = trainset[:args.train], valset[:args.pareto]
    seed = submit(program, f"{args.name}-seed", args.config, num_threads=args.threads)
    print(f"seed: leaderboard accuracy {seed['leaderboard_accuracy']:.4f}, "
          f"significant: {seed['significant']}")

    gepa = dspy.GEPA(metric=feedback_metric(args.config), max_metric_calls=args.metric_calls,
                     reflection_lm=lm, reflection_minibatch_size=3, use_merge=False,
                     skip_perfect_score=False, num_threads=args.threads, seed=0)
    optimized = gepa.compile(program, trainset=trainset, valset=valset)
    best = submit(optimized, f"{args.name}-1", args.config, optimizer=gepa,
                  num_threads=args.threads)
    print(f"optimized: leaderboard accuracy {best['leaderboard_accuracy']:.4f}, "
          f"significant: {best['significant']}, submissions {best['submissions']} of "
          f"{best['budget']}")

    look = test_look(optimized, f"{args.name}-1-test", args.config, optimizer=gepa,
                     num_threads=args.threads)
    test = look["pools"]["test"]
    print(f"test look: {test['claim']}")

    from split_assets.cli import main as cli

    return cli(["report", "--config", args.config])


if __name__ == "__main__":
    sys.exit(main())
