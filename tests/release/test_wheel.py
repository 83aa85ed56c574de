"""The release (``make test-release``, minutes: not part of ``make test``): ``python -m build``
makes an sdist and a wheel built from it; the wheel, installed into a fresh virtual environment
outside the checkout, prints the changelog's version, finds the prompt templates and the example
config inside itself, and builds, runs and verifies the demo from a folder outside the checkout.

``pip install`` resolves the wheel's dependencies from the package index (its cache makes later
runs faster); the build itself needs no network (``--no-isolation``: the dev extra holds build
and hatchling)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from release_notes import CHECKOUT, top_release

pytestmark = pytest.mark.timeout(1800)

PROMPTS = sorted(p.name for p in (CHECKOUT / "prompts").glob("*.md"))
DATA_FILES = {f"split_assets/prompts/{name}" for name in PROMPTS} | {
    "split_assets/config/video_split.yaml"}
# what a build from the sdist needs, and what it must never carry
SDIST_NEEDS = {"pyproject.toml", "README.md", "CHANGELOG.md", "config/video_split.yaml",
               "split_assets/__init__.py", "split_assets/cli/__init__.py",
               *(f"prompts/{name}" for name in PROMPTS)}
# the demo's pools.json as tests/demo pins it: the installed wheel splits it to the same bytes
PINNED_POOLS_SHA256 = re.search(
    r'^DEMO_POOLS_SHA256 = "([0-9a-f]{64})"$',
    (CHECKOUT / "tests" / "demo" / "test_demo_workspace.py").read_text(encoding="utf-8"),
    re.MULTILINE)[1]
SDIST_NEVER = (".venv", ".venv-harness", ".dagster_home", "demo-workspace", "workspaces",
               "dist", "build", "tests", "bench", "testkit", "docs", ".git", ".env")


@dataclass(frozen=True)
class Release:
    wheel: Path
    sdist: Path
    venv: Path
    work: Path  # a working folder outside the checkout
    env: dict[str, str]
    seconds: dict[str, float]

    def run(self, *argv: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        program = self.venv / "bin" / argv[0]
        proc = subprocess.run([str(program), *argv[1:]], cwd=self.work, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == 0, f"{' '.join(argv)}: exit {proc.returncode}\n" \
                                     f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc


def _clean_env(root: Path) -> dict[str, str]:
    """The environment a user's shell would give: nothing of this checkout, its venv or the
    suite (no PYTHONPATH, VIRTUAL_ENV, SPLIT_ASSETS_*), a Dagster instance of its own with
    telemetry off, state under the temporary folder."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPLIT_ASSETS_", "PYTHON", "VIRTUAL_ENV", "DAGSTER_",
                                "PYTEST_", "OPENAI_"))}
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env.update(DAGSTER_HOME=str(home), XDG_STATE_HOME=str(root / "state"),
               PATH=os.pathsep.join([str(root / "venv" / "bin"), env.get("PATH", "")]))
    return env


