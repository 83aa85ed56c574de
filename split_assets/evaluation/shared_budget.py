"""One test budget per baseline on a Dagster instance (issue 46). A workspace's ledger lives in
its own signal store, so a second workspace made from the same baseline file used to start a
fresh budget. Now every test look, every freeze and every refreeze check first reads what the
other workspaces of the baseline (the digest of its answers, as the manifest records it)
published beside the instance (``store/instance_ledger.py``) and copies it into this
workspace's store -- their looks as rows marked with their ``workspace``, which count against
the budget like the looks ``--refreeze-after-test-look`` inherits -- then records its own, and
publishes its own rows, all under the instance-level lock. The smallest
``evaluation.test_looks_max`` any workspace of the baseline declares applies."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from split_assets.config_keys import config_key
from split_assets.errors import UserError
from split_assets.lib.instance_home import resolve_dagster_home
from split_assets.store.instance_ledger import InstanceLedger, Published
from split_assets.store.ledger import Look

if TYPE_CHECKING:
    from split_assets.store.signals import SignalStore

WORKSPACE = "workspace"  # the statistic's key naming the workspace a copied look was made in
POOL = "test"


def workspace_of(config_path: Path) -> str:
    """A workspace's name on the instance: the machine and the folder of its config file
    (two machines of a team may use the same path)."""
    return f"{socket.gethostname()}:{Path(config_path).parent}"


@dataclass(frozen=True)
class SharedBudget:
    """The budget that applies to a look (None: no workspace of the baseline declares one),
    the workspace whose declaration sets it when not this one, and the other workspaces whose
    looks count here."""

    budget: int | None
    declared_by: str | None
    others: tuple[str, ...]

    def note(self) -> str:
        """What a refusal adds: where else the budget was spent, and who set it."""
        parts = []
        if self.others:
            parts.append("looks made in workspace(s) " + ", ".join(self.others)
                         + " of the same baseline count too (one budget per baseline on this "
                         "Dagster instance)")
        if self.declared_by:
            parts.append(f"{config_key('test_looks_max')} {self.budget} is declared by "
                         f"{self.declared_by} (the smallest of the baseline's workspaces)")
        return "; ".join(parts)


def copied(published: Published, here: str) -> list[Look]:
    """The published looks as rows of this store: the other workspaces' marked with their
    workspace, this one's as they were (a store that lost them gets them back)."""
    return [Look(look.split_id, POOL, look.run_id, look.answers_digest, look.source,
                 look.statistic if ws == here else {**look.statistic, WORKSPACE: ws},
                 look.shown, False, look.created_at)
            for ws, look in published.looks]


def _budget(declared: int | None, workspace: str, published: Published) -> SharedBudget:
    budgets = [(b, ws) for ws, b in published.budgets.items()
               if b is not None and ws != workspace]  # this one's: as declared now
    if declared is not None:
        budgets.append((declared, workspace))
    budget, by = min(budgets, key=lambda pair: (pair[0], pair[1] != workspace),
                     default=(None, None))
    others = tuple(sorted({ws for ws, _ in published.looks if ws != workspace}))
    return SharedBudget(budget, by if by not in (None, workspace) else None, others)


def own_rows(store: SignalStore, baseline: str) -> tuple[list[Look], list, list]:
    """This workspace's own test looks of the baseline (neither copied from another workspace
    nor inherited from another split), their exposures and the baseline's frozen splits."""
    exposures = store.exposures(baseline)
    frozen = store.frozen(baseline)
    splits = sorted({x.split_id for x in exposures} | {r.split_id for r in frozen})
    looks = [look for split in splits for look in store.looks(split, POOL)
             if not look.is_repeat and WORKSPACE not in look.statistic
             and "inherited" not in look.statistic]
    mine = {(look.split_id, look.answers_digest) for look in looks}
    return looks, [x for x in exposures if (x.split_id, x.answers_digest) in mine], frozen


@contextmanager
def shared_budget(store: SignalStore, workspace: str, baseline: str,
                  declared: int | None) -> Iterator[SharedBudget]:
    """Under the instance-level lock: the published rows copied into ``store`` (the other
    workspaces', and this one's that the store lacks), then the block (which records this
    workspace's look or freeze), then this workspace's rows published. An error in the block
    publishes nothing."""
    ledger = open_ledger()
    try:
        with ledger.held():
            published = ledger.read(baseline)
            store.mirror(copied(published, workspace), [x for _, x in published.exposures],
                         [r for _, r in published.frozen])
            yield _budget(declared, workspace, published)
            ledger.publish(baseline, workspace, declared, *own_rows(store, baseline))
    finally:
        ledger.close()


def published_rows(baseline: str) -> Published:
    """What every workspace of the baseline published, this one included (a read, no lock,
    nothing created: an instance without the tables has published nothing)."""
    ledger = open_ledger(create=False)
    try:
        return ledger.read(baseline)
    finally:
        ledger.close()


def open_ledger(create: bool = True) -> InstanceLedger:
    """The instance's shared record, or one line saying why it cannot be opened."""
    import sqlite3

    home = resolve_dagster_home()
    try:
        return InstanceLedger(home, create)
    except sqlite3.Error as exc:
        raise UserError(f"the test looks shared on the Dagster instance could not be opened "
                        f"({exc})", str(home), "make DAGSTER_HOME writable, or wait for the "
                        "other command that holds it") from None


def budget_now(config_path: Path, declared: int | None, baseline: str,
               split_id: str) -> tuple[SharedBudget, list[Look]]:
    """The budget a look at the split would be held to now (``declared``: this workspace's
    test_looks_max), and the other workspaces' looks at it that this store has not copied
    yet (a read: ``split-assets report``)."""
    here = workspace_of(config_path)
    published = published_rows(baseline)
    return (_budget(declared, here, published),
            [look for look in copied(published, here) if look.split_id == split_id])
