"""Lesson 10: autovacuum per table, the server's defaults against the guide's
settings under the same churn, sampling n_dead_tup. The run at the default
naptime is too slow for Run All: it is stored once as JSON and loaded by
`stored_autovacuum_run`. `ChurnRun` is one setting's churn, a plain record."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ... import charts, checks, queue, tables
from ...databases import Database
from ...guide import GuideFigure
from ...statements import run, run_one
from ..results import Comparison, Progress, Result, finish, guess_text, tell
from .rules import GUIDE_AUTOVACUUM

DEFAULTS = {"scale_factor": 0.2, "threshold": 50}  # the server's defaults (guide: 50 rows plus 20%)
GUIDE_SETTINGS = {"scale_factor": 0.01, "threshold": 1000}  # the guide's starting point for jobs
LAB_NAPTIME = "1s"  # the lab's naptime, so a run of seconds sees autovacuum at work
DEFAULT_NAPTIME = "1min"  # the server's default: the stored run below uses it
NAPTIMES = (LAB_NAPTIME, DEFAULT_NAPTIME)
# The run with the default naptime takes minutes, too long for Run All: it is made once with
# `python tools/record_default_naptime_run.py` and stored here, and the lesson shows it as stored.
STORED_DEFAULT_NAPTIME_RUN = Path(__file__).resolve().parents[2] / "data" / "autovacuum_naptime_1min.json"
TICK_S = 0.1
FREE_WORKER_WAIT_S = 20.0  # how long a run waits for autovacuum workers busy in other databases
# The launcher spreads its visits to the N databases over the naptime (rebuild_database_list in
# autovacuum.c), but never closer than 100 ms (MIN_AUTOVAC_SLEEPTIME): when naptime / N would be
# that short it spaces them 110 ms apart, so it comes back to any one only every N x 0.11 s. It
# counts only the databases with statistics, which every database a session has used has.
LAUNCHER_MIN_SLEEP_S = 0.1
LAUNCHER_SPACING_S = 0.11
NAPTIME_UNITS_S = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}


def owns_server(db: Database) -> bool:
    """True when the course started this server itself (the embedded one, also
    when JupyterLab hands it to kernels as a DSN), so server-wide settings may
    change; never on a learner's own PGQ_DSN server."""
    return db.server.kind == "embedded"


def naptime_seconds(text: str) -> float:
    """autovacuum_naptime as the server shows it ("1s", "1min") in seconds."""
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    return float(number) * NAPTIME_UNITS_S.get(text[len(number) :], 1.0)


@dataclass
class ChurnRun:
    """One setting's churn (a part of `AutovacuumComparison`, not a result)."""

    settings: str
    scale_factor: float
    threshold: int
    samples: list[tuple[float, int]]  # (seconds, n_dead_tup)
    autovacuums: int
    jobs: int
    vacuums_so_far: list[int] = field(default_factory=list)  # autovacuums this run, at each sample
    # autovacuum workers busy in other databases at each sample, and how many the server may run:
    # when all of them are busy elsewhere, none can come to this table, whatever its settings
    busy_elsewhere: list[int] = field(default_factory=list)
    max_workers: int = 3
    waited_for_workers_s: float = 0.0  # before the run, for workers busy elsewhere to finish

    @property
    def first_autovacuum_sample(self) -> int:
        """The index of the first sample after autovacuum first finished on jobs (len(samples) if never)."""
        return next((i for i, n in enumerate(self.vacuums_so_far) if n > 0), len(self.samples))

    @property
    def dead_before_first_autovacuum(self) -> int:
        """The most dead rows seen before autovacuum first finished on jobs in this run:
        the count at which the first autovacuum fired, to within a tick's churn."""
        return max((d for _, d in self.samples[: self.first_autovacuum_sample]), default=0)

    @property
    def starved_before_first_autovacuum(self) -> bool:
        """Whether every autovacuum worker was busy in another database at some
        sample before the first autovacuum here: then the first one may have come
        late for a reason no table setting controls."""
        busy = self.busy_elsewhere[: self.first_autovacuum_sample]
        return any(n >= self.max_workers for n in busy)

    @property
    def peak_dead(self) -> int:
        return max((d for _, d in self.samples), default=0)

    def starts_at(self, rows: int) -> float:
        return self.threshold + self.scale_factor * rows


