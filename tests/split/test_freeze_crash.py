"""``write_frozen`` killed at each of its failpoints: a forked child (a real SIGKILL at the
point, its temporary folder left behind, its pid dead) instead of a whole ``split-assets run``
-- the diagnosis is not involved, so a subprocess run would add nothing but seconds. The kill
points of the diagnosis stay end to end in ``tests/diagnosis/test_operations.py``."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from helpers.split import make_problem

from split_assets.lib import failpoints
from split_assets.split.freeze import FrozenSplit, build_pools, write_frozen
from split_assets.split.problem import SplitQuestion
from split_assets.split.selection import select_trainval
from split_assets.split.validation import draw_validation

POINTS = ["freeze.tmp_created", "freeze.pools_written", "freeze.manifest_written",
          "freeze.renamed"]


def _frozen() -> FrozenSplit:
    qs = [SplitQuestion(f"v{v:02d}-{k}", f"v{v:02d}", "A", "short", (v + k) % 3 != 0,
                        None if (v + k) % 3 else "T1") for v in range(12) for k in range(3)]
    problem = make_problem(qs, n_trainval=6)
    selection = select_trainval(problem)
    return build_pools(problem, selection, draw_validation(problem, selection.trainval),
                       "run", "fp-test", "sid")


def _killed_child(point: str, out: Path, frozen: FrozenSplit, doc: dict) -> int:
    """Run write_frozen in a forked child armed to SIGKILL itself at ``point``; its status."""
    pid = os.fork()
    if pid == 0:  # the child: armed, then dies at the point (exit 3 if it never got there)
        try:
            failpoints._point, failpoints._nth, failpoints._hits = point, "", 0
            write_frozen(out, frozen, doc)
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    return status


@pytest.mark.parametrize("point", POINTS)
def test_a_freeze_killed_at_a_point_leaves_no_half_split_and_the_next_one_finishes(
        point: str, tmp_path: Path) -> None:
    frozen, doc = _frozen(), {"pools_sha256": "", "note": "a manifest"}
    out = tmp_path / "splits" / "fp-test" / "sid"
    status = _killed_child(point, out, frozen, doc)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL  # reached
    pools, manifest = out / "pools.json", out / "split_manifest.json"
    assert pools.exists() == manifest.exists() == (point == "freeze.renamed")  # whole or none
    write_frozen(out, frozen, doc)  # the next run's freeze
    assert pools.read_bytes() == frozen.data
    assert manifest.is_file()
    assert [p.name for p in out.parent.iterdir()] == ["sid"]  # the dead child's .tmp is gone
