"""The pipeline's steps as plain functions over plain data (no Dagster).

The assets (``assets.py``) and the CLI are thin shells over these; the tests call them directly.
"""

from __future__ import annotations

import asyncio
import difflib
import gc
import json
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from split_assets.config import LoadedConfig
from split_assets.data.benchmark import Benchmark, load_benchmark
from split_assets.data.harness import (
    CanonicalPrediction,
    canonical_predictions,
    load_traces,
    predictions_digest,
    run_ids,
)
from split_assets.data.signals import LeaseOwner, SignalRow, SignalStore, env_seconds
from split_assets.data.store import (
    VideoTree,
    first_missing_tree,
    load_skills,
    load_tree,
    skills_digest,
)
from split_assets.errors import ConfigError, InfeasibleSplitError, InputError, UserError
from split_assets.fingerprint import Fingerprint, compute_fingerprint
from split_assets.judge import Judge, JudgeCase, JudgeOutcome, build_judge
from split_assets.judge.prompts import load_templates
from split_assets.lib.canonical import digest_of
from split_assets.lib.failpoints import failpoint
from split_assets.split.freeze import MANIFEST_FILE, POOLS_FILE, build_pools, split_id
from split_assets.split.invariants import InvariantResult
from split_assets.split.problem import SplitProblem, SplitQuestion
from split_assets.split.validation import draw_validation


@dataclass
class Context:
    """A validated config with the judge and fingerprint it describes."""

    loaded: LoadedConfig
    judge: Judge
    fingerprint: Fingerprint

    @property
    def run_id(self) -> str:
        return self.loaded.config.video_split.baseline_run_id

    @property
    def split_id(self) -> str:
        vs = self.loaded.config.video_split
        return split_id(vs.baseline_run_id, vs.identity())

    @property
    def out_dir(self) -> Path:
        return self.loaded.paths.out_dir / self.fingerprint.key / self.split_id


def make_context(loaded: LoadedConfig) -> Context:
    """Build the judge and compute the fingerprint (config and prompt errors surface here)."""
    judge = build_judge(loaded.config.diag)
    return Context(loaded, judge, compute_fingerprint(loaded, judge))


def check_partition(ctx: Context, partition_key: str) -> None:
    """A partition must be the fingerprint of the config it is materialized with."""
    if partition_key != ctx.fingerprint.key:
        raise ConfigError(
            f"partition {partition_key} is not the fingerprint of the current config "
            f"({ctx.fingerprint.key})", str(ctx.loaded.path),
            f"materialize partition {ctx.fingerprint.key} (register it with "
            "'split-assets fingerprint --register') or restore the config that made "
            f"{partition_key}")


# ---------------------------------------------------------------- inputs -----------------

def load_inputs(ctx: Context) -> tuple[Benchmark, list[CanonicalPrediction]]:
    """The benchmark and the baseline's canonical predictions, with floor_k keys and balance
    fields checked (before anything is diagnosed)."""
    vs = ctx.loaded.config.video_split
    paths = ctx.loaded.paths
    benchmark = load_benchmark(paths.questions_dir, vs.difficulty_field)
    check_floor_keys(vs.floor_k, benchmark.task_types)
    balance_values(benchmark, vs.balance)
    preds = canonical_predictions(paths.harness_db, vs.baseline_run_id, benchmark,
                                  vs.infra_stop_reasons, vs.missing_predictions)
    return benchmark, preds


def check_floor_keys(floor_k: dict[str, int], task_types: list[str]) -> None:
    """Every floor_k key must be a task type of the benchmark (a typo would silently floor 0)."""
    for key in sorted(floor_k):
        if key not in task_types:
            close = difflib.get_close_matches(key, task_types, n=3, cutoff=0.4)
            hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                    else f"task types are: {', '.join(task_types)}")
            raise ConfigError(f"floor_k names task type {key!r}, which is not in the benchmark",
                              "video_split.floor_k", hint)


