"""``split-assets``: run, fingerprint, verify, import, compare, export-signals, demo. Expected
errors are one line on stderr (``error: <what> (<where>): <how to fix>``) with exit 2 for what
the user must fix (config, input, environment), exit 1 for a run that failed otherwise, and 130
for Ctrl-C."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.errors import (
    Interrupted,
    ReportedError,
    RunFailure,
    SplitAssetsError,
    UserError,
    environment_error,
)
from split_assets.lib.failpoints import failpoint

if TYPE_CHECKING:
    from split_assets.config import LoadedConfig

DEFAULT_DEMO_DIR = "demo-workspace"


def load_config(path: Path | None) -> LoadedConfig:
    """The validated config (imported here, not at the top: the module loads in milliseconds,
    so a Ctrl-C at any moment after the interpreter starts is one line, not a traceback)."""
    from split_assets.config import load_config as load

    return load(path)


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
    """The error that failed a Dagster run: an expected error's one-line failure description
    (with its exit code), else a failed check's name and detail, else the root cause of the
    exception."""
    failures = [e.step_failure_data for e in result.all_events
                if e.event_type_value == "STEP_FAILURE"]
    for data in failures:
        user = data.user_failure_data
        if user is not None and user.description:
            code = user.metadata.get("exit_code")
            value = getattr(code, "value", code)
            return ReportedError(user.description, int(value) if value is not None else 1)
    for event in result.all_events:  # a blocking check that failed on the files on disk
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            if not evaluation.passed:
                desc = (evaluation.description or "").strip()
                return RunFailure(f"check {evaluation.check_name} failed: {desc}",
                                  evaluation.asset_key.to_user_string(),
                                  "see the check's metadata in the Dagster UI (make ui); "
                                  "'split-assets verify' re-checks the files")
    for event in result.all_events:
        if event.event_type_value != "STEP_FAILURE":
            continue
        error = event.step_failure_data.error
        root = error
        while error is not None:
            if error.cls_name in ("KeyboardInterrupt", "DagsterExecutionInterruptedError"):
                return _interrupted()
            root = error
            error = error.cause
        message = root.message.strip().splitlines()[0] if root and root.message else ""
        return RunFailure(f"step {event.step_key} failed: {message}", "dagster run",
                          "unexpected: the run's logs (make ui) have the stack trace; report "
                          "it as a bug")
    return RunFailure("the Dagster run failed", "dagster run", "see the logs above")


def _interrupted() -> Interrupted:
    return Interrupted("interrupted", "Ctrl-C", "finished diagnoses are kept; run the same "
                                                "command again to resume without paying twice")


def run(config: Path | None, dry_run: bool = False, generated_at: str | None = None,
        allow_degraded: int = 0, no_wait: bool = False) -> int:
    """Validate, register the fingerprint partition and materialize every asset and check."""
    from split_assets import pipeline
    from split_assets.data.signals import SignalStore

    generated_at = _check_generated_at(generated_at)
    if allow_degraded < 0:
        raise UserError(f"--allow-degraded {allow_degraded} is negative", "--allow-degraded",
                        "pass 0 or more")
    loaded = load_config(config)
    ctx = pipeline.make_context(loaded)
    benchmark, preds = pipeline.load_inputs(ctx)
    wrong = pipeline.wrong_to_diagnose(preds)
    cases = pipeline.build_cases(ctx, benchmark, wrong)  # fails early if context is missing
    if ctx.loaded.config.diag.judge == "openai":
        from split_assets.judge.governed import check_environment

        check_environment()
    store = SignalStore.for_reading(loaded.paths.signals_db)
    try:
        # counts alone can show the split is impossible: say so before paying for anything
        pipeline.check_before_diagnosis(ctx, benchmark, preds, store)
        done_ids = store.done_question_ids(ctx.run_id, ctx.fingerprint.key)
        if dry_run:
            todo = [c for c in cases if c.question.question_id not in done_ids]
            plan = pipeline.dry_run_estimate(ctx, todo, store)
    finally:
        store.close()
    if dry_run:
        print(f"fingerprint={ctx.fingerprint.key}")
        print(f"split_id={ctx.split_id}")
        print(f"questions={len(preds)}")
        print(f"wrong={sum(not p.correct for p in preds)}")
        print(f"infra_t0={sum(p.infra and not p.correct for p in preds)}")
        print(f"to_diagnose={len(todo)}")
        print(f"already_diagnosed={len(wrong) - len(todo)}")
        print(f"cached_answers={plan.cached}")
        print(f"estimated_calls={plan.calls}")
        print(f"estimated_tokens={plan.tokens}")
        print(f"out_dir={ctx.out_dir}")
        return 0

    from split_assets.definitions import SPLIT_JOB, make_definitions
    from split_assets.instance import get_instance, register_partition
    from split_assets.resources import ALLOW_DEGRADED_TAG, GENERATED_AT_TAG, NO_WAIT_TAG

    instance = get_instance()
    register_partition(instance, ctx.fingerprint.key)
    failpoint("run.registered")
    job = make_definitions(loaded.path).resolve_job_def(SPLIT_JOB)
    tags = {GENERATED_AT_TAG: generated_at} if generated_at else {}
    if allow_degraded:
        tags[ALLOW_DEGRADED_TAG] = str(allow_degraded)
    if no_wait:
        tags[NO_WAIT_TAG] = "1"
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
    if out.is_dir():
        raise UserError(f"--out names a folder: {out}", "--out",
                        "name the JSONL file to write, e.g. train_signals.jsonl")
    ctx = pipeline.make_context(load_config(config))
    doc = load_pools(ctx.out_dir, ctx.loaded.path)
    train = set(doc["pools"]["train"])
    with SignalStore.for_reading(ctx.loaded.paths.signals_db, required=True) as store:
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


def verify(pools_json: Path, config: Path | None, recompute: bool = False) -> int:
    """Re-check a frozen pools.json against the config's inputs: the six invariants, the pool
    sizes, each pool's videos and the recorded correctness; with ``recompute``, the selection is
    run again and its bytes compared."""
    from split_assets import pipeline
    from split_assets.data.signals import SignalStore
    from split_assets.split.freeze import MANIFEST_FILE
    from split_assets.split.invariants import rederived
    from split_assets.split.invariants import verify as verify_invariants

    if not pools_json.is_file():
        raise UserError(f"pools file not found: {pools_json}", "POOLS_JSON",
                        "pass the pools.json printed by 'split-assets run'")
    data = pools_json.read_bytes()
    try:
        doc = json.loads(data.decode("utf-8"))
        fp, run_id = doc["diag_fingerprint"], doc["baseline_run_id"]
        for key in ("pools", "videos"):
            if sorted(doc[key]) != ["test", "train", "validation"] or not all(
                    isinstance(v, list) and all(isinstance(x, str) for x in v)
                    for v in doc[key].values()):
                raise TypeError(key)
        if not isinstance(doc["correctness"], dict):
            raise TypeError("correctness")
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
        raise UserError("not a pools.json written by split-assets", str(pools_json),
                        "pass the pools.json printed by 'split-assets run'") from None
    ctx = pipeline.make_context(load_config(config))
    if run_id != ctx.run_id:
        raise UserError(f"pools.json is of run {run_id!r}, the config of {ctx.run_id!r}",
                        str(pools_json), "pass the config the split was made with")
    if fp != ctx.fingerprint.key:
        raise UserError(f"pools.json is of fingerprint {fp}, the config's is "
                        f"{ctx.fingerprint.key}", str(pools_json),
                        "pass the config the split was made with")
    benchmark, preds = pipeline.load_inputs(ctx)
    with SignalStore.for_reading(ctx.loaded.paths.signals_db, required=True) as store:
        rows = store.rows(run_id, fp)
    problem = pipeline.split_problem(ctx, preds, rows, benchmark)
    manifest_path = pools_json.parent / MANIFEST_FILE
    expected = None
    if manifest_path.is_file():
        try:
            expected = json.loads(manifest_path.read_bytes())["pools_sha256"]
        except (ValueError, KeyError, TypeError):
            raise UserError("split_manifest.json is not a manifest written by split-assets",
                            str(manifest_path), "restore it from the run that froze the split"
                            ) from None
    results = verify_invariants(problem, data, expected) + rederived(problem, data)
    if recompute:
        results.append(pipeline.recompute_check(ctx, benchmark, preds, rows, problem, data,
                                                manifest_path))
    for r in results:
        print(f"{'ok  ' if r.passed else 'FAIL'} {r.name}: {r.detail}")
    failed = [r.name for r in results if not r.passed]
    if failed:
        raise RunFailure(f"{len(failed)} check(s) failed: {', '.join(failed)}",
                         str(pools_json), "the file does not match the config's inputs: "
                                          "re-freeze the split with 'split-assets run'")
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

    p = sub.add_parser("verify", help="re-check a frozen pools.json against the config's "
                                      "inputs (invariants, sizes, correctness)")
    p.add_argument("pools_json", type=Path, metavar="POOLS_JSON")
    p.add_argument("--config", type=Path, help=config_help)
    p.add_argument("--recompute", action="store_true",
                   help="also re-run the selection from the inputs and compare the bytes")

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
    try:
        args = build_parser().parse_args(argv)
        return _dispatch(args)
    except SplitAssetsError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        return _fail(_interrupted())
    except Exception as exc:
        mapped = environment_error(exc)
        if mapped is None:
            raise
        return _fail(mapped)


def _fail(exc: SplitAssetsError) -> int:
    _err(f"error: {exc.line()}")
    return exc.exit_code


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return run(args.config, args.dry_run, args.generated_at, args.allow_degraded,
                   args.no_wait)
    if args.command == "fingerprint":
        return fingerprint(args.config, args.register)
    if args.command == "verify":
        return verify(args.pools_json, args.config, args.recompute)
    if args.command == "import":
        return import_run(args)
    if args.command == "compare":
        return compare(args.candidate, args.control, args.config, args.pool, args.json)
    if args.command == "export-signals":
        return export_signals(args.pool, args.out, args.config)
    return demo(args.dir)


if __name__ == "__main__":
    sys.exit(main())
