"""NOTIFY's cost with many producers: enqueue throughput of 8 producers with a
NOTIFY per job, one per transaction, or none."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial

import psycopg

from ... import charts, checks, queue, tables
from ...databases import Database
from ...guide import GuideFigure, figure
from ...statements import run
from ..results import Comparison, Progress, Result, finish, note, tell
from ..sessions import together
from .listening import KIND

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

    def report(self) -> list[str]:
        lines = [
            f"enqueue cost: {self.producers} producers, {self.transactions} transactions each of "
            f"{self.per_transaction} jobs ({self.jobs:,} jobs per mode), "
            f"best of {tables.count(self.rounds, 'round')}" + self.stopped_note
        ]
        lines += [  # the jobs stored and notifications heard: the table has the rates
            f"  NOTIFY {mode:<16} {self.elapsed_s[mode]:.2f} s, {self.jobs_per_s(mode):,.0f} jobs/s; "
            f"{self.enqueued.get(mode, 0):,} jobs in the table, "
            f"{self.heard.get(mode, 0):,} notifications heard"
            for mode in self.modes
        ]
        return [note(line) for line in lines] + self.footer()

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
    return finish(
        CostResult,
        db,
        producers=producers,
        transactions=transactions,
        per_transaction=per_transaction,
        elapsed_s=elapsed,
        stopped=stop,
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
