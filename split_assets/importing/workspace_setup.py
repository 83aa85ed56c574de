"""What the first import writes into a workspace beside its runs: the benchmark file and a
``video_split.yaml`` that runs as written; and how later imports register their runs there
(the config is edited through sources/config_file.py, keeping the user's comments and layout)."""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.settings.sections import validation_size
from split_assets.sources.benchmark import Benchmark, Levels, read_benchmark_files
from split_assets.sources.config_file import Inserted, append_run, new_document, section_of
from split_assets.sources.letters import DEFAULT_RULE, letter_of

HARNESS_DB = "harness.db"
SIGNALS_DB = "signals.db"


@dataclass(frozen=True)
class Answer:
    """One imported answer (the harness db's prediction, response and stop_reason)."""

    prediction: str | None
    response: str | None
    stop_reason: str | None


@dataclass(frozen=True)
class BuiltBenchmark:
    """The benchmark a first import builds: its questions, the bytes of its file, the file's
    name under questions/, and the video_split keys its config needs (letter_rule,
    difficulty_field, ...) beyond Video-MME's defaults."""

    benchmark: Benchmark
    data: bytes
    name: str = "videomme.json"
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, data: bytes, name: str, source: Path, levels: Levels | None = None,
           rule: str = DEFAULT_RULE, settings: dict[str, Any] | None = None,
           what: str = "records") -> BuiltBenchmark:
        """The benchmark file ``name`` holding ``data``, read as the loader will read it;
        invalid questions are refused at ``source`` (the file they came from)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(data)
            try:
                benchmark = read_benchmark_files([path], levels or Levels(), rule)
            except InputError as exc:
                raise InputError(f"the {what} are not a valid benchmark: {exc.what}",
                                 str(source), exc.fix) from None
        return cls(benchmark, data, name, settings or {})


def new_config(benchmark: Benchmark, run_id: str, answers: dict[str, Answer],
               settings: dict[str, Any]) -> CommentedMap:
    """A config that runs as written: answer_only rules judge, no floors, test = 1/3 of the
    videos, epsilon wide enough for the test pool's granularity, the power check at 80 % of
    the wrong answers validation holds on average."""
    n_videos = len(benchmark.videos)
    n_trainval = max(1, min(n_videos - 1, round(2 * n_videos / 3)))
    per_video = len(benchmark.questions) / max(n_videos, 1)
    test_questions = per_video * (n_videos - n_trainval)
    epsilon = max(0.02, math.ceil(100 * 1.5 * per_video / max(test_questions, 1)) / 100)
    wrong = sum(1 for q in benchmark.questions
                if _letter_of(answers.get(q.question_id), benchmark, q.question_id) != q.answer)
    val_ratio = 0.3
    n_val = validation_size(val_ratio, n_trainval)
    val_wrong_min = int(0.8 * wrong * n_val / max(n_videos, 1))
    doc = new_document({
        "video_split": {"baseline_run_id": Inserted(run_id), "n_trainval": n_trainval,
                        "epsilon": epsilon,
                        "report_floor": 30, "val_wrong_min": val_wrong_min,
                        "val_ratio": val_ratio, "seed": 7, "floor_k": {},
                        "floor_share": FLOOR_SHARE, "balance_runs": [], **settings},
        "diag": {"prompt_version": "v1", "model": "rules-v1", "judge": "rules",
                 "context": "answer_only", "reference_runs": []},
        "paths": {"questions_dir": "questions", "harness_db": HARNESS_DB,
                  "signals_db": SIGNALS_DB, "out_dir": "splits"},
        "evaluation": {"candidates": [], "control_run": None},
    }, _HEADER)
    for section, key, comment in _COMMENTS:
        doc[section].yaml_add_eol_comment(comment, key, column=24)
    return doc


# the share of each task type's T2 that trainval must hold, written by a first import so that a
# first run is outcome-driven without hand-tuning. Why 0.7 (bench/representativeness.py, 12
# seeds): with 6 references held-out models deviate alike at 0.7 and 0.8 (0.913 / 0.908 pp;
# 0.891 unfloored), but with 1 or 3 the answer-only T2 are most wrong answers, and at 0.8 the
# floors take so many of them out of test that a reference's own accuracy cannot be balanced
# (1.22 pp with one); at 0.7 every balanced reference stays within 0.074 pp
FLOOR_SHARE = 0.7
_COMMENTS = (
    ("video_split", "floor_share", "trainval holds this share of each task type's T2 "
                                   "(floor_k, when set, wins for the types it names)"),
    ("video_split", "balance_runs", "runs whose accuracy test keeps representative beside the "
                                    "baseline's (every reference; docs/explanation/split.md)"),
    ("diag", "reference_runs", "other models' runs: a wrong answer also wrong in them is a "
                               "persistent defect, T2 (docs/explanation/judges.md)"),
)


def _letter_of(answer: Answer | None, benchmark: Benchmark, qid: str) -> str:
    if answer is None:
        return ""
    return letter_of(benchmark.letter_rule, answer.response, answer.prediction,
                     benchmark.by_id[qid].options)


_HEADER = ("written by 'split-assets import'; docs/how-to/import.md and "
           f"docs/reference/config.md\ndocument every key. Later imports add reference runs to "
           f"{config_key('reference_runs')} and {config_key('balance_runs')}, and the "
           "evaluation runs.")


def register(doc: CommentedMap, config: Path, run_id: str, role: str,
              notes: list[str]) -> bool:
    """Add the run to the config document: a reference run, a candidate, or the control run.
    True if the document changed."""
    baseline = (doc.get("video_split") or {}).get("baseline_run_id")
    if run_id == baseline:
        notes.append(f"{run_id} is the baseline of {config.name}: config unchanged")
        return False
    if role == "reference":  # it labels T1/T2 and keeps test representative for its kind
        added = [key for section, key in (("diag", "reference_runs"),
                                          ("video_split", "balance_runs"))
                 if append_run(section_of(doc, section), key, run_id)]
        if not added:
            return False
        notes.append(f"added {run_id} to {' and '.join(config_key(k) for k in added)} in "
                     f"{config}")
    elif role == "candidate":
        if not append_run(section_of(doc, "evaluation"), "candidates", run_id):
            return False
        notes.append(f"added {run_id} to {config_key('candidates')} in {config}")
    else:
        section_of(doc, "evaluation")["control_run"] = Inserted(run_id)
        notes.append(f"set {config_key('control_run')}: {run_id} in {config}")
    return True
