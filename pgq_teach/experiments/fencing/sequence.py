"""The guide's sequence (figure #10): `stale_worker` with a short lease. A
claims the job and sends the receipt email, then stalls; the reaper hands
the job back and B claims it; A's completion updates 0 rows, B's 1. It also
counts the customer's inbox, with a plain handler (two receipts) or an
idempotent one (one). Every step is an `Event` for the timeline."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ... import charts, checks, tables
from ...databases import Database
from ...guide import GuideFigure, figure
from ..crash import answer
from ..results import Comparison, Progress, Result, finish, guess_text, note, tell
from ..sessions import Session, run_and_wait
from .lab import LEASE_LIMITS, ORDER, claimed, complete, lab_session, lease_end, prepare

HANDLERS = ("plain", "idempotent")


def send_receipt(session: Session, order_id: int, worker: str, handler: str) -> bool:
    """The job's work: email the receipt. The idempotent handler first records
    "receipt for this order sent" under a unique key and sends only if that
    record is new. True if an email went out."""
    params = {"order_id": order_id, "worker": worker}
    if handler == "idempotent" and not answer(run_and_wait(session, "lab/record_receipt_sent", params)):
        return False
    answer(run_and_wait(session, "lab/send_receipt_email", params))
    return True


def first_value(session: Session, statement: str, params: dict | None = None) -> Any:
    return answer(run_and_wait(session, statement, params))[0][0]


LANES = ("A", "B", "reaper")  # the sequence's lanes: the two workers and the reaper


@dataclass(frozen=True)
class Event:
    """One step on the timeline: when (seconds from the start), whose lane, what."""

    t_s: float
    lane: str  # "A", "B" or "reaper"
    what: str


@dataclass(kw_only=True)
class FencingResult(Result):
    handler: str
    lease_s: float
    a_token: int
    b_token: int
    a_attempts: int
    b_attempts: int
    reaped: int
    a_rows: int  # rows A's completion updated
    b_rows: int
    inbox: list[str]  # who sent each receipt in the customer's inbox, read from the table
    final_status: str
    events: list[Event]
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    @property
    def emails(self) -> int:
        """Receipts in the customer's inbox; the guess is of this."""
        return len(self.inbox)

    def chart(self, shown: int | None = None) -> charts.Chart:
        """The sequence's first `shown` steps (all by default) as numbered dots in
        their lanes (A, B, the reaper), red where a completion changed 0 rows,
        and A's lease as a band from its claim to its deadline."""
        events = self.events[: len(self.events) if shown is None else shown]
        span = max(self.events[-1].t_s * 1.15, self.lease_s * 1.3)
        claim = self.events[0].t_s
        kinds = {
            "A's lease": "#c6dbef",
            "a step": charts.BLUE,
            "a completion that changed 0 rows": charts.RED,
        }
        times = {
            lane: charts.spread([e.t_s for e in events if e.lane == lane], span * 18 / charts.WIDTH)
            for lane in LANES
        }
        marks = []
        for n, event in enumerate(events, start=1):
            t = times[event.lane].pop(0)
            kind = "a completion that changed 0 rows" if "0 row" in event.what else "a step"
            marks.append(
                {
                    "lane": event.lane,
                    "time": t,
                    "kind": kind,
                    "label": str(n),
                    "at, s": event.t_s,
                    "what": event.what,
                }
            )
        lease = {"lane": "A", "start": claim, "end": claim + self.lease_s, "kind": "A's lease"}
        return charts.timeline(
            [lease],
            marks=marks,
            heading=f"A stalls past its {self.lease_s:g} s lease ({self.handler} handler)",
            kinds=kinds,
            lanes=LANES,
            time_axis=charts.axis("time since the start", "s", ",.1~f"),
        )

    def report(self) -> list[str]:
        steps = [note(f"  {e.t_s:5.2f} s  {e.lane:<6} {e.what}") for e in self.events]
        return [
            note(f"one receipt job, a {self.lease_s:g} s lease, {self.handler} handler" + self.stopped_note),
            *steps,
            f"  A's completion updated {tables.count(self.a_rows, 'row')}, B's {self.b_rows}; "
            f"the job is {self.final_status}",
            f"  the customer's inbox: {tables.count(self.emails, 'receipt')}, "
            f"sent by {', '.join(self.inbox) or 'nobody'} "
            f"(your guess: {guess_text(self.guess)})",
            *self.footer(),
        ]

    def comparison(self) -> list[Comparison]:
        values = self.guide.values
        return [
            ("A's completion, rows updated", None, self.a_rows, values["a_rows"]),
            ("B's completion, rows updated", None, self.b_rows, values["b_rows"]),
            ("fencing token, A then B", None, f"{self.a_token} then {self.b_token}", "1 then 2"),
            (
                f"receipts in the inbox ({self.handler} handler)",
                self.guess_cell,
                self.emails,
                "two: fencing cannot unsend" if self.handler == "plain" else "–",
            ),
        ]


