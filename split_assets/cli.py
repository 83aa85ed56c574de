# PYTHON_ARGCOMPLETE_OK
"""``split-assets``: run, fingerprint, agreement, review, verify, import, compare,
export-signals, demo. Expected errors are one line on stderr (``error: <what> (<where>): <how
to fix>``) with exit 2 for what the user must fix (config, input, environment), exit 1 for a run
that failed otherwise, and 130 for Ctrl-C."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from split_assets.errors import RunFailure, SplitAssetsError, UserError, environment_error

if TYPE_CHECKING:
    from split_assets.workspace import Workspace

DEFAULT_DEMO_DIR = "demo-workspace"


def _workspace(config: Path | None) -> Workspace:
    """The command's workspace (imported here, not at the top: this module loads in
    milliseconds, so a Ctrl-C at any moment after the interpreter starts is one line)."""
    from split_assets.workspace import Workspace

    return Workspace.open(config)


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _check_generated_at(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise UserError(f"--generated-at {value!r} is not an ISO 8601 time", "--generated-at",
                        "use e.g. 2026-01-01T00:00:00Z") from None
    return value


def run(config: Path | None, dry_run: bool = False, generated_at: str | None = None,
        allow_degraded: int = 0, no_wait: bool = False) -> int:
    """Validate, register the fingerprint partition and materialize every asset and check
    (``dry_run``: print the plan instead; call no judge, write nothing)."""
    from split_assets.defs.tags import ALLOW_DEGRADED_TAG, GENERATED_AT_TAG, NO_WAIT_TAG
    from split_assets.diagnosis.plan import preflight

    generated_at = _check_generated_at(generated_at)
    if allow_degraded < 0:
        raise UserError(f"--allow-degraded {allow_degraded} is negative", "--allow-degraded",
                        "pass 0 or more")
    ws = _workspace(config)
    checked = preflight(ws, estimate=dry_run)  # before anything is paid for or written
    if dry_run:
        return _print(checked.lines(ws))
    from split_assets.defs.launch import run_split_job

    tags = {GENERATED_AT_TAG: generated_at} if generated_at else {}
    if allow_degraded:
        tags[ALLOW_DEGRADED_TAG] = str(allow_degraded)
    if no_wait:
        tags[NO_WAIT_TAG] = "1"
    run_split_job(ws, tags)
    files = ws.files
    evaluation = ([("evaluation", files.evaluation)] if ws.loaded.config.evaluation.candidates
                  and files.evaluation.is_file() else [])
    return _print([("fingerprint", ws.fingerprint.key), ("split_id", ws.split_id),
                   ("pools", files.pools),
                   ("pools_sha256", ws.frozen_manifest()["pools_sha256"]),
                   ("manifest", files.manifest), *evaluation])


def _print(lines: list[tuple[str, object]]) -> int:
    for key, value in lines:
        print(f"{key}={value}")
    return 0


def compare(candidate: str, control: str | None, config: Path | None,
            pools: list[str] | None, as_json: bool) -> int:
    """``split-assets compare``: the candidate against the baseline on the frozen pools."""
    from split_assets.evaluation.report import compare_runs, text
    from split_assets.split.layout import EVALUATED_POOLS

    ws = _workspace(config)
    where = "--control"
    if control is None and ws.loaded.config.evaluation.control_run is not None:
        control, where = ws.loaded.config.evaluation.control_run, "evaluation.control_run"
    chosen = tuple(p for p in EVALUATED_POOLS if p in (pools or EVALUATED_POOLS))
    report = compare_runs(ws, candidate, control, chosen, control_where=where)
    print(json.dumps(report, indent=1, sort_keys=True) if as_json else text(report))
    return 0


def export_signals(pool: str, out: Path, config: Path | None) -> int:
    """``split-assets export-signals``: the train pool's diagnoses as JSONL."""
    from split_assets.evaluation.report import load_pools
    from split_assets.lib.canonical import atomic_write_bytes

    if pool != "train":
        raise UserError(f"--pool {pool} refused: only the train pool's diagnoses may be "
                        "exported", "--pool", "the evolution loop must never read validation "
                                              "or test diagnoses; use --pool train")
    if out.is_dir():
        raise UserError(f"--out names a folder: {out}", "--out",
                        "name the JSONL file to write, e.g. train_signals.jsonl")
    ws = _workspace(config)
    doc = load_pools(ws)
    train = set(doc["pools"]["train"])
    rows = [r for r in ws.signal_rows(required=True) if r.question_id in train]
    lines = [json.dumps({**asdict(row), "pool": "train"}, sort_keys=True, ensure_ascii=False)
             for row in rows]
    atomic_write_bytes(out, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    print(f"wrote {len(lines)} diagnoses of the train pool ({len(doc['videos']['train'])} "
          f"videos, split {doc['split_id']}, {ws.fingerprint.key}) to {out}")
    return 0


def fingerprint(config: Path | None, register: bool = False,
                diff: list[str] | None = None) -> int:
    """Print the fingerprint key, then its components (``diff``: what differs between two)."""
    ws = _workspace(config)
    if diff:
        from split_assets.fingerprint import components_of, difference

        a, b = (components_of(ws.fingerprint, key, ws.recorded_components,
                              str(ws.loaded.paths.signals_db)) for key in diff)
        lines = difference(a, b)
        print("\n".join(lines) if lines else f"{diff[0]} and {diff[1]}: the same components")
        return 0
    print(ws.fingerprint.key)
    for name, value in ws.fingerprint.components.items():
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        print(f"{name}={shown}")
    if register:
        from split_assets.defs.instance import get_instance, register_partition

        new = register_partition(get_instance(), ws.fingerprint.key)
        _err(f"partition {ws.fingerprint.key} {'registered' if new else 'already registered'}")
    return 0


def agreement(a: str, b: str, config: Path | None) -> int:
    """``split-assets agreement``: kappa between two judges on the questions both diagnosed."""
    from split_assets.evaluation.judges import compare_fingerprints, text

    print(text(compare_fingerprints(_workspace(config), a, b)))
    return 0


def review(args: argparse.Namespace) -> int:
    """``split-assets review export|import``: human labels for the judge's verdicts."""
    ws = _workspace(args.config)
    if args.action == "export":
        from split_assets.review.sample import export_review, parse_stratify

        written, strata = export_review(ws, args.n, parse_stratify(args.stratify), args.out,
                                        args.show_judge, args.seed)
        print(f"wrote {written} answers to review ({strata} strata, "
              f"{ws.fingerprint.key}) to {args.out}")
        return 0
    from split_assets.review.labels import import_review

    done = import_review(ws, args.csv, args.reviewer)
    print(f"imported {done.labelled} labels of {args.reviewer} for run {ws.run_id} "
          f"({done.unlabelled} rows left blank) into {ws.loaded.paths.signals_db}")
    return 0


def verify(pools_json: Path, config: Path | None, recompute: bool = False) -> int:
    """Re-check a frozen pools.json against the config's inputs."""
    from split_assets.split.checking import check_pools_file, read_pools_file

    read_pools_file(pools_json)  # a wrong file is refused before the config is read
    results = check_pools_file(_workspace(config), pools_json, recompute)
    for r in results:
        print(f"{'ok  ' if r.passed else 'FAIL'} {r.name}: {r.detail}")
    failed = [r.name for r in results if not r.passed]
    if failed:
        raise RunFailure(f"{len(failed)} check(s) failed: {', '.join(failed)}",
                         str(pools_json), "the file does not match the config's inputs: "
                                          "re-freeze the split with 'split-assets run'")
    return 0


def signals_copy(to: str, config: Path | None) -> int:
    """``split-assets signals copy --to URL``: the config's signal store into PostgreSQL."""
    from split_assets.config import load_config
    from split_assets.data.signals_pg import check_store_url, copy_store, is_store_url, open_store

    check_store_url(to, "--to")
    loaded = load_config(config)
    source_location = loaded.paths.signals_db
    if source_location == to:
        raise UserError("the source and the target are the same store", "--to",
                        "name another database")
    if not is_store_url(source_location) and not Path(source_location).is_file():
        raise UserError(f"signal store not found: {source_location}", "paths.signals_db",
                        "nothing to copy: run 'split-assets run' first, or pass --config")
    # the source is opened as a run would (a store of an earlier release is migrated first)
    with open_store(source_location) as source, open_store(to) as target:
        summary = copy_store(source, target)
    print(summary.line(to))
    _err(f"to use it, set paths.signals_db: {to} in {loaded.path}")
    return 0


def demo(directory: Path) -> int:
    """Build the sample workspace in ``directory`` and run it."""
    from split_assets.demo import build_workspace

    summary = build_workspace(directory)
    _err(f"sample workspace: {summary.n_videos} videos, {summary.n_questions} questions, "
         f"baseline accuracy {summary.accuracy:.3f}, {summary.n_infra} INFRA, in {directory}")
    return run(summary.config_path)


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


def _add_run_data_parsers(sub: argparse._SubParsersAction, config_help: str) -> None:
    """import, compare, export-signals, demo."""
    p = sub.add_parser("import", help="import published results or predictions as a run")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    k = kinds.add_parser("videomme", help="an official-layout results file (JSON list of videos)")
    k.add_argument("--results", type=Path, required=True, help="the results JSON file")
    _import_args(k)
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
    _import_args(k)
    _role_arg(k)
    k = kinds.add_parser("vlmevalkit", help="VLMEvalKit's Video-MME prediction table "
                                            "(.xlsx, .tsv or .csv)")
    k.add_argument("--results", type=Path, required=True, help="the prediction table")
    _import_args(k)
    _role_arg(k)

    p = sub.add_parser("compare", help="compare a candidate run with the baseline on the frozen "
                                       "validation and test pools (McNemar)")
    p.add_argument("--candidate", required=True, help="the candidate run id (in the harness db)")
    p.add_argument("--control", help="a fresh re-run of the baseline agent (default: "
                                     "evaluation.control_run)")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--pool", action="append", choices=("validation", "test"),
                   help="compare only this pool (repeatable; default both)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = sub.add_parser("export-signals",
                       help="write the train pool's diagnoses as JSONL (never validation/test)")
    p.add_argument("--pool", default="train", help="train (the only pool allowed)")
    p.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    p.add_argument("--config", type=Path, help=config_help)

    p = sub.add_parser("signals", help="manage the signal store")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    k = actions.add_parser("copy", help="copy the config's signal store (diagnoses, cache, "
                                        "telemetry, review labels) into PostgreSQL")
    k.add_argument("--to", required=True, metavar="URL",
                   help="postgresql://user@host/database (no password: PGPASSWORD or ~/.pgpass)")
    k.add_argument("--config", type=Path, help=config_help)

    p = sub.add_parser("demo", help="build the sample workspace and run it")
    p.add_argument("--dir", type=Path, default=Path(DEFAULT_DEMO_DIR),
                   help=f"where to build it (default: {DEFAULT_DEMO_DIR}/)")


