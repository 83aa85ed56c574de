"""Strict reading of a YAML config into pydantic models: a key written twice is refused
(``UniqueKeyLoader``), unknown keys get the closest valid one (``unknown_keys``), and a
validation error reads as one short phrase (``describe_error``). ``settings/loading.py`` uses
them."""

from __future__ import annotations

import difflib
from typing import Any

import yaml
from pydantic import BaseModel


def unknown_keys(raw: Any, model: type[BaseModel], prefix: str) -> list[str]:
    """Messages for keys the models do not know, each with the closest valid key."""
    if not isinstance(raw, dict):
        return []
    messages: list[str] = []
    fields = model.model_fields
    for key in raw:
        name = f"{prefix}{key}"
        if key in getattr(model, "LEGACY_KEYS", ()):  # read by the model's own validator
            continue
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.5)
            hint = f"did you mean '{prefix}{close[0]}'?" if close else (
                f"valid keys are {', '.join(prefix + f for f in fields)}"
            )
            messages.append(f"unknown key '{name}': {hint}")
            continue
        annotation = fields[key].annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            messages.extend(unknown_keys(raw[key], annotation, f"{name}."))
    return messages


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of the config file holds the same key twice."""

    def __init__(self, key: str, line: int, first_line: int) -> None:
        super().__init__(f"duplicate key {key!r} on line {line}")
        self.key = key
        self.line = line
        self.first_line = first_line


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key written twice in one mapping (PyYAML keeps the
    last one silently). Keys brought in by a merge (``<<``) may still be overridden."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._prefixes: dict[int, str] = {}  # id(mapping node) -> its dotted path + "."

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            prefix = self._prefixes.get(id(node), "")
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # the base constructor reports unhashable keys
                self._prefixes[id(value_node)] = f"{prefix}{key}."
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise DuplicateKeyError(f"{prefix}{key}", line, seen[key])
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def describe_error(error: dict[str, Any]) -> str:
    loc = ".".join(str(part) for part in error["loc"])
    if error["type"] == "missing":
        return f"missing required key '{loc}'"
    value = error.get("input")
    msg = error["msg"].rstrip(".")
    if error["type"] == "value_error":  # our own validators: the message says it all
        msg = msg.removeprefix("Value error, ")
        return f"'{loc}': {msg}" if loc else msg
    shown = repr(value) if not isinstance(value, dict) else "a mapping"
    return f"'{loc}': {msg} (got {shown})"
