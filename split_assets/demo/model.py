"""The generator's internal model: caption tree nodes, videos and questions.

Times are integers in tenths of a second (exact arithmetic); :func:`secs` converts them for the
written files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    """A node of a caption tree (root, segment or leaf); leaves carry their scene details."""

    node_id: str
    start: int  # tenths of a second
    end: int
    caption: str
    children: list[Node] = field(default_factory=list)
    # Scene details (leaves only).
    subject: str = ""
    verb: tuple[str, str, str] = ("", "", "")
    color: str = ""
    noun: str = ""
    place: str = ""
    count_n: int = 0
    countable: str = ""
    sign: str = ""
    surface: str = ""


@dataclass
class Video:
    """A video of the benchmark, its caption tree and its questions."""

    index: int
    video_id: str
    duration: str
    domain: str
    sub_category: str
    youtube_id: str
    task_types: list[str]
    duration_t: int = 0
    synopsis: str = ""
    root: Node | None = None
    leaves: list[Node] = field(default_factory=list)
    segments: list[Node] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass
class Question:
    """A question, its evidence, and the baseline run's answer, reply and trace."""

    question_id: str
    video: Video
    task_type: str
    answer: str
    text: str = ""
    options: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    focus: Node | None = None
    correct: bool = True
    prediction: str = ""
    mechanism: str = "correct"
    tier: str = ""
    stop_reason: str = "answer"
    raw_response: str = ""
    retried: bool = False
    trace: list[tuple[str, dict[str, Any]]] = field(default_factory=list)



def secs(t: int) -> float:
    """Tenths of a second as seconds."""
    return t / 10


def overlaps(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    """Whether ``[start, end)`` overlaps any of ``spans``."""
    return any(start < s_end and s_start < end for s_start, s_end in spans)
