"""A workspace's resources, under its own names (``orchestration/names.py``):

- ``session``: the ``Session`` each run works with (built on first use in a run, so nothing is
  cached in the code server); a CLI command that already built one lends it to the run it
  launches, so the inputs are parsed once per command;
- ``signal_store``, ``harness_db`` (read-only) and ``judge_endpoint``: what the workspace uses,
  as the Dagster UI's resource view shows it -- where the signal store is, which harness db is
  read (never written), and the judge's endpoint settings (the API key is never among them).
  Read from the config when the code location loads (reload it after editing the config); an
  invalid config shows its one line instead and still loads;
- ``run_options``: the typed run config of ``--allow-degraded``, ``--no-wait`` and
  ``--refreeze-after-test-look`` (fields in the
  launchpad: ``resources: {<name>: {config: {allow_degraded: 2}}}``); a value set here wins over
  the run tags earlier releases used."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from dagster import ConfigurableResource, InitResourceContext, ResourceDefinition
from pydantic import Field, PrivateAttr

from split_assets.app.session import Session
from split_assets.orchestration import names as n
from split_assets.orchestration.names import Names
from split_assets.orchestration.tags import ALLOW_DEGRADED_TAG, NO_WAIT_TAG, int_tag
from split_assets.settings import LoadedConfig


class SessionResource(ConfigurableResource):
    """Gives every asset, op and check the run's ``Session`` of its partition."""

    config_path: str
    _session: Session | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._session = None  # the config is read on first use, once per run

    def session(self, partition_key: str) -> Session:
        """This run's session of the partition being run: the config's own, or (a stale
        partition) one without a judge (``Session.for_partition``)."""
        if self._session is None:
            self._session = Session.open(self.config_path)
        return self._session.for_partition(partition_key)


class SignalStoreResource(ConfigurableResource):
    """The signal store the workspace's diagnoses, cached answers and telemetry go to."""

    location: str = Field(description="paths.signals_db: a SQLite file or a PostgreSQL URL")
    config: str = Field(description="the config file it was read from")


class HarnessDbResource(ConfigurableResource):
    """The agent harness' database: the baseline's predictions and traces, read only."""

    path: str = Field(description="paths.harness_db")
    baseline_run_id: str = Field(description="video_split.baseline_run_id")
    read_only: bool = Field(default=True, description="never written by any step")


class JudgeEndpointResource(ConfigurableResource):
    """The judge's endpoint settings (the API key is never shown: OPENAI_API_KEY)."""

    judge: str = Field(description="diag.judge")
    model: str = Field(description="diag.model")
    base_url: str = Field(description="OPENAI_BASE_URL (openai judge), without credentials")
    concurrency: int = Field(description="diag.concurrency")
    settings: str = Field(description="the judge's call settings (diag.openai)")


class RunOptions(ConfigurableResource):
    """Per-run options, set in the launchpad (or by the CLI's flags). None: unset."""

    allow_degraded: int | None = Field(
        default=None, ge=0, description="freeze with at most this many degraded diagnoses "
                                        "(split-assets run --allow-degraded N); unset: 0")
    no_wait: bool | None = Field(
        default=None, description="refuse at once when another run is diagnosing the same "
                                  "partition (split-assets run --no-wait); unset: false")

    refreeze_after_test_look: bool | None = Field(
        default=None, description="freeze a new split although another split of the baseline "
                                  "had a test look; its ledger starts with those looks "
                                  "(split-assets run --refreeze-after-test-look); unset: false")

    @property
    def refreeze(self) -> bool:
        return bool(self.refreeze_after_test_look)

    def allowed_degraded(self, tags: Mapping[str, str]) -> int:
        """This option, else the run tag of earlier releases, else 0."""
        if self.allow_degraded is not None:
            return self.allow_degraded
        return int_tag(tags, ALLOW_DEGRADED_TAG, 0)

    def refuses_to_wait(self, tags: Mapping[str, str]) -> bool:
        if self.no_wait is not None:
            return self.no_wait
        return tags.get(NO_WAIT_TAG) == "1"


