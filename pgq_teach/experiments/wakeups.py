"""Lesson 07, wake-ups with LISTEN/NOTIFY, on the live server:

- notify rules: the rules of guide #12 that lesson 00 does not already
  check, each run live with its verdict (identical notifications fold into
  one, distinct ones do not; a listener inside its own transaction hears
  nothing until it ends; a notification nobody listens for is gone);
- payload_limit: the server's own error for a payload of 8,000 bytes or more;
- pickup_latency: the library's Worker, idle, and jobs enqueued at random
  moments with and without NOTIFY (guide #13, the poll scaled down);
- notify_cost: enqueue throughput of 8 producers with a NOTIFY per job, one
  per transaction, or none.

Lab notifications use their own channel, so they never wake real workers.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import charts, queue
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import run, run_one
from ..worker import Worker

Progress = Callable[[int, int], None]

CHANNEL = "pgq_lab_rules"  # the rules lab's own channel
QUIET_S = 0.3  # how long to listen for a notification that should not come
DELIVERY_S = 5.0  # how long to wait for one that should; it normally takes milliseconds
KIND = "send_receipt"


def listen(db: Database, channel: str = CHANNEL) -> psycopg.Connection:
    """A listening session of its own, autocommit, outside any transaction."""
    conn = db.connect(autocommit=True)
    run(conn, "lab/listen_channel", idents={"channel": channel})
    return conn


def heard(listener: psycopg.Connection, seconds: float) -> list[str]:
    """Every payload that arrives within `seconds`."""
    return [n.payload for n in listener.notifies(timeout=seconds)]


def notify_in_one_transaction(db: Database, payloads: list[str], channel: str = CHANNEL) -> None:
    with db.connection() as conn, conn.transaction():
        for payload in payloads:
            run(conn, "lab/notify_channel", {"channel": channel, "payload": payload})


# --- the rules (guide #12) ---------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    question: str
    expected: str
    observed: str
    holds: bool


def rule_identical(db: Database) -> Rule:
    """Three NOTIFYs with the same payload in one transaction arrive as one."""
    with listen(db) as listener:
        notify_in_one_transaction(db, [KIND] * 3)
        got = heard(listener, QUIET_S)
    return Rule(
        "identical",
        "Three identical notifications in one transaction: how many arrive?",
        "1",
        str(len(got)),
        got == [KIND],
    )


def rule_distinct(db: Database) -> Rule:
    """Three with different payloads arrive as three, in order."""
    with listen(db) as listener:
        notify_in_one_transaction(db, ["1", "2", "3"])
        got = heard(listener, QUIET_S)
    return Rule(
        "distinct",
        "Three different payloads in one transaction: how many arrive?",
        "3",
        str(len(got)),
        got == ["1", "2", "3"],
    )


def rule_busy_listener(db: Database) -> Rule:
    """A listener inside its own transaction hears nothing until it ends."""
    with listen(db) as listener:
        with listener.transaction():
            run(listener, "lab/open_transaction")
            notify_in_one_transaction(db, ["while you were busy"])
            during = heard(listener, QUIET_S)
        after = [n.payload for n in listener.notifies(timeout=DELIVERY_S, stop_after=1)]
    observed = f"{len(during)} while its transaction was open, {len(after)} after it ended"
    return Rule(
        "busy listener",
        "A listener inside its own transaction: when does it hear?",
        "0 while its transaction was open, 1 after it ended",
        observed,
        not during and len(after) == 1,
    )


def rule_nobody_listening(db: Database) -> Rule:
    """A notification sent while nobody listens is gone: a worker that
    reconnects and listens again sees nothing."""
    listener = listen(db)
    listener.close()  # the worker's connection drops
    notify_in_one_transaction(db, ["sent to nobody"])
    with listen(db) as again:  # the worker reconnects and listens again
        got = heard(again, QUIET_S)
    return Rule(
        "nobody listening",
        "Sent while the worker was disconnected: what does it see on reconnecting?",
        "nothing",
        "nothing" if not got else f"{len(got)} notification(s)",
        not got,
    )


RULES: dict[str, Callable[[Database], Rule]] = {
    "identical": rule_identical,
    "distinct": rule_distinct,
    "busy listener": rule_busy_listener,
    "nobody listening": rule_nobody_listening,
}


@dataclass
class RulesResult:
    rules: list[Rule]
    server_version: str
    stopped: bool = False
    guess: int | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(12))

    @property
    def all_hold(self) -> bool:
        return bool(self.rules) and all(r.holds for r in self.rules)

    def rule(self, name: str) -> Rule:
        return next(r for r in self.rules if r.name == name)

    def summary(self) -> str:
        lines = ["NOTIFY rules, run live"]
        lines += [
            f"  {r.name:<17} expected {r.expected}; observed {r.observed}: "
            f"{'holds' if r.holds else 'DOES NOT HOLD'}"
            for r in self.rules
        ]
        return "\n".join(lines + [f"  {self.guide}", f"  this server: PostgreSQL {self.server_version}"])


def notify_rules(
    db: Database,
    names: list[str] | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> RulesResult:
    """Run the named rules (all by default), in order."""
    names = list(RULES) if names is None else names
    unknown = [n for n in names if n not in RULES]
    if unknown or not names:
        raise BadInput(f"rules must be some of {list(RULES)}, got {names!r}")
    stop = stop or threading.Event()
    done: list[Rule] = []
    for n, name in enumerate(names):
        if stop.is_set():
            break
        done.append(RULES[name](db))
        if progress:
            progress(n + 1, len(names))
    return RulesResult(done, db.server.version, stopped=len(done) < len(names))


# --- the payload limit ---------------------------------------------------------------


@dataclass(frozen=True)
class PayloadResult:
    size: int
    accepted: bool
    sqlstate: str | None
    message: str | None


def block_size(db: Database) -> int:
    """The server's page size in bytes (compiled in; the payload limit derives from it)."""
    with db.connection() as conn:
        return run_one(conn, "lab/block_size")[0]


