"""What the test server answers an optimizer's loop (``llm_server.default_content``): DSPy's
task calls in its ChatAdapter format (``[[ ## field ## ]]`` markers) or its JSONAdapter's JSON,
GEPA's reflection calls (DSPy 3.4's ``new_instruction`` JSON, and gepa's own ``` template), with
plausible content: a program's answer is one of the question's option letters, chosen from the
instruction and the question (another instruction, another answer -- so an optimizer sees
scores move), and a new instruction is the current one with one more lesson drawn from the
feedback it was shown.

``request_kind(body)`` tells a request log's entries apart: ``judge``, ``task`` or
``reflection``."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]")
OUTPUTS = re.compile(r"Your output fields are:\n((?:\d+\. `\w+`.*\n?)+)")
OUTPUT_NAME = re.compile(r"\d+\. `(\w+)`")
GEPA_TEMPLATE = "I provided an assistant with the following instructions"
CATEGORY = re.compile(r"(?:defect|cause) category (\w+)")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p)
                       for p in content)
    return "" if content is None else str(content)


def _messages(body: dict) -> tuple[str, str]:
    """The system text and the last user text."""
    system = user = ""
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "system":
            system += _text(m.get("content"))
        elif m.get("role") == "user":
            user = _text(m.get("content"))
    return system, user


def request_kind(body: dict) -> str:
    """``reflection`` (an optimizer asks for a new instruction), ``task`` (a DSPy program's
    call) or ``judge`` (anything else: the split's own judge)."""
    system, user = _messages(body)
    if "new_instruction" in system or GEPA_TEMPLATE in user:
        return "reflection"
    if "[[ ## " in system or "[[ ## " in user:
        return "task"
    return "judge"


def sections(text: str) -> dict[str, str]:
    """The ``[[ ## name ## ]]`` sections of a message, by name."""
    parts = FIELD.split(text)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def program_reply(body: dict) -> str | None:
    """The reply to an optimizer's call, or None for a call that is not one (the judge's)."""
    kind = request_kind(body)
    if kind == "judge":
        return None
    system, user = _messages(body)
    if kind == "reflection":
        return _reflection(system, user)
    found = OUTPUTS.search(system)
    names = OUTPUT_NAME.findall(found.group(1)) if found else ["answer"]
    values = {name: _value(name, system, user) for name in names}
    if "Outputs will be a JSON object" in system or "Respond with a JSON object" in user:
        return json.dumps(values)
    return "".join(f"[[ ## {n} ## ]]\n{v}\n\n" for n, v in values.items()) + \
        "[[ ## completed ## ]]"


def _value(name: str, system: str, user: str) -> str:
    given = sections(user)
    if name != "answer":
        return f"Reading the question against the video's context lines: {name}."
    options = given.get("options", "")
    try:
        count = len(json.loads(options))
    except (ValueError, TypeError):
        count = len([line for line in options.splitlines() if line.strip()]) or 4
    instruction = system.split("your objective is:", 1)[-1]
    digest = hashlib.sha256((instruction + given.get("question", "")).encode()).digest()
    return "ABCDEFGHIJ"[digest[0] % max(1, min(count, 10))]


def _reflection(system: str, user: str) -> str:
    if GEPA_TEMPLATE in user:  # gepa's own template: the instruction between ``` fences
        current = user.split("```", 2)[1].strip() if user.count("```") >= 2 else ""
        return f"```\n{_improved(current, user)}\n```"
    current = sections(user).get("current_instruction", "")
    return json.dumps({"new_instruction": _improved(current, user)})


def _improved(current: str, shown: str) -> str:
    categories = CATEGORY.findall(shown)
    focus = max(sorted(set(categories)), key=categories.count) if categories else "evidence"
    lessons = current.count("Lesson ") + 1
    return (f"{current.strip()}\nLesson {lessons}: the judge's diagnoses point at {focus}; "
            "read every timestamped line of the video context that bears on the question "
            "before choosing one option letter.")
