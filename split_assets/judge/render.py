"""Rendering the judge prompts for one case, laid out for providers' prompt caches.

How the seven templates combine into calls: ONE call per diagnosed question. Everything that
does not depend on the case comes first and is identical in every call of a context: the system
message (``span_eval_system``), then the user message's instructions -- ``defect_vs_lapse``
followed by each sub-analysis template (``missed_nodes``, ``evidence_sufficiency``,
``skill_adherence``, ``confirmation_bias``, ``reasoning_sub`` in ``full`` context;
``reasoning_sub`` alone in ``answer_only``) as numbered sections and a closing instruction. In
that text each ``{{placeholder}}`` reads ``<placeholder>``: a reference to the case's value,
given once, in a tagged block, in "The case" section that ends the message. So a provider's
automatic prefix cache (OpenAI, vLLM, Anthropic-compatible proxies) reuses everything up to the
first case value, and no value is repeated (the templates were written to stand alone; inlining
the trace in five of them would triple the prompt tokens). One call keeps the cost at one
request per wrong answer (plus at most one repair call for invalid output).
"""

from __future__ import annotations

import re

import orjson

from split_assets.judge.base import JudgeCase
from split_assets.sources.trace_steps import opened_nodes

FULL_SECTIONS = ("missed_nodes", "evidence_sufficiency", "skill_adherence", "confirmation_bias",
                 "reasoning_sub")
ANSWER_ONLY_SECTIONS = ("reasoning_sub",)
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")
_NOT_AVAILABLE = "(not available: answer-only context)"
CLOSING = ("Work through the analyses above, then answer with ONE JSON object only: the final "
           "diagnosis of this wrong answer, in the schema of the system message.")


def templates_for(context: str) -> tuple[str, ...]:
    sections = FULL_SECTIONS if context == "full" else ANSWER_ONLY_SECTIONS
    return ("span_eval_system", "defect_vs_lapse", *sections)


def fill(template: str, values: dict[str, str]) -> str:
    """Substitute ``{{name}}``; unknown names are left as they are."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


OPEN_TOOL = "open_node"  # RulesJudgeConfig.open_tool's default


def case_values(case: JudgeCase, open_tool: str = OPEN_TOOL) -> dict[str, str]:
    """The placeholder values of one case; ``open_tool`` (``diag.rules.open_tool``, as the
    rules judge reads it) is the harness tool whose calls open a tree node."""
    q, p = case.question, case.prediction
    values = {
        "question": q.question, "options": "\n".join(q.options), "answer": q.answer,
        "response": p.raw_response or "", "predicted": p.letter or "(none)",
        "task_type": q.task_type, "difficulty": q.difficulty,
        "trace": _NOT_AVAILABLE, "opened_nodes": _NOT_AVAILABLE,
        "evidence_nodes": _NOT_AVAILABLE, "skills": _NOT_AVAILABLE,
    }
    if case.trace is None or case.tree is None:
        return values
    nodes = case.tree.nodes
    lines = [f"{step.step}. [{step.kind}] "
             f"{orjson.dumps(step.content, option=orjson.OPT_SORT_KEYS).decode()}"
             for step in case.trace]
    opened = dict.fromkeys(opened_nodes(case.trace, open_tool, nodes, q.question_id, q.video_id))
    values["trace"] = "\n".join(lines) or "(empty trace)"
    values["opened_nodes"] = "\n".join(_node_line(nodes[n]) for n in opened) or "(none opened)"
    if q.evidence_spans:
        hits = [n for n in sorted(nodes) if any(nodes[n].overlaps(a, b)
                                                for a, b in q.evidence_spans)]
        values["evidence_nodes"] = "\n".join(_node_line(nodes[n]) for n in hits) or "(none)"
    else:
        values["evidence_nodes"] = "(no evidence spans labelled)"
    skills = [s for s in case.skills if q.task_type in s.applies_to]
    values["skills"] = "\n\n".join(s.text for s in skills) or "(no skill applies to this task)"
    return values


def _node_line(node) -> str:  # noqa: ANN001 - TreeNode
    return f"{node.id} [{node.start_s:.1f}-{node.end_s:.1f} s] {node.caption}"


# The order of the case's values in "The case" (every placeholder a template may use)
VALUE_ORDER = ("task_type", "difficulty", "question", "options", "answer", "predicted",
               "response", "opened_nodes", "evidence_nodes", "skills", "trace")
CASE_HEADING = ("## The case\n\nThe values the instructions above refer to as <name>, each "
                "between <name> and </name>:")
LEGEND = ("The instructions below refer to the values of the case as <name> (for example "
          "<question>); the values follow in \"The case\" at the end of this message.")


def reference(template: str) -> str:
    """A template with each ``{{name}}`` written as the reference ``<name>``."""
    return _PLACEHOLDER.sub(lambda m: f"<{m.group(1)}>", template)


def used_values(templates: dict[str, str], context: str) -> tuple[str, ...]:
    """The case values the context's templates refer to, in VALUE_ORDER (unknown placeholders
    are left as written, as ``fill`` leaves them)."""
    names = {m.group(1) for name in templates_for(context) for m in
             _PLACEHOLDER.finditer(templates[name])}
    return tuple(n for n in VALUE_ORDER if n in names)


def static_prompt(templates: dict[str, str], context: str) -> tuple[str, str]:
    """(system message, the user message's case-independent head): the same in every call."""
    sections = FULL_SECTIONS if context == "full" else ANSWER_ONLY_SECTIONS
    parts = [LEGEND, reference(templates["defect_vs_lapse"])]
    for i, name in enumerate(sections, start=1):
        parts.append(f"## Analysis {i}: {name}\n\n{reference(templates[name])}")
    parts.append(CLOSING)
    head = "\n\n---\n\n".join(parts) + "\n\n---\n\n" + CASE_HEADING + "\n\n"
    return reference(templates["span_eval_system"]), head


def case_block(values: dict[str, str], names: tuple[str, ...]) -> str:
    """The case's values, each once, tagged with its name."""
    return "\n\n".join(f"<{n}>\n{values[n]}\n</{n}>" for n in names)


def render_messages(templates: dict[str, str], case: JudgeCase, context: str,
                    open_tool: str = OPEN_TOOL) -> list[dict[str, str]]:
    """The chat messages of one diagnosis call: the static prompt, then the case."""
    system, head = static_prompt(templates, context)
    values = case_values(case, open_tool)
    return [{"role": "system", "content": system},
            {"role": "user", "content": head + case_block(values, used_values(templates,
                                                                               context))}]
