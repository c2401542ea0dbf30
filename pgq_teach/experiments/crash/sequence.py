"""The guide's sequence (figure #8): `crash_both` starts both workers, ends each
one's session, and watches their jobs."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ... import checks
from ...databases import Database
from ...errors import PgqError
from ...guide import GuideFigure, figure
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell
from .scene import DEFAULT_LEASE_S, LEASE_LIMITS, BoardRow, CrashScene


@dataclass(kw_only=True)
class CrashResult(Result):
    lease_s: float
    hold_job: int
    lease_job: int
    lease_attempts: int  # what the lease worker's claim returned
    claim_before_crash: int | None  # a third worker's claim while both workers live
    held_job_claimed: int | None  # its claim right after the hold worker's session ended
    held_job_claim_s: float
    lease_status_after_end: str  # the leased job, right after its worker's session ended
    reaped_at_once: int  # the reaper, run right then
    lease_left_at_end_s: float  # how much of the lease was left then
    back_after_s: float  # from the end of the session to the reaper handing the job back
    leased_job_after: BoardRow
    guide: GuideFigure = field(default_factory=lambda: figure(8))

    @property
    def reaped_after_lease(self) -> bool:
        return self.leased_job_after.status == "ready" and self.leased_job_after.last_error == "lease expired"

    def report(self) -> list[str]:
        after = self.leased_job_after
        return [
            note(
                f"hold-style worker locked job {self.hold_job}; "
                f"lease-style worker claimed job {self.lease_job} "
                f"with a {self.lease_s:g} s lease (attempts {self.lease_attempts})" + self.stopped_note
            ),
            note(f"  a third worker, while both lived: {self.claim_before_crash or 'no job'}"),
            f"  hold worker's session ended: the third worker claimed job {self.held_job_claimed} "
            f"in {self.held_job_claim_s * 1000:.1f} ms",
            note(
                f"  lease worker's session ended: job {self.lease_job} still {self.lease_status_after_end}, "
                f"{self.lease_left_at_end_s:.2f} s of lease left; "
                f"the reaper then handed back {self.reaped_at_once}"
            ),
            note(
                f"  the reaper handed job {self.lease_job} back {self.back_after_s:.2f} s after its worker's "
                f"session ended (your guess: {guess_text(self.guess, ' s')}): {after.status}, "
                f"attempts {after.attempts}, last error {after.last_error!r}"
            ),
            *self.footer(),
        ]

    def comparison(self) -> list[Comparison]:
        return [
            ("held job claimable after the crash", None, f"{self.held_job_claim_s * 1000:.1f} ms", "at once"),
            ("leased job right after the crash", None, self.lease_status_after_end, "running"),
            ("leased job back to ready after, s", self.guess_cell, self.back_after_s, "when its lease ends"),
        ]


def crash_both(
    db: Database,
    lease_s: float = DEFAULT_LEASE_S,
    *,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> CrashResult:
    """Start both workers, end each one's session, and watch their jobs."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    stop = stop or threading.Event()
    total = 5
    with CrashScene(db, lease_s) as scene:
        hold_job = scene.start_hold_worker()
        lease_job = scene.start_lease_worker()
        before, _ = scene.third_claim()
        tell(progress, 1, total)

        scene.end_session("hold")
        held, held_s = scene.third_claim()
        tell(progress, 2, total)

        scene.end_session("lease")
        ended_at = time.monotonic()
        right_after = scene.row(lease_job.id)
        reaped_at_once = scene.reap()
        tell(progress, 3, total)

        # The reaper, run every 50 ms, as a worker would before each claim.
        deadline = ended_at + lease_s + 10
        while not stop.is_set() and scene.reap() == 0:
            if time.monotonic() > deadline:
                raise PgqError(
                    f"the reaper had not handed job {lease_job.id} back 10 s after its lease ended"
                )
            stop.wait(0.05)
        back_after = time.monotonic() - ended_at
        tell(progress, 4, total)
        after = scene.row(lease_job.id)
        tell(progress, 5, total)
    return finish(
        CrashResult,
        db,
        lease_s=lease_s,
        hold_job=hold_job,
        lease_job=lease_job.id,
        lease_attempts=lease_job.attempts,
        claim_before_crash=before.id if before else None,
        held_job_claimed=held.id if held else None,
        held_job_claim_s=held_s,
        lease_status_after_end=right_after.status,
        reaped_at_once=reaped_at_once,
        lease_left_at_end_s=right_after.lease_left_s or 0.0,
        back_after_s=back_after,
        leased_job_after=after,
        guess=guess,
        stopped=stop,
    )
