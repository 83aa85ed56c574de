"""``make test-harness``: an exported pool task loads through lmms-eval's own task code (0.7.3,
in a virtual environment of its own: its loader imports torch, Video-MME's utils.py cv2 and
LongVideoBench's decord) and yields exactly the pool's questions -- Video-MME and
LongVideoBench, each over a local fixture dataset in the stock format (``harness_load.py``).

``SPLIT_ASSETS_HARNESS_PYTHON`` names that environment's interpreter; ``make test`` leaves this
folder out (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import kv
from helpers.official_layout import write_results

HERE = Path(__file__).parent
HARNESS = os.environ.get("SPLIT_ASSETS_HARNESS_PYTHON", "")


def _load(tmp_path: Path, rows: list[dict], split: str, key: str, folder: Path,
          task: str) -> dict[str, list[str]]:
    """The ids of the docs each leaf task of ``task`` yields, through lmms-eval."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows_json = tmp_path / "rows.json"
    rows_json.write_text(json.dumps(rows), encoding="utf-8")
    proc = subprocess.run([HARNESS, str(HERE / "harness_load.py"), str(rows_json), split, key,
                           str(folder), task, str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _export(run_cli, config: Path, pool: str, out: Path) -> tuple[str, Path]:  # noqa: ANN001
    """The exported task's name and folder (``out/<name>/``)."""
    code, stdout, err = run_cli("export", "lmms-eval", "--pool", pool, "--config", str(config),
                                "--out", str(out))
    assert code == 0, err
    name = stdout.split("the lmms-eval task ", 1)[1].split(" ", 1)[0]
    assert (out / name).is_dir()
    return name, out / name


def _names_only(folder: Path, pool: list[str], others: list[str]) -> None:
    """The folder carries the pool's ids and names no other question id."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in folder.iterdir() if p.is_file())
    assert all(f'"{q}"' in text for q in pool)
    assert not [q for q in others if f'"{q}"' in text]


def test_videomme_pool_tasks_yield_exactly_the_pool(tmp_path: Path, run_cli) -> None:  # noqa: ANN001
    ws = tmp_path / "ws"
    for run in ("base", "ref"):
        code, _, err = run_cli("import", "videomme", "--results",
                               str(write_results(tmp_path / f"{run}.json", 60, run)),
                               "--run-id", run, "--workspace", str(ws))
        assert code == 0, err
    code, out, err = run_cli("run", "--config", str(ws / "video_split.yaml"))
    assert code == 0, err
    doc = json.loads(Path(kv(out)["pools"]).read_text())
    videos = json.loads((ws / "questions" / "videomme.json").read_text())
    rows = [{"video_id": v["video_id"], "duration": v["duration"], "domain": v["domain"],
             "sub_category": v["sub_category"], "url": f"https://youtu.be/{v['video_id']}",
             "videoID": f"yt{v['video_id']}", "question_id": q["question_id"],
             "task_type": q["task_type"], "question": q["question"], "options": q["options"],
             "answer": q["answer"]} for v in videos for q in v["questions"]]
    for pool in ("validation", "trainval"):
        name, folder = _export(run_cli, ws / "video_split.yaml", pool, tmp_path / "tasks")
        assert name == f"videomme_{doc['split_id']}_{pool}"
        want = sorted(doc["pools"]["validation"] if pool == "validation" else
                      doc["pools"]["train"] + doc["pools"]["validation"])
        _names_only(folder, want, doc["pools"]["test"])
        got = _load(tmp_path / pool, rows, "test", "question_id", folder, name)
        assert {task: sorted(ids) for task, ids in got.items()} == {"videomme": want}


def test_longvideobench_validation_task_yields_exactly_the_pool(tmp_path: Path,
                                                                run_cli) -> None:  # noqa: ANN001
    from split_assets.demo.shapes import build_shaped_workspace, longvideobench

    ws = tmp_path / "lvb"
    build_shaped_workspace(ws, "longvideobench")
    code, out, err = run_cli("run", "--config", str(ws / "video_split.yaml"))
    assert code == 0, err
    doc = json.loads(Path(kv(out)["pools"]).read_text())
    name, folder = _export(run_cli, ws / "video_split.yaml", "validation", tmp_path / "tasks")
    assert name == f"longvideobench_val_v_{doc['split_id']}_validation"
    want = sorted(doc["pools"]["validation"])
    _names_only(folder, want, doc["pools"]["test"])
    rows = []
    for row in longvideobench(7).rows:  # lvb_val.json's rows, as the stock dataset has them
        options = [*row["candidates"], *["N/A"] * (5 - len(row["candidates"]))]
        rows.append({**row, **{f"option{i}": o for i, o in enumerate(options)},
                     "video_path": f"{row['video_id']}.mp4",
                     "subtitle_path": f"{row['video_id']}_en.json",
                     "starting_timestamp_for_subtitles": 0.0})
    got = _load(tmp_path, rows, "validation", "id", folder, name)
    assert {task: sorted(ids) for task, ids in got.items()} == {"longvideobench_val_v": want}
