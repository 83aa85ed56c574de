"""Letter extraction follows Video-MME's scorer exactly, quirks included."""

import pytest

from split_assets.sources.letters import extract_letter


@pytest.mark.parametrize(("raw", "letter"), [
    ("C", "C"),
    ("The best answer is D.", "D"),
    ("The answer is (B)", "B"),
    ("  The correct answer is A  ", "A"),
    ("Best option: C", "C"),
    ("b) lowercase is not a letter", ""),
    ("", ""),
    ("I cannot determine this from the video frames that were provided to me here", ""),
    # The scorer takes the first capital A-D anywhere: "After" yields "A".
    ("After reviewing, (C)", "A"),
    ("one two three four five six seven eight nine ten eleven D", "D"),
])
def test_extract_letter_matches_videomme_scorer(raw: str, letter: str) -> None:
    assert extract_letter(raw) == letter


def test_prediction_used_when_raw_response_empty() -> None:
    assert extract_letter("", "B") == "B"
    assert extract_letter(None, "The answer is C") == "C"
