"""Video caption trees and skill documents from ``paths.store_dir``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from split_assets.config_keys import config_key
from split_assets.errors import InputError
from split_assets.lib.canonical import digest_of, sha256_hex
from split_assets.lib.files import read_utf8


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One node of a caption tree, flattened (children are listed by id)."""

    id: str
    start_s: float
    end_s: float
    caption: str
    depth: int

    def overlaps(self, start_s: float, end_s: float) -> bool:
        return self.start_s < end_s and start_s < self.end_s


@dataclass(frozen=True)
class VideoTree:
    """A video's caption tree: its nodes by id."""

    video_id: str
    duration_s: float
    nodes: dict[str, TreeNode]
    digest: str


def tree_path(store_dir: Path, video_id: str) -> Path:
    return store_dir / "videos" / video_id / "tree.json"


def first_missing_tree(store_dir: Path, video_ids: Iterable[str]) -> str | None:
    """The first of ``video_ids`` without a tree file, if any (os.path: checking a thousand
    trees through pathlib costs more than the check itself)."""
    videos = os.path.join(store_dir, "videos")
    return next((v for v in video_ids
                 if not os.path.isfile(os.path.join(videos, v, "tree.json"))), None)


def require_store(store_dir: Path) -> None:
    """``paths.store_dir`` must be a folder (a missing one is its own error, not a missing
    tree or skills version)."""
    if not store_dir.is_dir():
        what = "is not a folder" if store_dir.exists() else "not found"
        raise InputError(f"store folder {what}: {store_dir}",
                         config_key("store_dir"),
                         f"point {config_key('store_dir')} at the folder holding "
                         "videos/<video_id>/tree.json"
                         f" and skills/<version>/*.md, or use {config_key('context')}: answer_only")


def load_tree(store_dir: Path, video_id: str) -> VideoTree:
    """Load and flatten ``store/videos/<video_id>/tree.json``."""
    path = tree_path(store_dir, video_id)
    if not path.is_file():
        require_store(store_dir)
        raise InputError(f"video tree missing for {video_id!r}: {path}", config_key("store_dir"),
                         f"add the tree, or use {config_key('context')}: answer_only")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"video tree cannot be read: {exc.strerror or exc}", str(path),
                         "check the file's permissions") from None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"video tree is not UTF-8 text (byte {exc.start}: {exc.reason})",
                         str(path), "save it as UTF-8 JSON") from None
    try:
        data = orjson.loads(raw)
        nodes: dict[str, TreeNode] = {}
        stack: list[tuple[dict[str, Any], int]] = [(data["root"], 0)]
        while stack:
            node, depth = stack.pop()
            nodes[str(node["id"])] = TreeNode(str(node["id"]), float(node["start_s"]),
                                             float(node["end_s"]), str(node.get("caption", "")),
                                             depth)
            stack.extend((child, depth + 1) for child in node.get("children") or [])
        duration = float(data.get("duration_s", data["root"]["end_s"]))
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise InputError(f"malformed video tree ({type(exc).__name__}: {exc})", str(path),
                         "a tree is {video_id, duration_s, root} with nodes "
                         "{id, start_s, end_s, caption, children}") from None
    return VideoTree(video_id, duration, nodes, sha256_hex(raw))


@dataclass(frozen=True)
class Skill:
    """A skill document; front matter may name the task types it applies to and a tool."""

    name: str
    applies_to: tuple[str, ...]
    required_tool: str | None
    text: str


def load_skills(store_dir: Path, version: str) -> list[Skill]:
    """Every ``store/skills/<version>/*.md`` in name order."""
    require_store(store_dir)
    folder = store_dir / "skills" / version
    if not folder.parent.is_dir():
        raise InputError(f"the store has no skills folder: {folder.parent}",
                         config_key("store_dir"),
                         f"add the skills as {folder}/*.md, or use {config_key('context')}: "
                         "answer_only")
    if not folder.is_dir():
        versions = sorted(p.name for p in folder.parent.iterdir() if p.is_dir())
        raise InputError(f"skills folder missing: {folder} (versions present: "
                         f"{', '.join(versions) or 'none'})", config_key("skills_version"),
                         f"add the skills or set {config_key('skills_version')} to an existing "
                         "version")
    skills = []
    for path in sorted(folder.glob("*.md")):
        text = _read_text(path, "skill")
        meta: dict[str, Any] = {}
        if text.startswith("---"):
            head, _, _body = text[3:].partition("\n---")
            try:
                meta = yaml.safe_load(head) or {}
            except yaml.YAMLError:
                raise InputError("skill front matter is not valid YAML", str(path),
                                 "fix the block between the '---' lines") from None
            if not isinstance(meta, dict):
                raise InputError("skill front matter is not a mapping", str(path),
                                 "use 'key: value' lines")
        applies = meta.get("applies_to") or []
        if isinstance(applies, str):
            applies = [applies]
        skills.append(Skill(str(meta.get("name") or path.stem), tuple(str(a) for a in applies),
                            meta.get("required_tool"), text))
    return skills


def _read_text(path: Path, what: str) -> str:
    """A UTF-8 text file; undecodable bytes are an InputError naming the file."""
    return read_utf8(path, what, InputError)


def skills_digest(skills: list[Skill]) -> str:
    return digest_of([[s.name, s.text] for s in skills])
