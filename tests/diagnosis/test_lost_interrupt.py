"""The hang of issue 38: Dagster's interrupt (a BaseException, not a KeyboardInterrupt) raised
inside ``GroupCommit._flush``, a loop callback, was logged and dropped by asyncio, and the
workers awaiting the commit -- their waiters already swapped out -- waited for ever while the
pass's heartbeat kept their leases alive. Reproduced deterministically: the store raises the
interrupt in the middle of a group commit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from dagster._core.errors import DagsterExecutionInterruptedError

from split_assets.diagnosis.leased_queue import GroupCommit
from split_assets.store.signals import SignalRow


class _InterruptedStore:
    """A store whose write is where the signal lands."""

    def upsert_many(self, rows: list[SignalRow], release: Any = None) -> float:
        raise DagsterExecutionInterruptedError()


def _row(qid: str) -> SignalRow:
    return SignalRow(question_id=qid, baseline_run_id="base", diag_fingerprint="fp-x",
                     video_id="v", task_type="t", tier="T1")


def test_an_interrupt_in_a_group_commit_reaches_every_waiting_worker() -> None:
    async def workers() -> list[Any]:
        committer = GroupCommit(_InterruptedStore())  # type: ignore[arg-type]
        commits = [asyncio.create_task(committer.commit(_row(f"q{i}"))) for i in range(3)]
        # before the fix: the three commits never end (the test times out here)
        return await asyncio.wait_for(asyncio.gather(*commits, return_exceptions=True), 5)

    loop = asyncio.new_event_loop()
    lost: list[BaseException] = []
    loop.set_exception_handler(lambda _, context: lost.append(context.get("exception")))
    try:
        results = loop.run_until_complete(workers())
    finally:
        loop.close()
    assert [type(r) for r in results] == [DagsterExecutionInterruptedError] * 3
    assert [type(e) for e in lost] == [DagsterExecutionInterruptedError]  # seen, not dropped


def test_a_pass_ends_on_an_interrupt_lost_in_any_callback() -> None:
    """Whatever callback the interrupt lands in, the pass's handler cancels its workers and
    re-raises it (diagnosis/runner.py)."""
    from split_assets.diagnosis import runner

    async def a_pass() -> None:
        tasks: list[asyncio.Task[None]] = []
        lost: list[BaseException] = []
        runner._end_on_lost_interrupts(tasks, lost)  # noqa: SLF001 - the mechanism itself
        never = asyncio.get_running_loop().create_future()
        tasks.append(asyncio.create_task(asyncio.wait_for(never, 30)))

        def interrupted() -> None:
            raise DagsterExecutionInterruptedError()

        asyncio.get_running_loop().call_soon(interrupted)
        await asyncio.gather(*tasks, return_exceptions=True)
        if lost:
            raise lost[0]

    with pytest.raises(DagsterExecutionInterruptedError):
        asyncio.run(asyncio.wait_for(a_pass(), 10))


class _Store:
    def upsert_many(self, rows: list[SignalRow], release: Any = None) -> float:
        return 1.0


def test_a_worker_cancelled_while_its_row_commits_breaks_no_callback() -> None:
    """Ctrl-C cancels the workers; one cancelled while its row waits for the group commit
    left a cancelled waiter, and setting its result raised InvalidStateError in the loop
    callback ("Exception in callback GroupCommit._flush()"), leaving the other workers of the
    group waiting for ever. The rows are still written."""
    committer = GroupCommit(_Store())  # type: ignore[arg-type]

    async def cancelled_mid_commit() -> None:
        first = asyncio.create_task(committer.commit(_row("q1")))
        second = asyncio.create_task(committer.commit(_row("q2")))
        await asyncio.sleep(0)  # both rows queued, the flush scheduled after them
        first.cancel()
        await asyncio.sleep(0.01)  # the flush runs
        await asyncio.wait_for(second, 5)  # before the fix: never (the flush broke off)
        with pytest.raises(asyncio.CancelledError):
            await first

    loop = asyncio.new_event_loop()
    broken: list[dict] = []
    loop.set_exception_handler(lambda _, context: broken.append(context))
    try:
        loop.run_until_complete(cancelled_mid_commit())
    finally:
        loop.close()
    assert broken == [] and set(committer.written) == {"q1", "q2"}
