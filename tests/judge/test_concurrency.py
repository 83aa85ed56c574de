"""The learned concurrency (``judge/concurrency.py``) against the test server's slot model
in one event loop: N slots, the rest queued first come first served, a cold first answer per
slot, a hosted API's varying latency. What is asserted is where the limit settles, and the
time budgets."""

from __future__ import annotations

import asyncio
import time

import pytest

from split_assets.judge.budget import TimeBudget
from split_assets.judge.concurrency import START, AdaptiveLimit, Ticket
from split_assets.settings import OpenAIJudgeConfig
from testkit.slots import SlotModel

PROMPT = "p" * 4000  # 1,000 tokens, the same in every request: a slot's first is cold


def SlotServer(slots: int, service_s: float, cold_s: float = 0.0,  # noqa: N802 - a model
               jitter_s: float = 0.0) -> SlotModel:
    """The test server's slot model (``testkit/slots.py``), driven in this event loop:
    ``service_s`` a request, ``cold_s`` more the first time a slot sees the prompt."""
    return SlotModel(slots, service_s, prompt_s_per_token=cold_s / 1000, jitter_s=jitter_s,
                     seed=7)


async def _drive(server: SlotModel, limit: AdaptiveLimit, requests: int,
                 workers: int = 128) -> None:
    server.start()
    left = [requests]

    async def worker() -> None:
        while left[0] > 0:
            left[0] -= 1
            ticket = await limit.acquire()
            started = time.monotonic()
            cached = await server.serve(PROMPT, 0)
            limit.answered(ticket, time.monotonic() - started, cached)

    await asyncio.gather(*(worker() for _ in range(workers)))


def _settle(server: SlotModel, requests: int, ceiling: int = 64) -> AdaptiveLimit:
    limit = AdaptiveLimit(ceiling)
    asyncio.run(_drive(server, limit, requests))
    assert server.served == requests
    return limit


def test_a_one_slot_server_gets_one_request_at_a_time() -> None:
    server = SlotServer(1, 0.02, cold_s=0.03)
    limit = _settle(server, 60)
    assert limit.limit == 1 and limit.history[0] == (0.0, START)


