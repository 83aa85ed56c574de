"""DSPy's side of the loop (extra ``dspy``; docs/how-to/evolve-with-dspy.md): the pools as
``dspy.Example`` lists, GEPA's trainset and valset as two slices of train, a GEPA-ready metric
whose feedback is the judge's diagnosis of the baseline's failure, and a program's answers
sent to the Ladder (``submit``) or spent on test (``test_look``), each recorded in the ledger
under the optimizer's name and the program's digest.

    trainset, valset = gepa_sets("ws/video_split.yaml")
    optimized = dspy.GEPA(metric=feedback_metric("ws/video_split.yaml"), ...).compile(
        program, trainset=trainset, valset=valset)
    submit(optimized, "gepa-1", "ws/video_split.yaml", optimizer="dspy.GEPA")
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from split_assets.errors import UserError
from split_assets.lib.canonical import digest_of
from split_assets.loops.pools import LoopItem, LoopSplit

# DSPy 3.4 and litellm would each fetch a model price list from GitHub when first used
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

try:
    import dspy
except ImportError:  # pragma: no cover - the extra is missing
    raise UserError("split_assets.loops.dspy needs DSPy", "import split_assets.loops.dspy",
                    "pip install 'split_assets[dspy]'") from None

INPUTS = ("question", "options", "context")
Config = Path | str | None


def examples(config: Config, pool: str) -> list[dspy.Example]:
    """The ``train`` or ``validation`` pool as examples (inputs: question, options, context;
    label: answer; also question_id and video_id). Test is refused: see ``test_look``."""
    return [_example(i) for i in LoopSplit(config).items(pool)]


def gepa_sets(config: Config, pareto_share: float = 0.3,
              seed: int | None = None) -> tuple[list[dspy.Example], list[dspy.Example]]:
    """GEPA's (trainset, valset): two disjoint slices of the train pool, split by video,
    deterministic from ``seed`` (default: the split's). GEPA scores every accepted candidate on
    its valset, which makes the valset part of training: the validation pool stays out."""
    train, pareto = LoopSplit(config).train_slices(pareto_share, seed)
    return [_example(i) for i in train], [_example(i) for i in pareto]


def feedback_metric(config: Config) -> Any:
    """A GEPA-ready metric ``(gold, pred, trace=None, pred_name=None, pred_trace=None)``: it
    reads ``pred.answer`` and returns ``dspy.Prediction(score, feedback)``, the feedback
    written from the judge's diagnosis of the baseline's failure on that train question."""
    split = LoopSplit(config)
    train = {i.question_id: i for i in split.items("train")}
    _ = split.diagnoses  # read once, before GEPA's threads call the metric

    def metric(gold: Any, pred: Any, trace: Any = None, pred_name: Any = None,
               pred_trace: Any = None) -> dspy.Prediction:
        item = train.get(str(getattr(gold, "question_id", "")))
        if item is None:
            raise UserError(f"feedback_metric scored question {gold.get('question_id')!r}, "
                            "which is not a train question", "feedback_metric",
                            "give the optimizer gepa_sets() or examples(config, 'train') only")
        score, feedback = split.feedback(item, str(getattr(pred, "answer", "") or ""))
        return dspy.Prediction(score=score, feedback=feedback)

    return metric


def program_sha256(program: Any) -> str:
    """The program's digest: sha256 of its saved state (``dump_state()``) as canonical JSON."""
    return digest_of(program.dump_state())


def submit(program: Any, candidate_id: str, config: Config, optimizer: Any = None,
           num_threads: int | None = None) -> dict[str, Any]:
    """Run ``program`` on the validation pool and submit its answers to the Ladder (one
    submission of ``evaluation.feedback_budget``): the released ``leaderboard_accuracy``,
    ``significant`` and the rest of ``split-assets feedback --json``. Recorded as run
    ``candidate_id`` in the harness db and a ledger row naming ``optimizer`` and the program's
    digest; nothing is added to video_split.yaml."""
    split = LoopSplit(config)
    answers = answer_all(program, split.items("validation"), num_threads)
    return split.submit(candidate_id, answers, optimizer_name(optimizer),
                        program_sha256(program))


def test_look(program: Any, candidate_id: str, config: Config, optimizer: Any = None,
              num_threads: int | None = None) -> dict[str, Any]:
    """One look at test within ``evaluation.test_looks_max`` (refused past it, before the
    program runs, with nothing written): what ``split-assets compare --pool test --json``
    returns, recorded in the ledger under the optimizer's name and the program's digest."""
    return LoopSplit(config).look_at_test(
        candidate_id, lambda items: answer_all(program, items, num_threads),
        optimizer_name(optimizer), program_sha256(program))


def answer_all(program: Any, items: list[LoopItem], num_threads: int | None) -> dict[str, str]:
    """The program's answer to each item, run on threads as ``dspy.Evaluate`` runs them (an
    item whose call failed gets no answer: it counts as wrong)."""
    evaluate = dspy.Evaluate(devset=[_example(i) for i in items], metric=lambda *_: 0.0,
                             num_threads=num_threads, display_progress=False,
                             max_errors=len(items) + 1)
    result = evaluate(program)
    return {example.question_id: str(getattr(pred, "answer", "") or "")
            for example, pred, _ in result.results}


def optimizer_name(optimizer: Any) -> str:
    """``dspy.GEPA`` for a ``dspy.GEPA`` (an instance or the class), a string as given,
    ``none`` for a program no optimizer made (the seed)."""
    if optimizer is None:
        return "none"
    if isinstance(optimizer, str):
        return optimizer
    kind = optimizer if isinstance(optimizer, type) else type(optimizer)
    return f"dspy.{kind.__name__}" if kind.__module__.startswith("dspy") else kind.__name__


def _example(item: LoopItem) -> dspy.Example:
    return dspy.Example(question_id=item.question_id, video_id=item.video_id,
                        question=item.question, options=list(item.options),
                        context=item.context, answer=item.answer).with_inputs(*INPUTS)
