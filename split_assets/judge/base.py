"""The judge interface: what a judge reads (a case) and what a diagnosis cost (an outcome).
Not part of any judge's fingerprint: the verdict's schema lives in ``schema.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from split_assets.judge.schema import Diagnosis
from split_assets.sources.benchmark import Question
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.sources.trace_steps import TraceStep
from split_assets.sources.video_store import Skill, VideoTree

__all__ = ["Diagnosis", "Judge", "JudgeCase", "JudgeOutcome"]

@dataclass(frozen=True)
class JudgeCase:
    """Everything a judge may read about one wrong answer. Trace, tree and skills are set only
    in ``full`` context; ``reference_wrong`` only when ``diag.reference_runs`` lists runs."""

    question: Question
    prediction: CanonicalPrediction
    trace: list[TraceStep] | None = None
    tree: VideoTree | None = None
    skills: list[Skill] = field(default_factory=list)
    # per diag.reference_runs entry: True wrong, False correct, None no usable answer (missing
    # or INFRA) -- what the answer_only rules judge reads
    reference_wrong: tuple[bool | None, ...] = ()


@dataclass(frozen=True)
class JudgeOutcome:
    """A diagnosis (``None`` when the judge could not produce a valid one: degraded) and what
    it cost."""

    diagnosis: Diagnosis | None
    degraded_reason: str | None = None
    # the endpoint could not be reached or refused the call (after retries): no verdict at all,
    # so no row is stored and the question stays open (never frozen as degraded)
    call_failed: bool = False
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    reported_model: str | None = None
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache


class Judge(Protocol):
    """What the assets need of a judge; the rules and the openai judge both provide it."""

    name: str

    def settings(self) -> dict[str, Any]:
        """Call settings / parameters that change what the judge answers (fingerprinted)."""
        ...

    def required_templates(self) -> tuple[str, ...]:
        """Prompt templates this judge reads, in its configured context."""
        ...

    def source_files(self) -> list[Path]:
        """The judge's own source files, whose digest is a fingerprint component."""
        ...

    def estimated_calls_per_question(self) -> int:
        """Endpoint calls a diagnosis costs (0 for offline judges)."""
        ...

    def estimated_tokens(self, case: JudgeCase, templates: dict[str, str]) -> int:
        """Tokens a diagnosis of ``case`` is expected to cost (0 for offline judges)."""
        ...

    def request_key(self, case: JudgeCase, templates: dict[str, str]) -> str | None:
        """The response-cache key of the call a diagnosis of ``case`` makes first (None for
        offline judges)."""
        ...

    def start(self, store: Any, fingerprint: str, templates: dict[str, str]) -> None:
        """Prepare for a diagnosis pass (inside its event loop): store, fingerprint, prompts."""
        ...

    async def diagnose(self, case: JudgeCase) -> JudgeOutcome:
        """Diagnose one wrong answer."""
        ...

    async def aclose(self) -> None:
        """Release what ``start`` opened."""
        ...