def _timed(seconds: dict[str, float], name: str, argv: list[str], timeout: float,
           env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    seconds[name] = round(time.monotonic() - start, 1)
    assert proc.returncode == 0, f"{name}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    root = tmp_path_factory.mktemp("release")
    assert not root.resolve().is_relative_to(CHECKOUT), "the release test needs a folder " \
                                                        "outside the checkout"
    seconds: dict[str, float] = {}
    dist = root / "dist"
    # an sdist, then a wheel built from it: the sdist holds what a build needs
    _timed(seconds, "build", [sys.executable, "-m", "build", "--no-isolation", "--outdir",
                              str(dist), str(CHECKOUT)], timeout=600)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    env = _clean_env(root)
    venv = root / "venv"
    _timed(seconds, "venv", [sys.executable, "-m", "venv", str(venv)], env=env, timeout=300)
    _timed(seconds, "install", [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                str(wheel)], env=env, cwd=root, timeout=1500)
    work = root / "work"
    work.mkdir()
    yield Release(wheel, sdist, venv, work, env, seconds)
    shutil.rmtree(venv, ignore_errors=True)  # about a GB; pytest keeps its last three tmp dirs


def test_wheel_holds_the_package_and_its_data(release: Release) -> None:
    version = top_release()[0]
    assert release.wheel.name == f"split_assets-{version}-py3-none-any.whl"
    names = set(zipfile.ZipFile(release.wheel).namelist())
    top = {n.split("/", 1)[0] for n in names}
    assert top == {"split_assets", f"split_assets-{version}.dist-info"}
    assert names >= DATA_FILES
    data = {n for n in names if n.startswith("split_assets/") and not n.endswith(".py")}
    assert data == DATA_FILES  # no stray file (caches, compiled bytecode) in the package
    sources = {str(p.relative_to(CHECKOUT)) for p in (CHECKOUT / "split_assets").rglob("*.py")}
    assert sources <= names  # every module


def test_sdist_holds_what_a_build_needs_and_nothing_of_the_checkout(release: Release) -> None:
    version = top_release()[0]
    assert release.sdist.name == f"split_assets-{version}.tar.gz"
    prefix = f"split_assets-{version}/"
    with tarfile.open(release.sdist) as tar:
        names = {n.removeprefix(prefix) for n in tar.getnames()}
    assert names >= SDIST_NEEDS
    assert not [n for n in names if n.split("/", 1)[0] in SDIST_NEVER
                or "__pycache__" in n or n.endswith(".pyc")]


def test_installed_wheel_prints_the_changelog_version(release: Release) -> None:
    out = release.run("split-assets", "--version").stdout
    assert out == f"split-assets {top_release()[0]}\n"
    code = "import split_assets; print(split_assets.__version__); print(split_assets.__file__)"
    version, where = release.run("python", "-c", code).stdout.split()
    assert version == top_release()[0]
    assert Path(where).is_relative_to(release.venv)  # the wheel, never the checkout
    release.run("python", "-m", "pip", "check")  # the pins install together


def test_installed_wheel_finds_its_data_inside_itself(release: Release) -> None:
    code = ("from importlib import resources; from split_assets.settings import "
            "shipped_prompts_dir; print(shipped_prompts_dir()); "
            "print(resources.files('split_assets') / 'config' / 'video_split.yaml')")
    prompts, config = map(Path, release.run("python", "-c", code).stdout.split())
    assert prompts.is_relative_to(release.venv) and config.is_relative_to(release.venv)
    assert sorted(p.name for p in prompts.glob("*.md")) == PROMPTS
    for name in PROMPTS:  # the templates as the checkout has them
        assert (prompts / name).read_bytes() == (CHECKOUT / "prompts" / name).read_bytes()
    assert config.read_bytes() == (CHECKOUT / "config" / "video_split.yaml").read_bytes()


def test_installed_wheel_runs_and_verifies_the_demo(release: Release) -> None:
    demo = release.work.parent / "demo"
    start = time.monotonic()
    out = release.run("split-assets", "demo", "--dir", str(demo)).stdout
    release.seconds["demo"] = round(time.monotonic() - start, 1)
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    pools, manifest = Path(values["pools"]), Path(values["manifest"])
    assert pools.is_file() and pools.is_relative_to(demo)
    assert values["dagster_home"] == release.env["DAGSTER_HOME"]
    assert values["pools_sha256"] == PINNED_POOLS_SHA256  # the checkout's demo, to the byte
    assert json.loads(manifest.read_bytes())["made_by"] == {
        "package": "split_assets", "version": top_release()[0]}
    # the sample workspace is declared where an installed package looks: ./workspaces
    assert (release.work / "workspaces" / "demo" / "defs.yaml").is_file()
    config = str(demo / "video_split.yaml")
    start = time.monotonic()
    verified = release.run("split-assets", "verify", str(pools), "--config", config)
    release.run("split-assets", "verify", str(pools), "--config", config, "--recompute")
    release.seconds["verify"] = round(time.monotonic() - start, 1)
    assert "fail" not in verified.stdout.lower(), verified.stdout
    # the code location, from the wheel (no pyproject.toml beside it): the declared demo
    code = ("from split_assets.definitions import defs; print(' '.join(sorted("
            "k.to_user_string() for k in defs().resolve_all_asset_keys())))")
    keys = release.run("python", "-c", code).stdout.split()
    assert "demo/frozen_pools" in keys and "demo/canonical_predictions" in keys, keys
    release.run("dagster", "definitions", "validate", "-m", "split_assets.definitions")
    # nothing was made in the checkout, nor an instance in the working folder
    assert not (release.work / ".dagster_home").exists()
    print(f"\nrelease timings (s): {release.seconds}; wheel {release.wheel.stat().st_size} "
          f"bytes, sdist {release.sdist.stat().st_size} bytes")
