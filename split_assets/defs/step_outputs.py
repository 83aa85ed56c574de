"""Where a run's ops hand values to each other: under the workspace's own ``paths.out_dir``,
keyed by the run (``.steps/runs/<run_id>/<step>/<output>``), never in ``$DAGSTER_HOME/storage``.

Assets pass nothing (their edges are ``deps``; each step reads the workspace's files and signal
store). Only the diagnosis graph's ops hand values on -- a shard's number and its report -- and
those belong to one run of one workspace, so two workspaces sharing a fingerprint partition, or
two runs of one workspace, never read each other's. ``join_diagnoses``, their last reader,
removes its run's folder."""

from __future__ import annotations

import contextlib
import pickle
import shutil
from pathlib import Path
from typing import Any

from dagster import InitResourceContext, InputContext, IOManager, OutputContext, io_manager

from split_assets.lib.canonical import atomic_write_bytes
from split_assets.split.layout import STEPS_DIR, run_steps_dir


class StepOutputs(IOManager):
    def __init__(self, split_config: Any) -> None:
        self._split_config = split_config

    def _path(self, identifier: list[str]) -> Path:
        run_id, *rest = identifier
        return run_steps_dir(self._split_config.out_root(), run_id).joinpath(*rest)

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if obj is None:
            return
        path = self._path(context.get_identifier())
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, pickle.dumps(obj))

    def load_input(self, context: InputContext) -> Any:
        upstream = context.upstream_output
        assert upstream is not None
        return pickle.loads(self._path(upstream.get_identifier()).read_bytes())


@io_manager(required_resource_keys={"split_config"},
            description="Op outputs of one run, under paths.out_dir/.steps/runs/<run_id>.")
def step_outputs(init_context: InitResourceContext) -> StepOutputs:
    return StepOutputs(init_context.resources.split_config)


def forget_run(out_root: Path, run_id: str) -> None:
    """Remove a run's handed-on values (and ``.steps/runs`` and ``.steps`` when left empty)."""
    folder = run_steps_dir(out_root, run_id)
    shutil.rmtree(folder, ignore_errors=True)
    for parent in (folder.parent, out_root / STEPS_DIR):
        with contextlib.suppress(OSError):
            parent.rmdir()  # only when empty
