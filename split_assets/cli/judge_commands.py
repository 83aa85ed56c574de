"""The judge's commands: ``split-assets judge probe`` (what the configured endpoint does,
``judge/probe.py``; with ``--write`` the settings it suggests written into the config, comments
kept, so a fingerprint only moves when the user asks for it), ``agreement`` (kappa between two
judges) and ``review export|import`` (human labels for the judge's verdicts)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.cli.arguments import Subcommands, actions, command, config_arg
from split_assets.cli.terminal import open_session
from split_assets.errors import ConfigError, UserError

if TYPE_CHECKING:
    from split_assets.app.session import Session


def add_judge(sub: Subcommands) -> None:
    p = command(sub, "judge", "the openai judge's endpoint")
    k = command(actions(p), "probe", "a few calls with the real prompts of two cases: the "
                                     "model, response formats, prefix cache, latency, "
                                     "parallelism, and the settings they suggest", handle_probe)
    config_arg(k)
    k.add_argument("--write", action="store_true",
                   help="write the suggested settings into the config (a new response "
                        "format moves the fingerprint)")
    k.add_argument("--max-parallel", type=int, metavar="N",
                   help="probe parallelism up to N requests at once (default: "
                        "diag.concurrency, at most 32; the test sends short calls: 4 on a "
                        "one-slot server, a few times N on one that serves N)")


def add_agreement(sub: Subcommands) -> None:
    p = command(sub, "agreement", "Cohen's kappa between two judges (fingerprints) on the "
                                  "baseline's wrong answers both diagnosed", handle_agreement)
    p.add_argument("--a", required=True, metavar="FP1", help="a fingerprint (fp-...)")
    p.add_argument("--b", required=True, metavar="FP2", help="another fingerprint")
    config_arg(p)


def add_review(sub: Subcommands) -> None:
    p = command(sub, "review", "human review of the judge's verdicts: export a sample, import "
                               "the labels")
    kinds = actions(p)
    k = command(kinds, "export", "write a seeded sample of diagnosed answers as CSV",
                handle_review_export)
    k.add_argument("--n", type=int, required=True, help="answers to sample")
    k.add_argument("--stratify", metavar="FIELDS",
                   help="spread the sample evenly over these fields' strata: a comma-separated "
                        "subset of tier,task_type,error_type,difficulty (weights undo it)")
    k.add_argument("--out", type=Path, required=True, help="the CSV file to write")
    k.add_argument("--show-judge", action="store_true",
                   help="include the judge's verdict (hidden by default: unbiased labels)")
    k.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    config_arg(k)
    k = command(kinds, "import", "store a reviewer's labels in the signal store",
                handle_review_import)
    k.add_argument("csv", type=Path, metavar="REVIEW_CSV")
    k.add_argument("--reviewer", required=True, help="who labelled (e.g. alice)")
    config_arg(k)


def handle_agreement(args: argparse.Namespace) -> int:
    """Kappa between two judges on the questions both diagnosed."""
    from split_assets.evaluation.judges import compare_fingerprints, text

    print(text(compare_fingerprints(open_session(args.config).partition, args.a, args.b)))
    return 0


def handle_review_export(args: argparse.Namespace) -> int:
    from split_assets.review.sample import export_review, parse_stratify

    s = open_session(args.config)
    written, strata = export_review(s.inputs, s.partition, args.n,
                                    parse_stratify(args.stratify), args.out, args.show_judge,
                                    args.seed)
    print(f"wrote {written} answers to review ({strata} strata, {s.partition.key}) to "
          f"{args.out}")
    return 0


def handle_review_import(args: argparse.Namespace) -> int:
    from split_assets.review.labels import import_review

    s = open_session(args.config)
    done = import_review(s.inputs, s.partition, args.csv, args.reviewer)
    print(f"imported {done.labelled} labels of {args.reviewer} for run {s.partition.run_id} "
          f"({done.unlabelled} rows left blank) into {s.partition.loaded.paths.signals_db}")
    return 0


def handle_probe(args: argparse.Namespace) -> int:
    return probe_command(args.config, args.write, args.max_parallel)


def probe_command(config: Path | None, write: bool, max_parallel: int | None) -> int:
    from split_assets.judge.probe import probe

    if max_parallel is not None and max_parallel < 1:
        raise UserError(f"--max-parallel {max_parallel} is not a positive number",
                        "--max-parallel", "pass 1 or more")
    s = open_session(config)
    diag = s.loaded.config.diag
    if diag.judge != "openai":
        raise ConfigError(f"diag.judge is {diag.judge}: there is no endpoint to probe",
                          "diag.judge", "set diag.judge: openai (with OPENAI_BASE_URL and "
                                        "OPENAI_API_KEY in the environment or a .env file)")
    result = probe(diag, _case_messages(s), max_parallel or min(diag.concurrency, 32),
                   lambda line: print(line, file=sys.stderr, flush=True))
    for key, value in result.lines():
        print(f"{key}={value}")
    if write:
        _write(s, result.recommended)
    return 0


def _case_messages(s: Session) -> list[list[dict[str, str]]]:
    """The judge's real prompts for the first two wrong answers of the baseline (one when
    there is one)."""
    from split_assets.diagnosis.cases import CaseSource
    from split_assets.diagnosis.plan import wrong_to_diagnose
    from split_assets.judge.prompts import load_templates
    from split_assets.judge.render import render_messages

    wrong = wrong_to_diagnose(s.inputs.predictions)[:2]
    if not wrong:
        raise ConfigError("the baseline has no wrong answer to build a prompt from",
                          "video_split.baseline_run_id", "probe with another workspace")
    templates = load_templates(s.loaded.paths.prompts_dir, s.judge.required_templates())
    diag = s.loaded.config.diag
    return [render_messages(templates, case, diag.context, diag.rules.open_tool)
            for case in CaseSource(s.inputs, wrong).cases(wrong)]


def _write(s: Session, recommended: dict[str, Any]) -> None:
    """The recommended settings into the config file; the fingerprint before and after."""
    from split_assets.sources.config_file import load_workspace_config, save_document, section_of

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
    after = open_session(path).partition.key
    print(f"wrote diag.concurrency, diag.openai.response_format and diag.openai.timeout_s to "
          f"{path}; fingerprint {before}" + (f" -> {after} (the response format is part of "
                                             "it: the next run diagnoses again)"
                                             if after != before else " (unchanged)"),
          file=sys.stderr)
