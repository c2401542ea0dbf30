"""Lesson 07, wake-ups with LISTEN/NOTIFY, on the live server:

- notify rules: the rules of guide #12 that lesson 00 does not already
  check, each run live with its verdict (identical notifications fold into
  one, distinct ones do not; a listener inside its own transaction hears
  nothing until it ends; a notification nobody listens for is gone);
- heard_after_busy: a listening session whose client reads nothing for a
  while still gets every notification, at the client's next read;
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
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import charts, checks, measurements, queue, tables
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import run, run_one
from ..worker import Worker, running_idle
from .results import Comparison, Progress, Result, guess_text, server_fields, tell
from .sessions import LAB_PREFIX, Session, Step, together

CHANNEL = "pgq_lab_rules"  # the rules lab's own channel
QUIET_S = 0.3  # how long to listen for a notification that should not come
DELIVERY_S = 5.0  # how long to wait for one that should; it normally takes milliseconds
KIND = "send_receipt"
SENDER_PREFIX = f"{LAB_PREFIX} notify"  # the sending sessions' application_name: 'pgq-lab notify sender'


def listen(db: Database, channel: str = CHANNEL) -> psycopg.Connection:
    """A listening session of its own, autocommit, outside any transaction.

    Not a sessions.Session, on purpose: a Session's connection belongs to its
    own thread and runs every statement in a transaction it then commits,
    while a listener must sit idle outside any transaction (rule "busy
    listener") and be read with notifies(), which holds the connection while
    it waits, so it would block the Session's thread. A plain autocommit
    connection, read on the caller's thread, is what a worker would use."""
    conn = db.connect(autocommit=True)
    run(conn, "lab/listen_channel", idents={"channel": channel})
    return conn


def heard(listener: psycopg.Connection, seconds: float) -> list[str]:
    """Every payload that arrives within `seconds`."""
    return [n.payload for n in listener.notifies(timeout=seconds)]


def notify_in_one_transaction(db: Database, payloads: list[str], channel: str = CHANNEL) -> list[Step]:
    """A sender session, as in psql: BEGIN, one NOTIFY per payload, COMMIT.
    Its timeline: a failed Step carries the server's error (the transaction
    then commits nothing)."""
    with Session(db, "sender", prefix=SENDER_PREFIX) as sender:
        sender.begin()
        for payload in payloads:
            sender.run("lab/notify_channel", {"channel": channel, "payload": payload})
        sender.commit()
        sender.wait_done(timeout=DELIVERY_S * 2)
        return list(sender.timeline)


# --- the rules (guide #12) ---------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    question: str
    expected: str
    observed: str
    holds: bool


def one_transaction_rule(
    db: Database, name: str, question: str, payloads: list[str], arrive: list[str]
) -> Rule:
    """Send `payloads` in one transaction; the rule holds when exactly `arrive` arrives, in order."""
    with listen(db) as listener:
        notify_in_one_transaction(db, payloads)
        got = heard(listener, QUIET_S)
    return Rule(name, question, str(len(arrive)), str(len(got)), got == arrive)


def rule_identical(db: Database) -> Rule:
    """Three NOTIFYs with the same payload in one transaction arrive as one."""
    question = "Three identical notifications in one transaction: how many arrive?"
    return one_transaction_rule(db, "identical", question, [KIND] * 3, [KIND])


def rule_distinct(db: Database) -> Rule:
    """Three with different payloads arrive as three, in order."""
    question = "Three different payloads in one transaction: how many arrive?"
    return one_transaction_rule(db, "distinct", question, ["1", "2", "3"], ["1", "2", "3"])


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
        "nothing" if not got else tables.count(len(got), "notification"),
        not got,
    )


@dataclass(frozen=True)
class LateRead:
    """Notifications sent while a listening session's client read nothing, and
    what that client read once it looked."""

    sent: list[str]
    busy_s: float  # how long the client read nothing
    heard: list[str]