def _role_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--role", choices=("reference", "candidate", "control"),
                        help="register the run in video_split.yaml as a reference run of the "
                             "answer_only judge, an evaluation candidate, or the control run")


def _import_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-id", required=True, help="the run id to store the answers under")
    parser.add_argument("--workspace", type=Path, required=True,
                        help="the workspace folder (created by the first import)")
    parser.add_argument("--replace", action="store_true",
                        help="overwrite a run id already present (and delete its signals)")
    parser.add_argument("--partial", action="store_true",
                        help="accept a run that answers only some benchmark questions")


def import_run(args: argparse.Namespace) -> int:
    """``split-assets import videomme|predictions|lmms-eval|vlmevalkit``."""
    from split_assets.data import importers

    if args.kind == "videomme":
        summary = importers.import_videomme(args.results, args.run_id, args.workspace,
                                            args.replace, args.partial)
    elif args.kind in ("lmms-eval", "vlmevalkit"):
        from split_assets.data import frameworks

        summary = (frameworks.import_lmms_eval(args.samples, args.run_id, args.workspace,
                                               args.replace, args.partial, args.role, args.task)
                   if args.kind == "lmms-eval" else
                   frameworks.import_vlmevalkit(args.results, args.run_id, args.workspace,
                                                args.replace, args.partial, args.role))
    else:
        summary = importers.import_predictions(args.jsonl, args.run_id, args.workspace,
                                               args.replace, args.partial, args.role)
    for line in summary.lines():
        print(line)
    return 0


