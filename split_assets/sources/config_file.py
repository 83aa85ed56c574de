"""The one writer of ``video_split.yaml``.

Both the demo generator (a new file) and the importers (a new file, or an update of the user's)
write the config through this module, in ruamel.yaml's round-trip mode: an update keeps the
user's comments, key order, quoting and layout (:func:`load_document`, then
:func:`save_document`), and a new file is built from plain dicts with a header comment
(:func:`new_document`). The pipeline reads the config with PyYAML (``split_assets.settings``).
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.representer import RoundTripRepresenter
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from split_assets.errors import ConfigError
from split_assets.lib.canonical import atomic_write_bytes

CONFIG_FILE = "video_split.yaml"

_PYYAML_RESOLVER = yaml.resolver.Resolver()


class Inserted(str):
    """A string a writer inserts into the config (a run id), as opposed to the user's own
    scalars, which are written back exactly as they were (``json_mode: yes`` stays ``yes``)."""


class _Representer(RoundTripRepresenter):
    """Round-trip representer that writes None as ``null`` (ruamel writes nothing), so a
    user's ``key: null`` stays as written, and quotes an :class:`Inserted` string that the
    config loader (PyYAML, YAML 1.1) would read as something else (``on``, ``no``, ``1:20``)."""

    def represent_inserted(self, data: str) -> Any:
        node = super().represent_str(str(data))
        tag = _PYYAML_RESOLVER.resolve(yaml.ScalarNode, data, (True, False))
        if node.style is None and tag != "tag:yaml.org,2002:str":
            node.style = "'"
        return node


_Representer.add_representer(
    type(None), lambda rep, _data: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
_Representer.add_representer(Inserted, _Representer.represent_inserted)


def double_quoted(text: str) -> str:
    """``text`` to be written in double quotes (``"..."``)."""
    return DoubleQuotedScalarString(text)


def round_trip_yaml(text: str = "") -> YAML:
    """A round-trip ruamel.yaml instance; with the file's text, its indentation is kept."""
    rt = YAML(typ="rt")
    rt.Representer = _Representer
    rt.preserve_quotes = True
    rt.width = 4096  # never re-wrap a user's long lines
    mapping, sequence, offset = guess_indent(text)
    rt.indent(mapping=mapping, sequence=sequence, offset=offset)
    return rt


_KEY_ONLY = re.compile(r"^( *)[^\s#-][^#]*:\s*(#.*)?$")


def guess_indent(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, dash offset) as the file uses them; ruamel.yaml's
    (PyYAML's) defaults 2, 2, 0 where the file does not tell."""
    mapping: int | None = None
    sequence: tuple[int, int] | None = None
    key_indent: int | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if key_indent is not None and indent >= key_indent:
            if stripped.startswith("- ") and sequence is None:
                dash = stripped[1:]
                offset = indent - key_indent
                sequence = (offset + 1 + len(dash) - len(dash.lstrip(" ")), offset)
            elif not stripped.startswith("-") and indent > key_indent and mapping is None:
                mapping = indent - key_indent
        match = _KEY_ONLY.match(line)
        key_indent = len(match.group(1)) if match else None
        if mapping is not None and sequence is not None:
            break
    seq_indent, offset = sequence if sequence is not None else (2, 0)
    return mapping or 2, max(seq_indent, offset + 2), offset


def commented(value: Any) -> Any:
    """Plain dicts and lists as ruamel's round-trip types (empty ones in flow style: {} and
    [], as a user would write them)."""
    if isinstance(value, dict):
        out = CommentedMap((k, commented(v)) for k, v in value.items())
        if not value:
            out.fa.set_flow_style()
        return out
    if isinstance(value, list):
        seq = CommentedSeq(commented(v) for v in value)
        if not value:
            seq.fa.set_flow_style()
        return seq
    return value


# the evaluation budgets every new config declares, each with its comment: a budget set
# before the first look is what makes a claim valid (docs/how-to/evaluate-candidates.md)
BUDGETS = {
    "test_looks_max": (5, "looks at test allowed, each tested at 0.05 / this value (docs/how-"
                          "to/evaluate-candidates.md)"),
    "feedback_budget": (100, "feedback submissions; significant tests at 0.05 / this value"),
}


def new_document(data: dict[str, Any], header: str) -> CommentedMap:
    """A new config document from plain dicts, opened by ``header`` as comment lines (one
    ``# `` line per line of ``header``); the evaluation budgets are declared in it with a
    comment each (``BUDGETS``) unless ``data`` sets them."""
    evaluation = dict(data.get("evaluation") or {})
    for key, (value, _) in BUDGETS.items():
        evaluation.setdefault(key, value)
    doc = commented({**data, "evaluation": evaluation})
    for key, (_, comment) in BUDGETS.items():  # aligned after the longer key and value
        doc["evaluation"].yaml_add_eol_comment(comment, key, column=24)
    doc.yaml_set_start_comment(header)
    return doc


def load_document(path: Path, unchanged: str = "nothing was changed") -> Any:
    """The config file, round-trip loaded (comments kept): usually a CommentedMap, but
    whatever the YAML holds (the caller checks its shape). Errors name the file and say
    ``unchanged`` (what the caller did not do) in their hint."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError("the config file is not UTF-8 text", str(path),
                          "save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"the config file cannot be read: {exc.strerror or exc}", str(path),
                          "check the file's permissions") from None
    try:
        return round_trip_yaml(text).load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) if isinstance(exc, MarkedYAMLError) else None
        at = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"config is not valid YAML: {problem}", at,
                          f"fix the YAML ({unchanged})") from None


def save_document(path: Path, doc: CommentedMap) -> None:
    """Write the config document (new or updated) atomically, in the indentation of the file
    it replaces (if any)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    out = io.StringIO()
    round_trip_yaml(text).dump(doc, out)
    atomic_write_bytes(path, out.getvalue().encode("utf-8"))


def load_workspace_config(path: Path) -> CommentedMap:
    """The workspace's config, round-trip loaded (comments kept); errors name the file."""
    doc = load_document(path, "nothing was imported")
    if not isinstance(doc, CommentedMap):
        raise ConfigError("config file is not a YAML mapping", str(path),
                          "fix the file or import into a new workspace (nothing was imported)")
    for name in ("video_split", "diag", "evaluation"):
        if doc.get(name) is not None and not isinstance(doc[name], CommentedMap):
            raise ConfigError(f"section '{name}' is not a mapping", str(path),
                              "fix the file (nothing was imported)")
    for section, key in (("diag", "reference_runs"), ("evaluation", "candidates")):
        value = (doc.get(section) or {}).get(key)
        if value is not None and not isinstance(value, CommentedSeq):
            raise ConfigError(f"'{section}.{key}' is not a list", str(path),
                              "write it as a YAML list, e.g. [run-a, run-b] (nothing was "
                              "imported)")
    return doc


def section_of(doc: CommentedMap, name: str) -> CommentedMap:
    section = doc.get(name)
    if section is None:
        section = doc[name] = CommentedMap()
    return section


def append_run(section: CommentedMap, key: str, run_id: str) -> bool:
    """Append the run to the list ``section[key]`` (created if absent); False if listed."""
    runs = section.get(key)
    run_id = Inserted(run_id)
    if runs is None:
        section[key] = CommentedSeq([run_id])
        return True
    if run_id in runs:
        return False
    if not runs and runs.fa.flow_style() is None:
        runs.fa.set_flow_style()  # it was written [] (an empty list can only be): keep [x]
    runs.append(run_id)
    return True
