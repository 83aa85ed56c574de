"""``paths.signals_db`` as a PostgreSQL URL through the CLI: a URL is never taken for a path, a
password in it is refused in one line, and ``split-assets signals copy`` moves a SQLite store
into the database so that the next run pays for nothing and freezes the same bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import edit_config, kv

ERROR_LINE = re.compile(r"^error: .+ \(.+\): .+$")


@pytest.mark.parametrize(("url", "says"), [
    ("postgresql://alice:s3cret@db.example/signals", "contains a password"),
    ("postgresql://alice@db.example/signals?password=s3cret", "contains a password"),
    ("postgresql://alice@db.example/signals?sslpassword=s3cret", "contains a password"),
    ("mysql://alice@db.example/signals", "scheme 'mysql'"),
    ("postgresql://alice@[::1/signals", "not a valid URL"),
])
def test_a_bad_signal_store_url_is_one_line_and_writes_nothing(
        small_workspace: Path, run_cli, url: str, says: str) -> None:  # noqa: ANN001
    edit_config(small_workspace, paths={"signals_db": url})
    before = sorted(p.name for p in small_workspace.parent.iterdir())
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and ERROR_LINE.match(err.strip()), err
    assert says in err and "paths.signals_db" in err and "s3cret" not in err
    assert sorted(p.name for p in small_workspace.parent.iterdir()) == before


def test_signals_copy_then_run_on_postgres_pays_nothing_and_freezes_the_same_bytes(
        small_workspace: Path, run_cli, pg_url: str) -> None:  # noqa: ANN001
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    sqlite_pools = Path(kv(out)["pools"]).read_bytes()
    code, out, err = run_cli("signals", "copy", "--to", pg_url, "--config", str(small_workspace))
    assert code == 0, err
    assert re.match(r"copied \d+ signal row\(s\)", out) and f"signals_db: {pg_url}" in err
    copied = int(out.split()[1])
    code, out, err = run_cli("signals", "copy", "--to", pg_url, "--config", str(small_workspace))
    assert code == 0 and out.startswith("copied 0 signal row(s)") and f"kept {copied}" in out
    (small_workspace.parent / "signals.db").unlink()
    edit_config(small_workspace, paths={"signals_db": pg_url})
    code, out, err = run_cli("run", "--config", str(small_workspace), "--dry-run")
    assert code == 0 and kv(out)["to_diagnose"] == "0" and int(kv(out)["already_diagnosed"]) > 0
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    assert Path(kv(out)["pools"]).read_bytes() == sqlite_pools
    assert not (small_workspace.parent / "signals.db").exists()


def test_signals_copy_refuses_a_target_url_with_a_password(
        small_workspace: Path, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("signals", "copy", "--to", "postgresql://a:s3cret@h/db",
                             "--config", str(small_workspace))
    assert code == 2 and "s3cret" not in err and "(--to)" in err


def test_signals_copy_migrates_a_store_of_the_first_release_on_the_way(
        small_workspace: Path, run_cli, pg_url: str) -> None:  # noqa: ANN001
    import shutil

    release1 = Path(__file__).parents[1] / "fixtures" / "signals_release1.db"
    shutil.copyfile(release1, small_workspace.parent / "signals.db")
    code, out, err = run_cli("signals", "copy", "--to", pg_url, "--config", str(small_workspace))
    assert code == 0, err
    assert out.startswith("copied 9 signal row(s), 1 cached response(s), 3 call record(s)")


def test_signals_copy_without_a_store_is_one_line(small_workspace: Path, run_cli,  # noqa: ANN001
                                                  pg_url: str) -> None:
    code, out, err = run_cli("signals", "copy", "--to", pg_url, "--config", str(small_workspace))
    assert code == 2 and ERROR_LINE.match(err.strip()) and "signal store not found" in err
    assert not (small_workspace.parent / "signals.db").exists()
