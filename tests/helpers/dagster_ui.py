"""Drive a real `dagster dev` (webserver + daemon) through its GraphQL API, like the UI does.

A plain helper module (not a test file); stdlib only. Typical use from a test::

    with start_dagster_dev(dagster_home, workdir, env) as dev:
        run_id = launch_partition_materialization(dev.url, "some-partition-key")
        assert wait_for_run(dev.url, run_id) == "SUCCESS"
        assert all(check_evaluations(dev.url, run_id).values())

The partition key must already be registered on the instance (for a
DynamicPartitionsDefinition: `DagsterInstance.get().add_dynamic_partitions(name, [key])`
with DAGSTER_HOME pointing at the same directory).

`launch_partition_materialization` reproduces what the UI's "Materialize" button does for a
selection of partitioned assets when one partition is chosen in the partition dialog (dagster
1.13, ui-core `LaunchAssetExecutionButton.tsx` / `LaunchAssetChoosePartitionsDialog.tsx`):

1. `assetNodes` of the selected assets -> repository, location, common `jobNames` (the
   implicit asset job is `__ASSET_JOB`) and `assetChecksOrError.checks`;
2. `pipelineOrError(...).partition(partitionName, selectedAssetKeys)` -> run config yaml and
   partition tags (`dagster/partition`);
3. `launchPipelineExecution(executionParams)` with `selector {repositoryLocationName,
   repositoryName, pipelineName, assetSelection, assetCheckSelection}`, `mode: "default"`,
   `runConfigData` and `executionMetadata.tags` = partition tags + `dagster/from_ui: true`.

The run is queued (default QueuedRunCoordinator); the daemon started by `dagster dev` dequeues
and launches it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

IMPLICIT_ASSET_JOB = "__ASSET_JOB"
TERMINAL_STATUSES = frozenset({"SUCCESS", "FAILURE", "CANCELED"})

# Appended to every operation below; the union members use `...PythonErrorFragment`.
_PYTHON_ERROR_FRAGMENT = "\nfragment PythonErrorFragment on PythonError { message stack }\n"


class GraphQLError(RuntimeError):
    """The webserver answered with GraphQL errors or an error union member."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _dagster_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "dagster"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dagster"]


