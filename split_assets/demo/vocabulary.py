"""Word lists, reply templates and text helpers of the demo generator.

Every text of the demo workspace (captions, questions, options, model replies, traces) is built
from these templates; none comes from the real benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence

# --------------------------------------------------------------------------------------------
# Captions and questions
# --------------------------------------------------------------------------------------------

VERBS: tuple[tuple[str, str, str], ...] = (
    ("pick up", "picks up", "picking up"),
    ("hold up", "holds up", "holding up"),
    ("point at", "points at", "pointing at"),
    ("examine", "examines", "examining"),
    ("carry", "carries", "carrying"),
    ("put down", "puts down", "putting down"),
    ("hand over", "hands over", "handing over"),
    ("wipe", "wipes", "wiping"),
    ("show", "shows", "showing"),
    ("turn over", "turns over", "turning over"),
)
COLORS: tuple[str, ...] = (
    "red",
    "blue",
    "green",
    "yellow",
    "white",
    "black",
    "orange",
    "silver",
    "brown",
    "purple",
    "grey",
    "pink",
)
COUNTABLES: tuple[str, ...] = (
    "people",
    "chairs",
    "lamps",
    "bottles",
    "flags",
    "windows",
    "books",
    "cups",
    "balloons",
    "bags",
)
NUMBER_WORDS: tuple[str, ...] = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
SIGN_TEXTS: tuple[str, ...] = (
    "EXIT",
    "OPEN DAILY",
    "PLATFORM 4",
    "NO PARKING",
    "FRESH BREAD",
    "SALE 50% OFF",
    "ROOM 204",
    "FINISH",
    "GATE B",
    "CAFÉ LUMIÈRE",
    "WELCOME",
    "BUS 12",
    "STAFF ONLY",
    "LIVE",
    "SCORE 2-1",
    "ACT II",
    "TICKETS",
    "QUIET PLEASE",
    "CHAPTER 3",
    "MENU DU JOUR",
    "SALIDA",
    "出口",
    "AUSGANG",
    "LAP 7 OF 10",
)
SURFACES: tuple[str, ...] = ("sign", "banner", "screen", "board", "poster")
REASONS: tuple[str, ...] = (
    "To show it to the audience",
    "To make room for the next step",
    "To check whether it is damaged",
    "To hand it to another person",
    "To demonstrate how it works",
    "To put it back where it belongs",
    "To compare it with a similar item",
    "To prepare for the next scene",
    "Because someone off camera asked for it",
    "To protect it from the rain",
    "To keep it away from the children",
    "To prove that nothing is hidden inside",
)
WHEN_OPTIONS: tuple[str, ...] = (
    "At the very beginning of the video",
    "Around the middle of the video",
    "Near the end of the video",
    "Several times throughout the video",
)
RELATIONS: tuple[str, ...] = (
    "To the left of",
    "To the right of",
    "Directly behind",
    "In front of",
    "Above",
)
YOUTUBE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

# --------------------------------------------------------------------------------------------
# Model replies and thoughts (traces)
# --------------------------------------------------------------------------------------------

# Every reply must give its letter under Video-MME's scorer, which takes the first capital A-D
# anywhere: "After reviewing..." would read as "A".
REPLIES = (
    "The best answer is {L}.",
    "{L}",
    "The answer is ({L}).",
    "Best option: ({L})",
    "The correct option is {L}.",
    "{L}. {T}",
)
START_THOUGHTS = (
    "The question asks about {focus}. I should find the segment where this happens.",
    "I need to locate the part of the video showing {focus} before looking at the options.",
    "Let me look at the segment captions to find {focus}.",
    "First find where {focus} appears, then check the options against that part.",
)
MID_THOUGHTS = (
    "This looks like the right part of the video; {focus} are both mentioned here.",
    "The caption mentions {focus}. Let me check the details before deciding.",
    "Found the scene. I will compare it with each option.",
)
#: Truncated replies of a run that stopped with a parse error.
PARSE_ERROR_REPLIES: tuple[str, ...] = (
    "I think the relevant part is in the second segment but I need to look",
    '{"tool": "open_node", "args": {"node_id": ',
    "<tool_call>open_node</tool_call",
)
#: Replies of a harness error (an empty reply or the harness's traceback).
ERROR_REPLIES: tuple[str, ...] = (
    "",
    "Traceback (most recent call last):\n"
    '  File "harness/run.py", line 212, in call_model\n'
    "    response = client.chat(messages, timeout=120)\n"
    "TimeoutError: model call exceeded 120 s",
    "Traceback (most recent call last):\n"
    '  File "harness/tools.py", line 88, in open_node\n'
    "    frames = store.load(node_id)\n"
    "OSError: [Errno 104] peer reset the socket",
)

# --------------------------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------------------------


def cap(text: str) -> str:
    """``text`` with its first character upper-cased."""
    return text[:1].upper() + text[1:]


def article(word: str) -> str:
    """The indefinite article of ``word`` ("a" or "an")."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def synopsis(topic: str, cast: Sequence[str], places: Sequence[str]) -> str:
    """The one-sentence summary of a video (its root caption, and a synopsis option)."""
    where = places[0] if len(places) == 1 else ", ".join(places[:-1][:2]) + " and " + places[-1]
    return f"{cap(topic)} featuring {cast[0]}, {cast[1]} and {cast[2]}, filmed {where}"
