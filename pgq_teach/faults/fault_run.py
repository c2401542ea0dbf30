"""The fault run: kill, freeze and cut off workers and restart the server
while they drain a queue; then judge from the database that nothing was lost,
no effect happened twice and no stale completion was accepted. Dead jobs are
requeued as the run goes, so the verdict also covers a worker that comes back
after its job was requeued and claimed again: every other pause freezes a worker
on a job with one try and holds it until that has happened (ten leases at the
most)."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Any

from .. import queue, tables
from ..databases import Database
from ..experiments.results import Progress
from .fleet import (
    SHARED_INVARIANTS,
    Child,
    Fleet,
    RunReport,
    broken,
    copy_verdict,
    restart_server,
)
from .settings import FaultSettings

# The longest, in leases, a worker frozen on a one-try job waits for another claim to take it.
HOLD_LEASES = 10

# What the fault run must never see, as (report field, what a count of one means, what a
# larger count means).
_INVARIANTS = (
    ("lost", "job neither done nor dead: lost", "jobs neither done nor dead: lost"),
    ("running_at_end", "job still running after a final reaper pass",
     "jobs still running after a final reaper pass"),
    ("effects_after_done", "effect first recorded after its job was done",
     "effects first recorded after their job was done"),
    ("stale_done_accepted", "stale completion accepted: not fenced",
     "stale completions accepted: not fenced"),
    ("done_by_stale_claim", "job marked done by a worker whose claim was not the latest",
     "jobs marked done by a worker whose claim was not the latest"),
    ("fenced_own_completion", "completing claim told it was fenced",
     "completing claims told they were fenced"),
    ("run_twice_while_held", "job run twice while the process held its lease",
     "jobs run twice while the process held their lease"),
    *SHARED_INVARIANTS,
)  # fmt: skip
_FROM_VERDICT = (
    "done", "dead", "duplicate_effects", "done_without_effect", "effects_not_done", "effects_after_done",
    "fenced", "stale_done_accepted", "done_by_stale_claim", "fenced_own_completion", "overwrites",
    "jobs_done_twice", "calls", "absorbed", "calls_after_done", "claims_not_completing",
    "outcomes_across_requeue", "run_twice_while_held",
)  # fmt: skip


@dataclass(kw_only=True)
class FaultReport(RunReport):
    """What the fault run did and what the database says came of it."""

    settings: FaultSettings
    processes_started: int = 0
    kills: int = 0
    kills_mid_job: int = 0
    pauses: int = 0
    fragile_pauses: int = 0
    pauses_claimed_again: int = 0
    terminations: int = 0
    sessions_ended: int = 0
    heartbeats_ended: int = 0
    run_twice_while_held: int = 0
    restarts: int = 0
    restart_note: str = ""
    requeue_rounds: int = 0
    requeued: int = 0
    outcomes_across_requeue: int = 0
    lost: int = 0
    reaped_at_end: int = 0
    effects_not_done: int = 0
    effects_after_done: int = 0
    stale_done_accepted: int = 0
    done_by_stale_claim: int = 0
    fenced_own_completion: int = 0
    absorbed: int = 0
    claims_not_completing: int = 0
    longest_overdue: float = 0.0
    reconnects_of_survivors: int = 0
    timed_out: int = 0  # jobs failed at their job timeout (settings.timeout), by every worker
    handed_back_of_survivors: int = 0  # jobs handed back for want of a token (settings.rate_limit)
    drain_seconds: float = 0.0
    extended_seconds: float = 0.0  # faults went on past `seconds` until their clocks' share was met

    @property
    def violations(self) -> list[str]:
        return broken(self, _INVARIANTS)

    def lines(self) -> list[str]:
        s = self.settings
        return [
            f"fault run on {self.server}",
            f"  {tables.count(s.jobs, 'job')}, {tables.count(s.workers, 'worker')} at a time "
            f"({tables.count(self.processes_started, 'process')} started), lease {s.lease:g} s, "
            f"faults for {s.seconds:g} s"
            + (
                f" and {self.extended_seconds:.0f} s more (a slow machine fell short of them)"
                if self.extended_seconds
                else ""
            ),
            f"  faults: {tables.count(self.kills, 'SIGKILL')} ({self.kills_mid_job} mid-job), "
            f"{tables.count(self.pauses, 'SIGSTOP pause')} past the lease "
            f"({self.fragile_pauses} on a one-try job, {self.pauses_claimed_again} of them held "
            "until another claim took it), "
            f"{tables.count(self.terminations, 'pg_terminate_backend round')} "
            f"({tables.count(self.sessions_ended, 'session')}), "
            f"{tables.count(self.restarts, 'server restart')}"
            + (f" [{self.restart_note}]" if self.restart_note else ""),
            f"  heartbeat pools: {tables.count(s.concurrency, 'executor')} per process, batch {s.batch}, "
            f"every {s.long_every}th job works 1.5 leases; "
            f"{tables.count(self.heartbeats_ended, 'heartbeat session')} ended; "
            f"jobs run twice while the process held their lease {self.run_twice_while_held}",
            f"  requeues: {tables.count(self.requeued, 'dead job')} put back to ready in "
            f"{tables.count(self.requeue_rounds, 'round')}; "
            f"outcomes reported by a claim from before its job's requeue {self.outcomes_across_requeue}",
            f"  result: done {self.done:,}, dead {self.dead:,}, lost {self.lost}, "
            f"still running after a final reaper pass {self.running_at_end} "
            f"(that pass reaped {self.reaped_at_end})",
            f"  effects: duplicate effects {self.duplicate_effects}, done without effect "
            f"{self.done_without_effect}, effects of jobs not done {self.effects_not_done}",
            f"  fencing: {tables.count(self.fenced, 'stale completion')} fenced "
            "(reported by workers that lived to report), "
            f"stale completions accepted {self.stale_done_accepted} (jobs marked done by a stale claim "
            f"{self.done_by_stale_claim}), updates of finished jobs {self.overwrites}",
            f"  handler calls: {self.calls:,}, duplicate calls absorbed by the unique key {self.absorbed}, "
            f"calls that started after their job was done {self.calls_after_done}, claims that ran "
            f"but did not complete {self.claims_not_completing}",
            "  longest a lease stayed expired before a reaper took the job back: "
            f"{self.longest_overdue:.1f} s; "
            f"reconnects counted by the workers alive at the end: {self.reconnects_of_survivors}",
            *self._limit_lines(),
            f"  elapsed {self.elapsed:.1f} s (drain after the faults {self.drain_seconds:.1f} s)",
        ]

    def _limit_lines(self) -> list[str]:
        """The job timeout and the shared rate limit, when the run set them."""
        s = self.settings
        if s.timeout is None and s.rate_limit is None:
            return []
        timeout = f"{s.timeout:g} s" if s.timeout is not None else "none"
        rate = f"{s.rate_limit:g} jobs/s" if s.rate_limit is not None else "none"
        return [
            f"  per kind: job timeout {timeout} ({tables.count(self.timed_out, 'job')} timed out, "
            f"noted by every worker), shared rate limit {rate} "
            f"({tables.count(self.handed_back_of_survivors, 'job')} handed back, "
            "counted by the workers alive at the end)"
        ]


def run_faults(
    db: Database,
    settings: FaultSettings | None = None,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> FaultReport:
    """Drain the jobs, falling due evenly over `settings.seconds`, with
    worker processes while faults are injected for those seconds and dead
    jobs are requeued until the queue drains; then judge it (see
    FaultSettings; its defaults when None). Resets the jobs table of `db`."""
    s = settings or FaultSettings()
    stop = stop or threading.Event()
    report = FaultReport(server=db.server.line(), settings=s)
    with Fleet(db, s) as fleet:
        fleet.seed(fragile_every=s.fragile_every)
        fleet.start()
        faults = _Faults(fleet, s, report)
        while not stop.is_set() and not faults.over(time.monotonic(), progress):
            fleet.replace_crashed()
            faults.inject(time.monotonic())
            time.sleep(0.02)
        report.stopped = stop.is_set()
        report.drain_seconds = max(0.0, time.monotonic() - faults.chaos_end)
    report.elapsed, report.crashes = fleet.elapsed, fleet.crashes
    report.processes_started = fleet.pool.started
    report.reconnects_of_survivors = sum(r.get("reconnects", 0) for r in fleet.survivor_reports)
    report.timed_out = fleet.timed_out
    report.handed_back_of_survivors = sum(r.get("handed_back", 0) for r in fleet.survivor_reports)
    try:
        # One more reaper pass, once every lease has run out: nothing may be left.
        time.sleep(0.1)
        report.reaped_at_end = _final_reap(fleet, s.lease)
        _judge(fleet.verdict() | fleet.session.row("lab/fault_twice_held"), report)
    finally:
        fleet.session.close()
    return report


class _Faults:
    """The faults of one run, each on its own clock, injected while jobs fall
    due; the requeues of dead jobs go on until the queue has drained."""

    def __init__(self, fleet: Fleet, s: FaultSettings, report: FaultReport):
        self.fleet, self.s, self.report = fleet, s, report
        began = fleet.began
        self.next_kill, self.next_term = began + s.kill_every, began + s.terminate_every / 2
        self.next_pause, self.next_requeue = began + s.pause_every, began + s.requeue_every
        self.next_look = began
        self.next_beat_kill = began + s.beat_kill_every
        self.restart_at = began + 0.4 * s.seconds if s.restart else None
        self.chaos_end = began + s.seconds
        # The drain timeout counts from the faults' end, and again from each job done after it:
        # a run of many jobs drains for as long as it must, and only a queue that has stopped
        # draining is judged, its unfinished jobs lost.
        self.deadline = self.chaos_end + s.drain_timeout
        self.done = 0
        self.rng = random.Random()
        # A loaded machine runs this loop, and the workers, slowly: the faults go on past
        # their seconds (twice as long at the most) while jobs are left to strike, until
        # kills and terminations reach half of what their clocks promise, pauses a quarter,
        # and a frozen worker has come back to a job claimed again. Else a slow run would
        # test fewer faults than it says.
        self.extend_until = self.chaos_end + s.seconds
        self.began = began

    def short_of_faults(self) -> bool:
        s, r = self.s, self.report
        if self.done >= s.jobs:
            return False  # nothing is left to strike
        return (
            r.kills < s.seconds / s.kill_every / 2
            or r.terminations < s.seconds / s.terminate_every / 2
            or r.pauses < s.seconds / s.pause_every / 4  # a pause waits for a job in hand
            or (s.fragile_every > 0 and not self.fragile_met())
        )

    def extend(self, now: float) -> None:
        """A second more of faults; the drain's clock starts again at their new end."""
        self.chaos_end = now + 1.0
        self.deadline = max(self.deadline, self.chaos_end + self.s.drain_timeout)
        self.report.extended_seconds = self.chaos_end - self.began - self.s.seconds

    def inject(self, now: float) -> None:
        if now >= self.chaos_end and self.short_of_faults() and now < self.extend_until:
            self.extend(now)
        if now < self.chaos_end:
            if now >= self.next_kill:
                self.kill(now)
            if now >= self.next_term:
                self.terminate(now)
            if now >= self.next_pause:
                self.pause(now)
            if now >= self.next_beat_kill:
                self.end_heartbeat(now)
            if self.restart_at is not None and now >= self.restart_at:
                self.restart()
        if now >= self.next_requeue:
            self.requeue(now)

    def over(self, now: float, progress: Progress | None) -> bool:
        """Every quarter second: report progress and end the pauses whose job
        was claimed again; True once every job is done after the faults, or
        no job has been done for the drain timeout since they ended."""
        if now < self.next_look:
            return False
        self.next_look = now + 0.25
        for child in self.fleet.pool.frozen():
            if child.until_claimed is not None:
                self.watch(now, child)
        p = self.fleet.progress()
        self.report.longest_overdue = max(self.report.longest_overdue, p["overdue_seconds"])
        if progress:
            progress(p["done"] + p["dead"], self.s.jobs)
        if p["done"] > self.done:  # done never goes back (a requeue takes dead jobs only)
            # from the clock after the read, which may have waited out a server restart
            self.done, self.deadline = p["done"], max(self.deadline, time.monotonic() + self.s.drain_timeout)
        return (p["done"] >= self.s.jobs and now >= self.chaos_end) or now > self.deadline

    def kill(self, now: float) -> None:
        """SIGKILL a worker inside a job; after half a second of finding none, any worker."""
        running = self.fleet.pool.alive(paused=False)
        mid = self.fleet.busy(running)
        if not mid and now < self.next_kill + 0.5:
            return
        victim = self.rng.choice(mid or running or [None])
        if victim is not None:
            self.fleet.strike(victim, "kill")
            self.fleet.pool.kill(victim)
            self.fleet.pool.start()
            self.report.kills += 1
            self.report.kills_mid_job += bool(mid)
        self.next_kill = now + self.s.kill_every

    def terminate(self, now: float) -> None:
        """End every session of one worker (LISTEN and heartbeat included) with
        pg_terminate_backend. Frozen workers are left alone: they are there to
        come back late. The victim is the first, in a random order, that has a
        session to end: on a loaded machine a worker just started after a kill
        may not have connected yet, and a round that ends nothing tests nothing."""
        alive = self.fleet.pool.alive(paused=False)
        if alive:
            self.report.terminations += 1
        for victim in self.rng.sample(alive, len(alive)):
            ended = self.fleet.session.rows("lab/terminate_sessions_named", {"name": victim.name})
            ended += self.fleet.session.rows(
                "lab/terminate_sessions_named", {"name": f"{victim.name} heartbeat"}
            )
            self.report.sessions_ended += len(ended)
            if ended:
                break
        self.next_term = now + self.s.terminate_every

    def end_heartbeat(self, now: float) -> None:
        """End one worker's heartbeat session only, as a network cut or a
        failover would: its next beat must be retried on a fresh connection."""
        victim = self.rng.choice(self.fleet.pool.alive(paused=False) or [None])
        if victim is not None:
            ended = self.fleet.session.rows(
                "lab/terminate_sessions_named", {"name": f"{victim.name} heartbeat"}
            )
            self.report.heartbeats_ended += len(ended)
        self.next_beat_kill = now + self.s.beat_kill_every

    def pause(self, now: float) -> None:
        """SIGSTOP a worker inside a job, past its lease. Every other pause,
        and every pause until one on a fragile job (one try) is under way or
        has seen its job claimed again, prefers such a job, and takes any job
        only after half a second of finding none: its lost lease kills it, a
        requeue brings it back, and the worker stays frozen until another
        claim has taken it (HOLD_LEASES leases at the most), so it comes back
        to a job requeued and claimed again, however long that took on a
        loaded machine. Any other pause lasts two leases and half a second."""
        running = self.fleet.pool.alive(paused=False)
        if len(running) > 1:  # keep a worker running
            prefer = self.s.fragile_every > 0 and (self.report.pauses % 2 == 0 or not self.fragile_met())
            in_hand = self.fleet.in_hand(running)
            names = {j.name for j in in_hand if j.fragile} if prefer else set()
            if not names and (not prefer or now >= self.next_pause + 0.5):
                names = {j.name for j in in_hand}
            mid = [c for c in running if c.name in names]
            if mid:
                self.strike_pause(now, self.rng.choice(mid), prefer)
        if now >= self.next_pause + 1.0:
            self.next_pause = now + self.s.pause_every  # nobody was inside a job for a second

    def strike_pause(self, now: float, victim: Child, prefer_fragile: bool) -> None:
        """Freeze `victim`; then, frozen, is it still inside a job? If not,
        let it go at once and try again on the next round."""
        fixed = 2 * self.s.lease + 0.5
        longest = HOLD_LEASES * self.s.lease if prefer_fragile else fixed
        self.fleet.strike(victim, "pause", longest)  # its true end is noted as it goes on
        self.fleet.pool.pause(victim, longest)
        in_hand = self.fleet.in_hand([victim])
        if not in_hand:
            victim.paused_until = 0.0
            self.fleet.resume_due()
            return
        fragile = next((j for j in in_hand if j.fragile), None) if prefer_fragile else None
        if fragile is not None:
            victim.until_claimed = (fragile.job_id, fragile.fence_token)
            self.report.fragile_pauses += 1
        else:
            victim.paused_until = time.monotonic() + fixed
        self.report.pauses += 1
        self.next_pause = now + self.s.pause_every

    def fragile_met(self) -> bool:
        """A pause on a fragile job is under way, or one has seen its job claimed again."""
        held = any(c.until_claimed is not None for c in self.fleet.pool.frozen())
        return held or self.report.pauses_claimed_again > 0

    def watch(self, now: float, child: Child) -> None:
        """A worker frozen until its job is claimed again: once the job's
        fencing token has moved on (only a claim moves it), let the worker go
        on the next round. Until then, once a requeue has made the job ready,
        put it first in line, so a claim takes it even behind a backlog."""
        assert child.until_claimed is not None
        job_id, token = child.until_claimed
        state = self.fleet.job_state(job_id)
        if state is None or state["fence_token"] > token:
            child.paused_until, child.until_claimed = now, None
            self.report.pauses_claimed_again += 1
        elif state["status"] == "ready":
            self.fleet.first_in_line(job_id)

    def restart(self) -> None:
        self.restart_at = None
        done, self.report.restart_note = restart_server(self.fleet.db, self.fleet.folder)
        self.report.restarts += done
        self.fleet.session.close()

    def requeue(self, now: float) -> None:
        """Put dead jobs back, as an operator would once the cause is fixed."""
        n = self.fleet.requeue_dead()
        self.report.requeue_rounds += bool(n)
        self.report.requeued += n
        self.next_requeue = now + self.s.requeue_every


def _final_reap(fleet: Fleet, lease: float) -> int:
    """Wait out the longest lease that can still be live, then reap once."""
    if fleet.progress()["running"]:
        time.sleep(lease + 0.5)
    return fleet.session.call(queue.reap)


def _judge(verdict: dict[str, Any], report: FaultReport) -> None:
    copy_verdict(report, verdict, _FROM_VERDICT)
    report.lost = verdict["enqueued"] - verdict["done"] - verdict["dead"]
    report.running_at_end = verdict["running"]
