"""Loading the config file (``config/video_split.yaml``): parsing, validation and where its
paths point.

Paths in the file are resolved against the folder that holds the file. Unknown keys are errors
with the closest valid key suggested; required keys have no default. A key written twice in the
YAML is an error rather than "the last one wins".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from split_assets.errors import ConfigError, UserError
from split_assets.lib.files import read_utf8
from split_assets.lib.strict_yaml import (
    DuplicateKeyError,
    UniqueKeyLoader,
    describe_error,
    unknown_keys,
)
from split_assets.settings.sections import SplitConfig
from split_assets.store.signals_pg import check_store_url, is_store_url

DEFAULT_CONFIG_PATH = "config/video_split.yaml"
CONFIG_ENV_VAR = "SPLIT_ASSETS_CONFIG"


@dataclass(frozen=True)
class ResolvedPaths:
    """Absolute paths of every input and output."""

    questions_dir: Path
    harness_db: Path
    store_dir: Path
    signals_db: Path | str  # a file, or a postgresql:// URL (store/signals_pg.py)
    out_dir: Path
    prompts_dir: Path


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config together with where it came from."""

    config: SplitConfig
    path: Path

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @cached_property
    def paths(self) -> ResolvedPaths:
        p = self.config.paths
        base = self.base_dir
        prompts = (
            (base / self.config.diag.prompts_dir).resolve()
            if self.config.diag.prompts_dir
            else shipped_prompts_dir()
        )
        return ResolvedPaths(
            questions_dir=(base / p.questions_dir).resolve(),
            harness_db=(base / p.harness_db).resolve(),
            store_dir=(base / p.store_dir).resolve(),
            signals_db=(p.signals_db if is_store_url(p.signals_db)
                        else (base / p.signals_db).resolve()),
            out_dir=(base / p.out_dir).resolve(),
            prompts_dir=prompts,
        )

    def relative(self, path: Path | str) -> str:
        """``path`` relative to the config file's folder (for manifests: no absolute paths);
        a database URL as it is."""
        if is_store_url(path):
            return str(path)
        return os.path.relpath(path, self.base_dir).replace(os.sep, "/")


def shipped_prompts_dir() -> Path:
    """The prompt templates shipped with the package (wheel) or beside it (editable checkout)."""
    here = Path(__file__).resolve().parents[1]  # the package's folder
    for candidate in (here / "prompts", here.parent / "prompts"):
        if candidate.is_dir():
            return candidate
    return here / "prompts"


def config_path_from_env() -> Path:
    """The config file named by ``SPLIT_ASSETS_CONFIG`` (default ``config/video_split.yaml``)."""
    return Path(os.environ.get(CONFIG_ENV_VAR) or DEFAULT_CONFIG_PATH)


def parse_config(raw: Any, path: Path) -> LoadedConfig:
    """Validate a parsed YAML document; raise ConfigError with every problem on one line."""
    where = str(path)
    if not isinstance(raw, dict):
        raise ConfigError("config file must be a YAML mapping with sections video_split, diag",
                          where, "see config/video_split.yaml for an example")
    unknown = unknown_keys(raw, SplitConfig, "")
    if unknown:
        raise ConfigError("; ".join(unknown), where,
                          "fix the key names (docs/reference/config.md lists every key)")
    try:
        config = SplitConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(describe_error(e) for e in exc.errors())
        raise ConfigError(f"invalid config: {problems}", where,
                          "fix these keys (docs/reference/config.md lists every key)") from None
    loaded = LoadedConfig(config=config, path=path.resolve())
    _check_signals_not_harness(loaded, where)
    return loaded


def _check_signals_not_harness(loaded: LoadedConfig, where: str) -> None:
    """The harness db is the agent's and is opened read-only: the signal store (which the
    pipeline writes) must never be that file, by path, symlink or hard link."""
    paths = loaded.paths
    if isinstance(paths.signals_db, str):
        try:
            check_store_url(paths.signals_db, f"paths.signals_db in {where}")
        except UserError as exc:
            raise ConfigError(exc.what, exc.where, exc.fix) from None
        return
    same = paths.signals_db == paths.harness_db
    if not same and paths.signals_db.exists() and paths.harness_db.exists():
        try:
            same = os.path.samefile(paths.signals_db, paths.harness_db)
        except OSError:
            same = False
    if same:
        raise ConfigError(
            f"paths.signals_db and paths.harness_db are the same file ({paths.harness_db})",
            where, "the harness db is the agent's and is never written: point paths.signals_db "
                   "at another file (e.g. signals.db)")


def _config_source(path: Path | str | None) -> str:
    """Where the config's path came from, as an error names it: the option, the environment
    (or a ``.env`` file), or the default."""
    if path is not None:
        return "--config"
    if os.environ.get(CONFIG_ENV_VAR):
        return CONFIG_ENV_VAR
    return f"the default path: no --config, {CONFIG_ENV_VAR} unset"


def load_config(path: Path | str | None = None) -> LoadedConfig:
    """Load and validate the config file (default: ``$SPLIT_ASSETS_CONFIG``); the settings of
    the ``.env`` files in the current folder and beside it are applied first (envfile.py)."""
    from split_assets import envfile

    envfile.load(Path.cwd())  # may name the config (SPLIT_ASSETS_CONFIG)
    where = _config_source(path)
    path = Path(path) if path is not None else config_path_from_env()
    envfile.load(path.absolute().parent)  # wins over the current folder's
    if path.is_dir():
        inside = path / "video_split.yaml"
        raise ConfigError(f"the config path is a folder, not a file: {path}", where,
                          f"pass the config file inside it: --config {inside}" if
                          inside.is_file() else "pass the path of a video_split.yaml file")
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}", where,
                          "pass --config PATH or set SPLIT_ASSETS_CONFIG to a video_split.yaml"
                          if where != "--config" else "pass the path of a video_split.yaml "
                          "file (split-assets import writes one in its --workspace)")
    text = read_utf8(path, "config", ConfigError, "save the file as UTF-8")
    try:
        raw = yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader: no arbitrary objects
    except DuplicateKeyError as exc:
        raise ConfigError(f"duplicate key '{exc.key}' (line {exc.line}; first on line "
                          f"{exc.first_line})", f"{path}:{exc.line}",
                          "keep one of them: YAML would silently use the last") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"config is not valid YAML: {getattr(exc, 'problem', exc)}", at,
                          "fix the YAML syntax") from None
    return parse_config(raw, path)