def check_before_diagnosis(ctx: Context, benchmark: Benchmark,
                           preds: list[CanonicalPrediction], store: SignalStore) -> None:
    """Every feasibility check that needs only counts, made before any judge call (a paid
    judge must not be paid for a split that cannot be made): n_trainval against the videos,
    val_wrong_min against the most wrong answers any validation draw can hold, and each floor
    against the T2 already known plus the wrong answers not yet diagnosed."""
    vs = ctx.loaded.config.video_split
    n_videos = len(benchmark.videos)
    if vs.n_trainval >= n_videos:
        raise ConfigError(f"n_trainval is {vs.n_trainval} but the benchmark has {n_videos} "
                          "videos, which leaves no test pool", "video_split.n_trainval",
                          f"set it below {n_videos} (test is every other video)")
    n_val = int(vs.val_ratio * vs.n_trainval + 0.5)
    wrong_by_video = Counter(p.video_id for p in preds if not p.correct)
    most = sum(sorted(wrong_by_video.values(), reverse=True)[:n_val])
    if vs.val_wrong_min > most:
        raise ConfigError(f"val_wrong_min {vs.val_wrong_min} cannot be met: {n_val} validation "
                          f"videos hold at most {most} baseline-wrong questions",
                          "video_split.val_wrong_min",
                          "lower val_wrong_min, or raise val_ratio or n_trainval")
    if not vs.floor_k:
        return
    rows = {r.question_id: r for r in store.rows(ctx.run_id, ctx.fingerprint.key)}
    known: Counter[str] = Counter()
    open_: Counter[str] = Counter()
    for p in wrong_to_diagnose(preds):
        row = rows.get(p.question_id)
        if row is None or row.degraded or row.infra:
            open_[p.task_type] += 1
        elif row.tier == "T2":
            known[p.task_type] += 1
    short = [f"{t}: floor {k}, at most {known[t] + open_[t]} ({known[t]} T2 known, "
             f"{open_[t]} not yet diagnosed)"
             for t, k in sorted(vs.floor_k.items()) if k > known[t] + open_[t]]
    if short:
        raise InfeasibleSplitError(f"floor_k cannot be met even if every open diagnosis were "
                                   f"T2: {'; '.join(short)}", "video_split.floor_k",
                                   "lower these floors (nothing was sent to the judge)")


def wrong_to_diagnose(preds: list[CanonicalPrediction]) -> list[CanonicalPrediction]:
    """Wrong, non-INFRA answers: the ones the judge sees."""
    return [p for p in preds if not p.correct and not p.infra]


def infra_rows(preds: list[CanonicalPrediction], ctx: Context) -> list[SignalRow]:
    """T0 rows for every wrong INFRA answer (never sent to the judge)."""
    return [SignalRow(question_id=p.question_id, baseline_run_id=ctx.run_id,
                      diag_fingerprint=ctx.fingerprint.key, video_id=p.video_id,
                      task_type=p.task_type, tier="T0", infra=True, session_id=p.session_id,
                      rationale=infra_cause(p))
            for p in preds if not p.correct and p.infra]


def infra_cause(p: CanonicalPrediction) -> str:
    """Why an answer counts as INFRA: missing prediction, stop reason, or no letter."""
    if p.missing:
        return "missing_prediction"
    if p.letter == "":
        return f"empty_prediction ({p.stop_reason})" if p.stop_reason else "empty_prediction"
    return f"stop_reason:{p.stop_reason}"


# ---------------------------------------------------------------- diagnosis --------------