@dataclass(kw_only=True)
class AutovacuumComparison(Result):
    base_rows: int
    churn_s: float
    jobs_per_tick: int
    runs: list[ChurnRun]
    naptime: str
    skipped: str = ""
    # the server-wide knobs behind the result, as the server had them during the run
    # (autovacuum_naptime, max_workers, the cost limit and delay, the insert threshold and
    # scale factor; lab/autovacuum_knobs.sql)
    knobs: dict[str, str] = field(default_factory=dict)
    databases: int = 0  # databases the launcher visits in turn (lab/database_count.sql)
    recorded_on: str = ""  # a stored run's UTC date; empty for a run made just now
    guess: float | None = None  # peak n_dead_tup with the defaults
    guide: GuideFigure = GUIDE_AUTOVACUUM

    def footer(self) -> list[str]:
        """A stored run names the server and the day it was measured, not this server."""
        if not self.recorded_on:
            return super().footer()
        recorded = f"recorded {self.recorded_on} on PostgreSQL {self.server_version}"
        return [f"  {self.guide}", f"  stored run: {recorded}, not this server"]

    def with_settings(self, settings: str) -> ChurnRun:
        """The run made with these settings ("defaults" or "guide")."""
        return next(r for r in self.runs if r.settings == settings)

    @property
    def visit_every_s(self) -> float:
        """How often the launcher comes back to this database: every naptime, or every
        0.11 s per database when the naptime would space them 0.1 s or less apart."""
        naptime = naptime_seconds(self.naptime or "60s")
        if not self.databases or naptime / self.databases > LAUNCHER_MIN_SLEEP_S:
            return naptime
        return LAUNCHER_SPACING_S * self.databases

    @property
    def dead_per_visit(self) -> float:
        """Dead rows the churn adds between two visits (a claim and a completion per job)."""
        return 2 * self.jobs_per_tick / TICK_S * self.visit_every_s

    @property
    def visits_in_time(self) -> bool:
        """Whether the guide's settings can show here: a visit comes before the dead rows
        one visit adds carry the table from the guide's start past the defaults' start."""
        if len(self.runs) < 2:
            return False
        defaults, guide = self.with_settings("defaults"), self.with_settings("guide")
        return guide.starts_at(self.base_rows) + self.dead_per_visit < defaults.starts_at(self.base_rows)

    def comparison(self) -> list[Comparison]:
        if self.skipped or not self.runs:
            return []
        defaults = self.with_settings("defaults")
        first: Comparison = (
            "peak n_dead_tup, defaults",
            self.guess_cell,
            defaults.peak_dead,
            f"starts at 50 + 20% of rows = {defaults.starts_at(self.base_rows):,.0f}",
        )
        if len(self.runs) < 2:  # Stop came before the guide's settings ran: say so, no empty table
            return [first, ("the guide's settings", None, "not run: Stop came first", None)]
        guide = self.with_settings("guide")
        return [
            first,
            (
                "peak n_dead_tup, guide's settings",
                None,
                guide.peak_dead,
                f"starts at 1000 + 1% of rows = {guide.starts_at(self.base_rows):,.0f}",
            ),
            (
                "n_dead_tup at the first autovacuum, defaults",
                None,
                defaults.dead_before_first_autovacuum,
                None,
            ),
            ("n_dead_tup at the first autovacuum, guide's", None, guide.dead_before_first_autovacuum, None),
            ("autovacuum runs, defaults", None, defaults.autovacuums, None),
            ("autovacuum runs, guide's settings", None, guide.autovacuums, None),
        ]

    def summary(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        lines = [
            (
                f"{self.churn_s:g} s of churn on a jobs table of {self.base_rows:,} done rows, "
                f"autovacuum_naptime {self.naptime}" + self.stopped_note + ":"
            )
        ]
        for r in self.runs:
            lines.append(
                f"  {r.settings:<8} (threshold {r.threshold:,} + {r.scale_factor:g} x rows = starts at "
                f"{r.starts_at(self.base_rows):,.0f} dead): {r.jobs:,} jobs, "
                f"{tables.count(r.autovacuums, 'autovacuum')}, "
                f"first at n_dead_tup {r.dead_before_first_autovacuum:,}, peak {r.peak_dead:,}"
            )
            if r.waited_for_workers_s >= 0.5:
                lines.append(
                    f"    (it first waited {r.waited_for_workers_s:.1f} s for autovacuum workers busy in "
                    "other databases)"
                )
            if r.starved_before_first_autovacuum:
                lines.append(
                    f"    (all {r.max_workers} autovacuum workers were busy in other databases "
                    "before its first autovacuum)"
                )
        if self.databases:
            lines.append(
                f"  the launcher visits this server's {self.databases} databases in turn, never closer "
                f"than 0.1 s apart, so this one about every {self.visit_every_s:.1f} s "
                f"({self.dead_per_visit:,.0f} dead rows of churn)"
                + ("" if self.visits_in_time else ": too seldom for the guide's settings to show")
            )
        lines.append(f"  your guess for the defaults' peak: {guess_text(self.guess)}")
        if self.knobs:
            lines.append(
                "  server-wide: " + ", ".join(f"{name} {value}" for name, value in self.knobs.items())
            )
        return "\n".join(lines + self.footer())

    def chart(self) -> charts.Chart:
        """n_dead_tup over time, one line per setting, beside the dead-row count
        at which each setting's autovacuum should start (guide: 1000 + 1%)."""
        rows = [
            {"time": t, "n_dead_tup": dead, "settings": r.settings}
            for r in self.runs
            for t, dead in charts.thin(r.samples)
        ]
        return charts.lines(
            rows,
            x="time",
            y="n_dead_tup",
            series="settings",
            heading="n_dead_tup on jobs under the same churn",
            # whole-second ticks when stopped: a run of a few seconds got half-second ticks, which
            # ",.0f" printed as "0, 1, 1, 2, 2" (a whole run spans enough seconds for whole ticks)
            x_axis=(
                charts.axis("time since the start", "s", tickMinStep=1)
                if self.stopped
                else charts.axis("time since the start", "s")
            ),
            y_axis=charts.axis("n_dead_tup", "rows"),
            refs=[
                charts.Reference(
                    f"{r.settings}: autovacuum starts at {r.starts_at(self.base_rows):,.0f}",
                    r.starts_at(self.base_rows),
                    "where autovacuum starts",
                )
                for r in self.runs
            ],
        )


def autovacuum_workers(conn) -> tuple[int, int, int]:
    """(busy in other databases, busy in this one, autovacuum_max_workers)."""
    busy_elsewhere, busy_here, max_workers = run_one(conn, "lab/autovacuum_workers")
    return int(busy_elsewhere), int(busy_here), int(max_workers)


def wait_for_free_workers(conn, timeout: float = FREE_WORKER_WAIT_S) -> float:
    """Wait (at most `timeout` s) until no autovacuum worker is busy in another
    database, so the run starts with every worker free to come here; the seconds waited."""
    began = time.monotonic()
    while autovacuum_workers(conn)[0] > 0 and time.monotonic() - began < timeout:
        time.sleep(0.05)
    return time.monotonic() - began


def churn(
    conn,
    run_record: ChurnRun,
    jobs_per_tick: int,
    churn_s: float,
    stop: threading.Event | None,
    progress: Progress | None,
    done_before: int,
    total_ticks: int,
) -> None:
    """Enqueue, claim and complete `jobs_per_tick` jobs every tick (0.1 s); at each
    tick record n_dead_tup, how many autovacuums have finished on jobs so far, and
    how many autovacuum workers are busy in other databases, into `run_record`."""
    first = run(conn, "stats_vacuum").fetchone()
    runs_before = first[3] if first else 0
    began = time.monotonic()
    ticks = 0
    while time.monotonic() - began < churn_s and not (stop is not None and stop.is_set()):
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": jobs_per_tick})
        queue.claim(conn, batch=jobs_per_tick)
        run(conn, "lab/complete_running")
        run(conn, "lab/flush_stats")
        run_record.jobs += jobs_per_tick
        row = run(conn, "stats_vacuum").fetchone()
        run_record.samples.append((time.monotonic() - began, row[1] if row else 0))
        run_record.vacuums_so_far.append((row[3] if row else 0) - runs_before)
        busy_elsewhere, _, run_record.max_workers = autovacuum_workers(conn)
        run_record.busy_elsewhere.append(busy_elsewhere)
        ticks += 1
        tell(progress, done_before + ticks, total_ticks)
        time.sleep(max(0.0, began + ticks * TICK_S - time.monotonic()))
    row = run(conn, "stats_vacuum").fetchone()
    run_record.autovacuums = (row[3] if row else 0) - runs_before


def autovacuum_per_table(
    db: Database,
    *,
    base_rows: int = 100_000,
    churn_s: float = 15.0,
    jobs_per_tick: int = 200,
    naptime: str = LAB_NAPTIME,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> AutovacuumComparison:
    """The same churn twice on `jobs`: with the server's defaults, then with the
    guide's per-table settings, sampling n_dead_tup. Autovacuum looks at a
    database once per autovacuum_naptime (1 min by default), too rarely to see
    in a lesson, so the lab sets `naptime` (1 s unless asked for 1min), only on
    a server the course started itself, and resets it afterwards. On another
    server it skips, saying why.
    Each run first waits for autovacuum workers busy in other databases (the
    server has only autovacuum_max_workers, 3 by default) and records how many
    were busy at every tick."""
    checks.whole_number("base_rows", base_rows, 1_000, 1_000_000)
    checks.whole_number("jobs_per_tick", jobs_per_tick, 1, 5_000)
    churn_s = checks.seconds("churn_s", churn_s, 1, 600)
    naptime = checks.one_of("naptime", naptime, NAPTIMES)
    comparison: dict[str, Any] = {
        "base_rows": base_rows,
        "churn_s": churn_s,
        "jobs_per_tick": jobs_per_tick,
    }
    if not owns_server(db):
        return finish(
            AutovacuumComparison,
            db,
            runs=[],
            naptime="",
            skipped="autovacuum_naptime is a server-wide setting, and this is your own server "
            "(PGQ_DSN), so the lab does not change it; at the default of 1min, a run of "
            f"{churn_s:g} s may see no autovacuum at all",
            guess=guess,
            **comparison,
        )
    ticks = int(churn_s / TICK_S) * 2
    runs: list[ChurnRun] = []
    with db.connection() as conn:
        run(conn, "lab/set_autovacuum_naptime", {"naptime": naptime})
        run(conn, "lab/reload_conf")
        try:
            time.sleep(0.2)  # the launcher picks up the reload
            naptime_seen = run_one(conn, "lab/show_naptime")[0]
            knobs = dict(run(conn, "lab/autovacuum_knobs").fetchall())
            databases = int(run_one(conn, "lab/database_count")[0])
            for n, (name, settings) in enumerate((("defaults", DEFAULTS), ("guide", GUIDE_SETTINGS))):
                if stop is not None and stop.is_set():
                    break
                run(conn, "lab/reset_jobs")
                run(conn, "lab/seed_done_jobs", {"count": base_rows, "distinct": True})
                # the seed's insert counts must reach the statistics before VACUUM and ANALYZE
                # reset them; sent later, they would count as 100,000 fresh inserts, and the
                # insert trigger would start an autovacuum at once, whatever the dead rows
                run(conn, "lab/flush_stats")
                run(conn, "lab/vacuum_jobs")
                run(conn, "lab/analyze_jobs")  # autovacuum's trigger reads the row estimate
                run(conn, "lab/jobs_autovacuum", {"enabled": True, **settings})
                record = ChurnRun(name, settings["scale_factor"], int(settings["threshold"]), [], 0, 0)
                record.waited_for_workers_s = wait_for_free_workers(conn)
                churn(conn, record, jobs_per_tick, churn_s, stop, progress, n * ticks // 2, ticks)
                runs.append(record)
        finally:
            run(conn, "lab/reset_autovacuum_naptime")
            run(conn, "lab/reload_conf")
            run(conn, "lab/jobs_autovacuum", {"enabled": True, **DEFAULTS})
    return finish(
        AutovacuumComparison,
        db,
        runs=runs,
        naptime=naptime_seen,
        knobs=knobs,
        databases=databases,
        stopped=len(runs) < 2 or (stop is not None and stop.is_set()),  # Stop in the second run too
        guess=guess,
        **comparison,
    )


def store_autovacuum_run(result: AutovacuumComparison, path: Path = STORED_DEFAULT_NAPTIME_RUN) -> Path:
    """Keep a run's measurements as JSON (what tools/record_default_naptime_run.py does)."""
    fields = asdict(result)
    fields.pop("guide")
    fields.pop("guess")
    fields["recorded_on"] = fields["recorded_on"] or datetime.now(timezone.utc).date().isoformat()
    for run_fields in fields["runs"]:  # a sample's time to the hundredth of a second is plenty
        run_fields["samples"] = [[round(t, 2), dead] for t, dead in run_fields["samples"]]
        run_fields["waited_for_workers_s"] = round(run_fields["waited_for_workers_s"], 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fields, separators=(",", ":")) + "\n")
    return path


def stored_autovacuum_run(path: Path = STORED_DEFAULT_NAPTIME_RUN) -> AutovacuumComparison:
    """The stored run with the default naptime, as measured when it was recorded."""
    fields = json.loads(path.read_text())
    fields["runs"] = [ChurnRun(**{**r, "samples": [tuple(s) for s in r["samples"]]}) for r in fields["runs"]]
    return AutovacuumComparison(**fields)
