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
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from split_assets.errors import RunFailure, SplitAssetsError, UserError, environment_error

if TYPE_CHECKING:
    from split_assets.data.importers import ImportGate, ImportSummary
    from split_assets.session import Session


def _session(config: Path | None) -> Session:
    """The command's session (imported here, not at the top: this module loads in
    milliseconds, so a Ctrl-C at any moment after the interpreter starts is one line)."""
    from split_assets.session import Session

    return Session.open(config)


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
        allow_degraded: int = 0, no_wait: bool = False, refreeze: bool = False) -> int:
    """Validate, register the fingerprint partition and materialize every asset and check
    (``dry_run``: print the plan instead; call no judge, write nothing; ``refreeze``: a new
    split after a test look at another split of the baseline)."""
    from split_assets.diagnosis.preflight import preflight
    from split_assets.shell.tags import ALLOW_DEGRADED_TAG, GENERATED_AT_TAG, NO_WAIT_TAG

    generated_at = _check_generated_at(generated_at)
    if allow_degraded < 0:
        raise UserError(f"--allow-degraded {allow_degraded} is negative", "--allow-degraded",
                        "pass 0 or more")
    s = _session(config)
    partition = s.partition
    assert s.judge is not None  # a command's session is the config's own
    if dry_run:  # its estimate renders every prompt: collect as usual
        from split_assets.lib import gc_pause

        gc_pause.resume()
    # before anything is paid for or written
    checked = preflight(s.inputs, partition, s.judge, estimate=dry_run, refreeze=refreeze)
    if dry_run:
        return _print(checked.lines(s.inputs.predictions, partition))
    from split_assets.shell.launch import run_split_job

    tags = {GENERATED_AT_TAG: generated_at} if generated_at else {}
    options: dict[str, object] = {}
    if allow_degraded:  # the run config decides; the tags show it in the UI's run list
        tags[ALLOW_DEGRADED_TAG] = str(allow_degraded)
        options["allow_degraded"] = allow_degraded
    if no_wait:
        tags[NO_WAIT_TAG] = "1"
        options["no_wait"] = True
    if refreeze:
        options["refreeze_after_test_look"] = True
    for line in run_split_job(s, tags, options):
        _err(f"warning: {line}")
    files, budgets = partition.files, s.loaded.config.evaluation
    evaluation = ([("evaluation", files.evaluation)] if budgets.candidates
                  and files.evaluation.is_file() else [])
    return _print([("fingerprint", partition.key), ("split_id", partition.split_id),
                   ("pools", files.pools),
                   ("pools_sha256", partition.frozen_manifest()["pools_sha256"]),
                   ("manifest", files.manifest), *evaluation,
                   ("test_looks_max", budgets.test_looks_max or "none"),
                   ("feedback_budget", budgets.feedback_budget)])


def _print(lines: list[tuple[str, object]]) -> int:
    for key, value in lines:
        print(f"{key}={value}")
    return 0


def fingerprint(config: Path | None, register: bool = False,
                diff: list[str] | None = None) -> int:
    """Print the fingerprint key, then its components (``diff``: what differs between two)."""
    partition = _session(config).partition
    own = partition.fingerprint
    if diff:
        from split_assets.fingerprint import components_of, difference

        def recorded(key: str) -> dict | None:
            with partition.store(read_only=True) as store:
                return store.fingerprint_components(key)

        a, b = (components_of(own, key, recorded, str(partition.loaded.paths.signals_db))
                for key in diff)
        lines = difference(a, b)
        print("\n".join(lines) if lines else f"{diff[0]} and {diff[1]}: the same components")
        return 0
    print(own.key)
    for name, value in own.components.items():
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        print(f"{name}={shown}")
    if register:
        from split_assets.instances import name_for
        from split_assets.shell.instance import get_instance, register_partition
        from split_assets.shell.names import Names

        names = Names(name_for(partition.loaded.path))
        new = register_partition(get_instance(), own.key, names.partitions)
        _err(f"partition {own.key} {'registered' if new else 'already registered'}")
    return 0


def agreement(a: str, b: str, config: Path | None) -> int:
    """``split-assets agreement``: kappa between two judges on the questions both diagnosed."""
    from split_assets.evaluation.judges import compare_fingerprints, text

    print(text(compare_fingerprints(_session(config).partition, a, b)))
    return 0


def review(args: argparse.Namespace) -> int:
    """``split-assets review export|import``: human labels for the judge's verdicts."""
    s = _session(args.config)
    partition = s.partition
    if args.action == "export":
        from split_assets.review.sample import export_review, parse_stratify

        written, strata = export_review(s.inputs, partition, args.n,
                                        parse_stratify(args.stratify), args.out,
                                        args.show_judge, args.seed)
        print(f"wrote {written} answers to review ({strata} strata, "
              f"{partition.key}) to {args.out}")
        return 0
    from split_assets.review.labels import import_review

    done = import_review(s.inputs, partition, args.csv, args.reviewer)
    print(f"imported {done.labelled} labels of {args.reviewer} for run {partition.run_id} "
          f"({done.unlabelled} rows left blank) into {partition.loaded.paths.signals_db}")
    return 0


