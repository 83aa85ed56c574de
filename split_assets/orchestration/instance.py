"""The persistent Dagster instance shared by the CLI, ``dagster dev`` and the tests."""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import DagsterInstance

from split_assets.errors import UserError, environment_error
from split_assets.lib.instance_home import resolve_dagster_home

# telemetry off; no first-visit modal in the UI
DAGSTER_YAML = "telemetry:\n  enabled: false\nnux:\n  enabled: false\n"
DIAGNOSIS_TAG = "split_assets/diagnosis"  # on every run of the split_pipeline job


def team_dagster_yaml(limit: int = 2, max_runs: int = 8) -> str:
    """docs/how-to/team.md: the instance on PostgreSQL (dagster-postgres; the URL from
    ``DAGSTER_POSTGRES_URL``, never in the file), the queued run coordinator letting at most
    ``limit`` diagnosis runs call the endpoint at once."""
    return f"""\
storage:
  postgres:
    postgres_url:
      env: DAGSTER_POSTGRES_URL
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    max_concurrent_runs: {max_runs}
    tag_concurrency_limits:
      - key: {DIAGNOSIS_TAG}
        limit: {limit}
telemetry:
  enabled: false
nux:
  enabled: false
"""


def dagster_home() -> Path:
    """The instance's folder (``resolve_dagster_home``), created with telemetry off when new,
    and set as ``DAGSTER_HOME`` for Dagster."""
    home = resolve_dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML, encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


READY = ".split_assets_storage_ready"  # the instance's storage was created (under the lock)


@contextmanager
def _home_lock(home: Path) -> Iterator[None]:
    with open(home / ".split_assets.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _first_load(home: Path) -> DagsterInstance:
    """The first load of a new instance creates its storage (SQLite databases and their
    schema versions); two processes doing it at once can leave it unloadable ("alembic_version
    has more than one head"), so the first load happens under a file lock, one at a time."""
    with _home_lock(home):
        instance = DagsterInstance.get()
        if not (home / READY).exists():
            instance.get_runs(limit=1)  # every storage made and stamped before the mark
            (home / READY).touch()
        return instance


def _no_retry_noise(record: logging.LogRecord) -> bool:
    """dagster-postgres logs each retry of a lost connection on the root logger; the user
    sees the one line of ``instance_storage_error`` if the retries run out, nothing if one
    succeeds."""
    return not str(record.msg).startswith(("Retrying failed database", "Retrying failed DB"))


def get_instance() -> DagsterInstance:
    """The persistent instance; a broken ``dagster.yaml`` is one line naming it."""
    if _no_retry_noise not in logging.getLogger().filters:
        logging.getLogger().addFilter(_no_retry_noise)
    home = dagster_home()
    try:
        if (home / READY).exists():
            return DagsterInstance.get()
        return _first_load(home)
    except Exception as exc:  # noqa: BLE001 - Dagster raises many kinds for a bad instance
        if environment_error(exc) is not None:
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"the Dagster instance cannot be loaded: {first}",
                        str(home / "dagster.yaml"),
                        "fix or remove that file (it needs only 'telemetry: {enabled: false}'),"
                        " or point DAGSTER_HOME elsewhere") from None


def instance_storage_error(exc: BaseException) -> UserError | None:
    """The one line of a Dagster instance whose PostgreSQL database went away (stopped,
    restarted, the network cut): dagster-postgres's retries ran out, or a statement lost its
    connection. It names the database (no credentials) and the server's own words; None for
    anything else."""
    import sqlalchemy.exc

    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and len(chain) < 8:
        chain.append(link)
        link = link.__cause__ or link.__context__
    if not any(type(e).__name__ == "DagsterPostgresException"
               or isinstance(e, sqlalchemy.exc.OperationalError | sqlalchemy.exc.InterfaceError)
               for e in chain):
        return None
    from split_assets.judge.call_policy import safe_url
    from split_assets.store.instance_ledger import instance_postgres_url

    url = instance_postgres_url(resolve_dagster_home())
    if url is None:
        return None
    # the driver's own words: the deepest error's first line
    words = next((str(getattr(e, "orig", None) or e).strip().splitlines()[0]
                  for e in reversed(chain) if str(getattr(e, "orig", None) or e).strip()),
                 type(exc).__name__)
    return UserError(f"cannot reach the Dagster instance's database: {words}",
                     f"{resolve_dagster_home() / 'dagster.yaml'} storage postgres "
                     f"{safe_url(url)}",
                     "check that the server runs and accepts this user, then run again "
                     "(finished diagnoses are kept)")


def register_partition(instance: DagsterInstance, key: str, name: str = "diag_fingerprint"
                       ) -> bool:
    """Add the fingerprint partition to the partitions definition ``name`` (a workspace's
    ``Names.partitions``) if absent; True when it was new."""
    if instance.has_dynamic_partition(name, key):
        return False
    try:
        instance.add_dynamic_partitions(name, [key])
    except Exception:  # noqa: BLE001 - a concurrent run registered it first (UNIQUE constraint)
        if instance.has_dynamic_partition(name, key):
            return False
        raise
    return True
