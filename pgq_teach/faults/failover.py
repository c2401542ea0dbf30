"""The failover drill: the fault run's workers on a throwaway primary, the primary killed in
the middle of the run, its streaming replica promoted, the workers pointed at it, the queue
drained, and what the failover cost counted.

Each configuration is a replication mode and a completion mode:
- async / sync: the replica is asynchronous, or named in the primary's
  synchronous_standby_names, so a commit with synchronous_commit on waits until the replica
  has flushed its WAL (PostgreSQL 18 docs, "Synchronous Replication", 26.2.8).
- relaxed / durable: the Worker's completions run with synchronous_commit off for their own
  transaction (set_config(..., true) inside sql/complete_many_relaxed.sql, on the worker's
  work session), or with the server's synchronous_commit, on (Worker durable_completions).
  Claims and enqueues always run with synchronous_commit on.

Over a local socket a replica is under a millisecond behind, so the drill makes lag: it
SIGSTOPs the replica's WAL receiver `lag` seconds before the kill, and SIGKILLs it with the
primary, so the WAL of those seconds (sent, but not read) never reaches the replica, as the
last moments of a primary whose machine dies never reach an asynchronous replica. In the
synchronous configurations every commit that waits for the replica waits through the window
and is never acknowledged.

What the workers were handed and what the server acknowledged is noted on this machine
(each worker's .acks file, the drill's own enqueues in memory), never only on the primary,
which dies with it. The counts, each judged against what its configuration allows:
- jobs lost: enqueued and acknowledged, then not on the new primary;
- completions lost: acknowledged done before the kill, not done on the new primary;
- jobs run again: handed to a handler more than once;
- token repeats: one (job, fencing token) handed to a handler twice;
- stale completions accepted: a completion acknowledged for a claim that a later claim with
  the same token had superseded. In the drill's runs it needs a completion whose send failed
  at the kill, still held when the new primary opens, landing within a re-claim's 2-10 ms
  handler, so it stays 0; tests/test_failover.py builds the case on a pair (a holder from the
  old primary completing on the new one).
With the fencing epoch (sql/fence_epoch.sql, run once at promotion) no token repeats, and
with sql/fence_sequences.sql beside it, in each database, no id from a sequence does.
Where the broker extra is installed, outbox events are counted too (failover_outbox.py says
how); elsewhere the output says they are not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import psycopg

from .. import checks, queue, tables
from ..databases import Database
from ..infra import server as servers
from ..infra.replica import Pair
from ..statements import run, run_one
from . import failover_outbox as box
from .fleet import KIND, Fleet
from .settings import DAY, RunSettings

CONFIGS = ("async-relaxed", "async-durable", "sync-relaxed", "sync-durable")
COUNTS = ("jobs_lost", "completions_lost", "run_again", "token_repeats", "stale_accepted")
LABELS = {
    "jobs_lost": "jobs lost (enqueued, acknowledged, gone)",
    "completions_lost": "completions lost (done, then not done)",
    "run_again": "jobs run again",
    "token_repeats": "fence tokens handed out twice",
    "stale_accepted": "stale completions accepted",
}
LABELS |= box.LABELS


def outbox_line() -> str:
    return box.COUNTED if box.counted() else box.NOT_COUNTED


def allowed(config: str, count: str, epoch: bool) -> bool:
    """Whether `config` may show a nonzero `count`. Running again is what at-least-once allows,
    everywhere. A synchronous replica has every acknowledged enqueue and claim, and (durable)
    every acknowledged completion; a relaxed completion never waited for it. Without the epoch
    an asynchronous failover may hand a token out again; with it, never."""
    sync, durable = config.startswith("sync"), config.endswith("durable")
    if count in box.COUNTS:
        return box.allowed(config, count)
    if count == "run_again":
        return True
    if count == "completions_lost":
        return not (sync and durable)
    if count == "jobs_lost":
        return not sync
    return not sync and not epoch  # token repeats and the stale completions they let in


@dataclass(frozen=True, kw_only=True)
class DrillSettings(RunSettings):
    """A drill: `jobs` seeded and due at once, `workers` fleet workers with a `lease`; the kill
    when `kill_at` of the jobs are done; the replica's WAL receiver paused `lag` seconds
    before it; the drill enqueuing more jobs during that window; the fencing epoch at
    promotion unless `epoch` is False."""

    jobs: int = 1_000
    workers: int = 4
    lease: float = 2.0
    poll: float = 0.1
    max_attempts: int = 25
    drain_timeout: float = 120.0
    lag: float = 1.0
    kill_at: float = 0.4
    epoch: bool = True
    durable: bool = False  # set per configuration: the Worker's durable_completions
    mode: ClassVar[str] = "drill"
    handler_ms: ClassVar[tuple[int, int]] = (2, 10)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.keep("lag", checks.seconds("lag", self.lag, 0.05, 60))
        self.keep("kill_at", checks.fraction("kill_at", self.kill_at))
        checks.one_of("epoch", self.epoch, (True, False))

    def worker_spec(self) -> dict[str, Any]:
        return super().worker_spec() | {"acks": True, "max_seconds": DAY, "durable": self.durable}


@dataclass
class ConfigResult:
    """One configuration's counts, what it allows, an example of each, and the run's facts."""

    config: str
    epoch: bool
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    enqueued_in_window: int = 0
    done_before_kill: int = 0
    lag_seconds: float = 0.0
    epoch_base: int | None = None
    drained: bool = False
    seconds: float = 0.0
    outbox: dict[str, Any] | None = None  # what the outbox saw, where the broker extra is installed

    def allows(self, count: str) -> bool:
        return allowed(self.config, count, self.epoch)

    @property
    def breaches(self) -> list[str]:
        found = [
            f"{self.config}: {self.counts[c]} {LABELS[c]}, which it must not"
            for c in self.counts
            if self.counts[c] and not self.allows(c)
        ]
        if self.outbox is not None and not self.outbox["settled"]:
            found.append(f"{self.config}: the relay did not send the new primary's outbox")
        return found + ([] if self.drained else [f"{self.config}: the queue did not drain"])


@dataclass
class DrillReport:
    settings: DrillSettings
    results: list[ConfigResult]

    @property
    def ok(self) -> bool:
        return not any(r.breaches for r in self.results)

    def as_json(self) -> dict[str, Any]:
        return {
            # durable is each configuration's own (its name says it), not the drill's
            "settings": {k: v for k, v in asdict(self.settings).items() if k != "durable"},
            "outbox": outbox_line(),
            "ok": self.ok,
            "configs": [asdict(r) | {"allows": {c: r.allows(c) for c in r.counts}} for r in self.results],
        }


# --- one configuration ---------------------------------------------------------------------


def run_drill(
    settings: DrillSettings, configs: tuple[str, ...], progress: Callable[[str], None] = print
) -> DrillReport:
    """Each configuration on a pair of its own; the report of them all."""
    results = []
    for config in configs:
        progress(f"{config}: starting a primary and its {config.split('-')[0]}hronous replica")
        results.append(run_config(settings, config, progress))
    return DrillReport(settings, results)


def run_config(settings: DrillSettings, config: str, progress: Callable[[str], None]) -> ConfigResult:
    result = ConfigResult(config, settings.epoch, lag_seconds=settings.lag)
    began = time.monotonic()
    settings = dataclasses.replace(settings, durable=config.endswith("durable"))
    tally = None
    with servers.replica_pair(synchronous=config.startswith("sync")) as pair:
        db = _database(pair)
        with _outbox(pair, db, settings) as outbox, Fleet(db, settings) as fleet:
            fleet.seed()
            enqueued = [row[0] for row in _jobs(pair.primary, pair)]
            _caught_up(pair)
            fleet.start()
            if outbox is not None:
                outbox.start()
            _wait_until_done(fleet, int(settings.jobs * settings.kill_at), progress, config)
            extra, kill_time = _lag_then_kill(pair, settings.lag, db)
            if outbox is not None:
                outbox.stop_writing.set()  # checkout wrote on the old primary only
            enqueued += extra
            result.enqueued_in_window = len(extra)
            progress(
                f"{config}: primary killed after a lag window of {settings.lag:g} s "
                f"(replica's WAL receiver paused); promoting the replica"
            )
            pair.promote()
            if settings.epoch:  # before any worker or checkout can land on it
                result.epoch_base = _fence(pair, outbox is not None)
            after = {row[0]: row for row in _jobs(pair.replica, pair)}
            pair.open_for_writes()
            result.drained = _drain(fleet, settings, progress, config)
            settled = outbox.settle() if outbox is not None else False
            fleet.pool.stop_all()
            claims, dones = _read_acks(fleet.folder)
            tally = outbox.tally() if outbox is not None else None
        final = {row[0]: row for row in _jobs(pair.replica, pair)}
    _judge(result, enqueued, after, final, claims, dones, kill_time)
    if tally is not None:
        result.counts |= tally.counts
        result.examples |= tally.examples
        result.outbox = {
            "written": tally.written, "stored": tally.stored, "absorbed_by_window": tally.absorbed,
            "applied": tally.applied, "settled": settled,
        }  # fmt: skip
    result.seconds = time.monotonic() - began
    return result


def _fence(pair: Pair, with_outbox: bool) -> int:
    """The epoch at promotion: every sequence moved past the old primary's in each database
    (the outbox's orders too), then the jobs' tokens; the new tokens' base."""
    if with_outbox:
        with pair.writable(box.OUTBOX_DB) as conn:
            run(conn, "fence_sequences")
    with pair.writable() as conn:
        run(conn, "fence_sequences")  # first: fence_epoch then reports the next job id
        return int(run_one(conn, "fence_epoch")[0])


def _outbox(pair: Pair, db: Database, settings: DrillSettings) -> Any:
    """The drill's outbox where the broker extra is installed; else a block that holds None."""
    if not box.counted():
        return contextlib.nullcontext(None)
    return box.DrillOutbox(pair, db.server, lease=settings.lease)


def _database(pair: Pair) -> Database:
    """The pair's postgres database with the course's schema, reached through both servers."""
    with pair.connect(pair.primary) as conn:
        run(conn, "schema")
        version, num = run_one(conn, "admin/server_version")
    server = servers.Server("drill pair", pair.failover_dsn("postgres"), version.split()[0], num)
    return Database("postgres", server.dsn, server)


def _jobs(which: Path, pair: Pair) -> list[tuple[int, str, int]]:
    with pair.connect(which) as conn:
        return [tuple(row) for row in run(conn, "lab/drill_jobs").fetchall()]


def _caught_up(pair: Pair, seconds: float = 30.0) -> None:
    """Wait until the replica has replayed all the primary wrote (the seed is acknowledged)."""
    deadline = time.monotonic() + seconds
    with pair.connect(pair.primary) as conn:
        while time.monotonic() < deadline:
            rows = run(conn, "admin/replication_state").fetchall()
            if rows and rows[0][5]:
                return
            time.sleep(0.05)


def _wait_until_done(fleet: Fleet, target: int, progress: Callable[[str], None], config: str) -> None:
    last = time.monotonic()
    while True:
        state = fleet.progress()
        if state["done"] >= target:
            return
        if time.monotonic() - last > 5:
            progress(f"{config}: {state['done']:,} done of {target:,} before the kill")
            last = time.monotonic()
        fleet.replace_crashed()
        time.sleep(0.05)


def _lag_then_kill(pair: Pair, lag: float, db: Database) -> tuple[list[int], float]:
    """Pause the replica's WAL receiver, enqueue from a thread for `lag` seconds (noting each
    acknowledged id), then kill the primary and the paused receiver. The acknowledged ids and
    the moment of the kill (wall clock, as the workers note theirs)."""
    acked: list[int] = []
    stop = threading.Event()

    def enqueue() -> None:
        with contextlib.suppress(psycopg.Error), pair.connect(pair.primary) as conn:
            n = 10_000_000
            while not stop.is_set():
                n += 1
                acked.append(queue.enqueue(conn, KIND, {"n": n}, notify=False))
                time.sleep(0.005)

    thread = threading.Thread(target=enqueue, daemon=True)
    with lost_window(pair):
        thread.start()
        time.sleep(lag)
        stop.set()
        kill_time = time.time()
    thread.join(10)
    return list(acked), kill_time


@contextlib.contextmanager
def lost_window(pair: Pair) -> Iterator[None]:
    """What the primary commits inside this block never reaches the replica: the replica's
    WAL receiver is paused (SIGSTOP) on entry; on exit the primary is killed, and then the
    paused receiver, so the bytes in flight die with its connection."""
    receiver = pair.walreceiver_pid()
    os.kill(receiver, signal.SIGSTOP)
    try:
        yield
        pair.kill_primary()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(receiver, signal.SIGKILL)
            os.kill(receiver, signal.SIGCONT)


def _drain(fleet: Fleet, settings: DrillSettings, progress: Callable[[str], None], config: str) -> bool:
    deadline = time.monotonic() + settings.drain_timeout
    last = time.monotonic()
    while time.monotonic() < deadline:
        state = fleet.progress()
        if state["ready"] == 0 and state["running"] == 0:
            return True
        if time.monotonic() - last > 5:
            progress(f"{config}: draining on the new primary, {state['ready'] + state['running']:,} left")
            last = time.monotonic()
        fleet.replace_crashed()
        time.sleep(0.1)
    return False


# --- judging -------------------------------------------------------------------------------


Note = tuple[str, int, int, float]  # worker, job id, token, wall-clock time


def _read_acks(folder: Path) -> tuple[list[Note], list[Note]]:
    claims: list[Note] = []
    dones: list[Note] = []
    for path in sorted(folder.glob("*.acks")):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                what, job_id, token, at = json.loads(line)
                (claims if what == "claim" else dones).append((path.stem, job_id, token, at))
    return claims, dones


def _judge(
    result: ConfigResult,
    enqueued: list[int],
    after: dict[int, tuple],
    final: dict[int, tuple],
    claims: list[Note],
    dones: list[Note],
    kill_time: float,
) -> None:
    """The counts, from the notes made on this machine and the new primary's rows."""
    lost = [i for i in enqueued if i not in final]
    done_before = {job_id for _, job_id, _, at in dones if at < kill_time}
    undone = sorted(i for i in done_before if i in after and after[i][1] != "done")
    per_job = Counter(job_id for _, job_id, _, _ in claims)
    handed: dict[tuple[int, int], list[Note]] = defaultdict(list)
    for note in claims:
        handed[(note[1], note[2])].append(note)
    repeats = {pair: notes for pair, notes in handed.items() if len(notes) > 1}
    stale = [d for d in dones if (d[1], d[2]) in repeats and _superseded(d, repeats[(d[1], d[2])])]
    result.done_before_kill = len(done_before)
    result.counts = {
        "jobs_lost": len(lost),
        "completions_lost": len(undone),
        "run_again": sum(1 for n in per_job.values() if n > 1),
        "token_repeats": len(repeats),
        "stale_accepted": len(stale),
    }
    if lost:
        result.examples["jobs_lost"] = f"job {lost[0]}"
    if undone:
        result.examples["completions_lost"] = (
            f"job {undone[0]}: done before the kill, {after[undone[0]][1]} after"
        )
    if repeats:
        (job_id, token), notes = min(repeats.items())
        result.examples["token_repeats"] = (
            f"job {job_id}, token {token}: handed to {', '.join(n[0] for n in notes)}"
        )
    if stale:
        result.examples["stale_accepted"] = f"job {stale[0][1]}, token {stale[0][2]} by {stale[0][0]}"


def _superseded(done: Note, notes: list[Note]) -> bool:
    """Whether the claim this completion belongs to (its worker's last claim of the pair before
    the completion) was followed by another claim of the same pair before it."""
    mine = [n[3] for n in notes if n[0] == done[0] and n[3] <= done[3]]
    return bool(mine) and any(
        max(mine) < n[3] <= done[3] for n in notes if n[0] != done[0] or n[3] != max(mine)
    )


def table(report: DrillReport) -> tables.Table:
    """A row per count, a column per configuration: each cell the count and what the
    configuration allows ("may" or "must be 0"), BREACH where it broke that."""
    cols = [
        tables.Column("count"),
        *(tables.Column(r.config + (" (no epoch)" if not r.epoch else "")) for r in report.results),
    ]
    rows = []
    counted = [c for c in (*COUNTS, *box.COUNTS) if any(c in r.counts for r in report.results)]
    for count in counted:
        cells = []
        for r in report.results:
            n, ok = r.counts.get(count, 0), r.allows(count)
            cells.append(f"{n:,} ({'may' if ok else 'must be 0'}){'' if ok or not n else ' BREACH'}")
        rows.append([LABELS[count], *cells])
    rows.append(["lag window (WAL receiver paused)", *(f"{r.lag_seconds:g} s" for r in report.results)])
    rows.append(["drill took", *(f"{r.seconds:.0f} s" for r in report.results)])
    return tables.Table(cols, rows)


def summary(report: DrillReport) -> str:
    """The table, an example of each nonzero count, the outbox line, and the verdict."""
    lines = [table(report).text()]
    for r in report.results:
        for count, example in r.examples.items():
            lines.append(f"  {r.config}, {LABELS[count]}: e.g. {example}")
        if r.epoch_base is not None:
            lines.append(
                f"  {r.config}: fencing epoch at promotion moved the token of every job not done to "
                f"{r.epoch_base:,}, and new ids past the old primary's"
            )
        if r.outbox is not None:
            o = r.outbox
            lines.append(
                f"  {r.config}: outbox events written {o['written']:,}, stored in the broker "
                f"{o['stored']:,}, repeats its duplicate window absorbed {o['absorbed_by_window']:,}, "
                f"applied by the consumer {o['applied']:,}"
            )
    lines.append(f"  {outbox_line()}")
    breaches = [b for r in report.results for b in r.breaches]
    lines += [f"  BREACH: {b}" for b in breaches] or ["  every configuration stayed within what it allows"]
    return "\n".join(lines)
