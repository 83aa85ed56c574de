"""Judge prompt templates: loading, validation and their digest."""

from __future__ import annotations

from pathlib import Path

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.lib.canonical import digest_of, sha256_hex

TEMPLATE_NAMES = ("defect_vs_lapse", "reasoning_sub", "span_eval_system", "missed_nodes",
                  "skill_adherence", "confirmation_bias", "evidence_sufficiency")


def load_templates(prompts_dir: Path, names: tuple[str, ...]) -> dict[str, str]:
    """Read ``<name>.md`` for each name; a missing or empty template is an error."""
    templates: dict[str, str] = {}
    for name in names:
        path = prompts_dir / f"{name}.md"
        if not path.is_file():
            raise InputError(f"prompt template '{name}' missing: {path}", config_key("prompts_dir"),
                             "restore the template or point prompts_dir at a complete set")
        try:
            text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
        except UnicodeDecodeError as exc:
            raise InputError(f"prompt template '{name}' is not UTF-8 text (byte {exc.start}: "
                             f"{exc.reason})", str(path), "save it as UTF-8") from None
        except OSError as exc:
            raise InputError(f"prompt template '{name}' cannot be read: {exc.strerror or exc}",
                             str(path), "check the file's permissions") from None
        if not text.strip():
            raise InputError(f"prompt template '{name}' is empty", str(path),
                             "write the template (an empty prompt would diagnose nothing)")
        templates[name] = text
    return templates


def templates_digest(templates: dict[str, str]) -> str:
    """Digest of the templates a judge uses (name -> sha256 of the text)."""
    return digest_of({name: sha256_hex(text) for name, text in sorted(templates.items())})
