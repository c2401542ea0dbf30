"""The fault run: kill, freeze and cut off workers and restart the server
while they drain a queue; then judge from the database that nothing was lost,
no effect happened twice and no stale completion was accepted."""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import queue
from ..databases import Database
from ..queue import _check_positive_int, as_lease
from .fleet import (Progress, _admin, _check_seconds, _Child, _Pool, _prepare, _Session, _verdict_lines,
                    restart_server)


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
        "lease": lease, "poll": poll, "batch": 10, "sleep_ms": (2, 12),
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
