"""Files in and out: ``split-assets import videomme|predictions|lmms-eval|vlmevalkit`` (other
tools' results as a run; once a split is frozen, through the gate of ``evaluation/sealed.py``),
``export-signals`` (the train pool's diagnoses) and ``export lmms-eval`` (a pool as an
lmms-eval task)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from split_assets.cli.arguments import Subcommands, actions, command, config_arg
from split_assets.cli.terminal import benchmark_name, open_session, say
from split_assets.errors import UserError


def add_import(sub: Subcommands) -> None:
    p = command(sub, "import", "import published results or predictions as a run")
    # what only some kinds read (a profile, lmms-eval's options)
    p.set_defaults(benchmark=None, field_map=None, task=None, annotations=[], pool_task=None)
    kinds = actions(p, dest="kind", metavar="KIND")
    k = command(kinds, "videomme", "an official-layout results file (JSON list of videos)",
                handle_import)
    k.add_argument("--results", type=Path, required=True, help="the results JSON file")
    _import_args(k)
    k = command(kinds, "predictions",
                "flat JSONL {question_id, response | prediction, stop_reason?}", handle_import)
    k.add_argument("--jsonl", type=Path, required=True, help="the predictions JSONL file")
    _import_args(k)
    k = command(kinds, "lmms-eval", "lmms-eval --log_samples output of a videomme task "
                                    "(<date>_samples_<task>.jsonl)", handle_import)
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
    k = command(kinds, "vlmevalkit", "VLMEvalKit's prediction table of Video-MME, "
                                     "LongVideoBench or MVBench (.xlsx, .tsv, .csv)",
                handle_import)
    k.add_argument("--results", type=Path, required=True, help="the prediction table")
    _profile_args(k)
    _import_args(k)


def _profile_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", help="the benchmark when the file names do not say "
                        "(videomme, longvideobench, mlvu, mvbench, nextqa, egoschema, "
                        "tempcompass, perceptiontest)")
    parser.add_argument("--map", type=Path, metavar="FILE.yaml", dest="field_map",
                        help="a field map for a benchmark without a built-in profile")


def _import_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run-id", required=True, help="the run id to store the answers under")
    parser.add_argument("--workspace", type=Path, required=True,
                        help="the workspace folder (created by the first import)")
    parser.add_argument("--replace", action="store_true",
                        help="overwrite a run id already present (and delete its signals)")
    parser.add_argument("--partial", action="store_true",
                        help="accept a run that answers only some benchmark questions")
    parser.add_argument("--role", choices=("reference", "candidate", "control"),
                        help="register the run in video_split.yaml as a reference run of the "
                             "answer_only judge, an evaluation candidate, or the control run "
                             "(required once a split is frozen)")
    parser.add_argument("--spend-test-look", action="store_true",
                        help="import a candidate that answers test questions (a look at test) "
                             "beyond evaluation.test_looks_max")
    parser.add_argument("--reference", action="append", type=Path, default=[], metavar="FILE",
                        help="another run of the same benchmark (another model, checkpoint or "
                             "setting) in this command's format, imported beside the run as a "
                             "reference: it tells a defect (T2) from a lapse and keeps test "
                             "representative for models like it; repeatable, one file per run")
    parser.add_argument("--reference-id", action="append", default=[], metavar="ID",
                        help="the run id of each --reference, in the same order (default: "
                             "lmms-eval's model folder, else the file's name, made unique)")
    parser.add_argument("--refreeze-after-test-look", action="store_true",
                        help="with --role reference: add a reference after a test look; the "
                             "next split-assets run needs the same flag and freezes a new "
                             "split that inherits every earlier look")


def add_export_signals(sub: Subcommands) -> None:
    p = command(sub, "export-signals", "write the train pool's diagnoses as JSONL (never "
                                       "validation/test)", handle_export_signals)
    p.add_argument("--pool", default="train", help="train (the only pool allowed)")
    p.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    config_arg(p)


def add_export(sub: Subcommands) -> None:
    p = command(sub, "export", "a frozen pool as a harness task (lmms-eval) or as rows "
                               "(jsonl, hf)")
    kinds = actions(p, dest="kind", metavar="FORMAT")
    k = command(kinds, "lmms-eval",
                "an lmms-eval task folder that runs the stock task on one pool's questions "
                "only", handle_export_lmms_eval)
    k.add_argument("--pool", required=True, choices=("train", "validation", "trainval", "test"),
                   help="the pool (test: a look, within evaluation.test_looks_max)")
    k.add_argument("--out", type=Path, help="where to write the task's folder <name>/ "
                                            "(default: <paths.out_dir>/lmms_eval_tasks/)")
    k.add_argument("--task", help="a stock task variant (videomme_w_subtitle, "
                                  "longvideobench_val_i; default: videomme, "
                                  "longvideobench_val_v, ...)")
    k.add_argument("--spend-test-look", action="store_true",
                   help="export test beyond evaluation.test_looks_max")
    config_arg(k)
    for kind, what in (("jsonl", "a JSONL file"), ("hf", "a Hugging Face datasets folder "
                                                         "(parquet per pool, a dataset card)")):
        k = command(kinds, kind, f"a pool's questions with the baseline's answers and (train) "
                                 f"diagnoses as {what}; never test", handle_export_rows)
        k.add_argument("--pool", required=True,
                       help="train, validation or trainval (train and validation, each its "
                            "own split); test is refused")
        k.add_argument("--out", type=Path, required=True,
                       help="the file (jsonl) or the new folder (hf) to write")
        config_arg(k)


def handle_import(args: argparse.Namespace) -> int:
    """One file (lmms-eval: several) of another tool's results as a run."""
    from split_assets.app.import_gate import import_gate
    from split_assets.importing.kinds import import_results
    from split_assets.importing.references import import_transaction, reference_plan

    if args.reference_id and not args.reference:
        raise UserError("--reference-id without --reference", "--reference-id",
                        "pass each reference's file with --reference FILE")
    if args.reference and (args.role in ("candidate", "control") or args.replace):
        flag = "--replace" if args.replace else f"--role {args.role}"
        raise UserError(f"--reference with {flag}: references are imported beside the "
                        "baseline or another reference, as one unit", "--reference",
                        "import the references in a command of their own (--role reference)"
                        "; nothing was imported")
    refs = reference_plan(args.kind, args.reference, args.reference_id, args.run_id,
                          args.workspace) if args.reference else []
    gate = import_gate(args.workspace, args.spend_test_look, args.refreeze_after_test_look)
    files = args.samples if args.kind == "lmms-eval" else [
        args.jsonl if args.kind == "predictions" else args.results]
    options = {"benchmark": args.benchmark, "field_map": args.field_map, "task": args.task,
               "pool_task": args.pool_task}
    with import_transaction(args.workspace, enabled=bool(refs)):  # one unit: all or nothing
        summary = import_results(args.kind, files, args.run_id, args.workspace,
                                 annotations=args.annotations, replace=args.replace,
                                 partial=args.partial, role=args.role, gate=gate, **options)
        lines, said = summary.lines(), summary.said()
        for path, run_id in refs:  # a reference counts where it answers: partial
            lines += import_results(args.kind, [path], run_id, args.workspace, annotations=[],
                                    replace=False, partial=True, role="reference",
                                    gate=import_gate(args.workspace, False,
                                                     args.refreeze_after_test_look),
                                    **options).lines()
    for line in lines:
        print(line)
    for line in said:  # the test look this import was: where the user reads messages
        say(line)
    return 0