def payload_limit(db: Database, size: int = 8_000) -> PayloadResult:
    """Send a payload of `size` bytes; the server's verdict."""
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= 1_000_000:
        raise BadInput(f"size must be a whole number of bytes from 0 to 1,000,000, got {size!r}")
    try:
        notify_in_one_transaction(db, ["x" * size])
    except psycopg.Error as exc:
        return PayloadResult(size, False, exc.sqlstate, exc.diag.message_primary)
    return PayloadResult(size, True, None, None)


# --- pickup latency (guide #13) -------------------------------------------------------


@dataclass(frozen=True)
class Pickup:
    job_id: int
    notify: bool
    latency_s: float
    # how long after the worker's previous claim this job was enqueued: a job without NOTIFY
    # should wait out the rest of the poll, about poll_s - after_claim_s
    after_claim_s: float = 0.0


@dataclass
class LatencyResult:
    poll_s: float
    pickups: list[Pickup]
    server_version: str
    stopped: bool = False
    guess: int | None = None
    guide: GuideFigure = field(default_factory=lambda: figure(13))

    def latencies(self, notify: bool) -> list[float]:
        return [p.latency_s for p in self.pickups if p.notify == notify]

    def off_the_poll_s(self) -> list[float]:
        """For each job without NOTIFY, how far its latency was from the worker's
        next poll (the rest of the cycle, poll_s - after_claim_s), or from the
        one after, if the job landed just as a poll went by."""
        return [
            min(abs(p.latency_s - rest), abs(p.latency_s - rest - self.poll_s))
            for p in self.pickups
            if not p.notify
            for rest in [self.poll_s - p.after_claim_s]
        ]

    def median_ms(self, notify: bool) -> float | None:
        values = self.latencies(notify)
        return statistics.median(values) * 1000 if values else None

    def max_ms(self, notify: bool) -> float | None:
        values = self.latencies(notify)
        return max(values) * 1000 if values else None

    def line(self, label: str, notify: bool) -> str:
        median, most = self.median_ms(notify) or 0, self.max_ms(notify) or 0
        return (
            f"  {label} median {median:,.1f} ms, max {most:,.1f} ms over {len(self.latencies(notify))} jobs"
        )

    @property
    def scale(self) -> float:
        """How much shorter our poll is than the guide's 5 s."""
        return self.guide.values["poll_s"] / self.poll_s

    def summary(self) -> str:
        return "\n".join(
            [
                f"pickup latency, one idle Worker, poll {self.poll_s:g} s "
                f"(the guide's 5 s scaled by 1/{self.scale:g})"
                + (" (stopped early)" if self.stopped else ""),
                self.line("with NOTIFY:   ", True),
                self.line("without NOTIFY:", False),
                f"  {self.guide}",
                f"  this server: PostgreSQL {self.server_version}",
            ]
        )

    def chart_svg(self, width: int = 720) -> str:
        rows = [
            (f"job {p.job_id}, {'with' if p.notify else 'without'} NOTIFY", p.latency_s * 1000, "")
            for p in sorted(self.pickups, key=lambda p: (not p.notify, p.job_id))
        ]
        return charts.bars(
            rows,
            width=width,
            unit="ms",
            fmt="{:,.1f}",
            right=90,
            lines=[(f"poll {self.poll_s:g} s", self.poll_s * 1000)],
            title="Pickup latency: from commit to the worker's claim",
        )