def _base_url() -> str:
    """OPENAI_BASE_URL as the resource view shows it: scheme, host, port and path only (no
    user, password, query or fragment, where a key might hide), with any credential the
    environment holds redacted besides; one that cannot be parsed is said so."""
    from split_assets.lib.redact import environment_redactor

    url = os.environ.get("OPENAI_BASE_URL", "")
    if not url:
        return "the openai client's default (OPENAI_BASE_URL unset)"
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]  # IPv6 brackets and the port kept as written
        _ = parts.port  # a port that is not a number: refused here, not at load
    except ValueError:
        return "OPENAI_BASE_URL cannot be parsed as a URL"
    return environment_redactor()(urlunsplit((parts.scheme, host, parts.path, "", "")))


def loaded_or_error(config_path: Path) -> tuple[LoadedConfig | None, str | None]:
    """The config read when the code location loads, or its one-line error (an invalid config
    never stops the load: its runs and sensor ticks fail with the line instead)."""
    from split_assets.errors import SplitAssetsError
    from split_assets.settings import load_config

    try:
        return load_config(config_path), None
    except SplitAssetsError as exc:
        return None, exc.line()


def described(config_path: Path, loaded: LoadedConfig | None, error: str | None
              ) -> dict[str, ConfigurableResource]:
    """The signal store, harness db and judge endpoint of a config, as the UI shows them; an
    invalid config's one line in their place."""
    if loaded is None:
        line = f"unavailable: {error}"
        return {n.SIGNAL_STORE: SignalStoreResource(location=line, config=str(config_path)),
                n.HARNESS_DB: HarnessDbResource(path=line, baseline_run_id=line, read_only=True),
                n.JUDGE_ENDPOINT: JudgeEndpointResource(judge=line, model=line, base_url=line,
                                                        concurrency=0, settings=line)}
    diag = loaded.config.diag
    settings: dict[str, Any] = {}
    if diag.judge == "openai":
        o = diag.openai
        settings = {**o.fingerprinted(), "response_format": o.response_format,
                    "stream": o.stream, "timeout_s": o.timeout_s, "max_retries": o.max_retries}
    return {
        n.SIGNAL_STORE: SignalStoreResource(location=str(loaded.paths.signals_db),
                                            config=str(loaded.path)),
        n.HARNESS_DB: HarnessDbResource(path=str(loaded.paths.harness_db), read_only=True,
                                        baseline_run_id=loaded.config.video_split.baseline_run_id),
        n.JUDGE_ENDPOINT: JudgeEndpointResource(
            judge=diag.judge, model=diag.model,
            base_url=_base_url() if diag.judge == "openai" else "none (offline rules judge)",
            concurrency=diag.concurrency,
            settings=", ".join(f"{k}={v}" for k, v in sorted(settings.items())) or "-"),
    }


def build_resources(names: Names, path: Path, session: Session | None,
                    loaded: LoadedConfig | None, error: str | None) -> dict[str, object]:
    """A workspace's resources under its names: for a config file, or for a session a command
    built already (lent to the run it launches in-process)."""
    if session is not None:
        lent = SessionResource(config_path=str(path))
        lent._session = session
        own: dict[str, object] = {n.SESSION: ResourceDefinition.hardcoded_resource(lent)}
    else:
        own = {n.SESSION: SessionResource(config_path=str(path))}
    return {names.resource(base): value for base, value in
            {**own, **described(path, loaded, error), n.RUN_OPTIONS: RunOptions()}.items()}


def session_of(context: Any, names: Names) -> Session:
    """The run's session of the partition being run (the workspace's ``session`` resource)."""
    resource: SessionResource = getattr(context.resources, names.resource(n.SESSION))
    return resource.session(context.partition_key)


def options_of(context: Any, names: Names) -> RunOptions:
    return getattr(context.resources, names.resource(n.RUN_OPTIONS))
