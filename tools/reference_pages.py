"""The *Reference* pages of the documentation site (``docs/reference/*.md``), generated from the
code: the command line from its argparse parsers, the config keys from the pydantic models, the
Dagster definitions from the code location, the exit codes and error lines from ``errors.py``,
the bad-input battery's case table and the error raise sites.

    .venv/bin/python tools/reference_pages.py           # writes the pages
    .venv/bin/python tools/reference_pages.py --check   # exit 1 naming each page that differs

``pages()`` returns {path relative to the checkout: markdown}; ``PAGES`` maps each path to the
function that makes it (``tests/docs/test_reference_pages.py`` compares them in-process). The
text is deterministic: no temporary paths, no timestamps, no version numbers.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib.util
import json
import os
import re
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "split_assets"
UPDATE = ".venv/bin/python tools/reference_pages.py"
FIXTURE_WORKSPACES = "tests/fixtures/workspaces"
BATTERY = "tests/cli/test_bad_inputs.py"


def title(name: str) -> str:
    """A page's heading and the line saying where it comes from."""
    return (f"# {name}\n\n*Generated from the code by `tools/reference_pages.py`: do not edit, "
            f"run `{UPDATE}`.*\n")


# ------------------------------------------------------------------ markdown helpers -----

CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def text(value: str) -> str:
    """Prose for a table cell or a paragraph: one line, pipes and ``<`` escaped outside code
    spans (inside them Python-Markdown's tables split on no pipe)."""
    value = " ".join(value.split())
    out, last = [], 0
    for m in CODE_SPAN.finditer(value):
        out += [_escape(value[last:m.start()]), m.group(0)]
        last = m.end()
    return "".join([*out, _escape(value[last:])])


def prose(*parts: str) -> str:
    """Our own wording (markdown as written), as one paragraph."""
    return " ".join(" ".join(parts).split()) + "\n"


def _escape(plain: str) -> str:
    return (plain.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
            .replace("*", "\\*"))


