"""The gate an import into a workspace passes once a split of it is frozen (the rules are
``evaluation/sealed.py``'s): it reads the workspace's config and signal store, and hands the
rules plain data."""

from __future__ import annotations

from pathlib import Path

from split_assets.evaluation.laundering import laundering_reason
from split_assets.evaluation.sealed import (
    LOOKING_ROLES,
    REFREEZE,
    Gate,
    baseline_digest,
    frozen_splits,
    record_import_look,
    refusals,
    scored,
)
from split_assets.evaluation.shared_budget import (
    published_rows,
    shared_budget,
    workspace_of,
)
from split_assets.importing.workspace_setup import Answer
from split_assets.sources.benchmark import Benchmark
from split_assets.sources.config_file import CONFIG_FILE
from split_assets.split.freeze import split_id as split_id_of


def import_gate(workspace: Path, spend: bool = False, refreeze: bool = False) -> Gate:
    """The gate of an import into ``workspace`` (``spend``: ``--spend-test-look``;
    ``refreeze``: ``--refreeze-after-test-look``, a reference run after a test look)."""

    def gate(run_id: str, role: str | None, answers: dict[str, Answer],
             benchmark: Benchmark) -> list[str]:
        from split_assets.settings import load_config
        from split_assets.workspace.partition import open_signals

        config = workspace / CONFIG_FILE
        if not config.is_file():
            return []
        loaded = load_config(config)
        vs = loaded.config.video_split
        baseline = baseline_digest(vs, loaded.paths.harness_db, benchmark)
        if baseline is None:  # no baseline answers yet: nothing can be frozen
            return []
        shared = published_rows(baseline)  # every workspace of the baseline on the instance
        with open_signals(loaded, read_only=True) as store:
            looked = store.exposures(baseline) + [x for _, x in shared.exposures]
            mine = frozen_splits(loaded.paths.out_dir, store, baseline)
            frozen = frozen_splits(loaded.paths.out_dir, store, baseline,
                                   [r for _, r in shared.frozen])
        if not frozen and not looked:
            return []
        evaluation = loaded.config.evaluation
        laundering = (laundering_reason(run_id, answers, benchmark, vs.infra_stop_reasons,
                                        looked, evaluation.candidates, evaluation.control_run,
                                        loaded.paths.harness_db)
                      if role == "reference" else None)
        refusals(run_id, role, spend, vs.baseline_run_id, frozen, looked, refreeze, laundering)
        if role == "reference" and looked:
            return [f"reference {run_id} added after a test look: the next split-assets run "
                    f"needs {REFREEZE}, which freezes a new split whose ledger starts with "
                    "every earlier look"]
        if role not in LOOKING_ROLES:
            return []
        current = split_id_of(vs.baseline_run_id, vs.identity())
        # this workspace's own split first; another's of the baseline when it froze none
        target = ([f for f in mine if f.pool.split_id == current] or mine
                  or [f for f in frozen if f.pool.split_id == current] or frozen)[-1]
        outcomes = scored(run_id, answers, benchmark, vs.infra_stop_reasons).answered()
        with open_signals(loaded) as store, shared_budget(
                store, workspace_of(loaded.path), baseline, evaluation.test_looks_max) as shared:
            return [record_import_look(store, target, run_id, outcomes, benchmark, shared,
                                       spend)]

    return gate
