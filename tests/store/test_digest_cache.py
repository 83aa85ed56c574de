"""The digest cache: reused while its files are unchanged and old enough, recomputed after any
change (content, size, a touch, a file replaced) or when it cannot be trusted (git's racy
rule), ignored when unreadable; ``verify --recompute`` never reads it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from split_assets.store import digest_cache
from split_assets.store.digest_cache import cached_digests


def _age(path: Path, seconds: float = 10.0) -> None:
    """Set the file's times into the past (its change time stays now: see below)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    # the change time cannot be set back: let "old enough" mean 0 ns for these tests, and
    # test the racy rule itself with its real margin below
    monkeypatch.setattr(digest_cache, "RACY_NS", -10**12)
    paths = [tmp_path / "a.db", tmp_path / "tree.json"]
    for p in paths:
        p.write_text("one\n", encoding="utf-8")
    return paths


def test_reused_while_unchanged_recomputed_after_a_change(files: list[Path],
                                                          tmp_path: Path) -> None:
    cache, calls = tmp_path / "cache.json", []

    def compute() -> dict[str, str]:
        calls.append(1)
        return {"traces": f"d{len(calls)}"}

    assert cached_digests(cache, "k", files, compute) == {"traces": "d1"}
    assert cached_digests(cache, "k", files, compute) == {"traces": "d1"}
    assert len(calls) == 1
    assert cached_digests(cache, "other key", files, compute) == {"traces": "d2"}
    files[1].write_text("two\n", encoding="utf-8")  # same size, new content
    assert cached_digests(cache, "k", files, compute) == {"traces": "d3"}
    _age(files[0])  # a touch alone (times moved, content the same) recomputes too
    assert cached_digests(cache, "k", files, compute) == {"traces": "d4"}
    files[0].unlink()  # a file gone
    assert cached_digests(cache, "k", files, compute) == {"traces": "d5"}
    assert cached_digests(None, "k", files, compute) == {"traces": "d6"}  # no cache: computed
    cache.write_text("{not json", encoding="utf-8")  # unreadable: ignored, then rewritten
    assert cached_digests(cache, "k", files, compute) == {"traces": "d7"}
    assert cached_digests(cache, "k", files, compute) == {"traces": "d7"}


def test_a_file_changed_just_before_is_not_trusted(tmp_path: Path) -> None:
    """Git's racy-clean rule: an entry computed within the timestamp margin of its newest file
    is recomputed (the file may have changed again in the same tick), then trusted once the
    files are older than the entry by the margin."""
    path = tmp_path / "a.db"
    path.write_text("one\n", encoding="utf-8")
    cache, calls = tmp_path / "cache.json", []

    def compute() -> dict[str, str]:
        calls.append(1)
        return {"traces": "d"}

    cached_digests(cache, "k", [path], compute)
    cached_digests(cache, "k", [path], compute)
    assert len(calls) == 2  # the file's change time is within the margin of both entries


def test_a_run_reuses_the_digests_and_verify_recomputes(small_workspace: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        run_cli) -> None:  # noqa: ANN001
    """A warm run takes the trees' and traces' digests from the cache (the same digests);
    `verify --recompute` reads every trace itself."""
    import json

    from split_assets.sources import harness_traces as harness

    monkeypatch.setattr(digest_cache, "RACY_NS", -10**12)
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0, err
    pools = Path(dict(x.split("=", 1) for x in out.splitlines() if "=" in x)["pools"])
    first = json.loads((pools.parent / "split_manifest.json").read_bytes())["input_digests"]
    cache = small_workspace.parent / "splits" / ".steps" / "input_digests_cache.json"
    assert cache.is_file()
    read: list[int] = []
    real = harness.trace_digests
    monkeypatch.setattr(harness, "trace_digests", lambda *a, **k: read.append(1) or real(*a, **k))
    code, out, err = run_cli("run", "--config", str(small_workspace))
    assert code == 0 and read == [], err
    again = json.loads((pools.parent / "split_manifest.json").read_bytes())["input_digests"]
    assert again == first
    code, out, err = run_cli("verify", str(pools), "--config", str(small_workspace),
                             "--recompute")
    assert code == 0 and read == [1], out + err
