"""GEPA's side of the loop for agents that are not DSPy programs (extra ``gepa``;
docs/how-to/evolve-with-dspy.md): ``DiagnosisAdapter`` is a ``gepa.GEPAAdapter`` whose scores
and reflective dataset come from the judge's diagnoses of the baseline's failures on train.
Subclass it and implement ``run`` -- your system's answers to a batch under a candidate (a
dict of component texts) -- or override ``evaluate`` too.

    class MyAgent(DiagnosisAdapter):
        def run(self, candidate, items):
            return [my_agent(candidate["system_prompt"], i.question, i.options) for i in items]

    adapter = MyAgent("ws/video_split.yaml")
    trainset, valset = gepa_sets("ws/video_split.yaml")
    result = gepa.optimize(seed_candidate=seed, trainset=trainset, valset=valset,
                           adapter=adapter, reflection_lm=..., max_metric_calls=200)
    submit(adapter, result.best_candidate, "gepa-1", "ws/video_split.yaml")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from split_assets.errors import UserError
from split_assets.lib.canonical import digest_of
from split_assets.loops.pools import LoopItem, LoopSplit

try:
    from gepa import EvaluationBatch
except ImportError:  # pragma: no cover - the extra is missing
    raise UserError("split_assets.loops.gepa needs GEPA", "import split_assets.loops.gepa",
                    "pip install 'split_assets[gepa]'") from None

Config = Path | str | None
CONTEXT_CHARS = 2000  # of a video's text context shown to the reflection model
OPTIMIZER = "gepa"


class DiagnosisAdapter:
    """A GEPA adapter over the train pool: each answer scored 1 or 0 by the workspace's
    letter rule, with feedback written from the judge's diagnosis of the baseline's failure
    on that question; the reflective dataset is those answers and their feedback."""

    propose_new_texts = None  # GEPA's reflection model proposes the new texts

    def __init__(self, config: Config = None) -> None:
        self.split = LoopSplit(config)

    def run(self, candidate: dict[str, str], items: list[LoopItem]) -> list[str]:
        """Your system's answer (a letter, or text the letter rule reads) to each item."""
        raise NotImplementedError("implement run(candidate, items) for your system")

    def evaluate(self, batch: list[LoopItem], candidate: dict[str, str],
                 capture_traces: bool = False) -> EvaluationBatch:
        answers = self.run(candidate, batch)
        scored = [self.split.feedback(item, answer) for item, answer in zip(batch, answers,
                                                                            strict=True)]
        trajectories = ([{"item": item, "answer": answer, "feedback": feedback}
                         for item, answer, (_, feedback) in zip(batch, answers, scored,
                                                                strict=True)]
                        if capture_traces else None)
        return EvaluationBatch(outputs=answers, scores=[score for score, _ in scored],
                               trajectories=trajectories)

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: EvaluationBatch,
                                components_to_update: list[str]
                                ) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        records = [{"Inputs": {"question": t["item"].question,
                               "options": "\n".join(t["item"].options),
                               "video context": t["item"].context[:CONTEXT_CHARS]},
                    "Generated Outputs": t["answer"], "Feedback": t["feedback"]}
                   for t in eval_batch.trajectories or []]
        return {component: records for component in components_to_update}


def gepa_sets(config: Config = None, pareto_share: float = 0.3,
              seed: int | None = None) -> tuple[list[LoopItem], list[LoopItem]]:
    """GEPA's (trainset, valset): two disjoint slices of train, split by video."""
    return LoopSplit(config).train_slices(pareto_share, seed)


def candidate_sha256(candidate: dict[str, str]) -> str:
    """A candidate's digest: sha256 of its component texts as canonical JSON."""
    return digest_of(candidate)


def submit(adapter: DiagnosisAdapter, candidate: dict[str, str], candidate_id: str,
           config: Config = None) -> dict[str, Any]:
    """The candidate's answers on the validation pool submitted to the Ladder (as
    ``loops.dspy.submit``), recorded under optimizer ``gepa``."""
    split = LoopSplit(config)
    return split.submit(candidate_id, _answers(adapter, candidate, split.items("validation")),
                        OPTIMIZER, candidate_sha256(candidate))


def test_look(adapter: DiagnosisAdapter, candidate: dict[str, str], candidate_id: str,
              config: Config = None) -> dict[str, Any]:
    """One look at test within the budget (as ``loops.dspy.test_look``)."""
    return LoopSplit(config).look_at_test(
        candidate_id, lambda items: _answers(adapter, candidate, items), OPTIMIZER,
        candidate_sha256(candidate))


def _answers(adapter: DiagnosisAdapter, candidate: dict[str, str],
             items: list[LoopItem]) -> dict[str, str]:
    """The adapter's answer to each item, by question id."""
    return dict(zip([i.question_id for i in items], adapter.run(candidate, items), strict=True))
