"""The option letter of an answer, by the rule of the benchmark's own scorer.

A workspace scores every run (baseline, references, candidates, control) with one rule,
``video_split.letter_rule``, so runs stay comparable. Each rule below is transcribed from the
harness's task code at a cited commit (lmms-eval @ 75571cfe0fa3, VLMEvalKit @ e8e78f05f308;
docs/research/issue26_*.md quote them). Where the harness draws a random letter (no letter in
the reply) a rule returns "": the reply holds no answer, and a coin flip is not reproducible.
A rule is a function of the reply and the question's options; "" means no letter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

# Video-MME's own scorer removes these phrases before looking for a letter.
_ANSWER_PREFIXES = (
    "The best answer is", "The correct answer is", "The answer is", "The answer",
    "The best option is", "The correct option is", "Best answer:", "Best option:",
)
_LETTER = re.compile(r"[ABCD]")
DEFAULT_RULE = "videomme"


def extract_letter(raw_response: str | None, prediction: str | None = None) -> str:
    """The option letter of a response, exactly as Video-MME's scorer extracts it ('' if none)."""
    return letter_of(DEFAULT_RULE, raw_response, prediction, ())


def letter_of(rule: str, raw_response: str | None, prediction: str | None,
              options: Sequence[str]) -> str:
    """The letter ``rule`` reads in the raw response (else the stored prediction)."""
    text = raw_response if raw_response else (prediction or "")
    return RULES[rule](text, tuple(options))


def _first_letter(text: str, prefixes: Sequence[str], pattern: str) -> str:
    """Strip, delete ``prefixes``, then the first match of ``pattern`` anywhere; "" when none
    or when more than ten words hold no letter."""
    text = text.strip()
    for prefix in prefixes:
        text = text.replace(prefix, "")
    found = re.search(pattern, text)
    if len(text.split()) > 10 and found is None:
        return ""
    return found.group(0) if found else ""


def videomme(text: str, options: Sequence[str]) -> str:
    """Video-MME's eval_your_results.py (and lmms-eval's videomme before 9ca4445d)."""
    return _first_letter(text, _ANSWER_PREFIXES, r"[ABCD]")


def longvideobench(text: str, options: Sequence[str]) -> str:
    """lmms-eval tasks/longvideobench/utils.py parse_multi_choice_response: Video-MME's
    prefixes, then the first capital A-E anywhere (a random letter when none: "" here)."""
    return _first_letter(text, _ANSWER_PREFIXES, r"[ABCDE]")


# VLMEvalKit utils/longvideobench.py: two commas are missing in its list, so two pairs are one
# string each, and 'Answer:' / 'Option:' are removed too
_VLMEVAL_LVB_PREFIXES = ("The best answer is", "The correct answer is", "The answer is",
                         "The answer", "The best option isThe correct option is",
                         "Best answer:Best option:", "Answer:", "Option:")


def vlmeval_longvideobench(text: str, options: Sequence[str]) -> str:
    """VLMEvalKit dataset/utils/longvideobench.py extract_characters_regex (its LLM fallback
    never sees the options, so a reply without A-E scores 0: "" here)."""
    return _first_letter(text, _VLMEVAL_LVB_PREFIXES, r"[ABCDE]")


_PHRASES = ("the answer is", "answer is", "the correct answer is", "correct answer is",
            "the best answer is", "best answer is", "the correct option is", "correct option is",
            "the best option is", "best option is", "the choice is", "choice is",
            "the correct choice is", "correct choice is", "i choose", "i select", "i pick",
            "my answer is", "my choice is", "옵션", "정답은", "답은", "답:", "答案是", "答案为",
            "选", "答えは")
_PRIORITY = {"start": 10, "end": 9, "phrase": 7, "parentheses": 6, "period": 5, "colon": 4,
             "right_paren": 3, "space": 2, "fallback": 0}