@pytest.mark.parametrize("slots", [4, 16])
def test_a_local_server_gets_as_many_as_it_has_slots(slots: int) -> None:
    """Settles at the slots. Answers take 30 ms, so a stall of this busy machine (the suite
    runs two workers on two cores) can pass for queueing and hold the limit down: a second
    settle must then land (a limit that is wrong fails both)."""
    limits = []
    for _ in range(2):
        limits.append(_settle(SlotServer(slots, 0.03, cold_s=0.04), 40 * slots).limit)
        if slots - 1 <= limits[-1] <= slots + max(1, slots // 4):
            return
    raise AssertionError(f"{slots} slots: the limit settled at {limits}")


def test_a_hosted_api_with_varying_latency_is_not_throttled() -> None:
    """32 slots, 40 to 160 ms: the limit climbs to the slots (not held down by the spread)."""
    limit = _settle(SlotServer(32, 0.04, jitter_s=0.12), 800)
    assert limit.limit >= 28


def test_an_endpoint_without_queueing_is_filled_up_to_the_ceiling() -> None:
    """From one request to the ceiling within a few round trips (a drain to 1 when a stall of
    this busy machine spread a wave's answers > 1.5x apart costs one more). The answers take
    100 ms, so a stall must last 50 ms to look like queueing; one that does may cost a level
    or two at the end."""
    limit = _settle(SlotServer(1000, 0.1), 400, ceiling=32)
    levels = [n for _, n in limit.history]
    assert levels[0] == START == 1 and max(levels[:6]) >= 30
    assert levels == sorted(levels) or 1 in levels[1:]  # it only grows, but for a drain
    assert limit.limit >= 30


def test_a_timeout_halves_once_per_round_trip_and_holds_the_place() -> None:
    async def scenario() -> tuple[int, int, int]:
        limit = AdaptiveLimit(64, start=8)
        limit.evidence.base.append((0.05, None))  # a no-load latency is known: 50 ms
        tickets = [await limit.acquire() for _ in range(8)]
        limit.overloaded(tickets[0], timed_out=True)
        limit.overloaded(tickets[1], timed_out=True)  # the same burst: no second halving
        after_cut, in_flight = limit.limit, limit.in_flight
        await asyncio.sleep(0.08)  # the timed-out requests' places are given back
        return after_cut, in_flight, limit.in_flight

    after_cut, in_flight, later = asyncio.run(scenario())
    assert after_cut == 4 and in_flight == 8 and later == 6


def test_a_cold_first_call_is_given_the_prompt_s_time_then_the_queue_s() -> None:
    settings = OpenAIJudgeConfig(timeout_s=2.0, ttft_timeout_s=1.0, timeout_max_s=600.0)
    limit = AdaptiveLimit(64)
    first = Ticket(level=1, sent=0.0, limit=1, wave=1)
    assert TimeBudget(settings, limit, []).of(first, 40_000).total_s == 600.0  # nothing known
    # nothing known, seven others sent in the same wave: one more ceiling at most
    fifth = Ticket(level=5, sent=0.0, limit=8, wave=1)
    assert TimeBudget(settings, limit, []).of(fifth, 40_000).total_s == 1200.0
    # earlier runs processed 500 prompt tokens a second: 10,000 tokens take 20 s, x3
    budget = TimeBudget(settings, limit, [800.0, 500.0]).of(first, 40_000)
    assert budget.total_s == budget.first_token_s == pytest.approx(60.0)
    # then three times the measured no-load latency, and the seven requests ahead of the
    # eighth: one at a time, until two answers have shown how fast they come back
    limit.evidence.base.append((0.5, None))
    eighth = Ticket(level=8, sent=0.0, limit=8, wave=1)
    assert TimeBudget(settings, limit, []).of(eighth, 40_000).total_s == \
        pytest.approx(3 * 7 * 0.5 + max(2.0, 3 * 0.5))
    assert TimeBudget(settings, limit, []).of(first, 40_000).total_s == 2.0  # the floor
    off = OpenAIJudgeConfig(timeout_s=2.0, ttft_timeout_s=1.0, adaptive=False)
    assert TimeBudget(off, limit, []).of(eighth, 40_000).total_s == 2.0


def test_the_requests_ahead_drain_at_the_rate_answers_come_back() -> None:
    """A request waits behind every one of ours sent before it: one at a time (a one-slot
    server) until answers show the endpoint serves more -- here four, two a second."""
    settings = OpenAIJudgeConfig(timeout_s=1.0, ttft_timeout_s=1.0, timeout_max_s=600.0)
    limit = AdaptiveLimit(64)
    limit.evidence.base.append((2.0, None))  # no-load: 2 s
    now = [100.0]
    budget = TimeBudget(settings, limit, [], clock=lambda: now[0])
    fifth = Ticket(level=5, sent=0.0, limit=5, wave=1)
    assert budget.of(fifth, 4_000).total_s == pytest.approx(3 * 4 * 2.0 + 3 * 2.0)
    # sent first of a burst of four: the other three may reach the server before it
    first_of_four = Ticket(level=1, sent=0.0, limit=4, wave=2)
    assert budget.of(first_of_four, 4_000).total_s == pytest.approx(3 * 3 * 2.0 + 3 * 2.0)
    for _ in range(8):  # an answer every 0.5 s over the last two no-load latencies
        now[0] += 0.5
        budget.observe(1000, 900, 2.0)
    assert budget.drain_s(2.0) == pytest.approx(0.5)
    assert budget.of(fifth, 4_000).total_s == pytest.approx(3 * 4 * 0.5 + 3 * 2.0)
    now[0] += 60.0  # nothing came back for a minute: one at a time again
    assert budget.drain_s(2.0) == pytest.approx(2.0)


def test_a_budget_outlasts_timeout_max_by_the_wait_ahead() -> None:
    """timeout_max_s bounds an attempt's own time; the wait behind the run's own requests
    comes on top (the 9th request to a one-slot server whose calls take a minute)."""
    settings = OpenAIJudgeConfig(timeout_max_s=120.0)
    limit = AdaptiveLimit(64)
    limit.evidence.base.append((60.0, None))
    ninth = Ticket(level=8, sent=0.0, limit=8, wave=1)  # seven of ours still in flight
    assert TimeBudget(settings, limit, []).of(ninth, 4_000).total_s == \
        pytest.approx(3 * 7 * 60.0 + 120.0)
