"""Run inside the harness venv (make test-harness): load an exported pool task through
lmms-eval's own task code, over a local fixture dataset in the stock task's format, and print
the ids of the docs it yields as one JSON line.

    python harness_load.py ROWS.json SPLIT KEY POOL_TASK_DIR POOL_TASK WORK_DIR

ROWS.json: the fixture's rows (the whole benchmark, in the stock dataset's columns); SPLIT:
the stock task's split (test, validation); KEY: the doc field naming a question. A wrapper
group in WORK_DIR includes the exported task and points its dataset at the fixture (keys of a
group reach its tasks: lmms-eval's TaskManager), so nothing is fetched from the hub.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def leaves(tree: dict):  # noqa: ANN201
    for name, value in tree.items():
        if isinstance(value, dict):
            yield from leaves(value)
        else:
            yield name, value


def main() -> None:
    rows_json, split, key, pool_dir, pool_task, work = sys.argv[1:7]
    work_dir = Path(work)
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
                      HF_HOME=str(work_dir / "hf_home"))
    import datasets

    wrap = work_dir / "wrap"
    wrap.mkdir(parents=True, exist_ok=True)
    rows = json.loads(Path(rows_json).read_text(encoding="utf-8"))
    datasets.Dataset.from_list(rows).to_parquet(str(wrap / "fixture.parquet"))
    (wrap / "wrap.yaml").write_text(
        f"group: fixture_{pool_task}\ntask:\n  - {pool_task}\ndataset_path: parquet\n"
        f"dataset_name: null\ndataset_kwargs:\n  data_files:\n    {split}: fixture.parquet\n",
        encoding="utf-8")
    from lmms_eval.tasks import TaskManager, get_task_dict

    manager = TaskManager(include_path=[pool_dir, str(wrap)])
    tasks = dict(leaves(get_task_dict([f"fixture_{pool_task}"], manager)))
    print(json.dumps({name: [str(doc[key]) for doc in task.eval_docs]
                      for name, task in tasks.items()}))


if __name__ == "__main__":
    main()
