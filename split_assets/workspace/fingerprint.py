"""The diagnosis fingerprint: ``fp-`` + 12 hex of sha256 over the judge's identity.

Components (SPEC §2, §7): judge, model, prompt_version, context, the digest of the prompt
templates the judge uses, the digest of the judge's own source files, and its call settings.
Nothing else (no git SHA, no data digests), so unrelated commits never force a re-diagnosis --
with one exception: the answer_only rules judge decides from its reference runs, so a digest of
each reference run's predictions is a component (a replaced reference run is a new judge).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from split_assets.errors import UserError
from split_assets.judge import Judge, build_judge
from split_assets.judge.prompts import load_templates, templates_digest
from split_assets.lib.canonical import digest_of, sha256_hex
from split_assets.settings import LoadedConfig
from split_assets.sources.harness_db import run_digest
from split_assets.sources.letters import DEFAULT_RULE


@dataclass(frozen=True)
class Fingerprint:
    """A fingerprint key together with the components it was computed from."""

    key: str
    components: dict[str, Any]


def source_digest(files: list[Path]) -> str:
    """Digest of source files by name and content (line endings normalized)."""
    return digest_of({path.name: sha256_hex(path.read_bytes().replace(b"\r\n", b"\n"))
                      for path in sorted(files, key=lambda p: p.name)})


def compute_fingerprint(loaded: LoadedConfig, judge: Judge | None = None) -> Fingerprint:
    """The fingerprint of the judge a config describes."""
    diag = loaded.config.diag
    judge = judge or build_judge(diag)
    templates = load_templates(loaded.paths.prompts_dir, judge.required_templates())
    components = {
        "judge": diag.judge,
        "model": diag.model,
        "prompt_version": diag.prompt_version,
        "context": diag.context,
        "prompts_digest": templates_digest(templates),
        "judge_source_digest": source_digest(judge.source_files()),
        "settings": judge.settings(),
    }
    rule = loaded.config.video_split.letter_rule
    if rule != DEFAULT_RULE:  # which answers are wrong, and so every verdict, depends on it
        components["letter_rule"] = rule
    if diag.judge == "rules" and diag.context == "answer_only" and diag.reference_runs:
        components["reference_predictions"] = {
            run: run_digest(loaded.paths.harness_db, run) for run in diag.reference_runs}
    return Fingerprint("fp-" + digest_of(components)[:12], components)


def components_of(own: Fingerprint, key: str,
                  recorded: Callable[[str], dict[str, Any] | None],
                  store_name: str) -> dict[str, Any]:
    """What ``key`` stands for: the config's own fingerprint ``own``, or the components the
    signal store (``store_name``) recorded for it when it was diagnosed (``recorded``, asked
    only then)."""
    if key == own.key:
        return own.components
    components = recorded(key)
    if components is None:
        raise UserError(f"fingerprint {key} is neither the config's ({own.key}) nor "
                        "recorded in the signal store", store_name,
                        "pass fingerprints this workspace diagnosed (they are recorded when "
                        "diagnosis_signals runs)")
    return components


def difference(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """One line per component that differs: ``name: A-value -> B-value``."""
    def shown(value: Any) -> str:
        return "(absent)" if value is None else (
            value if isinstance(value, str) else json.dumps(value, sort_keys=True))

    return [f"{name}: {shown(a.get(name))} -> {shown(b.get(name))}"
            for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)]
