"""The diagnosis pass's queue and commits: questions handed out in order under per-question
leases in the signal store (a dead worker's question is taken over), and each worker's row
committed together with the others of one event-loop turn (``GroupCommit``)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from split_assets.lib.failpoints import failpoint
from split_assets.store.conventions import env_seconds
from split_assets.store.leases import LeaseOwner
from split_assets.store.signals import SignalRow, SignalStore

if TYPE_CHECKING:
    from split_assets.workspace.partition import Partition


class GroupCommit:
    """Rows finished in the same turn of the event loop share one transaction; each worker
    waits for its own row's commit before it takes its next question."""

    def __init__(self, store: SignalStore, owner: LeaseOwner | None = None,
                 written: dict[str, float] | None = None) -> None:
        self.store = store
        self.owner = owner  # each committed row's lease is dropped in the same transaction
        # question -> updated_at of this pass's write
        self.written: dict[str, float] = {} if written is None else written
        self._rows: list[SignalRow] = []
        self._waiters: list[asyncio.Future[None]] = []
        self.transactions = 0

    async def commit(self, row: SignalRow) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._rows.append(row)
        self._waiters.append(waiter)
        if len(self._rows) == 1:
            asyncio.get_running_loop().call_soon(self._flush)
        await waiter

    def _flush(self) -> None:
        rows, waiters = self._rows, self._waiters
        self._rows, self._waiters = [], []
        try:
            written = self.store.upsert_many(rows, release=self.owner)
        except BaseException as exc:  # noqa: BLE001 - handed to every waiting worker
            # an interrupt too (Dagster's is a BaseException): raised in this loop callback,
            # asyncio would log and drop it, and the workers awaiting these waiters -- already
            # swapped out -- would wait for ever while the heartbeat kept their leases alive
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            if not isinstance(exc, Exception):
                raise  # seen by the pass's exception handler (diagnosis/runner.py)
            return
        self.transactions += 1
        self.written.update((row.question_id, written) for row in rows)
        for waiter in waiters:
            if not waiter.done():  # a worker cancelled (Ctrl-C) while its row was committed
                waiter.set_result(None)


LEASE_TTL_S = 60.0  # SPLIT_ASSETS_LEASE_TTL_S overrides it (checked when a pass starts)
LEASE_POLL_S = 0.5


def lease_ttl_s() -> float:
    return env_seconds("SPLIT_ASSETS_LEASE_TTL_S", LEASE_TTL_S, 2.0)


class LeasedQueue:
    """Questions for this pass, handed out only once leased in the signal store: a question
    leased by another live run is deferred and looked at again until that run finishes it
    (then it is skipped) or its lease expires (then it is taken over)."""

    def __init__(self, partition: Partition, store: SignalStore, todo: list[str],
                 me: LeaseOwner, batch: int, degraded_before: float,
                 on_claim: Callable[[list[str]], Awaitable[None]] | None = None) -> None:
        self.partition, self.store, self.me, self.batch = partition, store, me, batch
        self.on_claim = on_claim  # reads what the claimed questions need
        self.degraded_before = degraded_before
        self._queue: deque[str] = deque(todo)
        self._deferred: list[str] = []
        self._ready: deque[str] = deque()
        self._lock = asyncio.Lock()
        self.waited = False
        self.ttl_s = lease_ttl_s()

    async def next(self) -> str | None:
        """The next leased question, or None when nothing is left for this pass."""
        while True:
            if self._ready:
                return self._ready.popleft()
            async with self._lock:
                if self._ready:
                    continue
                if not self._queue and self._deferred:
                    await asyncio.sleep(LEASE_POLL_S)  # another run holds them: wait for it
                    self._queue, self._deferred = deque(self._deferred), []
                    self.waited = True
                if not self._queue:
                    return None
                window = [self._queue.popleft()
                          for _ in range(min(len(self._queue), 4 * self.batch))]
                result = self.store.claim(self.partition.run_id, self.partition.key, window,
                                          self.me, self.batch, self.ttl_s, self.degraded_before)
                failpoint("diagnosis.claimed")
                if self.on_claim is not None:
                    await self.on_claim(result.claimed)
                self._ready.extend(result.claimed)
                self._deferred.extend(result.foreign)
                self._queue.extendleft(reversed(result.unclaimed))