class DagsterDev:
    """A running `dagster dev` process group; use as a context manager (stops on exit)."""

    def __init__(self, dagster_home: Path, workdir: Path, env: dict[str, str], module: str,
                 dg: bool = False) -> None:
        self.dagster_home = Path(dagster_home)
        self.workdir = Path(workdir)
        self.module = module
        self.dg = dg  # `dg dev` in the project root (workdir) instead of `dagster dev -m`
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.dagster_home / "dagster_dev.log"
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(self.dagster_home)}
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = None

    def start(self, timeout_s: float = 120.0) -> DagsterDev:
        if self.dg:
            cmd = [str(Path(sys.executable).parent / "dg"), "dev", "-h", "127.0.0.1",
                   "-p", str(self.port)]
            self.env["VIRTUAL_ENV"] = sys.prefix  # the project's venv: no mismatch warning
        else:
            cmd = [*_dagster_cmd(), "dev", "-m", self.module, "-h", "127.0.0.1", "-p",
                   str(self.port)]
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd,
            cwd=self.workdir,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"dagster dev exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/server_info", timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise TimeoutError(f"dagster dev not answering after {timeout_s}s:\n{self.log_tail()}")

    def log_tail(self, n_chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return "(no log)"

    def stop(self, timeout_s: float = 60.0) -> None:
        """SIGINT the whole process group (like Ctrl-C), escalate to SIGKILL, then wait."""
        proc, self.proc = self.proc, None
        if proc is not None:
            for sig, wait_s in ((signal.SIGINT, timeout_s), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait_s)
                except subprocess.TimeoutExpired:
                    continue
                # The parent is gone; give the rest of the group a moment, then kill stragglers.
                _wait_group_gone(proc.pid, 10.0)
                break
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> DagsterDev:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_group_gone(pgid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def start_dagster_dev(
    dagster_home: Path,
    workdir: Path,
    env: dict[str, str],
    module: str = "split_assets.definitions",
) -> DagsterDev:
    """Start `dagster dev -m <module> -h 127.0.0.1 -p <free port>` in its own session.

    `env` is laid over os.environ and DAGSTER_HOME is set to `dagster_home`; output goes to
    `dagster_home/dagster_dev.log`. Returns once `/server_info` answers (<= 120 s); use the
    result as a context manager so the process group is stopped on exit.
    """
    return DagsterDev(dagster_home, workdir, env, module).start()


def start_dg_dev(dagster_home: Path, env: dict[str, str], where: Path | None = None
                 ) -> DagsterDev:
    """Start `dg dev` in the project root (the repository), as `make ui` does, or in ``where``
    (in a project); otherwise as `start_dagster_dev`. The code location is `split_assets`."""
    root = where or Path(__file__).resolve().parents[2]
    return DagsterDev(dagster_home, root, env, "split_assets.definitions", dg=True).start()


RESOURCES_QUERY = (
    """
query Resources($selector: RepositorySelector!) {
  allTopLevelResourceDetailsOrError(repositorySelector: $selector) {
    __typename
    ... on ResourceDetailsList {
      results {
        name
        description
        configuredValues { key value type }
        assetKeysUsing { path }
        jobsOpsUsing { jobName }
      }
    }
    ...PythonErrorFragment
  }
}
"""
    + _PYTHON_ERROR_FRAGMENT
)


def resource_details(url: str) -> dict[str, dict]:
    """The UI's resource view: name -> {description, values (key -> value), assets (the asset
    keys using it)}."""
    location, repo = _loaded_repository(url)
    selector = {"repositoryLocationName": location, "repositoryName": repo}
    found = _expect(graphql(url, RESOURCES_QUERY, {"selector": selector})[
        "allTopLevelResourceDetailsOrError"], "ResourceDetailsList", "resources")
    return {r["name"]: {"description": r["description"],
                        "values": {v["key"]: v["value"] for v in r["configuredValues"]},
                        "assets": sorted("/".join(k["path"]) for k in r["assetKeysUsing"])}
            for r in found["results"]}


def graphql(url: str, query: str, variables: dict) -> dict:
    """POST a query to `<url>/graphql`; return `data`, raise GraphQLError on `errors`."""
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(
        f"{url}/graphql",
        data=body,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            payload = json.loads(resp.read())
    except urllib.error.HTTPError as err:
        raise GraphQLError(f"HTTP {err.code}: {err.read().decode(errors='replace')}") from err
    if payload.get("errors"):
        raise GraphQLError(json.dumps(payload["errors"], indent=2))
    return payload["data"]


def _expect(obj: dict, typename: str, what: str) -> dict:
    if obj.get("__typename") != typename:
        raise GraphQLError(f"{what}: got {obj.get('__typename')}: {json.dumps(obj)[:4000]}")
    return obj


WORKSPACE_QUERY = (
    """
query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        updatedTimestamp
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name repositories { name } }
          ...PythonErrorFragment
        }
      }
    }
    ...PythonErrorFragment
  }
}
"""
    + _PYTHON_ERROR_FRAGMENT
)

REPOSITORY_ASSETS_QUERY = (
    """
query RepositoryAssets($selector: RepositorySelector!) {
  repositoryOrError(repositorySelector: $selector) {
    __typename
    ... on Repository {
      assetNodes {
        assetKey { path }
        jobNames
        isMaterializable
        isExecutable
        isObservable
        partitionDefinition { type name }
        assetChecksOrError {
          __typename
          ... on AssetChecks { checks { name jobNames canExecuteIndividually } }
        }
      }
    }
    ... on RepositoryNotFoundError { message }
    ...PythonErrorFragment
  }
}
"""
    + _PYTHON_ERROR_FRAGMENT
)

# Same as ui-core ConfigFetch.tsx CONFIG_PARTITION_FOR_ASSET_JOB_QUERY.
PARTITION_CONFIG_QUERY = (
    """
query ConfigPartitionForAssetJobQuery(
  $repositoryName: String!
  $repositoryLocationName: String!
  $jobName: String!
  $partitionName: String!
  $assetKeys: [AssetKeyInput!]!
) {
  pipelineOrError(
    params: {
      pipelineName: $jobName
      repositoryName: $repositoryName
      repositoryLocationName: $repositoryLocationName
    }
  ) {
    __typename
    ... on Pipeline {
      partition(partitionName: $partitionName, selectedAssetKeys: $assetKeys) {
        name
        runConfigOrError {
          __typename
          ... on PartitionRunConfig { yaml }
          ...PythonErrorFragment
        }
        tagsOrError {
          __typename
          ... on PartitionTags { results { key value } }
          ...PythonErrorFragment
        }
      }
    }
    ... on PipelineNotFoundError { message }
    ... on InvalidSubsetError { message }
    ...PythonErrorFragment
  }
}
"""
    + _PYTHON_ERROR_FRAGMENT
)

# Same selection as ui-core RunUtils.tsx LAUNCH_PIPELINE_EXECUTION_MUTATION (+ __typename).
LAUNCH_MUTATION = (
    """
mutation LaunchPipelineExecution($executionParams: ExecutionParams!) {
  launchPipelineExecution(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { id runId pipelineName } }
    ... on PipelineNotFoundError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on UnauthorizedError { message }
    ... on PresetNotFoundError { message }
    ... on ConflictingExecutionParamsError { message }
    ... on NoModeProvidedError { message }
    ... on RunConflict { message }
    ...PythonErrorFragment
  }
}
"""
    + _PYTHON_ERROR_FRAGMENT
)

RUN_STATUS_QUERY = (
    """
query RunStatus($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { status }
    ... on RunNotFoundError { message }
    ...PythonErrorFragment
  }
}
"""
    + _PYTHON_ERROR_FRAGMENT
)

RUN_CHECK_EVALUATIONS_QUERY = (
    """
query RunCheckEvaluations($runId: ID!, $afterCursor: String) {
  logsForRun(runId: $runId, afterCursor: $afterCursor, limit: 1000) {
    __typename
    ... on EventConnection {
      cursor
      hasMore
      events {
        __typename
        ... on AssetCheckEvaluationEvent {
          evaluation { checkName assetKey { path } success severity partition }
        }
      }
    }
    ... on RunNotFoundError { message }
    ...PythonErrorFragment
  }
}
"""
    + _PYTHON_ERROR_FRAGMENT
)


def _loaded_repository(url: str, timeout_s: float = 120.0) -> tuple[str, str]:
    """(location name, repository name) of the single loaded code location; waits for loading."""
    deadline = time.monotonic() + timeout_s
    while True:
        ws = _expect(
            graphql(url, WORKSPACE_QUERY, {})["workspaceOrError"], "Workspace", "workspace"
        )
        entries = ws["locationEntries"]
        loaded = [e for e in entries if e["loadStatus"] == "LOADED"]
        if entries and len(loaded) == len(entries):
            repos = []
            for entry in loaded:
                loc = _expect(
                    entry["locationOrLoadError"], "RepositoryLocation", f"location {entry['name']}"
                )
                repos += [(loc["name"], r["name"]) for r in loc["repositories"]]
            if len(repos) != 1:
                raise GraphQLError(f"expected exactly one repository, found {repos}")
            return repos[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"code locations not loaded after {timeout_s}s: {entries}")
        time.sleep(0.5)


def locations_loaded_at(url: str) -> float | None:
    """When the code locations last finished loading (None while one is loading)."""
    ws = _expect(graphql(url, WORKSPACE_QUERY, {})["workspaceOrError"], "Workspace",
                 "workspace")
    entries = ws["locationEntries"]
    if not entries or any(e["loadStatus"] != "LOADED" for e in entries):
        return None
    return max(float(e["updatedTimestamp"]) for e in entries)


def launch_partition_materialization(url: str, partition_key: str) -> str:
    """Materialize every materializable asset (with its checks) for one partition; return run id.

    Mirrors the UI: Materialize all -> choose one partition -> "Launch 1 run".
    """
    location, repo = _loaded_repository(url)
    repo_selector = {"repositoryLocationName": location, "repositoryName": repo}
    repo_obj = _expect(
        graphql(url, REPOSITORY_ASSETS_QUERY, {"selector": repo_selector})["repositoryOrError"],
        "Repository",
        "repository",
    )
    assets = [
        a
        for a in repo_obj["assetNodes"]
        if a["isMaterializable"] and a["isExecutable"] and not a["isObservable"]
    ]
    if not assets:
        raise GraphQLError(f"no materializable assets in {location}/{repo}")
    partition_defs = {json.dumps(a["partitionDefinition"], sort_keys=True) for a in assets}
    if len(partition_defs) != 1 or assets[0]["partitionDefinition"] is None:
        raise GraphQLError(f"assets do not share one partitions definition: {partition_defs}")

    # ui-core getCommonJob(): a job every selected asset belongs to (prefer the implicit one).
    common = [j for j in assets[0]["jobNames"] if all(j in a["jobNames"] for a in assets)]
    if not common:
        raise GraphQLError("selected assets share no job")
    job = IMPLICIT_ASSET_JOB if IMPLICIT_ASSET_JOB in common else common[0]

    asset_keys = [{"path": a["assetKey"]["path"]} for a in assets]
    # ui-core getAssetCheckHandleInputs(): all checks of the selected assets that are in the job.
    check_handles = [
        {"name": c["name"], "assetKey": {"path": a["assetKey"]["path"]}}
        for a in assets
        if a["assetChecksOrError"]["__typename"] == "AssetChecks"
        for c in a["assetChecksOrError"]["checks"]
        if not c["jobNames"] or job in c["jobNames"]
    ]

    pipeline = _expect(
        graphql(
            url,
            PARTITION_CONFIG_QUERY,
            {
                **repo_selector,
                "jobName": job,
                "partitionName": partition_key,
                "assetKeys": asset_keys,
            },
        )["pipelineOrError"],
        "Pipeline",
        "pipeline",
    )
    partition = pipeline["partition"]
    if partition is None:
        raise GraphQLError(f"partition {partition_key!r} not found (registered on the instance?)")
    config = _expect(partition["runConfigOrError"], "PartitionRunConfig", "partition run config")
    tags_obj = _expect(partition["tagsOrError"], "PartitionTags", "partition tags")
    tags = [{"key": t["key"], "value": t["value"]} for t in tags_obj["results"]]
    tags = [t for t in tags if t["key"] != "dagster/from_ui"] + [
        {"key": "dagster/from_ui", "value": "true"}
    ]

    execution_params = {
        "mode": "default",
        "executionMetadata": {"tags": tags},
        "runConfigData": config["yaml"] or "{}",
        "selector": {
            **repo_selector,
            "pipelineName": job,
            "assetSelection": asset_keys,
            "assetCheckSelection": check_handles,
        },
    }
    result = graphql(url, LAUNCH_MUTATION, {"executionParams": execution_params})
    launched = _expect(result["launchPipelineExecution"], "LaunchRunSuccess", "launch")
    return launched["run"]["runId"]


def wait_for_run(url: str, run_id: str, timeout_s: float = 180) -> str:
    """Poll the run until SUCCESS / FAILURE / CANCELED and return that status."""
    deadline = time.monotonic() + timeout_s
    status = None
    while time.monotonic() < deadline:
        run = _expect(graphql(url, RUN_STATUS_QUERY, {"runId": run_id})["runOrError"], "Run", "run")
        status = run["status"]
        if status in TERMINAL_STATUSES:
            return status
        time.sleep(0.5)
    raise TimeoutError(f"run {run_id} still {status} after {timeout_s}s")


def check_evaluations(url: str, run_id: str) -> dict[str, bool]:
    """Check name -> passed, from the run's AssetCheckEvaluation events.

    A name evaluated more than once in the run (e.g. same check name on two assets) maps to
    True only if every evaluation passed.
    """
    out: dict[str, bool] = {}
    cursor = None
    while True:
        conn = _expect(
            graphql(url, RUN_CHECK_EVALUATIONS_QUERY, {"runId": run_id, "afterCursor": cursor})[
                "logsForRun"
            ],
            "EventConnection",
            "logsForRun",
        )
        for event in conn["events"]:
            if event["__typename"] == "AssetCheckEvaluationEvent":
                ev = event["evaluation"]
                out[ev["checkName"]] = out.get(ev["checkName"], True) and ev["success"]
        if not conn["hasMore"]:
            return out
        cursor = conn["cursor"]
