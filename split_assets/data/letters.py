"""The option letter of an answer, exactly as Video-MME's own scorer extracts it."""

from __future__ import annotations

import re

# Video-MME's own scorer removes these phrases before looking for a letter.
_ANSWER_PREFIXES = (
    "The best answer is", "The correct answer is", "The answer is", "The answer",
    "The best option is", "The correct option is", "Best answer:", "Best option:",
)
_LETTER = re.compile(r"[ABCD]")


def extract_letter(raw_response: str | None, prediction: str | None = None) -> str:
    """The option letter of a response, exactly as Video-MME's scorer extracts it ('' if none)."""
    text = raw_response if raw_response else (prediction or "")
    text = text.strip()
    for prefix in _ANSWER_PREFIXES:
        text = text.replace(prefix, "")
    found = _LETTER.search(text)
    if len(text.split()) > 10 and found is None:
        return ""
    return found.group(0) if found else ""