class CaseSource:
    """The judge's view of each prediction. ``full`` context reads every trace and skill up
    front and fails loud when a trace or tree is missing; trees are parsed on first use (once
    per video), so diagnosis starts without waiting for all of them."""

    def __init__(self, ctx: Context, benchmark: Benchmark,
                 preds: list[CanonicalPrediction]) -> None:
        self.benchmark = benchmark
        self.full = ctx.loaded.config.diag.context == "full" and bool(preds)
        self._trees: dict[str, VideoTree] = {}
        self.references = reference_outcomes(ctx, benchmark) if preds else {}
        if not self.full:
            return
        paths = ctx.loaded.paths
        self.store_dir = paths.store_dir
        self.traces = load_traces(paths.harness_db, ctx.run_id, [p.question_id for p in preds])
        missing = [p.question_id for p in preds if not self.traces.get(p.question_id)]
        if missing:
            raise InputError(f"{len(missing)} wrong answer(s) have no trace in run "
                             f"{ctx.run_id!r} (e.g. {', '.join(missing[:5])})",
                             "harness db traces",
                             "record the traces, or use diag.context: answer_only")
        self.skills = load_skills(paths.store_dir, ctx.loaded.config.diag.skills_version)
        missing = first_missing_tree(paths.store_dir, sorted({p.video_id for p in preds}))
        if missing is not None:
            load_tree(paths.store_dir, missing)  # raises the missing-tree error

    def case(self, p: CanonicalPrediction) -> JudgeCase:
        question = self.benchmark.by_id[p.question_id]
        refs = self.references.get(p.question_id, ())
        if not self.full:
            return JudgeCase(question, p, reference_wrong=refs)
        tree = self._trees.get(p.video_id)
        if tree is None:
            tree = self._trees[p.video_id] = load_tree(self.store_dir, p.video_id)
        return JudgeCase(question, p, self.traces[p.question_id], tree, self.skills, refs)


def reference_outcomes(ctx: Context, benchmark: Benchmark) -> dict[str, tuple[bool | None, ...]]:
    """Per question, one entry per ``diag.reference_runs`` run: True wrong, False correct, None
    no usable answer (missing or INFRA; reference runs may be partial)."""
    runs = ctx.loaded.config.diag.reference_runs
    if not runs:
        return {}
    db, vs = ctx.loaded.paths.harness_db, ctx.loaded.config.video_split
    present = run_ids(db)
    absent = [r for r in runs if r not in present]
    if absent:
        raise InputError(f"reference run(s) {', '.join(map(repr, absent))} not in the harness "
                         f"database (runs present: {', '.join(present) or 'none'})",
                         "diag.reference_runs",
                         "import them ('split-assets import ...') or remove them from the list")
    per_run = []
    for run in runs:
        preds = canonical_predictions(db, run, benchmark, vs.infra_stop_reasons, "infra")
        per_run.append({p.question_id: None if p.infra else not p.correct for p in preds})
    return {qid: tuple(outcome[qid] for outcome in per_run) for qid in benchmark.by_id}


def control_outcomes(ctx: Context, benchmark: Benchmark) -> dict[str, bool | None] | None:
    """The control run's correctness per question (None: no usable answer), or None when no
    ``evaluation.control_run`` is set or it is not in the harness db (yet)."""
    run = ctx.loaded.config.evaluation.control_run
    db = ctx.loaded.paths.harness_db
    if run is None or run not in run_ids(db):
        return None
    preds = canonical_predictions(db, run, benchmark,
                                  ctx.loaded.config.video_split.infra_stop_reasons, "infra")
    return {p.question_id: None if p.infra else p.correct for p in preds}


def build_cases(ctx: Context, benchmark: Benchmark,
                preds: list[CanonicalPrediction]) -> list[JudgeCase]:
    """Every case at once (the dry run, tests)."""
    source = CaseSource(ctx, benchmark, preds)
    return [source.case(p) for p in preds]


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
        except Exception as exc:  # noqa: BLE001 - handed to every waiting worker
            for waiter in waiters:
                waiter.set_exception(exc)
            return
        self.transactions += 1
        self.written.update((row.question_id, written) for row in rows)
        for waiter in waiters:
            waiter.set_result(None)


@dataclass
class DiagnosisReport:
    """What one diagnosis pass did (asset metadata)."""

    total_wrong: int
    already_done: int
    diagnosed: int = 0
    degraded: int = 0
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    retried_degraded: int = 0  # degraded in the first pass, sent once more in the same run
    by_other_runs: int = 0  # finished meanwhile by another run of the same partition
    still_degraded: list[str] = field(default_factory=list)
    failed_now: set[str] = field(default_factory=set)
    settled_degraded: int = 0  # accepted as degraded by the frozen split: never sent again
    call_failures: list[str] = field(default_factory=list)  # no answer from the endpoint


LEASE_TTL_S = 60.0  # SPLIT_ASSETS_LEASE_TTL_S overrides it (checked when a pass starts)
LEASE_POLL_S = 0.5


