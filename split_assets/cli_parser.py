"""The ``split-assets`` command line: its argparse parser, with the project's one-line usage
errors (``error: <what> (<command>): see '<command> --help'``, exit 2). ``cli.py`` runs the
commands it parses."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from split_assets.errors import UserError

DEFAULT_DEMO_DIR = "demo-workspace"


class _Parser(argparse.ArgumentParser):
    """argparse with the project's one-line errors: a usage error (unknown argument, missing
    required one, invalid choice or value) is ``error: <what> (<command>): see '<command>
    --help'``, exit 2, without the usage block; ``--help`` is argparse's own."""

    def error(self, message: str) -> NoReturn:
        raise _usage_error(message, self.prog)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # named at the deepest command given, which is the one that refused them
            raise _usage_error(f"unrecognized arguments: {' '.join(extras)}",
                               _command_parser(self, parsed).prog)
        return parsed


def _usage_error(message: str, prog: str) -> UserError:
    return UserError(message, prog, f"see '{prog} --help'")


def _command_parser(parser: argparse.ArgumentParser,
                    parsed: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the deepest (sub)command named in ``parsed``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
            if chosen is not None:
                return _command_parser(chosen, parsed)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="split-assets",
        description="Frozen, reproducible, outcome-driven train/validation/test splits.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    config_help = "config file (default: $SPLIT_ASSETS_CONFIG or config/video_split.yaml)"

    p = sub.add_parser("run", help="materialize every asset and check of the config's partition")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--dry-run", action="store_true",
                   help="validate config and inputs, print the plan; call no judge, write nothing")
    p.add_argument("--generated-at", help="pin the manifest's generated_at (ISO 8601)")
    p.add_argument("--allow-degraded", type=int, default=0, metavar="N",
                   help="freeze even if at most N diagnoses stay degraded after the retry "
                        "pass (listed in the manifest; default 0)")
    p.add_argument("--no-wait", action="store_true",
                   help="refuse at once when another run is diagnosing this partition, "
                        "instead of sharing the work with it")
    p.add_argument("--refreeze-after-test-look", action="store_true",
                   help="freeze a new split although a split of this baseline had a test "
                        "look (its ledger then starts with every earlier look at its test "
                        "questions)")

    p = sub.add_parser("fingerprint", help="print the diagnosis fingerprint and its components")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--register", action="store_true",
                   help="also register it as a partition in the Dagster instance")
    p.add_argument("--diff", nargs=2, metavar=("A", "B"),
                   help="what differs between two fingerprints (the config's own, or any "
                        "diagnosed with its signal store)")

    p = sub.add_parser("verify", help="re-check a frozen pools.json against the config's "
                                      "inputs (invariants, sizes, correctness)")
    p.add_argument("pools_json", type=Path, metavar="POOLS_JSON")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--recompute", action="store_true",
                   help="also re-run the selection from the inputs and compare the bytes")

    p = sub.add_parser("agreement", help="Cohen's kappa between two judges (fingerprints) on "
                                         "the baseline's wrong answers both diagnosed")
    p.add_argument("--a", required=True, metavar="FP1", help="a fingerprint (fp-...)")
    p.add_argument("--b", required=True, metavar="FP2", help="another fingerprint")
    p.add_argument("--config", type=Path, help=config_help)
    _add_review_parsers(sub, config_help)
    _add_run_data_parsers(sub, config_help)
    _add_evaluation_parsers(sub, config_help)
    _add_judge_parsers(sub, config_help)
    return parser


def _add_review_parsers(sub: argparse._SubParsersAction, config_help: str) -> None:
    p = sub.add_parser("review", help="human review of the judge's verdicts: export a sample, "
                                      "import the labels")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    k = actions.add_parser("export", help="write a seeded sample of diagnosed answers as CSV")
    k.add_argument("--n", type=int, required=True, help="answers to sample")
    k.add_argument("--stratify", metavar="FIELDS",
                   help="spread the sample evenly over these fields' strata: a comma-separated "
                        "subset of tier,task_type,error_type,difficulty (weights undo it)")
    k.add_argument("--out", type=Path, required=True, help="the CSV file to write")
    k.add_argument("--show-judge", action="store_true",
                   help="include the judge's verdict (hidden by default: unbiased labels)")
    k.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    k.add_argument("--config", type=Path, help=config_help)
    k = actions.add_parser("import", help="store a reviewer's labels in the signal store")
    k.add_argument("csv", type=Path, metavar="REVIEW_CSV")
    k.add_argument("--reviewer", required=True, help="who labelled (e.g. alice)")
    k.add_argument("--config", type=Path, help=config_help)


def _add_import_parsers(sub: argparse._SubParsersAction) -> None:
    """import videomme | predictions | lmms-eval | vlmevalkit."""
    p = sub.add_parser("import", help="import published results or predictions as a run")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    k = kinds.add_parser("videomme", help="an official-layout results file (JSON list of videos)")
    k.add_argument("--results", type=Path, required=True, help="the results JSON file")
    _import_args(k)
    _role_arg(k)
    k = kinds.add_parser("predictions",
                         help="flat JSONL {question_id, response | prediction, stop_reason?}")
    k.add_argument("--jsonl", type=Path, required=True, help="the predictions JSONL file")
    _import_args(k)
    _role_arg(k)
    k = kinds.add_parser("lmms-eval", help="lmms-eval --log_samples output of a videomme task "
                                           "(<date>_samples_<task>.jsonl)")
    k.add_argument("--samples", type=Path, nargs="+", required=True, metavar="FILE",
                   help="the samples JSONL file(s) of one run (several: e.g. --limit offsets)")
    k.add_argument("--task", help="the task variant to import (videomme, videomme_w_subtitle, "
                                  "...) when the files hold several")
    k.add_argument("--annotations", type=Path, nargs="+", default=[], metavar="FILE",
                   help="the benchmark's own rows, for samples without doc (lmms-eval 0.4+)")
    k.add_argument("--pool-task", type=Path, metavar="DIR",
                   help="the folder 'split-assets export lmms-eval' wrote, when the run was "
                        "made on it (maps lmms-eval's doc_id back to the benchmark's rows; "
                        "Video-MME and LongVideoBench lines name their question anyway)")
    _profile_args(k)
    _import_args(k)
    _role_arg(k)
    k = kinds.add_parser("vlmevalkit", help="VLMEvalKit's prediction table of Video-MME, "
                                            "LongVideoBench or MVBench (.xlsx, .tsv, .csv)")
    k.add_argument("--results", type=Path, required=True, help="the prediction table")
    _profile_args(k)
    _import_args(k)
    _role_arg(k)


def _profile_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", help="the benchmark when the file names do not say "
                        "(videomme, longvideobench, mlvu, mvbench, nextqa, egoschema, "
                        "tempcompass, perceptiontest)")
    parser.add_argument("--map", type=Path, metavar="FILE.yaml", dest="field_map",
                        help="a field map for a benchmark without a built-in profile")


def _add_run_data_parsers(sub: argparse._SubParsersAction, config_help: str) -> None:
    """import, export-signals, signals, demo, ledger, workspace."""
    _add_import_parsers(sub)

    p = sub.add_parser("export-signals",
                       help="write the train pool's diagnoses as JSONL (never validation/test)")
    p.add_argument("--pool", default="train", help="train (the only pool allowed)")
    p.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    p.add_argument("--config", type=Path, help=config_help)

    _add_export_parser(sub, config_help)

    p = sub.add_parser("signals", help="manage the signal store")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    k = actions.add_parser("copy", help="copy the config's signal store (diagnoses, cache, "
                                        "telemetry, review labels) into PostgreSQL")
    k.add_argument("--to", required=True, metavar="URL",
                   help="postgresql://user@host/database (no password: PGPASSWORD or ~/.pgpass)")
    k.add_argument("--config", type=Path, help=config_help)

    p = sub.add_parser("demo", help="build the sample workspace, declare it and run it")
    p.add_argument("--dir", type=Path, default=Path(DEFAULT_DEMO_DIR),
                   help=f"where to build it (default: {DEFAULT_DEMO_DIR}/)")
    p.add_argument("--name", default="demo",
                   help="the workspace's name in Dagster, its asset-key prefix (default: demo)")
    p.add_argument("--shape", choices=("videomme", "longvideobench", "mvbench"),
                   default="videomme", help="the benchmark it is shaped like (default: "
                   "videomme; the others from public aggregates, answer_only judge)")

    p = sub.add_parser("ledger", help="every evaluation of a run on the config's frozen pools "
                                      "(what was looked at, and when)")
    p.add_argument("--pool", choices=("validation", "test"), help="one pool only")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--config", type=Path, help=config_help)

    p = sub.add_parser("workspace", help="declare workspaces for the code location (dg dev)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    k = actions.add_parser("add", help="declare a config as a workspace: writes "
                                       "$SPLIT_ASSETS_WORKSPACES/NAME/defs.yaml")
    k.add_argument("--name", required=True, help="its asset-key prefix (e.g. videomme)")
    k.add_argument("--config", type=Path, required=True, help="the workspace's config file")
    actions.add_parser("list", help="the declared workspaces: name, config, defs.yaml")


def _add_export_parser(sub: argparse._SubParsersAction, config_help: str) -> None:
    """export lmms-eval."""
    p = sub.add_parser("export", help="a frozen pool as a harness task (lmms-eval)")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="HARNESS")
    k = kinds.add_parser("lmms-eval", help="an lmms-eval task folder that runs the stock task "
                                           "on one pool's questions only")
    k.add_argument("--pool", required=True, choices=("train", "validation", "trainval", "test"),
                   help="the pool (test: a look, within evaluation.test_looks_max)")
    k.add_argument("--out", type=Path, help="where to write the task's folder <name>/ "
                                            "(default: <paths.out_dir>/lmms_eval_tasks/)")
    k.add_argument("--task", help="a stock task variant (videomme_w_subtitle, "
                                  "longvideobench_val_i; default: videomme, "
                                  "longvideobench_val_v, ...)")
    k.add_argument("--spend-test-look", action="store_true",
                   help="export test beyond evaluation.test_looks_max")
    k.add_argument("--config", type=Path, help=config_help)


def _add_evaluation_parsers(sub: argparse._SubParsersAction, config_help: str) -> None:
    """compare, feedback (ledger: with the run data parsers)."""
    p = sub.add_parser("compare", help="compare a candidate run with the baseline on the frozen "
                                       "validation pool, or on test (--pool test: a look)")
    p.add_argument("--candidate", required=True, help="the candidate run id (in the harness db)")
    p.add_argument("--control", help="a fresh re-run of the baseline agent (default: "
                                     "evaluation.control_run)")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--pool", action="append", choices=("validation", "test"),
                   help="compare this pool (repeatable; default validation only: test is "
                        "looked at only when named)")
    p.add_argument("--spend-test-look", action="store_true",
                   help="look at test beyond evaluation.test_looks_max (no claim holds for it)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p = sub.add_parser("feedback", help="submit a candidate to the Ladder on validation: the "
                                        "leaderboard's score and a budgeted significance flag")
    p.add_argument("--candidate", required=True, help="the run id of the candidate")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--config", type=Path, help=config_help)


def _add_judge_parsers(sub: argparse._SubParsersAction, config_help: str) -> None:
    """judge probe."""
    p = sub.add_parser("judge", help="the openai judge's endpoint")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    k = actions.add_parser("probe", help="a few calls with the real prompt of one case: the "
                                         "model, response formats, prefix cache, latency, "
                                         "parallelism, and the settings they suggest")
    k.add_argument("--config", type=Path, help=config_help)
    k.add_argument("--write", action="store_true",
                   help="write the suggested settings into the config (a new response "
                        "format moves the fingerprint)")
    k.add_argument("--max-parallel", type=int, metavar="N",
                   help="probe parallelism up to N requests at once (default: "
                        "diag.concurrency, at most 32; each probe sends 2N+ calls)")


def _role_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--role", choices=("reference", "candidate", "control"),
                        help="register the run in video_split.yaml as a reference run of the "
                             "answer_only judge, an evaluation candidate, or the control run "
                             "(required once a split is frozen)")
    parser.add_argument("--spend-test-look", action="store_true",
                        help="import a candidate that answers test questions (a look at test) "
                             "beyond evaluation.test_looks_max")


def _import_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-id", required=True, help="the run id to store the answers under")
    parser.add_argument("--workspace", type=Path, required=True,
                        help="the workspace folder (created by the first import)")
    parser.add_argument("--replace", action="store_true",
                        help="overwrite a run id already present (and delete its signals)")
    parser.add_argument("--partial", action="store_true",
                        help="accept a run that answers only some benchmark questions")
