"""The fingerprint partitions registered in the Dagster instance for one workspace, with what
each holds (``split-assets partitions list``), and the removal of stale ones (``prune``).

A partition is registered by ``run``, ``fingerprint --register`` or the sensor whenever the
config's fingerprint is new; one a config held for a minute stays in the launch dialog for
good unless pruned. Pruning removes only the registry entry: diagnoses stay in the signal
store (keyed by fingerprint, found again if the config comes back) and split folders stay on
disk."""

from __future__ import annotations

from dataclasses import dataclass

from dagster import DagsterInstance

from split_assets.errors import UserError
from split_assets.orchestration.names import ASSETS, Names
from split_assets.workspace.partition import Partition


@dataclass(frozen=True)
class Registered:
    """One registered fingerprint and what it holds."""

    key: str
    current: bool
    materialized: tuple[str, ...]  # the workspace's assets materialized in this partition
    diagnoses: int                  # the baseline's diagnoses stored under this fingerprint
    splits: int                     # frozen splits (pools.json) under out_dir/<fingerprint>/

    @property
    def holds_data(self) -> bool:
        return bool(self.materialized or self.splits)

    def row(self) -> str:
        held = ",".join(self.materialized) or "-"
        return (f"{self.key}\t{'yes' if self.current else 'no'}\t{len(self.materialized)}\t"
                f"{self.diagnoses}\t{self.splits}\t{held}")


HEADER = "fingerprint\tcurrent\tmaterialized_assets\tdiagnoses\tsplits\tassets"


def registered(instance: DagsterInstance, names: Names,
               partition: Partition) -> list[Registered]:
    """Every partition of the workspace's partitions definition, in registration order."""
    keys = list(instance.get_dynamic_partitions(names.partitions))
    materialized = {asset: instance.get_materialized_partitions(names.key(asset))
                    for asset in ASSETS}
    out_dir = partition.loaded.paths.out_dir
    with partition.store(read_only=True) as store:
        diagnoses = {key: len(store.done_question_ids(partition.run_id, key)) for key in keys}
    return [Registered(key, key == partition.key,
                       tuple(a for a in ASSETS if key in materialized[a]), diagnoses[key],
                       len(list((out_dir / key).glob("*/pools.json"))))
            for key in keys]


def prune(instance: DagsterInstance, names: Names, found: list[Registered],
          keys: list[str], force: bool) -> tuple[list[Registered], list[tuple[str, str]]]:
    """Remove the named partitions (none named: every stale, empty one); (removed, kept with
    why). A named one that is current, unknown, or holds data without ``force`` is refused
    in one line before anything is removed."""
    by_key = {r.key: r for r in found}
    for key in keys:
        if key not in by_key:
            raise UserError(f"no partition {key} is registered", "partitions prune",
                            "see 'split-assets partitions list'")
        r = by_key[key]
        if r.current:
            raise UserError(f"{key} is the current config's fingerprint", "partitions prune",
                            "it would be registered again at once: change the config first")
        if r.holds_data and not force:
            raise UserError(f"{key} holds data ({len(r.materialized)} materialized "
                            f"asset(s), {r.splits} split(s))", "partitions prune",
                            "pass --force to remove it from the instance anyway (its files "
                            "and diagnoses stay)")
    chosen = [by_key[k] for k in keys] if keys else [
        r for r in found if not r.current and not r.holds_data]
    kept = [] if keys else [(r.key, "current" if r.current else "holds data")
                            for r in found if r.current or r.holds_data]
    for r in chosen:
        instance.delete_dynamic_partition(names.partitions, r.key)
    return chosen, kept
