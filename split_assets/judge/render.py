"""Rendering the judge prompts for one case: ``{{placeholder}}`` substitution, nothing clever.

How the seven templates combine into calls: ONE call per diagnosed question. The system message
is ``span_eval_system``; the user message is ``defect_vs_lapse`` followed by each sub-analysis
template (``missed_nodes``, ``evidence_sufficiency``, ``skill_adherence``, ``confirmation_bias``,
``reasoning_sub`` in ``full`` context; ``reasoning_sub`` alone in ``answer_only``) as numbered
sections, and a closing instruction to answer with one final JSON diagnosis. In ``full`` context
the long values (trace, opened and evidence nodes, skills) are shown once, in a Context section
before the analyses, and the analysis templates refer to it instead of repeating them (the
templates were written to stand alone; repeating the trace five times would triple the prompt
tokens). One call keeps the cost at one request per wrong answer (plus at most one repair call
for invalid output).
"""

from __future__ import annotations

import re

import orjson

from split_assets.judge.base import JudgeCase

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
    lines, opened = [], []
    for step in case.trace:
        content = step.content
        lines.append(f"{step.step}. [{step.kind}] "
                     f"{orjson.dumps(content, option=orjson.OPT_SORT_KEYS).decode()}")
        if (step.kind == "tool_call" and isinstance(content, dict)
                and content.get("tool") == open_tool):
            node_id = str((content.get("args") or {}).get("node_id"))
            if node_id in nodes and node_id not in opened:
                opened.append(node_id)
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


# The long context values are shown once, in a Context section, and each analysis template
# refers to them there; short values (e.g. "(none opened)") stay inline.
SHARED = (("opened_nodes", "Nodes the agent opened (id, time span, caption)"),
          ("evidence_nodes", "Nodes overlapping the labelled evidence spans"),
          ("skills", "Skills that apply to this task type"),
          ("trace", "Agent's trace"))
INLINE_MAX_CHARS = 200


def render_messages(templates: dict[str, str], case: JudgeCase, context: str,
                    open_tool: str = OPEN_TOOL) -> list[dict[str, str]]:
    """The chat messages of one diagnosis call."""
    values = case_values(case, open_tool)
    sections = FULL_SECTIONS if context == "full" else ANSWER_ONLY_SECTIONS
    parts = [fill(templates["defect_vs_lapse"], values)]
    section_values = values
    if context == "full":
        blocks, section_values = [], dict(values)
        for name, title in SHARED:
            blocks.append(f"### {title}\n{values[name]}")
            if len(values[name]) > INLINE_MAX_CHARS:
                section_values[name] = f"(see \"{title}\" in the Context section above)"
        parts.append("## Context (shared by the analyses below)\n\n" + "\n\n".join(blocks))
    for i, name in enumerate(sections, start=1):
        parts.append(f"## Analysis {i}: {name}\n\n{fill(templates[name], section_values)}")
    parts.append(CLOSING)
    return [{"role": "system", "content": fill(templates["span_eval_system"], values)},
            {"role": "user", "content": "\n\n---\n\n".join(parts)}]
