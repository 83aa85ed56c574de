"""How ``tests/cli/test_bad_inputs.py`` runs its cases: the workspace templates (fresh and
frozen), one subprocess per case in a thread pool, the before/after snapshot of the workspace
and the problems found in a result."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.bad_input_cases import (
    CASE_TIMEOUT_S,
    CLI,
    EPSILON,
    ERROR_LINE,
    IS_ROOT,
    LEFTOVER_SUFFIXES,
    N_VIDEOS,
    NOBODY,
    PIN,
    SEED,
    Case,
    Ctx,
    Result,
)
from split_assets.demo import build_workspace


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` -> sha256 of a file, ``<dir>`` (path ending in '/'), or the
    target of a symlink."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in dirnames + filenames:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                out[rel + "/"] = "<dir>"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


FSIZE_WRAPPER = ("import os, resource, sys; n = int(sys.argv[1]); "
                 "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); "
                 "os.execv(sys.argv[2], sys.argv[2:])")


def _command(c: Ctx, case_: Case) -> list[str]:
    values = c.placeholders()
    cmd = [str(CLI), *(arg.format(**values) for arg in case_.argv)]
    if c.fsize_limit is not None:
        cmd = [sys.executable, "-c", FSIZE_WRAPPER, str(c.fsize_limit), *cmd]
    if case_.unprivileged and IS_ROOT:
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    return cmd


def _text(data: str | bytes | None) -> str:
    """What a timed-out process wrote (TimeoutExpired holds bytes even with text=True)."""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data or ""


def _interrupted(cmd: list[str], env: dict[str, str]) -> tuple[int | None, str, str]:
    """Start the command, send SIGINT once it wrote its first line on stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stderr is not None
    first = proc.stderr.readline()
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, _text(out), first + _text(err)
    return proc.returncode, out, first + err


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for path in root.rglob("*"):
        os.chown(path, uid, uid, follow_symlinks=False)


_HOME_TEMPLATE: list[Path] = []  # an initialized instance, set once by the Battery


def _init_home_template(home: Path) -> None:
    """A Dagster instance whose storage exists (creating it costs seconds per case)."""
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    code = "from dagster import DagsterInstance; DagsterInstance.get().dispose()"
    subprocess.run([sys.executable, "-c", code], env=dict(os.environ, DAGSTER_HOME=str(home)),
                   check=True, capture_output=True)
    _HOME_TEMPLATE[:] = [home]


def _environment(dagster_home: Path) -> dict[str, str]:
    """This process's environment without the endpoint, the config or a failpoint, and a
    fresh Dagster instance (telemetry off) outside the workspace."""
    if _HOME_TEMPLATE and not dagster_home.exists():
        shutil.copytree(_HOME_TEMPLATE[0], dagster_home)
    dagster_home.mkdir(exist_ok=True)
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n",
                                               encoding="utf-8")
    env = {k: v for k, v in _environ_snapshot().items()
           if not k.startswith(("OPENAI_", "SPLIT_ASSETS_")) and k != "DAGSTER_HOME"}
    env["DAGSTER_HOME"] = str(dagster_home)
    return env


def _environ_snapshot() -> dict[str, str]:
    """``os.environ`` copied from a worker thread while pytest's main thread may set or
    delete PYTEST_CURRENT_TEST: a key gone between listing and reading is read again."""
    while True:
        try:
            return dict(os.environ)
        except KeyError:
            continue


def run_case(case_: Case, root: Path, template: Path, frozen: Frozen | None,
             llm_url: str) -> Result:
    ws, scratch, home = root / "ws", root / "scratch", root / "dagster_home"
    shutil.copytree(frozen.ws if case_.frozen and frozen else template, ws, symlinks=True)
    scratch.mkdir()
    env = _environment(home)
    with contextlib.ExitStack() as stack:
        c = Ctx(ws, scratch, stack, frozen.pools_rel if case_.frozen and frozen else None,
                llm_url)
        env.update({k: v.format(**c.placeholders()) for k, v in case_.env})
        if case_.mutate is not None:
            case_.mutate(c)
        if case_.unprivileged and IS_ROOT:
            env["HOME"] = str(scratch)
            _chown_tree(root, NOBODY)
        before = snapshot(ws)
        cmd = _command(c, case_)
        started = time.monotonic()
        with case_.hold(c) if case_.hold else contextlib.nullcontext():
            if case_.interrupt:
                code, out, err = _interrupted(cmd, env)
            else:
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                          timeout=CASE_TIMEOUT_S, check=False)
                    code, out, err = proc.returncode, proc.stdout, proc.stderr
                except subprocess.TimeoutExpired as exc:
                    code, out, err = None, _text(exc.stdout), _text(exc.stderr)
        seconds = time.monotonic() - started
        after = snapshot(ws)
        extra = case_.check(c) if case_.check else []
    return Result(code, out, err, before, after, seconds, extra)


def unpaired(paths: dict[str, str]) -> set[str]:
    """A pools.json without its split_manifest.json beside it, or the other way round."""
    out = set()
    for p in paths:
        for name, twin in (("pools.json", "split_manifest.json"),
                           ("split_manifest.json", "pools.json")):
            if (p == name or p.endswith("/" + name)) and p[: -len(name)] + twin not in paths:
                out.add(f"{p} without its {twin}")
    return out


