"""Per-question leases in the signal store: a question is diagnosed by one live worker at a
time; a dead worker's lease is taken over at once on its host, anyone's when it expires."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from split_assets.lib.files import pid_alive
from split_assets.store.conventions import DONE

LEASE_COLUMNS = ("baseline_run_id", "diag_fingerprint", "question_id", "owner", "host", "pid",
                 "expires_at", "heartbeat_at")
_TAKE = (f"INSERT INTO leases ({', '.join(LEASE_COLUMNS)}) VALUES "
         f"({', '.join('?' for _ in LEASE_COLUMNS)}) ON CONFLICT (baseline_run_id, "
         "diag_fingerprint, question_id) DO UPDATE SET owner = excluded.owner, host = "
         "excluded.host, pid = excluded.pid, expires_at = excluded.expires_at, heartbeat_at = "
         "excluded.heartbeat_at")
# (owner, host, pid, expires_at) of a lease
Held = dict[str, tuple[str, str, int, float]]


@dataclass(frozen=True)
class LeaseOwner:
    """Who holds a lease: one diagnosis pass of one process."""

    owner: str
    host: str
    pid: int

    @classmethod
    def this_process(cls) -> LeaseOwner:
        host, pid = process_space(), os.getpid()
        return cls(f"{host}:{pid}:{uuid.uuid4().hex[:8]}", host, pid)


def process_space() -> str:
    """Where a pid means one process: the host name, plus the boot id and the pid namespace
    where Linux tells them (containers sharing a host name keep their own pids apart, and a
    reboot is a new space). A lease whose pid is dead in this space is taken over at once."""
    parts = [socket.gethostname()]
    try:
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8])
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:
        pass
    return "/".join(parts)


@dataclass(frozen=True)
class ForeignLeases:
    """Live leases of other workers on the questions a pass wants."""

    count: int
    holders: tuple[str, ...]  # "host pid N" of each holder

    def describe(self) -> str:
        return f"{self.count} question(s) leased by {', '.join(self.holders)}"


@dataclass
class Claim:
    """What one claim did with its candidates (finished ones are dropped)."""

    claimed: list[str]
    foreign: list[str]  # leased by another live worker
    unclaimed: list[str]  # free, beyond the limit


class Leases:
    """The lease operations of ``SignalStore`` (its ``leases`` table)."""

    _conn: Any

    def _errors(self, doing: str) -> AbstractContextManager[None]:
        raise NotImplementedError

    def now(self) -> float:
        raise NotImplementedError

    def _x(self, sql: str, params: Iterable[Any] = ()) -> Any:
        raise NotImplementedError

    def _xm(self, sql: str, rows: Iterable[Iterable[Any]]) -> int:
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _held_leases(self, baseline_run_id: str, diag_fingerprint: str,
                     candidates: list[str]) -> tuple[Held, set[str]]:
        """Inside the claim's transaction, which holds the lease table (SQLite: the whole
        database, BEGIN IMMEDIATE): the leases of ``candidates``, and those another claim is
        taking right now (none here; PostgreSQL skips rows locked by another claim)."""
        self._conn.commit()
        self._conn.execute("BEGIN IMMEDIATE")
        marks = ", ".join("?" for _ in candidates)
        held = {r[0]: r[1:] for r in self._x(
            "SELECT question_id, owner, host, pid, expires_at FROM leases WHERE "
            f"baseline_run_id = ? AND diag_fingerprint = ? AND question_id IN ({marks})",
            (baseline_run_id, diag_fingerprint, *candidates))}
        return held, set()

    def _live(self, host: str, pid: int, expires_at: float, now: float, me: LeaseOwner) -> bool:
        if expires_at <= now:
            return False
        # a worker of this host whose process is gone holds nothing (SIGKILL, power loss)
        return not (host == me.host and pid != me.pid and not pid_alive(pid))

    def claim(self, baseline_run_id: str, diag_fingerprint: str, candidates: list[str],
              me: LeaseOwner, limit: int, ttl_s: float,
              degraded_before: float = float("inf")) -> Claim:
        """Lease up to ``limit`` of ``candidates`` (in their order) that are not finished and not
        leased by another live worker, in one transaction. A degraded row counts as not
        finished only if it was written before ``degraded_before`` (a row degraded after a pass
        started is retried by the run that wrote it, not by every run)."""
        result = Claim([], [], [])
        if not candidates:
            return result
        now = self.now()
        marks = ", ".join("?" for _ in candidates)
        with self._errors("lease questions in"), self._tx():
            held, busy = self._held_leases(baseline_run_id, diag_fingerprint, candidates)
            done = {r[0] for r in self._x(
                "SELECT question_id FROM signals WHERE baseline_run_id = ? AND "
                f"diag_fingerprint = ? AND question_id IN ({marks}) AND {DONE}",
                (baseline_run_id, diag_fingerprint, *candidates, degraded_before))}
            for qid in candidates:
                if qid in done:
                    continue
                lease = held.get(qid)
                if qid in busy or lease is not None and lease[0] != me.owner and self._live(
                        lease[1], lease[2], lease[3], now, me):
                    result.foreign.append(qid)
                elif len(result.claimed) < limit:
                    result.claimed.append(qid)
                else:
                    result.unclaimed.append(qid)
            self._xm(_TAKE, [(baseline_run_id, diag_fingerprint, qid, me.owner, me.host, me.pid,
                              now + ttl_s, now) for qid in result.claimed])
        return result

    def foreign_leases(self, baseline_run_id: str, diag_fingerprint: str,
                       question_ids: Iterable[str], me: LeaseOwner) -> ForeignLeases:
        """Live leases of other workers among ``question_ids``."""
        wanted = set(question_ids)
        now = self.now()
        holders: dict[str, int] = {}
        count = 0
        with self._errors("read"):
            for qid, owner, host, pid, expires in self._x(
                    "SELECT question_id, owner, host, pid, expires_at FROM leases WHERE "
                    "baseline_run_id = ? AND diag_fingerprint = ?",
                    (baseline_run_id, diag_fingerprint)):
                if qid in wanted and owner != me.owner and self._live(host, pid, expires, now,
                                                                       me):
                    count += 1
                    holders[f"host {host} pid {pid}"] = 1
        return ForeignLeases(count, tuple(sorted(holders)))

    def heartbeat(self, me: LeaseOwner, ttl_s: float) -> None:
        """Extend every lease ``me`` holds."""
        now = self.now()
        with self._errors("write"), self._tx():
            self._x("UPDATE leases SET expires_at = ?, heartbeat_at = ? WHERE owner = ?",
                    (now + ttl_s, now, me.owner))

    def release(self, me: LeaseOwner) -> None:
        """Drop every lease ``me`` still holds (a pass that ended, finished or not)."""
        with self._errors("write"), self._tx():
            self._x("DELETE FROM leases WHERE owner = ?", (me.owner,))
