"""A real PostgreSQL server for tests, from Debian's ``postgresql`` binaries (apt-get install
postgresql; .ci/run installs it): initdb and pg_ctl refuse to run as root, so they run as the
``postgres`` system user, in a ``mkdtemp`` folder it owns, listening only on a Unix socket in
that folder. Trust authentication: no password exists anywhere."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Postgres:
    folder: Path  # holds the data directory and the socket
    user: str = "postgres"
    bindir: str = ""

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: clients are disconnected, as a service stop does;
        ``immediate``: as a crash)."""
        _as_postgres([f"{self.bindir}/pg_ctl", "-D", str(self.folder / "data"), "-m", mode,
                      "-w", "stop"])

    def start(self) -> None:
        """Start the server (again), on the same socket and data directory."""
        _as_postgres([f"{self.bindir}/pg_ctl", "-D", str(self.folder / "data"), "-o",
                      _OPTIONS.format(folder=self.folder), "-w", "-t", "60", "-l",
                      str(self.folder / "server.log"), "start"])

    def url(self, database: str, driver: str = "") -> str:
        """libpq URL over the socket; ``driver`` e.g. ``psycopg2`` for SQLAlchemy (2.1 picks
        psycopg 3 for a bare postgresql:// URL; dagster-postgres uses psycopg2)."""
        scheme = f"postgresql+{driver}" if driver else "postgresql"
        return f"{scheme}://{self.user}@/{database}?host={self.folder}"

    def create_database(self, name: str, driver: str = "") -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name, driver)


_OPTIONS = ("-k {folder} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=100")


def binaries() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return str(Path(found[-1]).parent) if found else None


def _as_postgres(argv: list[str]) -> None:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run(prefix + argv, check=True, capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """Start a throwaway server; stop it and remove its folder afterwards."""
    bindir = binaries()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL is not installed: apt-get install postgresql")
    folder = Path(tempfile.mkdtemp(prefix="split-assets-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data = folder / "data"
    server = Postgres(folder, bindir=bindir)
    try:
        _as_postgres([f"{bindir}/initdb", "-D", str(data), "-A", "trust", "-U", "postgres",
                      "--no-sync", "-E", "UTF8"])
        server.start()
        yield server
    finally:
        with contextlib.suppress(Exception):
            _as_postgres([f"{bindir}/pg_ctl", "-D", str(data), "-m", "immediate", "stop"])
        shutil.rmtree(folder, ignore_errors=True)


# -- pytest fixtures (tests/conftest.py loads this module as a plugin) ---------------------------
