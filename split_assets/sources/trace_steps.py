"""A trace's steps and the tree nodes they open: read here once for every reader of a trace
(both judges, the cases diagnosis builds, the input digests). A fingerprinted source of both
judges (``Judge.source_files``): an edit here moves every judge's fingerprint."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from split_assets.config_keys import config_key
from split_assets.errors import InputError


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One step of an agent trace; ``content`` is the parsed JSON."""

    step: int
    kind: str
    content: Any


def opened_nodes(trace: Sequence[TraceStep], open_tool: str, tree_nodes: Iterable[str],
                 question_id: str, video_id: str) -> list[str]:
    """The tree nodes a trace opens: the ``node_id`` of each call of ``open_tool``
    (``diag.rules.open_tool``), in order, repeats kept. Every reader of a trace (both judges,
    the input digests) goes through here, so a node missing from the video's tree is refused
    wherever the trace is read: the trace was made on another tree."""
    known = tree_nodes if isinstance(tree_nodes, set | frozenset | dict) else set(tree_nodes)
    opened = []
    for step in trace:
        content = step.content
        if step.kind == "tool_call" and isinstance(content, dict) \
                and content.get("tool") == open_tool:
            node_id = str((content.get("args") or {}).get("node_id"))
            if node_id not in known:
                raise InputError(f"trace of {question_id!r} opens node {node_id!r}, which is "
                                 f"not in the tree of video {video_id!r}", config_key("store_dir"),
                                 "use the tree the run was made on, or fix the trace")
            opened.append(node_id)
    return opened