def code(value: object) -> str:
    """``value`` as one code span (a longer fence when it holds backticks)."""
    value = re.sub(r"\s*\n\s*", " ", str(value)).strip()
    fence = "`" * (max((len(m) for m in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or "—" for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def first_paragraph(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Set (None: unset) environment variables for the block; the environment is restored."""
    with mock.patch.dict(os.environ):
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield


# ------------------------------------------------------------------ types (pydantic) -----

PLURAL = {"string": "strings", "integer": "integers", "number": "numbers",
          "boolean": "booleans"}
BOUNDS = (("gt", "> {}"), ("ge", "≥ {}"), ("lt", "< {}"), ("le", "≤ {}"),
          ("min_length", "at least {} long"), ("max_length", "at most {} long"),
          ("pattern", "matching `{}`"))


def type_name(annotation: Any) -> str:
    """A YAML user's name for a pydantic annotation."""
    from pydantic import BaseModel

    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        named = " or ".join(type_name(a) for a in args if a is not type(None))
        return f"{named} or null" if type(None) in args else named
    if origin is Literal:
        return "one of " + ", ".join(code(a) for a in args)
    if origin is list:
        inner = type_name(args[0])
        return f"list of {PLURAL.get(inner, inner)}"
    if origin is dict:
        value = type_name(args[1])
        return f"mapping of {type_name(args[0])} to {PLURAL.get(value, value)}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(
        annotation, getattr(annotation, "__name__", str(annotation)))


def field_type(field: Any) -> str:
    """The type with its bounds (``integer, ≥ 1``)."""
    bounds = [form.format(getattr(m, attr)) for m in field.metadata for attr, form in BOUNDS
              if getattr(m, attr, None) is not None]
    return text(", ".join([type_name(field.annotation), *bounds]))


def field_default(field: Any) -> str:
    """``required``, or the default as YAML would spell it."""
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if hasattr(value, "model_dump"):
        return "(section)"
    if isinstance(value, str):
        return code(value)
    if isinstance(value, Path):
        return code(str(value))
    return code(json.dumps(value, ensure_ascii=False))


# ------------------------------------------------------------------ the CLI page ---------


def parser_parts(parser: argparse.ArgumentParser
                 ) -> tuple[list[argparse.Action], list[tuple[str, str, Any]]]:
    """A parser's arguments (``-h`` and hidden ones left out) and its subcommands as (name,
    help, parser). argparse has no public way to list either: this is the one place that reads
    its private fields."""
    arguments, commands = [], []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            commands += [(name, helps.get(name) or "", sub)
                         for name, sub in action.choices.items()]
        elif not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS:
            arguments.append(action)
    return arguments, commands


def usage(parser: argparse.ArgumentParser) -> str:
    """argparse's own usage line, unwrapped (its width follows ``$COLUMNS``)."""
    with environment(COLUMNS="10000"):
        return " ".join(parser.format_usage().split()).removeprefix("usage: ")


def argument_value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "flag"
    metavar = action.metavar
    default = action.dest.upper() if action.option_strings else action.dest
    names = metavar if isinstance(metavar, tuple) else (metavar or default,)
    shown = {None: names[0], "?": f"[{names[0]}]", "*": f"[{names[0]} ...]",
             "+": f"{names[0]} [{names[0]} ...]"}.get(action.nargs, " ".join(names))
    parts = [] if action.choices and metavar is None else [code(shown)]
    if action.choices:
        parts.append("one of " + ", ".join(code(c) for c in action.choices))
    if isinstance(action, argparse._AppendAction):
        parts.append("repeatable")
    return "; ".join(parts)


def argument_default(action: argparse.Action) -> str:
    if action.required and (action.option_strings or action.nargs not in ("*", "?")):
        return "required"
    default = action.default
    if default in (None, argparse.SUPPRESS) or action.nargs == 0:
        return ""
    return code(str(default) if isinstance(default, str | Path)
                else json.dumps(default, default=str))


def command_section(parser: argparse.ArgumentParser, words: tuple[str, ...], help_text: str,
                    depth: int, nested: bool = True) -> list[str]:
    """A command's heading (its words after ``split-assets``: a short table of contents),
    help, usage and arguments, then its subcommands' (``nested``)."""
    arguments, commands = parser_parts(parser)
    commands = commands if nested else []
    out = [f"{'#' * depth} " + (f"`{' '.join(words)}`" if words else "Global options") + "\n",
           text(help_text or parser.description or "") + "\n",
           f"```text\n{usage(parser)}\n```\n"]
    if arguments:
        rows = [(code(", ".join(a.option_strings) or (a.metavar or a.dest)),
                 argument_value(a), argument_default(a), text(a.help or ""))
                for a in arguments]
        out.append(table(("argument", "value", "default", "help"), rows))
    if commands:
        out.append("Commands: " + ", ".join(
            f"[{code(' '.join((*words, sub)))}](#{anchor(*words, sub)})"
            for sub, _, _ in commands) + ".\n")
    for sub, sub_help, sub_parser in commands:
        out += command_section(sub_parser, (*words, sub), sub_help, min(depth + 1, 4))
    return out


def cli_page() -> str:
    from split_assets.cli import build_parser

    root = build_parser()
    _, commands = parser_parts(root)
    out = [title("Command line"),
           text(f"Every command and subcommand of `{root.prog}`, with its help and every "
                "argument, read from the parsers `split_assets.cli.build_parser` builds. Every "
                "command also takes `-h`/`--help`. A mistake on the command line is one line "
                "on stderr and exit 2 (see [Errors and exit codes](errors.md)).") + "\n",
           "| command | what it does |\n|---|---|\n"
           + "".join(f"| [{code(f'{root.prog} {name}')}](#{anchor(name)}) | "
                     f"{text(help_text)} |\n" for name, help_text, _ in commands)]
    out += command_section(root, (), root.description or "", 2, nested=False)
    for name, help_text, parser in commands:
        out += command_section(parser, (name,), help_text, 2)
    return "\n".join(out)


def anchor(*words: str) -> str:
    """The id MkDocs gives the heading `` `words` `` (its default slugify)."""
    return re.sub(r"[^\w]+", "-", " ".join(words).lower()).strip("-")


# ------------------------------------------------------------------ the config page ------


def fingerprinted_keys() -> dict[str, str]:
    """{YAML key: when it is part of the diagnosis fingerprint}, asked of the code:
    ``compute_fingerprint`` of small configs, for each judge and context, with defaults and
    with non-default values (a component present only then counts "when not the default")."""
    from split_assets.judge import build_judge
    from split_assets.settings import LoadedConfig, SplitConfig
    from split_assets.workspace.fingerprint import compute_fingerprint

    seen: dict[str, dict[bool, set[tuple[str, str]]]] = {}
    for judge, context in COMBOS:
        for changed in (False, True):
            raw = probe_config(judge, context, changed)
            loaded = LoadedConfig(SplitConfig.model_validate(raw),
                                  Path("/nonexistent/video_split.yaml"))
            keys = fingerprint_keys(compute_fingerprint(loaded).components, loaded)
            if build_judge(loaded.config.diag).required_templates():
                keys.append("diag.prompts_dir")  # the digest of the templates read from it
            for key in keys:
                seen.setdefault(key, {False: set(), True: set()})[changed].add((judge, context))
    return {key: when(found[False], found[True] - found[False]) for key, found in seen.items()}


COMBOS = [(j, c) for j in ("rules", "openai") for c in ("full", "answer_only")]


def probe_config(judge: str, context: str, changed: bool) -> dict[str, Any]:
    video_split = {"baseline_run_id": "b", "n_trainval": 2, "epsilon": 0.1, "report_floor": 1,
                   "val_wrong_min": 0, "val_ratio": 0.3, "seed": 1, "floor_k": {}}
    diag: dict[str, Any] = {"judge": judge, "context": context, "model": "m",
                            "prompt_version": "v"}
    if changed:
        from split_assets.settings import RulesJudgeConfig, VideoSplitConfig

        rules = get_args(VideoSplitConfig.model_fields["letter_rule"].annotation)
        video_split["letter_rule"] = next(r for r in rules if r != "videomme")
        default_tool = RulesJudgeConfig.model_fields["open_tool"].default
        diag["rules"] = {"open_tool": f"{default_tool}_probe"}
    return {"video_split": video_split, "diag": diag}


def fingerprint_keys(components: dict[str, Any], loaded: Any) -> list[str]:
    """The YAML keys behind a fingerprint's components (those named after a key; the judge's
    settings, found in the section that has a field of that name)."""
    from split_assets.settings import OpenAIJudgeConfig

    diag, video_split = loaded.config.diag, loaded.config.video_split
    keys = []
    for name in components:
        if name in type(diag).model_fields:
            keys.append(f"diag.{name}")
        elif name in type(video_split).model_fields:
            keys.append(f"video_split.{name}")
    legacy = dict.fromkeys(OpenAIJudgeConfig.LEGACY_KEYS, "response_format")  # json_mode
    for name in components.get("settings", {}):
        name = legacy.get(name, name)
        for prefix, section in (("diag.openai", diag.openai), ("diag.rules", diag.rules),
                                ("diag", diag)):
            if name in type(section).model_fields:
                keys.append(f"{prefix}.{name}")
                break
    return keys


def when(always: set[tuple[str, str]], unless_default: set[tuple[str, str]]) -> str:
    """``yes``, or for which judges and contexts (and whether only when not the default)."""
    def which(found: set[tuple[str, str]]) -> list[str]:
        if found == set(COMBOS):
            return []
        parts = []
        for judge in dict.fromkeys(j for j, _ in COMBOS):
            contexts = [c for j, c in COMBOS if j == judge and (j, c) in found]
            if contexts:
                every = len(contexts) == sum(j == judge for j, _ in COMBOS)
                parts.append(f"{judge} judge" + ("" if every else f", {contexts[0]} context"))
        return parts

    parts = which(always) if always else []
    if unless_default:
        shown = which(unless_default)
        parts.append(("; ".join(shown) + ", " if shown else "") + "when not the default")
    return "yes" + (": " + "; ".join(parts) if parts else "")


def config_sections(model: Any, prefix: str, intro: str
                    ) -> list[tuple[str, str, Any, list[tuple[str, Any]]]]:
    """(dotted section, intro, model, its non-section fields), depth first."""
    from pydantic import BaseModel

    scalars, nested = [], []
    for name, field in model.model_fields.items():
        key = field.alias or name
        inner = [a for a in (field.annotation, *get_args(field.annotation))
                 if isinstance(a, type) and issubclass(a, BaseModel)]
        if inner:
            optional = "" if field.is_required() else (
                f"Optional (default {field_default(field)}). " if field.default is None else "")
            about = first_paragraph(inner[0].__doc__) or field.description or ""
            nested.append((f"{prefix}{key}", optional + about, inner[0]))
        else:
            scalars.append((key, field))
    found = [(prefix.rstrip("."), intro, model, scalars)] if prefix else []
    for dotted, sub_intro, sub_model in nested:
        found += config_sections(sub_model, f"{dotted}.", sub_intro)
    return found


def config_page() -> str:
    from split_assets.config_keys import KEYS
    from split_assets.settings import SplitConfig

    fingerprinted = fingerprinted_keys()
    sections = config_sections(SplitConfig, "", "")
    every = {f"{s}.{k}" for s, _, _, fields in sections for k, _ in fields}
    missing = sorted(set(KEYS.values()) - every)
    if missing:  # config_keys.py spells a key the models do not have
        raise RuntimeError(f"split_assets/config_keys.py names keys no model has: {missing}")
    out = [title("Configuration keys"),
           text("Every key of a workspace's YAML config (`video_split.yaml`), as the user "
                "writes it, read from the pydantic models in `split_assets/settings` "
                "(`SplitConfig` and its sections). Unknown keys are errors; types are strict "
                "(an integer key refuses `\"600\"`, `true` and `7.0`; a number key takes an "
                "integer); a key given twice is refused. Paths are relative to the config "
                "file's folder. Fingerprinted: part of the diagnosis fingerprint, so a new "
                "value makes a new partition whose diagnoses are made again (found by "
                "computing the fingerprint for each judge and context).") + "\n"]
    for dotted, intro, model, fields in sections:
        out += [f"## `{dotted}`\n", text(intro) + "\n"]
        rows = [(code(f"{dotted}.{key}"), field_type(field), field_default(field),
                 fingerprinted.get(f"{dotted}.{key}", "no"), text(field.description or ""))
                for key, field in fields]
        out.append(table(("key", "type", "default", "fingerprinted", "meaning"), rows))
        legacy = getattr(model, "LEGACY_KEYS", ())
        if legacy:
            out.append(text("Also read, from earlier releases: " + ", ".join(
                f"`{dotted}.{k}`" for k in legacy) + " (see its replacement above).") + "\n")
    return "\n".join(out)


def undescribed_fields() -> list[str]:
    """Config keys whose Field has no description (the page's meaning column is empty)."""
    from split_assets.settings import SplitConfig

    found = []
    for dotted, _, model, fields in config_sections(SplitConfig, "", ""):
        found += [f"{dotted}.{key}" for key, field in fields if not field.description]
        for name, field in model.model_fields.items():
            if (field.alias or name) not in dict(fields) and not field.description:
                found.append(f"{dotted}.{name}")
    found += [n for n, f in SplitConfig.model_fields.items() if not f.description]
    return sorted(found)


# ------------------------------------------------------------------ the definitions page -


def load_location() -> Any:
    """The code location as ``dg check defs`` loads it in ``make test``: the workspaces
    declared in tests/fixtures/workspaces, the default executor."""
    from split_assets.definitions import defs

    with environment(SPLIT_ASSETS_WORKSPACES=str(ROOT / FIXTURE_WORKSPACES),
                     SPLIT_ASSETS_CONFIG=None, SPLIT_ASSETS_EXECUTOR=None):
        return defs()


def neutral(name: str, workspace: str) -> str:
    """A workspace's name with its prefix written as ``<name>``."""
    for sep in ("/", "__"):
        if name.startswith(f"{workspace}{sep}"):
            return f"<name>{sep}{name[len(workspace) + len(sep):]}"
    return "<name>" if name == workspace else name


def workspace_view(location: Any, ws: str) -> dict[str, Any]:
    """What one declared workspace defines, its prefix made ``<name>``."""
    graph = location.resolve_asset_graph()
    assets, checks = {}, {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if node.group_name != ws:
            continue
        assets[neutral(key.to_user_string(), ws)] = {
            "group": neutral(node.group_name, ws),
            "partitions": neutral(node.partitions_def.name, ws),
            "deps": sorted(neutral(k.to_user_string(), ws) for k in node.parent_keys),
            "checks": sorted(k.name for k in node.check_keys),
            "kinds": sorted(node.kinds), "description": node.description or ""}
        for check_key in node.check_keys:
            spec = graph.get_check_spec(check_key)
            checks[neutral(check_key.to_user_string(), ws)] = {
                "asset": neutral(key.to_user_string(), ws), "blocking": spec.blocking,
                "description": spec.description or ""}
    jobs = {neutral(j.name, ws): {
        "description": j.description or "", "executor": j.executor_def.name,
        "partitions": neutral(j.partitions_def.name, ws) if j.partitions_def else "",
        "tags": dict(sorted(j.tags.items()))}
        for j in location.resolve_all_job_defs() if j.name.startswith(f"{ws}__")}
    sensors = {neutral(s.name, ws): {
        "kind": "sensor", "status": s.default_status.value,
        "interval": s.minimum_interval_seconds, "description": s.description or ""}
        for s in location.sensors or [] if s.name.startswith(f"{ws}__")}
    sensors |= {neutral(s.name, ws): {
        "kind": f"schedule ({s.cron_schedule})", "status": s.default_status.value,
        "interval": None, "description": s.description or ""}
        for s in location.schedules or [] if s.name.startswith(f"{ws}__")}
    resources = {neutral(name, ws): resource_view(value)
                 for name, value in (location.resources or {}).items()
                 if name.startswith(f"{ws}__")}
    return {"assets": dict(sorted(assets.items())), "checks": dict(sorted(checks.items())),
            "jobs": dict(sorted(jobs.items())), "sensors": dict(sorted(sensors.items())),
            "resources": dict(sorted(resources.items()))}


def resource_view(resource: Any) -> dict[str, Any]:
    cls = type(resource)
    fields = getattr(cls, "model_fields", {})
    return {"class": f"{cls.__module__}.{cls.__qualname__}",
            "doc": first_paragraph(cls.__doc__),
            "fields": [(name, field_type(f), field_default(f), f.description or "")
                       for name, f in fields.items()]}


def names_table() -> str:
    from split_assets.orchestration.names import ASSETS, SESSION, Names

    declared, plain = Names("<name>"), Names(None)
    rows = [(what, code(getter(declared)), code(getter(plain))) for what, getter in (
        ("asset key", lambda n: "/".join([*n.key_prefix, ASSETS[-2]])),
        ("group", lambda n: n.group), ("partitions definition", lambda n: n.partitions),
        ("job", lambda n: n.job), ("sensor", lambda n: n.sensor),
        ("resource", lambda n: n.resource(SESSION)))]
    return table(("name", "declared workspace `<name>`", "unprefixed (`SPLIT_ASSETS_CONFIG`)"),
                 rows)


def workspace_sections(view: dict[str, Any]) -> list[str]:
    out = ["### Assets\n", table(("asset", "group", "partitions", "deps", "checks"), [
        (code(key), code(a["group"]), code(a["partitions"]),
         ", ".join(code(d) for d in a["deps"]), ", ".join(code(c) for c in a["checks"]))
        for key, a in view["assets"].items()])]
    for key, a in view["assets"].items():
        kinds = f" Kinds: {', '.join(a['kinds'])}." if a["kinds"] else ""
        out += [f"#### `{key}`\n", text(a["description"] + kinds) + "\n"]
    out += ["### Asset checks\n", table(("check", "asset", "blocking", "description"), [
        (code(key), code(c["asset"]), "yes" if c["blocking"] else "no", text(c["description"]))
        for key, c in view["checks"].items()])]
    out += ["### Jobs\n", table(("job", "partitions", "executor", "tags", "description"), [
        (code(key), code(j["partitions"]) if j["partitions"] else "", code(j["executor"]),
         ", ".join(code(f"{k}={v}") for k, v in j["tags"].items()), text(j["description"]))
        for key, j in view["jobs"].items()])]
    out += ["### Schedules and sensors\n",
            table(("name", "kind", "default status", "minimum interval", "description"), [
                (code(key), s["kind"], s["status"].lower(),
                 f"{s['interval']} s" if s["interval"] else "", text(s["description"]))
                for key, s in view["sensors"].items()])]
    out.append("### Resources\n")
    for key, r in view["resources"].items():
        out += [f"#### `{key}`\n", text(f"`{r['class']}`: {r['doc']}") + "\n"]
        if r["fields"]:
            out.append(table(("field", "type", "default", "description"),
                             [(code(n), t, d, text(desc)) for n, t, d, desc in r["fields"]]))
    return out


def definitions_page() -> str:
    location = load_location()
    workspaces = sorted({node.group_name for node in location.resolve_asset_graph()
                         .asset_nodes if node.group_name})
    views: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for ws in workspaces:
        view = workspace_view(location, ws)
        views.setdefault(json.dumps(view, sort_keys=True), ([], view))[0].append(ws)
    out = [title("Dagster definitions"),
           text("What the code location (`split_assets.definitions`) defines, loaded as `dg "
                f"check defs` loads it in `make test`: with the workspaces declared in "
                f"`{FIXTURE_WORKSPACES}` ({', '.join(f'`{w}`' for w in workspaces)}). Each "
                "declared workspace (`split-assets workspace add`) gets the same definitions "
                "under its own names; the unprefixed workspace (`SPLIT_ASSETS_CONFIG` set) "
                "keeps the names of earlier releases. Every asset is partitioned by its "
                "workspace's dynamic partitions, one partition per diagnosis fingerprint.")
           + "\n", "## Names\n", names_table(),
           text(f"Executor of the code location: `{location.executor.name}` (in-process "
                "unless `SPLIT_ASSETS_EXECUTOR` names `celery` or `k8s`); loggers: "
                + ", ".join(f"`{n}`" for n in sorted(location.loggers or {})) + ".") + "\n"]
    for names, view in views.values():
        which = ", ".join(f"`{w}`" for w in names)
        out += [f"## Each workspace ({len(names)} of {len(workspaces)}: {which})\n"
                if len(views) > 1 else "## Each workspace\n",
                text(f"Written for a workspace `<name>`; the same for {which}.") + "\n"]
        out += workspace_sections(view)
    return "\n".join(out)


# ------------------------------------------------------------------ the errors page ------


def error_classes() -> list[type]:
    from split_assets import errors

    found = [c for c in vars(errors).values() if isinstance(c, type)
             and issubclass(c, errors.SplitAssetsError) and c.__module__ == errors.__name__]
    return sorted(found, key=lambda c: (c.exit_code, c.__mro__.__len__(), c.__name__))


def battery_cases() -> tuple[list[Any], set[str], dict[str, str]]:
    """The battery's cases (its dry-run twins left out), the ids that have a twin, and each
    case's mutation as written in its table (the source, read with ``ast``)."""
    for path in (ROOT, ROOT / "tests"):  # as pytest's pythonpath and rootdir put them
        if str(path) not in sys.path:
            sys.path.append(str(path))
    spec = importlib.util.spec_from_file_location("reference_bad_inputs", ROOT / BATTERY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    twins = {c.id for c in module.DRY_TWINS.values()}
    source = (ROOT / BATTERY).read_text(encoding="utf-8")
    lines = [line.encode() for line in source.splitlines(keepends=True)]
    mutations = {}
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "case"
                and len(node.args) > 1 and isinstance(node.args[0], ast.Constant)):
            written = re.sub(r"([(\[{])\s*\n\s*", r"\1", segment(lines, node.args[1]))
            mutations[node.args[0].value] = re.sub(r"\s*\n\s*", " ", written)
    return [c for c in module.CASES if c.id not in twins], set(module.DRY_TWINS), mutations


def segment(lines: list[bytes], node: ast.expr) -> str:
    """``node`` as written (``ast.get_source_segment``, without splitting the source again for
    each node): ``lines`` are the source's lines as UTF-8, as the offsets count."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    end = node.end_col_offset or 0
    if first == last:
        return lines[first][node.col_offset:end].decode()
    return b"".join([lines[first][node.col_offset:], *lines[first + 1:last],
                     lines[last][:end]]).decode()


def case_line(case: Any) -> str:
    """What the battery asks of the case's last stderr line (or stdout)."""
    parts = []
    if case.says:
        parts.append("holds " + " or ".join(code(s) for s in case.says))
    if case.matches:
        parts.append("matches " + code(case.matches))
    if case.prints:
        parts.append("stdout holds " + " and ".join(code(s) for s in case.prints))
    if case.alone:
        parts.append("the only line on stderr")
    if not parts and case.exit:
        parts.append("`error: <what> (<where>): <how to fix>`")
    return "; ".join(parts)


def battery_section() -> list[str]:
    cases, twins, mutations = battery_cases()
    rows = [(code(c.id), text(code(mutations.get(c.id, "?")) + (" (on a frozen split)"
                                                               if c.frozen else "")),
             code("split-assets " + " ".join(c.argv)), str(c.exit), case_line(c),
             "yes" if c.id in twins else "")
            for c in cases]
    return ["## The bad-input battery\n",
            text(f"Each kind of bad input the black-box battery (`{BATTERY}`) runs through "
                 "the installed `split-assets`, on a fresh copy of a small generated workspace "
                 "(`{ws}`, its config `{cfg}`, a folder outside it `{scratch}`, a frozen "
                 "split's `{pools}`): the change made to the workspace, the command, the exit "
                 "code and what the last line on stderr says. Besides its own condition, every "
                 "failing case asserts one `error: ...` line without a traceback and nothing "
                 "changed on disk but what the command documents. Dry run too: `split-assets "
                 "run --dry-run` refuses it with the same exit code and the same line.") + "\n",
            table(("case", "bad input", "command", "exit", "the line", "dry run too"), rows)]


def exit_code_section() -> list[str]:
    from split_assets.errors import environment_error

    rows = [(f"**{c.exit_code}**", code(c.__name__), text(first_paragraph(c.__doc__)))
            for c in error_classes()]
    hints = environment_hints(environment_error)
    return ["## Exit codes\n",
            text("An expected error is one line on stderr, `error: <what> (<where>): <how to "
                 "fix>`, without a traceback, and the exit code of its class in "
                 "`split_assets/errors.py`:") + "\n",
            table(("exit", "class", "meaning"), rows),
            prose("What `split_assets.cli.main` adds: **0** when the command succeeded (and for "
                 "`--help` and `--version`); a mistake on the command line (an unknown option "
                 "or command, a missing argument, an invalid choice or value) is a `UserError` "
                 "(exit **2**) naming the command and its help; an operating-system or SQLite "
                 "failure the user must fix becomes a `UserError` (exit **2**) with the OS's own "
                 "reason (below); a split impossible from counts alone is worded once, in "
                 "`split_assets/app/messages.py` (exit **2**); a Ctrl-C at any moment is "
                 "`Interrupted` (**130**), a SIGTERM `Terminated` (**143**); any other exception "
                 "is a bug: Python's traceback and exit **1**."),
            "### Operating-system errors\n",
            text("`environment_error` turns an `OSError` naming a file (or one of these "
                 "errno values) into `error: <reason> [<errno>] (<path>): <fix>`:") + "\n",
            table(("errno", "how to fix"), [(code(k), text(v)) for k, v in hints.items()])]


def environment_hints(function: Callable[..., Any]) -> dict[str, str]:
    """The errno -> fix table written inside ``environment_error``."""
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and getattr(node.targets[0], "id", "") == "hints"):
            return {ast.literal_eval(k): ast.literal_eval(v)
                    for k, v in zip(node.value.keys, node.value.values, strict=True) if k}
    return {}


# -- the static catalogue of error lines ----------------------------------------------------

@functools.cache
def package_trees() -> list[tuple[Path, ast.Module]]:
    """Every module of the package, parsed once."""
    return [(path, ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(PACKAGE.rglob("*.py"))]


def error_class_names() -> dict[str, int]:
    """{class name: exit code} of ``SplitAssetsError`` and every subclass the package defines
    (found in the source, so a class of a module that imports Dagster needs no import)."""
    codes = {c.__name__: c.exit_code for c in error_classes()}
    classes = [node for _, tree in package_trees() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)]
    grew = True
    while grew:
        grew = False
        for node in classes:
            bases = [getattr(b, "id", getattr(b, "attr", "")) for b in node.bases]
            parent = next((b for b in bases if b in codes), None)
            if parent and node.name not in codes:
                codes[node.name] = own_exit_code(node) or codes[parent]
                grew = True
    return codes


def own_exit_code(node: ast.ClassDef) -> int | None:
    for item in node.body:
        if (isinstance(item, ast.Assign) and getattr(item.targets[0], "id", "") == "exit_code"
                and isinstance(item.value, ast.Constant)):
            return int(item.value.value)
    return None


def message_variants(node: ast.expr | None, known: dict[str, str]) -> list[str]:
    """A message argument as text: f-string fields as ``{expression}``, a conditional
    expression as each of its branches, a module's string constant and ``config_key("x")`` as
    their values (``known``: ``module_constants``)."""
    if node is None:
        return [""]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return message_variants(node.body, known) + message_variants(node.orelse, known)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in message_variants(node.left, known)
                for b in message_variants(node.right, known)]
    if isinstance(node, ast.JoinedStr):
        variants = [""]
        for v in node.values:
            inner = v.value if isinstance(v, ast.FormattedValue) else v
            options = (message_variants(inner, known) if not isinstance(v, ast.FormattedValue)
                       or isinstance(inner, ast.IfExp) else [field_text(inner, known)])
            variants = [a + b for a in variants for b in options]
        return variants
    return [field_text(node, known)]


def field_text(node: ast.expr, known: dict[str, str]) -> str:
    """A computed part of a message: its known value, else ``{expression}``."""
    value = constant_value(node, known)
    return value if value is not None else "{" + ast.unparse(node) + "}"


def constant_value(node: ast.expr, known: dict[str, str]) -> str | None:
    from split_assets.config_keys import KEYS

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "config_key"
            and node.args and isinstance(node.args[0], ast.Constant)):
        return KEYS.get(node.args[0].value)
    return None


def module_constants(tree: ast.Module) -> dict[str, str]:
    """A module's top-level names bound to a string or to ``config_key("x")``, its own or
    imported from another module of the package."""
    known: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (
                node.module or "").startswith("split_assets"):
            theirs = constants_of(node.module or "")
            known |= {a.asname or a.name: theirs[a.name] for a in node.names
                      if a.name in theirs}
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            value = constant_value(node.value, known)
            if value is not None:
                known[node.targets[0].id] = value
    return known


RESOLVING: set[str] = set()  # the modules whose constants are being read (an import cycle)


@functools.cache
def constants_of(module: str) -> dict[str, str]:
    """``module_constants`` of a module of the package by its dotted name."""
    trees = {".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"):
             tree for path, tree in package_trees()}
    if module not in trees or module in RESOLVING:
        return {}
    RESOLVING.add(module)
    try:
        return module_constants(trees[module])
    finally:
        RESOLVING.discard(module)