def pickup_latency(
    db: Database,
    jobs: int = 12,
    poll_s: float = 1.0,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    *,
    seed: int | None = None,
    guess: int | None = None,
) -> LatencyResult:
    """Start one library Worker (poll `poll_s`), let it go idle, then enqueue
    `jobs` jobs one at a time at random moments, alternately with and
    without NOTIFY; each job's latency runs from its commit to its claim."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 2 <= jobs <= 100:
        raise BadInput(f"jobs must be a whole number from 2 to 100, got {jobs!r}")
    if isinstance(poll_s, bool) or not isinstance(poll_s, (int, float)) or not 0.1 <= poll_s <= 10:
        raise BadInput(f"poll_s must be from 0.1 to 10 seconds, got {poll_s!r}")
    stop = stop or threading.Event()
    chance = random.Random(seed)
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
    claimed: dict[int, float] = {}
    picked = threading.Condition()

    def on_event(name: str, job) -> None:
        if name == "claimed":
            with picked:
                claimed[job.id] = time.monotonic()
                picked.notify_all()

    worker = Worker(db.dsn, {KIND: lambda job: None}, poll=poll_s, on_event=on_event)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    pickups: list[Pickup] = []
    try:
        with db.connection() as conn:
            for n in range(jobs):
                # a random moment within the poll cycle, so silent jobs wait anything up to the poll
                pause = chance.uniform(0.05, poll_s)
                if stop.wait(pause):
                    break
                notify = n % 2 == 0
                job_id = queue.enqueue(conn, KIND, {"n": n}, notify=notify)
                committed = time.monotonic()
                with picked:

                    def seen(job_id: int = job_id) -> bool:
                        return job_id in claimed or stop.is_set()

                    picked.wait_for(seen, timeout=poll_s * 3 + 5)
                if job_id not in claimed:
                    if stop.is_set():
                        break
                    raise RuntimeError(f"the worker did not claim job {job_id} within {poll_s * 3 + 5:g} s")
                pickups.append(Pickup(job_id, notify, claimed[job_id] - committed, pause))
                if progress:
                    progress(n + 1, jobs)
    finally:
        worker.stop()
        thread.join(timeout=poll_s + 5)
    return LatencyResult(poll_s, pickups, db.server.version, stopped=len(pickups) < jobs, guess=guess)


# --- NOTIFY's cost with many producers -------------------------------------------------

COST_MODES = ("per job", "per transaction", "none")


@dataclass
class CostResult:
    producers: int
    transactions: int
    per_transaction: int
    elapsed_s: dict[str, float]  # the best round, per mode
    server_version: str
    stopped: bool = False
    rounds: int = 1
    guess: int | None = None
    # counted on the server and by the listener, per mode (its last round)
    enqueued: dict[str, int] = field(default_factory=dict)  # rows in jobs after the mode ran
    heard: dict[str, int] = field(default_factory=dict)  # notifications the listening session got

    @property
    def jobs(self) -> int:
        """The jobs each mode was asked to enqueue (producers x transactions x per transaction)."""
        return self.producers * self.transactions * self.per_transaction

    def jobs_per_s(self, mode: str) -> float:
        return self.jobs / self.elapsed_s[mode]

    def summary(self) -> str:
        lines = [
            f"enqueue cost: {self.producers} producers, {self.transactions} transactions each of "
            f"{self.per_transaction} jobs ({self.jobs:,} jobs per mode), best of {self.rounds} round(s)"
            + (" (stopped early)" if self.stopped else "")
        ]
        lines += [
            f"  NOTIFY {mode:<16} {self.elapsed_s[mode]:.2f} s, {self.jobs_per_s(mode):,.0f} jobs/s; "
            f"{self.enqueued.get(mode, 0):,} jobs in the table, "
            f"{self.heard.get(mode, 0):,} notifications heard"
            for mode in COST_MODES
            if mode in self.elapsed_s
        ]
        return "\n".join(lines + [f"  this server: PostgreSQL {self.server_version}"])

    def chart_svg(self, width: int = 720) -> str:
        rows = [
            (f"NOTIFY {mode}", self.jobs_per_s(mode), "") for mode in COST_MODES if mode in self.elapsed_s
        ]
        return charts.bars(
            rows,
            width=width,
            unit="jobs/s",
            fmt="{:,.0f}",
            right=110,
            title=f"Enqueue throughput, {self.producers} producers, "
            f"{self.per_transaction} jobs a transaction",
        )


def _produce(
    db: Database,
    mode: str,
    transactions: int,
    per_transaction: int,
    start: threading.Barrier,
    errors: list[BaseException],
    stop: threading.Event,
) -> None:
    try:
        with db.connection() as conn:
            start.wait()
            for _ in range(transactions):
                if stop.is_set():
                    return
                with conn.transaction():
                    for n in range(per_transaction):
                        job_id = queue.enqueue(conn, KIND, {"n": n}, notify=False)
                        if mode == "per job":  # the id, as the payload lesson advises: each one distinct
                            run(conn, "lab/notify_channel", {"channel": "jobs_ready", "payload": str(job_id)})
                    if mode == "per transaction":
                        run(conn, "notify_ready", {"kind": KIND})
    except BaseException as exc:  # raised again by the caller
        errors.append(exc)


def notify_cost(
    db: Database,
    producers: int = 8,
    transactions: int = 50,
    per_transaction: int = 10,
    rounds: int = 2,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    *,
    guess: int | None = None,
) -> CostResult:
    """Each mode: `producers` threads, each committing `transactions`
    transactions of `per_transaction` enqueues, while one worker-like session
    listens (and reads what arrives). Each round runs the modes in turn, the
    order reversed every other round so none always runs first on a cold
    cache; a mode's time is its best round."""
    for name, value, high in (
        ("producers", producers, 64),
        ("transactions", transactions, 10_000),
        ("per_transaction", per_transaction, 1_000),
        ("rounds", rounds, 10),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            raise BadInput(f"{name} must be a whole number from 1 to {high:,}, got {value!r}")
    stop = stop or threading.Event()
    elapsed: dict[str, float] = {}
    enqueued: dict[str, int] = {}
    heard_by_mode: dict[str, int] = {}
    listening = threading.Event()
    listener = db.connect(autocommit=True)
    run(listener, "listen")
    count = [0]  # notifications heard since the mode began; only the reader thread adds to it

    def drain_notifications() -> None:  # a listening worker reads what arrives
        while not listening.is_set():
            for _ in listener.notifies(timeout=0.1):
                count[0] += 1

    reader = threading.Thread(target=drain_notifications, daemon=True)
    reader.start()
    plan = [mode for r in range(rounds) for mode in (COST_MODES if r % 2 == 0 else COST_MODES[::-1])]
    try:
        for index, mode in enumerate(plan):
            if stop.is_set():
                break
            with db.connection() as conn:
                run(conn, "lab/reset_jobs")
            count[0] = 0
            start = threading.Barrier(producers + 1)
            errors: list[BaseException] = []
            threads = [
                threading.Thread(
                    target=_produce, args=(db, mode, transactions, per_transaction, start, errors, stop)
                )
                for _ in range(producers)
            ]
            for t in threads:
                t.start()
            start.wait()
            t0 = time.perf_counter()
            for t in threads:
                t.join()
            took = time.perf_counter() - t0
            if errors:
                raise errors[0]
            if not stop.is_set():
                elapsed[mode] = min(took, elapsed.get(mode, took))
                heard_by_mode[mode] = settled(count)
                with db.connection() as conn:
                    enqueued[mode] = sum(n for _, n, *_ in run(conn, "stats_status").fetchall())
            if progress:
                progress(index + 1, len(plan))
    finally:
        listening.set()
        reader.join()
        listener.close()
    return CostResult(
        producers,
        transactions,
        per_transaction,
        elapsed,
        db.server.version,
        stopped=stop.is_set(),
        rounds=rounds,
        guess=guess,
        enqueued=enqueued,
        heard=heard_by_mode,
    )


def settled(count: list[int], quiet_s: float = 0.5, most_s: float = 10.0) -> int:
    """The count once it has stopped growing for `quiet_s`: notifications
    arrive just after each commit, so wait for the last of them."""
    deadline = time.monotonic() + most_s
    last = -1
    while count[0] != last and time.monotonic() < deadline:
        last = count[0]
        time.sleep(quiet_s)
    return count[0]


# --- poolers ---------------------------------------------------------------------------


def pooler_installed() -> str | None:
    """Where Debian's pgbouncer is, or None when it is not installed."""
    return shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if shutil.which("/usr/sbin/pgbouncer") else None
    )