def handle_export_signals(args: argparse.Namespace) -> int:
    return export_signals(args.pool, args.out, args.config)


def export_signals(pool: str, out: Path, config: Path | None) -> int:
    """``split-assets export-signals``: the train pool's diagnoses as JSONL."""
    from split_assets.evaluation.comparison import load_pools
    from split_assets.lib.canonical import atomic_write_bytes

    if pool != "train":
        raise UserError(f"--pool {pool} refused: only the train pool's diagnoses may be "
                        "exported", "--pool", "the evolution loop must never read validation "
                                              "or test diagnoses; use --pool train")
    if out.is_dir():
        raise UserError(f"--out names a folder: {out}", "--out",
                        "name the JSONL file to write, e.g. train_signals.jsonl")

    partition = open_session(config).partition
    doc = load_pools(partition)
    train = set(doc["pools"]["train"])
    rows = [r for r in partition.rows(required=True) if r.question_id in train]
    lines = [json.dumps({**asdict(row), "pool": "train"}, sort_keys=True, ensure_ascii=False)
             for row in rows]
    atomic_write_bytes(out, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    print(f"wrote {len(lines)} diagnoses of the train pool ({len(doc['videos']['train'])} "
          f"videos, split {doc['split_id']}, {partition.key}) to {out}")
    for warning in partition.frozen_manifest().get("warnings", []):  # not outcome-driven
        say(f"warning: {warning}")
    return 0


def handle_export_rows(args: argparse.Namespace) -> int:
    """``split-assets export jsonl|hf --pool P``: the pool's rows for an evolution loop."""
    from split_assets.evaluation.loop_export import (
        NOTICE,
        check_loop_pool,
        pool_rows,
        write_hf,
        write_jsonl,
    )

    check_loop_pool(args.pool)
    out: Path = args.out
    if args.kind == "jsonl" and out.is_dir():
        raise UserError(f"--out names a folder: {out}", "--out",
                        "name the JSONL file to write, e.g. train.jsonl")
    s = open_session(args.config)
    rows = pool_rows(s.inputs, s.partition, args.pool, benchmark_name(s))
    n = sum(len(part) for part in rows.values())
    if args.kind == "jsonl":
        write_jsonl(rows, out)
    else:
        write_hf(rows, out, s.partition.frozen_manifest(), benchmark_name(s))
    print(f"wrote {n} questions of {', '.join(rows)} (split {s.partition.split_id}, "
          f"{s.partition.key}) to {out}")
    say(NOTICE)
    return 0


def handle_export_lmms_eval(args: argparse.Namespace) -> int:
    """``split-assets export lmms-eval --pool P``: the pool as an lmms-eval task folder
    (``evaluation/harness_tasks.py``); exporting test is a look at test."""
    from split_assets.evaluation.harness_tasks import export_pool_task

    s = open_session(args.config)
    for line in export_pool_task(s.inputs, s.partition, args.pool, args.out,
                                 args.spend_test_look, args.task):
        print(line)
    return 0
