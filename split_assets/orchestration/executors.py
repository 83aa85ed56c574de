"""Which executor runs the steps. Local: Dagster's ``multi_or_in_process_executor`` with
in-process as the default (the per-step process executor costs ~3 s a step on 2 cores);
``execution: {config: {multiprocess: {max_concurrent: K}}}`` in a run's config runs steps in
parallel. ``SPLIT_ASSETS_EXECUTOR=celery`` or ``k8s`` puts the same definitions on
dagster-celery's or dagster-k8s's executor (docs/how-to/team.md; packages in the
``dev`` extra, or install them where those executors run)."""

from __future__ import annotations

import os
from typing import Any

from dagster import Field, Permissive, Selector, multi_or_in_process_executor

from split_assets.errors import ConfigError

EXECUTOR_ENV_VAR = "SPLIT_ASSETS_EXECUTOR"

local_executor = multi_or_in_process_executor.configured(
    lambda config: config,  # validated by Dagster's own schema underneath
    name="multi_or_in_process_executor",
    config_schema=Field(Selector({"in_process": Permissive(), "multiprocess": Permissive()}),
                        default_value={"in_process": {}}),
    description="In-process by default; 'multiprocess' runs steps in parallel processes.",
)


def chosen_executor(name: str | None = None) -> Any:
    """The executor ``SPLIT_ASSETS_EXECUTOR`` names (default ``local``)."""
    name = (name if name is not None else os.environ.get(EXECUTOR_ENV_VAR, "")) or "local"
    if name == "local":
        return local_executor
    try:
        if name == "celery":
            from dagster_celery import celery_executor

            return celery_executor
        if name == "k8s":
            from dagster_k8s import k8s_job_executor

            return k8s_job_executor
    except ImportError as exc:
        raise ConfigError(f"{EXECUTOR_ENV_VAR}={name} needs {exc.name}", EXECUTOR_ENV_VAR,
                          f"pip install dagster-{name}==0.29.27 where the code location runs"
                          ) from None
    raise ConfigError(f"{EXECUTOR_ENV_VAR}={name!r} is not an executor", EXECUTOR_ENV_VAR,
                      "use local (the default), celery or k8s")
