"""The openai judge and its probe against a slow one-slot server: llama.cpp's ``llama-server``
with one slot on two CPU cores, where a judge call takes 60 seconds with a cold prompt cache
and 20 with a warm one (the slot holds the shared part of the prompt from the call before).

The test server models it on a time scale of 1/100 (``SlotModel.time_scale``: a modelled
minute lasts 0.6 s), and the judge's configured times get the same scale
(``scaled_judge_times``), so its 120-s floor is 1.2 s: a queue that outlasts a budget still
times out, as on the real server. Requests sent at once reach the queue in no fixed order, as
on separate connections. Counted in calls and statuses, not timed."""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import pytest
from conftest import edit_config, kv

from split_assets.app.session import Session
from split_assets.diagnosis.diagnosis_report import DiagnosisReport
from split_assets.diagnosis.plan import plan_diagnosis, wrong_to_diagnose
from split_assets.diagnosis.runner import diagnose
from split_assets.judge.openai_judge import prepare_request
from testkit.llm_server import FakeLLM, default_content, prompt_text
from testkit.slots import SlotModel, common_prefix, scaled_judge_times

# a modelled second lasts 10 ms (50 ms for the probe, whose short calls -- a few modelled
# seconds -- must outlast this busy machine's own overhead per request)
SCALE, PROBE_SCALE = 0.01, 0.05
BASE_S = 1.0  # a request's fixed part
QUESTIONS = 12
# a judge call, its slot's cache cold and warm: the server, and the one measured
# (llama-server, a 1.5B model on two cores: the question's own part of the prompt dominates)
# (and the seed of the order in which requests sent at once reach it)
SERVERS = {"cold 60 s, warm 20 s": (60.0, 20.0, 2), "cold 60 s, warm 55 s": (60.0, 55.0, 1)}


def _bodies(config: Path, n: int) -> list[dict]:
    """The judge's first ``n`` requests."""
    from split_assets.diagnosis.cases import CaseSource
    from split_assets.judge.prompts import load_templates
    from split_assets.judge.render import render_messages

    s = Session.open(config)
    wrong = wrong_to_diagnose(s.inputs.predictions)[:n]
    diag = s.loaded.config.diag
    templates = load_templates(s.loaded.paths.prompts_dir, s.judge.required_templates())
    return [prepare_request(diag.openai, diag.model, render_messages(
        templates, case, diag.context, diag.rules.open_tool)).payload
        for case in CaseSource(s.inputs, wrong).cases(wrong)]


def slow_one_slot(bodies: list[dict], cold_s: float, warm_s: float, scale: float,
                  seed: int) -> SlotModel:
    """One slot whose typical judge call takes ``cold_s`` modelled seconds with nothing cached
    and ``warm_s`` after another question's call (the prompt's shared part cached): a fixed
    part, the uncached prompt tokens, and the answer's tokens (most of a warm call on a CPU;
    a short request asks for few)."""
    prompts = [prompt_text(body) for body in bodies]
    total = median(len(p) // 4 for p in prompts)
    shared = median(common_prefix(a, b) // 4 for a, b in itertools.pairwise(prompts))
    answer = median(len(default_content(body)) // 4 for body in bodies)
    per_token = (cold_s - warm_s) / shared
    per_output_token = (warm_s - BASE_S - per_token * (total - shared)) / answer
    assert per_output_token > 0, "the shared part is most of a prompt"
    return SlotModel(1, BASE_S, per_token, per_output_token, arrival_jitter_s=2.0,
                     time_scale=scale, seed=seed)


@pytest.fixture
def scale() -> float:
    return SCALE


@pytest.fixture
def slow_config(small_workspace: Path, monkeypatch: pytest.MonkeyPatch, scale: float) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    # every setting at its default, on the server's time scale
    return edit_config(small_workspace, diag={"judge": "openai", "model": "local-model",
                                              "openai": scaled_judge_times(scale)})


@dataclass
class Slow:
    """The server, and what its typical judge call takes cold and warm (modelled seconds)."""

    fake: FakeLLM
    slot: SlotModel
    cold_s: float
    warm_s: float


@pytest.fixture(params=list(SERVERS))
def server(request: pytest.FixtureRequest, slow_config: Path, scale: float,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Slow]:
    cold_s, warm_s, seed = SERVERS[request.param]
    model = slow_one_slot(_bodies(slow_config, QUESTIONS), cold_s, warm_s, scale, seed)
    with FakeLLM(slots=model) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        yield Slow(fake, model, cold_s, warm_s)


def test_twelve_questions_take_twelve_calls_and_no_timeout(slow_config: Path,
                                                           server: Slow) -> None:
    s = Session.open(slow_config)
    wrong = wrong_to_diagnose(s.inputs.predictions)[:QUESTIONS]
    with s.partition.store() as store:
        report = diagnose(s.judge, s.inputs, s.partition,
                          plan_diagnosis(wrong, set(), frozenset()), store)
        store.flush()
    with sqlite3.connect(slow_config.parent / "signals.db") as conn:
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM llm_calls GROUP BY 1"))
    assert isinstance(report, DiagnosisReport) and report.diagnosed == QUESTIONS
    assert set(statuses) <= {"ok", "invalid_output"}, statuses  # no timeout of any kind
    repairs = statuses.get("invalid_output", 0)
    assert len(server.fake.requests) == report.calls == QUESTIONS + repairs
    # nothing sent before the endpoint showed it serves more than one at a time
    assert report.concurrency[0][1] <= 2


@pytest.mark.parametrize(("scale", "server"), [(PROBE_SCALE, "cold 60 s, warm 20 s")],
                         indirect=["server"])
def test_the_probe_counts_one_slot_and_says_how_long_it_takes(
        slow_config: Path, server: Slow, run_cli) -> None:  # noqa: ANN001
    code, out, err = run_cli("judge", "probe", "--config", str(slow_config))
    assert code == 0, err
    found = kv(out)
    assert found["parallelism"] == "1" and found["recommended_concurrency"] == "1"
    assert int(found["calls"]) == len(server.fake.requests)
    # it said how long it takes before it started, and it took at most about three cold
    # calls (the prompt cold and warm, two short format checks), then the parallelism
    # test's own calls, short ones (the slot's time, in modelled seconds)
    said = [line for line in err.splitlines() if line.startswith("judge probe: ")]
    assert "about 3x the first call" in said[0], err  # before the first call
    assert re.match(r"judge probe: the cold call took [\d.]+ s; about [\d.]+ s more", said[1])
    costs = server.slot.costs
    assert sum(costs[:4]) <= 3 * server.cold_s
    assert len(costs) - 4 <= 4 and max(costs[4:]) < server.warm_s / 2
