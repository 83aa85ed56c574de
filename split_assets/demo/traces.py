"""Agent traces and raw replies of the baseline run (one trace per question).

A trace is a list of ``(kind, content)`` steps (kinds: thought, tool_call, observation,
answer); its shape follows the answer's planted mechanism, e.g. a missed-evidence answer opens
only nodes outside the evidence spans.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from split_assets.demo.figures import LETTERS, STEP_LIMIT_OPENS
from split_assets.demo.model import Node, Question, overlaps, secs
from split_assets.demo.sampling import pick, sample
from split_assets.demo.skills import REQUIRED_TOOL
from split_assets.demo.vocabulary import (
    ERROR_REPLIES,
    MID_THOUGHTS,
    PARSE_ERROR_REPLIES,
    REPLIES,
    START_THOUGHTS,
)

Steps = list[tuple[str, dict[str, Any]]]


def _option_text(q: Question, letter: str) -> str:
    return q.options[LETTERS.index(letter)].split(". ", 1)[1]


def _focus_phrase(q: Question) -> str:
    leaf = q.focus
    assert leaf is not None
    return f"{leaf.subject} and the {leaf.noun}"


def _open(node: Node) -> Steps:
    return [
        ("tool_call", {"tool": "open_node", "args": {"node_id": node.node_id}}),
        (
            "observation",
            {"text": f"[{secs(node.start)}-{secs(node.end)} s] {node.caption}"},
        ),
    ]


def _tool(q: Question, tool: str, node: Node) -> Steps:
    leaf = q.focus
    assert leaf is not None
    if tool == "count_objects":
        n = leaf.count_n if node is leaf or leaf in node.children else max(0, leaf.count_n - 2)
        return [
            (
                "tool_call",
                {
                    "tool": "count_objects",
                    "args": {"node_id": node.node_id, "object": leaf.countable},
                },
            ),
            ("observation", {"text": f"Detected {n} {leaf.countable} in {node.node_id}."}),
        ]
    if tool == "read_text":
        return [
            ("tool_call", {"tool": "read_text", "args": {"node_id": node.node_id}}),
            ("observation", {"text": f'Recognized text in {node.node_id}: "{leaf.sign}"'}),
        ]
    # search_captions
    query = f"{leaf.subject} {leaf.verb[1]} {leaf.noun}"
    return [
        ("tool_call", {"tool": "search_captions", "args": {"query": query}}),
        (
            "observation",
            {
                "text": f"Top match {leaf.node_id} [{secs(leaf.start)}-{secs(leaf.end)} s]: "
                f"{leaf.caption}"
            },
        ),
    ]


def _evidence_node(rng: np.random.Generator, q: Question) -> Node:
    leaf = q.focus
    assert leaf is not None
    if float(rng.random()) < 0.2:
        for seg in q.video.segments:
            if leaf in seg.children:
                return seg
    return leaf


def _non_evidence_nodes(q: Question) -> list[Node]:
    nodes = list(q.video.segments) + list(q.video.leaves)
    return [n for n in nodes if not overlaps(n.start, n.end, q.spans)]


def build_trace(rng: np.random.Generator, q: Question) -> Steps:
    """The trace of ``q``; sets ``q.raw_response`` to the run's reply."""
    focus = _focus_phrase(q)
    steps: Steps = [("thought", {"text": pick(rng, START_THOUGHTS).format(focus=focus)})]
    if q.mechanism.startswith("infra"):
        return steps + _infra_steps(rng, q)
    if q.mechanism == "step_limit":
        return steps + _step_limit_steps(rng, q)
    if q.mechanism == "missed_evidence":
        steps += _missed_evidence_steps(rng, q)
    else:  # correct, lapse, skill_nonadherence
        steps += _answered_steps(rng, q, focus)
    letter = q.prediction
    reply = pick(rng, REPLIES).format(L=letter, T=_option_text(q, letter))
    q.raw_response = reply
    steps.append(("answer", {"letter": letter, "text": reply}))
    return steps


def _infra_steps(rng: np.random.Generator, q: Question) -> Steps:
    """A harness failure: one segment opened (maybe without its observation), no answer."""
    steps = _open(pick(rng, q.video.segments))
    if float(rng.random()) < 0.5:
        steps.pop()
    q.raw_response = _infra_reply(rng, q)
    return steps


def _step_limit_steps(rng: np.random.Generator, q: Question) -> Steps:
    """Random nodes opened until the step limit, then a forced guess."""
    nodes = list(q.video.segments) + list(q.video.leaves)
    steps: Steps = []
    for _ in range(STEP_LIMIT_OPENS):
        steps += _open(pick(rng, nodes))
    q.raw_response = (
        f"Reached the step limit ({STEP_LIMIT_OPENS} tool calls) without a final answer. "
        f"Forced guess: ({q.prediction})"
    )
    return steps


def _missed_evidence_steps(rng: np.random.Generator, q: Question) -> Steps:
    """Only nodes outside the evidence spans opened, then a guess."""
    required = REQUIRED_TOOL.get(q.task_type)
    focus_leaf = q.focus
    assert focus_leaf is not None
    letter = q.prediction
    steps: Steps = []
    candidates = _non_evidence_nodes(q)
    n_open = min(len(candidates), int(rng.integers(1, 4)))
    search = required == "search_captions" or float(rng.random()) < 0.3
    if search and n_open < 3:
        steps += _tool(q, "search_captions", focus_leaf)
    opened = sample(rng, candidates, n_open)
    for node in opened:
        steps += _open(node)
    if required in ("count_objects", "read_text") and n_open < 3 and float(rng.random()) < 0.5:
        steps += _tool(q, required, opened[-1])
    steps.append(
        (
            "thought",
            {
                "text": "The opened parts do not show it directly; "
                f"option {letter} seems the most plausible."
            },
        )
    )
    return steps


def _answered_steps(rng: np.random.Generator, q: Question, focus: str) -> Steps:
    """The evidence opened (with the skill's required tool unless the mechanism is skill
    non-adherence), then the reasoning toward the predicted letter."""
    required = REQUIRED_TOOL.get(q.task_type)
    focus_leaf = q.focus
    assert focus_leaf is not None
    letter = q.prediction
    steps: Steps = []
    use_required = required is not None and q.mechanism != "skill_nonadherence"
    search = use_required if required == "search_captions" else float(rng.random()) < 0.3
    if search:
        steps += _tool(q, "search_captions", focus_leaf)
    candidates = _non_evidence_nodes(q)
    if candidates and float(rng.random()) < 0.3:
        steps += _open(pick(rng, candidates))
    node = _evidence_node(rng, q)
    steps += _open(node)
    if float(rng.random()) < 0.35:
        steps.append(("thought", {"text": pick(rng, MID_THOUGHTS).format(focus=focus)}))
    if use_required and required in ("count_objects", "read_text"):
        steps += _tool(q, required, node)
    if q.mechanism == "skill_nonadherence":
        reason = f"The caption is enough to answer; option {letter} fits it."
    elif q.correct:
        reason = f"This segment shows {focus}, which supports option {letter}."
    else:
        reason = f"This segment shows {focus}; I read it as option {letter}."
    if float(rng.random()) < 0.8:
        steps.append(("thought", {"text": reason}))
    return steps


def _infra_reply(rng: np.random.Generator, q: Question) -> str:
    if q.stop_reason == "parse_error":
        return pick(rng, PARSE_ERROR_REPLIES)
    return error_reply(rng)


def error_reply(rng: np.random.Generator) -> str:
    """The reply of a harness error (also the failed first attempt of a retried question)."""
    return pick(rng, ERROR_REPLIES)