def lease_ttl_s() -> float:
    return env_seconds("SPLIT_ASSETS_LEASE_TTL_S", LEASE_TTL_S, 2.0)


class LeasedQueue:
    """Questions for this pass, handed out only once leased in the signal store: a question
    leased by another live run is deferred and looked at again until that run finishes it
    (then it is skipped) or its lease expires (then it is taken over)."""

    def __init__(self, ctx: Context, store: SignalStore, todo: list[str], me: LeaseOwner,
                 batch: int, degraded_before: float) -> None:
        self.ctx, self.store, self.me, self.batch = ctx, store, me, batch
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
                result = self.store.claim(self.ctx.run_id, self.ctx.fingerprint.key, window,
                                          self.me, self.batch, self.ttl_s, self.degraded_before)
                failpoint("diagnosis.claimed")
                self._ready.extend(result.claimed)
                self._deferred.extend(result.foreign)
                self._queue.extendleft(reversed(result.unclaimed))


async def _diagnose_all(ctx: Context, source: CaseSource, todo: list[CanonicalPrediction],
                        store: SignalStore, report: DiagnosisReport,
                        progress: Callable[[str], None], progress_every_s: float,
                        me: LeaseOwner, degraded_before: float,
                        written: dict[str, float] | None = None) -> set[str]:
    """One pass over ``todo``; returns the questions this pass diagnosed (and records in
    ``written`` when it wrote each row)."""
    # diag.concurrency bounds the calls in flight (the judge holds that semaphore around each
    # network call); twice as many workers take questions in order, so the next prompt is
    # already rendered when a call slot frees, and parsing and storing never hold a slot.
    started = time.monotonic()
    templates = load_templates(ctx.loaded.paths.prompts_dir, ctx.judge.required_templates())
    ctx.judge.start(store, ctx.fingerprint.key, templates)
    by_id = {p.question_id: p for p in todo}
    n_workers = min(len(todo), 2 * ctx.loaded.config.diag.concurrency)
    queue = LeasedQueue(ctx, store, list(by_id), me, max(8, n_workers), degraded_before)
    committer = GroupCommit(store, me, written)
    mine: set[str] = set()
    failed = report.failed_now

    async def worker() -> None:
        while (qid := await queue.next()) is not None:  # each question to exactly one worker
            p = by_id[qid]
            await store_outcome(p, await ctx.judge.diagnose(source.case(p)))

    async def store_outcome(p: CanonicalPrediction, outcome: JudgeOutcome) -> None:
        report.calls += outcome.calls
        if outcome.call_failed:  # no verdict: no row; the question stays open for a retry
            failed.add(p.question_id)
            return
        d = outcome.diagnosis
        row = SignalRow(
            question_id=p.question_id, baseline_run_id=ctx.run_id,
            diag_fingerprint=ctx.fingerprint.key, video_id=p.video_id, task_type=p.task_type,
            tier=d.tier if d else "T1", error_type=d.error_type if d else None,
            cause_category=d.cause_category if d else None,
            evolution_target=d.evolution_target if d else None, degraded=d is None,
            session_id=p.session_id,
            rationale=d.rationale if d else (outcome.degraded_reason or "no valid diagnosis"),
            confidence=d.confidence if d else None, reported_model=outcome.reported_model,
            prompt_tokens=outcome.prompt_tokens, completion_tokens=outcome.completion_tokens,
            latency_ms=outcome.latency_ms)
        failpoint("diagnosis.before_commit")
        await committer.commit(row)  # committed before moving on: a crash loses nothing finished
        failpoint("diagnosis.after_commit")
        mine.add(p.question_id)
        failed.discard(p.question_id)
        report.diagnosed += 1
        report.degraded += d is None
        report.cache_hits += outcome.cache_hits
        report.prompt_tokens += outcome.prompt_tokens
        report.completion_tokens += outcome.completion_tokens
        if outcome.calls:
            report.latencies_ms.append(outcome.latency_ms)

    async def ticker() -> None:  # progress at least every progress_every_s, even when stalled
        while True:
            await asyncio.sleep(progress_every_s)
            line = progress_line(report.diagnosed, len(todo), time.monotonic() - started, report)
            if queue.waited:
                line += "; waiting for questions leased by another run"
            progress(line)

    async def heartbeat() -> None:  # keeps this pass's leases alive while it works
        while True:
            await asyncio.sleep(queue.ttl_s / 4)
            try:
                store.heartbeat(me, queue.ttl_s)
            except UserError as exc:  # e.g. locked for a while: the next beat tries again
                progress(f"lease heartbeat failed ({exc.what}); retrying")

    background = [asyncio.create_task(ticker()), asyncio.create_task(heartbeat())]
    tasks: list[asyncio.Task[None]] = []
    results: list[Any] = []
    try:
        for _ in range(n_workers):
            tasks.append(asyncio.create_task(worker()))
            # one loop turn per worker started: its request reaches the socket before the next
            # worker renders (else the first wave waits for every worker's first prompt)
            await asyncio.sleep(0)
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for task in background + tasks:
            task.cancel()
        await ctx.judge.aclose()
        store.flush()  # telemetry of calls that ended without a diagnosis row
        store.release(me)
        report.wall_s += time.monotonic() - started
    progress(progress_line(report.diagnosed, len(todo), report.wall_s, report))
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:  # the first user error (e.g. a 401) wins over a breaker that opened after it
        raise next((e for e in errors if isinstance(e, UserError)), errors[0])
    return mine


