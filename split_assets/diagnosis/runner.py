"""One diagnosis pass: workers take leased questions in order, the judge answers, each row is
committed (grouped per event-loop turn) before a worker moves on; what ends degraded or
unanswered gets one more pass in the same run.

``diagnose(judge, inputs, partition, plan, store)`` receives the partition's judge, the
config's inputs (the cases are read from them batch by batch), the plan and an open signal
store; it returns a ``DiagnosisReport`` (``diagnosis_report.py``)."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from split_assets.diagnosis.cases import CaseSource
from split_assets.diagnosis.diagnosis_report import DiagnosisReport, degraded_ids, progress_line
from split_assets.diagnosis.leased_queue import GroupCommit, LeasedQueue
from split_assets.diagnosis.plan import DiagnosisPlan
from split_assets.errors import ConfigError, UserError
from split_assets.judge import JudgeOutcome
from split_assets.lib.failpoints import failpoint
from split_assets.sources.harness_db import CanonicalPrediction
from split_assets.store.leases import LeaseOwner
from split_assets.store.signals import SignalRow, SignalStore

if TYPE_CHECKING:
    from split_assets.judge import Judge
    from split_assets.workspace.inputs import Inputs
    from split_assets.workspace.partition import Partition

RULES_IN_FLIGHT = 8  # a judge that calls nothing (the rules judge): twice as many workers


class _Pass:
    """One pass over ``todo``. The judge bounds the calls in flight (the openai judge learns
    how many, up to diag.concurrency, around each network call); twice as many workers take
    questions in order, so the next prompt is already rendered when a call slot frees, and
    parsing and storing never hold a slot. ``written`` records when this pass wrote each row."""

    def __init__(self, judge: Judge, partition: Partition, source: CaseSource,
                 todo: list[CanonicalPrediction], store: SignalStore, report: DiagnosisReport,
                 me: LeaseOwner, degraded_before: float,
                 written: dict[str, float] | None = None) -> None:
        self.judge, self.partition, self.source = judge, partition, source
        self.store, self.report, self.me = store, report, me
        self.by_id = {p.question_id: p for p in todo}
        # the openai judge: up to diag.concurrency calls in flight; the rules judge calls
        # nothing, and more workers would only cost task switches
        in_flight = getattr(judge, "max_in_flight", RULES_IN_FLIGHT)
        self.n_workers = min(len(todo), 2 * in_flight)
        self.queue = LeasedQueue(partition, store, list(self.by_id), me, max(8, self.n_workers),
                                 degraded_before, self._claimed)
        self.committer = GroupCommit(store, me, written)
        self.mine: set[str] = set()

    async def _claimed(self, ids: list[str]) -> None:
        """Read what a claimed batch needs on a thread: a scan of an unindexed traces table
        takes a second, and every answer arriving meanwhile would look queued that long."""
        preds = [self.by_id[q] for q in ids]
        self.source.take(preds, await asyncio.to_thread(self.source.read, preds))

    async def run(self, progress: Callable[[str], None], every_s: float) -> set[str]:
        """The questions this pass diagnosed."""
        from split_assets.judge.prompts import load_templates

        started = time.monotonic()
        judge = self.judge
        judge.start(self.store, self.partition.key,
                    load_templates(self.partition.paths.prompts_dir,
                                   judge.required_templates()))
        background = [asyncio.create_task(self._ticker(progress, every_s, started)),
                      asyncio.create_task(self._heartbeat(progress))]
        tasks: list[asyncio.Task[None]] = []
        results: list[Any] = []
        lost: list[BaseException] = []
        _end_on_lost_interrupts(tasks, lost)
        try:
            for _ in range(self.n_workers):
                tasks.append(asyncio.create_task(self._worker()))
                # one loop turn per worker started: its request reaches the socket before the
                # next worker renders (else the first wave waits for every worker's prompt)
                await asyncio.sleep(0)
            results = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            for task in background + tasks:
                task.cancel()
            offset = self.report.wall_s  # a second pass follows the first
            self.report.concurrency += [(round(offset + t, 3), limit) for t, limit in
                                        getattr(judge, "concurrency_history", list)()]
            await judge.aclose()
            self.store.flush()  # telemetry of calls that ended without a diagnosis row
            self.store.release(self.me)
            self.report.wall_s += time.monotonic() - started
        progress(progress_line(self.report.diagnosed, len(self.by_id), self.report.wall_s,
                               self.report))
        if lost:  # an interrupt raised in a loop callback: the pass ends with it
            raise lost[0]
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:  # the first user error (e.g. a 401) wins over a breaker that opened after it
            raise next((e for e in errors if isinstance(e, UserError)), errors[0])
        return self.mine

    async def _worker(self) -> None:
        while (qid := await self.queue.next()) is not None:  # each question to one worker
            p = self.by_id[qid]
            await self._store(p, await self.judge.diagnose(self.source.case(p)))
            self.source.drop(p)

    async def _store(self, p: CanonicalPrediction, outcome: JudgeOutcome) -> None:
        report = self.report
        report.calls += outcome.calls
        if outcome.call_failed:  # no verdict: no row; the question stays open for a retry
            report.failed_now.add(p.question_id)
            return
        failpoint("diagnosis.before_commit")
        # committed before moving on: a crash loses nothing finished
        await self.committer.commit(signal_row(self.partition, p, outcome))
        failpoint("diagnosis.after_commit")
        self.mine.add(p.question_id)
        report.failed_now.discard(p.question_id)
        report.diagnosed += 1
        report.degraded += outcome.diagnosis is None
        report.cache_hits += outcome.cache_hits
        report.prompt_tokens += outcome.prompt_tokens
        report.cached_tokens += outcome.cached_tokens
        report.completion_tokens += outcome.completion_tokens
        if outcome.calls:
            report.latencies_ms.append(outcome.latency_ms)

    async def _ticker(self, progress: Callable[[str], None], every_s: float,
                      started: float) -> None:
        """Progress at least every ``every_s``, even when stalled."""
        while True:
            await asyncio.sleep(every_s)
            line = progress_line(self.report.diagnosed, len(self.by_id),
                                 time.monotonic() - started, self.report)
            history = getattr(self.judge, "concurrency_history", list)()
            if history:
                line += f", concurrency {history[-1][1]}"
            if self.queue.waited:
                line += "; waiting for questions leased by another run"
            progress(line)

    async def _heartbeat(self, progress: Callable[[str], None]) -> None:
        """Keeps this pass's leases alive while it works."""
        while True:
            await asyncio.sleep(self.queue.ttl_s / 4)
            try:
                self.store.heartbeat(self.me, self.queue.ttl_s)
            except UserError as exc:  # e.g. locked for a while: the next beat tries again
                progress(f"lease heartbeat failed ({exc.what}); retrying")