def error_lines(call: ast.Call, known: dict[str, str]) -> list[str]:
    """The one-line renderings (``SplitAssetsError.line``) a constructor call can make."""
    named = {k.arg: k.value for k in call.keywords if k.arg}
    parts = [call.args[i] if len(call.args) > i else named.get(name)
             for i, name in enumerate(("what", "where", "fix"))]
    lines = []
    for what in message_variants(parts[0], known):
        for where in message_variants(parts[1], known):
            for fix in message_variants(parts[2], known):
                line = what + (f" ({where})" if where else "") + (f": {fix}" if fix else "")
                lines.append(line)
    return list(dict.fromkeys(lines))[:6]


def scoped_calls(tree: ast.Module) -> list[tuple[str, ast.Call]]:
    """Every call of a module with the qualified name of the function or class holding it, in
    source order."""
    found: list[tuple[str, ast.Call]] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, f"{scope}.{child.name}" if scope else child.name)
                continue
            if isinstance(child, ast.Call):
                found.append((scope, child))
            visit(child, scope)

    visit(tree, "")
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


def catalogue_section() -> list[str]:
    codes = error_class_names()
    out = ["## Every error line in the code\n",
           text("Each place the package makes an expected error, read from the source: the "
                "class (and its exit code) and the line it prints after `error: `, with the "
                "parts computed at run time as `{expression}` (a conditional message gives each "
                "of its branches). Grouped by module and function; errors passed on with "
                "their line unchanged (`ReportedError`) are left out.") + "\n"]
    for path, tree in package_trees():
        known = module_constants(tree)
        entries: dict[str, list[str]] = {}
        for scope, call in scoped_calls(tree):
            name = getattr(call.func, "id", getattr(call.func, "attr", ""))
            if name in codes and name not in ("ReportedError", "SplitAssetsError") and (
                    call.args or call.keywords):
                entries.setdefault(scope or "(module)", []).extend(
                    f"- {code(line)} — `{name}`, exit {codes[name]}"
                    for line in error_lines(call, known))
        if entries:
            out.append(f"### `{path.relative_to(ROOT).as_posix()}`\n")
            for scope, lines in entries.items():
                out.append(f"In `{scope}`:\n\n" + "\n".join(lines) + "\n")
    return out


