"""What a verdict is: the diagnosis schema and its vocabularies (SPEC §7).

This module decides what counts as a valid verdict, so its source digest is a fingerprint
component of every judge; keep anything else (outcomes, counters, telemetry) out of it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ErrorType = Literal["perception", "temporal_grounding", "retrieval", "reasoning", "knowledge",
                    "instruction_following", "other"]
CauseCategory = Literal["missed_evidence", "misread_evidence", "insufficient_evidence",
                        "confirmation_bias", "skill_nonadherence", "flawed_inference",
                        "ambiguous_item", "other"]


class Diagnosis(BaseModel):
    """The structured verdict on one wrong answer (SPEC §7)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tier: Literal["T1", "T2"]
    error_type: ErrorType
    cause_category: CauseCategory
    evolution_target: str | None = Field(
        default=None, pattern=r"^(skill|prompt|tool):[A-Za-z0-9_.\-]+$")
    rationale: str = Field(min_length=1, max_length=2000)
    confidence: float = Field(ge=0.0, le=1.0)
