"""Split quality on benchmarks shaped like LongVideoBench's val set (1,337 questions, 753
videos of 1-5 questions, 17 categories x 4 duration groups) and MVBench (4,000 questions, 20
tasks, no difficulty), from public aggregates (split_assets/demo/shapes.py): the test pool's
largest deviation on category, difficulty and baseline accuracy is within 0.05 pp of the
exact optimum (split/optimum.py), or under 0.1 pp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import edit_config, kv

from split_assets.settings import load_config
from split_assets.split.optimum import exact_optimum, largest_deviation
from split_assets.workspace.inputs import Inputs


@pytest.mark.parametrize("name", ["longvideobench", "mvbench"])
def test_the_test_pool_is_near_the_exact_optimum(tmp_path: Path, run_cli, name: str) -> None:  # noqa: ANN001
    code, out, err = run_cli("demo", "--dir", str(tmp_path / name), "--shape", name,
                             "--name", name)
    assert code == 0, err
    assert f"shaped like {name}" in err and f"declared workspace {name!r}" in err
    config = tmp_path / name / "video_split.yaml"
    # the optimum is taken over these three dimensions alone: the split made without the
    # references balanced and without floors (as the import wrote it before issue 45)
    edit_config(config, video_split={"balance_runs": [], "floor_share": None})
    code, out, err = run_cli("run", "--config", str(config))
    assert code == 0, err
    pools = json.loads(Path(kv(out)["pools"]).read_text())
    inputs = Inputs(load_config(config))
    preds = {p.question_id: p for p in inputs.predictions}
    qs = inputs.benchmark.questions
    assert len(qs) == (1337 if name == "longvideobench" else 4000)
    videos = [q.video_id for q in qs]
    dims = [[q.task_type for q in qs], [q.difficulty for q in qs],
            [str(preds[q.question_id].correct) for q in qs]]
    test = set(pools["videos"]["test"])
    ours = largest_deviation(videos, dims, test)
    best = exact_optimum(videos, dims, len(test), upper=ours + 1e-9)
    assert best.proven
    print(f"{name}: ours {100 * ours:.4f} pp, exact optimum {100 * best.deviation:.4f} pp")
    assert ours <= max(0.001, best.deviation + 0.0005)
