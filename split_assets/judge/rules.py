"""The offline rules judge: deterministic diagnoses from documented features of the data.

``full`` context, applied in order to each wrong, non-INFRA answer (README "The rules judge"):

1. step limit: the run stopped with a stop_reason in ``step_limit_stop_reasons`` -> T2
   (retrieval / insufficient_evidence, target ``prompt:search_budget``);
2. missed evidence: the question has ``evidence_spans`` and no node the agent opened overlaps
   any of them -> T2 (missed_evidence, target the task type's skill or ``tool:<open_tool>``);
3. no look at all: no evidence spans labelled and the agent opened no node -> T2;
4. skill non-adherence: a skill applies to the task type and names a ``required_tool`` the
   trace never called -> T2 (skill_nonadherence, target ``skill:<name>``);
5. otherwise a lapse -> T1: it had the evidence in front of it and still answered wrong.

``answer_only`` context (no trace, tree or skills: e.g. imported published results): a wrong
answer that is also wrong in at least ``diag.min_agree`` (default: all) of the
``diag.reference_runs`` is a persistent defect -> T2; otherwise a lapse -> T1. A reference run
with no usable answer to the question (missing, or INFRA) does not count as wrong. With no
reference runs every wrong answer is T1. The reference runs, ``min_agree`` and a digest of the
reference runs' predictions are fingerprint components.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.judge.base import JudgeCase, JudgeOutcome
from split_assets.judge.schema import Diagnosis
from split_assets.settings import RulesJudgeConfig
from split_assets.sources.trace_steps import opened_nodes
from split_assets.sources.video_store import Skill

# The error type a wrong answer of each Video-MME task type most plausibly shows.
ERROR_TYPE_BY_TASK: dict[str, str] = {
    "Action Reasoning": "reasoning",
    "Action Recognition": "perception",
    "Attribute Perception": "perception",
    "Counting Problem": "perception",
    "Information Synopsis": "reasoning",
    "OCR Problems": "perception",
    "Object Reasoning": "reasoning",
    "Object Recognition": "perception",
    "Spatial Perception": "perception",
    "Spatial Reasoning": "reasoning",
    "Temporal Perception": "temporal_grounding",
    "Temporal Reasoning": "temporal_grounding",
}


def _skill_for(task_type: str, skills: list[Skill]) -> Skill | None:
    for skill in skills:
        if task_type in skill.applies_to:
            return skill
    return None


class RulesJudge:
    """Offline, deterministic judge (the embedded default; no API key)."""

    name = "rules"

    def __init__(self, params: RulesJudgeConfig, context: str,
                 reference_runs: tuple[str, ...] = (), agree_needed: int = 0) -> None:
        self.params = params
        self.context = context
        self.reference_runs = reference_runs
        self.agree_needed = agree_needed

    def settings(self) -> dict[str, Any]:
        settings = self.params.model_dump(mode="json")
        if self.context == "answer_only":
            settings.update(reference_runs=list(self.reference_runs),
                            min_agree=self.agree_needed)
        return settings

    def required_templates(self) -> tuple[str, ...]:
        return ()

    def source_files(self) -> list[Path]:
        here = Path(__file__).resolve().parent
        # what decides a verdict, nothing else
        return [here / "rules.py", here / "schema.py", here.parent / "sources" / "trace_steps.py"]

    def estimated_calls_per_question(self) -> int:
        return 0

    def estimated_tokens(self, case: JudgeCase, templates: dict[str, str]) -> int:
        return 0

    def request_key(self, case: JudgeCase, templates: dict[str, str]) -> str | None:
        return None  # no endpoint, no cache

    def start(self, store: Any, fingerprint: str, templates: dict[str, str]) -> None:
        """Nothing to open: the rules judge reads only the case."""

    async def diagnose(self, case: JudgeCase) -> JudgeOutcome:
        return JudgeOutcome(diagnosis=self.decide(case))

    async def aclose(self) -> None:
        """Nothing to close."""

    def decide(self, case: JudgeCase) -> Diagnosis:
        """Apply the rules of the module docstring to one case."""
        if self.context == "answer_only":
            return self.decide_answer_only(case)
        opened = self._opened(case)
        pred = case.prediction
        if pred.stop_reason in self.params.step_limit_stop_reasons:
            return Diagnosis(tier="T2", error_type="retrieval",
                             cause_category="insufficient_evidence",
                             evolution_target="prompt:search_budget",
                             rationale=f"The agent hit its step limit ({pred.stop_reason}) after "
                                       f"opening {len(opened)} nodes and had to guess.",
                             confidence=0.9)
        return self._missed(case, opened) or self._nonadherent(case) or self._lapse(case)

    def _opened(self, case: JudgeCase) -> list[str]:
        """The nodes the agent opened (repeats kept), each in the video's tree."""
        q = case.question
        if case.trace is None or case.tree is None:
            raise InputError(f"rules judge in full context needs the trace and tree of "
                             f"{q.question_id!r}", config_key("context"), "provide them")
        return opened_nodes(case.trace, self.params.open_tool, case.tree.nodes, q.question_id,
                            q.video_id)

    def _missed(self, case: JudgeCase, opened: list[str]) -> Diagnosis | None:
        """Rules 2 and 3: no opened node overlaps the evidence, or none was opened at all."""
        q, nodes = case.question, case.tree.nodes if case.tree else {}
        error_type = ERROR_TYPE_BY_TASK.get(q.task_type, "other")
        skill = _skill_for(q.task_type, case.skills)
        target = f"skill:{skill.name}" if skill else f"tool:{self.params.open_tool}"
        if q.evidence_spans:
            if any(nodes[n].overlaps(a, b) for n in opened for a, b in q.evidence_spans):
                return None
            kind = "temporal_grounding" if error_type == "temporal_grounding" else "retrieval"
            return Diagnosis(tier="T2", error_type=kind, cause_category="missed_evidence",
                             evolution_target=target,
                             rationale=f"None of the {len(opened)} nodes the agent opened "
                                       "overlaps the labelled evidence span.",
                             confidence=0.85)
        if opened:
            return None
        return Diagnosis(tier="T2", error_type="retrieval", cause_category="missed_evidence",
                         evolution_target=target,
                         rationale="The agent answered without opening any node of the "
                                   "video tree.", confidence=0.8)

    def _nonadherent(self, case: JudgeCase) -> Diagnosis | None:
        """Rule 4: the task's skill names a tool the trace never called."""
        q = case.question
        skill = _skill_for(q.task_type, case.skills)
        if not (skill and skill.required_tool):
            return None
        tools = {str(s.content.get("tool")) for s in case.trace or ()
                 if s.kind == "tool_call" and isinstance(s.content, dict)}
        if skill.required_tool in tools:
            return None
        return Diagnosis(tier="T2", error_type=ERROR_TYPE_BY_TASK.get(q.task_type, "other"),
                         cause_category="skill_nonadherence",
                         evolution_target=f"skill:{skill.name}",
                         rationale=f"Skill '{skill.name}' requires the tool "
                                   f"'{skill.required_tool}', which the agent never called.",
                         confidence=0.8)

    def _lapse(self, case: JudgeCase) -> Diagnosis:
        """Rule 5: it had the evidence in front of it and still answered wrong."""
        q = case.question
        cause = "misread_evidence" if q.evidence_spans else "flawed_inference"
        return Diagnosis(tier="T1", error_type=ERROR_TYPE_BY_TASK.get(q.task_type, "other"),
                         cause_category=cause, evolution_target=None,
                         rationale="The agent opened the relevant part of the video and followed "
                                   "its skill, yet answered wrong: a lapse.",
                         confidence=0.6 if q.evidence_spans else 0.4)

    def decide_answer_only(self, case: JudgeCase) -> Diagnosis:
        """Persistent defect (T2) when enough reference runs are wrong too, else a lapse."""
        q = case.question
        error_type = ERROR_TYPE_BY_TASK.get(q.task_type, "other")
        n = len(self.reference_runs)
        if n == 0:
            return Diagnosis(tier="T1", error_type=error_type, cause_category="other",
                             rationale="No reference runs to tell a persistent defect from a "
                                       "lapse: every wrong answer counts as a lapse (T1).",
                             confidence=0.3)
        wrong = sum(1 for w in case.reference_wrong if w is True)
        usable = sum(1 for w in case.reference_wrong if w is not None)
        if wrong >= self.agree_needed:
            return Diagnosis(tier="T2", error_type=error_type, cause_category="other",
                             rationale=f"Also wrong in {wrong} of {n} reference runs (T2 needs "
                                       f"{self.agree_needed}): a persistent defect.",
                             confidence=round(0.5 + 0.4 * wrong / n, 4))
        return Diagnosis(tier="T1", error_type=error_type, cause_category="other",
                         rationale=f"Wrong in {wrong} of {n} reference runs ({usable} answered; "
                                   f"T2 needs {self.agree_needed}): a lapse.",
                         confidence=round(0.5 + 0.4 * (1 - wrong / n), 4))
