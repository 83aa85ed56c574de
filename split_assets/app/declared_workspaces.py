"""Declared workspaces: the ``SplitWorkspace`` instances the code location serves, read without
importing Dagster (the CLI uses them to find a config's prefix).

A workspace is declared by ``<folder>/<name>/defs.yaml`` in the folder ``$SPLIT_ASSETS_WORKSPACES``
names (default: ``workspaces/`` in the project's checkout when the package runs from one, as
``make`` installs it, else ``./workspaces``)::

    type: split_assets.components.SplitWorkspace
    attributes:
      name: videomme            # the asset-key prefix: videomme/frozen_pools
      config: ../../videomme/video_split.yaml   # relative to this defs.yaml's folder

``split-assets demo`` and ``split-assets workspace add`` write these files; a user can add one
by hand (outside the repository: nothing in the installed package is edited). When
``SPLIT_ASSETS_CONFIG`` is set, it replaces them in the code location: one unprefixed
workspace, today's names."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from split_assets.errors import ConfigError
from split_assets.lib.canonical import atomic_write_bytes
from split_assets.lib.instance_home import project_root
from split_assets.settings import CONFIG_ENV_VAR

WORKSPACES_ENV_VAR = "SPLIT_ASSETS_WORKSPACES"
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")  # a workspace's name, its asset-key prefix
DEFAULT_WORKSPACES_DIR = "workspaces"
COMPONENT_TYPE = "split_assets.components.SplitWorkspace"
NAME_RULE = "lowercase letters, digits and _, starting with a letter, at most 40 characters"


@dataclass(frozen=True)
class Declared:
    """One declared workspace: its name (the prefix), its config (absolute) and where."""

    name: str
    config: Path
    defs_yaml: Path


def workspaces_dir() -> Path:
    """``$SPLIT_ASSETS_WORKSPACES``; else ``workspaces/`` beside the package in a checkout
    (a ``pyproject.toml`` there: what ``dg dev`` reads wherever a command is started), else
    ``./workspaces``."""
    named = os.environ.get(WORKSPACES_ENV_VAR)
    if named:
        return Path(named).absolute()
    checkout = project_root()
    if checkout is not None:
        return checkout / DEFAULT_WORKSPACES_DIR
    return Path(DEFAULT_WORKSPACES_DIR).absolute()


def check_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ConfigError(f"workspace name {name!r} is not a valid name", where,
                          f"use {NAME_RULE} (it prefixes the asset keys: name/frozen_pools)")
    return name


def read_declaration(defs_yaml: Path) -> Declared:
    """One ``defs.yaml``: its name and its config (resolved against the file's folder, which
    must exist)."""
    where = str(defs_yaml)
    try:
        doc = yaml.safe_load(defs_yaml.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"workspace declaration unreadable: {first}", where,
                          "fix the YAML (type: and attributes: name, config)") from None
    if not isinstance(doc, dict) or doc.get("type") != COMPONENT_TYPE:
        raise ConfigError(f"workspace declaration is not a {COMPONENT_TYPE}", where,
                          f"set 'type: {COMPONENT_TYPE}', or move the file out of "
                          f"{defs_yaml.parent.parent}")
    attributes = doc.get("attributes")
    if not isinstance(attributes, dict) or set(attributes) != {"name", "config"}:
        raise ConfigError("workspace declaration needs exactly the attributes name and config",
                          where, "write attributes: {name: NAME, config: PATH/video_split.yaml}")
    name = check_name(attributes["name"], where)
    config = resolve_config(attributes["config"], defs_yaml.parent, where)
    return Declared(name, config, defs_yaml)


def resolve_config(value: object, base: Path, where: str) -> Path:
    """A declaration's config path, relative to its folder; a missing file is one line."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"workspace config {value!r} is not a path", where,
                          "set config: to the workspace's video_split.yaml")
    path = Path(os.path.normpath(base / Path(value).expanduser()))
    if not path.is_file():
        raise ConfigError(f"workspace config not found: {path}", where,
                          "point config: at an existing video_split.yaml (relative to this "
                          "defs.yaml's folder), or remove the declaration")
    return path


def declared(folder: Path | None = None) -> list[Declared]:
    """Every declared workspace, sorted by name; two with one name, or two naming one config,
    are refused with one line."""
    folder = folder or workspaces_dir()
    found: list[Declared] = []
    if folder.is_dir():
        found = [read_declaration(p) for p in sorted(folder.glob("*/defs.yaml"))]
    refuse_duplicates(found)
    return sorted(found, key=lambda d: d.name)


def refuse_duplicates(found: list[Declared]) -> None:
    by_name: dict[str, Declared] = {}
    by_config: dict[Path, Declared] = {}
    for d in found:
        if d.name in by_name:
            raise ConfigError(f"two workspaces are named {d.name!r}", str(d.defs_yaml),
                              f"rename one (the other is {by_name[d.name].defs_yaml})")
        if d.config.resolve() in by_config:
            other = by_config[d.config.resolve()]
            raise ConfigError(f"workspaces {other.name!r} and {d.name!r} name one config "
                              f"({d.config})", str(d.defs_yaml),
                              "declare each config once: two names for one config would be two "
                              "Dagster assets for one split")
        by_name[d.name], by_config[d.config.resolve()] = d, d


def name_for(config: Path) -> str | None:
    """The prefix of the workspace whose config is ``config``: None (unprefixed) when none
    declares it, or when it is the config ``SPLIT_ASSETS_CONFIG`` names (which the code
    location then serves unprefixed)."""
    target = config.resolve()
    served = os.environ.get(CONFIG_ENV_VAR)
    if served and Path(served).resolve() == target:
        return None
    for d in declared():
        if d.config.resolve() == target:
            return d.name
    return None


def declared_as(name: str, config: Path, folder: Path | None = None) -> Path | None:
    """The defs.yaml declaring ``config`` as ``name`` (None: not declared yet); another config
    under that name, or this config under another name, is refused with one line."""
    check_name(name, "--name")
    target = config.absolute().resolve()
    for d in declared(folder):
        if d.name == name and d.config.resolve() == target:
            return d.defs_yaml
        if d.name == name:
            raise ConfigError(f"workspace {name!r} is declared for another config ({d.config})",
                              str(d.defs_yaml), "pass another --name, or remove that folder")
        if d.config.resolve() == target:
            raise ConfigError(f"this config is declared already, as {d.name!r}",
                              str(d.defs_yaml), f"use the name {d.name!r}")
    return None


def declare(name: str, config: Path, folder: Path | None = None) -> tuple[Path, bool]:
    """Write ``<folder>/<name>/defs.yaml`` for ``config``; (its path, whether it is new).
    Declaring the same again changes nothing (``declared_as`` refuses the rest)."""
    folder = folder or workspaces_dir()
    config = config.absolute()
    if not config.is_file():
        raise ConfigError(f"config not found: {config}", "--config",
                          "build or import the workspace first")
    already = declared_as(name, config, folder)
    if already is not None:
        return already, False
    target = folder / name / "defs.yaml"
    relative = os.path.relpath(config, target.parent)
    text = yaml.safe_dump({"type": COMPONENT_TYPE,
                           "attributes": {"name": name, "config": relative}}, sort_keys=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, text.encode("utf-8"))
    return target, True
