"""Worker processes for the fault and load runs, and what both runs share.

Each worker is a fresh interpreter running the library's Worker, told what to
do on stdin (so no password shows in `ps`). It never prints: its output goes
to a log file in a temporary folder, read only when it crashes. Every state
change, call and effect is written on the server, so a SIGKILLed worker's
lost memory costs the judge nothing.
"""

from __future__ import annotations

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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from .. import queue, seeding, tables
from ..databases import Database
from ..errors import PgqError
from ..infra.server import restart_server as restart_embedded
from ..statements import records, run
from ..worker import Worker
from .plan import planned_error, planned_failure
from .settings import RunSettings

KIND = "fault_job"
OUTCOMES = ("done", "fenced", "retried", "dead")  # the Worker's events that end a claim
ORCHESTRATOR = "pgq-faults-orchestrator"  # the application_name of the run's own session
MAX_CRASHES = 3  # workers that exit on their own before a run gives up
RETRY_SECONDS = 30.0  # how long a worker's ledger writes and our own queries ride out an outage


class WorkersCrashed(PgqError, RuntimeError):
    """Worker processes of a run exited on their own, MAX_CRASHES of them: a
    broken setup, not a fault the run injected. The message names the first
    worker, its exit code and the end of its log."""


# --- inside a worker process ---------------------------------------------------


