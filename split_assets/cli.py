"""``split-assets``: run, fingerprint, verify, demo. Expected errors are one line on stderr
(``error: <what> (<where>): <how to fix>``) with exit 2 for what the user must fix and exit 1
for a run that failed otherwise."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from split_assets.config import load_config
from split_assets.errors import RunFailure, SplitAssetsError, UserError

DEFAULT_DEMO_DIR = "demo-workspace"


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


def _failure_of(result: Any) -> SplitAssetsError:
    """The error that failed a Dagster run, mapped back to our error classes."""
    user_classes = {cls.__name__ for cls in _subclasses(UserError)} | {"UserError"}
    run_classes = {cls.__name__ for cls in _subclasses(RunFailure)} | {"RunFailure"}
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            if not evaluation.passed:
                desc = (evaluation.description or "").strip()
                return RunFailure(f"check {evaluation.check_name} failed: {desc}",
                                  evaluation.asset_key.to_user_string(),
                                  "see the check's metadata in the Dagster UI (make ui)")
    for event in result.all_events:
        if event.event_type_value != "STEP_FAILURE":
            continue
        error = event.step_failure_data.error
        while error is not None:
            if error.cls_name in user_classes | run_classes:
                text = error.message.split(": ", 1)[-1].strip()
                return UserError(text) if error.cls_name in user_classes else RunFailure(text)
            error = error.cause
        top = event.step_failure_data.error
        return RunFailure(f"step {event.step_key} failed: {top.cls_name}: "
                          f"{top.message.strip().splitlines()[0] if top.message else ''}",
                          "dagster run", "see the run's logs above or in the Dagster UI")
    return RunFailure("the Dagster run failed", "dagster run", "see the logs above")


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def run(config: Path | None, dry_run: bool = False, generated_at: str | None = None) -> int:
    """Validate, register the fingerprint partition and materialize every asset and check."""
    from split_assets import pipeline

    generated_at = _check_generated_at(generated_at)
    loaded = load_config(config)
    ctx = pipeline.make_context(loaded)
    benchmark, preds = pipeline.load_inputs(ctx)
    wrong = pipeline.wrong_to_diagnose(preds)
    done = len(pipeline.done_ids(loaded.paths.signals_db, ctx.run_id, ctx.fingerprint.key))
    todo = max(0, len(wrong) - done)
    cases = pipeline.build_cases(ctx, benchmark, wrong)  # fails early if context is missing
    if ctx.loaded.config.diag.judge == "openai":
        from split_assets.judge.governed import check_environment

        check_environment()
    if dry_run:
        calls = todo * ctx.judge.estimated_calls_per_question()
        tokens = 0
        if calls:
            from split_assets.judge.prompts import load_templates

            templates = load_templates(loaded.paths.prompts_dir, ctx.judge.required_templates())
            done_ids = pipeline.done_ids(loaded.paths.signals_db, ctx.run_id,
                                         ctx.fingerprint.key)
            tokens = sum(ctx.judge.estimated_tokens(c, templates) for c in cases
                         if c.question.question_id not in done_ids)
        print(f"fingerprint={ctx.fingerprint.key}")
        print(f"split_id={ctx.split_id}")
        print(f"questions={len(preds)}")
        print(f"wrong={sum(not p.correct for p in preds)}")
        print(f"infra_t0={sum(p.infra and not p.correct for p in preds)}")
        print(f"to_diagnose={todo}")
        print(f"already_diagnosed={done}")
        print(f"estimated_calls={calls}")
        print(f"estimated_tokens={tokens}")
        print(f"out_dir={ctx.out_dir}")
        return 0

    from split_assets.definitions import SPLIT_JOB, make_definitions
    from split_assets.instance import get_instance, register_partition
    from split_assets.resources import GENERATED_AT_TAG

    instance = get_instance()
    register_partition(instance, ctx.fingerprint.key)
    job = make_definitions(loaded.path).resolve_job_def(SPLIT_JOB)
    tags = {GENERATED_AT_TAG: generated_at} if generated_at else {}
    run_config = {"loggers": {"console": {"config": {"log_level": "DEBUG"}}}}
    result = job.execute_in_process(run_config=run_config, instance=instance,
                                    partition_key=ctx.fingerprint.key, tags=tags,
                                    raise_on_error=False)
    if not result.success:
        raise _failure_of(result)
    pools = ctx.out_dir / "pools.json"
    print(f"fingerprint={ctx.fingerprint.key}")
    print(f"split_id={ctx.split_id}")
    print(f"pools={pools}")
    manifest_path = ctx.out_dir / "split_manifest.json"
    print(f"pools_sha256={json.loads(manifest_path.read_bytes())['pools_sha256']}")
    print(f"manifest={manifest_path}")
    evaluation = ctx.out_dir / "evaluation.json"
    if loaded.config.evaluation.candidates and evaluation.is_file():
        print(f"evaluation={evaluation}")
    return 0


def compare(candidate: str, control: str | None, config: Path | None,
            pools: list[str] | None, as_json: bool) -> int:
    """``split-assets compare``: the candidate against the baseline on the frozen pools."""
    from split_assets import pipeline
    from split_assets.evaluation.report import POOLS, compare_runs, text

    ctx = pipeline.make_context(load_config(config))
    where = "--control"
    if control is None and ctx.loaded.config.evaluation.control_run is not None:
        control, where = ctx.loaded.config.evaluation.control_run, "evaluation.control_run"
    chosen = tuple(p for p in POOLS if p in (pools or POOLS))
    report = compare_runs(ctx, candidate, control, chosen, control_where=where)
    print(json.dumps(report, indent=1, sort_keys=True) if as_json else text(report))
    return 0


def export_signals(pool: str, out: Path, config: Path | None) -> int:
    """``split-assets export-signals``: the train pool's diagnoses as JSONL."""
    from split_assets import pipeline
    from split_assets.data.signals import SignalStore
    from split_assets.evaluation.report import load_pools
    from split_assets.lib.canonical import atomic_write_bytes

    if pool != "train":
        raise UserError(f"--pool {pool} refused: only the train pool's diagnoses may be "
                        "exported", "--pool", "the evolution loop must never read validation "
                                              "or test diagnoses; use --pool train")
    ctx = pipeline.make_context(load_config(config))
    doc = load_pools(ctx.out_dir, ctx.loaded.path)
    train = set(doc["pools"]["train"])
    with SignalStore(ctx.loaded.paths.signals_db) as store:
        rows = [r for r in store.rows(ctx.run_id, ctx.fingerprint.key) if r.question_id in train]
    lines = []
    for row in rows:
        record = asdict(row)
        record["pool"] = "train"
        lines.append(json.dumps(record, sort_keys=True, ensure_ascii=False))
    atomic_write_bytes(out, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    print(f"wrote {len(lines)} diagnoses of the train pool ({len(doc['videos']['train'])} "
          f"videos, split {doc['split_id']}, {ctx.fingerprint.key}) to {out}")
    return 0


def fingerprint(config: Path | None, register: bool = False) -> int:
    """Print the fingerprint key, then its components."""
    from split_assets.pipeline import make_context

    ctx = make_context(load_config(config))
    print(ctx.fingerprint.key)
    for name, value in ctx.fingerprint.components.items():
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        print(f"{name}={shown}")
    if register:
        from split_assets.instance import get_instance, register_partition

        new = register_partition(get_instance(), ctx.fingerprint.key)
        _err(f"partition {ctx.fingerprint.key} {'registered' if new else 'already registered'}")
    return 0


def verify(pools_json: Path, config: Path | None) -> int:
    """Re-check the six invariants of a frozen pools.json."""
    from split_assets import pipeline
    from split_assets.data.signals import SignalStore
    from split_assets.split.invariants import verify as verify_invariants

    if not pools_json.is_file():
        raise UserError(f"pools file not found: {pools_json}", "POOLS_JSON",
                        "pass the pools.json printed by 'split-assets run'")
    try:
        doc = json.loads(pools_json.read_bytes())
        fp, run_id = doc["diag_fingerprint"], doc["baseline_run_id"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise UserError("not a pools.json written by split-assets", str(pools_json),
                        "pass the pools.json printed by 'split-assets run'") from None
    ctx = pipeline.make_context(load_config(config))
    if run_id != ctx.run_id:
        raise UserError(f"pools.json is of run {run_id!r}, the config of {ctx.run_id!r}",
                        str(pools_json), "pass the config the split was made with")
    benchmark, preds = pipeline.load_inputs(ctx)
    if not ctx.loaded.paths.signals_db.is_file():
        raise UserError(f"signal store not found: {ctx.loaded.paths.signals_db}",
                        "paths.signals_db", "pass the config the split was made with")
    with SignalStore(ctx.loaded.paths.signals_db) as store:
        rows = store.rows(run_id, fp)
    problem = pipeline.split_problem(ctx, preds, rows, benchmark)
    manifest_path = pools_json.parent / "split_manifest.json"
    expected = (json.loads(manifest_path.read_bytes())["pools_sha256"]
                if manifest_path.is_file() else None)
    results = verify_invariants(problem, pools_json, expected)
    for r in results:
        print(f"{'ok  ' if r.passed else 'FAIL'} {r.name}: {r.detail}")
    failed = [r.name for r in results if not r.passed]
    if failed:
        raise RunFailure(f"{len(failed)} invariant(s) failed: {', '.join(failed)}",
                         str(pools_json), "re-freeze the split with 'split-assets run'")
    return 0


def demo(directory: Path) -> int:
    """Build the sample workspace in ``directory`` and run it."""
    from split_assets.demo import build_workspace

    summary = build_workspace(directory)
    _err(f"sample workspace: {summary.n_videos} videos, {summary.n_questions} questions, "
         f"baseline accuracy {summary.accuracy:.3f}, {summary.n_infra} INFRA, in {directory}")
    return run(summary.config_path)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="split-assets",
        description="Frozen, reproducible, outcome-driven train/validation/test splits.")
    sub = parser.add_subparsers(dest="command", required=True)
    config_help = "config file (default: $SPLIT_ASSETS_CONFIG or config/video_split.yaml)"

    p = sub.add_parser("run", help="materialize every asset and check of the config's partition")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--dry-run", action="store_true",
                   help="validate config and inputs, print the plan; call no judge, write nothing")
    p.add_argument("--generated-at", help="pin the manifest's generated_at (ISO 8601)")

    p = sub.add_parser("fingerprint", help="print the diagnosis fingerprint and its components")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--register", action="store_true",
                   help="also register it as a partition in the Dagster instance")

    p = sub.add_parser("verify", help="re-check the six invariants of a frozen pools.json")
    p.add_argument("pools_json", type=Path, metavar="POOLS_JSON")
    p.add_argument("--config", type=Path, help=config_help)

    p = sub.add_parser("import", help="import published results or predictions as a run")
    kinds = p.add_subparsers(dest="kind", required=True)
    k = kinds.add_parser("videomme", help="an official-layout results file (JSON list of videos)")
    k.add_argument("--results", type=Path, required=True, help="the results JSON file")
    _import_args(k)
    k = kinds.add_parser("predictions",
                         help="flat JSONL {question_id, response | prediction, stop_reason?}")
    k.add_argument("--jsonl", type=Path, required=True, help="the predictions JSONL file")
    _import_args(k)
    k.add_argument("--role", choices=("reference", "candidate", "control"),
                   help="also register the run in video_split.yaml: a reference run of the "
                        "answer_only judge, an evaluation candidate, or the control run")

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

    p = sub.add_parser("demo", help="build the sample workspace and run it")
    p.add_argument("--dir", type=Path, default=Path(DEFAULT_DEMO_DIR),
                   help=f"where to build it (default: {DEFAULT_DEMO_DIR}/)")
    return parser