@dataclass(frozen=True)
class SessionBound:
    """One NOTIFY, heard (or not) by the session that ran LISTEN and by
    another session of the same client that did not."""

    listening_session_heard: int
    other_session_heard: int


def listen_is_per_session(db: Database) -> SessionBound:
    """What a pooler in transaction mode runs into: LISTEN registers one
    server session, and a client handed another session hears nothing."""
    with listen(db) as listening, db.connection() as other:
        notify_in_one_transaction(db, ["for the listening session"])
        other_heard = heard(other, QUIET_S)  # this session never ran LISTEN
        listening_heard = heard(listening, QUIET_S)
    return SessionBound(len(listening_heard), len(other_heard))


# --- a real pooler, where Debian's pgbouncer is installed ---------------------------

POOLER_START_S = 10.0


@dataclass(frozen=True)
class PoolerResult:
    ran: bool
    reason: str
    heard_direct: int = 0
    heard_session_mode: int = 0  # through the pooler in session mode: the control
    heard_transaction_mode: int = 0


class PgBouncer:
    """A throwaway pgbouncer (transaction or session mode), two server
    connections, in front of the lesson's database, on a free loopback port."""

    def __init__(self, db: Database, folder: Path, mode: str = "transaction"):
        self.db, self.folder, self.mode = db, folder, mode
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def config(self) -> str:
        info = conninfo_to_dict(self.db.dsn)
        target = " ".join(
            f"{key}={info[key]}" for key in ("host", "port", "dbname", "user", "password") if info.get(key)
        )
        return "\n".join(
            [
                "[databases]",
                f"lab = {target}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {self.port}",
                "unix_socket_dir =",
                "auth_type = any",
                f"pool_mode = {self.mode}",
                "default_pool_size = 2",
                f"logfile = {self.folder / 'pgbouncer.log'}",
                "ignore_startup_parameters = extra_float_digits,options",
                "",
            ]
        )

    def __enter__(self) -> PgBouncer:
        ini = self.folder / "pgbouncer.ini"
        ini.write_text(self.config())
        pooler = pooler_installed()
        if pooler is None:
            raise RuntimeError("pgbouncer is not installed here (Debian: apt-get install pgbouncer)")
        argv = [pooler, str(ini)]
        if getattr(os, "geteuid", lambda: -1)() == 0:
            argv += ["-u", self.unprivileged_user()]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + POOLER_START_S
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"pgbouncer did not start; its log: {self.folder / 'pgbouncer.log'}")

    def unprivileged_user(self) -> str:
        """pgbouncer refuses to run as root: run it as the owner of the
        server's socket folder (who can reach the socket), else nobody."""
        import pwd  # POSIX only, and only root needs it

        host = str(conninfo_to_dict(self.db.dsn).get("host") or "")
        os.chmod(self.folder, 0o777)  # a throwaway folder the new user must write its log into
        return pwd.getpwuid(os.stat(host).st_uid).pw_name if host.startswith("/") else "nobody"

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            dbname="lab",
            user="learner",
            autocommit=True,
            prepare_threshold=None,
            connect_timeout=5,
        )

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def through_pooler(db: Database) -> PoolerResult:
    """LISTEN through pgbouncer in transaction mode, NOTIFY directly: the
    listener's registration stays on a server session the pooler no longer
    links to it, so nothing reaches it. Skipped, with the reason, where
    pgbouncer is not installed."""
    if pooler_installed() is None:
        return PoolerResult(False, "pgbouncer is not installed here (Debian: apt-get install pgbouncer)")
    direct = listen_is_per_session(db).listening_session_heard
    session, transaction = (listen_through(db, mode) for mode in ("session", "transaction"))
    return PoolerResult(True, f"pgbouncer at {pooler_installed()}", direct, session, transaction)


def listen_through(db: Database, mode: str) -> int:
    """LISTEN through pgbouncer in `mode`, let another client run a
    statement, NOTIFY directly; how many notifications the listener heard."""
    with (
        tempfile.TemporaryDirectory(prefix="pgq-pooler-") as folder,
        PgBouncer(db, Path(folder), mode) as pooler,
        pooler.connect() as pooled,
    ):
        run(pooled, "lab/listen_channel", idents={"channel": CHANNEL})
        # Another client runs a statement. In transaction mode it may get the very server
        # session the listener used; in session mode that session stays the listener's.
        with pooler.connect() as other:
            run(other, "lab/open_transaction")
        notify_in_one_transaction(db, ["through the pooler"])
        return len(heard(pooled, QUIET_S * 3))
