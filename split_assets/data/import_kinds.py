"""Which importer reads a file: ``split-assets import videomme|predictions|lmms-eval|
vlmevalkit`` names the tool, the file (or ``--benchmark``/``--map``) names the benchmark:
Video-MME's own importer, or a benchmark profile's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from split_assets.data.importers import ImportSummary

KINDS = ("videomme", "predictions", "lmms-eval", "vlmevalkit")


def import_results(kind: str, files: list[Path], run_id: str, workspace: Path, *,
                   benchmark: str | None = None, field_map: Path | None = None,
                   task: str | None = None, annotations: list[Path] | None = None,
                   pool_task: Path | None = None, **options: Any) -> ImportSummary:
    """Import ``files`` (one, except lmms-eval's samples) of tool ``kind`` as run ``run_id``;
    ``options``: replace, partial, role, gate (``data/importers.finish_import``)."""
    from split_assets.data import field_map as maps
    from split_assets.data import frameworks, harness_lines, importers

    if kind == "videomme":
        return importers.import_videomme(files[0], run_id, workspace, **options)
    if kind == "predictions":
        return importers.import_predictions(files[0], run_id, workspace, **options)
    if kind == "lmms-eval":
        profile = maps.lmms_profile(files, benchmark, field_map)
        if profile is None:
            return frameworks.import_lmms_eval(files, run_id, workspace, task=task, **options)
        return harness_lines.import_lmms_lines(profile, files, run_id, workspace,
                                               annotations or [], task, pool_task, **options)
    profile = maps.vlm_profile(files[0], benchmark, field_map)
    if profile is None:
        return frameworks.import_vlmevalkit(files[0], run_id, workspace, **options)
    return harness_lines.import_vlm_rows(profile, files[0], run_id, workspace, **options)