def verify(pools_json: Path, config: Path | None, recompute: bool = False) -> int:
    """Re-check a frozen pools.json against the config's inputs."""
    from split_assets.split.checking import check_pools_file, read_pools_file

    read_pools_file(pools_json)  # a wrong file is refused before the config is read
    s = _session(config)
    results = check_pools_file(s.inputs, s.partition, pools_json, recompute)
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


def demo(directory: Path, name: str = "demo", shape: str = "videomme") -> int:
    """Build the sample workspace in ``directory`` (shaped like ``shape``), declare it as
    workspace ``name`` (so ``make ui`` shows it) and run it."""
    from split_assets.demo import build_shaped
    from split_assets.instances import declare, declared_as

    declared_as(name, directory / "video_split.yaml")  # a taken name: refused before building
    config, built = build_shaped(directory, shape)
    _err(built)
    where, new = declare(name, config)
    if new:
        _err(f"declared workspace {name!r} in {where}")
    return run(config)


def workspace(args: argparse.Namespace) -> int:
    """``split-assets workspace add|list``: the workspaces the code location serves."""
    from split_assets.instances import declare, declared, workspaces_dir

    if args.action == "add":
        where, new = declare(args.name, args.config)
        print(f"{'declared' if new else 'already declared:'} workspace {args.name} "
              f"({args.config.absolute()}) in {where}")
        return 0
    found = declared()
    if not found:
        _err(f"no workspace declared in {workspaces_dir()}")
    for d in found:
        print(f"{d.name}\t{d.config}\t{d.defs_yaml}")
    return 0


def import_run(args: argparse.Namespace) -> int:
    """``split-assets import videomme|predictions|lmms-eval|vlmevalkit``; once a split is
    frozen, through the gate of ``evaluation/sealed.py``."""
    from split_assets.data import importers
    from split_assets.evaluation.sealed import import_gate

    gate = import_gate(args.workspace, args.spend_test_look)
    if args.kind == "videomme":
        summary = importers.import_videomme(args.results, args.run_id, args.workspace,
                                            args.replace, args.partial, args.role, gate)
    elif args.kind in ("lmms-eval", "vlmevalkit"):
        summary = _import_harness(args, gate)
    else:
        summary = importers.import_predictions(args.jsonl, args.run_id, args.workspace,
                                               args.replace, args.partial, args.role, gate)
    for line in summary.lines():
        print(line)
    return 0


def _import_harness(args: argparse.Namespace, gate: ImportGate) -> ImportSummary:
    """lmms-eval samples or a VLMEvalKit table: Video-MME's importer, or a profile's."""
    from split_assets.data import field_map, frameworks, harness_lines

    options = {"replace": args.replace, "partial": args.partial, "role": args.role,
               "gate": gate}
    if args.kind == "lmms-eval":
        profile = field_map.lmms_profile(args.samples, args.benchmark, args.field_map)
        if profile is None:
            return frameworks.import_lmms_eval(args.samples, args.run_id, args.workspace,
                                               task=args.task, **options)
        return harness_lines.import_lmms_lines(profile, args.samples, args.run_id,
                                               args.workspace, args.annotations, args.task,
                                               args.pool_task, **options)
    profile = field_map.vlm_profile(args.results, args.benchmark, args.field_map)
    if profile is None:
        return frameworks.import_vlmevalkit(args.results, args.run_id, args.workspace,
                                            **options)
    return harness_lines.import_vlm_rows(profile, args.results, args.run_id, args.workspace,
                                         **options)


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
    from split_assets.lib import gc_pause

    gc_pause.pause()  # until the command's work starts (lib/gc_pause.py)
    try:
        code = main(settle=True)
    except KeyboardInterrupt:  # in the instant between the outcome and settling
        code = _interrupted()
    # all is written: skip the interpreter's last collection over Dagster's objects (0.8 s)
    gc_pause.freeze()
    sys.exit(code)


def _main(argv: Sequence[str] | None) -> int:
    from split_assets.lib import interrupts

    try:
        from split_assets.cli_parser import build_parser

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
        from split_assets.split.errors import SplitImpossible

        if isinstance(exc, SplitImpossible):  # the split core's data, worded once
            from split_assets.messages import worded

            return _fail(worded(exc))
        mapped = environment_error(exc)
        if mapped is None:
            raise
        return _fail(mapped)


def _interrupted() -> int:
    from split_assets.errors import interrupted  # nothing more to import (errors.py)
    return _fail(interrupted())


def _fail(exc: SplitAssetsError) -> int:
    _err(f"error: {exc.line()}")
    return exc.exit_code


def _dispatch(args: argparse.Namespace) -> int:
    if args.command not in ("run", "demo"):  # a run resumes it before the Dagster run starts
        from split_assets.lib import gc_pause

        gc_pause.resume()
    if args.command == "run":
        return run(args.config, args.dry_run, args.generated_at, args.allow_degraded,
                   args.no_wait, args.refreeze_after_test_look)
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
    if args.command in ("export-signals", "export"):
        from split_assets import cli_export

        return cli_export.dispatch(args)
    if args.command == "signals":
        return signals_copy(args.to, args.config)
    if args.command == "workspace":
        return workspace(args)
    if args.command == "judge":
        from split_assets import cli_judge

        return cli_judge.dispatch(args)
    if args.command in ("compare", "ledger", "feedback"):
        from split_assets import cli_evaluation

        return cli_evaluation.dispatch(args)
    return demo(args.dir, args.name, args.shape)


if __name__ == "__main__":
    entry()
