"""``split-assets judge probe``: what the configured endpoint does (``judge/probe.py``), and
with ``--write`` the settings it suggests written into the config (comments kept), so that a
fingerprint only moves when the user asks for it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from split_assets.errors import ConfigError, UserError


def dispatch(args: Any) -> int:
    return probe_command(args.config, args.write, args.max_parallel)


def probe_command(config: Path | None, write: bool, max_parallel: int | None) -> int:
    from split_assets.judge.probe import probe
    from split_assets.session import Session

    if max_parallel is not None and max_parallel < 1:
        raise UserError(f"--max-parallel {max_parallel} is not a positive number",
                        "--max-parallel", "pass 1 or more")
    s = Session.open(config)
    diag = s.loaded.config.diag
    if diag.judge != "openai":
        raise ConfigError(f"diag.judge is {diag.judge}: there is no endpoint to probe",
                          "diag.judge", "set diag.judge: openai (with OPENAI_BASE_URL and "
                                        "OPENAI_API_KEY in the environment or a .env file)")
    result = probe(diag, _first_case_messages(s), max_parallel or min(diag.concurrency, 32))
    for key, value in result.lines():
        print(f"{key}={value}")
    if write:
        _write(s, result.recommended)
    return 0


def _first_case_messages(s: Any) -> list[dict[str, str]]:
    """The judge's real prompt for the first wrong answer of the baseline."""
    from split_assets.diagnosis.cases import CaseSource
    from split_assets.diagnosis.plan import wrong_to_diagnose
    from split_assets.judge.prompts import load_templates
    from split_assets.judge.render import render_messages

    wrong = wrong_to_diagnose(s.inputs.predictions)[:1]
    if not wrong:
        raise ConfigError("the baseline has no wrong answer to build a prompt from",
                          "video_split.baseline_run_id", "probe with another workspace")
    templates = load_templates(s.loaded.paths.prompts_dir, s.judge.required_templates())
    case = next(iter(CaseSource(s.inputs, wrong).cases(wrong)))
    diag = s.loaded.config.diag
    return render_messages(templates, case, diag.context, diag.rules.open_tool)


def _write(s: Any, recommended: dict[str, Any]) -> None:
    """The recommended settings into the config file; the fingerprint before and after."""
    from split_assets.data.config_file import load_workspace_config, save_document, section_of
    from split_assets.session import Session

    path = s.loaded.path
    before = s.partition.key
    doc = load_workspace_config(path)
    diag = section_of(doc, "diag")
    diag["concurrency"] = recommended["concurrency"]
    openai = section_of(diag, "openai")
    openai["response_format"] = recommended["response_format"]
    openai.pop("json_mode", None)  # its earlier spelling
    openai["timeout_s"] = float(recommended["timeout_s"])
    save_document(path, doc)
    after = Session.open(path).partition.key
    print(f"wrote diag.concurrency, diag.openai.response_format and diag.openai.timeout_s to "
          f"{path}; fingerprint {before}" + (f" -> {after} (the response format is part of "
                                             "it: the next run diagnoses again)"
                                             if after != before else " (unchanged)"),
          file=sys.stderr)
