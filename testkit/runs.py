"""``split-assets run`` as a subprocess on a given Dagster instance (the shared-instance test and
``bench/shared_instance.py`` start many at once)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = Path(sys.executable).parent / "split-assets"
GENERATED_AT = "2026-01-01T00:00:00Z"


def start_run(config: Path, home: Path) -> subprocess.Popen[str]:
    """Start ``split-assets run --config CONFIG`` with ``DAGSTER_HOME=home`` (pinned time)."""
    return subprocess.Popen([str(CLI), "run", "--config", str(config), "--generated-at",
                             GENERATED_AT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, DAGSTER_HOME=str(home)))


def new_instance(folder: Path) -> Path:
    """A Dagster instance at ``folder`` (made), its storage created before any run starts:
    the runs a bench starts at once then share a ready one."""
    from split_assets.orchestration.instance import DAGSTER_YAML

    folder.mkdir()
    (folder / "dagster.yaml").write_text(DAGSTER_YAML, encoding="utf-8")
    subprocess.run([sys.executable, "-c", "from dagster import DagsterInstance; "
                    "DagsterInstance.get().get_runs()"], check=True,
                   env={"DAGSTER_HOME": str(folder), "PATH": ""})
    return folder