def _import_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-id", required=True, help="the run id to store the answers under")
    parser.add_argument("--workspace", type=Path, required=True,
                        help="the workspace folder (created by the first import)")
    parser.add_argument("--replace", action="store_true",
                        help="overwrite a run id already present (and delete its signals)")
    parser.add_argument("--partial", action="store_true",
                        help="accept a run that answers only some benchmark questions")


def import_run(args: argparse.Namespace) -> int:
    """``split-assets import videomme|predictions``."""
    from split_assets import importers

    if args.kind == "videomme":
        summary = importers.import_videomme(args.results, args.run_id, args.workspace,
                                            args.replace, args.partial)
    else:
        summary = importers.import_predictions(args.jsonl, args.run_id, args.workspace,
                                               args.replace, args.partial, args.role)
    for line in summary.lines():
        print(line)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            code = run(args.config, args.dry_run, args.generated_at)
        elif args.command == "fingerprint":
            code = fingerprint(args.config, args.register)
        elif args.command == "verify":
            code = verify(args.pools_json, args.config)
        elif args.command == "import":
            code = import_run(args)
        elif args.command == "compare":
            code = compare(args.candidate, args.control, args.config, args.pool, args.json)
        elif args.command == "export-signals":
            code = export_signals(args.pool, args.out, args.config)
        else:
            code = demo(args.dir)
    except SplitAssetsError as exc:
        _err(f"error: {exc.line()}")
        return exc.exit_code
    return code


if __name__ == "__main__":
    sys.exit(main())
