"""Declared workspaces (``SplitWorkspace`` instances in ``$SPLIT_ASSETS_WORKSPACES``): the CLI
runs a declared config under its prefix on the shared instance, a broken declaration is one
line from ``dg check defs``, and the typed run options win over the run tags of earlier
releases."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import kv
from dagster import AssetKey, DagsterInstance

from split_assets.app.declared_workspaces import declare
from testkit.llm_server import always_invalid_for_the_first_question

ROOT = Path(__file__).resolve().parents[2]
DG = Path(sys.executable).parent / "dg"


def _second(small_workspace: Path, tmp_path: Path, seed: int = 8) -> Path:
    """Another copy of the workspace with another seed (one judge: one fingerprint)."""
    from conftest import edit_config

    other = tmp_path / "second"
    shutil.copytree(small_workspace.parent, other)
    return edit_config(other / "video_split.yaml", video_split={"seed": seed})


def test_run_uses_the_prefix_of_the_declaring_workspace(
        small_workspace: Path, tmp_path: Path,
        run_cli: Callable[..., tuple[int, str, str]]) -> None:
    """Two workspaces with one judge on one instance: each run materializes its own assets
    (``alpha/frozen_pools``, ``beta/...``) in its own partitions definition; an undeclared
    config stays unprefixed."""
    folder = Path(os.environ["SPLIT_ASSETS_WORKSPACES"])
    beta = _second(small_workspace, tmp_path)
    declare("alpha", small_workspace, folder)
    declare("beta", beta, folder)
    outs = {}
    for name, config in (("alpha", small_workspace), ("beta", beta)):
        code, out, err = run_cli("run", "--config", str(config))
        assert code == 0, err
        outs[name] = kv(out)
    assert outs["alpha"]["fingerprint"] == outs["beta"]["fingerprint"]
    assert outs["alpha"]["split_id"] != outs["beta"]["split_id"]
    instance, key = DagsterInstance.get(), outs["alpha"]["fingerprint"]
    for name in ("alpha", "beta"):
        assert instance.has_dynamic_partition(f"{name}__diag_fingerprint", key)
        event = instance.get_latest_materialization_event(AssetKey([name, "frozen_pools"]))
        assert event.asset_materialization.metadata["pools_path"].value == outs[name]["pools"]
    assert not instance.has_dynamic_partition("diag_fingerprint", key)
    assert instance.get_latest_materialization_event(AssetKey("frozen_pools")) is None
    # fingerprint --register: into the declaring workspace's partitions definition
    third = _second(small_workspace, tmp_path / "t", seed=9)
    declare("gamma", third, folder)
    code, out, err = run_cli("fingerprint", "--config", str(third), "--register")
    assert code == 0 and "registered" in err
    assert instance.has_dynamic_partition("gamma__diag_fingerprint", key)


def test_split_assets_config_keeps_a_declared_config_unprefixed(
        small_workspace: Path, run_cli: Callable[..., tuple[int, str, str]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    declare("alpha", small_workspace, Path(os.environ["SPLIT_ASSETS_WORKSPACES"]))
    monkeypatch.setenv("SPLIT_ASSETS_CONFIG", str(small_workspace))
    code, out, err = run_cli("run")
    assert code == 0, err
    assert DagsterInstance.get().get_latest_materialization_event(AssetKey("frozen_pools"))


def _dg_check(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SPLIT_ASSETS_CONFIG"}
    env.update(SPLIT_ASSETS_WORKSPACES=str(folder), VIRTUAL_ENV=sys.prefix)
    return subprocess.run([str(DG), "check", "defs"], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False, timeout=300)


def _declaration(folder: Path, name: str, config: str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "defs.yaml").write_text(
        f"type: split_assets.components.SplitWorkspace\n"
        f"attributes:\n  name: {name}\n  config: {config}\n", encoding="utf-8")


def test_dg_check_defs_names_a_broken_declaration(small_workspace: Path,
                                                  tmp_path: Path) -> None:
    """A declaration naming a missing config, or a name used twice, fails `dg check defs` with
    the one line naming the defs.yaml and the fix; a good folder passes."""
    good = tmp_path / "good"
    _declaration(good, "alpha", str(small_workspace))
    proc = _dg_check(good)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "All definitions loaded successfully" in proc.stdout + proc.stderr
    missing = tmp_path / "missing"
    _declaration(missing, "alpha", "nowhere/video_split.yaml")
    proc = _dg_check(missing)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr  # dg prints the failed load on stdout
    line = next(x for x in said.splitlines() if "error: workspace config not found" in x)
    assert str(missing / "alpha" / "nowhere" / "video_split.yaml") in line
    assert str(missing / "alpha" / "defs.yaml") in line and "point config: at" in line
    twice = tmp_path / "twice"
    _declaration(twice, "alpha", str(small_workspace))
    (twice / "other").mkdir()
    shutil.copy(twice / "alpha" / "defs.yaml", twice / "other" / "defs.yaml")
    proc = _dg_check(twice)
    assert proc.returncode != 0
    assert "error: two workspaces are named 'alpha'" in proc.stdout + proc.stderr


def test_the_run_config_wins_over_the_tag(openai_config: Path, server,  # noqa: ANN001
                                          tmp_path: Path) -> None:
    """--allow-degraded as typed run config (resources.run_options) and as the tag of earlier
    releases: the run config decides when both are set; the tag alone still works."""
    from conftest import edit_config

    from split_assets.app.session import Session
    from split_assets.definitions import make_definitions
    from split_assets.orchestration.instance import register_partition
    from split_assets.orchestration.tags import ALLOW_DEGRADED_TAG

    server.responder = always_invalid_for_the_first_question([])  # one diagnosis degraded
    edit_config(openai_config, video_split={"floor_k": {}})  # feasible without that one T2
    key = Session.open(openai_config).partition.key
    instance = DagsterInstance.get()
    register_partition(instance, key)
    job = make_definitions(openai_config).resolve_job_def("split_pipeline")

    def run(tag: str | None, option: int | None) -> bool:
        config = ({"resources": {"run_options": {"config": {"allow_degraded": option}}}}
                  if option is not None else None)
        return job.execute_in_process(
            instance=instance, partition_key=key, run_config=config, raise_on_error=False,
            tags={ALLOW_DEGRADED_TAG: tag} if tag is not None else {}).success

    assert not run(tag="1", option=0)  # the run config's 0 wins over the tag's 1
    assert run(tag="0", option=1)  # and its 1 over the tag's 0
    assert run(tag="1", option=None)  # the tag alone, as before


def test_workspace_add_and_list(small_workspace: Path, tmp_path: Path,
                                run_cli: Callable[..., tuple[int, str, str]]) -> None:
    """`split-assets workspace add` writes the defs.yaml (relative config path); the same
    again changes nothing; a taken name, a second name for one config, a bad name and a
    missing config are one line each, exit 2."""
    import yaml

    folder = Path(os.environ["SPLIT_ASSETS_WORKSPACES"])
    code, out, err = run_cli("workspace", "add", "--name", "alpha", "--config",
                             str(small_workspace))
    assert code == 0 and out.startswith("declared workspace alpha"), err
    doc = yaml.safe_load((folder / "alpha" / "defs.yaml").read_text(encoding="utf-8"))
    assert doc["type"] == "split_assets.components.SplitWorkspace"
    assert (folder / "alpha" / doc["attributes"]["config"]).resolve() == \
        small_workspace.resolve()
    code, out, _ = run_cli("workspace", "add", "--name", "alpha", "--config",
                           str(small_workspace))
    assert code == 0 and out.startswith("already declared")
    other = _second(small_workspace, tmp_path)
    for argv, said in ((("--name", "alpha", "--config", str(other)),
                        "workspace 'alpha' is declared for another config"),
                       (("--name", "beta", "--config", str(small_workspace)),
                        "this config is declared already, as 'alpha'"),
                       (("--name", "Beta-1", "--config", str(other)),
                        "workspace name 'Beta-1' is not a valid name"),
                       (("--name", "beta", "--config", str(tmp_path / "nope.yaml")),
                        "config not found")):
        code, out, err = run_cli("workspace", "add", *argv)
        assert code == 2 and err.startswith("error: ") and said in err, err
        assert len(err.strip().splitlines()) == 1
    code, out, _ = run_cli("workspace", "list")
    assert code == 0 and out.split("\t")[0] == "alpha" and len(out.splitlines()) == 1


def test_declarations_that_cannot_load_together_are_refused(small_workspace: Path,
                                                            tmp_path: Path) -> None:
    """Two names for one config (written by hand: `workspace add` refuses it) is one line
    naming the second defs.yaml; so is a declaration of another Component type."""
    from split_assets.app.declared_workspaces import declared
    from split_assets.errors import ConfigError

    folder = tmp_path / "by_hand"
    _declaration(folder, "alpha", str(small_workspace))
    _declaration(folder, "beta", str(small_workspace))
    with pytest.raises(ConfigError, match="workspaces 'alpha' and 'beta' name one config") as e:
        declared(folder)
    assert str(folder / "beta" / "defs.yaml") in e.value.line()
    (folder / "beta" / "defs.yaml").write_text("type: some.OtherComponent\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not a split_assets.components.SplitWorkspace"):
        declared(folder)


def test_demo_refuses_a_name_taken_by_another_config_before_building(
        small_workspace: Path, tmp_path: Path,
        run_cli: Callable[..., tuple[int, str, str]]) -> None:
    declare("demo", small_workspace, Path(os.environ["SPLIT_ASSETS_WORKSPACES"]))
    code, out, err = run_cli("demo", "--dir", str(tmp_path / "elsewhere"))
    assert code == 2 and "workspace 'demo' is declared for another config" in err
    assert "--name" in err and not (tmp_path / "elsewhere").exists()


def test_the_judge_endpoint_resource_never_shows_a_credential(
        openai_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The resource view of an openai judge: model, host and call settings; no key, no
    user or password or query of OPENAI_BASE_URL, and an unparseable URL is said so (the
    code location still loads)."""
    import json

    from split_assets.orchestration.resources import described
    from split_assets.settings import load_config

    secret = "sk-view-secret-0042"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{secret}@[::1]:8000/v1?key={secret}")
    shown = described(openai_config, load_config(openai_config), None)
    judge = shown["judge_endpoint"]
    values = json.dumps({k: str(v) for k, v in judge.__dict__.items()})
    assert judge.base_url == "http://[::1]:8000/v1" and judge.judge == "openai"
    assert "response_format=" in judge.settings and secret not in values
    monkeypatch.setenv("OPENAI_BASE_URL", "http://host:notaport/v1")
    assert described(openai_config, load_config(openai_config), None)[
        "judge_endpoint"].base_url == "OPENAI_BASE_URL cannot be parsed as a URL"


