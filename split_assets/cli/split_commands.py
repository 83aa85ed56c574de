"""The split's own commands: ``split-assets run`` (validate, diagnose, freeze), ``fingerprint``
(what the diagnoses are keyed by) and ``verify`` (re-check a frozen pools.json)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from split_assets.cli.arguments import Subcommands, actions, command, config_arg
from split_assets.cli.terminal import open_session, print_pairs, say
from split_assets.errors import RunFailure, UserError

if TYPE_CHECKING:
    from split_assets.workspace.partition import Partition


def add_run(sub: Subcommands) -> None:
    p = command(sub, "run", "materialize every asset and check of the config's partition",
                handle_run, keeps_gc_paused=True)
    config_arg(p)
    p.add_argument("--dry-run", action="store_true",
                   help="validate config and inputs, print the plan; call no judge, write nothing")
    p.add_argument("--generated-at", help="pin the manifest's generated_at (ISO 8601)")
    p.add_argument("--allow-degraded", type=int, default=0, metavar="N",
                   help="freeze even if at most N diagnoses stay degraded after the retry "
                        "pass (listed in the manifest; default 0)")
    p.add_argument("--no-wait", action="store_true",
                   help="refuse at once when another run is diagnosing this partition, "
                        "instead of sharing the work with it")
    p.add_argument("--refreeze-after-test-look", action="store_true",
                   help="freeze a new split although a split of this baseline had a test "
                        "look (its ledger then starts with every earlier look at its test "
                        "questions)")


def add_fingerprint(sub: Subcommands) -> None:
    p = command(sub, "fingerprint", "print the diagnosis fingerprint and its components",
                handle_fingerprint)
    config_arg(p)
    p.add_argument("--register", action="store_true",
                   help="also register it as a partition in the Dagster instance")
    p.add_argument("--diff", nargs=2, metavar=("A", "B"),
                   help="what differs between two fingerprints (the config's own, or any "
                        "diagnosed with its signal store)")


def add_verify(sub: Subcommands) -> None:
    p = command(sub, "verify", "re-check a frozen pools.json against the config's inputs "
                               "(invariants, sizes, correctness)", handle_verify)
    p.add_argument("pools_json", type=Path, metavar="POOLS_JSON")
    config_arg(p)
    p.add_argument("--recompute", action="store_true",
                   help="also re-run the selection from the inputs and compare the bytes")


def add_partitions(sub: Subcommands) -> None:
    p = command(sub, "partitions", "the fingerprint partitions registered in the Dagster "
                                   "instance for the config's workspace")
    group = actions(p)
    k = command(group, "list", "list them with what each holds (current, materialized "
                               "assets, diagnoses, splits)", handle_partitions_list)
    config_arg(k)
    k = command(group, "prune", "remove stale partitions that hold nothing (named ones: "
                                "refused if current or holding data, unless --force)",
                handle_partitions_prune)
    k.add_argument("keys", nargs="*", metavar="FINGERPRINT",
                   help="the partitions to remove (default: every stale, empty one)")
    k.add_argument("--force", action="store_true",
                   help="remove a named partition that holds materializations or splits "
                        "(files and diagnoses stay)")
    k.add_argument("--ownerless", action="store_true",
                   help="instead, wipe from the instance the assets no served workspace owns "
                        "(unprefixed ones from before workspace add; files and diagnoses "
                        "stay)")
    config_arg(k)


def _registry(config: Path | None):  # noqa: ANN202 - (instance, names, partition, found)
    from split_assets.app.declared_workspaces import name_for
    from split_assets.orchestration.instance import get_instance
    from split_assets.orchestration.names import Names
    from split_assets.orchestration.partition_registry import registered

    partition = open_session(config).partition
    names = Names(name_for(partition.loaded.path))
    instance = get_instance()
    return instance, names, registered(instance, names, partition)


def handle_partitions_list(args: argparse.Namespace) -> int:
    from split_assets.orchestration.ownerless import label, ownerless_keys
    from split_assets.orchestration.partition_registry import HEADER

    instance, names, found = _registry(args.config)
    print(HEADER)
    for r in found:
        print(r.row())
    say(f"{len(found)} partition(s) of {names.partitions}; stale and empty: "
        f"{sum(not r.current and not r.holds_data for r in found)} (split-assets partitions "
        f"prune)")
    orphans = ownerless_keys(instance)
    label(instance, orphans)  # the UI says what they are
    if orphans:
        say(f"{len(orphans)} ownerless asset(s) in the catalog, of a workspace the code "
            f"location does not serve ({', '.join(k.to_user_string() for k in orphans)}): "
            "clear them with split-assets partitions prune --ownerless")
    return 0


def handle_partitions_prune(args: argparse.Namespace) -> int:
    from split_assets.orchestration.partition_registry import prune

    if args.ownerless:
        return _prune_ownerless(args)
    instance, names, found = _registry(args.config)
    removed, kept = prune(instance, names, found, args.keys, args.force)
    for r in removed:
        print(f"pruned={r.key}")
        if r.diagnoses:
            say(f"{r.key}: its {r.diagnoses} diagnoses stay in the signal store")
    for key, why in kept:
        print(f"kept={key} ({why})")
    return 0


def _prune_ownerless(args: argparse.Namespace) -> int:
    from split_assets.orchestration.instance import get_instance
    from split_assets.orchestration.ownerless import ownerless_keys, wipe

    if args.keys or args.force:
        raise UserError("--ownerless with fingerprints or --force", "partitions prune",
                        "prune the ownerless assets in a command of their own")
    instance = get_instance()
    keys = ownerless_keys(instance)
    wipe(instance, keys)
    for key in keys:
        print(f"wiped={key.to_user_string()}")
    say(f"{len(keys)} ownerless asset(s) wiped from the instance (split folders and diagnoses "
        "stay; a run of an undeclared config materializes its unprefixed assets again)"
        if keys else "no ownerless asset in the instance")
    return 0


def handle_run(args: argparse.Namespace) -> int:
    return run(args.config, args.dry_run, args.generated_at, args.allow_degraded,
               args.no_wait, args.refreeze_after_test_look)


def _check_generated_at(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise UserError(f"--generated-at {value!r} is not an ISO 8601 time", "--generated-at",
                        "use e.g. 2026-01-01T00:00:00Z") from None
    return value


def run(config: Path | None, dry_run: bool = False, generated_at: str | None = None,
        allow_degraded: int = 0, no_wait: bool = False, refreeze: bool = False) -> int:
    """Validate, register the fingerprint partition and materialize every asset and check
    (``dry_run``: print the plan instead; call no judge, write nothing; ``refreeze``: a new
    split after a test look at another split of the baseline)."""
    from split_assets.diagnosis.preflight import preflight

    generated_at = _check_generated_at(generated_at)
    if allow_degraded < 0:
        raise UserError(f"--allow-degraded {allow_degraded} is negative", "--allow-degraded",
                        "pass 0 or more")
    from split_assets.app.declared_workspaces import name_for

    s = open_session(config)
    partition = s.partition
    assert s.judge is not None  # a command's session is the config's own
    name_for(s.loaded.path)  # the declarations the run reads: a broken one is refused now
    if dry_run:  # its estimate renders every prompt: collect as usual
        from split_assets.lib import gc_pause

        gc_pause.resume()
    # before anything is paid for or written
    checked = preflight(s.inputs, partition, s.judge, estimate=dry_run, refreeze=refreeze)
    if dry_run:
        return print_pairs(checked.lines(s.inputs.predictions, partition))
    from split_assets.orchestration.instance import dagster_home
    from split_assets.orchestration.launch import run_split_job

    for line in run_split_job(s, *_run_tags(generated_at, allow_degraded, no_wait, refreeze)):
        say(f"warning: {line}")
    files, budgets = partition.files, s.loaded.config.evaluation
    evaluation = ([("evaluation", files.evaluation)] if budgets.candidates
                  and files.evaluation.is_file() else [])
    manifest = partition.frozen_manifest()
    print_pairs([("fingerprint", partition.key), ("split_id", partition.split_id),
                        ("pools", files.pools),
                        ("pools_sha256", manifest["pools_sha256"]),
                        ("manifest", files.manifest), *evaluation,
                        ("test_looks_max", budgets.test_looks_max or "none"),
                        ("feedback_budget", budgets.feedback_budget),
                        ("dagster_home", dagster_home())])
    for warning in manifest.get("warnings", []):  # valid, but not outcome-driven: last
        say(f"warning: {warning}")
    return 0


def _run_tags(generated_at: str | None, allow_degraded: int, no_wait: bool,
              refreeze: bool) -> tuple[dict[str, str], dict[str, object]]:
    """The run's tags (the UI's run list shows them) and its run config (which decides)."""
    from split_assets.orchestration.tags import ALLOW_DEGRADED_TAG, GENERATED_AT_TAG, NO_WAIT_TAG

    tags = {GENERATED_AT_TAG: generated_at} if generated_at else {}
    options: dict[str, object] = {}
    if allow_degraded:
        tags[ALLOW_DEGRADED_TAG] = str(allow_degraded)
        options["allow_degraded"] = allow_degraded
    if no_wait:
        tags[NO_WAIT_TAG] = "1"
        options["no_wait"] = True
    if refreeze:
        options["refreeze_after_test_look"] = True
    return tags, options


def handle_fingerprint(args: argparse.Namespace) -> int:
    """Print the fingerprint key, then its components (``--diff``: what differs between two)."""
    partition = open_session(args.config).partition
    own = partition.fingerprint
    if args.diff:
        return _diff(partition, args.diff)
    print(own.key)
    for name, value in own.components.items():
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        print(f"{name}={shown}")
    if args.register:
        from split_assets.app.declared_workspaces import name_for
        from split_assets.orchestration.instance import get_instance, register_partition
        from split_assets.orchestration.names import Names

        names = Names(name_for(partition.loaded.path))
        new = register_partition(get_instance(), own.key, names.partitions)
        say(f"partition {own.key} {'registered' if new else 'already registered'}")
    return 0


def _diff(partition: Partition, keys: list[str]) -> int:
    from split_assets.workspace.fingerprint import components_of, difference

    def recorded(key: str) -> dict | None:
        with partition.store(read_only=True) as store:
            return store.fingerprint_components(key)

    a, b = (components_of(partition.fingerprint, key, recorded,
                          str(partition.loaded.paths.signals_db)) for key in keys)
    lines = difference(a, b)
    print("\n".join(lines) if lines else f"{keys[0]} and {keys[1]}: the same components")
    return 0


def handle_verify(args: argparse.Namespace) -> int:
    """Re-check a frozen pools.json against the config's inputs."""
    from split_assets.workspace.pools_check import check_pools_file, read_pools_file

    pools_json: Path = args.pools_json
    read_pools_file(pools_json)  # a wrong file is refused before the config is read
    s = open_session(args.config)
    results = check_pools_file(s.inputs, s.partition, pools_json, args.recompute)
    for r in results:
        print(f"{'ok  ' if r.passed else 'FAIL'} {r.name}: {r.detail}")
    failed = [r.name for r in results if not r.passed]
    if failed:
        raise RunFailure(f"{len(failed)} check(s) failed: {', '.join(failed)}",
                         str(pools_json), "the file does not match the config's inputs: "
                                          "re-freeze the split with 'split-assets run'")
    return 0