def main(argv: Sequence[str] | None = None, settle: bool = False) -> int:
    """Run one command; its exit code. ``settle`` (the console script): once the outcome is
    printed, a late Ctrl-C is ignored, so the process never dies of the signal."""
    from split_assets.lib import interrupts

    with interrupts.watch():  # a Ctrl-C is never lost (lib/interrupts.py)
        try:
            return _main(argv)
        finally:
            if settle:
                interrupts.settle()


def entry() -> None:
    """The ``split-assets`` console script."""
    try:
        code = main(settle=True)
    except KeyboardInterrupt:  # in the instant between the outcome and settling
        code = _interrupted()
    sys.exit(code)


def _main(argv: Sequence[str] | None) -> int:
    from split_assets.lib import interrupts

    try:
        parser = build_parser()
        if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (README)
            import argcomplete

            argcomplete.autocomplete(parser)
        args = parser.parse_args(argv)
        return _dispatch(args)
    except SplitAssetsError as exc:
        # whatever failed after a Ctrl-C failed because of it: the interrupt is the outcome
        return _interrupted() if interrupts.seen() else _fail(exc)
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as exc:
        if interrupts.seen() or interrupts.is_interrupt(exc):
            return _interrupted()
        mapped = environment_error(exc)
        if mapped is None:
            raise
        return _fail(mapped)


def _interrupted() -> int:
    from split_assets.defs.launch import interrupted

    return _fail(interrupted())


def _fail(exc: SplitAssetsError) -> int:
    _err(f"error: {exc.line()}")
    return exc.exit_code


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return run(args.config, args.dry_run, args.generated_at, args.allow_degraded,
                   args.no_wait)
    if args.command == "fingerprint":
        return fingerprint(args.config, args.register, args.diff)
    if args.command == "review":
        return review(args)
    if args.command == "agreement":
        return agreement(args.a, args.b, args.config)
    if args.command == "verify":
        return verify(args.pools_json, args.config, args.recompute)
    if args.command == "import":
        return import_run(args)
    if args.command == "compare":
        return compare(args.candidate, args.control, args.config, args.pool, args.json)
    if args.command == "export-signals":
        return export_signals(args.pool, args.out, args.config)
    if args.command == "signals":
        return signals_copy(args.to, args.config)
    return demo(args.dir)


if __name__ == "__main__":
    entry()
