"""Skill documents of the demo workspace (written to ``store/skills/<SKILLS_VERSION>/*.md``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Skill:
    name: str
    applies_to: tuple[str, ...]
    required_tool: str | None
    title: str
    body: str


SKILLS: tuple[Skill, ...] = (
    Skill(
        name="counting",
        applies_to=("Counting Problem",),
        required_tool="count_objects",
        title="Counting objects",
        body=(
            "Captions round numbers and merge repeated objects, so never answer a counting\n"
            "question from a caption alone.\n\n"
            "1. Locate the segment the question refers to (`search_captions`, then `open_node`).\n"
            "2. Call `count_objects` on every leaf of that segment, with the object noun from the\n"
            "   question in singular or plural form exactly as the question spells it.\n"
            "3. If the question asks for a total over the video, sum the per-leaf counts but\n"
            "   do not double count an object that stays on screen across adjacent leaves.\n"
            "4. If the counts disagree with every option, re-count the leaf with the largest\n"
            "   count before choosing the closest option.\n"
        ),
    ),
    Skill(
        name="ocr",
        applies_to=("OCR Problems",),
        required_tool="read_text",
        title="Reading on-screen text",
        body=(
            "On-screen text (signs, banners, scoreboards, subtitles) is usually missing from or\n"
            "paraphrased in captions.\n\n"
            "- Open the node where the text is shown, then call `read_text` on it; quote the\n"
            "  recognized string verbatim when comparing it with the options.\n"
            "- Options often differ by one word, a digit or an accent: compare character by\n"
            "  character, and ignore case only.\n"
            "- Text in another script is returned untranslated; match it against the options\n"
            "  as is.\n"
        ),
    ),
    Skill(
        name="temporal",
        applies_to=("Temporal Reasoning", "Temporal Perception"),
        required_tool="search_captions",
        title="Ordering and locating events in time",
        body=(
            "Questions about *when* something happens, or what happens before or after an event,\n"
            "need the positions of the events on the timeline, not just their descriptions.\n\n"
            "1. Call `search_captions` with the event named in the question to get every matching\n"
            "   leaf with its start and end time.\n"
            "2. Open the best matching leaf and its neighbours to confirm the order of events.\n"
            "3. For 'beginning / middle / end' questions, compare the leaf midpoint with the\n"
            "   video duration in thirds.\n"
        ),
    ),
    Skill(
        name="spatial",
        applies_to=("Spatial Perception", "Spatial Reasoning"),
        required_tool=None,
        title="Spatial relations",
        body=(
            "- Relations are given from the camera's point of view unless the question names\n"
            "  another viewpoint.\n"
            "- Open the leaf where both objects are visible at the same time; a relation read\n"
            "  from two different shots is not evidence.\n"
            "- Prefer the option that the caption states explicitly over one you infer.\n"
        ),
    ),
    Skill(
        name="evidence_first",
        applies_to=(
            "Action Reasoning",
            "Action Recognition",
            "Attribute Perception",
            "Information Synopsis",
            "Object Reasoning",
            "Object Recognition",
        ),
        required_tool=None,
        title="Evidence first",
        body=(
            "Ground every answer in a node you have opened.\n\n"
            "1. Read the root caption and the segment captions to find where the question's\n"
            "   subject appears.\n"
            "2. Open that segment and the relevant leaf before choosing an option; do not answer\n"
            "   from the root caption unless the question asks for a summary.\n"
            "3. Eliminate options that contradict the opened captions, then pick the option best\n"
            "   supported by them. If two remain, open the neighbouring leaves.\n"
        ),
    ),
)
#: Task type -> the tool its skill requires (task types whose skill requires none are absent).
REQUIRED_TOOL: dict[str, str] = {
    task_type: skill.required_tool
    for skill in SKILLS
    if skill.required_tool
    for task_type in skill.applies_to
}
