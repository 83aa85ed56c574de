"""A real PostgreSQL server for tests, from Debian's ``postgresql`` binaries (apt-get install
postgresql; .ci/run installs it): initdb and pg_ctl refuse to run as root, so they run as the
``postgres`` system user, in a ``mkdtemp`` folder it owns, listening only on a Unix socket in
that folder. Trust authentication: no password exists anywhere."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.postgres import Postgres, binaries, postgres_server

_DATABASES = iter(range(1, 1_000_000))


@pytest.fixture(scope="session")
def pg() -> Iterator[Postgres]:
    """One PostgreSQL server for the test session, started on first use. Without Debian's
    binaries the test is skipped when pytest is run by hand; under ``make test`` (which installs
    them) and CI it fails."""
    if binaries() is None:
        message = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("SPLIT_ASSETS_TEST_PACKAGES") == "required" or \
                os.environ.get("CI") == "true":
            pytest.fail(f"{message}: make test must run the PostgreSQL tests")
        pytest.skip(message)
    with postgres_server() as server:
        yield server


@pytest.fixture
def pg_url(pg: Postgres) -> str:
    """A fresh, empty database of the session's server (a ``postgresql://`` URL)."""
    return pg.create_database(f"t{next(_DATABASES)}")


@pytest.fixture(params=["sqlite", "postgresql"])
def signals_location(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where a signal store lives, once per backend: a SQLite file, a PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "signals.db"
    return request.getfixturevalue("pg_url")
