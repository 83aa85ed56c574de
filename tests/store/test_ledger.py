"""The evaluation ledger in the signal store, on SQLite and on PostgreSQL: rows in the order
written, identical answers on a pool marked a repeat (whatever the run is called), a store of
an earlier release opened read-only reads as empty, and a copy adds each row once."""

from __future__ import annotations

from pathlib import Path

from split_assets.store.opening import open_store
from split_assets.store.store_copy import copy_store


def test_looks_and_repeats(signals_location: Path | str) -> None:
    with open_store(signals_location) as store:
        first = store.record_look("s1", "validation", "cand-a", "d1", "compare",
                                  {"gain": 0.01}, "accuracy 0.6 vs 0.59")
        again = store.record_look("s1", "validation", "cand-a-renamed", "d1", "compare",
                                  {"gain": 0.01}, "accuracy 0.6 vs 0.59")
        other_pool = store.record_look("s1", "test", "cand-a", "d1", "compare", {}, "t")
        other_split = store.record_look("s2", "validation", "cand-a", "d1", "compare", {}, "s")
        assert (first.is_repeat, again.is_repeat, other_pool.is_repeat,
                other_split.is_repeat) == (False, True, False, False)
        rows = store.looks("s1")
        assert [(r.pool, r.run_id, r.is_repeat) for r in rows] == [
            ("validation", "cand-a", False), ("validation", "cand-a-renamed", True),
            ("test", "cand-a", False)]
        assert rows[0].statistic == {"gain": 0.01} and rows[0].shown == "accuracy 0.6 vs 0.59"
        assert [r.pool for r in store.looks("s1", "test")] == ["test"]
        assert store.looks("nosuch") == []


def test_a_copy_adds_each_row_once(tmp_path: Path, pg_url: str) -> None:
    with open_store(tmp_path / "signals.db") as source:
        source.record_look("s1", "validation", "a", "d1", "compare", {"gain": 0.0}, "x")
        source.record_look("s1", "validation", "a", "d1", "compare", {"gain": 0.0}, "x")
        with open_store(pg_url) as target:
            assert copy_store(source, target).looks == 2
            assert copy_store(source, target).looks == 0
            assert [r.is_repeat for r in target.looks("s1")] == [False, True]
