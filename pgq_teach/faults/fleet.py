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
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import psycopg
from psycopg.conninfo import make_conninfo

from .. import embedded
from ..databases import Database
from ..errors import BadInput
from ..statements import run
from ..worker import Worker

from .plan import planned_error, planned_failure

KIND = "fault_job"
OUTCOMES = ("done", "fenced", "ready", "dead")
MAX_CRASHES = 3  # workers that exit on their own before a run gives up
RETRY_SECONDS = 30.0  # how long a worker's ledger writes and our own queries ride out an outage
Progress = Callable[[int, int], None]

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

    # Batches of 10, so outcomes wait for their flush while faults strike.
    worker = Worker(conninfo, {KIND: handle}, lease=spec["lease"], poll=spec["poll"],
                    batch=spec.get("batch", 1), on_event=on_event)
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


_CHILD_CODE = "from pgq_teach.faults.fleet import _child; _child()"


class _Pool:
    """The worker processes of one run: fresh interpreters (nothing of the
    caller's __main__ is re-run in them), stopped or killed by stop_all()."""

    def __init__(self, db: Database, folder: Path, mode: str, settings: dict):
        self.db, self.folder, self.mode, self.settings = db, folder, mode, settings
        self.children: dict[str, _Child] = {}
        self.started = 0
        self.crashes: list[str] = []
        self.reports: list[dict] = []
        package_root = str(Path(__file__).resolve().parents[2])  # the folder that holds pgq_teach/
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
        if len(self.crashes) >= MAX_CRASHES:
            # A worker never exits on its own, so this is a broken setup, not
            # a fault we injected: stop now rather than wait out the drain.
            raise RuntimeError(f"{len(self.crashes)} worker processes crashed; the first: {self.crashes[0]}")
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


def _verdict_lines(stopped: bool, violations: list[str]) -> list[str]:
    lines = ["  STOPPED before the queue drained"] if stopped else []
    return lines + ([f"  VIOLATION: {v}" for v in violations] or ["  every invariant held"])