def errors_page() -> str:
    out = [title("Errors and exit codes"),
           text("How `split-assets` fails: the exit codes, what each kind of bad input makes "
                "it print (the battery of bad inputs the tests run), and every error line the "
                "code can make. The options of each command are in the "
                "[command line](cli.md) reference, the keys a config error names in the "
                "[configuration](config.md) reference.") + "\n"]
    return "\n".join(out + exit_code_section() + battery_section() + catalogue_section())


# ------------------------------------------------------------------ the index and main ---


def index_page() -> str:
    entries = (("cli.md", "Command line", "every command, subcommand and option of "
                "`split-assets`"),
               ("config.md", "Configuration keys", "every key of a workspace's config file: "
                "type, default, whether it is fingerprinted, meaning"),
               ("definitions.md", "Dagster definitions", "the assets, checks, jobs, sensors "
                "and resources of the code location"),
               ("errors.md", "Errors and exit codes", "the exit codes, the bad inputs the "
                "tests try and the line each makes, every error line in the code"))
    lines = [f"- [{name}]({target}): {text(what)}." for target, name, what in entries]
    return (title("Reference") + "\n" + text(
        "These pages are made from the code and checked by "
        "`tests/docs/test_reference_pages.py`: a change of the code that changes a page "
        "fails that test until the pages are written again.") + "\n\n"
        + "\n".join(lines) + "\n")


