"""A CLI command's Dagster run: register the partition, run the job in-process over the
command's Session, and turn a failed run into the one error that failed it."""

from __future__ import annotations

from typing import Any

from split_assets.app.session import Session
from split_assets.errors import ReportedError, RunFailure, SplitAssetsError, interrupted
from split_assets.lib import gc_pause, interrupts
from split_assets.lib.failpoints import failpoint


def run_split_job(session: Session, tags: dict[str, str],
                  options: dict[str, object] | None = None) -> list[str]:
    """Materialize every asset and check of the session's partition, under the names of the
    workspace that declares its config (raises the error that failed the run); the
    descriptions of the checks that warned (severity WARN, not passed). ``options``: the run
    config of the workspace's ``run_options`` (``allow_degraded``, ``no_wait``,
    ``refreeze_after_test_look``)."""
    from split_assets.app.declared_workspaces import name_for
    from split_assets.orchestration import quiet_tail
    from split_assets.orchestration.console_log import without_dagster_noise
    from split_assets.orchestration.instance import get_instance, register_partition
    from split_assets.orchestration.location import make_definitions
    from split_assets.orchestration.names import RUN_OPTIONS, Names

    names = Names(name_for(session.loaded.path))
    instance = get_instance()
    key = session.partition.key
    register_partition(instance, key, names.partitions)
    failpoint("run.registered")
    job = make_definitions(session=session, executor="local",
                           name=names.name).resolve_job_def(names.job)
    run_config: dict[str, object] = {"loggers": {"console": {"config": {"log_level": "DEBUG"}}}}
    if options:
        run_config["resources"] = {names.resource(RUN_OPTIONS): {"config": options}}
    quiet_tail.install()  # a terminal's Ctrl-C reaches the run only (orchestration/quiet_tail)
    gc_pause.resume()  # the console script's collector, paused while all this loaded
    # a Ctrl-C is never lost (lib/interrupts.py; cli.main watches too)
    with interrupts.watch(), without_dagster_noise():
        result = job.execute_in_process(run_config=run_config, instance=instance,
                                        partition_key=key, tags=tags,
                                        raise_on_error=False)
    if not result.success:
        raise interrupted(interrupts.terminated()) if interrupts.seen() else failure_of(result)
    return [f"check {evaluation.check_name}: {evaluation.description}"
            for evaluation in _evaluations(result) if _warned(evaluation)]


def _evaluations(result: Any) -> list[Any]:
    return [event.event_specific_data for event in result.all_events
            if event.event_type_value == "ASSET_CHECK_EVALUATION"]


def _warned(evaluation: Any) -> bool:
    from dagster import AssetCheckSeverity

    return not evaluation.passed and evaluation.severity == AssetCheckSeverity.WARN


def failure_of(result: Any) -> SplitAssetsError:
    """The error that failed a Dagster run: an expected error's one-line failure description
    (with its exit code), else a failed check's name and detail, else the root cause of the
    exception."""
    for event in result.all_events:
        if event.event_type_value != "STEP_FAILURE":
            continue
        user = event.step_failure_data.user_failure_data
        if user is not None and user.description:
            code = user.metadata.get("exit_code")
            value = getattr(code, "value", code)
            return ReportedError(user.description, int(value) if value is not None else 1)
    return _failed_check(result) or _root_cause(result)


def _failed_check(result: Any) -> SplitAssetsError | None:
    """A blocking check that failed on the files on disk (a warning fails nothing)."""
    for evaluation in _evaluations(result):
        if not evaluation.passed and not _warned(evaluation):
            desc = (evaluation.description or "").strip()
            return RunFailure(f"check {evaluation.check_name} failed: {desc}",
                              evaluation.asset_key.to_user_string(),
                              "see the check's metadata in the Dagster UI (make ui); "
                              "'split-assets verify' re-checks the files")
    return None


def _root_cause(result: Any) -> SplitAssetsError:
    for event in result.all_events:
        if event.event_type_value != "STEP_FAILURE":
            continue
        error = event.step_failure_data.error
        root = error
        while error is not None:
            if error.cls_name in ("KeyboardInterrupt", "DagsterExecutionInterruptedError"):
                return interrupted(interrupts.terminated())
            root = error
            error = error.cause
        message = root.message.strip().splitlines()[0] if root and root.message else ""
        return RunFailure(f"step {event.step_key} failed: {message}", "dagster run",
                          "unexpected: the run's logs (make ui) have the stack trace; report "
                          "it as a bug")
    return RunFailure("the Dagster run failed", "dagster run", "see the logs above")