def heard_after_busy(db: Database, count: int = 3, busy_s: float = 1.0) -> LateRead:
    """A listening session (autocommit, outside any transaction) whose client
    reads nothing for `busy_s`, as a worker busy on its other connection,
    while `count` notifications are sent, each in a transaction of its own from
    another session; then the client reads. The server delivers each to the
    listening session as it commits; the client finds them at its next read."""
    count = checks.whole_number("count", count, 1, 100)
    busy_s = checks.seconds("busy_s", busy_s, 0.0, 10.0)
    sent = [f"sent while the client was busy ({n})" for n in range(1, count + 1)]
    with listen(db) as listener:
        began = time.monotonic()
        for payload in sent:
            notify_in_one_transaction(db, [payload])
        time.sleep(max(0.0, busy_s - (time.monotonic() - began)))
        got = heard(listener, QUIET_S)
    return LateRead(sent, busy_s, got)


RULES: dict[str, Callable[[Database], Rule]] = {
    "identical": rule_identical,
    "distinct": rule_distinct,
    "busy listener": rule_busy_listener,
    "nobody listening": rule_nobody_listening,
}


@dataclass(kw_only=True)
class RulesResult(Result):
    rules: list[Rule]
    guide: GuideFigure = field(default_factory=lambda: figure(12))

    @property
    def all_hold(self) -> bool:
        return bool(self.rules) and all(r.holds for r in self.rules)

    def rule(self, name: str) -> Rule:
        return next(r for r in self.rules if r.name == name)

    def comparison(self) -> list[Comparison]:
        """One row per rule run: what this server did beside what the guide says (the expected)."""
        return [(r.question, None, r.observed, r.expected) for r in self.rules]

    def summary(self) -> str:
        lines = ["NOTIFY rules, run live" + self.stopped_note]
        lines += [
            f"  {r.name:<17} expected {r.expected}; observed {r.observed}: "
            f"{'holds' if r.holds else 'DOES NOT HOLD'}"
            for r in self.rules
        ]
        return "\n".join(lines + self.footer())