def mcq_extract(text: str, options: Sequence[str], choices: str = "ABCD") -> str:
    """lmms-eval tasks/_task_utils/mcq_extract.py extract_mcq_answer (MLVU since 9ca4445d):
    every format's last occurrence, the highest priority (then the latest) wins."""
    if not text.strip():
        return ""
    text = text.strip()
    for char in ",.!?;:'\"":
        text = text.strip(char)
    text = f" {text} "
    found: list[tuple[str, int, str]] = []
    for fmt, shape in (("parentheses", "({})"), ("period", "{}."), ("colon", "{}:"),
                       ("right_paren", "{})"), ("space", "{} ")):
        found += [(c, text.rfind(shape.format(c)), fmt) for c in choices
                  if shape.format(c) in text]
    lower = text.lower()
    for phrase in _PHRASES:
        at = lower.find(phrase)
        if at != -1:
            found += [(c, text.find(c, at + len(phrase)), "phrase") for c in choices
                      if text.find(c, at + len(phrase)) != -1]
    bare = text.strip()
    found += [(c, 0, "start") for c in choices
              if bare.startswith(c) and (len(bare) == 1 or not bare[1].isalpha())]
    found += [(c, len(text) - 1, "end") for c in choices
              if bare.endswith(c) and (len(bare) == 1 or not bare[-2].isalpha())]
    if not found:
        found = [(c, text.rfind(c), "fallback") for c in choices if c in text]
    if not found:
        return ""
    found.sort(key=lambda x: (_PRIORITY[x[2]], x[1]), reverse=True)
    return found[0][0]


_PUNCT = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@",
          "`", ",", "?", "!")
_PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")
_COMMA_STRIP = re.compile(r"(\d)(,)(\d)")


def _vqa_punctuation(text: str) -> str:
    out = text
    for p in _PUNCT:
        if (p + " " in text or " " + p in text) or _COMMA_STRIP.search(text) is not None:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return _PERIOD_STRIP.sub("", out, count=32)  # the harness passes re.UNICODE (32) as count


def mvbench(text: str, options: Sequence[str]) -> str:
    """lmms-eval tasks/mvbench/utils.py mcq_acc's process(): "X. text" gives X; else, after
    VQA punctuation removal and lower-casing, the first standalone a-e."""
    match = re.match(r"^([A-E])\.\s*(.+)$", text.strip(), re.IGNORECASE)
    if match:
        return match.group(1).upper()
    text = _vqa_punctuation(text.replace("\n", " ").replace("\t", " ").strip())
    text = text.strip("'").strip('"').strip(")").strip("(").strip().lower()
    match = re.search(r"\b([A-E])\b", text, re.IGNORECASE)
    return match.group(1).upper() if match else ""


