"""A partner's quota (lesson 10b): `workers` library Workers call one partner for every job of
one kind, for `seconds`, first with no limit and then with the shared rate limit
(`Worker(rate_limits={kind: per_second})`, one token bucket row per kind that every Worker takes
from: sql/take_tokens.sql). The partner records when each call arrived; the result is its calls
per second, the most it saw in any one-second window, and the tries the jobs spent (read from
the jobs table) against the calls made: a job claimed without a token is handed back
(sql/hand_back.sql) with its try given back, so the two counts match. Its run_at moves to when
a token is due, and run_at is also the claims' order: the server says where each handed-back job
waits at the end (sql/lab/hand_back_places.sql), behind every job that was due before it.

What the limit promises (take_tokens.sql's header): over any window of t seconds at most
per_second x (t + 1) calls: the rate, plus one second of burst, since the bucket holds at
most one second of tokens. Each run starts with the kind's bucket empty
(sql/lab/empty_bucket.sql), as a kind's first take leaves it: otherwise a run after the first
would start with a full bucket, left unused while the no-limit run ran, and show a second's
burst the first run never had. The knobs that make the result: `workers`, `per_second`,
`seconds` and `work_s` (how long each call takes, which sets what the Workers manage with no
limit).

The guide has no rate limit. Of the peers docs/beyond-fifo.md compares, pg-boss throttles a
queue with `singletonSeconds` (its jobs API, "Throttle or debounce jobs":
https://github.com/timgit/pg-boss/blob/master/docs/api/jobs.md), and Oban's rate-limited
queues are Oban Pro's, not the open-source Oban's; the library's Worker API is in
docs/per-kind.md.
"""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass, field

from psycopg.rows import dict_row

from .. import charts, checks, measurements, seeding, tables
from ..databases import Database
from ..guide import GuideFigure
from ..statements import run, run_one
from ..worker import Worker
from .results import Comparison, Progress, Result, advice, finish, note, tell

KIND = "call_partner"
JOBS = 20_000  # more than the fastest run here takes: the queue never runs dry during a run
GUIDE_NO_LIMIT = advice("the claim", "the guide has no rate limit: a Worker claims as fast as it can")


@dataclass
class QuotaRun:
    """One run: when each call reached the partner (seconds from the run's start), and what the
    jobs table says the tries cost."""

    limited: bool
    call_times_s: list[float]
    tries_spent: int  # sum of attempts over the kind's jobs, after the run
    handed_back: int  # jobs claimed without a token and handed back, over every Worker
    ran: bool = True  # False: Stop came before this run began, so it has nothing to show
    # where the handed-back jobs wait at the end (sql/lab/hand_back_places.sql): their run_at, the
    # claims' order, moved past every job due before it, so they lost their place in line
    waiting_handed_back: int = 0  # handed-back jobs still ready
    first_place_handed_back: int | None = None  # the best place in line of any of them
    ready_not_handed_back: int = 0  # ready jobs never handed back
    fewest_places_lost: int | None = None  # place in line now, less place at enqueue

    @property
    def calls(self) -> int:
        return len(self.call_times_s)

    @property
    def most_in_one_second(self) -> int:
        """The most calls that arrived within any one second."""
        return self.most_in(1.0)

    def most_in(self, seconds: float) -> int:
        """The most calls that arrived within any window of `seconds` (the busiest window starts
        at a call, so one starting at each call is enough)."""
        times = self.call_times_s
        return max((bisect.bisect_left(times, t + seconds) - i for i, t in enumerate(times)), default=0)

    def per_second(self, seconds: int) -> list[int]:
        """Calls in each whole second of the run."""
        counts = [0] * seconds
        for t in self.call_times_s:
            if int(t) < seconds:
                counts[int(t)] += 1
        return counts


