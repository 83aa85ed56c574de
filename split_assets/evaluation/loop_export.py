"""A frozen pool as rows an evolution loop reads without joining anything itself
(``split-assets export jsonl|hf --pool ...``): one row per question with its text, options,
answer, the baseline's response, letter and correctness, and (train only) its diagnosis.

``hf`` writes a folder ``datasets.load_dataset("parquet", data_dir=...)`` reads as a
``DatasetDict`` whose split names are the pools (``data/<pool>-00000-of-00001.parquet``, the
file pattern ``datasets`` reads a split's name from), with a dataset card (``README.md``)
stating the split's provenance and statistics. Test is never exported this way. The rows hold
the benchmark's question text, which benchmarks such as Video-MME forbid redistributing: the
card says so."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from split_assets.errors import UserError
from split_assets.evaluation.comparison import load_pools
from split_assets.lib.canonical import atomic_write_bytes
from split_assets.sources.json_records import json_records

if TYPE_CHECKING:
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

LOOP_POOLS = {"train": ("train",), "validation": ("validation",),
              "trainval": ("train", "validation")}
DIAGNOSIS_FIELDS = ("tier", "error_type", "cause_category", "evolution_target", "degraded",
                    "infra", "rationale", "confidence")
NOTICE = ("These rows hold the benchmark's own question text, options and answers. Many "
          "benchmarks (Video-MME among them) forbid redistributing their annotation: keep "
          "these files to yourself and share the split card (`split-assets report`), which "
          "carries ids and statistics only.")


def check_loop_pool(pool: str) -> tuple[str, ...]:
    if pool not in LOOP_POOLS:
        raise UserError(f"--pool {pool} refused: test is never exported as rows", "--pool",
                        "export train, validation or trainval; test is looked at only by "
                        "'split-assets export lmms-eval --pool test' within the test budget")
    return LOOP_POOLS[pool]


# the field each benchmark's lmms-eval task finds the video file by (its doc_to_visual), and
# the benchmark file field it is (None: the question's video_id itself)
VIDEO_KEYS: dict[str, tuple[str, str | None]] = {
    "videomme": ("videoID", "videoID"), "longvideobench": ("video_path", "video_path"),
    "mlvu": ("video_name", None), "mvbench": ("video", None), "nextqa": ("video", None),
    "egoschema": ("video_idx", None), "tempcompass": ("video_id", None),
    "perceptiontest": ("video_name", None)}


def video_key_values(questions_dir: Path, benchmark: str) -> tuple[str, dict[str, Any]] | None:
    """The benchmark's video key and its value per question id (read from the questions
    files, where a video record may hold it for all its questions); None: not known."""
    if benchmark not in VIDEO_KEYS:
        return None
    key, source = VIDEO_KEYS[benchmark]
    values: dict[str, Any] = {}
    for path in sorted(p for p in questions_dir.iterdir() if p.suffix in (".json", ".jsonl")):
        for _, record in json_records(path):  # the benchmark loader's reader
            if not isinstance(record, dict):
                continue
            for q in record.get("questions", [record]):
                if isinstance(q, dict) and "question_id" in q:
                    value = q.get(source or "video_id", record.get(source or "video_id"))
                    if value is not None:
                        values[str(q["question_id"])] = value
    return key, values


def pool_rows(inputs: Inputs, partition: Partition, pool: str,
              benchmark: str = "") -> dict[str, list[dict]]:
    """Each pool's rows (sorted by question id): the question, the video key the benchmark's
    lmms-eval task loads the video by (``videoID`` for Video-MME), the baseline's answer, and
    on train the diagnosis of a wrong answer (None for a right one)."""
    names = check_loop_pool(pool)
    doc = load_pools(partition)
    by_id = inputs.benchmark.by_id
    video = video_key_values(partition.paths.questions_dir, benchmark)
    preds = {p.question_id: p for p in inputs.predictions}
    diagnoses = {r.question_id: r for r in partition.rows()} if "train" in names else {}
    out: dict[str, list[dict]] = {}
    for name in names:
        rows = []
        for qid in doc["pools"][name]:
            q, p = by_id[qid], preds[qid]
            row: dict[str, Any] = {
                "question_id": qid, "video_id": q.video_id, "task_type": q.task_type,
                "difficulty": q.difficulty, "question": q.question, "options": list(q.options),
                "answer": q.answer, "pool": name, "baseline_run_id": partition.run_id,
                "baseline_response": p.raw_response or "", "baseline_letter": p.letter,
                "baseline_correct": p.correct}
            if video is not None and qid in video[1]:
                row[video[0]] = video[1][qid]
            found = diagnoses.get(qid) if name == "train" else None  # train's only
            row["diagnosis"] = ({k: asdict(found)[k] for k in DIAGNOSIS_FIELDS}
                                if found is not None else None)
            rows.append(row)
        out[name] = rows
    return out


def write_jsonl(rows: dict[str, list[dict]], out: Path) -> int:
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=True)
             for part in rows.values() for r in part]
    atomic_write_bytes(out, ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8"))
    return len(lines)


def write_hf(rows: dict[str, list[dict]], folder: Path, manifest: dict[str, Any],
             benchmark: str) -> list[Path]:
    """``folder/data/<pool>-00000-of-00001.parquet`` per pool and ``folder/README.md``."""
    import pyarrow
    import pyarrow.parquet

    if folder.exists() and any(folder.iterdir()):
        raise UserError(f"--out {folder} is not empty", "--out",
                        "name a new folder (the export never mixes two splits' files)")
    written = []
    (folder / "data").mkdir(parents=True, exist_ok=True)
    for name, part in rows.items():
        path = folder / "data" / f"{name}-00000-of-00001.parquet"
        pyarrow.parquet.write_table(pyarrow.Table.from_pylist(part), path)
        written.append(path)
    card = folder / "README.md"
    atomic_write_bytes(card, dataset_card(rows, manifest, benchmark).encode("utf-8"))
    return [*written, card]


def dataset_card(rows: dict[str, list[dict]], manifest: dict[str, Any], benchmark: str) -> str:
    """The card: YAML front matter naming each split's file, then provenance, statistics and
    the redistribution notice."""
    front = ["---", "configs:", "- config_name: default", "  data_files:"]
    for name in rows:
        front += [f"  - split: {name}", f"    path: data/{name}-00000-of-00001.parquet"]
    front.append("---")
    counts, accuracy = manifest["counts"], manifest["baseline_accuracy"]
    table = ["| pool | videos | questions | baseline accuracy | T0 | T1 | T2 |",
             "|---|---|---|---|---|---|---|"]
    for name in rows:
        tiers = manifest["tier_counts"][name]
        table.append(f"| {name} | {counts[name]['videos']} | {counts[name]['questions']} | "
                     f"{accuracy[name]:.3f} | {tiers.get('T0', 0)} | {tiers.get('T1', 0)} | "
                     f"{tiers.get('T2', 0)} |")
    config = manifest.get("config", {}).get("video_split", {})
    body = [
        f"# Split {manifest['split_id']}: {', '.join(rows)}", "",
        "Exported by `split-assets export hf` from a frozen, outcome-driven split.", "",
        "## Provenance", "",
        f"- benchmark: {benchmark}",
        f"- baseline run: {config.get('baseline_run_id', '?')}",
        f"- diagnosis fingerprint: {manifest['diag_fingerprint']}",
        f"- split id: {manifest['split_id']} (seed {config.get('seed', '?')})",
        f"- pools sha256: {manifest['pools_sha256']}",
        f"- made by: split_assets {manifest.get('made_by', {}).get('version', '?')}", "",
        "## Statistics", "", *table, "",
        f"Baseline accuracy on the whole benchmark: {accuracy['global']:.3f}.", "",
        "## Use and redistribution", "", NOTICE, ""]
    return "\n".join([*front, "", *body])