def progress_line(done: int, total: int, elapsed_s: float, report: DiagnosisReport) -> str:
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else 0.0
    calls_rate = report.calls / elapsed_s if elapsed_s > 0 else 0.0
    return (f"diagnosis {done}/{total} ({rate:.1f}/s, ETA {eta:.0f}s, calls {report.calls} "
            f"({calls_rate:.1f}/s), cache hits {report.cache_hits}, "
            f"tokens spent {report.prompt_tokens + report.completion_tokens})")


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


def diagnose(ctx: Context, benchmark: Benchmark, preds: list[CanonicalPrediction],
             store: SignalStore, progress: Callable[[str], None] = lambda _: None,
             progress_every_s: float = 10.0, wait: bool = True,
             settled: frozenset[str] = frozenset()) -> DiagnosisReport:
    """Diagnose each wrong, non-INFRA answer not yet done (or degraded) for (run, fingerprint),
    under per-question leases; what ends degraded, or got no answer from the endpoint, gets one
    more pass in the same run.

    ``settled``: degraded questions a frozen split accepted (``--allow-degraded``); they are not
    sent again, so that split stays what it is. ``wait=False`` refuses at once (UserError) when
    another live run holds leases on the questions to diagnose, instead of sharing the work."""
    wrong = wrong_to_diagnose(preds)
    done = store.done_question_ids(ctx.run_id, ctx.fingerprint.key)
    todo = [p for p in wrong if p.question_id not in done and p.question_id not in settled]
    report = DiagnosisReport(total_wrong=len(wrong), already_done=len(wrong) - len(todo),
                             settled_degraded=len(settled & {p.question_id for p in wrong}))
    me = LeaseOwner.this_process()
    if todo and not wait:
        foreign = store.foreign_leases(ctx.run_id, ctx.fingerprint.key,
                                       [p.question_id for p in todo], me)
        if foreign.count:
            raise UserError(f"another run is diagnosing this partition ({foreign.describe()})",
                            f"{ctx.fingerprint.key} in {ctx.loaded.paths.signals_db}",
                            "wait for it to finish, or run without --no-wait to share the work")
    if todo:
        with _collector_paused():  # a bulk load of acyclic records: nothing to collect yet
            source = CaseSource(ctx, benchmark, todo)
        with _long_lived_inputs_frozen():
            written: dict[str, float] = {}
            mine = asyncio.run(_diagnose_all(ctx, source, todo, store, report, progress,
                                             progress_every_s, me, time.time(), written))
            # retry what this pass degraded, unless another run has retried it since
            now = store.updated_at(ctx.run_id, ctx.fingerprint.key, mine)
            again = {q for q in _degraded_ids(store, ctx, mine)
                     if now.get(q) == written.get(q)} | report.failed_now
            retry = [p for p in todo if p.question_id in again]
            if retry:
                report.retried_degraded = len(retry)
                progress(f"{len(retry)} diagnosis(es) degraded or unanswered: one more pass")
                mine |= asyncio.run(_diagnose_all(ctx, source, retry, store, report, progress,
                                                  progress_every_s, me, float("inf")))
        rows = {r.question_id: r for r in store.rows(ctx.run_id, ctx.fingerprint.key)}
        report.by_other_runs = sum(1 for p in todo if p.question_id not in mine
                                   and p.question_id in rows and not rows[p.question_id].degraded)
        report.call_failures = sorted(p.question_id for p in todo if p.question_id not in rows)
    wrong_ids = {p.question_id for p in wrong}
    report.still_degraded = sorted(_degraded_ids(store, ctx, wrong_ids) - settled)
    return report