def _can_infer(text: str, options: Sequence[str]) -> str:
    """VLMEvalKit utils/matching_util.py can_infer: one option letter among the last five
    tokens, or "answer is X", else exactly one option's text inside the reply."""
    letters = [chr(ord("A") + i) for i in range(len(options))]
    if "Failed to obtain answer via API" in text:
        return ""
    tokens = re.sub(r"[.()\[\],:;!*#{}]", " ", text).split()
    named = [c for c in letters if c in tokens]
    if len(named) == 1 and tokens.index(named[0]) > len(tokens) - 5:
        return named[0]
    match = re.search(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**", text)
    if match and match.group(1).upper() in letters:
        return match.group(1).upper()
    lower = text.lower()
    if len(lower) > 2 * sum(len(o) for o in options):
        return ""
    hits = [c for c, o in zip(letters, options, strict=True) if o.lower() in lower]
    return hits[0] if len(hits) == 1 else ""


def vlmeval_mvbench(text: str, options: Sequence[str]) -> str:
    """VLMEvalKit dataset/utils/mvbench.py check_ans_with_model: the reply's first token is
    "(x)", "x)", "(x" or "x" for an option letter x (periods dropped), or holds "(x)"; else
    can_infer. Not reproduced: its LLM judge (chatgpt-0125 by default, when an API key works;
    a score table does not say whether it ran), and a first token of "(" or ")", which it
    counts right whatever the answer."""
    letters = "abcde"[:len(options)]
    first = text.lower().strip().split(" ")[0]
    match = (re.fullmatch(r"\(?([a-z])\)?", first.replace(".", ""))
             or re.search(r"\(([a-z])\)", first))
    if match and match.group(1) in letters:
        return match.group(1).upper()
    return _can_infer(text, options)


def _mmmu_candidates(text: str, letters: Sequence[str], options: Sequence[str],
                     first_wins: bool) -> tuple[list[str], bool]:
    """The candidates of MMMU's parse_multi_choice_response: "(X)", "X ", "X." (NExT-QA:
    the first kind found; EgoSchema: all three), else option texts in a reply over 5 words."""
    found: list[str] = []
    for shape in ("({})", "{} ", "{}."):
        if not (first_wins and found):
            found += [shape.format(c) for c in letters if shape.format(c) in text]
    if found or len(text.split()) <= 5:
        return found, True
    return [c for c, o in zip(letters, options, strict=False) if o.strip().lower()
            in text.lower()], False


def _mmmu(text: str, options: Sequence[str], first_wins: bool) -> str:
    letters = "ABCDE"
    for char in ",.!?;:'":
        text = text.strip(char)
    text = f" {text} "
    found, by_letter = _mmmu_candidates(text, letters, options, first_wins)
    if not found:
        return ""  # the harness draws a random letter
    if by_letter and first_wins:  # NExT-QA: the latest " X " / "(X)"; ties: the first
        shape = "({})" if found[0].startswith("(") else " {} "
        spots = [text.rfind(shape.format(c.strip("(). "))) for c in found]
    elif by_letter:  # EgoSchema: the earliest of any kind
        spots = [-text.rfind(c) for c in found]
    else:
        lower = text.lower()
        spots = [lower.rfind(options["ABCDE".index(c)].strip().lower()) for c in found]
        spots = spots if first_wins else [-s for s in spots]
    best = max(range(len(found)), key=lambda i: (spots[i], -i))
    return found[best].strip("(). ")


def nextqa(text: str, options: Sequence[str]) -> str:
    """lmms-eval tasks/nextqa/utils.py parse_multi_choice_response (MMMU's, first kind wins,
    the latest occurrence; a random letter when none: "" here)."""
    return _mmmu(text.strip(), options, first_wins=True)


def egoschema(text: str, options: Sequence[str]) -> str:
    """lmms-eval tasks/egoschema/utils.py parse_multi_choice_response (all three kinds, the
    earliest occurrence; a random letter when none: "" here)."""
    return _mmmu(text.strip(), options, first_wins=False)


def tempcompass(text: str, options: Sequence[str]) -> str:
    """lmms-eval tasks/tempcompass/utils.py (and VLMEvalKit's eval_rule_multi_choice): the
    reply is an option ("B. right"), a letter A-D, or starts with "X." / "X)"; anything
    else goes to a GPT-3.5 judge, which no rule reproduces: "" here."""
    text = text.strip()
    if text in options and re.match(r"^[A-Z][.)]", text):
        return text[0]
    if text in ("A", "B", "C", "D"):
        return text
    match = re.match(r"^([ABCD])[.)]", text)
    return match.group(1) if match else ""


def perceptiontest(text: str, options: Sequence[str]) -> str:
    """lmms-eval tasks/perceptiontest/val/utils.py: the first standalone capital A-D."""
    match = re.search(r"\b([A-D])\b", text.strip())
    return match.group(1) if match else ""


LetterRule = Literal["videomme", "longvideobench", "vlmevalkit-longvideobench", "mcq-extract",
                     "mvbench", "vlmevalkit-mvbench", "nextqa", "egoschema", "tempcompass",
                     "perceptiontest"]
RULES: dict[str, Callable[[str, Sequence[str]], str]] = {
    "videomme": videomme,
    "longvideobench": longvideobench,
    "vlmevalkit-longvideobench": vlmeval_longvideobench,
    "mcq-extract": mcq_extract,
    "mvbench": mvbench,
    "vlmevalkit-mvbench": vlmeval_mvbench,
    "nextqa": nextqa,
    "egoschema": egoschema,
    "tempcompass": tempcompass,
    "perceptiontest": perceptiontest,
}