def notify_rules(
    db: Database,
    names: list[str] | None = None,
    *,
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
        tell(progress, n + 1, len(names))
    return RulesResult(rules=done, stopped=len(done) < len(names), **server_fields(db))


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
    checks.whole_number("size (bytes)", size, 0, 1_000_000)
    refused = next((step for step in notify_in_one_transaction(db, ["x" * size]) if step.failed), None)
    if refused is not None:
        return PayloadResult(size, False, refused.sqlstate, refused.message)
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


@dataclass(kw_only=True)
class LatencyResult(Result):
    """Pickup latency; the guess is the median without NOTIFY, in ms."""

    poll_s: float
    pickups: list[Pickup]
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
        median, most = self.median_ms(notify), self.max_ms(notify)
        if median is None or most is None:
            return f"  {label} no jobs"
        return (
            f"  {label} median {median:,.1f} ms, max {most:,.1f} ms over {len(self.latencies(notify))} jobs"
        )

    @property
    def scale(self) -> float:
        """How much shorter our poll is than the guide's 5 s."""
        return self.guide.values["poll_s"] / self.poll_s

    def comparison(self) -> list[Comparison]:
        g = self.guide.values
        return [
            ("with NOTIFY, median ms", None, self.median_ms(True), f"within {g['notify_s'] * 1000:.0f}"),
            (
                "without NOTIFY, median ms",
                self.guess_cell,
                self.median_ms(False),
                f"up to the poll: {g['poll_s']:g} s (here {self.poll_s:g} s)",
            ),
            ("without NOTIFY, longest ms", None, self.max_ms(False), None),
        ]

    def summary(self) -> str:
        return "\n".join(
            [
                f"pickup latency, one idle Worker, poll {self.poll_s:g} s "
                f"(the guide's 5 s scaled by 1/{self.scale:g})" + self.stopped_note,
                self.line("with NOTIFY:   ", True),
                self.line("without NOTIFY:", False),
                f"  your guess, the median without NOTIFY: {guess_text(self.guess, ' ms')}",
            ]
            + self.footer()
        )

    def chart(self) -> charts.Chart:
        """Each job's pickup latency, with and without NOTIFY, beside the poll interval."""
        rows = [
            {
                "job": f"job {p.job_id}, {'with' if p.notify else 'without'} NOTIFY",
                "latency": p.latency_s * 1000,
                "wake-up": "with NOTIFY" if p.notify else "without NOTIFY (polling)",
            }
            for p in sorted(self.pickups, key=lambda p: (not p.notify, p.job_id))
        ]
        return charts.bars(
            rows,
            label="job",
            value="latency",
            colour="wake-up",
            fmt=",.1f",
            heading="Pickup latency: from commit to the worker's claim",
            value_axis=charts.axis("latency", "ms"),
            refs=[charts.Reference(f"poll every {self.poll_s:g} s", self.poll_s * 1000)],
        )


def settle(worker: Worker, empties: int, stop: threading.Event, timeout: float) -> None:
    """Wait until `worker` has claimed again and found nothing (more than `empties` empty
    claims): it then waits for its next poll or notification. Why: a worker whose batch was full
    claims again as soon as its executor is free, so on a busy machine an executor that finished
    late would claim the next job at once, neither polled nor woken."""
    deadline = time.monotonic() + timeout
    while worker.report.empty_claims <= empties and time.monotonic() < deadline:
        if stop.wait(0.005):
            return


def pickup_latency(
    db: Database,
    *,
    jobs: int = 12,
    poll_s: float = 1.0,
    seed: int | None = None,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LatencyResult:
    """Start one library Worker (poll `poll_s`), let it go idle, then enqueue
    `jobs` jobs one at a time at random moments, alternately with and
    without NOTIFY; each job's latency runs from its commit to its claim.
    The guess is the median latency without NOTIFY, in ms."""
    checks.whole_number("jobs", jobs, 2, 100)
    checks.seconds("poll_s", poll_s, 0.1, 10)
    stop = stop or threading.Event()
    chance = random.Random(seed)
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
    claimed: dict[int, float] = {}
    # the worker's empty claims when it claimed each job: its claim round has ended by then,
    # so a count above this one means it looked again after the job and found nothing
    empties_then: dict[int, int] = {}
    picked = threading.Condition()

    def on_event(name: str, job) -> None:
        if name == "claimed":
            with picked:
                claimed[job.id] = time.monotonic()
                empties_then[job.id] = worker.report.empty_claims
                picked.notify_all()

    worker = Worker(db.dsn, {KIND: lambda job: None}, poll=poll_s, on_event=on_event)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    pickups: list[Pickup] = []
    last_claim: float | None = None  # when the worker claimed the job before
    try:
        settle(worker, 0, stop, poll_s * 3 + 5)  # the first job finds it listening, its queue empty
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
                # The time since the last claim as it passed, not the pause asked for: on a busy
                # machine this thread wakes late from both waits, and the job then lands later in
                # the worker's poll cycle than the pause says.
                after_claim = pause if last_claim is None else committed - last_claim
                pickups.append(Pickup(job_id, notify, claimed[job_id] - committed, after_claim))
                last_claim = claimed[job_id]
                settle(worker, empties_then[job_id], stop, poll_s * 3 + 5)
                tell(progress, n + 1, jobs)
    finally:
        worker.stop()
        thread.join(timeout=poll_s + 5)
    result = LatencyResult(
        poll_s=poll_s, pickups=pickups, stopped=len(pickups) < jobs, guess=guess, **server_fields(db)
    )
    median = result.median_ms(True)
    if not result.stopped and median is not None:  # lesson 12 quotes it
        measurements.record(measurements.NOTIFY_MS, round(median, 1))
    return result


# --- NOTIFY's cost with many producers -------------------------------------------------

COST_MODES = ("per job", "per transaction", "none")
# what the listening session hears per mode, by the rules of guide #12: every job's id is a
# distinct payload; one kind per transaction folds within it, never across transactions
HEARD_PER = {"per job": "one per job", "per transaction": "one per transaction", "none": "none"}


@dataclass(kw_only=True)
class CostResult(Result):
    producers: int
    transactions: int
    per_transaction: int
    elapsed_s: dict[str, float]  # the best round, per mode
    rounds: int = 1
    # counted on the server and by the listener, per mode (its last round)
    enqueued: dict[str, int] = field(default_factory=dict)  # rows in jobs after the mode ran
    heard: dict[str, int] = field(default_factory=dict)  # notifications the listening session got
    guide: GuideFigure = field(default_factory=lambda: figure(12))

    @property
    def jobs(self) -> int:
        """The jobs each mode was asked to enqueue (producers x transactions x per transaction)."""
        return self.producers * self.transactions * self.per_transaction

    def jobs_per_s(self, mode: str) -> float:
        return self.jobs / self.elapsed_s[mode]

    @property
    def per_transaction_vs_per_job(self) -> float:
        """NOTIFY per transaction's time over NOTIFY per job's (1: the same). The guess
        predicts it. Both take the commit-time lock once per notifying transaction, so
        sending fewer notifications in the same transactions barely changes it."""
        return self.elapsed_s["per transaction"] / self.elapsed_s["per job"]

    @property
    def modes(self) -> list[str]:
        """The modes that ran, in the course's order."""
        return [mode for mode in COST_MODES if mode in self.elapsed_s]

    def comparison(self) -> list[Comparison]:
        """Per mode, its throughput and what the listener heard; the guide column
        gives what guide #12's rules predict the listener hears (it times nothing)."""
        rows: list[Comparison] = []
        if {"per job", "per transaction"} <= set(self.modes):
            rows.append(
                (
                    "time, NOTIFY per transaction / per job",
                    self.guess_cell,
                    self.per_transaction_vs_per_job,
                    None,
                )
            )
        for mode in self.modes:
            rows += [
                (f"NOTIFY {mode}: jobs/s", None, self.jobs_per_s(mode), None),
                (f"NOTIFY {mode}: notifications heard", None, self.heard.get(mode, 0), HEARD_PER[mode]),
            ]
        return rows

    def summary(self) -> str:
        lines = [
            f"enqueue cost: {self.producers} producers, {self.transactions} transactions each of "
            f"{self.per_transaction} jobs ({self.jobs:,} jobs per mode), "
            f"best of {tables.count(self.rounds, 'round')}" + self.stopped_note
        ]
        lines += [
            f"  NOTIFY {mode:<16} {self.elapsed_s[mode]:.2f} s, {self.jobs_per_s(mode):,.0f} jobs/s; "
            f"{self.enqueued.get(mode, 0):,} jobs in the table, "
            f"{self.heard.get(mode, 0):,} notifications heard"
            for mode in self.modes
        ]
        return "\n".join(lines + self.footer())

    def chart(self) -> charts.Chart:
        """Enqueue throughput under each NOTIFY mode."""
        rows = [{"mode": f"NOTIFY {mode}", "throughput": self.jobs_per_s(mode)} for mode in self.modes]
        return charts.bars(
            rows,
            label="mode",
            value="throughput",
            heading=f"Enqueue throughput, {self.producers} producers, "
            f"{self.per_transaction} jobs a transaction",
            value_axis=charts.axis("throughput", "jobs/s"),
        )


def produce(
    conns: list[psycopg.Connection],
    mode: str,
    index: int,
    *,
    transactions: int,
    per_transaction: int,
    stop: threading.Event,
) -> None:
    """Producer number `index`, on its own session conns[index]: `transactions`
    transactions of `per_transaction` enqueues, with a NOTIFY per job, one per
    transaction, or none (`mode`)."""
    conn = conns[index]
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


def notify_cost(
    db: Database,
    *,
    producers: int = 8,
    transactions: int = 50,
    per_transaction: int = 10,
    rounds: int = 2,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> CostResult:
    """Each mode: `producers` sessions, each committing `transactions`
    transactions of `per_transaction` enqueues, while one worker-like session
    listens (and reads what arrives). Each round runs the modes in turn, the
    order reversed every other round so none always runs first on a cold
    cache; a mode's time is its best round."""
    checks.whole_number("producers", producers, 1, 64)
    checks.whole_number("transactions", transactions, 1, 10_000)
    checks.whole_number("per_transaction", per_transaction, 1, 1_000)
    checks.whole_number("rounds", rounds, 1, 10)
    stop = stop or threading.Event()
    elapsed: dict[str, float] = {}
    enqueued: dict[str, int] = {}
    heard_by_mode: dict[str, int] = {}
    listening = threading.Event()
    listener = db.connect(autocommit=True)  # a plain connection: see listen()
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
            with ExitStack() as stack:  # fresh sessions each mode, connected before the clock starts
                conns = [stack.enter_context(db.connection()) for _ in range(producers)]
                took = together(
                    producers,
                    partial(
                        produce,
                        conns,
                        mode,
                        transactions=transactions,
                        per_transaction=per_transaction,
                        stop=stop,
                    ),
                )
            if not stop.is_set():
                elapsed[mode] = min(took, elapsed.get(mode, took))
                heard_by_mode[mode] = settled(count)
                with db.connection() as conn:
                    enqueued[mode] = sum(queue.status_counts(conn).values())
            tell(progress, index + 1, len(plan))
    finally:
        listening.set()
        reader.join()
        listener.close()
    return CostResult(
        producers=producers,
        transactions=transactions,
        per_transaction=per_transaction,
        elapsed_s=elapsed,
        stopped=stop.is_set(),
        rounds=rounds,
        guess=guess,
        enqueued=enqueued,
        heard=heard_by_mode,
        **server_fields(db),
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
    """One NOTIFY after a client LISTENed on a server session, as a transaction-mode
    pooler would then use the sessions: the client that listened has moved to
    another server session, and a second client now holds the one that listened."""

    listening_session_heard: int  # notifications the server sent on the session that ran LISTEN
    heard_by_next_client: list[str]  # payloads that reached the second client, with its own statement
    heard_by_listening_client: int  # what the client that listened hears, on its new session


def listen_is_per_session(db: Database) -> SessionBound:
    """What a pooler in transaction mode runs into: LISTEN registers one server
    session, and the server delivers there, to whoever holds that session. Client 1
    runs LISTEN on session S and moves to session T; client 2 gets S and runs one
    statement of its own. The notification arrives with client 2's statement."""
    for_client_two: list[str] = []
    with listen(db) as session_s, db.connection() as session_t:
        session_s.add_notify_handler(lambda n: for_client_two.append(n.payload))
        notify_in_one_transaction(db, ["for the listening session"])
        time.sleep(QUIET_S)  # delivered by now, to whoever reads session S next
        run(session_s, "lab/open_transaction")  # client 2's own statement on S
        client_one = heard(session_t, QUIET_S)  # client 1, on the session it got next
    return SessionBound(len(for_client_two), for_client_two, len(client_one))


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
    return PoolerResult(True, f"{pooler_version()} at {pooler_installed()}", direct, session, transaction)


def pooler_version() -> str:
    """The installed pgbouncer's own version line ("PgBouncer 1.18.0"), or "pgbouncer"."""
    pooler = pooler_installed()
    if pooler is None:
        return "pgbouncer"
    shown = subprocess.run([pooler, "--version"], capture_output=True, text=True, timeout=10, check=False)
    return next(iter(shown.stdout.splitlines()), "pgbouncer").strip() or "pgbouncer"


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


# --- the herd: N Workers against one Worker with N executors -----------------------------


@dataclass
class HerdSide:
    """One side of the herd lab: wake-ups and empty claims per job, sessions held."""

    label: str
    wakeups_per_job: float
    empty_claims_per_job: float
    sessions: int


@dataclass(kw_only=True)
class WakeupHerdResult(Result):
    """`workers` idle Workers, then one Worker with as many executors, each
    woken by `jobs` notifications in turn. The guess is of the wake-ups per
    job with separate Workers."""

    workers: int
    jobs: int
    separate: HerdSide
    pool: HerdSide
    guide: GuideFigure = field(default_factory=lambda: figure(13))

    def summary(self) -> str:
        lines = [f"{self.jobs} jobs, one at a time, to idle workers" + self.stopped_note]
        for side in (self.separate, self.pool):
            lines.append(
                f"  {side.label}: {side.wakeups_per_job:.1f} wake-ups and {side.empty_claims_per_job:.1f} "
                f"empty claims per job, {side.sessions} sessions held"
            )
        lines.append(f"  your guess for the separate Workers: {guess_text(self.guess, ' wake-ups per job')}")
        return "\n".join(lines + self.footer())

    def comparison(self) -> list[Comparison]:
        return [
            ("wake-ups per job, separate Workers", self.guess_cell, self.separate.wakeups_per_job, None),
            ("wake-ups per job, one Worker with executors", None, self.pool.wakeups_per_job, None),
        ]


def herd(
    db: Database,
    *,
    workers: int = 8,
    jobs: int = 10,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> WakeupHerdResult:
    """First `workers` separate idle Workers, then one Worker with `workers`
    executors (each with a 60 s poll, so only notifications wake them); enqueue
    `jobs` jobs one at a time, each with its NOTIFY, and count the wake-ups
    (notifications that ended a wait) and the claims that came back empty."""
    workers = checks.whole_number("workers", workers, 2, 32)
    jobs = checks.whole_number("jobs", jobs, 1, 100)
    stop = stop or threading.Event()
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
    sides = []
    for n, (label, fleet_of) in enumerate(
        (
            (f"{workers} separate Workers", lambda h: [Worker(db, h, poll=60) for _ in range(workers)]),
            (f"1 Worker, {workers} executors", lambda h: [Worker(db, h, poll=60, concurrency=workers)]),
        )
    ):
        sides.append(_herd_side(db, label, fleet_of, jobs, stop))
        tell(progress, n + 1, 2)
    return WakeupHerdResult(
        workers=workers,
        jobs=jobs,
        separate=sides[0],
        pool=sides[1],
        guess=guess,
        stopped=stop.is_set(),
        **server_fields(db),
    )


def settled_sessions(conn: psycopg.Connection, within_s: float = 5.0) -> int:
    """Other sessions on this database once none is still ending: a closed client's
    backend can linger a moment in pg_stat_activity. Waits until the count is 0, or
    has held still for half a second, or `within_s` passed."""
    deadline = time.monotonic() + within_s
    last = run_one(conn, "lab/other_sessions")[0]
    while last and time.monotonic() < deadline:
        time.sleep(0.5)
        now = run_one(conn, "lab/other_sessions")[0]
        if now == last:
            break
        last = now
    return last


def _herd_side(
    db: Database,
    label: str,
    fleet_of: Callable[[dict[str, Callable[[queue.Job], None]]], list[Worker]],
    jobs: int,
    stop: threading.Event,
) -> HerdSide:
    ran = threading.Event()
    with db.connection() as conn:
        before = settled_sessions(conn)  # the last side's sessions may take a moment to end
    with running_idle(fleet_of({KIND: lambda job: ran.set()})) as fleet, db.connection() as conn:
        sessions = run_one(conn, "lab/other_sessions")[0] - before
        woken = sum(w.report.wakeups for w in fleet)
        empty = sum(w.report.empty_claims for w in fleet)
        sent = 0
        while sent < jobs and not stop.is_set():
            ran.clear()
            queue.enqueue(conn, KIND, {})
            sent += 1
            ran.wait(10)
            time.sleep(0.1)  # every woken worker's claim lands before the next job
        woken = sum(w.report.wakeups for w in fleet) - woken
        empty = sum(w.report.empty_claims for w in fleet) - empty
    return HerdSide(label, woken / max(sent, 1), empty / max(sent, 1), sessions)