def settled_degraded(ctx: Context) -> frozenset[str]:
    """Degraded questions that the split already frozen for this config accepted
    (``--allow-degraded``): its manifest lists them."""
    manifest_path = ctx.out_dir / MANIFEST_FILE
    if not (ctx.out_dir / POOLS_FILE).is_file() or not manifest_path.is_file():
        return frozenset()
    try:
        degraded = json.loads(manifest_path.read_bytes()).get("degraded_question_ids", [])
    except (OSError, ValueError):
        return frozenset()
    return frozenset(str(q) for q in degraded) if isinstance(degraded, list) else frozenset()


def _degraded_ids(store: SignalStore, ctx: Context, among: set[str]) -> set[str]:
    return {r.question_id for r in store.rows(ctx.run_id, ctx.fingerprint.key)
            if r.degraded and not r.infra and r.question_id in among}


@dataclass(frozen=True)
class DryRunPlan:
    """What a run would cost: answers already in the response cache cost no call."""

    cached: int
    calls: int
    tokens: int


def dry_run_estimate(ctx: Context, todo: list[JudgeCase], store: SignalStore) -> DryRunPlan:
    """Calls and tokens the run would spend on ``todo``, cached answers excluded."""
    per_question = ctx.judge.estimated_calls_per_question()
    if not todo or per_question == 0:
        return DryRunPlan(0, 0, 0)
    templates = load_templates(ctx.loaded.paths.prompts_dir, ctx.judge.required_templates())
    keys = {c.question.question_id: ctx.judge.request_key(c, templates) for c in todo}
    cached = store.cache_has(k for k in keys.values() if k is not None)
    paid = [c for c in todo if keys[c.question.question_id] not in cached]
    return DryRunPlan(len(todo) - len(paid), len(paid) * per_question,
                      sum(ctx.judge.estimated_tokens(c, templates) for c in paid))


# ---------------------------------------------------------------- split ------------------

def split_questions(preds: list[CanonicalPrediction], rows: list[SignalRow], ctx: Context,
                    benchmark: Benchmark | None = None) -> list[SplitQuestion]:
    """Join predictions with their signal rows; every wrong answer must have one. The values
    of the ``video_split.balance`` fields come from the benchmark's questions."""
    by_qid = {r.question_id: r for r in rows}
    missing = [p.question_id for p in preds if not p.correct and p.question_id not in by_qid]
    if missing:
        raise InputError(f"{len(missing)} wrong answer(s) have no signal row for "
                         f"{ctx.fingerprint.key} (e.g. {', '.join(missing[:5])})",
                         str(ctx.loaded.paths.signals_db),
                         "materialize infra_t0_signals and diagnosis_signals first")
    fields = ctx.loaded.config.video_split.balance
    values: dict[str, tuple[str, ...]] = {}
    if fields:
        assert benchmark is not None, "balance fields need the benchmark"
        values = balance_values(benchmark, fields)
    out = []
    for p in preds:
        row = None if p.correct else by_qid[p.question_id]
        out.append(SplitQuestion(p.question_id, p.video_id, p.task_type, p.difficulty, p.correct,
                                 row.tier if row else None, row.degraded if row else False,
                                 values.get(p.question_id, ())))
    return out