PAGES: dict[str, Callable[[], str]] = {
    "docs/reference/index.md": index_page,
    "docs/reference/cli.md": cli_page,
    "docs/reference/config.md": config_page,
    "docs/reference/definitions.md": definitions_page,
    "docs/reference/errors.md": errors_page,
}


def pages() -> dict[str, str]:
    """{path relative to the checkout: markdown} of every Reference page."""
    return {path: make().rstrip("\n") + "\n" for path, make in PAGES.items()}


def page(path: str) -> str:
    """One page, as ``pages()`` has it."""
    return PAGES[path]().rstrip("\n") + "\n"


def stale(root: Path = ROOT, made: dict[str, str] | None = None) -> list[str]:
    """The pages under ``root`` that differ from what the code makes (or are missing)."""
    made = pages() if made is None else made
    return [path for path, body in made.items()
            if not (root / path).is_file()
            or (root / path).read_text(encoding="utf-8") != body]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming each page that differs")
    args = parser.parse_args(argv)
    made = pages()
    if args.check:
        differ = stale(ROOT, made)
        for path in differ:
            print(f"{path} differs from the code: run {UPDATE}", file=sys.stderr)
        return 1 if differ else 0
    for path, body in made.items():
        target = ROOT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text(encoding="utf-8") != body:
            target.write_text(body, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
