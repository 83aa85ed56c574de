"""Which profile an import uses: ``--map FILE.yaml`` (a benchmark we did not build in),
``--benchmark NAME``, the lmms-eval task in the file names or the VLMEvalKit dataset in the
table's name, else the metric key of the first line. None: Video-MME
(importing/videomme_harnesses.py).

A map names the fields of the benchmark's records (lmms-eval's ``doc``, the rows given with
``--annotations``, or a VLMEvalKit table's columns)::

    benchmark: mybench              # the workspace's questions/mybench.json, the ids' prefix
    metric: mybench_score           # the per-sample key every lmms-eval line must carry
    verdict: mybench_score.correct  # optional: the harness's own 0/1 or true/false per line
    fields: {question_id: qid, video_id: video, question: question, options: options,
             answer: answer, answer_is: index, task_type: category, difficulty: duration}
    difficulty_edges: [120, 900]    # optional: cut a numeric difficulty into levels
    letter_rule: videomme           # one of the built-in rules (README: letter rules)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from split_assets.errors import InputError, UserError
from split_assets.importing.profiles import (
    PROFILES,
    FieldMap,
    Profile,
    profile_of_line,
    profile_of_task,
)
from split_assets.sources.letters import LetterRule


class _Fields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question_id: str | None = None
    video_id: str
    question: str
    options: str | list[str] | None = None
    answer: str
    answer_is: Literal["letter", "index", "text", "option"] = "letter"
    task_type: str | None = None
    difficulty: str | None = None
    drop_options: list[str] = Field(default_factory=lambda: ["N/A"])


class _Map(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    metric: str | None = None
    verdict: str | None = None
    fields: _Fields
    difficulty_edges: list[float] | None = None
    difficulty_levels: list[str] | None = None
    letter_rule: LetterRule = "videomme"


def load_map(path: Path) -> Profile:
    """The profile a --map file describes (one line naming the key when it is invalid)."""
    if not path.is_file():
        raise UserError(f"map file not found: {path}", "--map", "pass a YAML field map "
                        "(docs/how-to/other-benchmarks.md)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec = _Map.model_validate(raw)
    except UnicodeDecodeError:
        raise InputError("the map is not UTF-8 text", str(path), "save it as UTF-8") from None
    except yaml.YAMLError as exc:
        raise InputError(f"the map is not valid YAML: {exc}".splitlines()[0], str(path),
                         "fix the YAML syntax") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(top)"
        raise InputError(f"{key}: {err['msg']}", str(path),
                         "docs/how-to/other-benchmarks.md lists the map's keys") from None
    f = spec.fields
    options = ((f.options,) if isinstance(f.options, str) else tuple(f.options or ()))
    fields = FieldMap(f.question_id, f.video_id, f.question, options, f.answer, f.answer_is,
                      f.task_type, f.difficulty, tuple(f.drop_options),
                      options_in_question=not options, single_type=spec.benchmark)
    settings = {k: v for k, v in (("difficulty_edges", spec.difficulty_edges),
                                  ("difficulty_levels", spec.difficulty_levels)) if v}
    return Profile(spec.benchmark, spec.benchmark, (), spec.metric or "", fields,
                   spec.letter_rule, _verdict_at(spec.verdict), f"the rows of {spec.benchmark}",
                   difficulty_field=f.difficulty, settings=settings,
                   single_type_note=None if f.task_type else f"{path.name} names no task_type",
                   vlmeval=(spec.benchmark, spec.letter_rule))


def _verdict_at(dotted: str | None) -> Any:
    def verdict(line: dict[str, Any]) -> tuple[bool | None, str | None]:
        value: Any = line
        for part in (dotted or "").split(".") if dotted else ():
            value = value.get(part) if isinstance(value, dict) else None
        known = isinstance(value, bool | int | float) and value in (0, 1)
        return (bool(value) if known else None), None
    return verdict


def _named(name: str) -> Profile | None:
    if name in ("videomme", "videomme_w_subtitle", "video-mme"):
        return None
    if name not in PROFILES:
        raise UserError(f"unknown benchmark {name!r}", "--benchmark",
                        f"pass one of videomme, {', '.join(PROFILES)}, or --map FILE.yaml")
    return PROFILES[name]


def lmms_profile(files: list[Path], benchmark: str | None,
                 map_file: Path | None) -> Profile | None:
    """The profile of lmms-eval sample files (None: Video-MME)."""
    from split_assets.importing.videomme_harnesses import task_of

    if map_file is not None:
        return load_map(map_file)
    if benchmark is not None:
        return _named(benchmark)
    found: set[str | None] = set()
    for path in files:
        task = task_of(path)
        if task is not None and task.startswith("videomme"):
            found.add(None)
            continue
        profile = profile_of_task(task) if task else None
        found.add(profile.name if profile else _by_first_line(path, task))
    if len(found) > 1:
        raise UserError(f"the files are of several benchmarks ({', '.join(map(str, found))})",
                        "--samples", "import one benchmark's files at a time")
    name = found.pop() if found else None
    return PROFILES[name] if name else None


def _by_first_line(path: Path, task: str | None) -> str | None:
    """The benchmark a file's first line is of, by its metric key (None: Video-MME)."""
    try:
        first = json.loads(next((ln for ln in path.read_text(encoding="utf-8").splitlines()
                                 if ln.strip()), "{}"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # the Video-MME importer says what is wrong with the file
    first = first if isinstance(first, dict) else {}
    if "videomme_perception_score" in first or "videomme_percetion_score" in first:
        return None
    profile = profile_of_line(first)
    if profile is None:
        from split_assets.importing.videomme_release import videomme_score_key

        key = videomme_score_key(first)
        if key is not None:  # a renamed task over Video-MME's questions: a hint that works
            raise UserError(f"unknown task {task or '(none in the file name)'} in {path.name}: "
                            f"its lines carry Video-MME's score fields under {key!r}",
                            str(path), "pass --benchmark videomme to import them as "
                            "Video-MME (that key is read in place of videomme_perception_score)")
        raise UserError(f"unknown task {task or '(none in the file name)'} in {path.name}: "
                        "its lines carry no metric of a supported benchmark", str(path),
                        f"pass --map FILE.yaml naming the fields (docs/how-to/import.md), or "
                        f"--benchmark NAME (videomme, {', '.join(PROFILES)}) when the lines "
                        "carry that benchmark's score fields")
    return profile.name


def vlm_profile(results: Path, benchmark: str | None,
                map_file: Path | None) -> Profile | None:
    """The profile of a VLMEvalKit table, by its name <model>_<dataset>_<setting>.xlsx."""
    if map_file is not None:
        return load_map(map_file)
    if benchmark is not None:
        profile = _named(benchmark)
        if profile is not None and profile.vlmeval is None:
            raise UserError(f"VLMEvalKit has no {profile.title} dataset", "--benchmark",
                            "import that benchmark's lmms-eval samples instead")
        return profile
    name = f"_{results.stem}_"
    for profile in PROFILES.values():
        if profile.vlmeval and f"_{profile.vlmeval[0]}_" in name:
            return profile
    for other in ("MLVU", "TempCompass"):
        if f"_{other}" in name:
            raise UserError(f"VLMEvalKit's {other} tables are not supported", str(results),
                            f"import {other}'s lmms-eval samples (split-assets import "
                            "lmms-eval), or name the columns with --map FILE.yaml")
    return None