def balance_values(benchmark: Benchmark, fields: list[str]) -> dict[str, tuple[str, ...]]:
    """Each question's values of the ``balance`` fields; a field missing on any question is a
    config error naming how many questions lack it."""
    out: dict[str, tuple[str, ...]] = {}
    if not fields:
        return out
    for name in fields:
        lacking = [q.question_id for q in benchmark.questions if q.extra.get(name) is None]
        if lacking:
            known = sorted({k for q in benchmark.questions for k in q.extra})
            raise ConfigError(f"balance field {name!r} is missing on {len(lacking)} of "
                              f"{len(benchmark.questions)} questions (e.g. {lacking[0]})",
                              "video_split.balance",
                              "list question fields every question has: "
                              + (", ".join(known) or "(the questions have no extra fields)"))
    for q in benchmark.questions:
        out[q.question_id] = tuple(str(q.extra[name]) for name in fields)
    return out


def split_problem(ctx: Context, preds: list[CanonicalPrediction], rows: list[SignalRow],
                  benchmark: Benchmark | None = None) -> SplitProblem:
    return SplitProblem.from_config(split_questions(preds, rows, ctx, benchmark),
                                    ctx.loaded.config.video_split)


def signals_digest(rows: list[SignalRow]) -> str:
    """Digest of what the split consumed of the signals (tier, degraded), order-free."""
    return digest_of(sorted([r.question_id, r.tier, r.degraded] for r in rows))


def input_digests(ctx: Context, benchmark: Benchmark, preds: list[CanonicalPrediction],
                  rows: list[SignalRow]) -> dict[str, str]:
    """Digests of the inputs, none depending on file or row order."""
    digests = {"benchmark": benchmark.digest(), "baseline_predictions": predictions_digest(preds),
               "signals": signals_digest(rows)}
    if ctx.loaded.config.diag.context == "full":
        store = ctx.loaded.paths.store_dir
        skills = load_skills(store, ctx.loaded.config.diag.skills_version)
        digests["skills"] = skills_digest(skills)
        videos = sorted({r.video_id for r in rows if not r.infra})
        digests["trees"] = digest_of({v: load_tree(store, v).digest for v in videos})
    return digests


def config_snapshot(ctx: Context) -> dict[str, Any]:
    """The config as run, paths relative to the config file's folder."""
    snap = ctx.loaded.config.model_dump(mode="json")
    paths = ctx.loaded.paths
    snap["paths"] = {name: ctx.loaded.relative(getattr(paths, name))
                     for name in ("questions_dir", "harness_db", "store_dir", "signals_db",
                                  "out_dir")}
    if snap["diag"].get("prompts_dir") is None:
        snap["diag"]["prompts_dir"] = "(shipped)"
    return snap


def tier_distribution(rows: list[SignalRow]) -> dict[str, int]:
    counts = Counter("degraded" if r.degraded else r.tier for r in rows)
    return {k: counts[k] for k in sorted(counts)}


def recompute_check(ctx: Context, benchmark: Benchmark, preds: list[CanonicalPrediction],
                    rows: list[SignalRow], problem: SplitProblem, data: bytes,
                    manifest_path: Path) -> InvariantResult:
    """Run the selection again from the inputs and compare bytes with a frozen pools.json (the
    split is deterministic: a difference is tampering or changed inputs, and the input digests
    recorded in the manifest tell which)."""
    from split_assets.split.selection import select_trainval  # scipy: loaded only when needed

    selection = select_trainval(problem)
    fresh = build_pools(problem, selection, draw_validation(problem, selection.trainval),
                        ctx.run_id, ctx.fingerprint.key, ctx.split_id)
    if fresh.data == data:
        return InvariantResult("recomputed_bytes_match", True,
                               f"the selection run again gives the same bytes "
                               f"({fresh.sha256[:12]})", {"sha256": fresh.sha256})
    changed: list[str] = []
    if manifest_path.is_file():
        old = json.loads(manifest_path.read_bytes()).get("input_digests", {})
        new = input_digests(ctx, benchmark, preds, rows)
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    why = (f"input digests changed since the freeze: {', '.join(changed)}" if changed else
           "no input digest changed: the file was edited after the freeze")
    return InvariantResult("recomputed_bytes_match", False,
                           f"the selection run again gives {fresh.sha256[:12]}; {why}",
                           {"sha256": fresh.sha256, "changed_inputs": ",".join(changed)})