@dataclass(kw_only=True)
class QuotaResult(Result):
    workers: int
    per_second: float
    seconds: int
    work_s: float
    unlimited: QuotaRun
    limited: QuotaRun
    guide: GuideFigure = field(default_factory=lambda: GUIDE_NO_LIMIT)

    def quoted(self) -> dict[str, float]:
        """The figures the interview quotes, with the knobs that made them."""
        u, lim = self.unlimited, self.limited
        return {
            "workers": self.workers,
            "per_second": self.per_second,
            "most_unlimited": u.most_in_one_second,
            "most_limited": lim.most_in_one_second,
            "burst_bound": self.burst_bound,
            "handed_back": lim.handed_back,
            "calls_limited": lim.calls,
            "tries_limited": lim.tries_spent,
        }

    @property
    def burst_bound(self) -> float:
        """The most a one-second window may hold under the limit: the rate, plus one second's burst."""
        return 2 * self.per_second

    def comparison(self) -> list[Comparison]:
        u, lim = self.unlimited, self.limited

        def shown(r: QuotaRun, value: int | str) -> int | str:
            return value if r.ran else "not run (stopped)"

        return [
            (
                "most calls in one second, shared limit",
                self.guess_cell,
                shown(lim, lim.most_in_one_second),
                "–",
            ),
            ("most calls in one second, no limit", "–", shown(u, u.most_in_one_second), "–"),
            ("calls made, shared limit", "–", shown(lim, lim.calls), "–"),
            ("tries spent, shared limit", "–", shown(lim, lim.tries_spent), "–"),
            ("jobs handed back for want of a token", "–", shown(lim, lim.handed_back), "–"),
            (
                "places in line the handed-back jobs lost, fewest",
                "–",
                shown(lim, "none waiting" if lim.fewest_places_lost is None else lim.fewest_places_lost),
                "–",
            ),
        ]

    def report(self) -> list[str]:
        lines = [
            f"{tables.count(self.workers, 'Worker')} calling the partner for "
            f"{tables.duration(self.seconds)} each run "
            f"(each call {tables.duration(self.work_s)}):{self.stopped_note}"
        ]
        for r in (self.unlimited, self.limited):
            name = f"shared limit {self.per_second:g}/s" if r.limited else "no limit"
            if not r.ran:
                lines.append(f"  {name}: not run (stopped before it began)")
                continue
            lines.append(
                f"  {name}: {tables.count(r.calls, 'call')}, at most {r.most_in_one_second:,} in one second; "
                f"{tables.count(r.tries_spent, 'try', many='tries')} spent, "
                f"{tables.count(r.handed_back, 'job')} handed back"
            )
        return [note(line) for line in lines] + self.footer()

    def chart(self) -> charts.Chart:
        """The partner's calls in each second of each run, with the limit as a dashed rule."""
        rows = [
            {"second": n + 1, "calls": calls, "run": "shared limit" if r.limited else "no limit"}
            for r in (self.unlimited, self.limited)
            if r.ran  # a run Stop came before has no line, not a line at 0
            for n, calls in enumerate(r.per_second(self.seconds))
        ]
        return charts.lines(
            rows,
            x="second",
            y="calls",
            series="run",
            heading="Calls the partner saw, second by second",
            x_axis=charts.axis("second of the run", "s"),
            y_axis=charts.axis("calls in that second", "calls"),
            refs=[charts.Reference("the limit", self.per_second, "the shared limit, per second")],
        )


def partner_quota(
    db: Database,
    *,
    workers: int = 8,
    per_second: float = 50,
    seconds: int = 3,
    work_s: float = 0.01,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> QuotaResult:
    """Run the Workers against the partner with no limit, then with the shared one; see the module."""
    workers = checks.whole_number("workers", workers, 1, 16)
    per_second = checks.number("per_second", per_second, 1, 1_000)
    seconds = checks.whole_number("seconds", seconds, 1, 30)
    work_s = checks.seconds("work_s", work_s, 0.0, 1.0)
    stop = stop or threading.Event()
    runs = []
    for n, limit in enumerate((None, per_second)):
        if stop.is_set():  # no Workers started, no jobs seeded: Stop ends the lab at once
            runs.append(
                QuotaRun(limited=limit is not None, call_times_s=[], tries_spent=0, handed_back=0, ran=False)
            )
            continue
        runs.append(_run(db, workers, limit, seconds, work_s, stop))
        tell(progress, n + 1, 2)
    result = finish(
        QuotaResult,
        db,
        guess=guess,
        stopped=stop,
        workers=workers,
        per_second=per_second,
        seconds=seconds,
        work_s=work_s,
        unlimited=runs[0],
        limited=runs[1],
    )
    if not result.stopped and all(r.ran for r in runs):
        measurements.record(measurements.PARTNER_QUOTA_10B, result.quoted())
    return result


def _run(
    db: Database, workers: int, limit: float | None, seconds: int, work_s: float, stop: threading.Event
) -> QuotaRun:
    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, JOBS)
        run(conn, "lab/empty_bucket", {"kind": KIND})  # as the first run found it: no burst left over
    arrivals: list[float] = []
    lock = threading.Lock()
    began = time.monotonic()

    def call_partner(job: object) -> None:
        with lock:
            arrivals.append(time.monotonic() - began)
        time.sleep(work_s)

    limits = {KIND: limit} if limit else None
    fleet = [Worker(db.dsn, {KIND: call_partner}, rate_limits=limits, poll=0.05) for _ in range(workers)]
    errors: list[BaseException] = []

    def work(worker: Worker) -> None:
        try:
            worker.run()
        except BaseException as exc:  # raised again below, on the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,), name=f"pgq-quota {n}") for n, w in enumerate(fleet)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    for worker in fleet:
        worker.stop()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    with db.connection() as conn:
        spent = run(conn, "lab/attempts_spent", {"kind": KIND}, row_factory=dict_row).fetchall()
        waiting, first_place, not_moved, fewest_lost, _ = run_one(
            conn, "lab/hand_back_places", {"kind": KIND}
        )
    return QuotaRun(
        limited=limit is not None,
        call_times_s=sorted(arrivals),
        tries_spent=sum(row["attempts"] * row["count"] for row in spent),
        handed_back=sum(w.report.handed_back for w in fleet),
        waiting_handed_back=waiting,
        first_place_handed_back=first_place,
        ready_not_handed_back=not_moved,
        fewest_places_lost=fewest_lost,
    )