def _end_on_lost_interrupts(tasks: list[asyncio.Task[None]], lost: list[BaseException]) -> None:
    """asyncio logs and drops a BaseException other than KeyboardInterrupt and SystemExit
    that a loop callback raises -- Dagster's interrupt inside a step is one -- and whatever
    that callback was to wake would wait for ever. Such an exception is kept in ``lost`` and
    cancels the workers, so the pass ends (its leases released) and re-raises it."""
    loop = asyncio.get_running_loop()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, BaseException) and not isinstance(exc, Exception):
            lost.append(exc)
            for task in tasks:
                task.cancel()
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handle)


def signal_row(partition: Partition, p: CanonicalPrediction,
               outcome: JudgeOutcome) -> SignalRow:
    """The row of one judged answer (degraded when the judge gave no valid diagnosis)."""
    d = outcome.diagnosis
    return SignalRow(
        question_id=p.question_id, baseline_run_id=partition.run_id,
        diag_fingerprint=partition.key, video_id=p.video_id, task_type=p.task_type,
        tier=d.tier if d else "T1", error_type=d.error_type if d else None,
        cause_category=d.cause_category if d else None,
        evolution_target=d.evolution_target if d else None, degraded=d is None,
        session_id=p.session_id,
        rationale=d.rationale if d else (outcome.degraded_reason or "no valid diagnosis"),
        confidence=d.confidence if d else None, reported_model=outcome.reported_model,
        prompt_tokens=outcome.prompt_tokens, completion_tokens=outcome.completion_tokens,
        latency_ms=outcome.latency_ms)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while loading many records: each collection would rescan
    everything loaded so far (half of the trace load's time on 1,000 questions)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def _long_lived_inputs_frozen() -> Iterator[None]:
    """While diagnosing, keep the cyclic garbage collector off the inputs loaded so far (the
    benchmark, predictions, traces): they live for the whole pass, and rescanning them in every
    full collection stalled the event loop for tens of ms, leaving call slots idle. The many
    short-lived objects of each call are still collected (gen-0 threshold raised, not off)."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(threshold[0], 10_000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def diagnose(judge: Judge | None, inputs: Inputs, partition: Partition, plan: DiagnosisPlan,
             store: SignalStore, progress: Callable[[str], None] = lambda _: None,
             progress_every_s: float = 10.0) -> DiagnosisReport:
    """Carry out ``plan`` under per-question leases, sharing the work with any other live run
    of the partition (``refuse_if_leased`` is --no-wait's check); what ends degraded, or got no
    answer from the endpoint, gets one more pass in the same run. Questions the plan settled
    (degraded, accepted by a frozen split) are not sent again, so that split stays what it
    is. ``judge`` is None for a stale partition, which can have nothing left to diagnose."""
    todo = plan.todo
    if judge is None and todo:
        raise ConfigError(f"partition {partition.key} is stale: it can be re-frozen from its "
                          "stored diagnoses, not diagnosed again", f"judge of {partition.key}",
                          "materialize the current config's partition")
    report = DiagnosisReport(total_wrong=len(plan.wrong), already_done=plan.already_done,
                             settled_degraded=len(plan.settled))
    store.record_fingerprint(partition.key, partition.fingerprint.components)  # for --diff
    me = LeaseOwner.this_process()
    if judge is not None and todo:
        with _collector_paused():  # a bulk load of acyclic records: nothing to collect yet
            source = CaseSource(inputs, todo, batched=True)
        with _long_lived_inputs_frozen():
            mine = _two_passes(judge, partition, source, todo, store, report, me, progress,
                               progress_every_s)
        rows = {r.question_id: r for r in store.rows(partition.run_id, partition.key)}
        report.mine = mine
        report.by_others = {p.question_id for p in todo if p.question_id not in mine
                            and p.question_id in rows and not rows[p.question_id].degraded}
        report.call_failures = sorted(p.question_id for p in todo if p.question_id not in rows)
    wrong_ids = {p.question_id for p in plan.wrong}
    report.still_degraded = sorted(degraded_ids(store, partition, wrong_ids) - plan.settled)
    return report


def _two_passes(judge: Judge, partition: Partition, source: CaseSource,
                todo: list[CanonicalPrediction], store: SignalStore, report: DiagnosisReport,
                me: LeaseOwner, progress: Callable[[str], None], every_s: float) -> set[str]:
    """The pass over ``todo``, then one more over what it degraded (unless another run has
    retried it since) or got no answer for."""
    written: dict[str, float] = {}
    mine = asyncio.run(_Pass(judge, partition, source, todo, store, report, me, store.now(),
                             written).run(progress, every_s))
    now = store.updated_at(partition.run_id, partition.key, mine)
    again = {q for q in degraded_ids(store, partition, mine)
             if now.get(q) == written.get(q)} | report.failed_now
    retry = [p for p in todo if p.question_id in again]
    if retry:
        report.retried_degraded = len(retry)
        progress(f"{len(retry)} diagnosis(es) degraded or unanswered: one more pass")
        mine |= asyncio.run(_Pass(judge, partition, source, retry, store, report, me,
                                  float("inf")).run(progress, every_s))
    return mine


def refuse_if_leased(partition: Partition, store: SignalStore, plan: DiagnosisPlan) -> None:
    """--no-wait: refuse at once (UserError) while another live run holds leases on the
    questions to diagnose, instead of sharing the work."""
    foreign = store.foreign_leases(partition.run_id, partition.key, plan.todo_ids,
                                   LeaseOwner.this_process())
    if foreign.count:
        raise UserError(f"another run is diagnosing this partition ({foreign.describe()})",
                        f"{partition.key} in {partition.paths.signals_db}",
                        "wait for it to finish, or run without --no-wait to share the work")
