"""Which importer reads a file: ``split-assets import videomme|predictions|lmms-eval|
vlmevalkit`` names the tool, the file (or ``--benchmark``/``--map``) names the benchmark:
Video-MME's own importer, or a benchmark profile's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from split_assets.importing.workspace_runs import ImportSummary

KINDS = ("videomme", "predictions", "lmms-eval", "vlmevalkit")


def import_results(kind: str, files: list[Path], run_id: str, workspace: Path, *,
                   benchmark: str | None = None, field_map: Path | None = None,
                   task: str | None = None, annotations: list[Path] | None = None,
                   pool_task: Path | None = None, **options: Any) -> ImportSummary:
    """Import ``files`` (one, except lmms-eval's samples) of tool ``kind`` as run ``run_id``;
    ``options``: replace, partial, role, gate (``importing/workspace_runs.finish_import``)."""
    from split_assets.importing.provenance import provenance_of, store_provenance
    from split_assets.importing.workspace_runs import HARNESS_DB

    summary = _import(kind, files, run_id, workspace, benchmark, field_map, task, annotations,
                      pool_task, **options)
    if summary.answered:  # with the run: the card's provenance of the baseline and candidates
        store_provenance(workspace / HARNESS_DB, run_id, provenance_of(kind, files, task))
    return summary


def _import(kind: str, files: list[Path], run_id: str, workspace: Path, benchmark: str | None,
            field_map: Path | None, task: str | None, annotations: list[Path] | None,
            pool_task: Path | None, **options: Any) -> ImportSummary:
    from split_assets.importing import field_map as maps
    from split_assets.importing import profiled_harnesses, results_files, videomme_harnesses

    if kind == "videomme":
        return results_files.import_videomme(files[0], run_id, workspace, **options)
    if kind == "predictions":
        return results_files.import_predictions(files[0], run_id, workspace, **options)
    if kind == "lmms-eval":
        profile = maps.lmms_profile(files, benchmark, field_map)
        if profile is None:
            return videomme_harnesses.import_lmms_eval(files, run_id, workspace, task=task,
                                                       annotations=annotations, **options)
        return profiled_harnesses.import_lmms_lines(profile, files, run_id, workspace,
                                               annotations or [], task, pool_task, **options)
    profile = maps.vlm_profile(files[0], benchmark, field_map)
    if profile is None:
        return videomme_harnesses.import_vlmevalkit(files[0], run_id, workspace, **options)
    return profiled_harnesses.import_vlm_rows(profile, files[0], run_id, workspace, **options)