def problems_of(case_: Case, r: Result) -> list[str]:
    """Everything wrong with one case's outcome (empty: the case passes)."""
    problems = []
    lines = r.stderr.strip().splitlines()
    last = lines[-1] if lines else ""
    if r.code is None:
        problems.append(f"no exit within {CASE_TIMEOUT_S} s (killed), expected {case_.exit}")
    elif r.code != case_.exit:
        problems.append(f"exit {r.code}, expected {case_.exit}")
    if "Traceback" in r.stderr:
        problems.append("stderr holds a traceback")
    if case_.exit != 0:
        if not ERROR_LINE.match(last):
            problems.append("last stderr line is not 'error: <what> (<where>): <fix>'")
        if case_.says and not any(s.lower() in last.lower() for s in case_.says):
            problems.append(f"last line says none of {list(case_.says)}")
        if case_.matches and not re.search(case_.matches, last):
            problems.append(f"last line does not match {case_.matches!r}")
        if case_.alone and len(lines) != 1:
            problems.append(f"stderr has {len(lines)} lines, expected the error line alone")
    problems.extend(f"stdout lacks {text!r}" for text in case_.prints if text not in r.stdout)
    changed = sorted(p for p in r.before.keys() | r.after.keys()
                     if r.before.get(p) != r.after.get(p))
    unexpected = [p for p in changed if not any(fnmatch.fnmatchcase(p, pat)
                                                for pat in case_.allowed)]
    if unexpected:
        def how(p: str) -> str:
            return "new" if p not in r.before else "gone" if p not in r.after else "changed"

        shown = ", ".join(f"{p} ({how(p)})" for p in unexpected[:8])
        problems.append(f"changed on disk: {shown}")
    leftovers = [p for p in r.after if p.rstrip("/").endswith(LEFTOVER_SUFFIXES)
                 or ".tmp" in p.rstrip("/").rsplit("/", 1)[-1]]
    if leftovers:
        problems.append(f"left behind: {', '.join(leftovers)}")
    problems.extend(sorted(unpaired(r.after) - unpaired(r.before)))
    problems.extend(r.extra)
    if problems:
        problems.append(f"last stderr line: {last[:400]!r}")
    return problems


# ------------------------------------------------------------------ the session -----------

@dataclass(frozen=True)
class Frozen:
    """The workspace with a frozen split, and where its pools.json is."""

    ws: Path
    pools_rel: str


def _make_template(directory: Path) -> Path:
    summary = build_workspace(directory, n_videos=N_VIDEOS, seed=SEED)
    text = summary.config_path.read_text(encoding="utf-8")
    assert "  epsilon: 0.02\n" in text
    summary.config_path.write_text(text.replace("  epsilon: 0.02\n", f"  epsilon: {EPSILON}\n"),
                                   encoding="utf-8")
    return directory


def _freeze(template: Path, directory: Path) -> Frozen:
    ws = directory / "ws"
    shutil.copytree(template, ws)
    env = _environment(directory / "dagster_home")
    proc = subprocess.run([str(CLI), "run", "--config", str(ws / "video_split.yaml"),
                           "--generated-at", PIN], capture_output=True, text=True, env=env,
                          timeout=CASE_TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pools = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)["pools"]
    leftovers = [p for p in ws.rglob("*") if p.name.endswith(LEFTOVER_SUFFIXES)]
    assert not leftovers, f"the freeze left {leftovers}"
    return Frozen(ws, Path(pools).relative_to(ws).as_posix())


def _rmtree(path: Path) -> None:
    def writable(func: Callable[..., Any], target: str, _exc: Any) -> None:
        os.chmod(os.path.dirname(target), 0o755)
        with contextlib.suppress(OSError):
            os.chmod(target, 0o755)
        func(target)

    shutil.rmtree(path, onerror=writable)  # onexc is 3.12+


class Battery:
    """Runs the selected cases in parallel; ``results[id]`` once done."""

    def __init__(self, base: Path, cases: list[Case]) -> None:
        self.base = base
        self.cases = cases
        self.template = _make_template(base / "template")
        _init_home_template(base / "dagster_home_template")
        workers = max(3, min(6, (os.cpu_count() or 2) + 1))
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self._frozen: Future[Frozen] | None = None
        self._lock = threading.Lock()
        self.results: dict[str, Future[Result]] = {}
        self.llm = None

    def frozen(self) -> Future[Frozen]:
        with self._lock:
            if self._frozen is None:
                self._frozen = self.pool.submit(_freeze, self.template, self.base / "frozen")
            return self._frozen

    def start(self) -> None:
        if any(c.needs_llm for c in self.cases):
            from testkit.llm_server import Action, FakeLLM

            # every answer is prose, not a diagnosis: a diagnosis ends degraded
            self.llm = FakeLLM(responder=lambda body, index: Action("invalid_json")).start()
        if any(c.frozen for c in self.cases):
            self.frozen()
        url = self.llm.base_url if self.llm else ""
        ordered = sorted(self.cases, key=lambda c: (not c.slow, c.frozen))
        for c in ordered:
            self.results[c.id] = self.pool.submit(self._run, c, url)

    def _run(self, case_: Case, url: str) -> Result:
        frozen = self.frozen().result() if case_.frozen else None
        root = self.base / case_.id
        root.mkdir()
        return run_case(case_, root, self.template, frozen, url)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.llm is not None:
            self.llm.stop()
