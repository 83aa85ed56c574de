"""The one resource, ``SessionResource``: where the config file is, and the ``Session`` each
run works with (built in ``setup_for_execution``, so nothing is cached in the code server); a
CLI command that already built one lends it to the run it launches, so the inputs are parsed
once per command."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext, ResourceDefinition
from pydantic import PrivateAttr

from split_assets.config import config_path_from_env
from split_assets.session import Session


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


def build_resources(config_path: Path | str | None = None,
                    session: Session | None = None) -> dict[str, object]:
    """Resources for a config file (default: ``$SPLIT_ASSETS_CONFIG``), or for a session a
    command built already (lent to the run it launches in-process)."""
    if session is not None:
        lent = SessionResource(config_path=str(session.loaded.path))
        lent._session = session
        return {"session": ResourceDefinition.hardcoded_resource(lent)}
    path = Path(config_path) if config_path is not None else config_path_from_env()
    return {"session": SessionResource(config_path=str(path.absolute()))}
