"""A frozen pool as an lmms-eval task (issue 35): the harness then runs a candidate on that
pool only, so evaluating on validation never prints an accuracy over test.

``split-assets export lmms-eval --pool validation`` writes a folder ``<name>/`` (in
``--out``, default ``<paths.out_dir>/lmms_eval_tasks/``) holding

- ``<name>.yaml``: an lmms-eval *group* named ``<stock task>_<split_id>_<pool>`` whose one
  task is the stock task by name (its own YAML, dataset and scoring, wherever lmms-eval is
  installed) with a ``process_docs`` that keeps exactly the pool's questions (MVBench: one
  entry per subtask);
- ``<name>.py``: that ``process_docs`` (it refuses a dataset that does not hold every question
  of the pool: another release of the benchmark);
- ``<name>.json``: the pool's question ids (and no other question id).

Run it with ``python -m lmms_eval --include_path DIR --tasks <name> ...`` (DIR: the folder,
or the one above it: lmms-eval walks it). The samples file
keeps the stock task's name (``<date>_samples_videomme.jsonl``), so ``split-assets import
lmms-eval`` reads it as ever. Exporting ``test`` is a look at test (``claims.py``'s budget).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.evaluation.comparison import load_pools
from split_assets.evaluation.exposure import POOL, record_test_look, test_pool
from split_assets.evaluation.shared_budget import shared_budget, workspace_of
from split_assets.lib.canonical import atomic_write_bytes, digest_of
from split_assets.store.ledger import LookRefused

if TYPE_CHECKING:
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

POOLS = ("train", "validation", "trainval", "test")
_POSITION = re.compile(r"^(?P<prefix>.+)-(?P<position>\d+)$")


@dataclass(frozen=True)
class StockTask:
    """A benchmark's stock lmms-eval task and how its docs name our questions: by a field
    (``key``), or by their place in the split lmms-eval loads (``key`` None: our id is
    ``<prefix>-<position>``); ``variants``: other stock tasks over the same docs
    (``--task``)."""

    task: str
    key: str | None
    variants: tuple[str, ...] = ()

    def chosen(self, task: str | None) -> StockTask:
        """This stock task, or the variant ``task`` (refused in one line if it is none)."""
        if task is None or task == self.task:
            return self
        if task not in self.variants:
            raise UserError(f"--task {task} is not a stock lmms-eval task of this benchmark",
                            "--task", f"pass one of {', '.join((self.task, *self.variants))}")
        return StockTask(task, self.key)


STOCK: dict[str, StockTask] = {
    "videomme": StockTask("videomme", "question_id", ("videomme_w_subtitle",)),
    "longvideobench": StockTask("longvideobench_val_v", "id", ("longvideobench_val_i",)),
    "egoschema": StockTask("egoschema_subset", "question_idx"),
    "perceptiontest": StockTask("perceptiontest_val_mc", "question_id"),
    "mlvu": StockTask("mlvu_dev", None),
    "nextqa": StockTask("nextqa_mc_test", None),
    "tempcompass": StockTask("tempcompass_multi_choice", None),
    "mvbench": StockTask("mvbench_<subtask>", None),  # one stock task per subtask
}


def benchmark_name(inputs: Inputs) -> str:
    """The workspace's benchmark: the name of its file under questions/ (a first import
    names it after its profile)."""
    files = sorted(p.stem for p in inputs.paths.questions_dir.glob("*.json*"))
    return files[0] if len(files) == 1 else "videomme"


def pool_ids(doc: dict, pool: str) -> list[str]:
    """The question ids of ``pool`` (``trainval``: train and validation)."""
    if pool == "trainval":
        return sorted([*doc["pools"]["train"], *doc["pools"]["validation"]])
    return sorted(doc["pools"][pool])


def export_pool_task(inputs: Inputs, partition: Partition, pool: str, out: Path | None,
                     spend: bool = False, task: str | None = None) -> list[str]:
    """Write the pool's task folder; the lines to print. Exporting test is recorded as a look
    (refused past ``evaluation.test_looks_max`` unless ``spend``: nothing written)."""
    if pool not in POOLS:
        raise UserError(f"--pool {pool} is not a pool", "--pool", f"pass one of {POOLS}")
    if spend and pool != POOL:
        raise UserError(f"--spend-test-look with --pool {pool}", "split-assets export lmms-eval",
                        "only exporting test is a look: drop the flag")
    bench = benchmark_name(inputs)
    stock = STOCK.get(bench)
    if stock is None:
        raise UserError(f"the benchmark {bench!r} has no stock lmms-eval task", "--pool",
                        f"pool tasks exist for {', '.join(sorted(STOCK))} (a --map benchmark "
                        "needs a task of its own)")
    stock = stock.chosen(task)
    doc = load_pools(partition)
    ids = pool_ids(doc, pool)
    base = "mvbench" if stock.task == "mvbench_<subtask>" else stock.task
    name = f"{base}_{doc['split_id']}_{pool}"
    folder = (out if out is not None else inputs.paths.out_dir / "lmms_eval_tasks") / name
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--out names a file: {folder}", "--out", "name a folder")
    entries = _entries(stock, ids)
    lines = []
    if pool == POOL:
        lines.append(_record_export(partition, ids, name, spend))
    files = {f"{name}.json": _ids_json(doc, pool, ids, bench),
             f"{name}.py": _module(name, entries),
             f"{name}.yaml": _yaml(name, entries, doc["split_id"], pool, len(ids))}
    for file, text in files.items():
        atomic_write_bytes(folder / file, text.encode("utf-8"))
    return [*lines,
            f"wrote the lmms-eval task {name} ({len(ids)} {pool} questions of split "
            f"{doc['split_id']}) to {folder}",
            f"run it: python -m lmms_eval --include_path {folder} --tasks {name} "
            "--log_samples ... ; then split-assets import lmms-eval --samples "
            "<output>/*_samples_*.jsonl --role candidate ..."]


def _entries(stock: StockTask, ids: list[str]) -> list[tuple[str, str, list]]:
    """(stock task, keep function, what it keeps) per stock task the pool needs."""
    if stock.key is not None:
        return [(stock.task, "keep", ids)]
    by_task: dict[str, list[int]] = {}
    for qid in ids:
        match = _POSITION.match(qid)
        if match is None:
            raise UserError(f"question id {qid!r} is not <name>-<position>", "questions/",
                            "a pool task of this benchmark needs the ids its importer writes")
        prefix = match["prefix"]
        task = f"mvbench_{prefix}" if stock.task == "mvbench_<subtask>" else stock.task
        by_task.setdefault(task, []).append(int(match["position"]))
    return [(task, f"keep_{task}", sorted(positions))
            for task, positions in sorted(by_task.items())]


def _ids_json(doc: dict, pool: str, ids: list[str], bench: str) -> str:
    return json.dumps({"benchmark": bench, "split_id": doc["split_id"], "pool": pool,
                       "baseline_run_id": doc["baseline_run_id"], "question_ids": ids},
                      indent=1) + "\n"


def _module(name: str, entries: list[tuple[str, str, list]]) -> str:
    """The process_docs functions (plain Python: they run inside lmms-eval)."""
    out = [f'"""Written by split-assets export lmms-eval: process_docs of {name} (keeps its '
           'pool\'s questions only)."""', "", "import json", "import os", "",
           "with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "
           f'"{name}.json"), encoding="utf-8") as _file:',
           '    _IDS = json.load(_file)["question_ids"]', "", "",
           "def _checked(dataset, kept, expected, task):",
           "    if len(kept) != expected:",
           "        raise ValueError(f\"{task}: the dataset holds {len(kept)} of the {expected} "
           f"questions of {name}: it is not the release the split was made from\")",
           "    return kept", ""]
    for task, function, keep in entries:
        if function == "keep":
            key = _key_of(task)
            out += ["", f"def {function}(dataset):", "    ids = set(_IDS)",
                    f"    kept = dataset.filter(lambda doc: str(doc[{key!r}]) in ids)",
                    f"    return _checked(dataset, kept, len(ids), {task!r})", ""]
        else:
            out += ["", f"def {function}(dataset):", f"    keep = set({keep!r})",
                    "    kept = dataset.filter(lambda doc, i: i in keep, with_indices=True)",
                    f"    return _checked(dataset, kept, len(keep), {task!r})", ""]
    return "\n".join(out).rstrip() + "\n"


