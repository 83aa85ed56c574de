"""What ``Inputs`` and ``Partition`` show the core of their config: the resolved paths and the
sections it reads, each by name; the whole ``LoadedConfig`` stays with the application layer
(``tests/test_layout.py``: no core module reaches for ``.loaded``)."""

from __future__ import annotations

from pathlib import Path

from split_assets.settings import (
    DiagConfig,
    EvaluationConfig,
    LoadedConfig,
    ResolvedPaths,
    VideoSplitConfig,
)


class SettingsView:
    """The config of one loaded workspace, by section (a mixin over ``loaded``)."""

    loaded: LoadedConfig

    @property
    def paths(self) -> ResolvedPaths:
        """Every input's and output's absolute path."""
        return self.loaded.paths

    @property
    def config_path(self) -> Path:
        """The config file (for messages naming it)."""
        return self.loaded.path

    @property
    def video_split(self) -> VideoSplitConfig:
        return self.loaded.config.video_split

    @property
    def diag(self) -> DiagConfig:
        return self.loaded.config.diag

    @property
    def evaluation(self) -> EvaluationConfig:
        return self.loaded.config.evaluation