class WorkerSession:
    """One autocommit connection that rides out a terminated session or a
    server restart by reconnecting, for up to RETRY_SECONDS. A statement that
    may have landed just before the break is sent again, so use it only for
    reads and for writes that may happen twice (the ledgers count them)."""

    def __init__(self, conninfo: str, pause: float = 0.1):
        self.conninfo, self.pause = conninfo, pause
        self.conn: psycopg.Connection | None = None
        self._lock = threading.RLock()  # a pool's executors share it: one call at a time

    def call(self, fn: Callable[[psycopg.Connection], Any]) -> Any:
        with self._lock:
            return self._call(fn)

    def _call(self, fn: Callable[[psycopg.Connection], Any]) -> Any:
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

    def rows(self, name: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """A named statement's rows (none for a statement that returns none)."""

        def go(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
            cur = run(conn, name, params)
            return cur.fetchall() if cur.description else []

        return self.call(go)

    def row(self, name: str) -> dict[str, Any]:
        """The one row of a named statement that takes no parameters, as a dict."""
        return self.call(lambda conn: run(conn, name, row_factory=dict_row).fetchone())

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
        self.conn = None


def worker_process() -> None:
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
    ledger = WorkerSession(conninfo)
    rng = random.Random(spec["seed"])
    low, high = spec["sleep_ms"]
    load = spec["mode"] == "load"
    long_every = spec.get("long_every", 0)
    timeout = spec.get("timeout")

    started: set[tuple[int, int]] = set()  # claims (id, fencing token) whose handler ran here
    # Lost claims go to a file, not the server: a line written is kept though a SIGKILL ends us
    # a moment later, and a write never waits out a restart on the thread that gives leases up.
    lost_log = open(spec["lost"], "a", buffering=1, encoding="utf-8")  # a line at a time
    lost_lock = threading.Lock()  # the heartbeat, the lease clock and the executors all write
    # Jobs failed at their job timeout, a line each, likewise kept through a SIGKILL: a worker
    # killed later still counts the timeouts it enforced.
    timeout_log = open(spec["timeouts"], "a", buffering=1, encoding="utf-8")
    # The failover drill's record of every claim handed to a handler and every completion the
    # server acknowledged: on this machine, so it outlives the primary that acknowledged them.
    acks = open(spec["acks"], "a", buffering=1, encoding="utf-8") if spec.get("acks") else None

    def note(what: str, job) -> None:
        if acks is not None:
            with lost_lock:
                acks.write(json.dumps([what, job.id, job.fence_token, time.time()]) + "\n")

    def handle(job):
        note("claim", job)
        started.add((job.id, job.fence_token))
        ledger.rows(
            "lab/fault_call",
            {"job_id": job.id, "attempts": job.attempts, "fence_token": job.fence_token, "worker": name},
        )
        # Longer than the lease: only the heartbeat keeps it. With a job timeout shorter than
        # that, on the job's first try only, and never on a fragile job (one try only): the
        # timeout fails it once, and its retry finishes. Counted in tries, not claims: a claim
        # handed back for want of a token gives its try back, so "first claim" (fencing token
        # 1) missed most long jobs under the rate limit. A fragile job's timeout kills it, the
        # requeue gives it try 1 again, and it would time out for ever.
        first_try = job.attempts == 1 and job.max_attempts > 1
        if long_every and job.payload["n"] % long_every == 0 and (not timeout or first_try):
            time.sleep(1.5 * spec["lease"])
        else:
            time.sleep(rng.uniform(low, high) / 1000)
        if load:
            n = job.payload["n"]
            if planned_failure(spec["plan_seed"], n, job.attempts, spec["fail_rate"]):
                raise RuntimeError(planned_error(n, job.attempts))
        ledger.rows("lab/fault_effect", {"job_id": job.id, "attempts": job.attempts, "worker": name})

    def on_event(event, job):
        if job is not None and event == "lost":
            line = json.dumps([job.id, job.attempts, job.fence_token, job.lost_at or time.time()])
            with lost_lock:
                lost_log.write(line + "\n")
            return
        if job is not None and event == "timed_out":
            with lost_lock:
                timeout_log.write(f"{job.id}\n")
            return
        if job is None or event not in OUTCOMES:
            return
        if event == "done":
            note("done", job)
        if event == "fenced" and (job.id, job.fence_token) not in started:
            event = "not_started"  # no longer held when its turn came: the judge counts it apart
        try:
            ledger.rows(
                "lab/fault_outcome",
                {
                    "job_id": job.id,
                    "attempts": job.attempts,
                    "fence_token": job.fence_token,
                    "worker": name,
                    "outcome": event,
                },
            )
        except psycopg.Error:
            pass  # the outcome log is a lower bound; the jobs table is the truth

    # Batches of 10, so outcomes wait for their flush while faults strike.
    worker = Worker(
        conninfo,
        {KIND: handle},
        lease=spec["lease"],
        poll=spec["poll"],
        batch=spec.get("batch", 1),
        concurrency=spec.get("concurrency", 1),
        on_event=on_event,
        timeout=spec.get("timeout"),
        rate_limits={KIND: spec["rate_limit"]} if spec.get("rate_limit") else None,
        durable_completions=spec.get("durable", False),
    )
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
    lost_log.close()
    timeout_log.close()
    if acks is not None:
        acks.close()
    Path(spec["report"]).write_text(
        json.dumps(
            {
                "claimed": report.claimed,
                "done": report.done,
                "fenced": report.fenced,
                "reconnects": report.reconnects,
                "timed_out": report.timed_out,
                "handed_back": report.handed_back,
                "last_error": report.last_error,
            }
        )
    )


# --- the parent's side ---------------------------------------------------------


@dataclass(frozen=True)
class InHand:
    """A job a worker is in the middle of: the worker, the job, its claim's
    fencing token, and its max_attempts (fragile: one try only)."""

    name: str
    job_id: int
    fence_token: int
    max_attempts: int

    @property
    def fragile(self) -> bool:
        return self.max_attempts == 1


@dataclass
class Child:
    """One worker process of a run: its name, process, report file and log,
    and, while it is frozen, when its pause ends at the latest and the job
    whose next claim ends it sooner (job id, the fencing token it holds)."""

    name: str
    process: subprocess.Popen
    report: Path
    log: Path
    paused_until: float | None = None
    until_claimed: tuple[int, int] | None = None
    told: bool = True  # False if it exited before it read its settings

    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_line(self) -> str:
        """How it ended: "pgq-faults-w0001 exited with code 1: <the end of its log>"."""
        when = "" if self.told else " before it read its settings"
        return f"{self.name} exited with code {self.process.returncode}{when}: {_tail(self.log)}"


WORKER_CODE = "from pgq_teach.faults.fleet import worker_process; worker_process()"


class Pool:
    """The worker processes of one run: fresh interpreters (nothing of the
    caller's __main__ is re-run in them), stopped or killed by stop_all()."""

    def __init__(self, db: Database, folder: Path, settings: RunSettings):
        self.db, self.folder, self.settings = db, folder, settings
        self.children: dict[str, Child] = {}
        self.started = 0
        self.crashes: list[str] = []
        self.reports: list[dict] = []
        package_root = str(Path(__file__).resolve().parents[2])  # the folder that holds pgq_teach/
        path = os.environ.get("PYTHONPATH")
        self.env = dict(os.environ, PYTHONPATH=package_root + (os.pathsep + path if path else ""))

    def start(self) -> Child:
        """Start one worker process and hand it its settings. One that exits
        before it reads them is kept all the same, as a crash for
        collect_crashes to count, name and replace."""
        self.started += 1
        name = f"pgq-{self.settings.mode}-w{self.started:04d}"
        log, report = self.folder / f"{name}.log", self.folder / f"{name}.json"
        spec = self.settings.worker_spec() | {
            "name": name,
            "dsn": self.db.dsn,
            "report": str(report),
            "lost": str(self.folder / f"{name}.lost"),
            "timeouts": str(self.folder / f"{name}.timeouts"),
            "seed": self.started,
        }
        if spec.get("acks"):  # the failover drill's runs: a file of claims and completions each
            spec["acks"] = str(self.folder / f"{name}.acks")
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-c", WORKER_CODE],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        child = Child(name, process, report, log, told=tell(process, json.dumps(spec).encode()))
        self.children[name] = child
        return child

    def alive(self, *, paused: bool = True) -> list[Child]:
        return [c for c in self.children.values() if c.alive() and (paused or c.paused_until is None)]

    def kill(self, child: Child) -> None:
        child.process.kill()
        child.process.wait(10)
        del self.children[child.name]

    def pause(self, child: Child, seconds: float) -> None:
        """SIGSTOP a worker for `seconds` at the most (Fleet.resume_due lets it go)."""
        child.process.send_signal(signal.SIGSTOP)
        child.paused_until = time.monotonic() + seconds

    def frozen(self) -> list[Child]:
        return [c for c in self.children.values() if c.paused_until is not None]

    def resume(self, child: Child) -> None:
        if child.alive():
            child.process.send_signal(signal.SIGCONT)
        child.paused_until = child.until_claimed = None

    def collect_crashes(self) -> int:
        """Children that exited on their own: a crash. The count; the caller replaces them."""
        gone = [c for c in self.children.values() if not c.alive()]
        for child in gone:
            del self.children[child.name]
            self.crashes.append(child.exit_line())
        if len(self.crashes) >= MAX_CRASHES:
            # A worker never exits on its own, so this is a broken setup, not
            # a fault we injected: stop now rather than wait out the drain.
            raise WorkersCrashed(
                f"{len(self.crashes)} worker processes crashed; the first: {self.crashes[0]}"
            )
        return len(gone)

    def stop_all(self) -> None:
        """SIGCONT the frozen, SIGTERM everyone, wait, SIGKILL stragglers."""
        for child in self.frozen():
            self.resume(child)
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
                self.crashes.append(child.exit_line())
            if child.report.exists():
                self.reports.append(json.loads(child.report.read_text()))
        self.children.clear()


def tell(process: subprocess.Popen, spec: bytes) -> bool:
    """Write a worker's settings to its stdin and close it. False if the
    worker had already exited, so the pipe was closed (seen under heavy load
    when the worker cannot start): it is then reaped, and killed if it still
    lingers, so its exit code is known."""
    assert process.stdin is not None  # always, with stdin=PIPE
    try:
        process.stdin.write(spec)
        process.stdin.close()
    except BrokenPipeError:
        try:
            process.stdin.close()
        except BrokenPipeError:
            pass  # the buffered spec could not be flushed either: nobody reads it
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        return False
    return True


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
        restart_embedded()
        return True, "embedded.restart() (pg_ctl restart -m fast)"
    command = os.environ.get("PGQ_RESTART_CMD", "").strip()
    if not command:
        return False, f"skipped: backend {db.server.backend} and PGQ_RESTART_CMD is not set"
    # A file, not a pipe: the restarted postmaster inherits the output and would
    # hold a pipe open for good.
    with open(folder / "restart.log", "wb") as out:
        done = subprocess.run(
            command, shell=True, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=120
        )
    if done.returncode != 0:
        raise RuntimeError(f"PGQ_RESTART_CMD exited with {done.returncode}: {_tail(folder / 'restart.log')}")
    return True, "PGQ_RESTART_CMD"


def orchestrator_session(db: Database) -> WorkerSession:
    """The run's own session, which reconnects across the restart we cause."""
    return WorkerSession(make_conninfo(db.dsn, application_name=ORCHESTRATOR), pause=0.2)


# The invariants both runs hold, as (report field, what a count of one of it means, what a
# larger count means), so a broken one reads "1 duplicate effect" or "3 duplicate effects".
SHARED_INVARIANTS = (
    ("duplicate_effects", "duplicate effect", "duplicate effects"),
    ("done_without_effect", "done job without its effect", "done jobs without their effect"),
    ("overwrites", "update of a job already done or dead", "updates of a job already done or dead"),
    ("jobs_done_twice", "job marked done twice", "jobs marked done twice"),
    ("over_attempts", "job, transition or call over max_attempts",
     "jobs, transitions or calls over max_attempts"),
)  # fmt: skip


@dataclass(kw_only=True)
class RunReport:
    """What the fault and load reports share: the server, the run's settings,
    the verdict and the counts both judge by, the workers that crashed, and
    whether it was stopped. Each report names its own `violations`; `ok`
    means none, and a run that was not stopped."""

    server: str
    settings: RunSettings
    done: int = 0
    dead: int = 0
    running_at_end: int = 0
    calls: int = 0
    calls_after_done: int = 0
    fenced: int = 0
    duplicate_effects: int = 0
    done_without_effect: int = 0
    overwrites: int = 0
    jobs_done_twice: int = 0
    over_attempts: int = 0
    crashes: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    stopped: bool = False
    verdict: dict[str, Any] = field(default_factory=dict)

    @property
    def violations(self) -> list[str]:
        raise NotImplementedError

    @property
    def ok(self) -> bool:
        return not self.violations and not self.stopped

    def lines(self) -> list[str]:
        """What the run did and what came of it, a line each (each report its own)."""
        raise NotImplementedError

    def summary(self) -> str:
        """The report's lines, then STOPPED if it was, and each violation or "every invariant held"."""
        stopped = ["  STOPPED before the queue drained"] if self.stopped else []
        verdict = [f"  VIOLATION: {v}" for v in self.violations] or ["  every invariant held"]
        return "\n".join(self.lines() + stopped + verdict)


def broken(report: RunReport, invariants: tuple[tuple[str, str, str], ...]) -> list[str]:
    """A line ("1 duplicate effect", "3 duplicate effects") for each invariant
    whose count on `report` is not zero, then one for any crashed workers."""
    lines = [
        tables.count(getattr(report, name), one, many)
        for name, one, many in invariants
        if getattr(report, name)
    ]
    if report.crashes:
        lines.append(f"{tables.count(len(report.crashes), 'worker process')} crashed: {report.crashes[0]}")
    return lines


def copy_verdict(report: RunReport, verdict: dict[str, Any], names: tuple[str, ...]) -> None:
    """Keep the verdict on the report, copy the named counts onto it, and sum
    the three ways to go over max_attempts (job, transition, call) into one."""
    report.verdict = verdict
    for name in names:
        setattr(report, name, verdict[name])
    over = ("over_attempts", "transitions_over_attempts", "calls_over_attempts")
    report.over_attempts = sum(verdict[n] for n in over)


class Fleet:
    """What a fault or load run holds for its whole length: a temporary folder
    for the workers' logs, the orchestrator's session, and the worker
    processes. Use it as a context manager: `seed()` and `start()` inside the
    block; on leaving it, however the block ends, every worker is stopped
    (SIGCONT, SIGTERM, then SIGKILL), the claims they noted as lost loaded
    into fault_lost (unless the block failed), the folder removed and the
    session closed. `session` reconnects if used again afterwards, to judge the run."""

    def __init__(self, db: Database, settings: RunSettings):
        self.db, self.settings = db, settings
        self.folder = Path(tempfile.mkdtemp(prefix=f"pgq-{settings.mode}-"))
        self.session = orchestrator_session(db)
        self.pool = Pool(db, self.folder, settings)
        self.began = time.monotonic()
        self.elapsed = 0.0
        self.timed_out = 0  # jobs failed at their job timeout, by every worker: counted on leaving

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        try:
            self.pool.stop_all()
            if exc[0] is None:  # a run that failed is not judged
                self.load_lost()
                self.timed_out = self._timeouts_noted()
        finally:
            self.elapsed = time.monotonic() - self.began
            shutil.rmtree(self.folder, ignore_errors=True)
            self.session.close()
        return False

    def _timeouts_noted(self) -> int:
        """Jobs failed at their job timeout, by every worker of the run (killed ones included)."""
        return sum(len(path.read_text(encoding="utf-8").split()) for path in self.folder.glob("*.timeouts"))

    def load_lost(self) -> None:
        """Put the claims the workers noted as lost (one JSON line each in their .lost files,
        a last line cut short by a SIGKILL left out) in fault_lost, for the judge."""
        rows = []
        for path in sorted(self.folder.glob("*.lost")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    job_id, attempts, token, at = json.loads(line)
                except ValueError:
                    continue
                rows.append((job_id, attempts, token, path.stem, at))
        if rows:
            columns = ("job_ids", "attempts", "fence_tokens", "workers", "ats")
            values = [list(column) for column in zip(*rows, strict=True)]
            self.session.rows("lab/fault_lost", dict(zip(columns, values, strict=True)))

    # --- set-up ------------------------------------------------------------------

    def seed(self, *, fragile_every: int = 0) -> None:
        """Ledgers in place, jobs and ledgers emptied, the run's jobs seeded,
        falling due evenly over its `due_over` seconds. On a plain
        connection, not the session: a seed must never be sent twice."""
        s = self.settings
        with self.db.connection() as conn:
            run(conn, "lab/fault_setup")
            seeding.reset_jobs(conn)
            run(conn, "lab/fault_reset")
            run(
                conn,
                "lab/fault_seed",
                {
                    "kind": KIND,
                    "count": s.jobs,
                    "spread": timedelta(seconds=s.due_over),
                    "max_attempts": s.max_attempts,
                    "fragile_every": fragile_every,
                },
            )

    def start(self) -> None:
        """Start the run's worker processes; its clock starts now."""
        self.began = time.monotonic()
        for _ in range(self.settings.workers):
            self.pool.start()

    # --- during the run ----------------------------------------------------------

    def replace_crashed(self) -> None:
        """Let frozen workers whose time is up go on, and replace any that exited on their own."""
        self.resume_due()
        for _ in range(self.pool.collect_crashes()):
            self.pool.start()

    def resume_due(self) -> None:
        """Let go the frozen workers whose pause is over, each one's strike
        ended first (lab/fault_strike_end.sql), so a claim it makes once it
        goes on is never taken for one made while it was frozen."""
        now = time.monotonic()
        for child in self.pool.frozen():
            if child.paused_until is not None and now >= child.paused_until:
                self.session.rows("lab/fault_strike_end", {"worker": child.name})
                self.pool.resume(child)

    def progress(self) -> dict[str, Any]:
        """Jobs by status, never claimed, and the most overdue lease (lab/fault_progress.sql)."""
        return self.session.row("lab/fault_progress")

    def in_hand(self, children: list[Child]) -> list[InHand]:
        """The jobs `children` are in the middle of (by the call log: lab/fault_busy_workers.sql)."""
        if not children:
            return []
        names = [c.name for c in children]
        return self.session.call(
            lambda conn: run(
                conn, "lab/fault_busy_workers", {"names": names}, row_factory=records(InHand)
            ).fetchall()
        )

    def busy(self, children: list[Child]) -> list[Child]:
        """Those of `children` in the middle of a job (by the call log)."""
        names = {j.name for j in self.in_hand(children)}
        return [c for c in children if c.name in names]

    def job_state(self, job_id: int) -> dict[str, Any] | None:
        """One job's status, attempts, fencing token and last error (queue.job_state); None if
        there is no such job."""
        return self.session.call(lambda conn: queue.job_state(conn, job_id))

    def first_in_line(self, job_id: int) -> None:
        """Make a ready job due before every other (lab/fault_first_in_line.sql)."""
        self.session.rows("lab/fault_first_in_line", {"id": job_id})

    def strike(self, child: Child, kind: str, seconds: float | None = None) -> None:
        """Note a fault that takes a worker's jobs from it by right (a kill, or
        a pause of `seconds` at the most, whose true end resume_due notes),
        before it strikes: the judge excuses them."""
        self.session.rows("lab/fault_strike", {"worker": child.name, "kind": kind, "seconds": seconds})

    def requeue_dead(self) -> int:
        """queue.requeue_dead on the orchestrator's session: the number of dead jobs put back to ready."""
        return self.session.call(queue.requeue_dead)

    # --- afterwards --------------------------------------------------------------

    def verdict(self) -> dict[str, Any]:
        """The run judged from the database alone (lab/fault_verdict.sql)."""
        return self.session.row("lab/fault_verdict")

    @property
    def crashes(self) -> list[str]:
        return self.pool.crashes

    @property
    def survivor_reports(self) -> list[dict[str, Any]]:
        """The reports of the workers that were alive to stop at the end."""
        return self.pool.reports