def _key_of(task: str) -> str:
    return next(s.key for s in STOCK.values()
                if task in (s.task, *s.variants) and s.key is not None)


def _yaml(name: str, entries: list[tuple[str, str, list]], split: str, pool: str,
          n: int) -> str:
    out = [f"# written by split-assets export lmms-eval: the {pool} pool of split {split} "
           f"({n} questions)", "# the stock task(s) by name, each keeping the pool's "
           "questions only; run: python -m lmms_eval --include_path <this folder> --tasks "
           f"{name}", f"group: {name}", "task:"]
    for task, function, _ in entries:
        out += [f"  - task: {task}", f"    process_docs: !function {name}.{function}"]
    return "\n".join(out) + "\n"


def _record_export(partition: Partition, ids: list[str], name: str, spend: bool) -> str:
    """An export of test is a look at test: recorded (refused past the budget unless
    ``spend``) before anything is written."""
    pool = test_pool(partition)
    digest = digest_of({"export": name, "question_ids": ids})
    with partition.store() as store, shared_budget(
            store, workspace_of(partition.config_path), pool.baseline,
            partition.evaluation.test_looks_max) as shared:
        try:
            look = record_test_look(store, pool, f"export:{name}", digest, "export", {},
                                    f"the test pool exported as the lmms-eval task {name}",
                                    None if spend else shared.budget)
        except LookRefused as refused:
            more = shared.note()
            raise UserError(
                f"exporting test refused: a look at test, and the {refused.looks} look(s) of "
                f"{config_key('test_looks_max')} {refused.budget} are spent on split "
                f"{pool.split_id}" + (f" ({more})" if more else ""), "--pool test",
                "pass --spend-test-look to export it anyway (no claim will hold for what it "
                "shows), or export validation") from None
    return (f"ledger: test look (the test pool exported as {name})"
            + (" (a repeat)" if look.is_repeat else ""))
