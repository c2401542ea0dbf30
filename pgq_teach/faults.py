"""Two runs that test the queue's promises on a live server, with real processes.

`run_torture` (the fault run): worker processes, each running the library's
Worker with a short lease, drain a queue while we SIGKILL them mid-job and
start replacements, freeze them (SIGSTOP) past their lease and let them go on,
end their sessions with pg_terminate_backend (LISTEN connection included), and
restart PostgreSQL once. The handler is idempotent: one effect row per job,
keyed on the job id, plus an append-only log of every call.

`run_load` (the load run): many workers, many jobs, a planned 10% of handler
calls raising, max_attempts 3, no faults injected. The plan is known in
advance, so each job's final status and attempts can be checked exactly.

Both judge the queue from the database only (lab/fault_verdict.sql): a
SIGKILLed worker's in-memory report is gone, but every state change, call and
effect was written on the server, the state changes by a trigger in the same
transaction. Worker processes never print: their output goes to a log file in
a temporary folder, read only when one crashes. Every child is stopped, or
killed, before a run returns or raises.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import psycopg
from psycopg.conninfo import make_conninfo

from . import embedded, queue
from .databases import Database
from .errors import BadInput
from .queue import _check_positive_int, as_lease
from .statements import run
from .worker import Worker

KIND = "fault_job"
OUTCOMES = ("done", "fenced", "ready", "dead")
RETRY_SECONDS = 30.0  # how long a worker's ledger writes and our own queries ride out an outage
Progress = Callable[[int, int], None]


# --- the failure plan of the load run ------------------------------------------


def planned_failure(seed: int, n: int, attempt: int, rate: float) -> bool:
    """Whether the load run's handler raises for job number n on this attempt.
    A stable hash, not random(), so the plan is the same in every process."""
    digest = hashlib.blake2b(f"{seed}:{n}:{attempt}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < rate * 2**64


def planned_error(n: int, attempt: int) -> str:
    return f"planned failure of job {n} on attempt {attempt}"


def planned_result(seed: int, n: int, rate: float, max_attempts: int) -> tuple[str, int]:
    """(status, attempts) job n must end with, if the queue keeps its promises."""
    for attempt in range(1, max_attempts + 1):
        if not planned_failure(seed, n, attempt, rate):
            return "done", attempt
    return "dead", max_attempts


# --- inside a worker process ---------------------------------------------------


class _Session:
    """One autocommit connection that rides out a terminated session or a
    server restart by reconnecting, for up to RETRY_SECONDS. A statement that
    may have landed just before the break is sent again, so use it only for
    reads and for writes that may happen twice (the ledgers count them)."""

    def __init__(self, conninfo: str, pause: float = 0.1):
        self.conninfo, self.pause = conninfo, pause
        self.conn: psycopg.Connection | None = None

    def call(self, fn: Callable[[psycopg.Connection], Any]) -> Any:
        deadline = time.monotonic() + RETRY_SECONDS
        while True:
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)
                return fn(self.conn)
            except psycopg.OperationalError:
                self.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(self.pause)

    def rows(self, name: str, params: dict | None = None) -> list:
        def go(conn):
            cur = run(conn, name, params)
            return cur.fetchall() if cur.description else []

        return self.call(go)

    def row(self, name: str) -> dict:
        def go(conn):
            cur = run(conn, name)
            return dict(zip([c.name for c in cur.description], cur.fetchone()))

        return self.call(go)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None


def _child() -> None:
    """Entry point of one worker process: its settings arrive as JSON on stdin
    (not argv, where a password in the DSN would show in `ps`). Its stdout and
    stderr are a log file the parent reads only if it crashes."""
    spec = json.loads(sys.stdin.read())
    # Ctrl-C reaches the whole process group; the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _serve(spec)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.flush()
    os._exit(0)


def _serve(spec: dict) -> None:
    name = spec["name"]
    conninfo = make_conninfo(spec["dsn"], application_name=name)
    ledger = _Session(conninfo)
    rng = random.Random(spec["seed"])
    low, high = spec["sleep_ms"]
    load = spec["mode"] == "load"

    def handle(job):
        ledger.rows("lab/fault_call", {"job_id": job.id, "attempts": job.attempts, "worker": name})
        time.sleep(rng.uniform(low, high) / 1000)
        if load:
            n = job.payload["n"]
            if planned_failure(spec["plan_seed"], n, job.attempts, spec["fail_rate"]):
                raise RuntimeError(planned_error(n, job.attempts))
        ledger.rows("lab/fault_effect", {"job_id": job.id, "attempts": job.attempts, "worker": name})

    def on_event(event, job):
        if job is None or event not in OUTCOMES:
            return
        try:
            ledger.rows("lab/fault_outcome",
                       {"job_id": job.id, "attempts": job.attempts, "worker": name, "outcome": event})
        except psycopg.Error:
            pass  # the outcome log is a lower bound; the jobs table is the truth

    worker = Worker(conninfo, {KIND: handle}, lease=spec["lease"], poll=spec["poll"], on_event=on_event)
    worker.stop_on_sigterm()
    parent = os.getppid()
    deadline = time.monotonic() + spec["max_seconds"]

    def watchdog():
        # Never outlive the run: stop if the parent dies or the run overstays.
        while not worker.stop_event.wait(0.5):
            if os.getppid() != parent or time.monotonic() > deadline:
                worker.stop()
                return

    threading.Thread(target=watchdog, daemon=True).start()
    report = worker.run()
    ledger.close()
    Path(spec["report"]).write_text(json.dumps(
        {"claimed": report.claimed, "done": report.done, "fenced": report.fenced,
         "reconnects": report.reconnects, "last_error": report.last_error}))


# --- the parent's side ---------------------------------------------------------


@dataclass
class _Child:
    name: str
    process: subprocess.Popen
    report: Path
    log: Path
    paused_until: float | None = None

    def alive(self) -> bool:
        return self.process.poll() is None


_CHILD_CODE = "from pgq_teach.faults import _child; _child()"


class _Pool:
    """The worker processes of one run: fresh interpreters (nothing of the
    caller's __main__ is re-run in them), stopped or killed by stop_all()."""

    def __init__(self, db: Database, folder: Path, mode: str, settings: dict):
        self.db, self.folder, self.mode, self.settings = db, folder, mode, settings
        self.children: dict[str, _Child] = {}
        self.started = 0
        self.crashes: list[str] = []
        self.reports: list[dict] = []
        package_root = str(Path(__file__).resolve().parent.parent)
        path = os.environ.get("PYTHONPATH")
        self.env = dict(os.environ, PYTHONPATH=package_root + (os.pathsep + path if path else ""))

    def start(self) -> _Child:
        self.started += 1
        name = f"pgq-{self.mode}-w{self.started:04d}"
        log, report = self.folder / f"{name}.log", self.folder / f"{name}.json"
        spec = dict(self.settings, name=name, dsn=self.db.dsn, mode=self.mode,
                    report=str(report), seed=self.started)
        with open(log, "wb") as out:
            process = subprocess.Popen([sys.executable, "-c", _CHILD_CODE], stdin=subprocess.PIPE,
                                       stdout=out, stderr=subprocess.STDOUT, env=self.env)
        process.stdin.write(json.dumps(spec).encode())
        process.stdin.close()
        child = _Child(name, process, report, log)
        self.children[name] = child
        return child

    def alive(self, *, paused: bool = True) -> list[_Child]:
        return [c for c in self.children.values() if c.alive() and (paused or c.paused_until is None)]

    def kill(self, child: _Child) -> None:
        child.process.kill()
        child.process.wait(10)
        del self.children[child.name]

    def pause(self, child: _Child, seconds: float) -> None:
        child.process.send_signal(signal.SIGSTOP)
        child.paused_until = time.monotonic() + seconds

    def resume_due(self, *, all_now: bool = False) -> None:
        for child in self.children.values():
            if child.paused_until is not None and (all_now or time.monotonic() >= child.paused_until):
                if child.alive():
                    child.process.send_signal(signal.SIGCONT)
                child.paused_until = None

    def collect_crashes(self) -> int:
        """Children that exited on their own: a crash. The count; the caller replaces them."""
        gone = [c for c in self.children.values() if not c.alive()]
        for child in gone:
            del self.children[child.name]
            self.crashes.append(f"{child.name} exited with code {child.process.returncode}: {_tail(child.log)}")
        return len(gone)

    def stop_all(self) -> None:
        """SIGCONT the frozen, SIGTERM everyone, wait, SIGKILL stragglers."""
        self.resume_due(all_now=True)
        for child in self.children.values():
            if child.alive():
                child.process.terminate()
        deadline = time.monotonic() + 15
        for child in self.children.values():
            try:
                child.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait(5)
                self.crashes.append(f"{child.name} did not stop within 15 s of SIGTERM")
                continue
            if child.process.returncode not in (0, -signal.SIGTERM):
                self.crashes.append(f"{child.name} exited with code {child.process.returncode}: {_tail(child.log)}")
            if child.report.exists():
                self.reports.append(json.loads(child.report.read_text()))
        self.children.clear()


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def restart_server(db: Database, folder: Path) -> tuple[bool, str]:
    """A fast restart of the server in use, where the backend allows one:
    embedded, or $PGQ_RESTART_CMD for any other. (done, how or why not)."""
    if db.server.backend == "embedded":
        embedded.restart()
        return True, "embedded.restart() (pg_ctl restart -m fast)"
    command = os.environ.get("PGQ_RESTART_CMD", "").strip()
    if not command:
        return False, f"skipped: backend {db.server.backend} and PGQ_RESTART_CMD is not set"
    # A file, not a pipe: the restarted postmaster inherits the output and would
    # hold a pipe open for good.
    with open(folder / "restart.log", "wb") as out:
        done = subprocess.run(command, shell=True, stdin=subprocess.DEVNULL, stdout=out,
                              stderr=subprocess.STDOUT, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"PGQ_RESTART_CMD exited with {done.returncode}: {_tail(folder / 'restart.log')}")
    return True, "PGQ_RESTART_CMD"


def _check_seconds(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise BadInput(f"{name} must be a number of seconds between {low} and {high}, got {value!r}")
    return float(value)


def _prepare(db: Database, jobs: int, spread: float, max_attempts: int) -> None:
    """Ledgers in place, jobs and ledgers emptied, the jobs seeded. On a plain
    connection: a seed must never be sent twice."""
    with db.connection() as conn:
        run(conn, "lab/fault_setup")
        run(conn, "lab/reset_jobs")
        run(conn, "lab/fault_reset")
        run(conn, "lab/fault_seed", {"kind": KIND, "count": jobs, "spread": timedelta(seconds=spread),
                                     "max_attempts": max_attempts})


def _admin(db: Database) -> _Session:
    """The run's own session, which reconnects across the restart we cause."""
    return _Session(make_conninfo(db.dsn, application_name="pgq-faults-orchestrator"), pause=0.2)


# --- the fault run -------------------------------------------------------------


@dataclass
class TortureReport:
    """What the fault run did and what the database says came of it."""

    server: str
    jobs: int
    workers: int
    lease: float
    chaos_seconds: float
    processes_started: int = 0
    kills: int = 0
    kills_mid_job: int = 0
    pauses: int = 0
    terminations: int = 0
    sessions_ended: int = 0
    restarts: int = 0
    restart_note: str = ""
    done: int = 0
    dead: int = 0
    lost: int = 0
    running_at_end: int = 0
    reaped_at_end: int = 0
    duplicate_effects: int = 0
    done_without_effect: int = 0
    effects_not_done: int = 0
    effects_after_done: int = 0
    fenced: int = 0
    stale_done_accepted: int = 0
    fenced_own_completion: int = 0
    overwrites: int = 0
    jobs_done_twice: int = 0
    over_attempts: int = 0
    calls: int = 0
    absorbed: int = 0
    calls_after_done: int = 0
    claims_not_completing: int = 0
    longest_overdue: float = 0.0
    reconnects_of_survivors: int = 0
    crashes: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    drain_seconds: float = 0.0
    stopped: bool = False
    verdict: dict = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        v = []
        if self.lost:
            v.append(f"{self.lost} job(s) neither done nor dead: lost")
        if self.running_at_end:
            v.append(f"{self.running_at_end} job(s) still running after a final reaper pass")
        if self.duplicate_effects:
            v.append(f"{self.duplicate_effects} duplicate effect(s)")
        if self.done_without_effect:
            v.append(f"{self.done_without_effect} done job(s) without their effect")
        if self.effects_after_done:
            v.append(f"{self.effects_after_done} effect(s) first recorded after their job was done")
        if self.stale_done_accepted:
            v.append(f"{self.stale_done_accepted} stale completion(s) accepted: not fenced")
        if self.fenced_own_completion:
            v.append(f"{self.fenced_own_completion} completing claim(s) told they were fenced")
        if self.overwrites:
            v.append(f"{self.overwrites} update(s) of a job that was already done or dead")
        if self.jobs_done_twice:
            v.append(f"{self.jobs_done_twice} job(s) marked done twice")
        if self.over_attempts:
            v.append(f"{self.over_attempts} job(s) over max_attempts")
        if self.crashes:
            v.append(f"{len(self.crashes)} worker process(es) crashed: {self.crashes[0]}")
        return v

    @property
    def ok(self) -> bool:
        return not self.violations and not self.stopped

    def summary(self) -> str:
        lines = [
            f"fault run on {self.server}",
            f"  {self.jobs:,} jobs, {self.workers} workers at a time ({self.processes_started} processes "
            f"started), lease {self.lease:g} s, faults for {self.chaos_seconds:g} s",
            f"  faults: {self.kills} SIGKILLs ({self.kills_mid_job} mid-job), {self.pauses} SIGSTOP pauses "
            f"past the lease, {self.terminations} pg_terminate_backend rounds ({self.sessions_ended} sessions), "
            f"{self.restarts} server restart(s)" + (f" [{self.restart_note}]" if self.restart_note else ""),
            f"  result: done {self.done:,}, dead {self.dead:,}, lost {self.lost}, "
            f"still running after a final reaper pass {self.running_at_end} (that pass reaped {self.reaped_at_end})",
            f"  effects: duplicate effects {self.duplicate_effects}, done without effect "
            f"{self.done_without_effect}, effects of jobs not done {self.effects_not_done}",
            f"  fencing: {self.fenced} stale completion(s) fenced (reported by workers that lived to report), "
            f"stale completions accepted {self.stale_done_accepted}, updates of finished jobs {self.overwrites}",
            f"  handler calls: {self.calls:,}, duplicate calls absorbed by the unique key {self.absorbed}, "
            f"calls that started after their job was done {self.calls_after_done}, claims that ran "
            f"but did not complete {self.claims_not_completing}",
            f"  longest a lease stayed expired before a reaper took the job back: {self.longest_overdue:.1f} s; "
            f"reconnects counted by the workers alive at the end: {self.reconnects_of_survivors}",
            f"  elapsed {self.elapsed:.1f} s (drain after the faults {self.drain_seconds:.1f} s)",
        ]
        return "\n".join(lines + _verdict_lines(self.stopped, self.violations))


def _verdict_lines(stopped: bool, violations: list[str]) -> list[str]:
    lines = ["  STOPPED before the queue drained"] if stopped else []
    return lines + ([f"  VIOLATION: {v}" for v in violations] or ["  every invariant held"])


def run_torture(
    db: Database,
    *,
    jobs: int = 2_000,
    workers: int = 4,
    seconds: float = 20.0,
    lease: float = 1.5,
    poll: float = 0.2,
    kill_every: float = 0.6,
    terminate_every: float = 1.0,
    pause_every: float = 2.0,
    restart: bool = True,
    max_attempts: int = 25,
    drain_timeout: float = 120.0,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> TortureReport:
    """Drain `jobs` jobs, falling due evenly over `seconds`, with `workers`
    worker processes while faults are injected for those `seconds`; then let
    the queue drain and judge it. Resets the jobs table of `db`."""
    jobs = _check_positive_int("jobs", jobs, 1, 1_000_000)
    workers = _check_positive_int("workers", workers, 1, 64)
    max_attempts = _check_positive_int("max_attempts", max_attempts, 1, 1_000)
    seconds = _check_seconds("seconds", seconds, 1, 86_400)
    lease = as_lease(lease).total_seconds()
    poll = _check_seconds("poll", poll, 0.01, 60)
    kill_every = _check_seconds("kill_every", kill_every, 0.05, 86_400)
    terminate_every = _check_seconds("terminate_every", terminate_every, 0.05, 86_400)
    pause_every = _check_seconds("pause_every", pause_every, 0.05, 86_400)
    drain_timeout = _check_seconds("drain_timeout", drain_timeout, 1, 86_400)
    stop = stop or threading.Event()

    report = TortureReport(db.server.line(), jobs, workers, lease, seconds)
    folder = Path(tempfile.mkdtemp(prefix="pgq-faults-"))
    admin = _admin(db)
    pool = _Pool(db, folder, "torture", {
        "lease": lease, "poll": poll, "sleep_ms": (2, 12),
        "max_seconds": seconds + drain_timeout + 60})
    rng = random.Random()
    began = time.monotonic()
    try:
        _prepare(db, jobs, seconds, max_attempts)
        for _ in range(workers):
            pool.start()
        began = time.monotonic()
        next_kill, next_term, next_pause = began + kill_every, began + terminate_every / 2, began + pause_every
        restart_at = began + 0.4 * seconds if restart else None
        chaos_end, deadline = began + seconds, began + seconds + drain_timeout
        next_look = began
        while not stop.is_set():
            now = time.monotonic()
            pool.resume_due()
            for _ in range(pool.collect_crashes()):
                pool.start()
            if now < chaos_end:
                if now >= next_kill:
                    # Aim for a worker inside a job; after half a second of
                    # finding none, take any.
                    running = pool.alive(paused=False)
                    mid = _busy(admin, running)
                    if mid or now >= next_kill + 0.5:
                        victim = rng.choice(mid or running or [None])
                        if victim is not None:
                            pool.kill(victim)
                            pool.start()
                            report.kills += 1
                            report.kills_mid_job += bool(mid)
                        next_kill = now + kill_every
                if now >= next_term:
                    # Frozen workers are left alone: they are there to come back late.
                    victim = rng.choice(pool.alive(paused=False) or [None])
                    if victim is not None:
                        ended = admin.rows("lab/terminate_sessions_named", {"name": victim.name})
                        report.terminations += 1
                        report.sessions_ended += len(ended)
                    next_term = now + terminate_every
                if now >= next_pause:
                    running = pool.alive(paused=False)
                    mid = _busy(admin, running)
                    if mid and len(running) > 1:
                        victim = rng.choice(mid)
                        pool.pause(victim, 2 * lease + 0.5)
                        # Frozen now: is it still inside that job? If not, let it
                        # go at once and try again on the next round.
                        if _busy(admin, [victim]):
                            report.pauses += 1
                            next_pause = now + pause_every
                        else:
                            victim.paused_until = 0.0
                            pool.resume_due()
                    if now >= next_pause + 1.0:
                        next_pause = now + pause_every  # nobody was inside a job for a second
                if restart_at is not None and now >= restart_at:
                    restart_at = None
                    done, report.restart_note = restart_server(db, folder)
                    report.restarts += done
                    admin.close()
            if now >= next_look:
                p = admin.row("lab/fault_progress")
                report.longest_overdue = max(report.longest_overdue, p["overdue_seconds"])
                finished = p["done"] + p["dead"]
                if progress:
                    progress(finished, jobs)
                if finished >= jobs and now >= chaos_end:
                    break
                if now > deadline:
                    break
                next_look = now + 0.25
            time.sleep(0.02)
        report.stopped = stop.is_set()
        report.drain_seconds = max(0.0, time.monotonic() - (began + seconds))
    finally:
        pool.stop_all()
        report.elapsed = time.monotonic() - began
        report.processes_started = pool.started
        report.crashes = pool.crashes
        report.reconnects_of_survivors = sum(r.get("reconnects", 0) for r in pool.reports)
        shutil.rmtree(folder, ignore_errors=True)
    try:
        # One more reaper pass, once every lease has run out: nothing may be left.
        time.sleep(0.1)
        report.reaped_at_end = _final_reap(admin, lease)
        _judge(admin, report)
    finally:
        admin.close()
    return report


def _busy(admin: _Session, children: list[_Child]) -> list[_Child]:
    """Those of `children` in the middle of a job (by the call log)."""
    if not children:
        return []
    names = {r[0] for r in admin.rows("lab/fault_busy_workers", {"names": [c.name for c in children]})}
    return [c for c in children if c.name in names]


def _final_reap(admin: _Session, lease: float) -> int:
    """Wait out the longest lease that can still be live, then reap once."""
    if admin.row("lab/fault_progress")["running"]:
        time.sleep(lease + 0.5)
    return admin.call(queue.reap)


def _judge(admin: _Session, report: TortureReport) -> None:
    v = admin.row("lab/fault_verdict")
    report.verdict = v
    report.done, report.dead = v["done"], v["dead"]
    report.lost = v["enqueued"] - v["done"] - v["dead"]
    report.running_at_end = v["running"]
    for name in ("duplicate_effects", "done_without_effect", "effects_not_done", "effects_after_done",
                 "fenced", "stale_done_accepted", "fenced_own_completion", "overwrites", "jobs_done_twice",
                 "calls", "absorbed", "calls_after_done", "claims_not_completing"):
        setattr(report, name, v[name])
    report.over_attempts = v["over_attempts"] + v["transitions_over_attempts"] + v["calls_over_attempts"]


# --- the load run --------------------------------------------------------------


@dataclass
class LoadReport:
    """The load run: invariants from the database, timings for the record."""

    server: str
    jobs: int
    workers: int
    fail_rate: float
    max_attempts: int
    done: int = 0
    dead: int = 0
    planned_done: int = 0
    planned_dead: int = 0
    calls: int = 0
    planned_calls: int = 0
    failures: int = 0
    planned_failures: int = 0
    over_attempts: int = 0
    dead_without_their_error: int = 0
    not_as_planned: int = 0
    calls_after_done: int = 0
    duplicate_effects: int = 0
    done_without_effect: int = 0
    overwrites: int = 0
    jobs_done_twice: int = 0
    fenced: int = 0
    running_at_end: int = 0
    examples: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    first_pass_seconds: float = 0.0
    elapsed: float = 0.0
    stopped: bool = False
    verdict: dict = field(default_factory=dict)

    @property
    def enqueued(self) -> int:
        return self.jobs

    @property
    def violations(self) -> list[str]:
        v = []
        if self.done + self.dead != self.jobs:
            v.append(f"done {self.done} + dead {self.dead} != enqueued {self.jobs}")
        if self.over_attempts:
            v.append(f"{self.over_attempts} job(s), transition(s) or call(s) over max_attempts")
        if self.dead_without_their_error:
            v.append(f"{self.dead_without_their_error} dead job(s) without the error of their last try")
        if self.not_as_planned:
            v.append(f"{self.not_as_planned} job(s) did not end as the failure plan dictates: "
                     + "; ".join(self.examples[:3]))
        if self.calls != self.planned_calls:
            v.append(f"{self.calls} handler calls, the plan makes {self.planned_calls}")
        if self.failures != self.planned_failures:
            v.append(f"{self.failures} failures recorded, the plan makes {self.planned_failures}")
        if self.calls_after_done:
            v.append(f"{self.calls_after_done} handler call(s) started after their job was done")
        for name, text in (("duplicate_effects", "duplicate effect(s)"),
                           ("done_without_effect", "done job(s) without their effect"),
                           ("overwrites", "update(s) of a job already done or dead"),
                           ("jobs_done_twice", "job(s) done twice"),
                           ("fenced", "fenced completion(s) though no lease can have run out"),
                           ("running_at_end", "job(s) still running at the end")):
            if getattr(self, name):
                v.append(f"{getattr(self, name)} {text}")
        if self.crashes:
            v.append(f"{len(self.crashes)} worker process(es) crashed: {self.crashes[0]}")
        return v

    @property
    def ok(self) -> bool:
        return not self.violations and not self.stopped

    def summary(self) -> str:
        share = self.failures / self.calls if self.calls else 0.0
        lines = [
            f"load run on {self.server}",
            f"  {self.jobs:,} jobs, {self.workers} workers, {self.fail_rate:.0%} of handler calls planned "
            f"to raise, max_attempts {self.max_attempts}",
            f"  result: done {self.done:,} + dead {self.dead:,} = {self.done + self.dead:,} of {self.jobs:,} "
            f"enqueued (the plan: done {self.planned_done:,}, dead {self.planned_dead:,})",
            f"  handler calls {self.calls:,} (plan {self.planned_calls:,}), raised {self.failures:,} "
            f"({share:.1%}; plan {self.planned_failures:,})",
            f"  attempts over max_attempts {self.over_attempts}, dead jobs without their last error "
            f"{self.dead_without_their_error}, jobs not as planned {self.not_as_planned}, "
            f"calls after done {self.calls_after_done}, duplicate effects {self.duplicate_effects}",
            f"  every job tried once after {self.first_pass_seconds:.1f} s "
            f"({self.jobs / self.first_pass_seconds if self.first_pass_seconds else 0:,.0f} jobs/s); "
            f"drained in {self.elapsed:.1f} s (retries wait 20 s, then 40 s)",
        ]
        return "\n".join(lines + _verdict_lines(self.stopped, self.violations))


def run_load(
    db: Database,
    *,
    jobs: int = 20_000,
    workers: int = 16,
    fail_rate: float = 0.1,
    max_attempts: int = 3,
    seed: int = 1,
    lease: float = 120.0,
    poll: float = 0.5,
    timeout: float = 900.0,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LoadReport:
    """Drain `jobs` due jobs with `workers` worker processes while a planned
    `fail_rate` of handler calls raise; judge the result against the plan.
    The lease is long on purpose: no lease may run out, so every attempt
    comes from a planned failure. Resets the jobs table of `db`."""
    jobs = _check_positive_int("jobs", jobs, 1, 1_000_000)
    workers = _check_positive_int("workers", workers, 1, 64)
    max_attempts = _check_positive_int("max_attempts", max_attempts, 1, 20)
    seed = _check_positive_int("seed", seed, 0)
    if isinstance(fail_rate, bool) or not isinstance(fail_rate, (int, float)) or not 0 <= fail_rate < 1:
        raise BadInput(f"fail_rate must be a fraction from 0 up to (not including) 1, got {fail_rate!r}")
    lease = as_lease(lease).total_seconds()
    poll = _check_seconds("poll", poll, 0.01, 60)
    timeout = _check_seconds("timeout", timeout, 1, 86_400)
    stop = stop or threading.Event()

    report = LoadReport(db.server.line(), jobs, workers, float(fail_rate), max_attempts)
    plan = {n: planned_result(seed, n, fail_rate, max_attempts) for n in range(1, jobs + 1)}
    report.planned_done = sum(1 for s, _ in plan.values() if s == "done")
    report.planned_dead = jobs - report.planned_done
    report.planned_calls = sum(a for _, a in plan.values())
    report.planned_failures = report.planned_calls - report.planned_done

    folder = Path(tempfile.mkdtemp(prefix="pgq-load-"))
    admin = _admin(db)
    pool = _Pool(db, folder, "load", {
        "lease": lease, "poll": poll, "sleep_ms": (0, 2), "fail_rate": fail_rate,
        "plan_seed": seed, "max_seconds": timeout + 60})
    began = time.monotonic()
    try:
        _prepare(db, jobs, 0, max_attempts)
        began = time.monotonic()
        for _ in range(workers):
            pool.start()
        while not stop.is_set():
            for _ in range(pool.collect_crashes()):
                pool.start()
            p = admin.row("lab/fault_progress")
            if not report.first_pass_seconds and p["never_claimed"] == 0:
                report.first_pass_seconds = time.monotonic() - began
            if progress:
                progress(p["done"] + p["dead"], jobs)
            if p["done"] + p["dead"] >= jobs or time.monotonic() - began > timeout:
                break
            time.sleep(0.25)
        report.stopped = stop.is_set()
    finally:
        pool.stop_all()
        report.elapsed = time.monotonic() - began
        report.crashes = pool.crashes
        shutil.rmtree(folder, ignore_errors=True)
    try:
        v = admin.row("lab/fault_verdict")
        results = admin.rows("lab/fault_job_results")
    finally:
        admin.close()

    report.verdict = v
    report.done, report.dead, report.running_at_end = v["done"], v["dead"], v["running"]
    report.calls, report.failures, report.fenced = v["calls"], v["failures"], v["fenced"]
    report.calls_after_done = v["calls_after_done"] + v["effects_after_done"]
    report.over_attempts = v["over_attempts"] + v["transitions_over_attempts"] + v["calls_over_attempts"]
    for name in ("duplicate_effects", "done_without_effect", "overwrites", "jobs_done_twice"):
        setattr(report, name, v[name])
    for n, status, attempts, _max, last_error in results:
        want = plan.get(n)
        if (status, attempts) != want:
            report.not_as_planned += 1
            report.examples.append(f"job n={n} ended {status} after {attempts}, planned {want}")
        if status == "dead" and last_error != f"RuntimeError: {planned_error(n, attempts)}":
            report.dead_without_their_error += 1
    return report