_DG_PROJECT = """\
[project]
name = "labproj"
version = "0.0.1"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "labproj"
registry_modules = ["split_assets.components"]

[tool.dg.cli]
telemetry = { enabled = false }
"""


def test_dg_scaffold_writes_a_declaration_dg_check_accepts(tmp_path: Path) -> None:
    """A user's own dg project: `dg scaffold defs` of the Component writes a defs.yaml with
    its name and config (and a starter config beside it) that `dg check defs` loads."""
    project = tmp_path / "labproj"
    (project / "src/labproj/defs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(_DG_PROJECT, encoding="utf-8")
    for init in ("src/labproj/__init__.py", "src/labproj/defs/__init__.py"):
        (project / init).write_text("", encoding="utf-8")
    (project / "src/labproj/definitions.py").write_text(  # what `dg scaffold project` writes
        "from pathlib import Path\n\nimport dagster as dg\n\n\n@dg.definitions\n"
        "def defs() -> dg.Definitions:\n"
        "    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)\n",
        encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "SPLIT_ASSETS_CONFIG"}
    env.update(VIRTUAL_ENV=sys.prefix, PYTHONPATH=str(project / "src"))

    def dg(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(DG), *args], cwd=project, env=env, capture_output=True,
                              text=True, check=False, timeout=300)

    made = dg("scaffold", "defs", "split_assets.components.SplitWorkspace", "video-mme")
    assert made.returncode == 0, made.stdout + made.stderr
    folder = project / "src/labproj/defs/video-mme"
    declared = yaml.safe_load((folder / "defs.yaml").read_text(encoding="utf-8"))
    assert declared["attributes"] == {"name": "video_mme", "config": "video_split.yaml"}
    assert (folder / "video_split.yaml").is_file()
    checked = dg("check", "defs")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_broken_sibling_declaration_is_refused_by_run_and_dry_run_alike(
        small_workspace: Path, run_cli, tmp_path: Path,  # noqa: ANN001
        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "declared"
    _declaration(folder, "alpha", str(small_workspace))
    _declaration(folder, "beta", "nowhere/video_split.yaml")  # broken
    monkeypatch.setenv("SPLIT_ASSETS_WORKSPACES", str(folder))
    code, _, err = run_cli("run", "--config", str(small_workspace))
    dry_code, _, dry_err = run_cli("run", "--dry-run", "--config", str(small_workspace))
    assert code == dry_code == 2 and err == dry_err and len(err.splitlines()) == 1
    assert "workspace config not found" in err