def stale_worker(
    db: Database,
    lease_s: float = 1.0,
    *,
    handler: str = "plain",
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> FencingResult:
    """A claims and sends, then stalls past its lease; the reaper runs; B
    claims and sends; A completes (fenced out), then B completes. A, B and
    the reaper are three scripted sessions, each statement its own
    transaction, as in three psql windows."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    handler = checks.one_of("handler", handler, HANDLERS)
    stop = stop or threading.Event()
    job_id = prepare(db)
    events: list[Event] = []
    started = time.monotonic()

    def note(lane: str, what: str) -> None:
        events.append(Event(time.monotonic() - started, lane, what))

    total = 6
    with lab_session(db, "A") as a, lab_session(db, "B") as b, lab_session(db, "reaper") as reaper:
        a_job = claimed(a, lease_s)
        note("A", f"claims job {job_id}: fencing token {a_job.fence_token}, lease {lease_s:g} s")
        sent = send_receipt(a, a_job.payload["order"], "A", handler)
        note(
            "A",
            "sends the receipt email, then stalls" if sent else "finds the receipt recorded; sends nothing",
        )
        tell(progress, 1, total)

        # A stalls until its lease has passed: a long GC pause, a slow disk, a stuck call.
        stop.wait(max(0.0, (lease_end(a_job) - time.time()) + 0.1))
        reaped = len(answer(run_and_wait(reaper, "reap")))
        note("reaper", f"lease passed: hands back {tables.count(reaped, 'job')}")
        tell(progress, 2, total)

        b_job = claimed(b, lease_s * 10)  # B's lease is long enough for its work
        note("B", f"claims job {job_id}: fencing token {b_job.fence_token}")
        sent = send_receipt(b, b_job.payload["order"], "B", handler)
        note("B", "sends the receipt email" if sent else "finds the receipt recorded; sends nothing")
        tell(progress, 3, total)

        a_rows = complete(a, a_job)
        updated = tables.count(a_rows, "row")
        note("A", f"wakes and completes with token {a_job.fence_token}: {updated} updated")
        tell(progress, 4, total)
        b_rows = complete(b, b_job)
        note("B", f"completes with token {b_job.fence_token}: {tables.count(b_rows, 'row')} updated")
        tell(progress, 5, total)
        inbox = [row[0] for row in answer(run_and_wait(reaper, "lab/inbox_senders", {"order_id": ORDER}))]
        final = first_value(reaper, "job_state", {"id": job_id})
        tell(progress, 6, total)
    return finish(
        FencingResult,
        db,
        handler=handler,
        lease_s=lease_s,
        a_token=a_job.fence_token,
        b_token=b_job.fence_token,
        a_attempts=a_job.attempts,
        b_attempts=b_job.attempts,
        reaped=reaped,
        a_rows=a_rows,
        b_rows=b_rows,
        inbox=inbox,
        final_status=final,
        events=events,
        guess=guess,
        stopped=stop,
    )
